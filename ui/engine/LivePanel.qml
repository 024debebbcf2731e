// While a model runs: the memory Hearth uses by category with free and total, the speed of the
// last answer and a live chart during generation, and how much of the context is used.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Pane {
    id: panel
    padding: 16
    background: null
    readonly property var memory: EngineController.memory

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
                text: EngineController.lastPromptTokensPerSecond > 0
                      ? qsTr("%1 tokens/s").arg(Ui.formatNumber(EngineController.lastPromptTokensPerSecond, 1)) : "–"
                color: Theme.text
            }
            Label { text: qsTr("Generation"); color: Theme.textMuted }
            Label {
                objectName: "decodeSpeed"
                text: EngineController.lastDecodeTokensPerSecond > 0
                      ? qsTr("%1 tokens/s").arg(Ui.formatNumber(EngineController.lastDecodeTokensPerSecond, 1)) : "–"
                color: Theme.text
            }
            Label { text: qsTr("Now"); color: Theme.textMuted; visible: ChatSession.generating }
            Label {
                visible: ChatSession.generating
                text: qsTr("%1 tokens/s").arg(Ui.formatNumber(EngineController.liveTokensPerSecond, 1))
                color: Theme.accent
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
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: qsTr("%1 of %2 tokens used by the last answer").arg(EngineController.contextUsed)
                      .arg(EngineController.maxSeqLen)
        }
    }
}
