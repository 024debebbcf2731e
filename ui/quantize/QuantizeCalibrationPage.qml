// Step 4: the text the quantizer measures the layers on: Hearth's built-in set or a file.
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 10
    readonly property bool ownFile: QuantizeWizard.form.calibrationFile.length > 0 || ownRadio.checked

    function focusFirst() {
        (page.ownFile ? ownRadio : builtinRadio).forceActiveFocus()
    }

    Label {
        Layout.fillWidth: true
        text: qsTr("Which text should the quantizer learn from?")
        font.pointSize: Theme.titleFont
        color: Theme.text
        wrapMode: Text.Wrap
    }
    Label {
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        text: qsTr("The quantizer runs the model over this text and keeps what matters for it. Text like the model's later use gives the best results.")
    }

    ButtonGroup { id: choice }
    RadioButton {
        id: builtinRadio
        objectName: "builtinCalibration"
        text: qsTr("Hearth's built-in set")
        checked: QuantizeWizard.form.calibrationFile.length === 0 && !ownRadio.checked
        ButtonGroup.group: choice
        Accessible.name: qsTr("Use Hearth's built-in calibration set")
        onClicked: { ownRadio.checked = false; QuantizeWizard.form.calibrationFile = "" }
    }
    Label {
        Layout.fillWidth: true
        Layout.leftMargin: 36
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: qsTr("English prose, technical writing, Python and other code, several languages and chat conversations, all freely licensed.")
    }
    RadioButton {
        id: ownRadio
        objectName: "ownCalibration"
        text: qsTr("A file of my own")
        ButtonGroup.group: choice
        checked: QuantizeWizard.form.calibrationFile.length > 0
        Accessible.name: qsTr("Use a calibration file of my own")
        onClicked: if (QuantizeWizard.form.calibrationFile.length === 0) fileDialog.open()
    }
    RowLayout {
        Layout.fillWidth: true
        Layout.leftMargin: 36
        enabled: page.ownFile
        TextField {
            id: fileField
            objectName: "calibrationField"
            Layout.fillWidth: true
            placeholderText: qsTr("Path to a .txt, .md or .jsonl file")
            text: QuantizeWizard.form.calibrationFile
            selectByMouse: true
            Accessible.name: qsTr("Path of the calibration file")
            // Enter applies the text here; it does not go on to the next step.
            Keys.onReturnPressed: QuantizeWizard.form.calibrationFile = text
            Keys.onEnterPressed: QuantizeWizard.form.calibrationFile = text
            onEditingFinished: if (text !== QuantizeWizard.form.calibrationFile) QuantizeWizard.form.calibrationFile = text
        }
        Button {
            text: qsTr("Choose…")
            Accessible.name: qsTr("Choose a calibration file")
            onClicked: fileDialog.open()
        }
    }
    Label {
        Layout.fillWidth: true
        Layout.leftMargin: 36
        visible: page.ownFile
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: qsTr("Plain text or Markdown is read as it is. In JSON Lines, each line is an object with a \"text\" field, or a \"messages\" list of chat turns, which is written out with the model's chat template.")
    }

    Label {
        Layout.topMargin: 8
        text: qsTr("Amount")
        font.bold: true
        color: Theme.text
    }
    GridLayout {
        columns: 2
        columnSpacing: 12
        Label {
            text: qsTr("Rows")
            color: Theme.text
        }
        SpinBox {
            objectName: "rowsBox"
            from: 0
            to: 100000
            editable: true
            value: QuantizeWizard.form.calibrationRows
            onValueModified: QuantizeWizard.form.calibrationRows = value
            textFromValue: (v, locale) => v === 0 ? qsTr("Automatic") : Number(v).toLocaleString(locale, "f", 0)
            valueFromText: (t, locale) => t === qsTr("Automatic") ? 0 : Number.fromLocaleString(locale, t)
            Accessible.name: qsTr("Rows of calibration text, 0 for automatic")
        }
        Label {
            text: qsTr("Tokens per row")
            color: Theme.text
        }
        SpinBox {
            objectName: "lengthBox"
            from: 0
            to: 65536
            stepSize: 256
            editable: true
            value: QuantizeWizard.form.calibrationLength
            onValueModified: QuantizeWizard.form.calibrationLength = value
            textFromValue: (v, locale) => v === 0 ? qsTr("Automatic") : Number(v).toLocaleString(locale, "f", 0)
            valueFromText: (t, locale) => t === qsTr("Automatic") ? 0 : Number.fromLocaleString(locale, t)
            Accessible.name: qsTr("Tokens per calibration row, 0 for automatic")
        }
    }
    Label {
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: qsTr("Automatic takes more text on the GPU than on the CPU. More text is slower and usually a little better.")
    }
    Item { Layout.fillHeight: true }

    FileDialog {
        id: fileDialog
        title: qsTr("Choose a calibration file")
        nameFilters: [qsTr("Text (*.txt *.md *.jsonl)")]
        onAccepted: QuantizeWizard.form.chooseCalibration(selectedFile)
        onRejected: if (QuantizeWizard.form.calibrationFile.length === 0) { ownRadio.checked = false; builtinRadio.checked = true }
    }
}
