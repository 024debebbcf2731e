// Step 2: EXL2 (mixed bits per layer for a target size) or GPTQ (the same bits everywhere).
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 12

    function focusFirst() {
        (QuantizeWizard.form.format === "gptq" ? gptq : exl2).forceActiveFocus()
    }

    Label {
        Layout.fillWidth: true
        text: qsTr("Which format?")
        font.pointSize: Theme.titleFont
        color: Theme.text
    }

    ButtonGroup { id: formats }

    component Choice: Rectangle {
        id: choice
        property alias button: radio
        property string value
        property string title
        property string description
        Layout.fillWidth: true
        implicitHeight: column.implicitHeight + 24
        radius: 10
        color: radio.checked ? Theme.accentSoft : Theme.surface
        border.color: radio.checked ? Theme.accent : Theme.border
        MouseArea {
            anchors.fill: parent
            onClicked: QuantizeWizard.form.format = choice.value
        }
        ColumnLayout {
            id: column
            anchors.fill: parent
            anchors.margins: 12
            spacing: 4
            RadioButton {
                id: radio
                objectName: "format_" + choice.value
                text: choice.title
                font.bold: true
                checked: QuantizeWizard.form.format === choice.value
                ButtonGroup.group: formats
                Accessible.name: choice.title
                Accessible.description: choice.description
                onClicked: QuantizeWizard.form.format = choice.value
            }
            Label {
                Layout.fillWidth: true
                Layout.leftMargin: 36
                wrapMode: Text.Wrap
                color: Theme.textMuted
                text: choice.description
            }
        }
    }

    Choice {
        id: exl2Choice
        value: "exl2"
        title: qsTr("EXL2 — the best quality for a size")
        description: qsTr("Each layer gets the bits it needs: Hearth measures every layer's error on calibration text and picks the mix that meets an average you choose, from 2 to 8 bits per weight. Runs in Hearth and ExLlamaV2.")
    }
    Choice {
        id: gptqChoice
        value: "gptq"
        title: qsTr("GPTQ — the widely supported format")
        description: qsTr("The same number of bits (2, 3, 4 or 8) for every layer, in groups of weights that share a scale. Runs in Hearth, ExLlama, Transformers, vLLM and most other tools.")
    }
    Item { Layout.fillHeight: true }

    readonly property var exl2: exl2Choice.button
    readonly property var gptq: gptqChoice.button
}
