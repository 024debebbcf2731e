// Qt Quick Test runner for the views: the Hearth QML module with a real AppRuntime on temporary
// files (history database, settings), the default model imported into its library, a tiny
// synthetic model for the quantization wizard, and the LoRA fixtures with a broken adapter for
// the Adapters tab.
#include <QtQml/qqmlextensionplugin.h>
#include <QtQuickTest/quicktest.h>
#include <QDir>
#include <QFile>
#include <QQmlContext>
#include <QQmlEngine>
#include <QQuickStyle>
#include <QTemporaryDir>
#include <memory>

#include "app/desktop/settings/app_settings.h"
#include "app/desktop/shell/app_runtime.h"
#include "app/desktop/store/chat_store.h"
#include "tests/common/test_paths.h"
#include "tests/unit/quantizer/quantizer_test_model.h"

Q_IMPORT_QML_PLUGIN(HearthPlugin)

class Setup : public QObject {
  Q_OBJECT

 public:
  Setup() { QQuickStyle::setStyle(QStringLiteral("Material")); }

 public slots:
  void applicationAvailable() {
    runtime_ = std::make_unique<hearth::app::AppRuntime>(
        hearth::app::AppRuntime::Paths{dir_.filePath(QStringLiteral("history.sqlite")),
                                       dir_.filePath(QStringLiteral("settings.ini"))});
    auto& settings = runtime_->settings();
    settings.setImportedModels({QString::fromStdString(hearth::test::test_model().string())});
    settings.setLanguage(QStringLiteral("en"));
    settings.setTheme(QStringLiteral("light"));
    // A tiny synthetic model for the quantization wizard's views to quantize for real.
    hearth::quantizer::test::TinySpec tiny;
    tiny.layers = 3;
    tiny.tied = false;
    hearth::quantizer::test::write_tiny_model(dir_.filePath(QStringLiteral("tiny")).toStdString(),
                                              tiny);
    // An adapter folder whose weights are missing: the Adapters tab must say so.
    QDir(dir_.path()).mkpath(QStringLiteral("broken_adapter"));
    QFile config(dir_.filePath(QStringLiteral("broken_adapter/adapter_config.json")));
    if (config.open(QIODevice::WriteOnly))
      config.write(R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16,
                       "target_modules": ["q_proj", "v_proj"]})");
  }

  void qmlEngineAvailable(QQmlEngine* engine) {
    engine->addImportPath(QStringLiteral("qrc:/qt/qml"));
    runtime_->attach(engine);
    engine->rootContext()->setContextProperty(
        QStringLiteral("testModelPath"),
        QString::fromStdString(hearth::test::test_model().string()));
    engine->rootContext()->setContextProperty(QStringLiteral("tinyModelPath"),
                                              dir_.filePath(QStringLiteral("tiny")));
    engine->rootContext()->setContextProperty(QStringLiteral("scratchDir"), dir_.path());
    engine->rootContext()->setContextProperty(QStringLiteral("loraFixturesDir"),
                                              QStringLiteral(HEARTH_FIXTURES_DIR "/lora"));
    engine->rootContext()->setContextProperty(QStringLiteral("brokenAdapterPath"),
                                              dir_.filePath(QStringLiteral("broken_adapter")));
    engine->rootContext()->setContextProperty(
        QStringLiteral("codeConversationUrl"),
        QUrl::fromLocalFile(
            QStringLiteral(HEARTH_FIXTURES_DIR "/app/conversation_with_code.json")));
  }

  void cleanupTestCase() { runtime_.reset(); }

 private:
  QTemporaryDir dir_;
  std::unique_ptr<hearth::app::AppRuntime> runtime_;
};

QUICK_TEST_MAIN_WITH_SETUP(hearth_views, Setup)
#include "quick_test_main.moc"
