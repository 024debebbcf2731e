// Interrupted quantization jobs found on disk, each with Resume and Discard.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: list
    property var jobs: []
    spacing: 6

    QuantizeText { id: words }

    Repeater {
        model: list.jobs
        Rectangle {
            id: card
            required property var modelData
            required property int index
            Layout.fillWidth: true
            implicitHeight: row.implicitHeight + 16
            radius: 8
            color: Theme.accentSoft
            border.color: Theme.border
            Accessible.role: Accessible.Grouping
            Accessible.name: qsTr("Interrupted job: %1").arg(card.modelData.outputName || "")

            RowLayout {
                id: row
                anchors.fill: parent
                anchors.margins: 8
                spacing: 10
                ColumnLayout {
                    Layout.fillWidth: true
                    spacing: 2
                    Label {
                        Layout.fillWidth: true
                        text: card.modelData.outputName || ""
                        font.bold: true
                        color: Theme.text
                        elide: Text.ElideMiddle
                    }
                    Label {
                        Layout.fillWidth: true
                        wrapMode: Text.Wrap
                        color: card.modelData.damaged ? Theme.danger : Theme.textMuted
                        font.pointSize: Theme.smallFont
                        text: card.modelData.damaged
                              ? qsTr("The job file is damaged: %1").arg(card.modelData.error)
                              : qsTr("From %1 · %2 · stopped while %3 (%4 of %5) · %6 done")
                                    .arg(card.modelData.sourceName).arg(card.modelData.target)
                                    .arg(words.stage(card.modelData.stage).toLowerCase())
                                    .arg(card.modelData.step).arg(card.modelData.steps)
                                    .arg(words.duration(card.modelData.elapsedSeconds))
                    }
                }
                Button {
                    objectName: "resumeJobButton" + card.index
                    text: qsTr("Resume")
                    highlighted: true
                    visible: !card.modelData.damaged
                    enabled: !QuantizeWizard.jobs.running
                    Accessible.name: qsTr("Resume the job for %1").arg(card.modelData.outputName)
                    onClicked: QuantizeWizard.resumeJob(card.modelData.workDir)
                }
                Button {
                    objectName: "discardJobButton" + card.index
                    text: qsTr("Discard")
                    flat: true
                    enabled: !QuantizeWizard.jobs.running
                    Accessible.name: qsTr("Discard the job for %1 and its intermediate files").arg(card.modelData.outputName)
                    onClicked: QuantizeWizard.jobs.discardJob(card.modelData.workDir)
                }
            }
        }
    }
}
