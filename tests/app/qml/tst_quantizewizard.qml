import QtQuick
import QtQuick.Controls
import QtTest
import Hearth

// The quantization wizard's views over the real QuantizeWizard: a walk through every step with
// the keyboard and a real quantization of a tiny model, "Load now", accessible names on every
// control of every page, and the German and Chinese texts.
Item {
    id: root
    width: 1100
    height: 800

    QuantizeDialog { id: dialog }

    TestCase {
        name: "QuantizeWizard"
        when: windowShown

        function child(name) {
            const c = findChild(dialog.contentItem, name)
            verify(c !== null, "no " + name)
            return c
        }

        function openDialog() {
            if (!dialog.opened) dialog.open()
            tryCompare(dialog, "opened", true)
            QuantizeWizard.startOver()
            compare(QuantizeWizard.step, QuantizeWizard.Source)
        }

        function cleanupTestCase() { Language.apply("en") }

        function test_a_walkThroughWithTheKeyboardAndRun() {
            openDialog()
            const next = child("nextButton")
            QuantizeWizard.form.sourcePath = ""
            verify(!next.enabled)

            // Step 1: a path typed into the field, Enter (which applies it and stays).
            const field = child("sourcePathField")
            field.forceActiveFocus()
            field.selectAll()
            field.text = tinyModelPath
            keyClick(Qt.Key_Return)
            tryVerify(() => QuantizeWizard.form.sourceOk, 20000)
            verify(child("sourceSummary").text.indexOf("3 layers") >= 0, child("sourceSummary").text)
            tryVerify(() => next.enabled)
            compare(QuantizeWizard.step, QuantizeWizard.Source)

            // Step 2: Alt+Right goes on; Tab and Space choose GPTQ, Shift+Tab and Space EXL2.
            keyClick(Qt.Key_Right, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Format)
            const exl2 = child("format_exl2")
            const gptq = child("format_gptq")
            tryVerify(() => exl2.activeFocus)
            keyClick(Qt.Key_Tab)
            verify(gptq.activeFocus)
            keyClick(Qt.Key_Space)
            compare(QuantizeWizard.form.format, "gptq")
            keyClick(Qt.Key_Backtab)
            verify(exl2.activeFocus)
            keyClick(Qt.Key_Space)
            compare(QuantizeWizard.form.format, "exl2")

            // Step 3: the slider has the focus; the arrow keys move it.
            keyClick(Qt.Key_Right, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Size)
            const slider = child("bpwSlider")
            tryVerify(() => slider.activeFocus)
            QuantizeWizard.form.bpw = 4.0
            keyClick(Qt.Key_Right)
            compare(QuantizeWizard.form.bpw, 4.05)
            compare(child("bpwValue").text, "4.05 bpw")
            keyClick(Qt.Key_Left)
            compare(QuantizeWizard.form.bpw, 4.0)
            tryVerify(() => !QuantizeWizard.form.estimating && QuantizeWizard.form.estimate.valid === true, 20000)
            verify(child("sizeEstimate").text.indexOf("≈") === 0)
            verify(child("vramEstimate").text.indexOf("≈") === 0)
            // Alt+Left goes back, and forward again.
            keyClick(Qt.Key_Left, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Format)
            keyClick(Qt.Key_Right, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Size)

            // Step 4: little calibration text, for speed.
            keyClick(Qt.Key_Right, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Calibration)
            tryVerify(() => child("builtinCalibration").activeFocus)
            QuantizeWizard.form.calibrationRows = 3
            QuantizeWizard.form.calibrationLength = 48

            // Step 5: the output folder typed in; start with Alt+Right.
            keyClick(Qt.Key_Right, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Review)
            const output = child("outputField")
            tryVerify(() => output.activeFocus)
            output.selectAll()
            output.text = scratchDir + "/tiny-view-exl2"
            keyClick(Qt.Key_Return)
            compare(QuantizeWizard.form.outputPath, scratchDir + "/tiny-view-exl2")
            compare(QuantizeWizard.step, QuantizeWizard.Review)
            mouseClick(child("deviceCpu"))
            compare(QuantizeWizard.form.device, "cpu")
            verify(child("deviceNotice").text.length > 0)
            QuantizeWizard.form.evaluationTokens = 400
            const start = child("startButton")
            verify(start.enabled, QuantizeWizard.stepProblem)
            // Alt+Right does not start a job: only the Start button does (Tab to it, Space).
            keyClick(Qt.Key_Right, Qt.AltModifier)
            compare(QuantizeWizard.step, QuantizeWizard.Review)
            start.forceActiveFocus()
            keyClick(Qt.Key_Space)

            // Step 6: the run, then the result.
            compare(QuantizeWizard.step, QuantizeWizard.Run)
            verify(child("cancelButton").visible)
            tryCompare(QuantizeWizard, "step", QuantizeWizard.Result, 120000)
            verify(child("resultHeading").text.indexOf("tiny-view-exl2") >= 0)
            verify(child("resultSize").text.length > 0)
            verify(child("resultPerplexity").visible)
            verify(child("resultKl").text.length > 0)
            compare(child("resultPath").text, QuantizeWizard.jobs.result.output)

            // "Load now": loaded by the engine, the dialog closes.
            mouseClick(child("loadNowButton"))
            tryCompare(dialog, "opened", false)
            tryCompare(EngineController, "state", EngineController.Ready, 60000)
            compare(EngineController.model.path, QuantizeWizard.jobs.result.output)
            compare(AppSettings.lastModel, QuantizeWizard.jobs.result.output)
            EngineController.unload()
            tryCompare(EngineController, "state", EngineController.Empty, 20000)
        }

        // Every control a keyboard can reach, on every page, has a name for screen readers.
        function test_b_everyControlHasAnAccessibleName() {
            openDialog()
            const unnamed = []
            let controls = 0
            const seen = new Set()
            function walk(item) {
                if (!item || seen.has(item)) return
                seen.add(item)
                const focusable = item.activeFocusOnTab === true
                                  || (item.focusPolicy !== undefined && (item.focusPolicy & Qt.TabFocus))
                if (focusable && item.objectName !== "") controls++
                if (focusable) {
                    // An editable SpinBox's text input speaks for the SpinBox.
                    const owner = item.parent && item.parent.contentItem === item ? item.parent : null
                    const name = item.Accessible.name || (owner ? owner.Accessible.name : "")
                    if (!name || name.length === 0)
                        unnamed.push((item.objectName || String(item)) + " text=" + item.text)
                    return  // a control's own parts are its business
                }
                const kids = item.children || []
                for (let i = 0; i < kids.length; ++i) walk(kids[i])
                if (item.contentItem) walk(item.contentItem)
            }
            walk(dialog.contentItem)
            verify(controls >= 20, "only " + controls + " named controls found")
            compare(unnamed.join("; "), "")
        }

        function test_c_translations() {
            openDialog()
            const next = child("nextButton")
            const start = child("startButton")
            verify(Language.apply("de"))
            compare(next.text, "Weiter")
            compare(start.text, "Starten")
            verify(Language.apply("zh_CN"))
            compare(next.text, "下一步")
            compare(start.text, "开始")
            verify(Language.apply("en"))
            compare(next.text, "Next")
        }
    }
}
