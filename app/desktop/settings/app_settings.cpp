#include "app/desktop/settings/app_settings.h"

#include <QDir>
#include <QFile>
#include <QJSEngine>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>

namespace hearth::app {

namespace {

template <typename T>
using Arg = std::conditional_t<std::is_class_v<T>, const T&, T>;
#define HEARTH_ARG(Type) Arg<Type>

AppSettings* g_instance = nullptr;

QString settingsPath() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation) +
         QStringLiteral("/hearth/settings.ini");
}

}  // namespace

AppSettings::AppSettings(QObject* parent) : AppSettings(settingsPath(), parent) {}

AppSettings::AppSettings(const QString& iniPath, QObject* parent)
    : QObject(parent), settings_(iniPath, QSettings::IniFormat) {}

AppSettings* AppSettings::create(QQmlEngine*, QJSEngine*) {
  QJSEngine::setObjectOwnership(instance(), QJSEngine::CppOwnership);
  return instance();
}

void AppSettings::setInstance(AppSettings* instance) {
  g_instance = instance;
}

AppSettings* AppSettings::instance() {
  if (!g_instance) g_instance = new AppSettings(nullptr);
  return g_instance;
}

QString AppSettings::defaultModelsFolder() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         QStringLiteral("/hearth/models");
}

QVariant AppSettings::get(const char* key, const QVariant& fallback) const {
  return settings_.value(QLatin1String(key), fallback);
}

void AppSettings::put(const char* key, const QVariant& value) {
  settings_.setValue(QLatin1String(key), value);
  settings_.sync();
}

#define HEARTH_SETTING_IMPL(Type, name, Name, key, fallback, convert) \
  Type AppSettings::name() const {                                    \
    return get(key, fallback).convert();                              \
  }                                                                   \
  void AppSettings::set##Name(HEARTH_ARG(Type) value) {               \
    if (value == name()) return;                                      \
    put(key, value);                                                  \
    emit name##Changed();                                             \
  }

HEARTH_SETTING_IMPL(QString, theme, Theme, "ui/theme", QStringLiteral("system"), toString)
HEARTH_SETTING_IMPL(int, fontSize, FontSize, "ui/fontSize", 11, toInt)
HEARTH_SETTING_IMPL(QString, language, Language, "ui/language", QStringLiteral("system"), toString)
HEARTH_SETTING_IMPL(double, temperature, Temperature, "sampling/temperature", 0.7, toDouble)
HEARTH_SETTING_IMPL(int, topK, TopK, "sampling/topK", 40, toInt)
HEARTH_SETTING_IMPL(double, topP, TopP, "sampling/topP", 0.9, toDouble)
HEARTH_SETTING_IMPL(double, minP, MinP, "sampling/minP", 0.05, toDouble)
HEARTH_SETTING_IMPL(double, repetitionPenalty, RepetitionPenalty, "sampling/repetitionPenalty", 1.1,
                    toDouble)
HEARTH_SETTING_IMPL(int, maxTokens, MaxTokens, "sampling/maxTokens", 1024, toInt)
HEARTH_SETTING_IMPL(QStringList, modelFolders, ModelFolders, "library/folders", QStringList(),
                    toStringList)
HEARTH_SETTING_IMPL(QStringList, importedModels, ImportedModels, "library/imported", QStringList(),
                    toStringList)
HEARTH_SETTING_IMPL(QStringList, hiddenModels, HiddenModels, "library/hidden", QStringList(),
                    toStringList)
HEARTH_SETTING_IMPL(QString, lastModel, LastModel, "load/lastModel", QString(), toString)
HEARTH_SETTING_IMPL(QString, device, Device, "load/device", QStringLiteral("gpu"), toString)
HEARTH_SETTING_IMPL(int, maxSeqLen, MaxSeqLen, "load/maxSeqLen", 0, toInt)
HEARTH_SETTING_IMPL(QString, speculation, Speculation, "load/speculation", QStringLiteral("off"),
                    toString)
HEARTH_SETTING_IMPL(QString, draftModel, DraftModel, "load/draftModel", QString(), toString)
HEARTH_SETTING_IMPL(QString, kvCacheType, KvCacheType, "load/kvCacheType", QStringLiteral("fp16"),
                    toString)
