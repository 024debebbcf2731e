import QtQuick
import QtTest
import Hearth

// The Live tab while an answer streams: the figures are the current answer's (its prompt, its
// generation, the context it takes), not the last answer's.
Item {
    width: 360
    height: 800

    LivePanel {
        id: panel
        width: parent.width
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
        name: "LivePanel"
        when: windowShown

        function initTestCase() {
            if (EngineController.state !== EngineController.Ready) {
                EngineController.load({ path: testModelPath, device: "cpu", maxSeqLen: 1024 })
                tryCompare(EngineController, "state", EngineController.Ready, 120000)
            }
        }

        function label(name) {
            const l = findChild(panel, name)
            verify(l !== null, "no " + name)
            return l.text
        }

        function test_figuresOfTheAnswerThatStreams() {
            // A long prompt first: its answer leaves a large context behind.
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0, maxTokens: 8 }
            let longPrompt = "Summarise this list in one word:"
            for (let i = 0; i < 40; ++i)
                longPrompt += " apples, pears, plums,"
            verify(ChatSession.send(longPrompt))
            finished.wait(120000)
            const before = EngineController.contextUsed
            verify(before > 120, String(before))
            verify(label("contextLine").indexOf(String(before)) === 0, label("contextLine"))

            // A short one in a new conversation: while it streams, its own figures.
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0.8, maxTokens: 400 }
            streamed.clear()
            verify(ChatSession.send("Tell me a long story about a lighthouse."))
            tryVerify(() => streamed.count > 0, 60000)
            verify(ChatSession.generating)
            const now = EngineController.contextUsed
            verify(now > 0 && now < before, now + " of " + before)
            compare(label("contextLine"), "%1 of %2 tokens used by this answer".arg(now)
                                                                                .arg(EngineController.maxSeqLen))
            verify(label("promptSpeed") !== "–", label("promptSpeed"))
            verify(label("promptSpeed").indexOf("tokens/s") > 0, label("promptSpeed"))
            tryVerify(() => label("decodeSpeed").indexOf("tokens/s") > 0, 30000)
            ChatSession.stop()
            tryVerify(() => !ChatSession.generating, 10000)
            verify(label("contextLine").indexOf("by the last answer") > 0, label("contextLine"))
        }

        // The next message of a conversation: the engine reuses the history it has cached, and
        // the Live tab says how much.
        function test_nextMessageReusesTheHistory() {
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0, maxTokens: 8 }
            // Several of the engine's cache pages.
            let longPrompt = "Remember this list:"
            for (let i = 0; i < 90; ++i)
                longPrompt += " apples, pears, plums,"
            verify(ChatSession.send(longPrompt))
            verify(ChatSession.generating)
            // Not the answerFinished spy: a stopped answer of the test before may still report.
            tryVerify(() => !ChatSession.generating && EngineController.state === EngineController.Ready, 120000)
            verify(ChatSession.send("Which fruit came first?"))
            tryVerify(() => !ChatSession.generating && EngineController.promptTokens > 0, 120000)
            verify(EngineController.cachedPromptTokens > 100, EngineController.cachedPromptTokens + " of " + EngineController.promptTokens)
            verify(EngineController.cachedPromptTokens < EngineController.promptTokens)
            verify(label("promptCache").indexOf("reused ") === 0, label("promptCache"))
        }

        // With speculation on, the Live tab says how many proposed tokens the model kept.
        function test_speculationFigures() {
            EngineController.load({ path: testModelPath, device: "cpu", maxSeqLen: 1024, speculation: "ngram" })
            tryCompare(EngineController, "state", EngineController.Ready, 120000)
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0, maxTokens: 64 }
            // The answer repeats the function: lookup proposes it.
            verify(ChatSession.send("Add a comment to this function and return it whole:\n\ndef area(width, height):\n    if width < 0 or height < 0:\n        raise ValueError(\"negative size\")\n    return width * height\n"))
            tryVerify(() => !ChatSession.generating && EngineController.proposedTokens > 0, 120000)
            verify(label("speculation").indexOf("kept ") === 0, label("speculation"))
            verify(EngineController.acceptedTokens <= EngineController.proposedTokens)
        }
    }
}
