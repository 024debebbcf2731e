import QtQuick
import QtTest
import Hearth

Item {
    id: root
    width: 360
    height: 1000

    LoadPanel {
        id: panel
        width: parent.width
    }
    // A panel made after a choice was saved, as at the next start.
    Component {
        id: freshPanel
        LoadPanel { width: 360 }
    }

    TestCase {
        name: "LoadPanel"
        when: windowShown

        // The maximum sequence length shown is the one in force for the loaded model, and a
        // different value is named as what the next load will use.
        function test_maxSeqLenOfTheLoadedModel() {
            ModelLibrary.rescan()
            tryCompare(ModelLibrary, "scanning", false, 60000)
            AppSettings.lastModel = testModelPath
            const box = findChild(panel, "modelBox")
            tryCompare(box, "currentValue", testModelPath)

            // Not loaded: the model's own context (8192 tokens, within the 8192 the panel
            // proposes at most), whichever model was chosen before.
            EngineController.unload()
            tryCompare(EngineController, "state", EngineController.Empty, 20000)
            box.currentIndex = -1
            box.currentIndex = ModelLibrary.indexOfPath(testModelPath)
            compare(panel.maxSeqLen, 8192)
            const note = findChild(panel, "maxSeqLenNote")
            verify(note !== null, "no maxSeqLenNote")
            verify(!note.visible)

            // Loaded with another length: the panel shows that one, as in force.
            EngineController.load({ path: testModelPath, device: "cpu", maxSeqLen: 2048 })
            tryCompare(EngineController, "state", EngineController.Ready, 120000)
            compare(EngineController.maxSeqLen, 2048)
            tryCompare(panel, "maxSeqLen", 2048)
            verify(note.visible)
            compare(note.text, "The loaded model runs with this length.")
            box.currentIndex = -1
            box.currentIndex = ModelLibrary.indexOfPath(testModelPath)
            compare(panel.maxSeqLen, 2048)

            // Changed here, it waits for the next load and says what is in force meanwhile.
            panel.maxSeqLen = 4096
            compare(note.text, "The loaded model runs with %1 tokens; this length applies when you reload."
                                   .arg(Number(2048).toLocaleString(Qt.locale(), "f", 0)))
            EngineController.load(panel.settings())
            tryCompare(EngineController, "state", EngineController.Ready, 120000)
            compare(EngineController.maxSeqLen, 4096)
            compare(note.text, "The loaded model runs with this length.")
        }

        // The speculation choice is remembered and goes with the load settings.
        function test_speculationChoiceIsSavedAndSent() {
            const box = findChild(panel, "speculationBox")
            verify(box !== null)
            for (const value of ["off", "draft", "ngram"]) {
                box.currentIndex = box.indexOfValue(value)
                box.activated(box.currentIndex)
                compare(panel.settings().speculation, value)
                compare(AppSettings.speculation, value)
            }
            // A draft model is picked from the library, and only sent with "draft".
            box.currentIndex = box.indexOfValue("draft")
            box.activated(box.currentIndex)
            const drafts = findChild(panel, "draftBox")
            verify(drafts.visible)
            drafts.currentIndex = ModelLibrary.indexOfPath(testModelPath)
            drafts.activated(drafts.currentIndex)
            compare(panel.settings().draftPath, testModelPath)
            compare(AppSettings.draftModel, testModelPath)
            box.currentIndex = box.indexOfValue("ngram")
            box.activated(box.currentIndex)
            verify(!drafts.visible)
            compare(panel.settings().draftPath, "")
            // A saved "off" (not the first item) shows as such in a panel made afterwards.
            box.currentIndex = box.indexOfValue("off")
            box.activated(box.currentIndex)
            const next = createTemporaryObject(freshPanel, root)
            compare(findChild(next, "speculationBox").currentValue, "off")
        }

        // The KV cache choice: fp16 until another is chosen, remembered, sent with the load
        // settings and planned (the plan is the engine's for the chosen type), with the tokens
        // the chosen cache holds written under the memory plan.
        function test_kvCacheChoiceIsSavedAndSent() {
            ModelLibrary.rescan()
            tryCompare(ModelLibrary, "scanning", false, 60000)
            AppSettings.lastModel = testModelPath
            const models = findChild(panel, "modelBox")
            tryCompare(models, "currentValue", testModelPath)
            panel.device = "cpu"

            const box = findChild(panel, "kvCacheBox")
            verify(box !== null, "no kvCacheBox")
            compare(box.count, 4)
            compare(AppSettings.kvCacheType, "fp16")
            compare(box.currentValue, "fp16")
            compare(box.currentText, "fp16 (full precision)")
            compare(panel.settings().kvCacheType, "fp16")
            tryVerify(() => !EngineController.planning && EngineController.plan.valid === true
                             && EngineController.plan.kvCacheType === "fp16", 30000)
            const fp16Bytes = EngineController.plan.kvCache
            // SmolLM2's heads have 64 dims: every choice is offered, the quantized ones hold more.
            const choices = EngineController.plan.cacheChoices
            compare(choices.map(c => c.type), ["fp16", "q8", "q6", "q4"])
            for (let i = 1; i < choices.length; ++i) {
                verify(choices[i].bytesPerToken < choices[i - 1].bytesPerToken, choices[i].type)
                verify(choices[i].tokensThatFit > choices[i - 1].tokensThatFit, choices[i].type)
            }
            const fit = findChild(panel, "cacheFitLabel")
            verify(fit !== null, "no cacheFitLabel")
            tryVerify(() => fit.visible && fit.text.indexOf("Cache: fp16 — about ") === 0)

            for (const value of ["q8", "q6", "q4"]) {
                box.currentIndex = box.indexOfValue(value)
                box.activated(box.currentIndex)
                compare(panel.settings().kvCacheType, value)
                compare(AppSettings.kvCacheType, value)
                verify(findChild(panel, "kvCacheNote").text.indexOf("Holds about ") === 0)
            }
            // toLoadOptions made it the engine's q4: a smaller cache for the same tokens.
            tryVerify(() => !EngineController.planning && EngineController.plan.valid === true
                             && EngineController.plan.kvCacheType === "q4", 30000)
            verify(EngineController.plan.kvCache < fp16Bytes)
            const q4 = panel.cacheChoice
            compare(q4.type, "q4")
            verify(q4.tokensThatFit > 0)
            tryVerify(() => fit.visible)
            verify(fit.text.indexOf("Cache: q4 — about ") === 0, fit.text)
            verify(fit.text.endsWith(" tokens fit"), fit.text)
            const next = createTemporaryObject(freshPanel, root)
            compare(next.kvCacheType, "q4")
            compare(findChild(next, "kvCacheBox").currentValue, "q4")

            // The other tests load with the default.
            box.currentIndex = box.indexOfValue("fp16")
            box.activated(box.currentIndex)
            compare(AppSettings.kvCacheType, "fp16")
            tryVerify(() => !EngineController.planning && EngineController.plan.kvCacheType === "fp16", 30000)
        }

        // Without a usable GPU the GPU choice is disabled and the reason is written under it.
        function test_gpuChoiceSaysWhyItIsDisabled() {
            const reason = findChild(panel, "gpuUnavailableReason")
            verify(reason !== null, "no gpuUnavailableReason")
            compare(reason.visible, !EngineController.cudaAvailable)
            if (!EngineController.cudaAvailable) {
                compare(reason.text, EngineController.gpuStatus)
                compare(panel.device, "cpu")
            }
        }

        function test_planForTheChosenModel() {
            ModelLibrary.rescan()
            tryCompare(ModelLibrary, "scanning", false, 60000)
            verify(ModelLibrary.indexOfPath(testModelPath) >= 0)
            AppSettings.lastModel = testModelPath
            const box = findChild(panel, "modelBox")
            tryCompare(box, "currentValue", testModelPath)
            const entry = ModelLibrary.entry(testModelPath)
            compare(entry.format, "gguf")
            compare(entry.contextLength, 8192)

            panel.device = "cpu"
            tryVerify(() => !EngineController.planning && EngineController.plan.valid === true, 30000)
            verify(EngineController.plan.fits)
            verify(EngineController.plan.weights > 0)
            const load = findChild(panel, "loadButton")
            tryVerify(() => load.enabled)

            // 0 reads as "Automatic", and typing a number (in the locale's format) sets it.
            const cache = findChild(panel, "cacheBox")
            panel.cacheTokens = 0
            compare(cache.displayText, cache.automaticText)
            compare(cache.valueFromText(cache.automaticText, Qt.locale()), 0)
            compare(cache.valueFromText(Number(20480).toLocaleString(Qt.locale(), "f", 0),
                                        Qt.locale()), 20480)
            panel.cacheTokens = 8192
            compare(cache.displayText, Number(8192).toLocaleString(Qt.locale(), "f", 0))
            panel.cacheTokens = 0

            // A cache no computer here can hold: refused before loading, with the reason.
            panel.maxSeqLen = 4000000
            panel.cacheTokens = 4000000
            tryVerify(() => !EngineController.planning && EngineController.plan.valid === true
                             && !EngineController.plan.fits, 30000)
            verify(EngineController.plan.advice.length > 0)
            verify(!load.enabled)
        }

        // With several GPUs the panel offers one of them or a layer split over those ticked,
        // sends the choice (and given sizes) with the load, and shows each GPU's share of the
        // plan. This machine has no GPU: the list and the plan are stand-ins.
        function test_severalGpusAreChosenSentAndPlanned() {
            const section = findChild(panel, "gpuSection")
            verify(section !== null)
            panel.device = "cpu"
            panel.gpuList = [{ index: 0, name: "cuda:0 First", totalBytes: 80e9 },
                             { index: 1, name: "cuda:1 Second", totalBytes: 80e9 }]
            verify(!section.visible)  // not for the CPU
            panel.device = "gpu"
            verify(section.visible)

            findChild(panel, "gpuSplitOne").clicked()
            panel.setChosenGpus([1])
            compare(panel.settings().gpus, [1])
            compare(AppSettings.gpuSplit, "one")

            findChild(panel, "gpuSplitLayer").clicked()
            compare(AppSettings.gpuSplit, "layer")
            panel.setChosenGpus([1, 0])  // layer order: as ticked
            compare(panel.settings().gpus, [1, 0])
            compare(panel.settings().gpuSplitGib, [])
            const sizes = findChild(panel, "gpuSizesGiven")
            verify(sizes.visible)
            sizes.toggle()
            sizes.toggled()
            compare(panel.settings().gpuSplitGib, [20, 20])
            const first = findChild(panel, "gpuSplitGib1")
            verify(first.visible)
            first.text = Number(30).toLocaleString(Qt.locale(), "f", 1)
            first.editingFinished()
            compare(panel.settings().gpuSplitGib, [30, 20])
            compare(AppSettings.gpuSplitGib.map(Number), [30, 20])

            // Each GPU's share of a split plan gets a bar of its own.
            const bars = findChild(panel, "gpuPlanBars")
            const share = (device, first, layers, fits) => ({
                device: device, name: "cuda:" + device + " GPU", firstLayer: first,
                layers: layers, weights: 8e9, kvCache: 1e9, activations: 1e8, workspace: 1e8,
                needed: 9.2e9, deviceFree: 70e9, deviceTotal: 80e9, limit: 70e9, fits: fits })
            panel.plan = { valid: true, fits: true, weights: 16e9, kvCache: 2e9,
                           activations: 2e8, workspace: 2e8, needed: 18.4e9, deviceFree: 140e9,
                           deviceTotal: 160e9, deviceName: "cuda:1 GPU + cuda:0 GPU",
                           cacheChoices: [], gpus: [share(1, 0, 14, true), share(0, 14, 18, true)] }
            compare(bars.count, 2)
            panel.plan = Qt.binding(() => EngineController.plan)

            panel.setGpuSplitGib([])
            panel.setChosenGpus([0])
            findChild(panel, "gpuSplitOne").clicked()
            panel.gpuList = EngineController.gpus
            panel.device = "cpu"
        }
    }
}
