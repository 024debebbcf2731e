#include "app/desktop/chat/message_list.h"

#include "app/desktop/chat/markdown_blocks.h"

namespace hearth::app {

namespace {

QVariantList blocksOf(const QString& content) {
  QVariantList out;
  for (const MarkdownBlock& b : splitMarkdown(content))
    out.append(QVariantMap{{QStringLiteral("code"), b.kind == MarkdownBlock::Kind::Code},
                           {QStringLiteral("text"), b.text},
                           {QStringLiteral("language"), b.language},
                           {QStringLiteral("closed"), b.closed}});
  return out;
}

QString stateName(MessageState s) {
  switch (s) {
    case MessageState::Streaming:
      return QStringLiteral("streaming");
    case MessageState::Incomplete:
      return QStringLiteral("incomplete");
    case MessageState::Complete:
      break;
  }
  return QStringLiteral("complete");
}

}  // namespace

MessageList::MessageList(QObject* parent) : QAbstractListModel(parent) {}

int MessageList::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(messages_.size());
}

QVariant MessageList::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= messages_.size()) return {};
  const MessageRecord& m = messages_[index.row()];
  switch (role) {
    case IdRole:
      return m.id;
    case RoleRole:
      return m.role;
    case Qt::DisplayRole:
    case ContentRole:
      return m.content;
    case StateRole:
      return stateName(m.state);
    case BlocksRole:
      return blocksOf(m.content);
    case TokensRole:
      return m.stats.generatedTokens;
    case TokensPerSecondRole:
      return m.stats.decodeSeconds > 0 ? m.stats.generatedTokens / m.stats.decodeSeconds : 0.0;
    case PromptTokensPerSecondRole:
      return m.stats.promptSeconds > 0 ? m.stats.promptTokens / m.stats.promptSeconds : 0.0;
    case FinishReasonRole:
      return m.stats.finishReason;
    case ModelRole:
      return m.stats.model;
    case AdaptersRole: {
      QVariantList out;
      for (const AdapterUse& a : m.stats.adapters)
        out.append(QVariantMap{{QStringLiteral("name"), a.name},
                               {QStringLiteral("path"), a.path},
                               {QStringLiteral("weight"), a.weight}});
      return out;
    }
  }
  return {};
}

QHash<int, QByteArray> MessageList::roleNames() const {
  return {{IdRole, "messageId"},
          {RoleRole, "role"},
          {ContentRole, "content"},
          {StateRole, "messageState"},
          {BlocksRole, "blocks"},
          {TokensRole, "tokens"},
          {TokensPerSecondRole, "tokensPerSecond"},
          {PromptTokensPerSecondRole, "promptTokensPerSecond"},
          {FinishReasonRole, "finishReason"},
          {ModelRole, "modelName"},
          {AdaptersRole, "adapters"}};
}

void MessageList::reset(const QVector<MessageRecord>& messages) {
  beginResetModel();
  messages_ = messages;
  endResetModel();
  emit countChanged();
}

void MessageList::append(const MessageRecord& message) {
  const int row = int(messages_.size());
  beginInsertRows({}, row, row);
  messages_.push_back(message);
  endInsertRows();
  emit countChanged();
}

void MessageList::appendText(int row, const QString& text) {
  if (row < 0 || row >= messages_.size()) return;
  messages_[row].content += text;
  emit dataChanged(index(row), index(row), {ContentRole, BlocksRole});
}

void MessageList::update(int row, const MessageRecord& message) {
  if (row < 0 || row >= messages_.size()) return;
  messages_[row] = message;
  emit dataChanged(index(row), index(row));
}

void MessageList::truncate(int row) {
  if (row < 0 || row >= messages_.size()) return;
  beginRemoveRows({}, row, int(messages_.size()) - 1);
  messages_.resize(row);
  endRemoveRows();
  emit countChanged();
}

}  // namespace hearth::app
