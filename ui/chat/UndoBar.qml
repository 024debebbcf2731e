// "Conversation deleted — Undo": shown for the few seconds a deletion can still be taken back.
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Hearth

Rectangle {
    visible: ConversationList.canUndo
    width: row.implicitWidth + 32
    height: 48
    radius: 10
    color: Theme.dark ? "#efe9e4" : "#2d2a28"
    Accessible.role: Accessible.AlertMessage
    Accessible.name: label.text

    RowLayout {
        id: row
        anchors.centerIn: parent
        spacing: 12
        Label {
            id: label
            text: qsTr("Deleted “%1”").arg(ConversationList.pendingTitle)
            color: Theme.dark ? "#23201e" : "#f4efea"
            elide: Text.ElideRight
            Layout.maximumWidth: 360
        }
        Button {
            text: qsTr("Undo")
            flat: true
            font.bold: true
            Material.foreground: Theme.accent
            Accessible.name: qsTr("Undo the deletion")
            onClicked: ConversationList.undoRemove()
        }
    }
}
