// User settings (QML singleton AppSettings), kept in <ConfigLocation>/hearth/settings.ini and
// written as they change (QSettings replaces the file atomically).
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QQmlEngine>
#include <QSettings>
#include <QStringList>
#include <QVariantList>
#include <QVariantMap>

namespace hearth::app {

class AppSettings : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON

  Q_PROPERTY(
      QString theme READ theme WRITE setTheme NOTIFY themeChanged)  // "system", "light", "dark"
  Q_PROPERTY(int fontSize READ fontSize WRITE setFontSize NOTIFY
                 fontSizeChanged)  // points, of the chat text
  Q_PROPERTY(QString language READ language WRITE setLanguage NOTIFY
                 languageChanged)  // "system", "en", "de", "zh_CN"
  Q_PROPERTY(double temperature READ temperature WRITE setTemperature NOTIFY temperatureChanged)
  Q_PROPERTY(int topK READ topK WRITE setTopK NOTIFY topKChanged)
  Q_PROPERTY(double topP READ topP WRITE setTopP NOTIFY topPChanged)
  Q_PROPERTY(double minP READ minP WRITE setMinP NOTIFY minPChanged)
  Q_PROPERTY(double repetitionPenalty READ repetitionPenalty WRITE setRepetitionPenalty NOTIFY
                 repetitionPenaltyChanged)
  Q_PROPERTY(int maxTokens READ maxTokens WRITE setMaxTokens NOTIFY maxTokensChanged)
  Q_PROPERTY(QStringList modelFolders READ modelFolders WRITE setModelFolders NOTIFY
                 modelFoldersChanged)  // scanned after the default folder
  Q_PROPERTY(QStringList importedModels READ importedModels WRITE setImportedModels NOTIFY
                 importedModelsChanged)  // files and folders added one by one
  Q_PROPERTY(QStringList hiddenModels READ hiddenModels WRITE setHiddenModels NOTIFY
                 hiddenModelsChanged)  // removed from the library
  Q_PROPERTY(QString lastModel READ lastModel WRITE setLastModel NOTIFY lastModelChanged)
  Q_PROPERTY(QString device READ device WRITE setDevice NOTIFY deviceChanged)  // "cpu", "gpu"
  Q_PROPERTY(int maxSeqLen READ maxSeqLen WRITE setMaxSeqLen NOTIFY
                 maxSeqLenChanged)  // 0: the model's own
  Q_PROPERTY(QString speculation READ speculation WRITE setSpeculation NOTIFY
                 speculationChanged)  // "off", "ngram", "draft" (hearth::parse_speculation)
  Q_PROPERTY(QString draftModel READ draftModel WRITE setDraftModel NOTIFY
                 draftModelChanged)  // the draft model's path, for "draft"
  Q_PROPERTY(QString kvCacheType READ kvCacheType WRITE setKvCacheType NOTIFY
                 kvCacheTypeChanged)  // "fp16", "q8", "q6", "q4" (hearth::parse_kv_cache_type)
  // Several GPUs: "one" (the first chosen), "layer" (split by layers); the chosen GPU indices;
  // GiB per chosen GPU for a layer split (empty: in proportion to free memory).
  Q_PROPERTY(QString gpuSplit READ gpuSplit WRITE setGpuSplit NOTIFY gpuSplitChanged)
  Q_PROPERTY(QVariantList gpus READ gpus WRITE setGpus NOTIFY gpusChanged)
  Q_PROPERTY(
      QVariantList gpuSplitGib READ gpuSplitGib WRITE setGpuSplitGib NOTIFY gpuSplitGibChanged)
  // LoRA adapters added one by one (the models folders are scanned for others), and those
  // applied over every model that loads: [{path, weight}], in the order they were switched on.
  Q_PROPERTY(QStringList addedAdapters READ addedAdapters WRITE setAddedAdapters NOTIFY
                 addedAdaptersChanged)
  Q_PROPERTY(QVariantList activeAdapters READ activeAdapters WRITE setActiveAdapters NOTIFY
                 activeAdaptersChanged)
  Q_PROPERTY(QString systemPrompt READ systemPrompt WRITE setSystemPrompt NOTIFY
                 systemPromptChanged)  // for new conversations
  Q_PROPERTY(QStringList quantizeFolders READ quantizeFolders WRITE setQuantizeFolders NOTIFY
                 quantizeFoldersChanged)  // where quantization jobs wrote (to find them again)
  // The local server (LocalServer applies them): on/off, its port on 127.0.0.1, its API key
  // ("": none).
  Q_PROPERTY(
      bool serverEnabled READ serverEnabled WRITE setServerEnabled NOTIFY serverEnabledChanged)
  Q_PROPERTY(int serverPort READ serverPort WRITE setServerPort NOTIFY serverPortChanged)
  Q_PROPERTY(
      QString serverApiKey READ serverApiKey WRITE setServerApiKey NOTIFY serverApiKeyChanged)
  // The GPU explanation (EngineController::gpuStatus) the user last dismissed: the notice shows
  // once for each different reason.
  Q_PROPERTY(
      QString gpuNoticeSeen READ gpuNoticeSeen WRITE setGpuNoticeSeen NOTIFY gpuNoticeSeenChanged)

