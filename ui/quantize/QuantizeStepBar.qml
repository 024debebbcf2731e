// The wizard's steps across the top: where you are, and earlier steps to go back to.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

RowLayout {
    id: bar
    spacing: 4
    Accessible.role: Accessible.PageTabList
    Accessible.name: qsTr("Steps of the quantization")

    readonly property var names: [qsTr("Model"), qsTr("Format"), qsTr("Size"), qsTr("Calibration"),
                                  qsTr("Review"), qsTr("Run"), qsTr("Result")]

    Repeater {
        model: bar.names
        RowLayout {
            id: stepItem
            required property string modelData
            required property int index
            readonly property bool current: index === QuantizeWizard.step
            readonly property bool done: index < QuantizeWizard.step
            spacing: 4
            Layout.fillWidth: true

            AbstractButton {
                id: stepButton
                objectName: "stepButton" + stepItem.index
                Layout.fillWidth: true
                implicitHeight: 34
                enabled: stepItem.done && !QuantizeWizard.jobs.running && QuantizeWizard.step <= QuantizeWizard.Run
                         && stepItem.index <= QuantizeWizard.Review
                focusPolicy: Qt.TabFocus
                Accessible.role: Accessible.PageTab
                Accessible.name: qsTr("Step %1 of %2: %3").arg(stepItem.index + 1).arg(bar.names.length).arg(stepItem.modelData)
                Accessible.description: stepItem.current ? qsTr("current step") : (stepItem.done ? qsTr("done; go back to it") : "")
                Accessible.selected: stepItem.current
                onClicked: QuantizeWizard.goToStep(stepItem.index)

                contentItem: RowLayout {
                    spacing: 6
                    Rectangle {
                        width: 22
                        height: 22
                        radius: 11
                        color: stepItem.current || stepItem.done ? Theme.accent : "transparent"
                        border.color: stepItem.current || stepItem.done ? Theme.accent : Theme.border
                        Label {
                            anchors.centerIn: parent
                            text: stepItem.done ? "✓" : String(stepItem.index + 1)
                            color: stepItem.current || stepItem.done ? "white" : Theme.textMuted
                            font.pointSize: Theme.smallFont
                            font.bold: true
                        }
                    }
                    Label {
                        Layout.fillWidth: true
                        text: stepItem.modelData
                        elide: Text.ElideRight
                        color: stepItem.current ? Theme.text : Theme.textMuted
                        font.bold: stepItem.current
                        font.underline: stepButton.visualFocus
                    }
                }
                background: Rectangle {
                    radius: 6
                    color: stepButton.hovered && stepButton.enabled ? Theme.surfaceAlt : "transparent"
                    border.color: stepButton.visualFocus ? Theme.accent : "transparent"
                }
            }
        }
    }
}
