// Conversations: search, new chat, the list grouped by date, and per-conversation actions
// (rename, export, delete with undo). Import of an exported conversation at the bottom.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Rectangle {
    id: sidebar
    signal newChat()
    signal openLibrary()
    signal exportRequested(var conversationId, string format)
    signal importRequested()

    function focusSearch() { searchField.forceActiveFocus(); searchField.selectAll() }

    color: Theme.sidebar
    Accessible.role: Accessible.Pane
    Accessible.name: qsTr("Conversations")

    Rectangle {
        anchors.right: parent.right
        width: 1
        height: parent.height
        color: Theme.border
    }

    ColumnLayout {
        anchors.fill: parent
        anchors.margins: 10
        spacing: 8

        Button {
            objectName: "newChatButton"
            Layout.fillWidth: true
            text: qsTr("New chat")
            icon.source: "qrc:/hearth/icons/plus.svg"
            highlighted: true
            Accessible.name: qsTr("New chat (Ctrl+N)")
            ToolTip.visible: hovered
            ToolTip.delay: 600
            ToolTip.text: qsTr("New chat (Ctrl+N)")
            onClicked: sidebar.newChat()
        }

        TextField {
            id: searchField
            objectName: "conversationSearch"
            Layout.fillWidth: true
            placeholderText: qsTr("Search conversations (Ctrl+F)")
            Accessible.name: qsTr("Search conversations")
            selectByMouse: true
            onTextChanged: searchDelay.restart()
            Keys.onEscapePressed: text = ""
            Timer {
                id: searchDelay
                interval: 200
                onTriggered: ConversationList.query = searchField.text
            }
        }

        ListView {
            id: list
            objectName: "conversationListView"
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: ConversationList
            spacing: 2
            boundsBehavior: Flickable.StopAtBounds
            ScrollBar.vertical: ScrollBar {}
            Accessible.role: Accessible.List
            Accessible.name: qsTr("Conversation list")

            section.property: ConversationList.query.length > 0 ? "" : "section"
            section.delegate: Label {
                required property string section
                width: ListView.view.width
                text: section
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                font.bold: true
                topPadding: 10
                bottomPadding: 4
                leftPadding: 8
            }

            delegate: ItemDelegate {
                id: row
                required property var conversationId
                required property string title
                required property string snippet
                required property int index
                width: ListView.view.width
                highlighted: conversationId === ChatSession.conversationId
                Accessible.name: title
                Accessible.description: snippet
                onClicked: ChatSession.open(conversationId)

                background: Rectangle {
                    radius: 8
                    color: row.highlighted ? Theme.accentSoft
                                           : row.hovered ? Theme.surfaceAlt : "transparent"
                }
                contentItem: ColumnLayout {
                    spacing: 2
                    RowLayout {
                        Layout.fillWidth: true
                        Label {
                            Layout.fillWidth: true
                            text: row.title
                            elide: Text.ElideRight
                            color: Theme.text
                        }
                        IconButton {
                            iconName: "more"
                            tip: qsTr("Actions for %1").arg(row.title)
                            implicitWidth: 30
                            implicitHeight: 30
                            opacity: row.hovered || row.highlighted || menu.visible ? 1 : 0
                            onClicked: menu.popup()
                        }
                    }
                    Label {
                        visible: row.snippet.length > 0
                        Layout.fillWidth: true
                        text: row.snippet
                        color: Theme.textMuted
                        font.pointSize: Theme.smallFont
                        elide: Text.ElideRight
                        maximumLineCount: 2
                        wrapMode: Text.Wrap
                    }
                }
                TapHandler {
                    acceptedButtons: Qt.RightButton
                    onTapped: menu.popup()
                }
                Menu {
                    id: menu
                    MenuItem {
                        text: qsTr("Rename…")
                        onTriggered: renameDialog.start(row.conversationId, row.title)
                    }
                    MenuItem {
                        text: qsTr("Export as Markdown…")
                        onTriggered: sidebar.exportRequested(row.conversationId, "md")
                    }
                    MenuItem {
                        text: qsTr("Export as JSON…")
                        onTriggered: sidebar.exportRequested(row.conversationId, "json")
                    }
                    MenuSeparator {}
                    MenuItem {
                        text: qsTr("Delete")
                        onTriggered: ConversationList.remove(row.conversationId)
                    }
                }
            }

            Label {
                anchors.centerIn: parent
                width: parent.width - 20
                horizontalAlignment: Text.AlignHCenter
                wrapMode: Text.Wrap
                visible: list.count === 0
                color: Theme.textMuted
                text: ConversationList.query.length > 0 ? qsTr("Nothing found.")
                                                        : qsTr("Your conversations will appear here.")
            }
        }

        RowLayout {
            Layout.fillWidth: true
            Button {
                Layout.fillWidth: true
                flat: true
                text: qsTr("Import…")
                font.capitalization: Font.MixedCase
                icon.source: "qrc:/hearth/icons/upload.svg"
                Accessible.name: qsTr("Import a conversation from JSON")
                onClicked: sidebar.importRequested()
            }
            Button {
                Layout.fillWidth: true
                flat: true
                text: qsTr("Models")
                font.capitalization: Font.MixedCase
                icon.source: "qrc:/hearth/icons/library.svg"
                Accessible.name: qsTr("Open the model library")
                onClicked: sidebar.openLibrary()
            }
        }
    }

    Dialog {
        id: renameDialog
        property var conversationId: 0
        function start(id, title) {
            conversationId = id
            nameField.text = title
            open()
            nameField.forceActiveFocus()
            nameField.selectAll()
        }
        parent: Overlay.overlay
        anchors.centerIn: parent
        modal: true
        width: 420
        title: qsTr("Rename conversation")
        standardButtons: Dialog.Ok | Dialog.Cancel
        onAccepted: ConversationList.rename(conversationId, nameField.text)
        TextField {
            id: nameField
            width: parent.width
            Accessible.name: qsTr("Conversation title")
            onAccepted: renameDialog.accept()
        }
    }
}
