// Colours, spacing and type for the whole app; light or dark from the settings (or the system).
pragma Singleton
import QtQuick
import Hearth

QtObject {
    readonly property bool dark: AppSettings.theme === "dark"
                                 || (AppSettings.theme === "system" && Ui.systemPrefersDark)

    readonly property color accent: "#e2692f"
    readonly property color accentSoft: dark ? "#4a2f22" : "#fde6d8"
    readonly property color background: dark ? "#1b1a19" : "#faf8f6"
    readonly property color surface: dark ? "#242322" : "#ffffff"
    readonly property color surfaceAlt: dark ? "#2d2b29" : "#f2eeea"
    readonly property color sidebar: dark ? "#201f1e" : "#f4f1ee"
    readonly property color border: dark ? "#3a3735" : "#e3ddd7"
    readonly property color text: dark ? "#ece8e4" : "#23201e"
    readonly property color textMuted: dark ? "#a39d97" : "#6f6862"
    readonly property color userBubble: dark ? "#3a2c25" : "#fbeadf"
    readonly property color codeBackground: dark ? "#151414" : "#f5f2ef"
    readonly property color codeHeader: dark ? "#2a2827" : "#ebe5df"
    readonly property color danger: dark ? "#ef7a6f" : "#c0392b"
    readonly property color success: dark ? "#7fc77a" : "#2e7d32"
    readonly property color weights: "#e2692f"
    readonly property color cache: "#3d8bd4"
    readonly property color activations: "#8e6bd1"
    readonly property color workspace: "#c9a227"
    readonly property color adapters: "#3f9e8f"
    readonly property color free: dark ? "#3a3735" : "#e3ddd7"

    readonly property int fontSize: AppSettings.fontSize
    readonly property int smallFont: Math.max(8, fontSize - 2)
    readonly property int titleFont: fontSize + 4
    readonly property string monoFamily: "DejaVu Sans Mono"
    readonly property int radius: 10
    readonly property int spacing: 12
}
