#include "app/desktop/shell/scripted_run.h"

#include <QCoreApplication>
#include <QImage>
#include <QQuickWindow>

#include "app/desktop/chat/chat_session.h"
#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/shell/app_runtime.h"

namespace hearth::app {

ScriptedRun::ScriptedRun(AppRuntime& runtime, QQuickWindow* window, Options options)
    : runtime_(runtime), window_(window), options_(std::move(options)) {
  timeout_.setSingleShot(true);
  timeout_.setInterval(options_.timeoutSeconds * 1000);
  connect(&timeout_, &QTimer::timeout, this,
          [this] { finish(false, QStringLiteral("timed out")); });
}

void ScriptedRun::start() {
  EngineController& engine = runtime_.engine();
  ChatSession& session = runtime_.session();
  connect(&engine, &EngineController::loadSucceeded, this, [this, &session] {
    qInfo("hearth: model loaded; sending the prompt");
    session.startNew();
    if (!session.send(options_.prompt)) finish(false, session.lastError());
  });
  connect(&engine, &EngineController::failed, this,
          [this](const QVariantMap& failure, const QString& context) {
            finish(false, context + u' ' + failure.value(QStringLiteral("message")).toString());
          });
  connect(&session, &ChatSession::answerFinished, this, [this](const QString& reason) {
    qInfo("hearth: answer finished (%s)", qPrintable(reason));
    // Give the view a moment to lay out the final text before the capture.
    QTimer::singleShot(800, this, [this] { finish(true, {}); });
  });
  timeout_.start();
  engine.load(
      {{QStringLiteral("path"), options_.model}, {QStringLiteral("device"), options_.device}});
}

void ScriptedRun::capture() {
  if (!window_ || options_.screenshot.isEmpty()) return;
  const QImage image = window_->grabWindow();
  if (image.isNull() || !image.save(options_.screenshot))
    qWarning("hearth: could not save the screenshot to %s", qPrintable(options_.screenshot));
  else
    qInfo("hearth: screenshot saved to %s (%dx%d)", qPrintable(options_.screenshot), image.width(),
          image.height());
}

void ScriptedRun::finish(bool ok, const QString& message) {
  if (done_) return;
  done_ = true;
  timeout_.stop();
  capture();
  if (!ok) qWarning("hearth: scripted run failed: %s", qPrintable(message));
  QCoreApplication::exit(ok ? 0 : 1);
}

}  // namespace hearth::app
