import QtQuick
import QtQuick.Controls
import QtTest
import Hearth

// The settings dialog's local server section over the real LocalServer and EngineController:
// the port field, the generated, shown and copied API key, the switch, the status in words as a
// model comes and goes, the address (copied, the port the system picked), the request count after
// a real request, and the German texts.
Item {
    width: 800
    height: 800

    SettingsDialog { id: dialog }

    TestCase {
        name: "SettingsLocalServer"
        when: windowShown

        function child(name) {
            const c = findChild(dialog.contentItem, name)
            verify(c !== null, "no " + name)
            return c
        }

        function typeInto(field, text) {
            field.forceActiveFocus()
            field.selectAll()
            keyClick(Qt.Key_Delete)
            for (const ch of text) keyClick(ch)
            keyClick(Qt.Key_Return)
        }

        function initTestCase() {
            // No model: the server has none to serve.
            if (EngineController.state !== EngineController.Empty) {
                EngineController.unload()
                tryCompare(EngineController, "state", EngineController.Empty, 20000)
            }
            dialog.open()
            tryCompare(dialog, "opened", true)
            child("settingsTabs").currentIndex = 3
        }

        function cleanupTestCase() {
            Language.apply("en")
            LocalServer.enabled = false
            LocalServer.apiKey = ""
            LocalServer.port = 8080
            EngineController.unload()
            tryCompare(EngineController, "state", EngineController.Empty, 20000)
            dialog.close()
        }

        function test_a_portAndKey() {
            const port = child("serverPortField")
            compare(port.text, "8080")
            typeInto(port, "9123")
            compare(LocalServer.port, 9123)
            compare(AppSettings.serverPort, 9123)
            compare(child("serverUrlField").text, "http://127.0.0.1:9123/v1")
            // A port of the system's (below 1024) is not taken.
            typeInto(port, "80")
            compare(LocalServer.port, 9123)

            const key = child("apiKeyField")
            compare(key.text, "")
            verify(!child("copyKeyButton").enabled)
            compare(key.echoMode, TextInput.Password)
            mouseClick(child("generateKeyButton"))
            verify(/^[0-9a-f]{64}$/.test(LocalServer.apiKey), LocalServer.apiKey)
            compare(key.text, LocalServer.apiKey)
            compare(AppSettings.serverApiKey, LocalServer.apiKey)
            const first = LocalServer.apiKey
            mouseClick(child("generateKeyButton"))
            verify(LocalServer.apiKey !== first)
            mouseClick(child("copyKeyButton"))
            compare(Ui.clipboardText(), LocalServer.apiKey)
            mouseClick(child("showKeyBox"))
            compare(key.echoMode, TextInput.Normal)
            // A key typed by hand; empty again: no key.
            typeInto(key, "my-key")
            compare(LocalServer.apiKey, "my-key")
            typeInto(key, "")
            compare(LocalServer.apiKey, "")
        }

        function test_b_statusFollowsTheModel() {
            LocalServer.port = 0  // the system picks a free port
            const status = child("serverStatus")
            compare(status.text, "Off.")
            verify(!child("serverRequests").visible)
            const toggle = child("serverSwitch")
            verify(toggle.enabled)
            mouseClick(toggle)
            verify(LocalServer.enabled)
            verify(AppSettings.serverEnabled)
            tryCompare(LocalServer, "status", LocalServer.WaitingForModel)
            compare(status.text, "Waiting for a model: the server starts when a model is loaded.")

            EngineController.load({ path: tinyModelPath, device: "cpu", maxSeqLen: 256 })
            tryCompare(LocalServer, "status", LocalServer.Running, 30000)
            compare(status.text, "Running: serving tiny.")
            const url = child("serverUrlField").text
            verify(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*\/v1$/.test(url), url)
            mouseClick(child("copyUrlButton"))
            compare(Ui.clipboardText(), url)

            // A real request: the count shows it within a second or so.
            const requests = child("serverRequests")
            verify(requests.visible)
            compare(requests.text, "Requests running: 0 · answered: 0")
            const xhr = new XMLHttpRequest()
            xhr.open("GET", url + "/models")
            xhr.send()
            tryVerify(() => xhr.readyState === XMLHttpRequest.DONE, 10000)
            compare(xhr.status, 200)
            compare(JSON.parse(xhr.responseText).data[0].id, "tiny")
            tryCompare(requests, "text", "Requests running: 0 · answered: 1", 5000)

            Language.apply("de")
            compare(status.text, "Läuft: stellt tiny bereit.")
            Language.apply("en")

            EngineController.unload()
            tryCompare(LocalServer, "status", LocalServer.WaitingForModel, 20000)
            mouseClick(toggle)
            tryCompare(LocalServer, "status", LocalServer.Off)
            verify(!AppSettings.serverEnabled)
            compare(status.text, "Off.")
        }
    }
}
