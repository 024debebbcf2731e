// Step 1: the model to quantize — from the library, or a folder or GGUF file chosen here — and
// interrupted jobs that can be resumed instead.
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Hearth

ColumnLayout {
    id: page
    spacing: 10

    function focusFirst() {
        if (candidates.count > 0) candidates.forceActiveFocus()
        else pathField.forceActiveFocus()
    }

    Label {
        Layout.fillWidth: true
        text: qsTr("Which model do you want to quantize?")
        font.pointSize: Theme.titleFont
        color: Theme.text
        wrapMode: Text.Wrap
    }
    Label {
        Layout.fillWidth: true
        wrapMode: Text.Wrap
        color: Theme.textMuted
        text: qsTr("An unquantized model: a folder in the Hugging Face layout (config.json with fp16, bf16 or fp32 safetensors) or a GGUF file.")
    }

    Label {
        visible: QuantizeWizard.jobs.interruptedJobs.length > 0
        text: qsTr("Interrupted jobs")
        font.bold: true
        color: Theme.text
    }
    QuantizeJobList {
        Layout.fillWidth: true
        visible: QuantizeWizard.jobs.interruptedJobs.length > 0
        jobs: QuantizeWizard.jobs.interruptedJobs
    }

    Label {
        text: qsTr("From the library")
        font.bold: true
        color: Theme.text
    }
    ListView {
        id: candidates
        objectName: "sourceList"
        Layout.fillWidth: true
        Layout.fillHeight: true
        Layout.minimumHeight: 80
        clip: true
        spacing: 4
        model: QuantizeWizard.form.sourceCandidates
        activeFocusOnTab: true
        keyNavigationEnabled: true
        currentIndex: -1
        ScrollBar.vertical: ScrollBar {}
        Accessible.role: Accessible.List
        Accessible.name: qsTr("Models in the library that can be quantized")
        onActiveFocusChanged: if (activeFocus && currentIndex < 0 && count > 0) currentIndex = 0
        Keys.onSpacePressed: if (currentItem) QuantizeWizard.form.sourcePath = currentItem.path
        Keys.onReturnPressed: (event) => {
            if (currentItem && QuantizeWizard.form.sourcePath !== currentItem.path) QuantizeWizard.form.sourcePath = currentItem.path
            else event.accepted = false
        }

        delegate: ItemDelegate {
            id: entry
            required property var modelData
            required property int index
            readonly property string path: modelData.path
            width: ListView.view.width
            highlighted: ListView.isCurrentItem && candidates.activeFocus
            checkable: true
            checked: modelData.path === QuantizeWizard.form.sourcePath
            focusPolicy: Qt.NoFocus
            Accessible.role: Accessible.RadioButton
            Accessible.name: qsTr("%1, %2, %3 parameters").arg(modelData.name).arg(modelData.format.toUpperCase())
                             .arg(Ui.formatCount(modelData.parameters))
            Accessible.checked: checked
            onClicked: { candidates.currentIndex = index; QuantizeWizard.form.sourcePath = modelData.path }
            contentItem: RowLayout {
                spacing: 10
                Rectangle {
                    width: 14
                    height: 14
                    radius: 7
                    border.color: entry.checked ? Theme.accent : Theme.textMuted
                    border.width: 2
                    color: "transparent"
                    Rectangle {
                        anchors.centerIn: parent
                        width: 6
                        height: 6
                        radius: 3
                        color: Theme.accent
                        visible: entry.checked
                    }
                }
                ColumnLayout {
                    Layout.fillWidth: true
                    spacing: 0
                    Label {
                        Layout.fillWidth: true
                        text: entry.modelData.name
                        font.bold: entry.checked
                        color: Theme.text
                        elide: Text.ElideRight
                    }
                    Label {
                        Layout.fillWidth: true
                        text: qsTr("%1 · %2 parameters · %3").arg(entry.modelData.format.toUpperCase())
                                  .arg(Ui.formatCount(entry.modelData.parameters)).arg(Ui.formatBytes(entry.modelData.fileBytes))
                              + (entry.modelData.quantized ? " · " + qsTr("already quantized GGUF") : "")
                        color: Theme.textMuted
                        font.pointSize: Theme.smallFont
                        elide: Text.ElideRight
                    }
                }
            }
        }

        Label {
            anchors.centerIn: parent
            width: parent.width - 20
            visible: candidates.count === 0
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            color: Theme.textMuted
            text: ModelLibrary.scanning ? qsTr("Looking for models…")
                                        : qsTr("The library has no fp16 or GGUF models. Choose a folder or a file below.")
        }
    }

    Label {
        text: qsTr("Or a folder or file")
        font.bold: true
        color: Theme.text
    }
    RowLayout {
        Layout.fillWidth: true
        TextField {
            id: pathField
            objectName: "sourcePathField"
            Layout.fillWidth: true
            placeholderText: qsTr("Path to a model folder or a .gguf file")
            text: QuantizeWizard.form.sourcePath
            selectByMouse: true
            Accessible.name: qsTr("Path of the model to quantize")
            // Enter applies the text here; it does not go on to the next step.
            Keys.onReturnPressed: QuantizeWizard.form.sourcePath = text
            Keys.onEnterPressed: QuantizeWizard.form.sourcePath = text
            onEditingFinished: if (text !== QuantizeWizard.form.sourcePath) QuantizeWizard.form.sourcePath = text
        }
        Button {
            text: qsTr("Folder…")
            icon.source: "qrc:/hearth/icons/folder.svg"
            Accessible.name: qsTr("Choose a model folder")
            onClicked: folderDialog.open()
        }
        Button {
            text: qsTr("GGUF file…")
            icon.source: "qrc:/hearth/icons/download.svg"
            Accessible.name: qsTr("Choose a GGUF file")
            onClicked: fileDialog.open()
        }
    }

    // What the chosen model is, or why it cannot be used.
    RowLayout {
        Layout.fillWidth: true
        visible: QuantizeWizard.form.sourcePath.length > 0
        BusyIndicator {
            running: QuantizeWizard.form.sourceChecking
            visible: running
            implicitWidth: 24
            implicitHeight: 24
            Accessible.name: qsTr("Reading the model")
        }
        Label {
            objectName: "sourceSummary"
            Layout.fillWidth: true
            wrapMode: Text.Wrap
            color: QuantizeWizard.form.sourceError.length > 0 ? Theme.danger : Theme.text
            text: {
                if (QuantizeWizard.form.sourceChecking) return qsTr("Reading the model…")
                if (QuantizeWizard.form.sourceError.length > 0) return QuantizeWizard.form.sourceError
                const s = QuantizeWizard.form.sourceInfo
                if (!s.name) return ""
                return qsTr("%1 · %2 · %3 parameters · %4 layers · trained for %5 tokens · %6 on disk")
                    .arg(s.name).arg(s.format.toUpperCase()).arg(Ui.formatCount(s.parameters))
                    .arg(s.layers).arg(s.contextLength).arg(Ui.formatBytes(s.fileBytes))
            }
        }
    }
    Label {
        Layout.fillWidth: true
        visible: QuantizeWizard.form.sourceNote.length > 0 && !QuantizeWizard.form.sourceChecking
        wrapMode: Text.Wrap
        color: Theme.textMuted
        font.pointSize: Theme.smallFont
        text: QuantizeWizard.form.sourceNote
    }

    FolderDialog {
        id: folderDialog
        title: qsTr("Choose a model folder")
        onAccepted: QuantizeWizard.form.chooseSource(selectedFolder)
    }
    FileDialog {
        id: fileDialog
        title: qsTr("Choose a GGUF file")
        nameFilters: [qsTr("GGUF models (*.gguf)")]
        onAccepted: QuantizeWizard.form.chooseSource(selectedFile)
    }
}
