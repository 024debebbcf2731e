// While a model runs: the memory Hearth uses by category with free and total, the prompt and the
// generation of the answer being written (else of the last one) with a live chart of its speed,
// and how much of the context it uses.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Pane {
    id: panel
    padding: 16
    background: null
    readonly property var memory: EngineController.memory
    readonly property bool answering: EngineController.state === EngineController.Generating

    ColumnLayout {
        width: parent.width
        spacing: 12

        Label {
            visible: !EngineController.loaded
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: qsTr("Load a model to see its memory use and speed here.")
        }

        Label {
            text: EngineController.loaded ? qsTr("Memory on %1").arg(EngineController.model.deviceName) : qsTr("Memory")
            font.bold: true
            color: Theme.text
        }
        MemoryBar {
            Layout.fillWidth: true
            visible: EngineController.loaded
            total: panel.memory.deviceTotal || 0
            available: -1
            segments: [
                { label: qsTr("Weights"), value: panel.memory.weights || 0, color: Theme.weights },
                { label: qsTr("Cache"), value: panel.memory.kvCache || 0, color: Theme.cache },
                { label: qsTr("Activations"), value: panel.memory.activations || 0, color: Theme.activations },
                { label: qsTr("Workspace"), value: panel.memory.workspace || 0, color: Theme.workspace }
            ]
        }
        Label {
            visible: EngineController.loaded
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: qsTr("Hearth uses %1 · %2 free of %3").arg(Ui.formatBytes(panel.memory.used || 0))
                      .arg(Ui.formatBytes(panel.memory.deviceFree || 0))
                      .arg(Ui.formatBytes(panel.memory.deviceTotal || 0))
        }

        Label {
            text: qsTr("Speed")
            font.bold: true
            color: Theme.text
            Layout.topMargin: 8
        }
        GridLayout {
            columns: 2
            columnSpacing: 16
            rowSpacing: 4
            Label { text: qsTr("Prompt"); color: Theme.textMuted }
            Label {
                objectName: "promptSpeed"
                text: {
                    const tokens = Ui.formatNumber(EngineController.promptTokens, 0)
                    if (EngineController.promptTokensPerSecond > 0)
                        return qsTr("%1 tokens, %2 tokens/s").arg(tokens)
                            .arg(Ui.formatNumber(EngineController.promptTokensPerSecond, 1))
                    if (panel.answering && EngineController.promptTokens > 0)
                        return qsTr("%1 tokens, processing…").arg(tokens)
                    return "–"
                }
                color: Theme.text
            }
            Label { text: qsTr("Generation"); color: Theme.textMuted }
            Label {
                objectName: "decodeSpeed"
                text: {
                    const tokens = Ui.formatNumber(EngineController.generatedTokens, 0)
                    if (EngineController.decodeTokensPerSecond > 0)
                        return qsTr("%1 tokens, %2 tokens/s").arg(tokens)
                            .arg(Ui.formatNumber(EngineController.decodeTokensPerSecond, 1))
                    if (EngineController.generatedTokens > 0)
                        return qsTr("%1 tokens").arg(tokens)
                    return "–"
                }
                // While the answer streams, the figure moves.
                color: panel.answering ? Theme.accent : Theme.text
            }
            Label { text: qsTr("Prompt cache"); color: Theme.textMuted }
            Label {
                objectName: "promptCache"
                // The engine's count, known when the answer ends: the history it did not
                // compute again.
                text: EngineController.promptTokens > 0 && !panel.answering
                      ? qsTr("reused %1 of %2 prompt tokens")
                            .arg(Ui.formatNumber(EngineController.cachedPromptTokens, 0))
                            .arg(Ui.formatNumber(EngineController.promptTokens, 0))
                      : "–"
                color: Theme.text
            }
            Label { text: qsTr("Speculation"); color: Theme.textMuted }
            Label {
                objectName: "speculation"
                // Proposals from the conversation's own text that the model kept (load panel:
                // Speculative decoding); known when the answer ends.
                text: EngineController.proposedTokens > 0 && !panel.answering
                      ? qsTr("kept %1 of %2 proposed tokens (%3 %)")
                            .arg(Ui.formatNumber(EngineController.acceptedTokens, 0))
                            .arg(Ui.formatNumber(EngineController.proposedTokens, 0))
                            .arg(Ui.formatNumber(100 * EngineController.acceptedTokens
                                                 / EngineController.proposedTokens, 0))
                      : "–"
                color: Theme.text
            }
        }
        RateChart {
            Layout.fillWidth: true
            points: EngineController.rateHistory
        }

        Label {
            text: qsTr("Context")
            font.bold: true
            color: Theme.text
            Layout.topMargin: 8
        }
        ProgressBar {
            Layout.fillWidth: true
            from: 0
            to: Math.max(1, EngineController.maxSeqLen)
            value: EngineController.contextUsed
            Accessible.name: qsTr("Context used")
        }
        Label {
            objectName: "contextLine"
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: (panel.answering ? qsTr("%1 of %2 tokens used by this answer")
                                   : qsTr("%1 of %2 tokens used by the last answer"))
                      .arg(EngineController.contextUsed).arg(EngineController.maxSeqLen)
        }
    }
}
