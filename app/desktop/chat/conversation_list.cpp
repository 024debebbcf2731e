#include "app/desktop/chat/conversation_list.h"

#include <QFile>
#include <QJSEngine>
#include <QSaveFile>

#include "app/desktop/store/chat_export.h"

namespace hearth::app {

namespace {

ConversationList* g_instance = nullptr;
constexpr int kUndoMs = 6000;

QString writeFile(const QUrl& url, const QByteArray& bytes) {
  QSaveFile file(url.isLocalFile() ? url.toLocalFile() : url.toString());
  if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit())
    return QObject::tr("Cannot write %1: %2").arg(file.fileName(), file.errorString());
  return {};
}

}  // namespace

ConversationList::ConversationList(ChatStore* store, QObject* parent)
    : QAbstractListModel(parent), store_(store) {
  pendingTimer_.setSingleShot(true);
  pendingTimer_.setInterval(kUndoMs);
  connect(&pendingTimer_, &QTimer::timeout, this, &ConversationList::commitPendingRemoval);
  refresh();
}

ConversationList::~ConversationList() {
  commitPendingRemoval();
  if (g_instance == this) g_instance = nullptr;
}

ConversationList* ConversationList::create(QQmlEngine*, QJSEngine*) {
  Q_ASSERT_X(g_instance, "ConversationList", "the app creates the instance before QML uses it");
  QJSEngine::setObjectOwnership(g_instance, QJSEngine::CppOwnership);
  return g_instance;
}

void ConversationList::setInstance(ConversationList* instance) {
  g_instance = instance;
}

int ConversationList::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(rows_.size());
}

QVariant ConversationList::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_.size()) return {};
  const Row& r = rows_[index.row()];
  switch (role) {
    case IdRole:
      return r.id;
    case Qt::DisplayRole:
    case TitleRole:
      return r.title;
    case UpdatedRole:
      return r.updated;
    case SnippetRole:
      return r.snippet;
    case SectionRole: {
      const qint64 days = r.updated.date().daysTo(QDate::currentDate());
      if (days <= 0) return tr("Today");
      if (days == 1) return tr("Yesterday");
      if (days < 7) return tr("Previous 7 days");
      if (days < 30) return tr("Previous 30 days");
      return tr("Older");
    }
  }
  return {};
}

QHash<int, QByteArray> ConversationList::roleNames() const {
  return {{IdRole, "conversationId"},
          {TitleRole, "title"},
          {UpdatedRole, "updated"},
          {SnippetRole, "snippet"},
          {SectionRole, "section"}};
}

void ConversationList::setQuery(const QString& query) {
  if (query == query_) return;
  query_ = query;
  emit queryChanged();
  refresh();
}

void ConversationList::refresh() {
  QVector<Row> rows;
  try {
    const QString q = query_.trimmed();
    QHash<qint64, QString> snippets;
    if (!q.isEmpty())
      for (const SearchHit& hit : store_->search(q, 200))
        if (!snippets.contains(hit.conversationId))
          snippets.insert(hit.conversationId, hit.snippet);
    for (const ConversationRecord& c : store_->conversations()) {
      if (c.id == pendingId_) continue;
      if (!q.isEmpty() && !c.title.contains(q, Qt::CaseInsensitive) && !snippets.contains(c.id))
        continue;
      rows.push_back({c.id, c.title, c.updated, snippets.value(c.id)});
    }
  } catch (const StoreError& e) {
    lastError_ = e.message();
  }
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
  emit countChanged();
}

int ConversationList::indexOf(qint64 id) const {
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].id == id) return i;
  return -1;
}

QString ConversationList::titleOf(qint64 id) const {
  const int i = indexOf(id);
  return i >= 0 ? rows_[i].title : QString();
}

qint64 ConversationList::newConversation(const QString& title) {
  const qint64 id = store_->createConversation(title.isEmpty() ? tr("New chat") : title);
  refresh();
  return id;
}

void ConversationList::rename(qint64 id, const QString& title) {
  const QString t = title.trimmed();
  if (t.isEmpty()) return;
  store_->renameConversation(id, t);
  const int i = indexOf(id);
  if (i >= 0) {
    rows_[i].title = t;
    emit dataChanged(index(i), index(i), {TitleRole});
  }
}

void ConversationList::remove(qint64 id) {
  commitPendingRemoval();
  const int i = indexOf(id);
  if (i < 0) return;
  pendingId_ = id;
  pendingTitle_ = rows_[i].title;
  beginRemoveRows({}, i, i);
  rows_.removeAt(i);
  endRemoveRows();
  emit countChanged();
  emit pendingDeletionChanged();
  emit conversationRemoved(id);
  pendingTimer_.start();
}

void ConversationList::undoRemove() {
  if (!pendingId_) return;
  pendingTimer_.stop();
  pendingId_ = 0;
  pendingTitle_.clear();
  emit pendingDeletionChanged();
  refresh();
}

void ConversationList::commitPendingRemoval() {
  if (!pendingId_) return;
  pendingTimer_.stop();
  const qint64 id = pendingId_;
  pendingId_ = 0;
  pendingTitle_.clear();
  try {
    store_->deleteConversation(id);
  } catch (const StoreError& e) {
    lastError_ = e.message();
  }
  emit pendingDeletionChanged();
}

QString ConversationList::exportMarkdown(qint64 id, const QUrl& file) {
  try {
    return writeFile(file, hearth::app::exportMarkdown(*store_, id).toUtf8());
  } catch (const StoreError& e) {
    return e.message();
  }
}

QString ConversationList::exportJson(qint64 id, const QUrl& file) {
  try {
    return writeFile(file, hearth::app::exportJson(*store_, id));
  } catch (const StoreError& e) {
    return e.message();
  }
}

qint64 ConversationList::importJson(const QUrl& file) {
  QFile f(file.isLocalFile() ? file.toLocalFile() : file.toString());
  if (!f.open(QIODevice::ReadOnly)) {
    lastError_ = tr("Cannot read %1: %2").arg(f.fileName(), f.errorString());
    return 0;
  }
  // A conversation export is text; refuse anything absurdly large before parsing it.
  if (f.size() > 256ll << 20) {
    lastError_ = tr("%1 is too large to be a conversation export.").arg(f.fileName());
    return 0;
  }
  try {
    const qint64 id = hearth::app::importJson(*store_, f.readAll());
    refresh();
    emit conversationImported(id);
    return id;
  } catch (const StoreError& e) {
    lastError_ =
        tr("%1 is not a conversation Hearth can import: %2").arg(f.fileName(), e.message());
    return 0;
  }
}

}  // namespace hearth::app
