// Hearth's desktop program: a Qt Quick window over the engine. See app_runtime.h for what it is
// made of and scripted_run.h for the command-line scripted session.
#include <QtQml/qqmlextensionplugin.h>
#include <QCommandLineParser>
#include <QGuiApplication>
#include <QIcon>
#include <QQmlApplicationEngine>
#include <QQuickStyle>
#include <QQuickWindow>

Q_IMPORT_QML_PLUGIN(HearthPlugin)

#include "app/desktop/engine/adapter_list.h"
#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/library/model_library.h"
#include "app/desktop/quantize/wizard_demo.h"
#include "app/desktop/settings/app_settings.h"
#include "app/desktop/settings/language_manager.h"
#include "app/desktop/shell/app_runtime.h"
#include "app/desktop/shell/scripted_run.h"

using namespace hearth::app;

int main(int argc, char** argv) {
  QCoreApplication::setApplicationName(QStringLiteral("hearth"));
  QCoreApplication::setApplicationVersion(QStringLiteral(HEARTH_VERSION));
  QGuiApplication::setApplicationDisplayName(QStringLiteral("Hearth"));
  QGuiApplication::setDesktopFileName(QStringLiteral("hearth"));
  QGuiApplication app(argc, argv);
  QGuiApplication::setWindowIcon(QIcon(QStringLiteral(":/hearth/hearth.svg")));
  QQuickStyle::setStyle(QStringLiteral("Material"));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      QCoreApplication::translate("main", "Run large language models on your own computer."));
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption model(QStringLiteral("model"),
                                 QCoreApplication::translate("main", "Load this model at start."),
                                 QStringLiteral("path"));
  const QCommandLineOption prompt(
      QStringLiteral("prompt"),
      QCoreApplication::translate("main", "Send this message once the model is loaded."),
      QStringLiteral("text"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QCoreApplication::translate("main",
                                  "After the answer, save the window to this PNG and quit."),
      QStringLiteral("file"));
  const QCommandLineOption device(QStringLiteral("device"),
                                  QCoreApplication::translate("main", "cpu or gpu."),
                                  QStringLiteral("device"), QStringLiteral("cpu"));
  const QCommandLineOption timeout(
      QStringLiteral("timeout"),
      QCoreApplication::translate("main", "Seconds the scripted session may take."),
      QStringLiteral("seconds"), QStringLiteral("300"));
  const QCommandLineOption wizardDemo(
      QStringLiteral("wizard-demo"),
      QCoreApplication::translate("main",
                                  "Open the quantization wizard on this model, save screenshots "
                                  "named after --screenshot and quit."),
      QStringLiteral("path"));
  const QCommandLineOption wizardDemoRun(
      QStringLiteral("wizard-demo-run"),
      QCoreApplication::translate("main", "With --wizard-demo: also quantize, to the result."));
  parser.addOptions({model, prompt, screenshot, device, timeout, wizardDemo, wizardDemoRun});
  parser.process(app);

  AppRuntime runtime;
  QQmlApplicationEngine engine;
  runtime.attach(&engine);
  engine.addImportPath(QStringLiteral("qrc:/qt/qml"));
  runtime.language().apply(runtime.settings().language());
  engine.setInitialProperties({{QStringLiteral("startupError"), runtime.storeError()}});
  QObject::connect(
      &engine, &QQmlApplicationEngine::objectCreationFailed, &app,
      [] { QCoreApplication::exit(1); }, Qt::QueuedConnection);
  engine.load(QUrl(QStringLiteral("qrc:/qt/qml/Hearth/Main.qml")));
  if (engine.rootObjects().isEmpty()) return 1;
  runtime.library().rescan();
  runtime.adapters().rescan();

  std::unique_ptr<ScriptedRun> scripted;
  std::unique_ptr<WizardDemo> demo;
  if (parser.isSet(wizardDemo)) {
    WizardDemo::Options o;
    o.source = parser.value(wizardDemo);
    o.prefix = parser.value(screenshot);
    o.run = parser.isSet(wizardDemoRun);
    o.timeoutSeconds = parser.value(timeout).toInt();
    demo = std::make_unique<WizardDemo>(
        runtime, qobject_cast<QQuickWindow*>(engine.rootObjects().first()), o);
    demo->start();
  } else if (parser.isSet(model) && parser.isSet(prompt)) {
    ScriptedRun::Options o;
    o.model = parser.value(model);
    o.prompt = parser.value(prompt);
    o.screenshot = parser.value(screenshot);
    o.device = parser.value(device);
    o.timeoutSeconds = parser.value(timeout).toInt();
    scripted = std::make_unique<ScriptedRun>(
        runtime, qobject_cast<QQuickWindow*>(engine.rootObjects().first()), o);
    scripted->start();
  } else if (parser.isSet(model)) {
    runtime.engine().load({{QStringLiteral("path"), parser.value(model)},
                           {QStringLiteral("device"), parser.value(device)}});
  }
  const int rc = app.exec();
  demo.reset();
  scripted.reset();
  return rc;
}
