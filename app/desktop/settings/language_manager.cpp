#include "app/desktop/settings/language_manager.h"

#include <QCoreApplication>
#include <QJSEngine>
#include <QLocale>
#include <QQmlEngine>

namespace hearth::app {

namespace {

LanguageManager* g_instance = nullptr;
const char* const kShipped[] = {"de", "zh_CN"};

}  // namespace

LanguageManager::LanguageManager(QObject* parent) : QObject(parent) {
  if (!g_instance) g_instance = this;
}

LanguageManager::~LanguageManager() {
  if (translator_) QCoreApplication::removeTranslator(translator_.get());
  if (g_instance == this) g_instance = nullptr;
}

LanguageManager* LanguageManager::create(QQmlEngine* engine, QJSEngine*) {
  LanguageManager* m = instance();
  if (!m->engine_) m->setEngine(engine);
  QJSEngine::setObjectOwnership(m, QJSEngine::CppOwnership);
  return m;
}

LanguageManager* LanguageManager::instance() {
  if (!g_instance) g_instance = new LanguageManager(nullptr);
  return g_instance;
}

QVariantList LanguageManager::available() const {
  // Each language is named in itself, so that it can be found whatever the current one is.
  return {QVariantMap{{QStringLiteral("code"), QStringLiteral("system")},
                      {QStringLiteral("name"), tr("System language")}},
          QVariantMap{{QStringLiteral("code"), QStringLiteral("en")},
                      {QStringLiteral("name"), QStringLiteral("English")}},
          QVariantMap{{QStringLiteral("code"), QStringLiteral("de")},
                      {QStringLiteral("name"), QStringLiteral("Deutsch")}},
          QVariantMap{{QStringLiteral("code"), QStringLiteral("zh_CN")},
                      {QStringLiteral("name"), QStringLiteral("简体中文")}}};
}

QString LanguageManager::systemLanguage() {
  const QLocale locale;
  for (const char* code : kShipped) {
    const QLocale shipped{QLatin1String(code)};
    if (shipped.language() == locale.language()) return QLatin1String(code);
  }
  return QStringLiteral("en");
}

bool LanguageManager::apply(const QString& code) {
  const QString wanted = code == u"system" ? systemLanguage() : code;
  auto next = std::make_unique<QTranslator>();
  if (wanted != u"en" && !next->load(QStringLiteral(":/i18n/hearth_%1.qm").arg(wanted))) {
    qWarning("hearth: no translation for %s", qPrintable(wanted));
    return false;
  }
  if (translator_) QCoreApplication::removeTranslator(translator_.get());
  translator_.reset();
  if (wanted != u"en") {
    translator_ = std::move(next);
    QCoreApplication::installTranslator(translator_.get());
  }
  current_ = wanted;
  QLocale::setDefault(wanted == u"en" ? QLocale(QLocale::English) : QLocale(wanted));
  if (engine_) engine_->retranslate();
  emit changed();
  return true;
}

}  // namespace hearth::app
