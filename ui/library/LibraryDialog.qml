// The model library: every model found in the model folders or imported, with format, size,
// parameters, bits per weight and context length; import, remove, folders, and load.
import QtQuick
import QtQuick.Controls
import QtQuick.Dialogs
import QtQuick.Layouts
import Hearth

Dialog {
    id: dialog
    signal loadRequested()
    signal quantizeRequested()

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(860, parent.width - 60)
    height: Math.min(640, parent.height - 60)
    modal: true
    title: qsTr("Model library")
    standardButtons: Dialog.Close
    onOpened: ModelLibrary.rescan()

    ColumnLayout {
        anchors.fill: parent
        spacing: 10

        RowLayout {
            Layout.fillWidth: true
            Button {
                text: qsTr("Import a GGUF file…")
                icon.source: "qrc:/hearth/icons/download.svg"
                onClicked: fileDialog.open()
            }
            Button {
                text: qsTr("Import a model folder…")
                icon.source: "qrc:/hearth/icons/folder.svg"
                onClicked: { folderDialog.addAsFolder = false; folderDialog.open() }
            }
            Item { Layout.fillWidth: true }
            BusyIndicator {
                running: ModelLibrary.scanning
                visible: running
                implicitWidth: 32
                implicitHeight: 32
                Accessible.name: qsTr("Looking for models")
            }
            IconButton {
                iconName: "refresh"
                tip: qsTr("Look for models again")
                onClicked: ModelLibrary.rescan()
            }
            Button {
                objectName: "quantizeButton"
                text: QuantizeWizard.jobs.running
                      ? qsTr("Quantizing… %1 %").arg(Math.round(QuantizeWizard.jobs.fraction * 100))
                      : qsTr("Quantize…")
                icon.source: "qrc:/hearth/icons/chip.svg"
                Accessible.name: QuantizeWizard.jobs.running ? qsTr("Show the running quantization")
                                                             : qsTr("Quantize a model")
                onClicked: dialog.quantizeRequested()
            }
        }

        ListView {
            id: list
            Layout.fillWidth: true
            Layout.fillHeight: true
            clip: true
            model: ModelLibrary
            spacing: 6
            ScrollBar.vertical: ScrollBar {}
            Accessible.role: Accessible.List
            Accessible.name: qsTr("Models")

            delegate: Rectangle {
                id: item
                required property string path
                required property string name
                required property string format
                required property var parameters
                required property real bitsPerWeight
                required property real fileBytes
                required property var contextLength
                required property string storedTypes
                required property string error
                width: ListView.view.width
                height: info.implicitHeight + 20
                radius: 8
                color: Theme.surface
                border.color: path === EngineController.model.path ? Theme.accent : Theme.border
                Accessible.role: Accessible.ListItem
                Accessible.name: name

                RowLayout {
                    id: info
                    anchors.fill: parent
                    anchors.margins: 10
                    spacing: 12
                    ColumnLayout {
                        Layout.fillWidth: true
                        spacing: 2
                        Label {
                            text: item.name
                            font.bold: true
                            color: Theme.text
                            elide: Text.ElideRight
                            Layout.fillWidth: true
                        }
                        Label {
                            Layout.fillWidth: true
                            color: item.error ? Theme.danger : Theme.textMuted
                            font.pointSize: Theme.smallFont
                            wrapMode: Text.Wrap
                            text: item.error
                                  ? item.error
                                  : qsTr("%1 · %2 parameters · %3 bits per weight · %4 · context %5")
                                        .arg(item.format.toUpperCase()).arg(Ui.formatCount(item.parameters))
                                        .arg(Ui.formatNumber(item.bitsPerWeight, 2))
                                        .arg(Ui.formatBytes(item.fileBytes)).arg(item.contextLength)
                        }
                        Label {
                            Layout.fillWidth: true
                            text: item.path
                            color: Theme.textMuted
                            font.pointSize: Theme.smallFont
                            elide: Text.ElideMiddle
                        }
                    }
                    Button {
                        text: qsTr("Use")
                        enabled: !item.error
                        highlighted: true
                        Accessible.name: qsTr("Use %1").arg(item.name)
                        onClicked: {
                            AppSettings.lastModel = item.path
                            dialog.loadRequested()
                            dialog.close()
                        }
                    }
                    IconButton {
                        iconName: "trash"
                        tip: qsTr("Remove %1 from the library (the files stay on disk)").arg(item.name)
                        onClicked: ModelLibrary.removeModel(item.path)
                    }
                }
            }

            Label {
                anchors.centerIn: parent
                width: parent.width - 40
                visible: list.count === 0 && !ModelLibrary.scanning
                horizontalAlignment: Text.AlignHCenter
                wrapMode: Text.Wrap
                color: Theme.textMuted
                text: qsTr("No models yet. Put GGUF files or model folders into %1, add a folder below, or import a model.").arg(AppSettings.modelsFolder())
            }
        }

        Label {
            text: qsTr("Folders")
            font.bold: true
            color: Theme.text
        }
        Repeater {
            model: ModelLibrary.folders
            RowLayout {
                required property string modelData
                required property int index
                Layout.fillWidth: true
                Label {
                    Layout.fillWidth: true
                    text: index === 0 ? qsTr("%1 (default)").arg(modelData) : modelData
                    color: Theme.text
                    elide: Text.ElideMiddle
                }
                IconButton {
                    visible: index > 0
                    iconName: "close"
                    tip: qsTr("Stop looking in %1").arg(modelData)
                    onClicked: ModelLibrary.removeFolder(modelData)
                }
            }
        }
        Button {
            flat: true
            text: qsTr("Add a folder…")
            icon.source: "qrc:/hearth/icons/plus.svg"
            onClicked: { folderDialog.addAsFolder = true; folderDialog.open() }
        }
    }

    FileDialog {
        id: fileDialog
        title: qsTr("Import a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)")]
        onAccepted: {
            const problem = ModelLibrary.importModel(selectedFile)
            if (problem.length > 0) importError.show(qsTr("This model cannot be imported."), { message: problem })
        }
    }
    FolderDialog {
        id: folderDialog
        property bool addAsFolder: false
        title: addAsFolder ? qsTr("Add a folder of models") : qsTr("Import a model folder")
        onAccepted: {
            if (addAsFolder) {
                ModelLibrary.addFolder(selectedFolder)
            } else {
                const problem = ModelLibrary.importModel(selectedFolder)
                if (problem.length > 0) importError.show(qsTr("This model cannot be imported."), { message: problem })
            }
        }
    }
    ErrorDialog { id: importError }
}
