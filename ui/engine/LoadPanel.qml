// Loading a model: which model, the device (and, with several GPUs, which of them and how they
// share the model), the context length, RoPE scaling, the cache size and precision, with the
// engine's memory plan for exactly these settings. A load that cannot
// fit is refused with the reason before anything is allocated. The LoRA adapters chosen in the
// Adapters tab go with every load.
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Hearth

Pane {
    id: panel
    padding: 16
    background: null

    readonly property var entry: modelBox.currentIndex >= 0 ? ModelLibrary.entry(modelBox.currentValue) : ({})
    readonly property var rope: entry && entry.rope ? entry.rope : ({})
    readonly property int trainedContext: entry && entry.contextLength ? entry.contextLength : 0
    property var plan: EngineController.plan
    readonly property bool loading: EngineController.state === EngineController.Loading
    readonly property bool gpuReserved: device === "gpu" && EngineController.gpuReservation.length > 0

    property string device: EngineController.cudaAvailable ? AppSettings.device : "cpu"
    // Several GPUs: the machine's (tests set others), which of them run the model in layer
    // order, "one" (the first chosen alone) or "layer" (consecutive layers on each), and the GiB
    // each may take in a layer split (empty: in proportion to its free memory).
    property var gpuList: EngineController.gpus
    readonly property bool multiGpu: device === "gpu" && gpuList.length > 1
    property string gpuSplit: AppSettings.gpuSplit === "layer" ? "layer" : "one"
    property var chosenGpus: AppSettings.gpus.length > 0 ? AppSettings.gpus : [0]
    property var gpuSplitGib: AppSettings.gpuSplitGib
    readonly property bool layerSplit: multiGpu && gpuSplit === "layer" && chosenGpus.length > 1
    function setChosenGpus(list) {
        chosenGpus = list
        AppSettings.gpus = list
        if (gpuSplitGib.length > 0) setGpuSplitGib(list.map(() => 20))
    }
    function setGpuSplitGib(list) {
        gpuSplitGib = list
        AppSettings.gpuSplitGib = list
    }
    function gpusForLoad() {
        if (device !== "gpu" || gpuList.length < 2) return []
        return layerSplit ? chosenGpus : [chosenGpus.length > 0 ? chosenGpus[0] : 0]
    }
    property int maxSeqLen: 0
    property int cacheTokens: 0
    property string ropeType: "model"
    property real ropeFactor: 1
    property real ntkAlpha: 1
    property int originalContext: 0
    property real lowFreqFactor: 1
    property real highFreqFactor: 4
    property real betaFast: 32
    property real betaSlow: 1
    property string speculation: ["ngram", "draft"].indexOf(AppSettings.speculation) >= 0
                                 ? AppSettings.speculation : "off"
    property string draftPath: AppSettings.draftModel
    property string kvCacheType: ["q8", "q6", "q4"].indexOf(AppSettings.kvCacheType) >= 0
                                 ? AppSettings.kvCacheType : "fp16"
    // The plan's entry for the chosen cache type: how many tokens that cache would hold.
    readonly property var cacheChoice: {
        const choices = plan.valid === true && plan.cacheChoices ? plan.cacheChoices : []
        for (const c of choices)
            if (c.type === kvCacheType) return c
        return null
    }

    // The maximum sequence length the loaded model runs with when it is the chosen one, else 0.
    readonly property int maxSeqLenInForce: EngineController.model.path !== undefined
                                            ? loadedMaxSeqLen(modelBox.currentValue || "") : 0
    function loadedMaxSeqLen(path) {
        return EngineController.loaded && EngineController.isLoadedModel(path) ? EngineController.maxSeqLen : 0
    }

    // The model's own settings become the defaults whenever another model is chosen; for the
    // loaded model, the length it runs with. Read from the entry itself: the bindings on it
    // (trainedContext) may not have caught up yet when this handler runs.
    onEntryChanged: {
        const rope = entry && entry.rope ? entry.rope : {}
        const trained = entry && entry.contextLength ? entry.contextLength : 0
        const inForce = loadedMaxSeqLen(modelBox.currentValue || "")
        maxSeqLen = inForce > 0 ? inForce
                  : AppSettings.maxSeqLen > 0 ? AppSettings.maxSeqLen
                  : Math.min(trained > 0 ? trained : 4096, 8192)
        cacheTokens = 0
        ropeType = "model"
        ropeFactor = rope.factor !== undefined ? rope.factor : 1
        ntkAlpha = 1
        originalContext = rope.originalContext !== undefined ? rope.originalContext : trained
        lowFreqFactor = rope.lowFreqFactor !== undefined ? rope.lowFreqFactor : 1
        highFreqFactor = rope.highFreqFactor !== undefined ? rope.highFreqFactor : 4
        betaFast = rope.betaFast !== undefined ? rope.betaFast : 32
        betaSlow = rope.betaSlow !== undefined ? rope.betaSlow : 1
        planTimer.restart()
    }

    function settings() {
        return {
            path: modelBox.currentValue || "",
            device: device,
            maxSeqLen: maxSeqLen,
            cacheTokens: cacheTokens,
            rope: ropeType,
            ropeFactor: ropeFactor,
            ntkAlpha: ntkAlpha,
            originalContext: originalContext,
            lowFreqFactor: lowFreqFactor,
            highFreqFactor: highFreqFactor,
            betaFast: betaFast,
            betaSlow: betaSlow,
            speculation: speculation,
            draftPath: speculation === "draft" ? draftPath : "",
            kvCacheType: kvCacheType,
            adapters: AppSettings.activeAdapters,
            gpus: gpusForLoad(),
            gpuSplit: "layer",
            gpuSplitGib: layerSplit && gpuSplitGib.length === chosenGpus.length ? gpuSplitGib : []
        }
    }
    function requestPlan() { planTimer.restart() }

    onDeviceChanged: requestPlan()
    onMaxSeqLenChanged: requestPlan()
    onCacheTokensChanged: requestPlan()
    onRopeTypeChanged: requestPlan()
    onRopeFactorChanged: requestPlan()
    onNtkAlphaChanged: requestPlan()
    onSpeculationChanged: requestPlan()
    onDraftPathChanged: requestPlan()
    onKvCacheTypeChanged: requestPlan()
    onGpuSplitChanged: requestPlan()
    onChosenGpusChanged: requestPlan()
    onGpuSplitGibChanged: requestPlan()
    Connections {
        target: AppSettings
        function onActiveAdaptersChanged() { panel.requestPlan() }
    }
    // A load sets the length in force: show it (the engine may have settled on another value).
    Connections {
        target: EngineController
        function onLoadSucceeded() {
            const inForce = panel.loadedMaxSeqLen(modelBox.currentValue || "")
            if (inForce > 0)
                panel.maxSeqLen = inForce
        }
    }
    Timer {
        id: planTimer
        interval: 250
        onTriggered: if (modelBox.currentValue) EngineController.requestPlan(panel.settings())
    }

    ColumnLayout {
        width: parent.width
        spacing: 12

        Label {
            text: qsTr("Model")
            font.bold: true
            color: Theme.text
        }
        RowLayout {
            Layout.fillWidth: true
            ComboBox {
                id: modelBox
                objectName: "modelBox"
                Layout.fillWidth: true
                model: ModelLibrary
                textRole: "name"
                valueRole: "path"
                displayText: count === 0 ? qsTr("No models found") : currentText
                Accessible.name: qsTr("Model to load")
                Component.onCompleted: selectPath(AppSettings.lastModel)
                function selectPath(path) {
                    const i = ModelLibrary.indexOfPath(path)
                    currentIndex = i >= 0 ? i : (count > 0 ? 0 : -1)
                }
                onActivated: AppSettings.lastModel = currentValue
                Connections {
                    target: ModelLibrary
                    function onScanFinished() { modelBox.selectPath(AppSettings.lastModel) }
                }
                Connections {
                    target: AppSettings
                    function onLastModelChanged() { modelBox.selectPath(AppSettings.lastModel) }
                }
            }
            IconButton {
                iconName: "folder"
                tip: qsTr("Open a model file or folder…")
                onClicked: fileDialog.open()
            }
        }
        Label {
            Layout.fillWidth: true
            visible: panel.entry.path !== undefined
            wrapMode: Text.Wrap
            color: panel.entry.error ? Theme.danger : Theme.textMuted
            font.pointSize: Theme.smallFont
            text: {
                const e = panel.entry
                if (!e.path) return ""
                if (e.error) return e.error
                return qsTr("%1 · %2 parameters · %3 bits per weight · %4 on disk · trained for %5 tokens")
                    .arg(e.format.toUpperCase()).arg(Ui.formatCount(e.parameters))
                    .arg(Ui.formatNumber(e.bitsPerWeight, 2)).arg(Ui.formatBytes(e.fileBytes))
                    .arg(e.contextLength)
            }
        }

        Label {
            text: qsTr("Device")
            font.bold: true
            color: Theme.text
        }
        RowLayout {
            RadioButton {
                text: qsTr("GPU")
                checked: panel.device === "gpu"
                enabled: EngineController.cudaAvailable
                onClicked: { panel.device = "gpu"; AppSettings.device = "gpu" }
                Accessible.name: qsTr("Run on the GPU")
                ToolTip.visible: hovered && !enabled
                ToolTip.text: EngineController.gpuStatus
            }
            RadioButton {
                text: qsTr("CPU")
                checked: panel.device === "cpu"
                onClicked: { panel.device = "cpu"; AppSettings.device = "cpu" }
                Accessible.name: qsTr("Run on the CPU")
            }
        }
        Label {
            objectName: "gpuUnavailableReason"
            Layout.fillWidth: true
            visible: !EngineController.cudaAvailable
            text: EngineController.gpuStatus
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            wrapMode: Text.Wrap
        }

        // Several GPUs: one of them, or the model split by layers over those chosen (in order).
        ColumnLayout {
            objectName: "gpuSection"
            Layout.fillWidth: true
            visible: panel.multiGpu
            spacing: 4
            Label {
                text: qsTr("GPUs")
                font.bold: true
                color: Theme.text
            }
            Flow {
                Layout.fillWidth: true
                spacing: 4
                RadioButton {
                    objectName: "gpuSplitOne"
                    text: qsTr("One GPU")
                    checked: panel.gpuSplit === "one"
                    onClicked: { panel.gpuSplit = "one"; AppSettings.gpuSplit = "one" }
                }
                RadioButton {
                    objectName: "gpuSplitLayer"
                    text: qsTr("Split by layers")
                    checked: panel.gpuSplit === "layer"
                    onClicked: { panel.gpuSplit = "layer"; AppSettings.gpuSplit = "layer" }
                    ToolTip.visible: hovered
                    ToolTip.text: qsTr("Each GPU runs a run of consecutive layers and keeps their cache: models larger than one card fit, at about one card's speed.")
                }
                RadioButton {
                    objectName: "gpuSplitTensor"
                    text: qsTr("Tensor parallel")
                    checked: panel.gpuSplit === "tensor"
                    onClicked: { panel.gpuSplit = "tensor"; AppSettings.gpuSplit = "tensor" }
                    ToolTip.visible: hovered
                    ToolTip.text: qsTr("Every GPU runs its share of each layer's heads and MLP at the same time: faster generation, the cache divided between the cards.")
                }
            }
            Repeater {
                objectName: "gpuChoices"
                model: panel.gpuList
                RowLayout {
                    id: gpuRow
                    required property var modelData
                    readonly property int position: panel.chosenGpus.indexOf(modelData.index)
                    Layout.fillWidth: true
                    CheckBox {
                        Layout.fillWidth: true
                        text: gpuRow.modelData.name
                        checked: panel.gpuSplit === "one" ? gpuRow.position === 0 : gpuRow.position >= 0
                        Accessible.name: qsTr("Use %1").arg(gpuRow.modelData.name)
                        onToggled: {
                            const index = gpuRow.modelData.index
                            if (panel.gpuSplit === "one") {
                                panel.setChosenGpus([index])
                            } else if (checked) {
                                panel.setChosenGpus(panel.chosenGpus.concat([index]))
                            } else if (panel.chosenGpus.length > 1) {
                                panel.setChosenGpus(panel.chosenGpus.filter(g => g !== index))
                            } else {
                                checked = true  // a split keeps at least one GPU
                            }
                        }
                    }
                    TextField {
                        objectName: "gpuSplitGib" + gpuRow.modelData.index
                        visible: panel.layerSplit && panel.gpuSplitGib.length > 0 && gpuRow.position >= 0
                        Layout.preferredWidth: 64
                        horizontalAlignment: TextInput.AlignRight
                        text: gpuRow.position >= 0 && gpuRow.position < panel.gpuSplitGib.length
                              ? panel.gpuSplitGib[gpuRow.position] : ""
                        validator: DoubleValidator { bottom: 0.1; top: 100000; decimals: 1 }
                        Accessible.name: qsTr("GiB on %1").arg(gpuRow.modelData.name)
                        onEditingFinished: {
                            const list = panel.gpuSplitGib.slice()
                            list[gpuRow.position] = Number.fromLocaleString(Qt.locale(), text)
                            panel.setGpuSplitGib(list)
                        }
                    }
                    Label {
                        visible: panel.layerSplit && panel.gpuSplitGib.length > 0 && gpuRow.position >= 0
                        text: qsTr("GiB")
                        color: Theme.textMuted
                    }
                }
            }
            CheckBox {
                objectName: "gpuSizesGiven"
                visible: panel.layerSplit
                text: qsTr("Set how much each GPU takes")
                checked: panel.gpuSplitGib.length > 0
                onToggled: panel.setGpuSplitGib(checked ? panel.chosenGpus.map(() => 20) : [])
            }
            Label {
                Layout.fillWidth: true
                visible: panel.layerSplit
                wrapMode: Text.Wrap
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                text: panel.gpuSplitGib.length > 0
                      ? qsTr("Layers fill each GPU in the order ticked, up to its size; the last GPU also holds the output layer.")
                      : qsTr("Layers are shared in proportion to each GPU's free memory, in the order ticked.")
            }
        }

        Label {
            text: qsTr("Context")
            font.bold: true
            color: Theme.text
        }
        Label {
            text: qsTr("Maximum sequence length")
            color: Theme.text
        }
        RowLayout {
            Layout.fillWidth: true
            SpinBox {
                id: seqBox
                Layout.fillWidth: true
                from: 128
                to: 1048576
                stepSize: 512
                editable: true
                value: panel.maxSeqLen
                onValueModified: panel.maxSeqLen = value
                Accessible.name: qsTr("Maximum sequence length in tokens")
            }
        }
        // The model bar shows the length in force; this field is what the next load uses.
        Label {
            objectName: "maxSeqLenNote"
            Layout.fillWidth: true
            visible: panel.maxSeqLenInForce > 0
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: panel.maxSeqLen === panel.maxSeqLenInForce
                  ? qsTr("The loaded model runs with this length.")
                  : qsTr("The loaded model runs with %1 tokens; this length applies when you reload.")
                        .arg(Ui.formatNumber(panel.maxSeqLenInForce, 0))
        }
        Label {
            Layout.fillWidth: true
            visible: panel.trainedContext > 0 && panel.maxSeqLen > panel.trainedContext
                     && panel.ropeType === "none"
            wrapMode: Text.Wrap
            color: Theme.danger
            font.pointSize: Theme.smallFont
            text: qsTr("Longer than the %1 tokens the model was trained for: choose a RoPE scaling, or expect poor answers past that length.").arg(panel.trainedContext)
        }
        Label {
            text: qsTr("Cache size (tokens)")
            color: Theme.text
            ToolTip.visible: cacheHover.hovered
            ToolTip.text: qsTr("0 sizes the cache for the maximum sequence length.")
            HoverHandler { id: cacheHover }
        }
        RowLayout {
            Layout.fillWidth: true
            SpinBox {
                id: cacheBox
                objectName: "cacheBox"
                Layout.fillWidth: true
                from: 0
                to: 4194304
                stepSize: 1024
                editable: true
                value: panel.cacheTokens
                onValueModified: panel.cacheTokens = value
                // 0 is not a size but "as long as the maximum sequence length": say so.
                readonly property string automaticText: qsTr("Automatic")
                textFromValue: (v, locale) => v === 0 ? automaticText
                                                      : Number(v).toLocaleString(locale, "f", 0)
                valueFromText: (text, locale) => {
                    const t = text.trim()
                    if (t === "" || t.toLowerCase() === automaticText.toLowerCase())
                        return 0
                    const n = Number.fromLocaleString(locale, t)
                    return isNaN(n) ? value : Math.round(n)
                }
                validator: RegularExpressionValidator { regularExpression: /.*/ }
                Accessible.name: qsTr("Cache size in tokens, 0 for automatic")
            }
        }
        Label {
            text: qsTr("KV cache")
            color: Theme.text
            ToolTip.visible: kvCacheHover.hovered
            ToolTip.text: kvCacheNote.quantizedText
            HoverHandler { id: kvCacheHover }
        }
        ComboBox {
            id: kvCacheBox
            objectName: "kvCacheBox"
            Layout.fillWidth: true
            textRole: "text"
            valueRole: "value"
            model: [
                { value: "fp16", text: qsTr("fp16 (full precision)") },
                { value: "q8", text: qsTr("q8") },
                { value: "q6", text: qsTr("q6") },
                { value: "q4", text: qsTr("q4") }
            ]
            // Reads count so that it runs again once the items exist (indexOfValue finds
            // nothing before): else a saved choice shows as the first item.
            currentIndex: count > 0 ? Math.max(0, indexOfValue(panel.kvCacheType)) : -1
            onActivated: {
                panel.kvCacheType = currentValue
                AppSettings.kvCacheType = currentValue
            }
            Accessible.name: qsTr("KV cache precision")
        }
        Label {
            id: kvCacheNote
            objectName: "kvCacheNote"
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            readonly property string quantizedText: qsTr("Quantized caches hold about 1.9× (q8), 2.5× (q6) or 3.6× (q4) the tokens of fp16 in the same memory, with a small loss of quality (q8: nearly none).")
            text: panel.kvCacheType === "q8"
                  ? qsTr("Holds about 1.9× the tokens of fp16 in the same memory, with nearly no loss of quality.")
                  : panel.kvCacheType === "q6"
                  ? qsTr("Holds about 2.5× the tokens of fp16 in the same memory, with a small loss of quality.")
                  : panel.kvCacheType === "q4"
                  ? qsTr("Holds about 3.6× the tokens of fp16 in the same memory, with a small loss of quality.")
                  : quantizedText
        }

        Label {
            text: qsTr("RoPE scaling")
            font.bold: true
            color: Theme.text
        }
        ComboBox {
            id: ropeBox
            Layout.fillWidth: true
            textRole: "text"
            valueRole: "value"
            model: [
                { value: "model", text: qsTr("As the model specifies (%1)").arg(panel.rope.type || qsTr("none")) },
                { value: "none", text: qsTr("None") },
                { value: "linear", text: qsTr("Linear") },
                { value: "ntk", text: qsTr("NTK-aware (alpha)") },
                { value: "yarn", text: qsTr("YaRN") },
                { value: "llama3", text: qsTr("Llama 3") }
            ]
            currentIndex: Math.max(0, indexOfValue(panel.ropeType))
            onActivated: panel.ropeType = currentValue
            Accessible.name: qsTr("RoPE scaling method")
        }
        NumberField {
            Layout.fillWidth: true
            visible: ["linear", "yarn", "llama3"].indexOf(panel.ropeType) >= 0
            label: qsTr("Scaling factor")
            tip: qsTr("How many times the trained context the model should reach.")
            value: panel.ropeFactor
            from: 1
            to: 64
            onEdited: (v) => panel.ropeFactor = v
        }
        NumberField {
            Layout.fillWidth: true
            visible: panel.ropeType === "ntk"
            label: qsTr("Alpha")
            tip: qsTr("NTK-aware scaling of the rotary base; 1 changes nothing.")
            value: panel.ntkAlpha
            from: 1
            to: 64
            onEdited: (v) => panel.ntkAlpha = v
        }
        NumberField {
            Layout.fillWidth: true
            visible: panel.ropeType === "yarn" || panel.ropeType === "llama3"
            label: qsTr("Original context")
            value: panel.originalContext
            decimals: 0
            from: 1
            to: 1048576
            onEdited: (v) => { panel.originalContext = v; panel.requestPlan() }
        }
        NumberField {
            Layout.fillWidth: true
            visible: panel.ropeType === "llama3"
            label: qsTr("Low-frequency factor")
            value: panel.lowFreqFactor
            from: 0.01
            to: 100
            onEdited: (v) => { panel.lowFreqFactor = v; panel.requestPlan() }
        }
        NumberField {
            Layout.fillWidth: true
            visible: panel.ropeType === "llama3"
            label: qsTr("High-frequency factor")
            value: panel.highFreqFactor
            from: 0.01
            to: 100
            onEdited: (v) => { panel.highFreqFactor = v; panel.requestPlan() }
        }
        NumberField {
            Layout.fillWidth: true
            visible: panel.ropeType === "yarn"
            label: qsTr("Beta fast")
            value: panel.betaFast
            from: 0
            to: 1000
            onEdited: (v) => { panel.betaFast = v; panel.requestPlan() }
        }
        NumberField {
            Layout.fillWidth: true
            visible: panel.ropeType === "yarn"
            label: qsTr("Beta slow")
            value: panel.betaSlow
            from: 0
            to: 1000
            onEdited: (v) => { panel.betaSlow = v; panel.requestPlan() }
        }

        Label {
            text: qsTr("Speculative decoding")
            font.bold: true
            color: Theme.text
        }
        ComboBox {
            id: speculationBox
            objectName: "speculationBox"
            Layout.fillWidth: true
            textRole: "text"
            valueRole: "value"
            model: [
                { value: "ngram", text: qsTr("From the conversation's own text") },
                { value: "draft", text: qsTr("With a smaller draft model") },
                { value: "off", text: qsTr("Off") }
            ]
            // Reads count so that it runs again once the items exist (indexOfValue finds
            // nothing before): else a saved choice shows as the first item.
            currentIndex: count > 0 ? Math.max(0, indexOfValue(panel.speculation)) : -1
            onActivated: {
                panel.speculation = currentValue
                AppSettings.speculation = currentValue
            }
            Accessible.name: qsTr("Speculative decoding")
        }
        // The draft model: any model of the library with the chosen model's vocabulary (the
        // engine checks when loading, and the plan counts it).
        ComboBox {
            id: draftBox
            objectName: "draftBox"
            Layout.fillWidth: true
            visible: panel.speculation === "draft"
            model: ModelLibrary
            textRole: "name"
            valueRole: "path"
            displayText: currentIndex < 0 ? qsTr("Choose a draft model") : currentText
            currentIndex: ModelLibrary.indexOfPath(panel.draftPath)
            onActivated: {
                panel.draftPath = currentValue
                AppSettings.draftModel = currentValue
            }
            Accessible.name: qsTr("Draft model")
        }
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: panel.speculation === "draft"
                  ? qsTr("A smaller model with the same vocabulary guesses the next tokens; the model keeps those it agrees with. The answers do not change.")
                  : panel.speculation === "ngram"
                  ? qsTr("Guesses the next tokens from earlier text and keeps those the model agrees with: answers that repeat the conversation (code edits, quotes, summaries) come faster; the answers themselves do not change.")
                  : qsTr("Every token is computed one step at a time.")
        }

        Label {
            text: qsTr("Memory")
            font.bold: true
            color: Theme.text
        }
        MemoryBar {
            Layout.fillWidth: true
            visible: panel.plan.valid === true
            total: panel.plan.deviceTotal || 0
            available: panel.plan.deviceFree || 0
            segments: [
                { label: qsTr("Weights"), value: panel.plan.weights || 0, color: Theme.weights },
                { label: qsTr("Cache"), value: panel.plan.kvCache || 0, color: Theme.cache },
                { label: qsTr("Activations"), value: panel.plan.activations || 0, color: Theme.activations },
                { label: qsTr("Workspace"), value: panel.plan.workspace || 0, color: Theme.workspace }
            ].concat(panel.plan.adapters > 0
                     ? [{ label: qsTr("Adapters"), value: panel.plan.adapters, color: Theme.adapters }]
                     : [])
        }
        // A layer split: each GPU's share, on a bar of its own.
        Repeater {
            objectName: "gpuPlanBars"
            model: panel.plan.valid === true && panel.plan.gpus && panel.plan.gpus.length > 1
                   ? panel.plan.gpus : []
            ColumnLayout {
                id: share
                required property var modelData
                Layout.fillWidth: true
                spacing: 2
                Label {
                    Layout.fillWidth: true
                    elide: Text.ElideRight
                    font.pointSize: Theme.smallFont
                    color: share.modelData.fits ? Theme.textMuted : Theme.danger
                    text: qsTr("%1 — layers %2–%3: %4 of %5 free")
                              .arg(share.modelData.name).arg(share.modelData.firstLayer)
                              .arg(share.modelData.firstLayer + share.modelData.layers - 1)
                              .arg(Ui.formatBytes(share.modelData.needed))
                              .arg(Ui.formatBytes(share.modelData.deviceFree))
                }
                MemoryBar {
                    Layout.fillWidth: true
                    total: share.modelData.deviceTotal
                    available: share.modelData.deviceFree
                    segments: [
                        { label: qsTr("Weights"), value: share.modelData.weights, color: Theme.weights },
                        { label: qsTr("Cache"), value: share.modelData.kvCache, color: Theme.cache },
                        { label: qsTr("Activations"), value: share.modelData.activations, color: Theme.activations },
                        { label: qsTr("Workspace"), value: share.modelData.workspace, color: Theme.workspace }
                    ]
                }
            }
        }
        // An active adapter that does not fit the chosen model: the model loads without it.
        Label {
            objectName: "planAdapterError"
            Layout.fillWidth: true
            visible: panel.plan.valid === true && !!panel.plan.adapterError
            wrapMode: Text.Wrap
            font.pointSize: Theme.smallFont
            color: Theme.danger
            text: qsTr("An active adapter cannot be applied to this model; it loads without it: %1")
                      .arg(panel.plan.adapterError || "")
        }
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            font.pointSize: Theme.smallFont
            color: panel.plan.valid === true && !panel.plan.fits ? Theme.danger : Theme.textMuted
            text: {
                const p = panel.plan
                if (EngineController.planning) return qsTr("Working out the memory plan…")
                if (p.valid === false) return p.error
                if (p.valid !== true) return qsTr("Choose a model to see what it needs.")
                const line = qsTr("Needs %1 of %2 free on %3.").arg(Ui.formatBytes(p.needed))
                                 .arg(Ui.formatBytes(p.deviceFree)).arg(p.deviceName)
                return p.fits ? line : line + " " + qsTr("It does not fit.") + (p.advice ? " " + p.advice : "")
            }
        }
        // The context the chosen cache type allows in the memory the rest of the load leaves,
        // rounded: the figure moves with free memory anyway.
        Label {
            objectName: "cacheFitLabel"
            Layout.fillWidth: true
            visible: panel.cacheChoice !== null && !EngineController.planning
            wrapMode: Text.Wrap
            font.pointSize: Theme.smallFont
            color: Theme.textMuted
            text: {
                const c = panel.cacheChoice
                if (!c) return ""
                const n = c.tokensThatFit
                if (n <= 0) return qsTr("Cache: %1 — no memory is left for it.").arg(c.type)
                const step = n >= 10000 ? 1000 : n >= 1000 ? 100 : 1
                return qsTr("Cache: %1 — about %2 tokens fit").arg(c.type)
                           .arg(Ui.formatNumber(Math.floor(n / step) * step, 0))
            }
        }

        // A quantization job holds the GPU (see QuantizeJobs): say so before Load is pressed.
        Label {
            Layout.fillWidth: true
            visible: panel.gpuReserved
            wrapMode: Text.Wrap
            color: Theme.danger
            font.pointSize: Theme.smallFont
            text: EngineController.gpuReservation
        }
        RowLayout {
            Layout.fillWidth: true
            Layout.topMargin: 6
            Button {
                Layout.fillWidth: true
                objectName: "loadButton"
                visible: !panel.loading
                text: !EngineController.loaded ? qsTr("Load")
                      : EngineController.model.path !== undefined
                        && EngineController.isLoadedModel(modelBox.currentValue || "")
                        ? qsTr("Reload with these settings") : qsTr("Load instead")
                highlighted: true
                enabled: !!modelBox.currentValue && !ChatSession.generating && !panel.entry.error
                         && (panel.speculation !== "draft" || panel.draftPath !== "")
                         && !(panel.plan.valid === true && !panel.plan.fits) && !panel.gpuReserved
                Accessible.name: qsTr("Load the model with these settings")
                onClicked: {
                    AppSettings.lastModel = modelBox.currentValue
                    EngineController.load(panel.settings())
                }
            }
            Button {
                Layout.fillWidth: true
                visible: panel.loading
                text: qsTr("Cancel loading")
                onClicked: EngineController.cancelLoad()
            }
        }
        ProgressBar {
            Layout.fillWidth: true
            visible: panel.loading
            value: EngineController.loadFraction
            indeterminate: EngineController.loadFraction <= 0
            Accessible.name: qsTr("Load progress")
        }
    }

    FileDialog {
        id: fileDialog
        title: qsTr("Open a model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("Model configuration (config.json)")]
        onAccepted: {
            let path = Ui.urlToPath(selectedFile)
            if (path.endsWith("config.json"))
                path = path.substring(0, path.length - "/config.json".length)
            const problem = ModelLibrary.importModel(Ui.pathToUrl(path))
            if (problem.length === 0)
                AppSettings.lastModel = path
        }
    }
}
