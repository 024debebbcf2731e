// A labelled field for a number, with its range checked as the user types.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

RowLayout {
    id: field
    property string label
    property real value
    property real from: 0
    property real to: 1e9
    property int decimals: 2
    property string tip
    signal edited(real value)

    spacing: 8
    Label {
        Layout.fillWidth: true
        text: field.label
        color: Theme.text
        elide: Text.ElideRight
        ToolTip.visible: tip.length > 0 && labelHover.hovered
        ToolTip.text: field.tip
        HoverHandler { id: labelHover }
    }
    TextField {
        id: input
        Layout.preferredWidth: 96
        horizontalAlignment: TextInput.AlignRight
        text: Number(field.value).toLocaleString(Qt.locale(), "f", field.decimals)
        validator: DoubleValidator {
            bottom: field.from
            top: field.to
            decimals: field.decimals
            notation: DoubleValidator.StandardNotation
        }
        selectByMouse: true
        Accessible.name: field.label
        Accessible.description: field.tip
        onEditingFinished: {
            let v = Number.fromLocaleString(Qt.locale(), text)
            if (!isNaN(v)) {
                v = Math.min(field.to, Math.max(field.from, v))
                field.edited(v)
            }
            text = Qt.binding(() => Number(field.value).toLocaleString(Qt.locale(), "f", field.decimals))
        }
    }
}
