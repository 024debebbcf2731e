// Step 5: everything at a glance, where the result goes, on which device, and whether to measure
// its quality afterwards. Start is in the dialog's footer.
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 10
    readonly property var est: QuantizeWizard.form.estimate

    function focusFirst() { outputField.forceActiveFocus() }

    QuantizeText { id: words }

    Label {
        Layout.fillWidth: true
        text: qsTr("Ready to quantize")
        font.pointSize: Theme.titleFont
        color: Theme.text
    }

    GridLayout {
        Layout.fillWidth: true
        columns: 2
        columnSpacing: 16
        rowSpacing: 6
        Label { text: qsTr("Model"); color: Theme.textMuted }
        Label {
            Layout.fillWidth: true
            text: QuantizeWizard.form.sourceInfo.name || QuantizeWizard.form.sourcePath
            color: Theme.text
            elide: Text.ElideMiddle
        }
        Label { text: qsTr("Target"); color: Theme.textMuted }
        Label {
            objectName: "reviewTarget"
            Layout.fillWidth: true
            color: Theme.text
            wrapMode: Text.Wrap
            text: QuantizeWizard.form.format === "gptq"
                  ? (QuantizeWizard.form.groupSize > 0
                     ? qsTr("GPTQ, %1 bits, group size %2%3").arg(QuantizeWizard.form.bits).arg(QuantizeWizard.form.groupSize)
                           .arg(QuantizeWizard.form.actOrder ? qsTr(", act-order") : "")
                     : qsTr("GPTQ, %1 bits, one group per column%2").arg(QuantizeWizard.form.bits)
                           .arg(QuantizeWizard.form.actOrder ? qsTr(", act-order") : ""))
                  : qsTr("EXL2, %1 bits per weight, head %2 bits").arg(words.bpw(QuantizeWizard.form.bpw)).arg(QuantizeWizard.form.headBits)
        }
        Label { text: qsTr("Estimated size"); color: Theme.textMuted }
        Label {
            color: Theme.text
            text: est.valid === true ? qsTr("≈ %1 on disk, ≈ %2 of GPU memory at %3 tokens")
                                           .arg(Ui.formatBytes(est.outputBytes)).arg(Ui.formatBytes(est.vramNeeded))
                                           .arg(QuantizeWizard.form.context)
                                     : "–"
        }
        Label { text: qsTr("Calibration"); color: Theme.textMuted }
        Label {
            Layout.fillWidth: true
            color: Theme.text
            elide: Text.ElideMiddle
            text: QuantizeWizard.form.calibrationFile.length > 0 ? QuantizeWizard.form.calibrationFile : qsTr("Hearth's built-in set")
        }
    }

    Label {
        Layout.topMargin: 6
        text: qsTr("Output folder")
        font.bold: true
        color: Theme.text
    }
    RowLayout {
        Layout.fillWidth: true
        TextField {
            id: outputField
            objectName: "outputField"
            Layout.fillWidth: true
            text: QuantizeWizard.form.outputPath
            selectByMouse: true
            Accessible.name: qsTr("Folder to write the quantized model to")
            // Enter applies the text here; it does not go on to the next step.
            Keys.onReturnPressed: QuantizeWizard.form.outputPath = text
            Keys.onEnterPressed: QuantizeWizard.form.outputPath = text
            onEditingFinished: if (text !== QuantizeWizard.form.outputPath) QuantizeWizard.form.outputPath = text
        }
        Button {
            text: qsTr("Choose…")
            Accessible.name: qsTr("Choose the folder to put the quantized model in")
            onClicked: folderDialog.open()
        }
    }
    QuantizeJobList {
        Layout.fillWidth: true
        visible: QuantizeWizard.jobs.outputJob.workDir !== undefined
        jobs: QuantizeWizard.jobs.outputJob.workDir !== undefined ? [QuantizeWizard.jobs.outputJob] : []
    }

    Label {
        Layout.topMargin: 6
        text: qsTr("Device")
        font.bold: true
        color: Theme.text
    }
    RowLayout {
        RadioButton {
            objectName: "deviceGpu"
            text: qsTr("GPU")
            checked: QuantizeWizard.form.device === "gpu"
            enabled: QuantizeWizard.form.cudaAvailable
            onClicked: QuantizeWizard.form.device = "gpu"
            Accessible.name: qsTr("Quantize on the GPU")
            ToolTip.visible: hovered && !enabled
            ToolTip.text: qsTr("No CUDA GPU is available here (no device, no driver, or a build without CUDA).")
        }
        RadioButton {
            objectName: "deviceCpu"
            text: qsTr("CPU")
            checked: QuantizeWizard.form.device === "cpu"
            onClicked: QuantizeWizard.form.device = "cpu"
            Accessible.name: qsTr("Quantize on the CPU")
        }
    }
    Label {
        objectName: "deviceNotice"
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: QuantizeWizard.jobs.deviceNotice
    }
    CheckBox {
        objectName: "evaluateBox"
        text: qsTr("Afterwards, measure perplexity and KL divergence against the source on held-out text")
        checked: QuantizeWizard.form.evaluate
        onToggled: QuantizeWizard.form.evaluate = checked
        Accessible.name: qsTr("Measure the quality of the result afterwards")
    }
    Item { Layout.fillHeight: true }

    FolderDialog {
        id: folderDialog
        title: qsTr("Where should the quantized model go?")
        onAccepted: QuantizeWizard.form.chooseOutputFolder(selectedFolder)
    }
}
