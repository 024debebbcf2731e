// A small line chart of tokens per second while an answer is generated.
import QtQuick
import Hearth

Canvas {
    id: chart
    property var points: []
    readonly property real peak: Math.max(1, ...points)
    implicitHeight: 90
    Accessible.role: Accessible.Chart
    Accessible.name: qsTr("Tokens per second during the answer")

    onPointsChanged: requestPaint()
    onWidthChanged: requestPaint()
    Connections {
        target: Theme
        function onDarkChanged() { chart.requestPaint() }
    }

    onPaint: {
        const ctx = getContext("2d")
        ctx.reset()
        ctx.strokeStyle = Theme.border
        ctx.lineWidth = 1
        for (let i = 0; i <= 2; ++i) {
            const y = Math.round(4 + (height - 8) * i / 2) + 0.5
            ctx.beginPath(); ctx.moveTo(0, y); ctx.lineTo(width, y); ctx.stroke()
        }
        if (points.length < 2) return
        const step = width / (points.length - 1)
        const yOf = (v) => height - 4 - (height - 8) * v / (peak * 1.1)
        ctx.beginPath()
        ctx.moveTo(0, yOf(points[0]))
        for (let i = 1; i < points.length; ++i) ctx.lineTo(i * step, yOf(points[i]))
        ctx.strokeStyle = Theme.accent
        ctx.lineWidth = 2
        ctx.stroke()
        ctx.lineTo(width, height)
        ctx.lineTo(0, height)
        ctx.closePath()
        ctx.fillStyle = Qt.rgba(Theme.accent.r, Theme.accent.g, Theme.accent.b, 0.15)
        ctx.fill()
    }
}
