// The messages of the open conversation, as the chat view shows them: Markdown split into prose
// and code blocks, the streaming state, and per-message statistics (with the LoRA adapters that
// shaped an answer).
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QAbstractListModel>

#include "app/desktop/store/chat_store.h"

namespace hearth::app {

class MessageList : public QAbstractListModel {
  Q_OBJECT
  QML_ELEMENT
  QML_UNCREATABLE("owned by ChatSession")
  Q_PROPERTY(int count READ rowCount NOTIFY countChanged)

 public:
  enum Role {
    IdRole = Qt::UserRole + 1,
    RoleRole,
    ContentRole,
    StateRole,
    BlocksRole,
    TokensRole,
    TokensPerSecondRole,
    PromptTokensPerSecondRole,
    FinishReasonRole,
    ModelRole,
    AdaptersRole,  // [{name, path, weight}]: the LoRA adapters that shaped an answer
  };

  explicit MessageList(QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QHash<int, QByteArray> roleNames() const override;

  void reset(const QVector<MessageRecord>& messages);
  void append(const MessageRecord& message);
  void appendText(int row, const QString& text);
  void update(int row, const MessageRecord& message);
  void truncate(int row);  // removes row and everything after it
  const MessageRecord& at(int row) const { return messages_[row]; }
  const QVector<MessageRecord>& all() const { return messages_; }

 signals:
  void countChanged();

 private:
  QVector<MessageRecord> messages_;
};

}  // namespace hearth::app
