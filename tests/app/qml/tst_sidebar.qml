import QtQuick
import QtTest
import Hearth

Item {
    width: 300
    height: 600

    Sidebar {
        id: sidebar
        anchors.fill: parent
    }

    TestCase {
        name: "Sidebar"
        when: windowShown

        function init() { ConversationList.query = "" }

        function test_newConversationIsListed() {
            const list = findChild(sidebar, "conversationListView")
            const before = list.count
            ConversationList.newConversation("Penguins of Antarctica")
            compare(list.count, before + 1)
        }

        function test_typingInSearchFilters() {
            ConversationList.newConversation("Zebra facts")
            ConversationList.newConversation("Giraffe facts")
            const field = findChild(sidebar, "conversationSearch")
            field.forceActiveFocus()
            for (const c of "zebra")
                keyClick(c)
            tryCompare(ConversationList, "query", "zebra")
            const list = findChild(sidebar, "conversationListView")
            tryCompare(list, "count", 1)
            keyClick(Qt.Key_Escape)
            tryCompare(ConversationList, "query", "")
            verify(list.count >= 2)
        }

        function test_deleteCanBeUndone() {
            const id = ConversationList.newConversation("To delete")
            const n = ConversationList.count
            ConversationList.remove(id)
            compare(ConversationList.count, n - 1)
            verify(ConversationList.canUndo)
            compare(ConversationList.pendingTitle, "To delete")
            ConversationList.undoRemove()
            compare(ConversationList.count, n)
            verify(!ConversationList.canUndo)
            verify(ConversationList.indexOf(id) >= 0)
        }

        function test_renameShowsNewTitle() {
            const id = ConversationList.newConversation("Old name")
            ConversationList.rename(id, "New name")
            compare(ConversationList.titleOf(id), "New name")
        }
    }
}
