// Words the quantization views share: stage names and durations, translated.
import QtQuick

QtObject {
    function stage(name) {
        switch (name) {
        case "prepare": return qsTr("Preparing")
        case "measure": return qsTr("Measuring the layers")
        case "optimize": return qsTr("Choosing a setting per layer")
        case "quantize": return qsTr("Quantizing")
        case "write": return qsTr("Writing the model")
        case "evaluate": return qsTr("Measuring quality")
        case "done": return qsTr("Done")
        }
        return name
    }

    function duration(seconds) {
        if (seconds === undefined || seconds < 0) return qsTr("unknown")
        const s = Math.round(seconds)
        if (s < 60) return qsTr("%1 s").arg(s)
        if (s < 3600) return qsTr("%1 min %2 s").arg(Math.floor(s / 60)).arg(twoDigits(s % 60))
        return qsTr("%1 h %2 min").arg(Math.floor(s / 3600)).arg(twoDigits(Math.floor(s % 3600 / 60)))
    }

    function twoDigits(n) {
        return (n < 10 ? "0" : "") + n
    }

    function bpw(value) {
        return Number(value).toLocaleString(Qt.locale(), "f", 2)
    }
}
