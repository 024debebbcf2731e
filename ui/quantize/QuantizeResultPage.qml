// Step 7: what the job made — size, bits, time, and its quality against the source on held-out
// text — with "Load now" in the dialog's footer.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 10
    readonly property var r: QuantizeWizard.jobs.result

    function focusFirst() { pathField.forceActiveFocus() }

    QuantizeText { id: words }

    Label {
        Layout.fillWidth: true
        objectName: "resultHeading"
        text: qsTr("%1 is ready").arg(page.r.outputName || "")
        font.pointSize: Theme.titleFont
        color: Theme.text
        wrapMode: Text.Wrap
    }
    Label {
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        text: qsTr("%1 from %2. It has been added to the model library.").arg(page.r.target || "").arg(page.r.sourceName || "")
    }

    GridLayout {
        Layout.fillWidth: true
        columns: 2
        columnSpacing: 16
        rowSpacing: 6
        Accessible.role: Accessible.Table
        Accessible.name: qsTr("Result of the quantization")

        Label { text: qsTr("Size on disk"); color: Theme.textMuted }
        Label {
            objectName: "resultSize"
            color: Theme.text
            font.bold: true
            text: Ui.formatBytes(page.r.bytesOnDisk || 0)
                  + (page.r.estimatedBytes > 0
                     ? "  " + qsTr("(weights %1, estimated %2)").arg(Ui.formatBytes(page.r.weightBytes))
                                                                .arg(Ui.formatBytes(page.r.estimatedBytes))
                     : "")
        }
        Label { text: qsTr("Bits per weight"); color: Theme.textMuted }
        Label {
            objectName: "resultBpw"
            color: Theme.text
            text: qsTr("%1 in the decoder layers, %2 in the output layer").arg(words.bpw(page.r.bitsPerWeight || 0))
                      .arg(words.bpw(page.r.headBitsPerWeight || 0))
        }
        Label { text: qsTr("Time"); color: Theme.textMuted }
        Label {
            color: Theme.text
            text: words.duration(page.r.seconds || 0)
        }

        Label {
            visible: page.r.evaluated === true
            text: qsTr("Perplexity")
            color: Theme.textMuted
        }
        Label {
            objectName: "resultPerplexity"
            visible: page.r.evaluated === true
            color: Theme.text
            font.bold: true
            text: page.r.evaluated === true
                  ? qsTr("%1 (the source: %2, %3)").arg(Ui.formatNumber(page.r.perplexityQuant, 3))
                        .arg(Ui.formatNumber(page.r.perplexitySource, 3))
                        .arg((page.r.perplexityQuant >= page.r.perplexitySource ? "+" : "")
                             + Ui.formatNumber(100 * (page.r.perplexityQuant / page.r.perplexitySource - 1), 1) + " %")
                  : ""
        }
        Label {
            visible: page.r.evaluated === true
            text: qsTr("KL divergence")
            color: Theme.textMuted
        }
        Label {
            objectName: "resultKl"
            visible: page.r.evaluated === true
            color: Theme.text
            text: page.r.evaluated === true
                  ? qsTr("%1 on average, %2 at the 99.9th percentile").arg(Ui.formatNumber(page.r.klMean, 4))
                        .arg(Ui.formatNumber(page.r.klP999, 4))
                  : ""
        }
        Label {
            visible: page.r.evaluated === true
            text: qsTr("Same top token")
            color: Theme.textMuted
        }
        Label {
            visible: page.r.evaluated === true
            color: Theme.text
            text: page.r.evaluated === true
                  ? qsTr("%1 % of %2 positions").arg(Ui.formatNumber(100 * page.r.top1Agreement, 1)).arg(page.r.evaluationTokens)
                  : ""
        }
    }
    Label {
        Layout.fillWidth: true
        visible: page.r.evaluated === true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: qsTr("Measured on held-out text that was not part of the calibration. Lower perplexity and KL divergence are better; a KL divergence below 0.05 is hard to notice in use.")
    }
    Label {
        Layout.fillWidth: true
        visible: page.r.evaluated === false
        wrapMode: Text.Wrap
        color: Theme.textMuted
        text: qsTr("The quality was not measured.")
    }

    Label {
        text: qsTr("Folder")
        font.bold: true
        color: Theme.text
    }
    TextField {
        id: pathField
        objectName: "resultPath"
        Layout.fillWidth: true
        readOnly: true
        selectByMouse: true
        text: page.r.output || ""
        Accessible.name: qsTr("Folder of the quantized model")
    }

    Repeater {
        model: page.r.warnings || []
        Label {
            required property string modelData
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: "⚠ " + modelData
        }
    }
    Item { Layout.fillHeight: true }
}
