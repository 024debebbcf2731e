// Opens a conversation exported as JSON (by this or another Hearth).
import QtQuick
import QtQuick.Dialogs
import Hearth

FileDialog {
    signal failed(string message)
    title: qsTr("Import a conversation")
    fileMode: FileDialog.OpenFile
    nameFilters: [qsTr("Hearth conversations (*.json)")]
    onAccepted: {
        const id = ConversationList.importJson(selectedFile)
        if (id > 0)
            ChatSession.open(id)
        else
            failed(ConversationList.lastError())
    }
}
