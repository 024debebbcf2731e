// The right-hand panel: loading a model, live performance, and adapters.
import QtQuick
import QtQuick.Controls
import QtQuick.Layouts
import Hearth

Rectangle {
    id: panel
    property alias currentIndex: tabs.currentIndex
    color: Theme.sidebar
    Accessible.role: Accessible.Pane
    Accessible.name: qsTr("Model and performance")

    Rectangle {
        anchors.left: parent.left
        width: 1
        height: parent.height
        color: Theme.border
    }

    ColumnLayout {
        anchors.fill: parent
        anchors.leftMargin: 1
        spacing: 0
        TabBar {
            id: tabs
            Layout.fillWidth: true
            background: Rectangle { color: Theme.sidebar }
            TabButton {
                text: qsTr("Model")
                Accessible.name: qsTr("Load a model")
            }
            TabButton {
                text: qsTr("Live")
                Accessible.name: qsTr("Memory and speed")
            }
            TabButton {
                text: qsTr("Adapters")
                Accessible.name: qsTr("LoRA adapters")
            }
        }
        StackLayout {
            Layout.fillWidth: true
            Layout.fillHeight: true
            currentIndex: tabs.currentIndex
            ScrollView {
                contentWidth: availableWidth
                LoadPanel { width: parent.width }
            }
            ScrollView {
                contentWidth: availableWidth
                LivePanel { width: parent.width }
            }
            ScrollView {
                contentWidth: availableWidth
                AdapterPanel { width: parent.width }
            }
        }
    }
}
