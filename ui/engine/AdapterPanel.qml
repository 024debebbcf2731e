// LoRA adapters on top of the loaded model: those found in the models folders and those added
// by hand, each with what the engine found when it checked it against the model (format, rank,
// the projections it changes, whether it fits), a switch and a weight. A change is applied
// without reloading the model, and the choices are applied again whenever a model loads.
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Hearth

Pane {
    id: panel
    padding: 16
    background: null

    ColumnLayout {
        width: parent.width
        spacing: 12

        Label {
            text: qsTr("LoRA adapters")
            font.bold: true
            color: Theme.text
        }
        Label {
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: qsTr("Adapters change a loaded model's behaviour without loading another model. Those switched on are applied again whenever a model loads.")
        }
        Label {
            objectName: "noModelNote"
            Layout.fillWidth: true
            visible: !EngineController.loaded
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: qsTr("No model is loaded. Load one to see which adapters fit it and to apply them; adapters switched on now are applied when it loads.")
        }
        Label {
            objectName: "applyStatus"
            Layout.fillWidth: true
            visible: text.length > 0
            wrapMode: Text.Wrap
            color: Theme.textMuted
            font.pointSize: Theme.smallFont
            text: {
                if (AdapterList.applying)
                    return EngineController.state === EngineController.Generating
                           ? qsTr("Applying once the answer is written…") : qsTr("Applying…")
                if (AdapterList.lastApplySeconds >= 0)
                    return qsTr("Applied in %1 ms, without reloading the model.")
                               .arg(Ui.formatNumber(AdapterList.lastApplySeconds * 1000, 0))
                return ""
            }
        }
        Label {
            objectName: "notice"
            Layout.fillWidth: true
            visible: AdapterList.notice.length > 0
            wrapMode: Text.Wrap
            color: Theme.danger
            font.pointSize: Theme.smallFont
            text: AdapterList.notice
        }

        Repeater {
            model: AdapterList
            delegate: Rectangle {
                id: card
                required property string path
                required property string name
                required property string format
                required property var rank
                required property var targets
                required property var layers
                required property real bytes
                required property string source
                required property bool inspected
                required property bool fits
                required property string error
                required property bool active
                required property real weight
                required property bool applied
                required property real appliedWeight
                required property string applyError

                objectName: "adapter_" + name
                Layout.fillWidth: true
                implicitHeight: cardColumn.implicitHeight + 20
                radius: Theme.radius
                color: Theme.surface
                border.color: card.active ? Theme.accent : Theme.border
                Accessible.role: Accessible.ListItem
                Accessible.name: name

                ColumnLayout {
                    id: cardColumn
                    anchors.fill: parent
                    anchors.margins: 10
                    spacing: 4
                    RowLayout {
                        Layout.fillWidth: true
                        Switch {
                            id: toggle
                            objectName: "toggle"
                            checked: card.active
                            // One that does not fit the loaded model can only be switched off.
                            enabled: card.active || !EngineController.loaded || !card.inspected || card.fits
                            Accessible.name: qsTr("Apply %1").arg(card.name)
                            onToggled: {
                                AdapterList.setActive(card.path, checked)
                                checked = Qt.binding(() => card.active)
                            }
                        }
                        Label {
                            Layout.fillWidth: true
                            text: card.name
                            font.bold: true
                            color: Theme.text
                            elide: Text.ElideMiddle
                            ToolTip.visible: nameHover.hovered
                            ToolTip.text: card.path
                            HoverHandler { id: nameHover }
                        }
                        IconButton {
                            visible: card.source === ""
                            iconName: "close"
                            tip: qsTr("Remove from this list")
                            implicitWidth: 32
                            implicitHeight: 32
                            onClicked: AdapterList.removeAdapter(card.path)
                        }
                    }
                    Label {
                        objectName: "details"
                        Layout.fillWidth: true
                        wrapMode: Text.Wrap
                        color: Theme.textMuted
                        font.pointSize: Theme.smallFont
                        text: {
                            const kind = card.format === "peft" ? qsTr("PEFT folder") : qsTr("GGUF file")
                            if (!card.inspected || !card.fits)
                                return kind
                            return qsTr("%1 · rank %2 · %3 · %n layer(s) · %4", "", card.layers)
                                .arg(kind).arg(card.rank).arg(card.targets.join(", "))
                                .arg(Ui.formatBytes(card.bytes))
                        }
                    }
                    Label {
                        objectName: "fitError"
                        Layout.fillWidth: true
                        visible: card.error.length > 0
                        wrapMode: Text.Wrap
                        color: Theme.danger
                        font.pointSize: Theme.smallFont
                        text: card.inspected ? qsTr("Cannot be applied to the loaded model: %1").arg(card.error)
                                             : card.error
                    }
                    RowLayout {
                        Layout.fillWidth: true
                        Label {
                            text: qsTr("Weight")
                            color: Theme.text
                        }
                        Slider {
                            id: weightSlider
                            objectName: "weightSlider"
                            Layout.fillWidth: true
                            from: 0
                            to: 2
                            stepSize: 0.05
                            snapMode: Slider.SnapAlways
                            value: card.weight
                            Accessible.name: qsTr("Weight of %1").arg(card.name)
                            // Applied once the handle rests, not at every step it passes.
                            onMoved: weightTimer.restart()
                            Timer {
                                id: weightTimer
                                interval: 200
                                onTriggered: AdapterList.setWeight(card.path, weightSlider.value)
                            }
                        }
                        Label {
                            objectName: "weightValue"
                            text: Ui.formatNumber(weightSlider.value, 2)
                            color: Theme.text
                            Layout.minimumWidth: 32
                        }
                    }
                    Label {
                        objectName: "appliedState"
                        Layout.fillWidth: true
                        visible: text.length > 0
                        wrapMode: Text.Wrap
                        font.pointSize: Theme.smallFont
                        color: card.applyError.length > 0 ? Theme.danger : Theme.textMuted
                        text: {
                            if (card.applyError.length > 0)
                                return qsTr("Not applied: %1").arg(card.applyError)
                            if (card.applied)
                                return qsTr("Applied with weight %1.").arg(Ui.formatNumber(card.appliedWeight, 2))
                            if (card.active && EngineController.loaded)
                                return qsTr("Not applied yet.")
                            return ""
                        }
                    }
                }
            }
        }

        Label {
            objectName: "emptyNote"
            Layout.fillWidth: true
            visible: AdapterList.count === 0
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: AdapterList.scanning
                  ? qsTr("Looking for adapters…")
                  : qsTr("No adapters found in %1. Put PEFT adapter folders (with adapter_config.json) or GGUF adapters there, or add one.")
                        .arg(AppSettings.modelsFolder())
        }
        RowLayout {
            Button {
                objectName: "addButton"
                text: qsTr("Add…")
                onClicked: fileDialog.open()
                Accessible.name: qsTr("Add an adapter from another folder")
            }
            Button {
                text: qsTr("Look again")
                flat: true
                enabled: !AdapterList.scanning
                onClicked: AdapterList.rescan()
                Accessible.name: qsTr("Look for adapters again")
            }
        }
        Label {
            id: addError
            objectName: "addError"
            Layout.fillWidth: true
            visible: text.length > 0
            wrapMode: Text.Wrap
            color: Theme.danger
            font.pointSize: Theme.smallFont
        }
    }

    // A GGUF adapter, or a PEFT folder by its adapter_config.json (as the load panel picks a
    // model folder by its config.json).
    FileDialog {
        id: fileDialog
        title: qsTr("Add a LoRA adapter")
        nameFilters: [qsTr("GGUF adapters (*.gguf)"), qsTr("PEFT adapter configuration (adapter_config.json)")]
        onAccepted: addError.text = AdapterList.addAdapter(selectedFile)
    }
}
