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
        name: "Language"
        when: windowShown

        function cleanupTestCase() { Language.apply("en") }

        function test_switchesAtRunTime() {
            const button = findChild(sidebar, "newChatButton")
            compare(button.text, "New chat")
            verify(Language.apply("de"))
            compare(Language.current, "de")
            compare(button.text, "Neuer Chat")
            verify(Language.apply("zh_CN"))
            compare(button.text, "新对话")
            verify(Language.apply("en"))
            compare(button.text, "New chat")
        }
    }
}
