#include "app/desktop/library/model_library.h"

#include <QCoro/QCoroFuture>
#include <QCoro/QCoroTask>
#include <QDir>
#include <QFileInfo>
#include <QJSEngine>
#include <QPointer>
#include <QSet>
#include <QtConcurrent/QtConcurrentRun>

#include "app/desktop/engine/engine_convert.h"
#include "app/desktop/library/adapter_files.h"
#include "app/desktop/settings/app_settings.h"

namespace hearth::app {

namespace {

ModelLibrary* g_instance = nullptr;

// A PEFT adapter folder may hold a config.json of its base model too: it is still an adapter.
bool isModelFolder(const QDir& dir) {
  return dir.exists(QStringLiteral("config.json")) &&
         !dir.exists(QStringLiteral("adapter_config.json"));
}

bool isModelFile(const QFileInfo& item) {
  return item.isFile() && item.suffix().compare(u"gguf", Qt::CaseInsensitive) == 0 &&
         !isAdapterGguf(item.absoluteFilePath());
}

QString canonical(const QString& path) {
  const QString c = QFileInfo(path).canonicalFilePath();
  return c.isEmpty() ? QDir::cleanPath(path) : c;
}

}  // namespace

ModelLibrary::ModelLibrary(AppSettings* settings, QObject* parent)
    : QAbstractListModel(parent), settings_(settings) {
  connect(settings_, &AppSettings::modelFoldersChanged, this, &ModelLibrary::foldersChanged);
}

ModelLibrary::~ModelLibrary() {
  if (g_instance == this) g_instance = nullptr;
}

ModelLibrary* ModelLibrary::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "ModelLibrary", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void ModelLibrary::setInstance(ModelLibrary* instance) {
  g_instance = instance;
}

int ModelLibrary::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(entries_.size());
}

QVariant ModelLibrary::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= entries_.size()) return {};
  const LibraryEntry& e = entries_[index.row()];
  switch (role) {
    case PathRole:
      return e.path;
    case Qt::DisplayRole:
    case NameRole:
      return e.name;
    case FormatRole:
      return e.format;
    case ParametersRole:
      return e.parameters;
    case BitsPerWeightRole:
      return e.bitsPerWeight;
    case FileBytesRole:
      return double(e.fileBytes);
    case ContextLengthRole:
      return e.contextLength;
    case StoredTypesRole:
      return e.storedTypes;
    case QuantizationRole:
      return e.quantization;
    case SourceRole:
      return e.source;
    case ErrorRole:
      return e.error;
    case RopeRole:
      return e.rope;
  }
  return {};
}

QHash<int, QByteArray> ModelLibrary::roleNames() const {
  return {{PathRole, "path"},
          {NameRole, "name"},
          {FormatRole, "format"},
          {ParametersRole, "parameters"},
          {BitsPerWeightRole, "bitsPerWeight"},
          {FileBytesRole, "fileBytes"},
          {ContextLengthRole, "contextLength"},
          {StoredTypesRole, "storedTypes"},
          {QuantizationRole, "quantization"},
          {SourceRole, "source"},
          {ErrorRole, "error"},
          {RopeRole, "rope"}};
}

QStringList ModelLibrary::folders() const {
  QStringList out{AppSettings::defaultModelsFolder()};
  for (const QString& f : settings_->modelFolders())
    if (!out.contains(f)) out << f;
  return out;
}

QStringList ModelLibrary::candidatesIn(const QString& folder) {
  QStringList out;
  const QDir dir(folder);
  if (!dir.exists()) return out;
  if (isModelFolder(dir)) return {dir.absolutePath()};
  const QFileInfoList items =
      dir.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot | QDir::Readable,
                        QDir::Name | QDir::IgnoreCase);
  for (const QFileInfo& item : items) {
    if (isModelFile(item)) {
      out << item.absoluteFilePath();
    } else if (item.isDir()) {
      const QDir sub(item.absoluteFilePath());
      if (isModelFolder(sub)) {
        out << sub.absolutePath();
        continue;
      }
      // One level deeper: e.g. models/<vendor>/<file>.gguf.
      for (const QFileInfo& f : sub.entryInfoList({QStringLiteral("*.gguf")}, QDir::Files))
        if (isModelFile(f)) out << f.absoluteFilePath();
    }
  }
  return out;
}

