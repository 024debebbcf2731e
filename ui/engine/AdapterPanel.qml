// Room for the LoRA picker: adapters are applied on top of the loaded model. The engine does
// not load adapters yet, so the panel says so instead of offering controls that do nothing.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Item {
    ColumnLayout {
        anchors.fill: parent
        anchors.margins: 16
        spacing: 10
        Label {
            text: qsTr("LoRA adapters")
            font.bold: true
            color: Theme.text
        }
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: qsTr("Adapters change a loaded model's behaviour without loading another model. This version of Hearth cannot apply them yet; they will be listed here.")
        }
        Item { Layout.fillHeight: true }
    }
}
