// A bar of memory: coloured segments (weights, cache, ...) against the device's total, with the
// part that was free marked, and a legend.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: bar
    property var segments: []   // [{label, value, color}]
    property real total: 0      // the device's memory
    property real available: 0  // free before this load (plan) or now (live); < 0: not shown
    readonly property real used: segments.reduce((sum, s) => sum + s.value, 0)
    readonly property real scale: Math.max(total, used, 1)

    spacing: 6
    Accessible.role: Accessible.Chart
    Accessible.name: qsTr("Memory: %1 of %2").arg(Ui.formatBytes(used)).arg(Ui.formatBytes(total))

    Rectangle {
        Layout.fillWidth: true
        height: 16
        radius: 4
        color: Theme.free
        clip: true
        Row {
            anchors.fill: parent
            Repeater {
                model: bar.segments
                Rectangle {
                    required property var modelData
                    width: parent.width * modelData.value / bar.scale
                    height: parent.height
                    color: modelData.color
                }
            }
        }
        // Where the free memory ends: a load must stay left of this line.
        Rectangle {
            visible: bar.available > 0 && bar.total > 0
            x: Math.min(parent.width - 2, parent.width * bar.available / bar.scale)
            width: 2
            height: parent.height
            color: Theme.text
            opacity: 0.6
        }
    }
    Flow {
        Layout.fillWidth: true
        spacing: 12
        Repeater {
            model: bar.segments
            Row {
                required property var modelData
                spacing: 5
                Rectangle {
                    width: 10
                    height: 10
                    radius: 2
                    color: modelData.color
                    anchors.verticalCenter: parent.verticalCenter
                }
                Label {
                    text: modelData.label + " " + Ui.formatBytes(modelData.value)
                    color: Theme.textMuted
                    font.pointSize: Theme.smallFont
                }
            }
        }
    }
}
