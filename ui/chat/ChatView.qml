// The open conversation: its title and settings, the messages, and the composer.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Rectangle {
    id: view
    signal openLoadPanel()
    function focusComposer() { composer.focusInput() }

    color: Theme.background
    Accessible.role: Accessible.Pane
    Accessible.name: qsTr("Chat")

    ColumnLayout {
        anchors.fill: parent
        spacing: 0

        // Title row.
        RowLayout {
            Layout.fillWidth: true
            Layout.preferredHeight: 48
            Layout.leftMargin: 20
            Layout.rightMargin: 8
            Label {
                Layout.fillWidth: true
                text: ChatSession.title.length > 0 ? ChatSession.title : qsTr("New chat")
                font.pointSize: Theme.fontSize + 2
                font.bold: true
                color: Theme.text
                elide: Text.ElideRight
                Accessible.role: Accessible.Heading
                Accessible.name: text
            }
            IconButton {
                iconName: "sliders"
                tip: qsTr("System prompt and sampling of this conversation")
                onClicked: conversationSettings.open()
            }
        }
        Rectangle {
            Layout.fillWidth: true
            height: 1
            color: Theme.border
        }

        ListView {
            id: messages
            objectName: "messageListView"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: ChatSession.messages
            spacing: 18
            topMargin: 20
            bottomMargin: 20
            boundsBehavior: Flickable.StopAtBounds
            ScrollBar.vertical: ScrollBar {}
            Accessible.role: Accessible.List
            Accessible.name: qsTr("Messages")
            reuseItems: false

            // Follow the answer while it streams, unless the user scrolled up to read.
            property bool pinned: true
            onMovementEnded: pinned = atYEnd
            onContentHeightChanged: if (pinned) positionViewAtEnd()
            onCountChanged: { pinned = true; positionViewAtEnd() }

            delegate: MessageDelegate {
                width: messages.width
            }
        }

        Composer {
            id: composer
            Layout.fillWidth: true
            onOpenLoadPanel: view.openLoadPanel()
        }
    }

    // Shown while the conversation is empty.
    ColumnLayout {
        anchors.centerIn: parent
        anchors.verticalCenterOffset: -60
        visible: messages.count === 0
        spacing: 12
        width: Math.min(parent.width - 80, 520)

        Image {
            Layout.alignment: Qt.AlignHCenter
            source: "qrc:/hearth/hearth.svg"
            sourceSize.width: 72
            sourceSize.height: 72
            Accessible.ignored: true
        }
        Label {
            Layout.alignment: Qt.AlignHCenter
            text: qsTr("What can I help you with?")
            font.pointSize: Theme.titleFont + 4
            color: Theme.text
        }
        Label {
            Layout.fillWidth: true
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: EngineController.loaded
                  ? qsTr("Everything runs on this computer. Your conversations stay here.")
                  : qsTr("Load a model to start: it runs entirely on this computer.")
        }
        Button {
            Layout.alignment: Qt.AlignHCenter
            visible: !EngineController.loaded && EngineController.state !== EngineController.Loading
            text: qsTr("Choose a model…")
            highlighted: true
            Accessible.name: qsTr("Choose a model to load")
            onClicked: view.openLoadPanel()
        }
    }

    ConversationSettingsDialog { id: conversationSettings }
}
