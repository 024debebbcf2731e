// The sidebar's list of conversations (QML singleton ConversationList): newest first, filtered
// by a search query (titles, and message text through the store's FTS index). Deleting hides a
// conversation at once and really deletes it after a few seconds unless undone.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>
#include <QQmlEngine>
#include <QTimer>
#include <QUrl>

#include "app/desktop/store/chat_store.h"

namespace hearth::app {

class ConversationList : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON
  Q_PROPERTY(QString query READ query WRITE setQuery NOTIFY queryChanged)
  Q_PROPERTY(int count READ rowCount NOTIFY countChanged)
  Q_PROPERTY(bool canUndo READ canUndo NOTIFY pendingDeletionChanged)
  Q_PROPERTY(QString pendingTitle READ pendingTitle NOTIFY pendingDeletionChanged)

 public:
  enum Role { IdRole = Qt::UserRole + 1, TitleRole, UpdatedRole, SnippetRole, SectionRole };

  explicit ConversationList(ChatStore* store, QObject* parent = nullptr);
  ~ConversationList() override;
  static ConversationList* create(QQmlEngine*, QJSEngine*);
  static void setInstance(ConversationList* instance);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  QString query() const { return query_; }
  void setQuery(const QString& query);
  bool canUndo() const { return pendingId_ != 0; }
  QString pendingTitle() const { return pendingTitle_; }

  Q_INVOKABLE qint64 newConversation(const QString& title = {});
  Q_INVOKABLE void rename(qint64 id, const QString& title);
  Q_INVOKABLE void remove(qint64 id);  // undoable for a few seconds
  Q_INVOKABLE void undoRemove();
  Q_INVOKABLE void commitPendingRemoval();
  Q_INVOKABLE void refresh();
  Q_INVOKABLE int indexOf(qint64 id) const;
  Q_INVOKABLE QString titleOf(qint64 id) const;

  // Files; each returns an empty string on success, or the error to show.
  Q_INVOKABLE QString exportMarkdown(qint64 id, const QUrl& file);
  Q_INVOKABLE QString exportJson(qint64 id, const QUrl& file);
  // Returns the new conversation's id, or 0 with lastError set.
  Q_INVOKABLE qint64 importJson(const QUrl& file);
  Q_INVOKABLE QString lastError() const { return lastError_; }

 signals:
  void queryChanged();
  void countChanged();
  void pendingDeletionChanged();
  void conversationRemoved(qint64 id);
  void conversationImported(qint64 id);

 private:
  struct Row {
    qint64 id = 0;
    QString title;
    QDateTime updated;
    QString snippet;
  };
  ChatStore* store_;
  QVector<Row> rows_;
  QString query_;
  qint64 pendingId_ = 0;
  QString pendingTitle_;
  QTimer pendingTimer_;
  QString lastError_;
};

}  // namespace hearth::app
