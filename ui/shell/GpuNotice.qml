// Why the GPU is not used (no driver, a driver too old, no GPU, ...) and what to install, said
// once for each reason: dismissing it records the reason, and a different one shows again.
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Hearth

Rectangle {
    id: notice
    objectName: "gpuNotice"
    visible: !EngineController.cudaAvailable && AppSettings.gpuNoticeSeen !== EngineController.gpuStatus
    height: column.implicitHeight + 24
    radius: Theme.radius
    color: Theme.surface
    border.color: Theme.accent
    Accessible.role: Accessible.AlertMessage
    Accessible.name: title.text

    ColumnLayout {
        id: column
        anchors.fill: parent
        anchors.margins: 12
        spacing: 6
        RowLayout {
            Layout.fillWidth: true
            Label {
                id: title
                Layout.fillWidth: true
                text: qsTr("Hearth runs models on the CPU on this computer")
                font.bold: true
                color: Theme.text
                wrapMode: Text.Wrap
            }
            Button {
                objectName: "gpuNoticeOk"
                text: qsTr("OK")
                flat: true
                font.bold: true
                Material.foreground: Theme.accent
                Accessible.name: qsTr("Dismiss the GPU notice")
                onClicked: AppSettings.gpuNoticeSeen = EngineController.gpuStatus
            }
        }
        Label {
            Layout.fillWidth: true
            text: EngineController.gpuStatus
            color: Theme.textMuted
            wrapMode: Text.Wrap
        }
    }
}
