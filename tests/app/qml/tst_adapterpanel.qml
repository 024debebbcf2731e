import QtQuick
import QtTest
import Hearth

// The Adapters tab with the fixture adapters (tests/fixtures/lora, made for the default model):
// found in a models folder and never offered as models, checked against the loaded model,
// switched on and re-weighted without reloading it, applied again by the next load, and named
// with their weight in the record of each answer they shaped.
Item {
    width: 1200
    height: 1100

    AdapterPanel {
        id: panel
        width: 380
    }
    ChatView {
        id: chat
        x: 380
        width: parent.width - 380
        height: parent.height
    }
    // For the settings a load sends (the chosen adapters with them).
    LoadPanel {
        id: loadPanel
        visible: false
        width: 360
    }

    SignalSpy {
        id: finished
        target: ChatSession
        signalName: "answerFinished"
    }
    SignalSpy {
        id: loads
        target: EngineController
        signalName: "loadSucceeded"
    }

    TestCase {
        name: "AdapterPanel"
        when: windowShown

        readonly property string question: "Write one sentence about the sea."
        readonly property string allPath: loraFixturesDir + "/all_r16"
        property string baseAnswer: ""

        function loadModel(settings) {
            EngineController.load(settings || { path: testModelPath, device: "cpu", maxSeqLen: 1024 })
            tryCompare(EngineController, "state", EngineController.Ready, 120000)
        }

        function waitForScan() {
            // A scan starts when the model changes; wait for the one that follows.
            tryVerify(() => !AdapterList.scanning, 60000)
        }

        function card(name) { return findChild(panel, "adapter_" + name) }

        function lastAnswer() {
            const list = findChild(chat, "messageListView")
            return list.itemAtIndex(list.count - 1)
        }

        function ask() {
            ChatSession.startNew()
            ChatSession.sampling = { temperature: 0, maxTokens: 24 }
            const before = finished.count
            verify(ChatSession.send(question))
            tryVerify(() => finished.count > before && !ChatSession.generating, 120000)
            const answer = lastAnswer()
            compare(answer.role, "assistant")
            compare(answer.messageState, "complete")
            return answer
        }

        function initTestCase() {
            AppSettings.activeAdapters = []
            AppSettings.addedAdapters = []
            AppSettings.modelFolders = [loraFixturesDir]
            loadModel()
            AdapterList.rescan()
            waitForScan()
        }

        function cleanupTestCase() {
            // Leave no adapter applied or chosen for the views tested after this one.
            for (const a of AppSettings.activeAdapters)
                AdapterList.setActive(a.path, false)
            tryVerify(() => !AdapterList.applying, 30000)
            AppSettings.activeAdapters = []
            AppSettings.addedAdapters = []
            AppSettings.modelFolders = []
        }

        function test_1_listsTheFixturesAndTheLibraryDoesNot() {
            for (const name of ["attn_r8", "all_r16", "all_r16.gguf"])
                verify(card(name) !== null, "no card for " + name)

            const attn = AdapterList.entry(loraFixturesDir + "/attn_r8")
            compare(attn.format, "peft")
            compare(attn.rank, 8)
            verify(attn.inspected)
            verify(attn.fits, attn.error)
            verify(attn.targets.indexOf("q_proj") >= 0, attn.targets)
            verify(attn.targets.indexOf("down_proj") < 0, attn.targets)
            verify(attn.layers > 0)
            verify(attn.bytes > 0)
            const gguf = AdapterList.entry(loraFixturesDir + "/all_r16.gguf")
            compare(gguf.format, "gguf")
            compare(gguf.rank, 16)
            verify(gguf.fits, gguf.error)
            compare(gguf.targets.length, 7)
            const details = findChild(card("attn_r8"), "details").text
            verify(details.indexOf("rank 8") > 0, details)
            verify(details.indexOf("q_proj") > 0, details)
            verify(!findChild(card("attn_r8"), "fitError").visible)
            verify(!findChild(panel, "noModelNote").visible)

            // The same folder scanned for models: no adapter is offered as one.
            ModelLibrary.rescan()
            tryCompare(ModelLibrary, "scanning", false, 60000)
            verify(ModelLibrary.indexOfPath(testModelPath) >= 0)
            for (const name of ["attn_r8", "all_r16", "all_r16.gguf"])
                compare(ModelLibrary.indexOfPath(loraFixturesDir + "/" + name), -1)
            const refused = ModelLibrary.importModel(Ui.pathToUrl(loraFixturesDir + "/all_r16.gguf"))
            verify(refused.indexOf("LoRA adapter") > 0, refused)
        }

        function test_2_aBrokenAdapterSaysWhy() {
            const notAdapter = AdapterList.addAdapter(Ui.pathToUrl(testModelPath))
            verify(notAdapter.indexOf("not a LoRA adapter") > 0, notAdapter)

            compare(AdapterList.addAdapter(Ui.pathToUrl(brokenAdapterPath + "/adapter_config.json")), "")
            compare(AppSettings.addedAdapters.length, 1)
            compare(AppSettings.addedAdapters[0], brokenAdapterPath)
            tryVerify(() => card("broken_adapter") !== null, 60000)
            waitForScan()
            const broken = card("broken_adapter")
            const e = AdapterList.entry(brokenAdapterPath)
            verify(e.inspected)
            verify(!e.fits)
            verify(e.error.length > 0)
            const why = findChild(broken, "fitError")
            verify(why.visible)
            compare(why.text, "Cannot be applied to the loaded model: " + e.error)
            verify(e.error.indexOf("adapter_model.safetensors") >= 0, e.error)
            verify(!findChild(broken, "toggle").enabled)
            verify(!AdapterList.setActive(brokenAdapterPath, true))
            verify(AdapterList.notice.indexOf("cannot be applied") > 0, AdapterList.notice)
            compare(AppSettings.activeAdapters.length, 0)

            AdapterList.removeAdapter(brokenAdapterPath)
            compare(AppSettings.addedAdapters.length, 0)
            tryVerify(() => card("broken_adapter") === null, 60000)
        }

        function test_3_switchedOnItChangesTheNextAnswer() {
            const base = ask()
            baseAnswer = base.content
            verify(baseAnswer.length > 0)
            compare(base.adapters.length, 0)
            verify(!findChild(base, "adapterLine").visible)

            const toggle = findChild(card("all_r16"), "toggle")
            verify(toggle.enabled)
            verify(!toggle.checked)
            loads.clear()
            mouseClick(toggle)
            verify(toggle.checked)
            compare(AppSettings.activeAdapters.length, 1)
            compare(AppSettings.activeAdapters[0].path, allPath)
            compare(AppSettings.activeAdapters[0].weight, 1)
            tryVerify(() => AdapterList.entry(allPath).applied && !AdapterList.applying, 30000)
            compare(loads.count, 0)  // the model was not loaded again
            verify(AdapterList.lastApplySeconds >= 0)
            verify(AdapterList.lastApplySeconds < 1, AdapterList.lastApplySeconds)
            console.info("all_r16 applied in " + (AdapterList.lastApplySeconds * 1000).toFixed(1) + " ms")
            const status = findChild(panel, "applyStatus").text
            verify(status.indexOf("without reloading the model") > 0, status)
            compare(findChild(card("all_r16"), "appliedState").text, "Applied with weight 1.00.")

            const answer = ask()
            verify(answer.content !== baseAnswer, answer.content)
            compare(answer.adapters.length, 1)
            compare(answer.adapters[0].name, "all_r16")
            compare(answer.adapters[0].path, allPath)
            compare(answer.adapters[0].weight, 1)
            const line = findChild(answer, "adapterLine")
            verify(line.visible)
            compare(line.text, "LoRA all_r16 × 1.00")

            // The record in the history: the conversation opened again from the store.
            const id = ChatSession.conversationId
            ChatSession.startNew()
            ChatSession.open(id)
            const stored = lastAnswer()
            compare(stored.content, answer.content)
            compare(stored.adapters.length, 1)
            compare(stored.adapters[0].name, "all_r16")
            compare(stored.adapters[0].weight, 1)
        }

        function test_4_anotherWeightIsAppliedAndRecorded() {
            const slider = findChild(card("all_r16"), "weightSlider")
            slider.value = 0.5
            slider.moved()
            compare(findChild(card("all_r16"), "weightValue").text, "0.50")
            tryVerify(() => AdapterList.entry(allPath).appliedWeight === 0.5 && !AdapterList.applying, 30000)
            compare(AppSettings.activeAdapters[0].weight, 0.5)
            verify(AdapterList.lastApplySeconds < 1, AdapterList.lastApplySeconds)

            const answer = ask()
            compare(answer.adapters.length, 1)
            compare(answer.adapters[0].weight, 0.5)
            compare(findChild(answer, "adapterLine").text, "LoRA all_r16 × 0.50")
        }

        function test_5_aLoadAppliesTheChoiceAgain() {
            AppSettings.lastModel = testModelPath
            tryCompare(findChild(loadPanel, "modelBox"), "currentValue", testModelPath)
            const settings = loadPanel.settings()
            compare(settings.adapters.length, 1)
            compare(settings.adapters[0].path, allPath)
            compare(settings.adapters[0].weight, 0.5)
            // The plan counts the adapter's memory beside the model's.
            loadPanel.device = "cpu"
            loadPanel.requestPlan()
            tryVerify(() => !EngineController.planning && EngineController.plan.valid === true
                             && EngineController.plan.adapters > 0, 30000)
            verify(!findChild(loadPanel, "planAdapterError").visible)
            settings.maxSeqLen = 1024
            settings.device = "cpu"
            loads.clear()
            loadModel(settings)
            compare(loads.count, 1)
            tryVerify(() => AdapterList.entry(allPath).applied, 30000)
            compare(AdapterList.entry(allPath).appliedWeight, 0.5)
            compare(ask().adapters[0].weight, 0.5)
        }

        function test_6_switchedOffTheBaseAnswerComesBack() {
            const toggle = findChild(card("all_r16"), "toggle")
            verify(toggle.checked)
            mouseClick(toggle)
            verify(!toggle.checked)
            compare(AppSettings.activeAdapters.length, 0)
            tryVerify(() => !AdapterList.entry(allPath).applied && !AdapterList.applying, 30000)
            const answer = ask()
            compare(answer.content, baseAnswer)
            compare(answer.adapters.length, 0)
            // The weight stays for the next time it is switched on.
            compare(AdapterList.entry(allPath).weight, 0.5)
        }

        function test_7_withoutAModelTheTabSaysSo() {
            EngineController.unload()
            tryCompare(EngineController, "state", EngineController.Empty, 20000)
            verify(findChild(panel, "noModelNote").visible)
            tryVerify(() => !AdapterList.scanning && !AdapterList.entry(allPath).inspected, 60000)
            verify(card("attn_r8") !== null)
            compare(findChild(card("attn_r8"), "details").text, "PEFT folder")
            // A choice made now is kept for the next load.
            verify(AdapterList.setActive(loraFixturesDir + "/attn_r8", true))
            compare(AppSettings.activeAdapters.length, 1)
            verify(!AdapterList.applying)
        }
    }
}
