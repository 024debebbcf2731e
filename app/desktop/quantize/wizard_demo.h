// A scripted walk through the quantization wizard, for the screenshot test and demos: opens the
// wizard on a source model and saves the window at each step as <prefix>_<step>.png (source,
// format, size); with `run`, goes on with the defaults (EXL2, 4.0 bpw, a little of the built-in
// calibration set, the CPU) through calibration and review, saves <prefix>_running.png during
// the final pass and <prefix>_result.png at the end, and quits.
//   hearth --wizard-demo SOURCE [--wizard-demo-run] --screenshot PREFIX [--timeout 300]
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>

class QQuickWindow;

namespace hearth::app {

class AppRuntime;

class WizardDemo : public QObject {
  Q_OBJECT

 public:
  struct Options {
    QString source;
    QString prefix;  // screenshots: <prefix>_size.png, _running.png, _result.png
    bool run = false;
    int timeoutSeconds = 300;
  };
  WizardDemo(AppRuntime& runtime, QQuickWindow* window, Options options);
  void start();

 private:
  void capture(const QString& name);
  void finish(bool ok, const QString& message);
  void onSourceChecked();
  void onEstimate();
  void onProgress();

  AppRuntime& runtime_;
  QPointer<QQuickWindow> window_;
  Options options_;
  QTimer timeout_;
  enum class Phase { Source, Size, Running, Done } phase_ = Phase::Source;
  bool capturedRunning_ = false;
  bool done_ = false;
};

}  // namespace hearth::app
