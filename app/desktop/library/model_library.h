// The model library (QML singleton ModelLibrary): models found in the default models folder
// ($XDG_DATA_HOME/hearth/models, first), in the folders the user added, and models imported one
// by one. Each is described by Engine::inspect (format, parameters, bits per weight, context
// length, size on disk), run on the thread pool and awaited with QCoro. LoRA adapters found there
// are not models: AdapterList lists them.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QQmlEngine>
#include <QUrl>

namespace QCoro {
template <typename T>
class Task;
}

namespace hearth::app {

class AppSettings;

struct LibraryEntry {
  QString path;
  QString name;
  QString format;
  qint64 parameters = 0;
  double bitsPerWeight = 0;
  quint64 fileBytes = 0;
  qint64 contextLength = 0;
  QString storedTypes;
  QString quantization;
  QString source;  // the folder it was found in, or "" when imported by hand
  QString error;   // why it cannot be used, when inspect failed
  QVariantMap rope;
};

class ModelLibrary : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON
  Q_PROPERTY(bool scanning READ scanning NOTIFY scanningChanged)
  Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
  Q_PROPERTY(QStringList folders READ folders NOTIFY foldersChanged)

 public:
  enum Role {
    PathRole = Qt::UserRole + 1,
    NameRole,
    FormatRole,
    ParametersRole,
    BitsPerWeightRole,
    FileBytesRole,
    ContextLengthRole,
    StoredTypesRole,
    QuantizationRole,
    SourceRole,
    ErrorRole,
    RopeRole,
  };

  explicit ModelLibrary(AppSettings* settings, QObject* parent = nullptr);
  ~ModelLibrary() override;
  static ModelLibrary* create(QQmlEngine*, QJSEngine*);
  static void setInstance(ModelLibrary* instance);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  bool scanning() const { return scanning_; }
  QStringList folders() const;  // the default folder first

  Q_INVOKABLE void rescan();
  Q_INVOKABLE void addFolder(const QUrl& folder);
  Q_INVOKABLE void removeFolder(const QString& folder);
  // A .gguf file or a model folder; returns "" or the reason it was refused.
  Q_INVOKABLE QString importModel(const QUrl& location);
  Q_INVOKABLE void removeModel(const QString& path);  // from the library; files stay on disk
  Q_INVOKABLE int indexOfPath(const QString& path) const;
  Q_INVOKABLE QVariantMap entry(const QString& path) const;

  // Candidates in one folder: .gguf files, and folders holding config.json (to one level deep),
  // LoRA adapters left out.
  static QStringList candidatesIn(const QString& folder);
  // Runs Engine::inspect on one candidate (blocking; call off the UI thread).
  static LibraryEntry describe(const QString& path, const QString& source);

 signals:
  void scanningChanged();
  void countChanged();
  void foldersChanged();
  void scanFinished();

 private:
  QCoro::Task<void> scan(quint64 serial);

  AppSettings* settings_;
  QVector<LibraryEntry> entries_;
  bool scanning_ = false;
  quint64 scanSerial_ = 0;
};

}  // namespace hearth::app
