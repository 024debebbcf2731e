#include "app/desktop/engine/adapter_list.h"

#include <QCoro/QCoroFuture>
#include <QCoro/QCoroTask>
#include <QDir>
#include <QFileInfo>
#include <QJSEngine>
#include <QPointer>
#include <QSet>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "app/desktop/engine/engine_controller.h"
#include "app/desktop/library/adapter_files.h"
#include "app/desktop/settings/app_settings.h"
#include "engine/api/engine.h"

namespace hearth::app {

namespace {

AdapterList* g_instance = nullptr;
constexpr double kMaxWeight = 2.0;

QString canonical(const QString& path) {
  const QString c = QFileInfo(path).canonicalFilePath();
  return c.isEmpty() ? QDir::cleanPath(path) : c;
}

}  // namespace

AdapterList::AdapterList(AppSettings* settings, EngineController* engine, QObject* parent)
    : QAbstractListModel(parent), settings_(settings), engine_(engine) {
  connect(settings_, &AppSettings::modelFoldersChanged, this, &AdapterList::rescan);
  connect(settings_, &AppSettings::addedAdaptersChanged, this, &AdapterList::rescan);
  connect(settings_, &AppSettings::activeAdaptersChanged, this, [this] {
    refreshRows();
    emit choicesChanged();
  });
  connect(engine_, &EngineController::modelChanged, this, &AdapterList::onModelChanged);
  connect(engine_, &EngineController::adaptersApplied, this, &AdapterList::onApplied);
}

AdapterList::~AdapterList() {
  if (g_instance == this) g_instance = nullptr;
}

AdapterList* AdapterList::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "AdapterList", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void AdapterList::setInstance(AdapterList* instance) {
  g_instance = instance;
}

int AdapterList::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(entries_.size());
}

int AdapterList::maxActive() const {
  return hearth::Engine::kMaxAdapters;
}

int AdapterList::activeCount() const {
  return int(choices().size());
}

QVector<AdapterChoice> AdapterList::choices() const {
  QVector<AdapterChoice> out;
  for (const QVariant& v : settings_->activeAdapters()) {
    const QVariantMap m = v.toMap();
    out.push_back({m.value(QStringLiteral("path")).toString(),
                   m.value(QStringLiteral("weight"), 1.0).toDouble()});
  }
  return out;
}

void AdapterList::saveChoices(const QVector<AdapterChoice>& choices) {
  QVariantList list;
  for (const AdapterChoice& c : choices)
    list.append(
        QVariantMap{{QStringLiteral("path"), c.path}, {QStringLiteral("weight"), c.weight}});
  settings_->setActiveAdapters(list);  // refreshes the rows (activeAdaptersChanged)
}

QVariant AdapterList::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= entries_.size()) return {};
  const AdapterEntry& e = entries_[index.row()];
  const QVector<AdapterChoice> chosen = choices();
  const auto choice = std::find_if(chosen.cbegin(), chosen.cend(),
                                   [&](const AdapterChoice& c) { return c.path == e.path; });
  const auto held = std::find_if(loaded_.cbegin(), loaded_.cend(),
                                 [&](const LoadedAdapter& a) { return a.path == e.path; });
  switch (role) {
    case PathRole:
      return e.path;
    case Qt::DisplayRole:
    case NameRole:
      return e.name;
    case FormatRole:
      return e.format;
    case RankRole:
      return e.rank;
    case AlphaRole:
      return e.alpha;
    case TargetsRole:
      return e.targets;
    case LayersRole:
      return e.layers;
    case BytesRole:
      return double(e.bytes);
    case SourceRole:
      return e.source;
    case InspectedRole:
      return e.inspected;
    case FitsRole:
      return e.inspected && e.error.isEmpty();
    case ErrorRole:
      return e.error;
    case ActiveRole:
      return choice != chosen.cend();
    case WeightRole:
      return choice != chosen.cend() ? choice->weight : offWeights_.value(e.path, 1.0);
    case AppliedRole:
      return held != loaded_.cend();
    case AppliedWeightRole:
      return held != loaded_.cend() ? held->weight : 0.0;
    case ApplyErrorRole:
      return applyErrors_.value(e.path);
  }
  return {};
}

