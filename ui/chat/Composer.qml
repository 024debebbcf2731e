// Where the user writes: Enter sends, Shift+Enter starts a new line; Send turns into Stop while
// the answer streams.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Item {
    id: composer
    signal openLoadPanel()
    function focusInput() { input.forceActiveFocus() }

    readonly property bool ready: EngineController.state === EngineController.Ready
    implicitHeight: box.height + hint.height + 28

    function send() {
        if (!ready || input.text.trim().length === 0)
            return
        if (ChatSession.send(input.text))
            input.text = ""
    }

    Rectangle {
        id: box
        anchors.horizontalCenter: parent.horizontalCenter
        anchors.top: parent.top
        anchors.topMargin: 8
        width: Math.min(parent.width - 48, 820)
        height: Math.min(Math.max(input.implicitHeight + 20, 56), 220)
        radius: 18
        color: Theme.surface
        border.color: input.activeFocus ? Theme.accent : Theme.border
        border.width: input.activeFocus ? 2 : 1

        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: 14
            anchors.rightMargin: 8
            spacing: 8

            ScrollView {
                Layout.fillWidth: true
                Layout.fillHeight: true
                TextArea {
                    id: input
                    objectName: "composerInput"
                    // Generating is a loaded state too: each state gets its own true sentence.
                    placeholderText: {
                        switch (EngineController.state) {
                        case EngineController.Ready: return qsTr("Message Hearth…")
                        case EngineController.Generating: return qsTr("Hearth is answering…")
                        case EngineController.Loading: return qsTr("Loading the model…")
                        default: return qsTr("Load a model to start chatting")
                        }
                    }
                    wrapMode: TextArea.Wrap
                    selectByMouse: true
                    background: null
                    color: Theme.text
                    font.pointSize: Theme.fontSize
                    verticalAlignment: TextArea.AlignVCenter
                    Accessible.name: qsTr("Message")
                    Accessible.description: qsTr("Enter sends, Shift+Enter starts a new line")
                    Keys.onPressed: (event) => {
                        if ((event.key === Qt.Key_Return || event.key === Qt.Key_Enter)
                                && !(event.modifiers & Qt.ShiftModifier)) {
                            event.accepted = true
                            composer.send()
                        }
                    }
                }
            }

            RoundButton {
                id: sendButton
                objectName: "sendButton"
                Layout.alignment: Qt.AlignVCenter
                visible: !ChatSession.generating
                enabled: composer.ready && input.text.trim().length > 0
                highlighted: true
                icon.source: "qrc:/hearth/icons/send.svg"
                icon.color: "white"
                text: qsTr("Send")
                display: AbstractButton.IconOnly
                Accessible.name: qsTr("Send message (Enter)")
                ToolTip.visible: hovered
                ToolTip.delay: 600
                ToolTip.text: qsTr("Send (Enter)")
                onClicked: composer.send()
            }
            RoundButton {
                id: stopButton
                objectName: "stopButton"
                Layout.alignment: Qt.AlignVCenter
                visible: ChatSession.generating
                icon.source: "qrc:/hearth/icons/stop.svg"
                text: qsTr("Stop")
                display: AbstractButton.IconOnly
                Accessible.name: qsTr("Stop generating (Esc)")
                ToolTip.visible: hovered
                ToolTip.delay: 600
                ToolTip.text: qsTr("Stop (Esc)")
                onClicked: ChatSession.stop()
            }
        }
    }

    Label {
        id: hint
        anchors.top: box.bottom
        anchors.topMargin: 6
        anchors.horizontalCenter: parent.horizontalCenter
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: EngineController.state === EngineController.Empty
              ? qsTr("No model is loaded.") + " "
              : qsTr("Answers come from a language model and can be wrong.")
        MouseArea {
            anchors.fill: parent
            enabled: EngineController.state === EngineController.Empty
            cursorShape: enabled ? Qt.PointingHandCursor : Qt.ArrowCursor
            onClicked: composer.openLoadPanel()
        }
    }
}
