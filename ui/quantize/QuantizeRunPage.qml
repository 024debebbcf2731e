// Step 6: the job at work — its stages, the layer it is on, elapsed and remaining time, its log —
// or, once stopped, why, with Resume in the dialog's footer.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 10
    readonly property var failure: QuantizeWizard.jobs.failure
    readonly property bool stopped: !QuantizeWizard.jobs.running && failure.message !== undefined
    readonly property bool perLayer: QuantizeWizard.jobs.stage === "measure" || QuantizeWizard.jobs.stage === "quantize"

    function focusFirst() { logView.forceActiveFocus() }

    QuantizeText { id: words }

    Label {
        Layout.fillWidth: true
        objectName: "runHeading"
        font.pointSize: Theme.titleFont
        color: Theme.text
        wrapMode: Text.Wrap
        text: {
            if (QuantizeWizard.jobs.cancelling) return qsTr("Stopping…")
            if (QuantizeWizard.jobs.running) return qsTr("Quantizing %1").arg(QuantizeWizard.form.sourceInfo.name || "")
            if (page.failure.cancelled) return qsTr("Stopped")
            if (page.stopped) return qsTr("The job failed")
            return ""
        }
    }

    // Stages, ticked off as they finish.
    Flow {
        Layout.fillWidth: true
        spacing: 14
        Accessible.role: Accessible.List
        Accessible.name: qsTr("Stages")
        Repeater {
            model: QuantizeWizard.jobs.stages
            Row {
                id: stageItem
                required property string modelData
                required property int index
                readonly property int current: QuantizeWizard.jobs.stages.indexOf(QuantizeWizard.jobs.stage)
                readonly property bool done: QuantizeWizard.jobs.stage === "done" || index < current
                readonly property bool active: index === current && QuantizeWizard.jobs.running
                spacing: 5
                Accessible.role: Accessible.ListItem
                Accessible.name: words.stage(modelData) + ": " + (done ? qsTr("done") : active ? qsTr("in progress") : qsTr("waiting"))
                Label {
                    text: stageItem.done ? "✓" : (stageItem.active ? "●" : "○")
                    color: stageItem.done ? Theme.success : (stageItem.active ? Theme.accent : Theme.textMuted)
                }
                Label {
                    text: words.stage(stageItem.modelData)
                    color: stageItem.active ? Theme.text : Theme.textMuted
                    font.bold: stageItem.active
                }
            }
        }
    }

    ProgressBar {
        id: overall
        objectName: "overallProgress"
        Layout.fillWidth: true
        from: 0
        to: 1
        value: QuantizeWizard.jobs.fraction
        indeterminate: QuantizeWizard.jobs.running && QuantizeWizard.jobs.fraction <= 0
        Accessible.name: qsTr("Progress of the whole job")
        Accessible.description: qsTr("%1 percent").arg(Math.round(QuantizeWizard.jobs.fraction * 100))
    }
    RowLayout {
        Layout.fillWidth: true
        Label {
            objectName: "stageLine"
            Layout.fillWidth: true
            color: Theme.text
            elide: Text.ElideRight
            text: {
                const stage = words.stage(QuantizeWizard.jobs.stage)
                if (QuantizeWizard.jobs.stageSteps > 0)
                    return qsTr("%1 — step %2 of %3").arg(stage).arg(Math.min(QuantizeWizard.jobs.stageStep + 1, QuantizeWizard.jobs.stageSteps))
                                                     .arg(QuantizeWizard.jobs.stageSteps)
                return stage
            }
        }
        Label {
            objectName: "percent"
            text: qsTr("%1 %").arg(Math.round(QuantizeWizard.jobs.fraction * 100))
            font.bold: true
            color: Theme.text
        }
    }
    Label {
        objectName: "itemLine"
        Layout.fillWidth: true
        visible: QuantizeWizard.jobs.item.length > 0
        color: Theme.textMuted
        elide: Text.ElideMiddle
        font.family: Theme.monoFamily
        font.pointSize: Theme.smallFont
        text: QuantizeWizard.jobs.layer > 0 && QuantizeWizard.jobs.layerCount > 0
              ? qsTr("Layer %1 of %2 · %3").arg(QuantizeWizard.jobs.layer).arg(QuantizeWizard.jobs.layerCount).arg(QuantizeWizard.jobs.item)
              : QuantizeWizard.jobs.item
    }

    // One cell per decoder layer: done, current and to come, in the stage that goes by layer.
    Flow {
        Layout.fillWidth: true
        visible: page.perLayer && QuantizeWizard.jobs.layerCount > 0
        spacing: 3
        Accessible.role: Accessible.ProgressBar
        Accessible.name: qsTr("Layers")
        Accessible.description: qsTr("Layer %1 of %2").arg(QuantizeWizard.jobs.layer).arg(QuantizeWizard.jobs.layerCount)
        Repeater {
            model: QuantizeWizard.jobs.layerCount
            Rectangle {
                required property int index
                width: Math.max(6, Math.min(18, (page.width - 3 * QuantizeWizard.jobs.layerCount) / Math.max(1, QuantizeWizard.jobs.layerCount)))
                height: 14
                radius: 2
                color: index + 1 < QuantizeWizard.jobs.layer ? Theme.accent
                       : index + 1 === QuantizeWizard.jobs.layer ? (QuantizeWizard.jobs.running ? Theme.accentSoft : Theme.border)
                       : Theme.free
                border.color: index + 1 === QuantizeWizard.jobs.layer ? Theme.accent : "transparent"
            }
        }
    }

    GridLayout {
        columns: 4
        columnSpacing: 12
        Label { text: qsTr("Elapsed"); color: Theme.textMuted }
        Label {
            objectName: "elapsed"
            text: words.duration(QuantizeWizard.jobs.elapsedSeconds)
            color: Theme.text
            font.bold: true
        }
        Label { text: qsTr("Remaining"); color: Theme.textMuted; Layout.leftMargin: 24 }
        Label {
            objectName: "remaining"
            text: QuantizeWizard.jobs.running ? (QuantizeWizard.jobs.remainingSeconds >= 0 ? qsTr("about %1").arg(words.duration(QuantizeWizard.jobs.remainingSeconds))
                                                                                           : qsTr("working it out…"))
                                              : "–"
            color: Theme.text
            font.bold: true
        }
    }

    // Why it stopped.
    Rectangle {
        Layout.fillWidth: true
        visible: page.stopped
        implicitHeight: stopColumn.implicitHeight + 20
        radius: 8
        color: page.failure.cancelled ? Theme.surfaceAlt : Theme.accentSoft
        border.color: page.failure.cancelled ? Theme.border : Theme.danger
        Accessible.role: Accessible.AlertMessage
        Accessible.name: stopText.text
        ColumnLayout {
            id: stopColumn
            anchors.fill: parent
            anchors.margins: 10
            spacing: 6
            Label {
                id: stopText
                objectName: "stopText"
                Layout.fillWidth: true
                wrapMode: Text.Wrap
                color: Theme.text
                text: page.failure.cancelled
                      ? (QuantizeWizard.jobs.resumable
                         ? qsTr("The job was stopped. Its work so far is kept: resume it now or later, even after restarting Hearth.")
                         : qsTr("The job was stopped before it began."))
                      : (QuantizeWizard.jobs.resumable
                         ? qsTr("The job stopped with an error. Its work so far is kept; once the cause is fixed, it can resume.")
                         : qsTr("The job stopped with an error."))
            }
            Label {
                Layout.fillWidth: true
                visible: !page.failure.cancelled
                wrapMode: Text.Wrap
                color: Theme.danger
                textFormat: Text.PlainText
                text: page.failure.message || ""
            }
        }
    }

    Label {
        text: qsTr("Log")
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
    }
    ListView {
        id: logView
        objectName: "logView"
        Layout.fillWidth: true
        Layout.fillHeight: true
        Layout.minimumHeight: 60
        clip: true
        model: QuantizeWizard.jobs.log
        activeFocusOnTab: true
        ScrollBar.vertical: ScrollBar {}
        Accessible.role: Accessible.List
        Accessible.name: qsTr("Messages of the job")
        onCountChanged: positionViewAtEnd()
        delegate: Label {
            required property string modelData
            width: ListView.view.width
            wrapMode: Text.Wrap
            text: modelData
            color: Theme.textMuted
            font.family: Theme.monoFamily
            font.pointSize: Theme.smallFont
        }
        Rectangle {
            anchors.fill: parent
            color: "transparent"
            border.color: logView.activeFocus ? Theme.accent : Theme.border
            radius: 4
        }
        Label {
            anchors.centerIn: parent
            visible: logView.count === 0
            text: qsTr("No messages.")
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
        }
    }
}
