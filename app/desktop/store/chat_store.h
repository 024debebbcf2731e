// Conversation history in SQLite: WAL, foreign keys, a schema version with migrations, FTS5
// search, the LoRA adapters behind each answer. A completed message is committed with
// synchronous=FULL (it survives a crash and a power loss); a streaming answer is checkpointed with
// synchronous=NORMAL (it survives a crash of the app, and costs no fsync on the UI thread). After a
// crash, a message that was still streaming is kept and flagged Incomplete.
#pragma once

#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QVector>
#include <memory>
#include <optional>

#include "app/desktop/store/sqlite_db.h"

namespace hearth::app {

enum class MessageState { Complete = 0, Streaming = 1, Incomplete = 2 };

// A LoRA adapter that shaped an answer, with the weight it was applied with
// (hearth::GenerationResult::adapters).
struct AdapterUse {
  QString name;
  QString path;
  double weight = 1.0;

  bool operator==(const AdapterUse&) const = default;
};

struct MessageStats {
  qint64 promptTokens = 0;
  qint64 generatedTokens = 0;
  double promptSeconds = 0;
  double decodeSeconds = 0;
  QString finishReason;           // "stop", "length", "cancelled", ...
  QString model;                  // the model that wrote the answer
  qint64 cachedPromptTokens = 0;  // of promptTokens, those reused from the engine's cache
  qint64 proposedTokens = 0;      // speculative proposals checked while answering
  qint64 acceptedTokens = 0;      // of those, kept (part of generatedTokens)
  // The adapters applied with a weight other than 0, in the order the engine applied them. Kept
  // in a table of their own (message_adapters), not in the stats JSON.
  QVector<AdapterUse> adapters = {};

  bool isEmpty() const {
    return generatedTokens == 0 && promptTokens == 0 && model.isEmpty() && adapters.isEmpty();
  }
  QJsonObject toJson() const;  // without the adapters
  static MessageStats fromJson(const QJsonObject& o);
  // The adapters as a JSON array of {name, path, weight} (exported conversations).
  static QJsonArray adaptersToJson(const QVector<AdapterUse>& adapters);
  // Throws StoreError naming `where` and the member when an entry is malformed.
  static QVector<AdapterUse> adaptersFromJson(const QJsonValue& value, const QString& where);
};

struct MessageRecord {
  qint64 id = 0;
  qint64 conversationId = 0;
  QString role;  // "system", "user" or "assistant"
  QString content;
  MessageState state = MessageState::Complete;
  MessageStats stats;
  QDateTime created;
};

struct ConversationRecord {
  qint64 id = 0;
  QString title;
  QString systemPrompt;
  QJsonObject sampling;  // overrides of the default sampling; empty: use the defaults
  QDateTime created;
  QDateTime updated;
};

struct SearchHit {
  qint64 conversationId = 0;
  qint64 messageId = 0;
  QString conversationTitle;
  QString snippet;
};

class ChatStore {
 public:
  enum class Durability {
    Full,    // completed messages fsynced (survive power loss); checkpoints NORMAL
    Normal,  // everything NORMAL: survives an app crash, the tail may go on power loss
  };

  // Opens or creates the database, migrates it to the current schema and flags messages that a
  // crash left streaming as Incomplete. Throws StoreError (also for a database written by a
  // newer Hearth).
  explicit ChatStore(const QString& path, Durability durability = Durability::Full);
  ~ChatStore();

  static int currentSchemaVersion();
  static QString defaultPath();  // <AppDataLocation>/history.sqlite
  int schemaVersion();
  int recoveredOnOpen() const { return recovered_; }
  const QString& path() const { return db_.path(); }

  // --- conversations ---
  qint64 createConversation(const QString& title, const QString& systemPrompt = {},
                            const QJsonObject& sampling = {});
  void renameConversation(qint64 id, const QString& title);
  void setSystemPrompt(qint64 id, const QString& prompt);
  void setSampling(qint64 id, const QJsonObject& sampling);
  void deleteConversation(qint64 id);  // and its messages
  std::optional<ConversationRecord> conversation(qint64 id);
  QVector<ConversationRecord> conversations();  // most recently updated first

  // --- messages ---
  qint64 addMessage(qint64 conversationId, const QString& role, const QString& content,
                    const MessageStats& stats = {});
  // Starts an answer that will be checkpointed while it streams.
  qint64 beginMessage(qint64 conversationId, const QString& role);
  void checkpointMessage(qint64 messageId, const QString& content);
  // Completes an answer with its figures and the adapters that shaped it.
  void finishMessage(qint64 messageId, const QString& content, const MessageStats& stats);
  // An answer that ended in an error: kept as far as it got, flagged Incomplete.
  void interruptMessage(qint64 messageId, const QString& content);
  void setMessageContent(qint64 messageId, const QString& content);
  // Deletes a message and every later one of its conversation (edit-and-resend, regenerate).
  void truncateFrom(qint64 messageId);
  QVector<MessageRecord> messages(qint64 conversationId);
  std::optional<MessageRecord> message(qint64 messageId);

  // Full-text search over every conversation (FTS5 trigram index; shorter queries by substring).
  QVector<SearchHit> search(const QString& query, int limit = 50);

  // --- checks (used by the tests and by a "repair" action) ---
  QString integrityCheck();          // "ok" when intact
  QStringList foreignKeyProblems();  // empty when consistent

  SqliteDb& db() { return db_; }

 private:
  void configure();
  void migrate();
  int recoverInterrupted();
  void touch(qint64 conversationId);
  void setSynchronous(bool full);
  void writeAdapters(qint64 messageId, const QVector<AdapterUse>& adapters);
  void readAdapters(QVector<MessageRecord>& messages, qint64 conversationId);

  SqliteDb db_;
  Durability durability_;
  int synchronous_ = -1;  // the PRAGMA in force: 1 FULL, 0 NORMAL, -1 not set yet
  int recovered_ = 0;
};

}  // namespace hearth::app