 public:
  QString theme() const;
  void setTheme(const QString& value);
  int fontSize() const;
  void setFontSize(int value);
  QString language() const;
  void setLanguage(const QString& value);
  double temperature() const;
  void setTemperature(double value);
  int topK() const;
  void setTopK(int value);
  double topP() const;
  void setTopP(double value);
  double minP() const;
  void setMinP(double value);
  double repetitionPenalty() const;
  void setRepetitionPenalty(double value);
  int maxTokens() const;
  void setMaxTokens(int value);
  QStringList modelFolders() const;
  void setModelFolders(const QStringList& value);
  QStringList importedModels() const;
  void setImportedModels(const QStringList& value);
  QStringList hiddenModels() const;
  void setHiddenModels(const QStringList& value);
  QString lastModel() const;
  void setLastModel(const QString& value);
  QString device() const;
  void setDevice(const QString& value);
  int maxSeqLen() const;
  void setMaxSeqLen(int value);
  QString speculation() const;
  void setSpeculation(const QString& value);
  QString draftModel() const;
  void setDraftModel(const QString& value);
  QString kvCacheType() const;
  void setKvCacheType(const QString& value);
  QString gpuSplit() const;
  void setGpuSplit(const QString& value);
  QVariantList gpus() const;
  void setGpus(const QVariantList& value);
  QVariantList gpuSplitGib() const;
  void setGpuSplitGib(const QVariantList& value);
  QStringList addedAdapters() const;
  void setAddedAdapters(const QStringList& value);
  QVariantList activeAdapters() const;
  void setActiveAdapters(const QVariantList& value);
  QString systemPrompt() const;
  void setSystemPrompt(const QString& value);
  QStringList quantizeFolders() const;
  void setQuantizeFolders(const QStringList& value);
  bool serverEnabled() const;
  void setServerEnabled(bool value);
  int serverPort() const;
  void setServerPort(int value);
  QString serverApiKey() const;
  void setServerApiKey(const QString& value);
  QString gpuNoticeSeen() const;
  void setGpuNoticeSeen(const QString& value);

 signals:
  void themeChanged();
  void fontSizeChanged();
  void languageChanged();
  void temperatureChanged();
  void topKChanged();
  void topPChanged();
  void minPChanged();
  void repetitionPenaltyChanged();
  void maxTokensChanged();
  void modelFoldersChanged();
  void importedModelsChanged();
  void hiddenModelsChanged();
  void lastModelChanged();
  void deviceChanged();
  void maxSeqLenChanged();
  void speculationChanged();
  void draftModelChanged();
  void kvCacheTypeChanged();
  void gpuSplitChanged();
  void gpusChanged();
  void gpuSplitGibChanged();
  void addedAdaptersChanged();
  void activeAdaptersChanged();
  void systemPromptChanged();
  void quantizeFoldersChanged();
  void serverEnabledChanged();
  void serverPortChanged();
  void serverApiKeyChanged();
  void gpuNoticeSeenChanged();

 public:
  // No default constructor: Qt 6.4 would build a second instance for QML instead of calling
  // create().
  explicit AppSettings(QObject* parent);
  // For tests: settings in the given file instead of the user's.
  AppSettings(const QString& iniPath, QObject* parent);

  static AppSettings* create(QQmlEngine*, QJSEngine*);
  static void setInstance(AppSettings* instance);
  static AppSettings* instance();

  // $XDG_DATA_HOME/hearth/models: where models are looked for first.
  static QString defaultModelsFolder();
  Q_INVOKABLE QString modelsFolder() const { return defaultModelsFolder(); }
  // The default sampling as the engine adapter takes it (see toSampling).
  Q_INVOKABLE QVariantMap defaultSampling() const;
  Q_INVOKABLE void resetSampling();

 private:
  QVariant get(const char* key, const QVariant& fallback) const;
  void put(const char* key, const QVariant& value);
  QSettings settings_;
};

}  // namespace hearth::app