QHash<int, QByteArray> AdapterList::roleNames() const {
  return {{PathRole, "path"},
          {NameRole, "name"},
          {FormatRole, "format"},
          {RankRole, "rank"},
          {AlphaRole, "alpha"},
          {TargetsRole, "targets"},
          {LayersRole, "layers"},
          {BytesRole, "bytes"},
          {SourceRole, "source"},
          {InspectedRole, "inspected"},
          {FitsRole, "fits"},
          {ErrorRole, "error"},
          {ActiveRole, "active"},
          {WeightRole, "weight"},
          {AppliedRole, "applied"},
          {AppliedWeightRole, "appliedWeight"},
          {ApplyErrorRole, "applyError"}};
}

QStringList AdapterList::folders() const {
  QStringList out{AppSettings::defaultModelsFolder()};
  for (const QString& f : settings_->modelFolders())
    if (!out.contains(f)) out << f;
  return out;
}

AdapterEntry AdapterList::describe(const QString& path, const QString& source,
                                   const QString& modelPath) {
  AdapterEntry e;
  e.path = path;
  e.source = source;
  e.name = QFileInfo(path).fileName();
  e.format = QFileInfo(path).isDir() ? QStringLiteral("peft") : QStringLiteral("gguf");
  if (!QFileInfo::exists(path)) {
    e.error = tr("%1 no longer exists.").arg(path);
    return e;
  }
  if (modelPath.isEmpty()) return e;
  e.inspected = true;
  try {
    const hearth::AdapterInfo info =
        hearth::Engine::inspect_adapter(path.toStdString(), modelPath.toStdString());
    if (!info.name.empty()) e.name = QString::fromStdString(info.name);
    e.format = QString::fromStdString(info.format);
    e.rank = info.rank;
    e.alpha = info.alpha;
    for (const std::string& t : info.targets) e.targets << QString::fromStdString(t);
    e.layers = info.layers;
    e.bytes = info.bytes;
  } catch (const std::exception& ex) {
    e.error = QString::fromUtf8(ex.what());
  }
  return e;
}

void AdapterList::rescan() {
  scan(++scanSerial_);
}

QCoro::Task<void> AdapterList::scan(quint64 serial) {
  QPointer<AdapterList> self(this);
  scanning_ = true;
  emit scanningChanged();
  const QStringList folderList = folders();
  const QStringList added = settings_->addedAdapters();
  QStringList active;
  for (const AdapterChoice& c : choices()) active << c.path;
  const QString modelPath =
      engine_->loaded() ? engine_->model().value(QStringLiteral("path")).toString() : QString();

  // GCC 12 destroys temporaries of a co_await expression twice: build the future in its own
  // statement and await a named variable.
  const auto work = [folderList, added, active, modelPath]() -> QVector<AdapterEntry> {
    QVector<AdapterEntry> out;
    QSet<QString> seen;
    const auto add = [&](const QString& path, const QString& source) {
      const QString key = canonical(path);
      if (seen.contains(key)) return;
      seen.insert(key);
      out.push_back(describe(path, source, modelPath));
    };
    for (const QString& folder : folderList)
      for (const QString& path : adapterCandidatesIn(folder)) add(path, folder);
    for (const QString& path : added) add(path, QString());
    // Switched on but found in no folder any more (a folder removed, a file moved): listed, so
    // that it can be switched off.
    for (const QString& path : active) add(path, QString());
    return out;
  };
  QFuture<QVector<AdapterEntry>> future = QtConcurrent::run(work);
  const QVector<AdapterEntry> found = co_await future;
  if (!self || serial != scanSerial_) co_return;
  beginResetModel();
  entries_ = found;
  modelPath_ = modelPath;
  endResetModel();
  scanning_ = false;
  emit countChanged();
  emit scanningChanged();
  emit scanFinished();
}

void AdapterList::setNotice(const QString& notice) {
  if (notice == notice_) return;
  notice_ = notice;
  emit noticeChanged();
}

void AdapterList::refreshRows() {
  if (!entries_.isEmpty()) emit dataChanged(index(0), index(int(entries_.size()) - 1));
}

bool AdapterList::setActive(const QString& path, bool active) {
  QVector<AdapterChoice> chosen = choices();
  const auto it = std::find_if(chosen.begin(), chosen.end(),
                               [&](const AdapterChoice& c) { return c.path == path; });
  if (active == (it != chosen.end())) return true;
  if (active) {
    const int row = indexOfPath(path);
    if (row >= 0 && engine_->loaded() && entries_[row].inspected &&
        !entries_[row].error.isEmpty()) {
      setNotice(tr("%1 cannot be applied to the loaded model: %2")
                    .arg(entries_[row].name, entries_[row].error));
      return false;
    }
    if (chosen.size() >= maxActive()) {
      setNotice(tr("At most %n adapter(s) can be applied at once: switch one off first.", "",
                   maxActive()));
      return false;
    }
    chosen.push_back({path, offWeights_.value(path, 1.0)});
  } else {
    offWeights_.insert(path, it->weight);
    chosen.erase(it);
  }
  setNotice({});
  saveChoices(chosen);
  apply();
  return true;
}

