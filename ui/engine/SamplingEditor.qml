// Sampling settings: temperature, top-k, top-p, min-p, repetition penalty and the answer length.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: editor
    property var values: ({})
    signal valueEdited(string key, real value)

    spacing: 6
    NumberField {
        Layout.fillWidth: true
        label: qsTr("Temperature")
        tip: qsTr("0 always picks the most likely token; higher values vary more.")
        value: editor.values.temperature !== undefined ? editor.values.temperature : 0.7
        from: 0
        to: 5
        onEdited: (v) => editor.valueEdited("temperature", v)
    }
    NumberField {
        Layout.fillWidth: true
        label: qsTr("Top-k")
        tip: qsTr("Sample among the k most likely tokens; 0 turns it off.")
        value: editor.values.topK !== undefined ? editor.values.topK : 40
        decimals: 0
        from: 0
        to: 1000
        onEdited: (v) => editor.valueEdited("topK", v)
    }
    NumberField {
        Layout.fillWidth: true
        label: qsTr("Top-p")
        tip: qsTr("Sample among the most likely tokens that together reach this probability; 1 turns it off.")
        value: editor.values.topP !== undefined ? editor.values.topP : 0.9
        from: 0
        to: 1
        onEdited: (v) => editor.valueEdited("topP", v)
    }
    NumberField {
        Layout.fillWidth: true
        label: qsTr("Min-p")
        tip: qsTr("Drop tokens less likely than this fraction of the most likely one; 0 turns it off.")
        value: editor.values.minP !== undefined ? editor.values.minP : 0.05
        from: 0
        to: 1
        onEdited: (v) => editor.valueEdited("minP", v)
    }
    NumberField {
        Layout.fillWidth: true
        label: qsTr("Repetition penalty")
        tip: qsTr("Above 1 discourages repeating earlier tokens; 1 turns it off.")
        value: editor.values.repetitionPenalty !== undefined ? editor.values.repetitionPenalty : 1.1
        from: 0.5
        to: 3
        onEdited: (v) => editor.valueEdited("repetitionPenalty", v)
    }
    NumberField {
        Layout.fillWidth: true
        label: qsTr("Longest answer (tokens)")
        value: editor.values.maxTokens !== undefined ? editor.values.maxTokens : 1024
        decimals: 0
        from: 1
        to: 1048576
        onEdited: (v) => editor.valueEdited("maxTokens", v)
    }
}
