// The quantization wizard: model → format → size → calibration → review → run → result. The
// steps and the job live in QuantizeWizard (C++), so closing this dialog does not stop a job;
// opening it again shows where the job is.
// Keys: Tab moves between controls, Enter (outside a text field) and Alt+Right go to the next
// step, Alt+Left to the previous one, Esc closes. Starting a job takes the Start button itself.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Dialog {
    id: dialog
    objectName: "quantizeDialog"
    signal loadRequested()

    parent: Overlay.overlay
    anchors.centerIn: parent
    width: Math.min(920, parent.width - 40)
    height: Math.min(720, parent.height - 40)
    modal: true
    title: qsTr("Quantize a model")
    closePolicy: Popup.CloseOnEscape

    readonly property int step: QuantizeWizard.step
    readonly property var pages: [sourcePage, formatPage, sizePage, calibrationPage, reviewPage, runPage, resultPage]

    function focusPage() {
        if (opened && step >= 0 && step < pages.length) pages[step].focusFirst()
    }

    onOpened: {
        QuantizeWizard.jobs.scanForJobs()
        Qt.callLater(focusPage)
    }
    onStepChanged: Qt.callLater(focusPage)

    Shortcut {
        sequences: ["Alt+Right"]
        enabled: dialog.opened
        onActivated: QuantizeWizard.next()
    }
    Shortcut {
        sequences: ["Alt+Left"]
        enabled: dialog.opened
        onActivated: QuantizeWizard.back()
    }

    contentItem: ColumnLayout {
        spacing: 12
        Keys.onReturnPressed: QuantizeWizard.next()
        Keys.onEnterPressed: QuantizeWizard.next()

        QuantizeStepBar { Layout.fillWidth: true }
        Rectangle {
            Layout.fillWidth: true
            height: 1
            color: Theme.border
        }

        StackLayout {
            id: stack
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: dialog.step
            QuantizeSourcePage { id: sourcePage }
            ScrollView {
                contentWidth: availableWidth
                function focusFirst() { formatPage.focusFirst() }
                QuantizeFormatPage { id: formatPage; width: parent.width }
            }
            ScrollView {
                contentWidth: availableWidth
                function focusFirst() { sizePage.focusFirst() }
                QuantizeSizePage { id: sizePage; width: parent.width }
            }
            ScrollView {
                contentWidth: availableWidth
                function focusFirst() { calibrationPage.focusFirst() }
                QuantizeCalibrationPage { id: calibrationPage; width: parent.width }
            }
            ScrollView {
                contentWidth: availableWidth
                function focusFirst() { reviewPage.focusFirst() }
                QuantizeReviewPage { id: reviewPage; width: parent.width }
            }
            QuantizeRunPage { id: runPage }
            ScrollView {
                contentWidth: availableWidth
                function focusFirst() { resultPage.focusFirst() }
                QuantizeResultPage { id: resultPage; width: parent.width }
            }
        }

        // Why the step cannot go on yet.
        Label {
            objectName: "stepProblem"
            Layout.fillWidth: true
            visible: dialog.step <= QuantizeWizard.Review && QuantizeWizard.stepProblem.length > 0
            wrapMode: Text.Wrap
            color: QuantizeWizard.step === QuantizeWizard.Source && QuantizeWizard.form.sourcePath.length === 0
                   ? Theme.textMuted : Theme.danger
            text: QuantizeWizard.stepProblem
        }

        RowLayout {
            Layout.fillWidth: true
            spacing: 8
            Button {
                objectName: "closeButton"
                flat: true
                text: QuantizeWizard.jobs.running ? qsTr("Hide") : qsTr("Close")
                Accessible.name: QuantizeWizard.jobs.running ? qsTr("Hide the wizard; the job goes on")
                                                             : qsTr("Close the wizard")
                onClicked: dialog.close()
            }
            Label {
                Layout.fillWidth: true
                visible: QuantizeWizard.jobs.running
                text: qsTr("The job goes on when you hide this window.")
                color: Theme.textMuted
                font.pointSize: Theme.smallFont
                elide: Text.ElideRight
            }
            Item { Layout.fillWidth: true; visible: !QuantizeWizard.jobs.running }

            // Steps before the run.
            Button {
                objectName: "backButton"
                visible: dialog.step <= QuantizeWizard.Review
                enabled: QuantizeWizard.canGoBack
                text: qsTr("Back")
                Accessible.name: qsTr("Back to the previous step")
                onClicked: QuantizeWizard.back()
            }
            Button {
                objectName: "nextButton"
                visible: dialog.step < QuantizeWizard.Review
                enabled: QuantizeWizard.canGoNext
                highlighted: true
                text: qsTr("Next")
                Accessible.name: qsTr("Go on to the next step")
                onClicked: QuantizeWizard.next()
            }
            Button {
                objectName: "startButton"
                visible: dialog.step === QuantizeWizard.Review
                enabled: QuantizeWizard.canStart
                highlighted: true
                text: qsTr("Start")
                Accessible.name: qsTr("Start quantizing")
                onClicked: QuantizeWizard.start()
            }

            // The run.
            Button {
                objectName: "cancelButton"
                visible: dialog.step === QuantizeWizard.Run && QuantizeWizard.jobs.running
                enabled: !QuantizeWizard.jobs.cancelling
                text: QuantizeWizard.jobs.cancelling ? qsTr("Stopping…") : qsTr("Stop")
                Accessible.name: qsTr("Stop the job; it can be resumed later")
                onClicked: QuantizeWizard.jobs.cancel()
            }
            Button {
                objectName: "settingsButton"
                visible: dialog.step === QuantizeWizard.Run && !QuantizeWizard.jobs.running
                text: qsTr("Back to the settings")
                Accessible.name: text
                onClicked: QuantizeWizard.back()
            }
            Button {
                objectName: "discardButton"
                visible: dialog.step === QuantizeWizard.Run && !QuantizeWizard.jobs.running && QuantizeWizard.jobs.resumable
                flat: true
                text: qsTr("Discard")
                Accessible.name: qsTr("Discard the stopped job and its intermediate files")
                onClicked: {
                    QuantizeWizard.jobs.discard()
                    QuantizeWizard.back()
                }
            }
            Button {
                objectName: "resumeButton"
                visible: dialog.step === QuantizeWizard.Run && !QuantizeWizard.jobs.running && QuantizeWizard.jobs.resumable
                highlighted: true
                text: qsTr("Resume")
                Accessible.name: qsTr("Resume the stopped job")
                onClicked: QuantizeWizard.resume()
            }

            // The result.
            Button {
                objectName: "anotherButton"
                visible: dialog.step === QuantizeWizard.Result
                text: qsTr("Quantize another")
                Accessible.name: qsTr("Start the wizard again")
                onClicked: QuantizeWizard.startOver()
            }
            Button {
                objectName: "loadNowButton"
                visible: dialog.step === QuantizeWizard.Result
                highlighted: true
                text: qsTr("Load now")
                Accessible.name: qsTr("Load the quantized model now")
                onClicked: {
                    QuantizeWizard.jobs.loadResult()
                    dialog.close()
                }
            }
        }
    }

    Connections {
        target: QuantizeWizard.jobs
        function onLoadRequested() { dialog.loadRequested() }
    }
}
