import QtQuick
import QtTest
import Hearth

Item {
    width: 360
    height: 1000

    LoadPanel {
        id: panel
        width: parent.width
    }

    TestCase {
        name: "LoadPanel"
        when: windowShown

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
    }
}
