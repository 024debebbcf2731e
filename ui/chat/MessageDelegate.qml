// One message. The user's sit in a bubble on the right and can be edited and sent again; the
// assistant's are rendered as Markdown with framed code blocks, and show their statistics and
// the LoRA adapters that shaped them.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Item {
    id: root
    required property int index
    required property var messageId
    required property string role
    required property string content
    required property string messageState
    required property var blocks
    required property var tokens
    required property real tokensPerSecond
    required property real promptTokensPerSecond
    required property string finishReason
    required property var adapters  // [{name, path, weight}]

    readonly property bool isUser: role === "user"
    readonly property bool isLast: index === ChatSession.messages.count - 1
    readonly property bool streaming: messageState === "streaming"
    property bool editing: false

    implicitHeight: column.implicitHeight
    Accessible.role: Accessible.ListItem
    Accessible.name: (isUser ? qsTr("You") : qsTr("Assistant")) + ": " + content

    HoverHandler { id: hover }

    ColumnLayout {
        id: column
        width: Math.min(root.width - 48, 820)
        anchors.horizontalCenter: parent.horizontalCenter
        spacing: 6

        // --- the user's message ---
        Rectangle {
            visible: root.isUser && !root.editing
            Layout.alignment: Qt.AlignRight
            Layout.maximumWidth: column.width * 0.8
            implicitWidth: Math.min(userText.implicitWidth + 28, column.width * 0.8)
            implicitHeight: userText.implicitHeight + 20
            radius: 16
            color: Theme.userBubble
            TextEdit {
                id: userText
                anchors.fill: parent
                anchors.margins: 10
                anchors.leftMargin: 14
                anchors.rightMargin: 14
                text: root.content
                textFormat: TextEdit.PlainText
                wrapMode: TextEdit.Wrap
                readOnly: true
                selectByMouse: true
                color: Theme.text
                selectionColor: Theme.accent
                font.pointSize: Theme.fontSize
                Accessible.name: qsTr("Your message")
            }
        }

        // --- editing a sent message ---
        ColumnLayout {
            visible: root.editing
            Layout.fillWidth: true
            TextArea {
                id: editArea
                Layout.fillWidth: true
                wrapMode: TextArea.Wrap
                selectByMouse: true
                Accessible.name: qsTr("Edit your message")
                Keys.onEscapePressed: root.editing = false
            }
            RowLayout {
                Layout.alignment: Qt.AlignRight
                Button {
                    text: qsTr("Cancel")
                    flat: true
                    onClicked: root.editing = false
                }
                Button {
                    text: qsTr("Send again")
                    highlighted: true
                    enabled: EngineController.state === EngineController.Ready
                    onClicked: {
                        root.editing = false
                        ChatSession.editAndResend(root.index, editArea.text)
                    }
                }
            }
        }

        // --- the assistant's answer ---
        RowLayout {
            visible: !root.isUser
            Layout.fillWidth: true
            spacing: 12
            Rectangle {
                Layout.alignment: Qt.AlignTop
                width: 30
                height: 30
                radius: 15
                color: Theme.accentSoft
                Image {
                    anchors.centerIn: parent
                    source: "qrc:/hearth/hearth.svg"
                    sourceSize.width: 22
                    sourceSize.height: 22
                }
                Accessible.ignored: true
            }
            ColumnLayout {
                Layout.fillWidth: true
                spacing: 8
                Repeater {
                    model: root.isUser ? [] : root.blocks
                    delegate: Loader {
                        required property var modelData
                        Layout.fillWidth: true
                        sourceComponent: modelData.code ? codeComponent : textComponent
                        property var block: modelData
                    }
                }
                // A thinking indicator before the first words arrive.
                Row {
                    visible: root.streaming && root.content.length === 0
                    spacing: 5
                    Repeater {
                        model: 3
                        Rectangle {
                            required property int index
                            width: 7
                            height: 7
                            radius: 3.5
                            color: Theme.textMuted
                            SequentialAnimation on opacity {
                                loops: Animation.Infinite
                                PauseAnimation { duration: index * 150 }
                                NumberAnimation { from: 0.2; to: 1; duration: 350 }
                                NumberAnimation { from: 1; to: 0.2; duration: 350 }
                            }
                        }
                    }
                    Accessible.name: qsTr("The model is thinking")
                }
                Label {
                    visible: root.messageState === "incomplete"
                    text: qsTr("This answer was interrupted.")
                    color: Theme.danger
                    font.pointSize: Theme.smallFont
                }
            }
        }

        // --- actions and statistics ---
        RowLayout {
            Layout.fillWidth: true
            Layout.leftMargin: root.isUser ? 0 : 42
            spacing: 2
            opacity: hover.hovered || (!root.isUser && root.isLast) ? 1 : 0
            visible: !root.editing && !root.streaming
            Behavior on opacity { NumberAnimation { duration: 120 } }

            Item { Layout.fillWidth: root.isUser }
            Label {
                visible: !root.isUser && root.tokens > 0
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                text: {
                    let parts = [qsTr("%n token(s)", "", root.tokens)]
                    if (root.tokensPerSecond > 0)
                        parts.push(qsTr("%1 tokens/s").arg(Ui.formatNumber(root.tokensPerSecond, 1)))
                    if (root.promptTokensPerSecond > 0)
                        parts.push(qsTr("prompt %1 tokens/s").arg(Ui.formatNumber(root.promptTokensPerSecond, 0)))
                    if (root.finishReason === "cancelled")
                        parts.push(qsTr("stopped"))
                    else if (root.finishReason === "length")
                        parts.push(qsTr("cut at the token limit"))
                    return parts.join(" · ")
                }
                Layout.rightMargin: 8
                Accessible.name: text
            }
            Label {
                objectName: "adapterLine"
                visible: !root.isUser && root.adapters.length > 0
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                readonly property string names: root.adapters.map(
                    a => qsTr("%1 × %2").arg(a.name).arg(Ui.formatNumber(a.weight, 2))).join(", ")
                text: qsTr("LoRA %1").arg(names)
                Layout.rightMargin: 8
                Accessible.name: qsTr("LoRA adapters: %1").arg(names)
                ToolTip.visible: adapterHover.hovered
                ToolTip.text: root.adapters.map(a => a.path).join("\n")
                HoverHandler { id: adapterHover }
            }
            IconButton {
                iconName: "copy"
                tip: qsTr("Copy message")
                implicitWidth: 32
                implicitHeight: 32
                onClicked: Ui.copyText(root.content)
            }
            IconButton {
                visible: root.isUser
                iconName: "edit"
                tip: qsTr("Edit and send again")
                implicitWidth: 32
                implicitHeight: 32
                enabled: !ChatSession.generating
                onClicked: { editArea.text = root.content; root.editing = true; editArea.forceActiveFocus() }
            }
            IconButton {
                visible: !root.isUser && root.isLast
                iconName: "refresh"
                tip: qsTr("Regenerate the answer")
                implicitWidth: 32
                implicitHeight: 32
                enabled: ChatSession.canRegenerate && EngineController.state === EngineController.Ready
                onClicked: ChatSession.regenerate()
            }
            Item { Layout.fillWidth: !root.isUser }
        }
    }

    Component {
        id: textComponent
        TextEdit {
            // The Loader that shows a block is this item's parent; it carries the block.
            readonly property var block: parent ? parent.block : ({ text: "" })
            text: block.text
            textFormat: TextEdit.MarkdownText
            wrapMode: TextEdit.Wrap
            readOnly: true
            selectByMouse: true
            color: Theme.text
            selectionColor: Theme.accent
            font.pointSize: Theme.fontSize
            onLinkActivated: (link) => Qt.openUrlExternally(link)
            Accessible.role: Accessible.StaticText
            Accessible.name: block.text
        }
    }
    Component {
        id: codeComponent
        CodeBlock {
            readonly property var block: parent ? parent.block : ({ text: "", language: "" })
            code: block.text
            language: block.language
        }
    }
}
