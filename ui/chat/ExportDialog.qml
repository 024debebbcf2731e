// Saves a conversation as Markdown or JSON.
import QtQuick
import QtQuick.Dialogs
import Hearth

FileDialog {
    id: dialog
    property var conversationId: 0
    property string format: "md"
    signal failed(string message)

    function start(id, fmt) {
        conversationId = id
        format = fmt
        const base = ConversationList.titleOf(id).replace(/[\\/:*?"<>|]/g, "_") || "conversation"
        selectedFile = Ui.pathToUrl(base + (fmt === "md" ? ".md" : ".json"))
        open()
    }

    title: format === "md" ? qsTr("Export as Markdown") : qsTr("Export as JSON")
    fileMode: FileDialog.SaveFile
    nameFilters: format === "md" ? [qsTr("Markdown (*.md)")] : [qsTr("JSON (*.json)")]
    onAccepted: {
        const problem = format === "md" ? ConversationList.exportMarkdown(conversationId, selectedFile)
                                        : ConversationList.exportJson(conversationId, selectedFile)
        if (problem.length > 0)
            failed(problem)
    }
}
