// The main window: model bar on top, conversations on the left, the chat in the middle, the
// model and performance panels on the right.
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Hearth

ApplicationWindow {
    id: window
    property string startupError: ""

    width: 1280
    height: 820
    minimumWidth: 880
    minimumHeight: 560
    visible: true
    title: ChatSession.title.length > 0 ? qsTr("%1 — Hearth").arg(ChatSession.title) : "Hearth"
    color: Theme.background
    font.pointSize: Theme.fontSize

    Material.theme: Theme.dark ? Material.Dark : Material.Light
    Material.accent: Theme.accent
    Material.primary: Theme.accent
    Material.background: Theme.background
    Material.foreground: Theme.text

    Component.onCompleted: {
        Language.apply(AppSettings.language)
        if (startupError.length > 0)
            errorDialog.show(qsTr("Your conversation history could not be opened."),
                             { message: startupError + "\n\n" + qsTr("Conversations of this session will not be saved.") })
    }

    // --- keyboard shortcuts ---
    Shortcut {
        sequence: StandardKey.New
        onActivated: window.newChat()
    }
    Shortcut {
        sequence: "Ctrl+N"
        onActivated: window.newChat()
    }
    Shortcut {
        sequences: [StandardKey.Find, "Ctrl+K"]
        onActivated: { sidebar.visible = true; sidebar.focusSearch() }
    }
    Shortcut {
        sequences: [StandardKey.Preferences, "Ctrl+,"]
        onActivated: settingsDialog.open()
    }
    Shortcut {
        sequence: "Escape"
        enabled: ChatSession.generating
        onActivated: ChatSession.stop()
    }
    Shortcut {
        sequence: "Ctrl+."
        onActivated: ChatSession.stop()
    }
    Shortcut {
        sequence: "Ctrl+L"
        onActivated: libraryDialog.open()
    }
    Shortcut {
        sequence: "Ctrl+B"
        onActivated: sidebar.visible = !sidebar.visible
    }

    function newChat() {
        ChatSession.startNew()
        chatView.focusComposer()
    }

    header: ModelBar {
        id: modelBar
        onToggleSidebar: sidebar.visible = !sidebar.visible
        onTogglePanel: sidePanel.visible = !sidePanel.visible
        onOpenLibrary: libraryDialog.open()
        onOpenSettings: settingsDialog.open()
        onOpenLoadPanel: { sidePanel.visible = true; sidePanel.currentIndex = 0 }
    }

    RowLayout {
        anchors.fill: parent
        spacing: 0

        Sidebar {
            id: sidebar
            Layout.fillHeight: true
            Layout.preferredWidth: 288
            onNewChat: window.newChat()
            onOpenLibrary: libraryDialog.open()
            onExportRequested: (id, format) => exportDialog.start(id, format)
            onImportRequested: importDialog.open()
        }

        ChatView {
            id: chatView
            Layout.fillWidth: true
            Layout.fillHeight: true
            onOpenLoadPanel: { sidePanel.visible = true; sidePanel.currentIndex = 0 }
        }

        SidePanel {
            id: sidePanel
            Layout.fillHeight: true
            Layout.preferredWidth: 340
        }
    }

    // Over the chat, between the sidebar and the side panel (the row fills the window).
    GpuNotice {
        width: Math.min(720, chatView.width - 32)
        x: chatView.x + (chatView.width - width) / 2
        anchors.top: parent.top
        anchors.topMargin: 12
    }

    UndoBar {
        anchors.horizontalCenter: parent.horizontalCenter
        anchors.bottom: parent.bottom
        anchors.bottomMargin: 96
    }

    // A quantization job behind a hidden wizard: its progress, and its result, a click away.
    Button {
        id: quantizeChip
        objectName: "quantizeChip"
        property bool resultSeen: true
        anchors.top: parent.top
        anchors.topMargin: 8
        anchors.right: parent.right
        anchors.rightMargin: sidePanel.visible ? sidePanel.width + 12 : 12
        visible: !quantizeDialog.opened && (QuantizeWizard.jobs.running || !resultSeen)
        highlighted: !QuantizeWizard.jobs.running
        icon.source: "qrc:/hearth/icons/chip.svg"
        text: QuantizeWizard.jobs.running ? qsTr("Quantizing… %1 %").arg(Math.round(QuantizeWizard.jobs.fraction * 100))
                                          : qsTr("Quantization finished")
        Accessible.name: QuantizeWizard.jobs.running ? qsTr("Show the running quantization")
                                                     : qsTr("Show the result of the quantization")
        onClicked: quantizeDialog.open()
        Connections {
            target: QuantizeWizard.jobs
            function onFinished() { quantizeChip.resultSeen = quantizeDialog.opened }
            function onFailed() { quantizeChip.resultSeen = quantizeDialog.opened }
        }
        Connections {
            target: quantizeDialog
            function onOpened() { quantizeChip.resultSeen = true }
        }
    }

    ErrorDialog { id: errorDialog }
    SettingsDialog { id: settingsDialog }
    LibraryDialog {
        id: libraryDialog
        onLoadRequested: { sidePanel.visible = true; sidePanel.currentIndex = 0 }
        onQuantizeRequested: { libraryDialog.close(); quantizeDialog.open() }
    }
    QuantizeDialog {
        id: quantizeDialog
        onLoadRequested: { sidePanel.visible = true; sidePanel.currentIndex = 0 }
    }
    ExportDialog {
        id: exportDialog
        onFailed: (message) => errorDialog.show(qsTr("The conversation could not be exported."), { message: message })
    }
    ImportDialog {
        id: importDialog
        onFailed: (message) => errorDialog.show(qsTr("The conversation could not be imported."), { message: message })
    }

    Connections {
        target: EngineController
        function onFailed(failure, context) { errorDialog.show(context, failure) }
    }
    Connections {
        target: ChatSession
        function onErrorOccurred(message) { errorDialog.show(qsTr("Something went wrong."), { message: message }) }
    }
}