HEARTH_SETTING_IMPL(QString, gpuSplit, GpuSplit, "load/gpuSplit", QStringLiteral("one"), toString)
HEARTH_SETTING_IMPL(QVariantList, gpus, Gpus, "load/gpus", QVariantList(), toList)
HEARTH_SETTING_IMPL(QVariantList, gpuSplitGib, GpuSplitGib, "load/gpuSplitGib", QVariantList(),
                    toList)
HEARTH_SETTING_IMPL(QStringList, addedAdapters, AddedAdapters, "adapters/added", QStringList(),
                    toStringList)
HEARTH_SETTING_IMPL(QString, systemPrompt, SystemPrompt, "chat/systemPrompt",
                    QStringLiteral("You are a helpful assistant."), toString)
HEARTH_SETTING_IMPL(QStringList, quantizeFolders, QuantizeFolders, "quantize/folders",
                    QStringList(), toStringList)
HEARTH_SETTING_IMPL(bool, serverEnabled, ServerEnabled, "server/enabled", false, toBool)
HEARTH_SETTING_IMPL(int, serverPort, ServerPort, "server/port", 8080, toInt)
HEARTH_SETTING_IMPL(QString, gpuNoticeSeen, GpuNoticeSeen, "notices/gpu", QString(), toString)
#undef HEARTH_SETTING_IMPL

QString AppSettings::serverApiKey() const {
  return get("server/apiKey", QString()).toString();
}

void AppSettings::setServerApiKey(const QString& value) {
  if (value == serverApiKey()) return;
  put("server/apiKey", value);
  // The key keeps other users of this machine off the server: they must not read it. Later
  // writes keep the file's permissions (QSettings replaces it through QSaveFile).
  QFile::setPermissions(settings_.fileName(), QFileDevice::ReadOwner | QFileDevice::WriteOwner);
  emit serverApiKeyChanged();
}

// Kept as JSON text: readable in settings.ini, where QSettings would write a list of maps as
// serialized binary.
QVariantList AppSettings::activeAdapters() const {
  const QByteArray text = get("adapters/active", QString()).toString().toUtf8();
  QVariantList out;
  for (const QJsonValue& v : QJsonDocument::fromJson(text).array()) {
    const QJsonObject o = v.toObject();
    const QString path = o.value(QStringLiteral("path")).toString();
    if (path.isEmpty()) continue;
    out.append(
        QVariantMap{{QStringLiteral("path"), path},
                    {QStringLiteral("weight"), o.value(QStringLiteral("weight")).toDouble(1.0)}});
  }
  return out;
}

void AppSettings::setActiveAdapters(const QVariantList& value) {
  QJsonArray array;
  for (const QVariant& v : value) {
    const QVariantMap m = v.toMap();
    array.append(
        QJsonObject{{QStringLiteral("path"), m.value(QStringLiteral("path")).toString()},
                    {QStringLiteral("weight"), m.value(QStringLiteral("weight"), 1.0).toDouble()}});
  }
  const QString text = QString::fromUtf8(QJsonDocument(array).toJson(QJsonDocument::Compact));
  if (text == get("adapters/active", QStringLiteral("[]")).toString()) return;
  put("adapters/active", text);
  emit activeAdaptersChanged();
}

QVariantMap AppSettings::defaultSampling() const {
  return {{QStringLiteral("temperature"), temperature()},
          {QStringLiteral("topK"), topK()},
          {QStringLiteral("topP"), topP()},
          {QStringLiteral("minP"), minP()},
          {QStringLiteral("repetitionPenalty"), repetitionPenalty()},
          {QStringLiteral("maxTokens"), maxTokens()}};
}

void AppSettings::resetSampling() {
  for (const char* key : {"sampling/temperature", "sampling/topK", "sampling/topP", "sampling/minP",
                          "sampling/repetitionPenalty", "sampling/maxTokens"})
    settings_.remove(QLatin1String(key));
  settings_.sync();
  emit temperatureChanged();
  emit topKChanged();
  emit topPChanged();
  emit minPChanged();
  emit repetitionPenaltyChanged();
  emit maxTokensChanged();
}

}  // namespace hearth::app
