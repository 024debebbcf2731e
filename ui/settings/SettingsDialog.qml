// Settings: appearance and language, the default sampling for new conversations, model folders,
// and the local server that lets other programs use the loaded model.
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
            objectName: "settingsTabs"
            Layout.fillWidth: true
            TabButton { text: qsTr("Appearance") }
            TabButton { text: qsTr("Generation") }
            TabButton { text: qsTr("Models") }
            TabButton { text: qsTr("Local server") }
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

            // --- local server ---
            ScrollView {
                contentWidth: availableWidth
                ColumnLayout {
                    width: parent.width
                    spacing: 8
                    Label {
                        Layout.fillWidth: true
                        wrapMode: Text.Wrap
                        color: Theme.textMuted
                        text: qsTr("Other programs on this computer can use the loaded model through an OpenAI-compatible API. Their requests and your chats run together on the same model; loading another model serves that one.")
                    }
                    Switch {
                        objectName: "serverSwitch"
                        text: qsTr("Let other programs use the loaded model")
                        enabled: LocalServer.available
                        checked: LocalServer.enabled
                        onToggled: LocalServer.enabled = checked
                    }
                    Label {
                        objectName: "serverStatus"
                        Layout.fillWidth: true
                        wrapMode: Text.Wrap
                        color: LocalServer.status === LocalServer.Running ? Theme.success
                             : LocalServer.status === LocalServer.PortUnavailable
                               || LocalServer.status === LocalServer.Failed ? Theme.danger
                             : Theme.text
                        text: {
                            switch (LocalServer.status) {
                            case LocalServer.Running:
                                return qsTr("Running: serving %1.").arg(LocalServer.model)
                            case LocalServer.WaitingForModel:
                                return qsTr("Waiting for a model: the server starts when a model is loaded.")
                            case LocalServer.PortUnavailable:
                                return qsTr("Port %1 is in use by another program or cannot be opened. Choose another port.").arg(LocalServer.port)
                            case LocalServer.Failed:
                                return qsTr("The server could not start: %1").arg(LocalServer.error)
                            case LocalServer.Unavailable:
                                return qsTr("This build of Hearth has no local server.")
                            default:
                                return qsTr("Off.")
                            }
                        }
                    }
                    Label {
                        objectName: "serverRequests"
                        visible: LocalServer.running || LocalServer.requestsServed > 0
                        color: Theme.text
                        text: qsTr("Requests running: %1 · answered: %2")
                              .arg(LocalServer.requestsInFlight).arg(LocalServer.requestsServed)
                    }

                    GridLayout {
                        Layout.fillWidth: true
                        columns: 3
                        columnSpacing: 8
                        rowSpacing: 6
                        enabled: LocalServer.available

                        Label { text: qsTr("Address"); color: Theme.text }
                        TextField {
                            objectName: "serverUrlField"
                            Layout.fillWidth: true
                            readOnly: true
                            selectByMouse: true
                            text: LocalServer.url
                            Accessible.name: qsTr("Address to give other programs")
                        }
                        IconButton {
                            objectName: "copyUrlButton"
                            iconName: "copy"
                            tip: qsTr("Copy the address")
                            onClicked: Ui.copyText(LocalServer.url)
                        }

                        Label { text: qsTr("Port"); color: Theme.text }
                        // Digits only (no group separator, unlike NumberField); ports below 1024
                        // are the system's.
                        TextField {
                            id: portField
                            objectName: "serverPortField"
                            Layout.preferredWidth: 96
                            horizontalAlignment: TextInput.AlignRight
                            inputMethodHints: Qt.ImhDigitsOnly
                            validator: IntValidator { bottom: 1024; top: 65535 }
                            selectByMouse: true
                            text: String(LocalServer.port)
                            Accessible.name: qsTr("Port")
                            onEditingFinished: {
                                const v = Number.fromLocaleString(Qt.locale(), text)
                                if (!isNaN(v)) LocalServer.port = v
                                text = Qt.binding(() => String(LocalServer.port))
                            }
                        }
                        Item { Layout.fillWidth: true }

                        Label { text: qsTr("API key"); color: Theme.text }
                        TextField {
                            id: keyField
                            objectName: "apiKeyField"
                            Layout.fillWidth: true
                            echoMode: showKey.checked ? TextInput.Normal : TextInput.Password
                            placeholderText: qsTr("None")
                            selectByMouse: true
                            text: LocalServer.apiKey
                            Accessible.name: qsTr("API key")
                            onEditingFinished: {
                                LocalServer.apiKey = text
                                text = Qt.binding(() => LocalServer.apiKey)
                            }
                        }
                        IconButton {
                            objectName: "copyKeyButton"
                            iconName: "copy"
                            tip: qsTr("Copy the API key")
                            enabled: LocalServer.apiKey.length > 0
                            onClicked: Ui.copyText(LocalServer.apiKey)
                        }

                        Item { width: 1 }
                        RowLayout {
                            Layout.columnSpan: 2
                            Button {
                                objectName: "generateKeyButton"
                                text: qsTr("Generate a key")
                                onClicked: LocalServer.generateApiKey()
                            }
                            CheckBox {
                                id: showKey
                                objectName: "showKeyBox"
                                text: qsTr("Show the key")
                            }
                        }
                    }
                    Label {
                        Layout.fillWidth: true
                        wrapMode: Text.Wrap
                        color: Theme.textMuted
                        text: qsTr("The server listens on this computer only (127.0.0.1). Without a key, any program here may use it; with one, programs send it as their API key.")
                    }
                }
            }
        }
    }
}
