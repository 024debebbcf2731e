// A flat button showing one icon, with a tooltip; its accessible name is the tooltip text.
import QtQuick
import QtQuick.Controls
import Hearth

ToolButton {
    id: control
    property string iconName
    property string tip
    icon.source: iconName ? "qrc:/hearth/icons/" + iconName + ".svg" : ""
    icon.width: 20
    icon.height: 20
    icon.color: enabled ? Theme.text : Theme.textMuted
    display: AbstractButton.IconOnly
    text: tip
    ToolTip.visible: hovered && tip.length > 0
    ToolTip.delay: 600
    ToolTip.text: tip
    Accessible.name: tip
    Accessible.role: Accessible.Button
}
