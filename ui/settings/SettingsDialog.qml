// Settings: appearance and language, the default sampling for new conversations, model folders.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Dialog {
    id: dialog
    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(620, parent.width - 40)
    height: Math.min(620, parent.height - 40)
    modal: true
    title: qsTr("Settings")
    standardButtons: Dialog.Close

    ColumnLayout {
        anchors.fill: parent
        spacing: 8
        TabBar {
            id: tabs
            Layout.fillWidth: true
            TabButton { text: qsTr("Appearance") }
            TabButton { text: qsTr("Generation") }
            TabButton { text: qsTr("Models") }
        }
        StackLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: tabs.currentIndex

            // --- appearance ---
            ColumnLayout {
                spacing: 10
                Label { text: qsTr("Theme"); font.bold: true; color: Theme.text }
                RowLayout {
                    Repeater {
                        model: [
                            { value: "system", text: qsTr("Follow the system") },
                            { value: "light", text: qsTr("Light") },
                            { value: "dark", text: qsTr("Dark") }
                        ]
                        RadioButton {
                            required property var modelData
                            text: modelData.text
                            checked: AppSettings.theme === modelData.value
                            onClicked: AppSettings.theme = modelData.value
                            Accessible.name: qsTr("Theme: %1").arg(modelData.text)
                        }
                    }
                }
                Label { text: qsTr("Text size"); font.bold: true; color: Theme.text }
                RowLayout {
                    Slider {
                        id: fontSlider
                        Layout.fillWidth: true
                        from: 8
                        to: 20
                        stepSize: 1
                        snapMode: Slider.SnapAlways
                        value: AppSettings.fontSize
                        onMoved: AppSettings.fontSize = value
                        Accessible.name: qsTr("Text size in points")
                    }
                    Label { text: qsTr("%1 pt").arg(AppSettings.fontSize); color: Theme.text }
                }
                Label { text: qsTr("Language"); font.bold: true; color: Theme.text }
                ComboBox {
                    id: languageBox
                    objectName: "languageBox"
                    Layout.preferredWidth: 260
                    model: Language.available
                    textRole: "name"
                    valueRole: "code"
                    currentIndex: Math.max(0, indexOfValue(AppSettings.language))
                    Accessible.name: qsTr("Language")
                    onActivated: {
                        AppSettings.language = currentValue
                        Language.apply(currentValue)
                    }
                }
                Item { Layout.fillHeight: true }
            }

            // --- generation ---
            ScrollView {
                contentWidth: availableWidth
                ColumnLayout {
                    width: parent.width
                    spacing: 8
                    Label {
                        text: qsTr("Default sampling for conversations without their own")
                        font.bold: true
                        color: Theme.text
                        wrapMode: Text.Wrap
                        Layout.fillWidth: true
                    }
                    SamplingEditor {
                        Layout.fillWidth: true
                        values: ({
                            temperature: AppSettings.temperature, topK: AppSettings.topK,
                            topP: AppSettings.topP, minP: AppSettings.minP,
                            repetitionPenalty: AppSettings.repetitionPenalty,
                            maxTokens: AppSettings.maxTokens
                        })
                        onValueEdited: (key, value) => AppSettings[key] = value
                    }
                    Button {
                        flat: true
                        text: qsTr("Restore the defaults")
                        onClicked: AppSettings.resetSampling()
                    }
                    Label { text: qsTr("System prompt for new conversations"); font.bold: true; color: Theme.text }
                    TextArea {
                        Layout.fillWidth: true
                        Layout.preferredHeight: 90
                        wrapMode: TextArea.Wrap
                        text: AppSettings.systemPrompt
                        onEditingFinished: AppSettings.systemPrompt = text
                        Accessible.name: qsTr("System prompt for new conversations")
                    }
                }
            }

            // --- models ---
            ColumnLayout {
                spacing: 8
                Label { text: qsTr("Folders searched for models"); font.bold: true; color: Theme.text }
                Repeater {
                    model: ModelLibrary.folders
                    RowLayout {
                        required property string modelData
                        required property int index
                        Layout.fillWidth: true
                        Label {
                            Layout.fillWidth: true
                            text: index === 0 ? qsTr("%1 (default)").arg(modelData) : modelData
                            color: Theme.text
                            elide: Text.ElideMiddle
                        }
                        IconButton {
                            visible: index > 0
                            iconName: "close"
                            tip: qsTr("Stop looking in %1").arg(modelData)
                            onClicked: ModelLibrary.removeFolder(modelData)
                        }
                    }
                }
                Label {
                    Layout.fillWidth: true
                    wrapMode: Text.Wrap
                    color: Theme.textMuted
                    text: qsTr("Add folders and import single models in the model library (Ctrl+L).")
                }
                Item { Layout.fillHeight: true }
            }
        }
    }
}
