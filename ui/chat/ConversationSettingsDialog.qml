// This conversation's system prompt and, if wanted, its own sampling settings.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Dialog {
    id: dialog
    property var overrides: ({})

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(560, parent.width - 40)
    modal: true
    title: qsTr("Conversation settings")
    standardButtons: Dialog.Save | Dialog.Cancel

    onAboutToShow: {
        promptArea.text = ChatSession.systemPrompt
        overrides = Object.assign({}, ChatSession.sampling)
        ownSampling.checked = Object.keys(overrides).length > 0
    }
    onAccepted: {
        ChatSession.systemPrompt = promptArea.text
        ChatSession.sampling = ownSampling.checked ? overrides : {}
    }

    ColumnLayout {
        width: parent.width
        spacing: 10
        Label {
            text: qsTr("System prompt")
            font.bold: true
            color: Theme.text
        }
        ScrollView {
            Layout.fillWidth: true
            Layout.preferredHeight: 110
            TextArea {
                id: promptArea
                wrapMode: TextArea.Wrap
                selectByMouse: true
                placeholderText: qsTr("Instructions the model follows throughout this conversation")
                Accessible.name: qsTr("System prompt")
            }
        }
        CheckBox {
            id: ownSampling
            text: qsTr("Use its own sampling settings")
            Accessible.name: text
            onToggled: if (checked && Object.keys(dialog.overrides).length === 0)
                           dialog.overrides = AppSettings.defaultSampling()
        }
        SamplingEditor {
            Layout.fillWidth: true
            enabled: ownSampling.checked
            opacity: enabled ? 1 : 0.5
            values: ownSampling.checked ? dialog.overrides : ChatSession.effectiveSampling()
            onValueEdited: (key, value) => {
                let o = Object.assign({}, dialog.overrides)
                o[key] = value
                dialog.overrides = o
            }
        }
    }
}