LibraryEntry ModelLibrary::describe(const QString& path, const QString& source) {
  LibraryEntry e;
  e.path = path;
  e.source = source;
  e.name = QFileInfo(path).fileName();
  try {
    const ModelSummary s = toSummary(hearth::Engine::inspect(path.toStdString()));
    e.name = s.name;
    e.format = s.format;
    e.parameters = s.parameters;
    e.bitsPerWeight = s.bitsPerWeight;
    e.fileBytes = s.fileBytes;
    e.contextLength = s.trainedContext;
    e.storedTypes = s.storedTypes;
    e.quantization = s.quantization;
    e.rope = s.rope;
  } catch (const std::exception& ex) {
    e.error = QString::fromUtf8(ex.what());
    e.fileBytes = quint64(QFileInfo(path).size());
  }
  return e;
}

void ModelLibrary::rescan() {
  scan(++scanSerial_);
}

QCoro::Task<void> ModelLibrary::scan(quint64 serial) {
  QPointer<ModelLibrary> self(this);
  scanning_ = true;
  emit scanningChanged();
  const QStringList folderList = folders();
  const QStringList imported = settings_->importedModels();
  QSet<QString> hidden;
  for (const QString& h : settings_->hiddenModels()) hidden.insert(canonical(h));

  // GCC 12 destroys temporaries of a co_await expression twice: build the future in its own
  // statement and await a named variable.
  const auto work = [folderList, imported, hidden]() -> QVector<LibraryEntry> {
    QVector<LibraryEntry> out;
    QSet<QString> seen;
    const auto add = [&](const QString& path, const QString& source) {
      const QString key = canonical(path);
      if (seen.contains(key) || hidden.contains(key)) return;
      seen.insert(key);
      out.push_back(describe(path, source));
    };
    for (const QString& folder : folderList)
      for (const QString& path : candidatesIn(folder)) add(path, folder);
    // An adapter imported by an older Hearth stays out too.
    for (const QString& path : imported)
      if (QFileInfo::exists(path) && !isAdapterPath(path)) add(path, QString());
    return out;
  };
  QFuture<QVector<LibraryEntry>> future = QtConcurrent::run(work);
  const QVector<LibraryEntry> found = co_await future;
  if (!self || serial != scanSerial_) co_return;
  beginResetModel();
  entries_ = found;
  endResetModel();
  scanning_ = false;
  emit countChanged();
  emit scanningChanged();
  emit scanFinished();
}

void ModelLibrary::addFolder(const QUrl& folder) {
  const QString path = folder.isLocalFile() ? folder.toLocalFile() : folder.toString();
  if (path.isEmpty() || folders().contains(path)) return;
  settings_->setModelFolders(settings_->modelFolders() << path);
  rescan();
}

void ModelLibrary::removeFolder(const QString& folder) {
  QStringList list = settings_->modelFolders();
  if (list.removeAll(folder) == 0) return;
  settings_->setModelFolders(list);
  rescan();
}

QString ModelLibrary::importModel(const QUrl& location) {
  const QString path = location.isLocalFile() ? location.toLocalFile() : location.toString();
  const QFileInfo info(path);
  if (!info.exists()) return tr("%1 does not exist.").arg(path);
  if (isAdapterPath(path))
    return tr("%1 is a LoRA adapter, not a model: add it in the Adapters tab.").arg(path);
  const bool gguf = info.isFile() && info.suffix().compare(u"gguf", Qt::CaseInsensitive) == 0;
  const bool folder = info.isDir() && isModelFolder(QDir(path));
  if (!gguf && !folder)
    return tr("%1 is neither a .gguf file nor a model folder (a folder with config.json).")
        .arg(path);
  QStringList hidden = settings_->hiddenModels();
  hidden.removeAll(path);
  settings_->setHiddenModels(hidden);
  QStringList imported = settings_->importedModels();
  if (!imported.contains(path)) settings_->setImportedModels(imported << path);
  rescan();
  return {};
}

void ModelLibrary::removeModel(const QString& path) {
  QStringList imported = settings_->importedModels();
  if (imported.removeAll(path) > 0) settings_->setImportedModels(imported);
  // Found by a folder scan: remember not to list it again.
  QStringList hidden = settings_->hiddenModels();
  if (!hidden.contains(path)) settings_->setHiddenModels(hidden << path);
  const int row = indexOfPath(path);
  if (row >= 0) {
    beginRemoveRows({}, row, row);
    entries_.removeAt(row);
    endRemoveRows();
    emit countChanged();
  }
}

int ModelLibrary::indexOfPath(const QString& path) const {
  for (int i = 0; i < entries_.size(); ++i)
    if (entries_[i].path == path) return i;
  return -1;
}

QVariantMap ModelLibrary::entry(const QString& path) const {
  const int row = indexOfPath(path);
  if (row < 0) return {};
  QVariantMap m;
  const QHash<int, QByteArray> roles = roleNames();
  for (auto it = roles.cbegin(); it != roles.cend(); ++it)
    m.insert(QString::fromLatin1(it.value()), data(index(row), it.key()));
  return m;
}

}  // namespace hearth::app
