// An error as a person can act on it: what was being done, what went wrong, and for memory
// errors the numbers and what to change.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Dialog {
    id: dialog
    property string heading
    property var failure: ({})

    function show(context, f) {
        heading = context
        failure = f || {}
        open()
    }

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(560, parent.width - 40)
    modal: true
    title: heading
    standardButtons: Dialog.Close

    ColumnLayout {
        width: parent.width
        spacing: 12
        Accessible.role: Accessible.AlertMessage
        Accessible.name: dialog.heading

        GridLayout {
            visible: dialog.failure.outOfMemory === true && dialog.failure.needed > 0
            columns: 2
            columnSpacing: 16
            Label { text: qsTr("Needed"); color: Theme.textMuted }
            Label { text: Ui.formatBytes(dialog.failure.needed || 0); font.bold: true; color: Theme.text }
            Label { text: qsTr("Free"); color: Theme.textMuted }
            Label { text: Ui.formatBytes(dialog.failure.available || 0); font.bold: true; color: Theme.text }
            Label { text: qsTr("Device"); color: Theme.textMuted; visible: (dialog.failure.deviceName || "").length > 0 }
            Label { text: dialog.failure.deviceName || ""; color: Theme.text; visible: text.length > 0 }
        }
        Label {
            visible: dialog.failure.outOfMemory === true
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.text
            text: (dialog.failure.advice || "").length > 0
                  ? dialog.failure.advice
                  : qsTr("Try a smaller maximum sequence length or cache, the CPU, or a more strongly quantized version of the model.")
        }
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: dialog.failure.outOfMemory === true ? Theme.textMuted : Theme.text
            font.pointSize: dialog.failure.outOfMemory === true ? Theme.smallFont : Theme.fontSize
            text: dialog.failure.message || ""
            textFormat: Text.PlainText
        }
        Button {
            flat: true
            text: qsTr("Copy details")
            Accessible.name: qsTr("Copy the error details")
            onClicked: Ui.copyText(dialog.heading + "\n" + (dialog.failure.message || ""))
        }
    }
}
