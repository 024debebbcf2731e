// Step 3: how small. EXL2: a bits-per-weight slider and the head's bits; GPTQ: bits, group size
// and act-order. Below, the size of the result and the GPU memory it needs at a context length.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 10
    readonly property bool exl2: QuantizeWizard.form.format !== "gptq"
    readonly property var est: QuantizeWizard.form.estimate
    readonly property bool estValid: est.valid === true

    function focusFirst() {
        (exl2 ? bpwSlider : bitsRepeater.itemAt(Math.max(0, [2, 3, 4, 8].indexOf(QuantizeWizard.form.bits)))).forceActiveFocus()
    }

    QuantizeText { id: words }

    Label {
        Layout.fillWidth: true
        text: page.exl2 ? qsTr("How many bits per weight?") : qsTr("How many bits, in which groups?")
        font.pointSize: Theme.titleFont
        color: Theme.text
    }

    // --- EXL2 ---
    ColumnLayout {
        Layout.fillWidth: true
        visible: page.exl2
        spacing: 6
        RowLayout {
            Layout.fillWidth: true
            Label {
                text: qsTr("Bits per weight")
                color: Theme.text
            }
            Item { Layout.fillWidth: true }
            Label {
                objectName: "bpwValue"
                text: qsTr("%1 bpw").arg(words.bpw(QuantizeWizard.form.bpw))
                font.bold: true
                font.pointSize: Theme.fontSize + 2
                color: Theme.accent
            }
        }
        Slider {
            id: bpwSlider
            objectName: "bpwSlider"
            Layout.fillWidth: true
            from: 2.0
            to: 8.0
            stepSize: 0.05
            snapMode: Slider.SnapAlways
            value: QuantizeWizard.form.bpw
            onMoved: QuantizeWizard.form.bpw = value
            Accessible.name: qsTr("Bits per weight, from 2 to 8")
            Accessible.description: qsTr("%1 bits per weight").arg(words.bpw(QuantizeWizard.form.bpw))

            // Below the model's cheapest setting: out of reach.
            Rectangle {
                visible: page.estValid && page.est.minBpw > 2
                x: bpwSlider.leftPadding
                y: bpwSlider.topPadding + bpwSlider.availableHeight / 2 + 6
                width: bpwSlider.availableWidth * Math.min(1, (page.est.minBpw - 2) / 6)
                height: 3
                radius: 1
                color: Theme.danger
                opacity: 0.6
            }
        }
        RowLayout {
            Layout.fillWidth: true
            Label { text: Number(2).toLocaleString(Qt.locale(), "f", 1); color: Theme.textMuted; font.pointSize: Theme.smallFont }
            Label {
                Layout.fillWidth: true
                horizontalAlignment: Text.AlignHCenter
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                visible: page.estValid
                text: qsTr("This model allows %1 to %2 bits per weight.").arg(words.bpw(page.est.minBpw)).arg(words.bpw(page.est.maxBpw))
            }
            Label { text: Number(8).toLocaleString(Qt.locale(), "f", 1); color: Theme.textMuted; font.pointSize: Theme.smallFont }
        }
        RowLayout {
            Layout.fillWidth: true
            spacing: 10
            Label {
                text: qsTr("Output layer (head)")
                color: Theme.text
                ToolTip.visible: headHover.hovered
                ToolTip.text: qsTr("Bits of the output layer, which turns hidden states into token scores. It is sensitive: 6 bits is the usual choice.")
                HoverHandler { id: headHover }
            }
            ComboBox {
                id: headBox
                objectName: "headBitsBox"
                model: [2, 3, 4, 5, 6, 8]
                displayText: qsTr("%1 bits").arg(currentValue)
                currentIndex: Math.max(0, model.indexOf(QuantizeWizard.form.headBits))
                onActivated: QuantizeWizard.form.headBits = currentValue
                Accessible.name: qsTr("Bits of the output layer")
            }
            Item { Layout.fillWidth: true }
        }
    }

    // --- GPTQ ---
    ColumnLayout {
        Layout.fillWidth: true
        visible: !page.exl2
        spacing: 6
        Label { text: qsTr("Bits"); color: Theme.text }
        RowLayout {
            id: bitsRow
            Repeater {
                id: bitsRepeater
                model: [2, 3, 4, 8]
                RadioButton {
                    required property int modelData
                    objectName: "gptqBits" + modelData
                    text: qsTr("%1 bits").arg(modelData)
                    checked: QuantizeWizard.form.bits === modelData
                    onClicked: QuantizeWizard.form.bits = modelData
                    Accessible.name: qsTr("%1 bits per weight").arg(modelData)
                }
            }
        }
        RowLayout {
            spacing: 10
            Label {
                text: qsTr("Group size")
                color: Theme.text
                ToolTip.visible: groupHover.hovered
                ToolTip.text: qsTr("How many weights share one scale. Smaller groups are more accurate and a little larger.")
                HoverHandler { id: groupHover }
            }
            ComboBox {
                id: groupBox
                objectName: "groupSizeBox"
                textRole: "text"
                valueRole: "value"
                model: [
                    { value: 32, text: "32" },
                    { value: 64, text: "64" },
                    { value: 128, text: "128" },
                    { value: 256, text: "256" },
                    { value: -1, text: qsTr("One group per column") }
                ]
                currentIndex: Math.max(0, indexOfValue(QuantizeWizard.form.groupSize))
                onActivated: QuantizeWizard.form.groupSize = currentValue
                Accessible.name: qsTr("Group size")
            }
        }
        CheckBox {
            objectName: "actOrderBox"
            text: qsTr("Act-order: quantize the most important columns first")
            checked: QuantizeWizard.form.actOrder
            onToggled: QuantizeWizard.form.actOrder = checked
            Accessible.name: text
        }
    }

    // --- what it comes to ---
    Rectangle {
        Layout.fillWidth: true
        Layout.topMargin: 6
        implicitHeight: estimateColumn.implicitHeight + 24
        radius: 10
        color: Theme.surface
        border.color: Theme.border
        ColumnLayout {
            id: estimateColumn
            anchors.fill: parent
            anchors.margins: 12
            spacing: 8
            RowLayout {
                Layout.fillWidth: true
                Label {
                    text: qsTr("Size on disk")
                    color: Theme.textMuted
                }
                Item { Layout.fillWidth: true }
                BusyIndicator {
                    running: QuantizeWizard.form.estimating
                    implicitWidth: 20
                    implicitHeight: 20
                    Accessible.name: qsTr("Working out the size")
                }
                Label {
                    objectName: "sizeEstimate"
                    text: page.estValid ? qsTr("≈ %1").arg(Ui.formatBytes(page.est.outputBytes)) : "–"
                    font.bold: true
                    font.pointSize: Theme.fontSize + 2
                    color: Theme.text
                }
            }
            Label {
                Layout.fillWidth: true
                visible: page.estValid && QuantizeWizard.form.sourceInfo.fileBytes > 0
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                wrapMode: Text.Wrap
                text: qsTr("The source takes %1 on disk; the decoder's %2 weights become %3 bits each on average.")
                          .arg(Ui.formatBytes(QuantizeWizard.form.sourceInfo.fileBytes))
                          .arg(Ui.formatCount(page.est.decoderWeights))
                          .arg(page.exl2 ? words.bpw(QuantizeWizard.form.bpw)
                                         : words.bpw(QuantizeWizard.form.bits + (QuantizeWizard.form.groupSize > 0 ? (16 + QuantizeWizard.form.bits) / QuantizeWizard.form.groupSize : 0)))
            }
            RowLayout {
                Layout.fillWidth: true
                Label {
                    text: qsTr("GPU memory at a context of")
                    color: Theme.textMuted
                }
                SpinBox {
                    id: contextBox
                    objectName: "contextBox"
                    from: 128
                    to: 1048576
                    stepSize: 1024
                    editable: true
                    value: QuantizeWizard.form.context
                    onValueModified: QuantizeWizard.form.context = value
                    Accessible.name: qsTr("Context length in tokens for the memory estimate")
                }
                Label {
                    text: qsTr("tokens")
                    color: Theme.textMuted
                }
                Item { Layout.fillWidth: true }
                Label {
                    objectName: "vramEstimate"
                    text: page.estValid ? qsTr("≈ %1").arg(Ui.formatBytes(page.est.vramNeeded)) : "–"
                    font.bold: true
                    font.pointSize: Theme.fontSize + 2
                    color: page.estValid && page.est.deviceKnown && page.est.vramNeeded > page.est.deviceFree
                           ? Theme.danger : Theme.text
                }
            }
            MemoryBar {
                Layout.fillWidth: true
                visible: page.estValid
                total: page.est.deviceKnown ? page.est.deviceTotal : 0
                available: page.est.deviceKnown ? page.est.deviceFree : -1
                segments: [
                    { label: qsTr("Weights"), value: page.est.vramWeights || 0, color: Theme.weights },
                    { label: qsTr("Cache"), value: page.est.vramCache || 0, color: Theme.cache },
                    { label: qsTr("Activations"), value: page.est.vramActivations || 0, color: Theme.activations },
                    { label: qsTr("Workspace"), value: page.est.vramWorkspace || 0, color: Theme.workspace }
                ]
            }
            Label {
                Layout.fillWidth: true
                visible: page.estValid
                wrapMode: Text.Wrap
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                text: page.est.deviceKnown
                      ? (page.est.vramNeeded <= page.est.deviceFree
                         ? qsTr("Fits: %1 is free on %2 now.").arg(Ui.formatBytes(page.est.deviceFree)).arg(page.est.deviceName)
                         : qsTr("Does not fit the %1 free on %2 now: choose fewer bits or a shorter context.").arg(Ui.formatBytes(page.est.deviceFree)).arg(page.est.deviceName))
                      : qsTr("No GPU here to compare with: this is what a GPU would need to run the result with this context.")
            }
        }
    }
    Item { Layout.fillHeight: true }
}
