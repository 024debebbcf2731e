import QtQuick
import QtTest
import Hearth

Item {
    id: root
    width: 900
    height: 700

    ChatView {
        id: chat
        anchors.fill: parent
    }

    SignalSpy {
        id: streamed
        target: EngineController
        signalName: "generationText"
    }

    SignalSpy {
        id: finished
        target: ChatSession
        signalName: "answerFinished"
    }

    TestCase {
        name: "ChatView"
        when: windowShown

        function initTestCase() {
            EngineController.load({ path: testModelPath, device: "cpu", maxSeqLen: 1024 })
            tryCompare(EngineController, "state", EngineController.Ready, 120000)
        }

        function list() { return findChild(chat, "messageListView") }

        function sendAndWait(text) {
            const input = findChild(chat, "composerInput")
            input.forceActiveFocus()
            input.text = text
            const before = finished.count
            keyClick(Qt.Key_Return)
            finished.wait(120000)
            compare(finished.count, before + 1)
        }

        function test_1_sendStreamsAnAnswer() {
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0, maxTokens: 24 }
            sendAndWait("Name a colour.")
            compare(findChild(chat, "composerInput").text, "")
            compare(list().count, 2)
            compare(ChatSession.title, "Name a colour.")
            const answer = list().itemAtIndex(1)
            compare(answer.role, "assistant")
            compare(answer.messageState, "complete")
            verify(answer.content.length > 0)
            verify(answer.tokens > 0)
            verify(answer.tokensPerSecond > 0)
            verify(ConversationList.indexOf(ChatSession.conversationId) >= 0)
        }

        function test_2_regenerateReplacesTheAnswer() {
            verify(ChatSession.canRegenerate)
            ChatSession.regenerate()
            finished.wait(120000)
            compare(list().count, 2)
            compare(list().itemAtIndex(1).messageState, "complete")
        }

        function test_3_editAndResend() {
            verify(ChatSession.editAndResend(0, "Name a fruit."))
            finished.wait(120000)
            compare(list().count, 2)
            compare(list().itemAtIndex(0).content, "Name a fruit.")
        }

        function test_4_stopEndsTheAnswer() {
            ChatSession.sampling = { temperature: 0.8, maxTokens: 2000 }
            const input = findChild(chat, "composerInput")
            input.forceActiveFocus()
            input.text = "Write a very long story about a dragon."
            keyClick(Qt.Key_Return)
            tryVerify(() => ChatSession.generating)
            const stop = findChild(chat, "stopButton")
            tryVerify(() => stop.visible)
            streamed.clear()
            tryVerify(() => streamed.count > 0, 60000)
            const before = finished.count
            mouseClick(stop)
            tryCompare(finished, "count", before + 1, 10000)
            compare(finished.signalArguments[finished.count - 1][0], "cancelled")
            verify(!ChatSession.generating)
            verify(findChild(chat, "sendButton").visible)
        }

        function test_5_codeBlockHasACopyButton() {
            const id = ConversationList.importJson(codeConversationUrl)
            verify(id > 0)
            ChatSession.open(id)
            compare(list().count, 2)
            const copy = findChild(list().itemAtIndex(1), "copyCodeButton")
            verify(copy !== null)
            mouseClick(copy)
            compare(Ui.clipboardText(), "def reverse(s):\n    return s[::-1]")
        }

        function test_6_openingAnotherConversationKeepsTheAnswer() {
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0.8, maxTokens: 2000 }
            const input = findChild(chat, "composerInput")
            input.forceActiveFocus()
            input.text = "Tell me a long story about the sea."
            keyClick(Qt.Key_Return)
            const first = ChatSession.conversationId
            verify(first > 0)
            streamed.clear()
            tryVerify(() => streamed.count > 0, 60000)
            const before = finished.count
            ChatSession.open(ConversationList.importJson(codeConversationUrl))
            tryCompare(finished, "count", before + 1, 10000)
            compare(list().count, 2)
            compare(list().itemAtIndex(0).content, "How do I reverse a string in Python?")
            // The interrupted answer was stored whole in its own conversation.
            ChatSession.open(first)
            compare(list().count, 2)
            const answer = list().itemAtIndex(1)
            compare(answer.messageState, "complete")
            compare(answer.finishReason, "cancelled")
            verify(answer.content.length > 0)
        }

        // The message box's placeholder says something true in every state of the engine.
        function test_7_placeholderFollowsTheEngine() {
            const input = findChild(chat, "composerInput")
            compare(EngineController.state, EngineController.Ready)
            compare(input.placeholderText, "Message Hearth…")

            // While an answer streams, a model is loaded.
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0.8, maxTokens: 2000 }
            input.forceActiveFocus()
            input.text = "Tell me a long story about a lighthouse."
            keyClick(Qt.Key_Return)
            compare(EngineController.state, EngineController.Generating)
            compare(input.placeholderText, "Hearth is answering…")
            const before = finished.count
            ChatSession.stop()
            tryCompare(finished, "count", before + 1, 10000)
            compare(input.placeholderText, "Message Hearth…")

            EngineController.unload()
            tryCompare(EngineController, "state", EngineController.Empty, 20000)
            compare(input.placeholderText, "Load a model to start chatting")

            EngineController.load({ path: testModelPath, device: "cpu", maxSeqLen: 1024 })
            compare(EngineController.state, EngineController.Loading)
            compare(input.placeholderText, "Loading the model…")
            tryCompare(EngineController, "state", EngineController.Ready, 120000)
            compare(input.placeholderText, "Message Hearth…")
        }
    }
}
