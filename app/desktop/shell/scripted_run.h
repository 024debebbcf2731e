// A scripted session for demos and the screenshot test: load a model, send one message, wait
// for the whole answer, save the window as a PNG and quit. Driven from the command line:
//   hearth --model M.gguf --prompt "Hello" --screenshot out.png [--device cpu] [--timeout 300]
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

class QQuickWindow;

namespace hearth::app {

class AppRuntime;

class ScriptedRun : public QObject {
  Q_OBJECT

 public:
  struct Options {
    QString model;
    QString prompt;
    QString screenshot;
    QString device = QStringLiteral("cpu");
    int timeoutSeconds = 300;
  };
  ScriptedRun(AppRuntime& runtime, QQuickWindow* window, Options options);
  void start();

 private:
  void finish(bool ok, const QString& message);
  void capture();

  AppRuntime& runtime_;
  QPointer<QQuickWindow> window_;
  Options options_;
  QTimer timeout_;
  bool done_ = false;
};

}  // namespace hearth::app
