// The bar across the top: which model is loaded, loading progress with cancel, unload, and the
// buttons for the sidebar, the library, the side panel and the settings.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ToolBar {
    id: bar
    signal toggleSidebar()
    signal togglePanel()
    signal openLibrary()
    signal openSettings()
    signal openLoadPanel()

    readonly property var model: EngineController.model
    readonly property bool loading: EngineController.state === EngineController.Loading

    background: Rectangle {
        color: Theme.surface
        Rectangle {
            anchors.bottom: parent.bottom
            width: parent.width
            height: 1
            color: Theme.border
        }
    }

    RowLayout {
        anchors.fill: parent
        anchors.leftMargin: 6
        anchors.rightMargin: 6
        spacing: 6

        IconButton {
            iconName: "menu"
            tip: qsTr("Show or hide conversations (Ctrl+B)")
            onClicked: bar.toggleSidebar()
        }

        Image {
            source: "qrc:/hearth/hearth.svg"
            sourceSize.width: 26
            sourceSize.height: 26
            Accessible.ignored: true
        }
        Label {
            text: "Hearth"
            font.bold: true
            font.pointSize: Theme.fontSize + 1
            color: Theme.text
            Layout.rightMargin: 12
        }

        // The model chip: what is loaded, or what is loading.
        Rectangle {
            id: chip
            Layout.preferredHeight: 36
            Layout.preferredWidth: Math.min(560, chipRow.implicitWidth + 24)
            radius: 18
            color: chipArea.containsMouse ? Theme.surfaceAlt : Theme.background
            border.color: Theme.border
            Accessible.role: Accessible.Button
            Accessible.name: statusText.text
            Accessible.onPressAction: bar.openLoadPanel()

            MouseArea {
                id: chipArea
                anchors.fill: parent
                hoverEnabled: true
                cursorShape: Qt.PointingHandCursor
                onClicked: bar.openLoadPanel()
            }

            RowLayout {
                id: chipRow
                anchors.verticalCenter: parent.verticalCenter
                anchors.left: parent.left
                anchors.leftMargin: 12
                spacing: 8

                Rectangle {
                    width: 9
                    height: 9
                    radius: 4.5
                    color: EngineController.loaded ? Theme.success
                                                   : bar.loading ? Theme.accent : Theme.textMuted
                    Accessible.ignored: true
                }
                Label {
                    id: statusText
                    color: Theme.text
                    elide: Text.ElideRight
                    Layout.maximumWidth: 330
                    text: {
                        if (bar.loading)
                            return qsTr("Loading… %1").arg(EngineController.loadStage)
                        if (EngineController.loaded)
                            return bar.model.name || ""

                        return qsTr("No model loaded")
                    }
                }
                Label {
                    visible: EngineController.loaded
                    color: Theme.textMuted
                    font.pointSize: Theme.smallFont
                    text: EngineController.loaded
                          ? qsTr("%1 · %2 · %3 tokens").arg((bar.model.format || "").toUpperCase())
                                                          .arg(bar.model.deviceName || "")
                                                          .arg(EngineController.maxSeqLen)
                          : ""
                }
                ProgressBar {
                    visible: bar.loading
                    Layout.preferredWidth: 120
                    from: 0
                    to: 1
                    value: EngineController.loadFraction
                    indeterminate: EngineController.loadFraction <= 0
                    Accessible.name: qsTr("Load progress")
                }
            }
        }

        Button {
            visible: bar.loading
            text: qsTr("Cancel")
            flat: true
            Accessible.name: qsTr("Cancel loading")
            onClicked: EngineController.cancelLoad()
        }
        Button {
            visible: EngineController.loaded
            enabled: !ChatSession.generating
            text: qsTr("Unload")
            flat: true
            Accessible.name: qsTr("Unload the model")
            onClicked: EngineController.unload()
        }
        Button {
            visible: !EngineController.loaded && !bar.loading
            text: qsTr("Load a model…")
            highlighted: true
            Accessible.name: qsTr("Load a model")
            onClicked: bar.openLoadPanel()
        }

        Item { Layout.fillWidth: true }

        Label {
            visible: ChatSession.generating && EngineController.liveTokensPerSecond > 0
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: qsTr("%1 tokens/s").arg(Ui.formatNumber(EngineController.liveTokensPerSecond, 1))
            Accessible.name: text
        }

        IconButton {
            iconName: "library"
            tip: qsTr("Model library (Ctrl+L)")
            onClicked: bar.openLibrary()
        }
        IconButton {
            iconName: "panel"
            tip: qsTr("Show or hide the model and performance panel")
            onClicked: bar.togglePanel()
        }
        IconButton {
            iconName: "settings"
            tip: qsTr("Settings (Ctrl+,)")
            onClicked: bar.openSettings()
        }
    }
}