void AdapterList::setWeight(const QString& path, double weight) {
  if (!std::isfinite(weight)) return;
  weight = std::clamp(weight, 0.0, kMaxWeight);
  QVector<AdapterChoice> chosen = choices();
  const auto it = std::find_if(chosen.begin(), chosen.end(),
                               [&](const AdapterChoice& c) { return c.path == path; });
  if (it == chosen.end()) {
    // Switched off: remembered for when it is switched on.
    offWeights_.insert(path, weight);
    const int row = indexOfPath(path);
    if (row >= 0) emit dataChanged(index(row), index(row), {WeightRole});
    return;
  }
  if (it->weight == weight) return;
  it->weight = weight;
  saveChoices(chosen);
  apply();
}

void AdapterList::apply() {
  const quint64 id = engine_->applyAdapters(choices());
  if (id == 0) return;  // no model: the choices go with the next load
  const bool was = applying();
  applyId_ = id;
  if (!was) emit applyingChanged();
}

void AdapterList::onApplied(quint64 id, const AdapterReport& report) {
  if (!report.error.isEmpty()) {
    if (id == applyId_) setNotice(report.error);
  } else {
    loaded_ = report.loaded;
    QHash<QString, QString> errors = report.problems;
    // An adapter the engine refused earlier keeps its message while it stays switched on.
    for (const AdapterChoice& c : choices()) {
      const bool held = std::any_of(loaded_.cbegin(), loaded_.cend(),
                                    [&](const LoadedAdapter& a) { return a.path == c.path; });
      if (!held && !errors.contains(c.path) && applyErrors_.contains(c.path))
        errors.insert(c.path, applyErrors_.value(c.path));
    }
    applyErrors_ = errors;
  }
  if (id == applyId_) {
    applyId_ = 0;
    if (report.changed) lastApplySeconds_ = report.seconds;
    emit applyingChanged();
  }
  refreshRows();
  emit applied();
}

void AdapterList::onModelChanged() {
  const QString modelPath =
      engine_->loaded() ? engine_->model().value(QStringLiteral("path")).toString() : QString();
  if (!engine_->loaded()) {
    loaded_.clear();
    applyErrors_.clear();
  }
  lastApplySeconds_ = -1;
  emit applyingChanged();
  if (modelPath != modelPath_ || entries_.isEmpty())
    rescan();
  else
    refreshRows();
}

QString AdapterList::addAdapter(const QUrl& location) {
  const QString picked = location.isLocalFile() ? location.toLocalFile() : location.toString();
  const QString path = adapterPathFor(picked);
  if (!QFileInfo::exists(path)) return tr("%1 does not exist.").arg(path);
  if (!isAdapterPath(path))
    return tr("%1 is not a LoRA adapter: choose a folder with adapter_config.json or a GGUF "
              "adapter file.")
        .arg(path);
  QStringList added = settings_->addedAdapters();
  if (!added.contains(path) && indexOfPath(path) < 0)
    settings_->setAddedAdapters(added << path);  // rescans
  return {};
}

void AdapterList::removeAdapter(const QString& path) {
  setActive(path, false);
  QStringList added = settings_->addedAdapters();
  if (added.removeAll(path) > 0) settings_->setAddedAdapters(added);
}

int AdapterList::indexOfPath(const QString& path) const {
  for (int i = 0; i < entries_.size(); ++i)
    if (entries_[i].path == path) return i;
  const QString key = canonical(path);
  for (int i = 0; i < entries_.size(); ++i)
    if (canonical(entries_[i].path) == key) return i;
  return -1;
}

QVariantMap AdapterList::entry(const QString& path) const {
  const int row = indexOfPath(path);
  if (row < 0) return {};
  QVariantMap m;
  const QHash<int, QByteArray> roles = roleNames();
  for (auto it = roles.cbegin(); it != roles.cend(); ++it)
    m.insert(QString::fromLatin1(it.value()), data(index(row), it.key()));
  return m;
}

}  // namespace hearth::app
