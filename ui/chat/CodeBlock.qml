// A fenced code block: the language, a copy button, and the code in a monospace font that
// scrolls sideways instead of wrapping.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Rectangle {
    id: block
    property string code
    property string language

    implicitHeight: header.height + codeText.implicitHeight + 20
    radius: 8
    color: Theme.codeBackground
    border.color: Theme.border
    clip: true
    Accessible.role: Accessible.Grouping
    Accessible.name: language.length > 0 ? qsTr("Code block, %1").arg(language) : qsTr("Code block")

    Rectangle {
        id: header
        width: parent.width
        height: 32
        radius: 8
        color: Theme.codeHeader
        Rectangle {  // square off the header's lower corners
            anchors.bottom: parent.bottom
            width: parent.width
            height: 8
            color: parent.color
        }
        RowLayout {
            anchors.fill: parent
            anchors.leftMargin: 12
            anchors.rightMargin: 4
            Label {
                Layout.fillWidth: true
                text: block.language.length > 0 ? block.language : qsTr("code")
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                font.family: Theme.monoFamily
            }
            Button {
                id: copyButton
                objectName: "copyCodeButton"
                property bool copied: false
                flat: true
                implicitHeight: 30
                topInset: 0
                bottomInset: 0
                text: copied ? qsTr("Copied") : qsTr("Copy")
                font.pointSize: Theme.smallFont
                Accessible.name: qsTr("Copy code")
                onClicked: {
                    Ui.copyText(block.code)
                    copied = true
                    resetCopied.restart()
                }
                Timer {
                    id: resetCopied
                    interval: 1500
                    onTriggered: copyButton.copied = false
                }
            }
        }
    }

    Flickable {
        anchors.top: header.bottom
        anchors.left: parent.left
        anchors.right: parent.right
        anchors.bottom: parent.bottom
        anchors.margins: 10
        contentWidth: codeText.implicitWidth
        contentHeight: codeText.implicitHeight
        flickableDirection: Flickable.HorizontalFlick
        boundsBehavior: Flickable.StopAtBounds
        clip: true
        ScrollBar.horizontal: ScrollBar { policy: ScrollBar.AsNeeded }
        TextEdit {
            id: codeText
            text: block.code
            textFormat: TextEdit.PlainText
            readOnly: true
            selectByMouse: true
            font.family: Theme.monoFamily
            font.pointSize: Theme.fontSize - 1
            color: Theme.text
            selectionColor: Theme.accent
            Accessible.name: qsTr("Code")
        }
    }
}
