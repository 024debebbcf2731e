import QtQuick
import QtTest
import Hearth

Item {
    width: 900
    height: 400

    GpuNotice {
        id: notice
        width: 700
    }

    TestCase {
        name: "GpuNotice"
        when: windowShown

        // Without a usable GPU the reason is shown until dismissed, and again only for a
        // different reason; with one, never.
        function test_shownOncePerReason() {
            if (EngineController.cudaAvailable) {
                AppSettings.gpuNoticeSeen = ""
                verify(!notice.visible)
                return
            }
            verify(EngineController.gpuStatus.length > 0)
            AppSettings.gpuNoticeSeen = ""
            verify(notice.visible)
            const button = findChild(notice, "gpuNoticeOk")
            verify(button !== null, "no OK button")
            mouseClick(button)
            compare(AppSettings.gpuNoticeSeen, EngineController.gpuStatus)
            verify(!notice.visible)
            AppSettings.gpuNoticeSeen = "No NVIDIA driver was found (an earlier reason)."
            verify(notice.visible)
            AppSettings.gpuNoticeSeen = EngineController.gpuStatus
        }
    }
}
