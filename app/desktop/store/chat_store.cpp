#include "app/desktop/store/chat_store.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonDocument>
#include <QStandardPaths>

namespace hearth::app {

namespace {

// Each entry takes the schema from version i to i + 1. Never edit a released step: append one.
const char* const kMigrations[] = {
    // 0 → 1: conversations and their messages.
    R"sql(
    CREATE TABLE conversations(
      id INTEGER PRIMARY KEY,
      title TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL);
    CREATE TABLE messages(
      id INTEGER PRIMARY KEY,
      conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
      content TEXT NOT NULL,
      state INTEGER NOT NULL DEFAULT 0,
      stats TEXT,
      created_at INTEGER NOT NULL);
    CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
    )sql",
    // 1 → 2: full-text index over message contents, kept in step by triggers.
    R"sql(
    CREATE VIRTUAL TABLE messages_fts USING fts5(
      content, content='messages', content_rowid='id', tokenize='trigram');
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
      INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
      INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
      INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
      INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
    END;
    INSERT INTO messages_fts(messages_fts) VALUES ('rebuild');
    )sql",
    // 2 → 3: per-conversation system prompt and sampling settings.
    R"sql(
    ALTER TABLE conversations ADD COLUMN system_prompt TEXT NOT NULL DEFAULT '';
    ALTER TABLE conversations ADD COLUMN sampling TEXT NOT NULL DEFAULT '{}';
    )sql",
    // 3 → 4: the LoRA adapters (and their weights) that shaped each answer. Rows of their own,
    // deleted with their message; older answers have none.
    R"sql(
    CREATE TABLE message_adapters(
      message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      position INTEGER NOT NULL,
      name TEXT NOT NULL,
      path TEXT NOT NULL,
      weight REAL NOT NULL,
      PRIMARY KEY (message_id, position)) WITHOUT ROWID;
    )sql",
};

constexpr int kSchemaVersion = static_cast<int>(std::size(kMigrations));

qint64 nowMs() {
  return QDateTime::currentMSecsSinceEpoch();
}

QJsonObject parseObject(const QString& text) {
  if (text.isEmpty()) return {};
  return QJsonDocument::fromJson(text.toUtf8()).object();
}

QString jsonText(const QJsonObject& o) {
  return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

void checkRole(const QString& role) {
  if (role != u"system" && role != u"user" && role != u"assistant")
    throw StoreError(QStringLiteral("unknown message role \"%1\"").arg(role));
}

MessageRecord readMessage(const SqliteStatement& st) {
  MessageRecord m;
  m.id = st.int64(0);
  m.conversationId = st.int64(1);
  m.role = st.text(2);
  m.content = st.text(3);
  m.state = static_cast<MessageState>(st.int64(4));
  m.stats = MessageStats::fromJson(parseObject(st.text(5)));
  m.created = QDateTime::fromMSecsSinceEpoch(st.int64(6));
  return m;
}

ConversationRecord readConversation(const SqliteStatement& st) {
  ConversationRecord c;
  c.id = st.int64(0);
  c.title = st.text(1);
  c.systemPrompt = st.text(2);
  c.sampling = parseObject(st.text(3));
  c.created = QDateTime::fromMSecsSinceEpoch(st.int64(4));
  c.updated = QDateTime::fromMSecsSinceEpoch(st.int64(5));
  return c;
}

constexpr const char* kMessageColumns =
    "id, conversation_id, role, content, state, stats, created_at";
constexpr const char* kConversationColumns =
    "id, title, system_prompt, sampling, created_at, updated_at";

}  // namespace

QJsonObject MessageStats::toJson() const {
  QJsonObject o;
  o[QStringLiteral("prompt_tokens")] = promptTokens;
  o[QStringLiteral("generated_tokens")] = generatedTokens;
  if (cachedPromptTokens > 0) o[QStringLiteral("cached_prompt_tokens")] = cachedPromptTokens;
  if (proposedTokens > 0) {
    o[QStringLiteral("proposed_tokens")] = proposedTokens;
    o[QStringLiteral("accepted_tokens")] = acceptedTokens;
  }
  o[QStringLiteral("prompt_seconds")] = promptSeconds;
  o[QStringLiteral("decode_seconds")] = decodeSeconds;
  if (!finishReason.isEmpty()) o[QStringLiteral("finish_reason")] = finishReason;
  if (!model.isEmpty()) o[QStringLiteral("model")] = model;
  return o;
}

QJsonArray MessageStats::adaptersToJson(const QVector<AdapterUse>& adapters) {
  QJsonArray out;
  for (const AdapterUse& a : adapters)
    out.append(QJsonObject{{QStringLiteral("name"), a.name},
                           {QStringLiteral("path"), a.path},
                           {QStringLiteral("weight"), a.weight}});
  return out;
}

QVector<AdapterUse> MessageStats::adaptersFromJson(const QJsonValue& value, const QString& where) {
  QVector<AdapterUse> out;
  if (value.isUndefined() || value.isNull()) return out;
  if (!value.isArray()) throw StoreError(where + QStringLiteral(": \"adapters\" must be an array"));
  const QJsonArray array = value.toArray();
  for (qsizetype i = 0; i < array.size(); ++i) {
    const QString at = QStringLiteral("%1: adapters[%2]").arg(where).arg(i);
    const QJsonObject o = array[i].toObject();
    if (!array[i].isObject() || !o.value(QStringLiteral("name")).isString() ||
        !o.value(QStringLiteral("weight")).isDouble())
      throw StoreError(at + QStringLiteral(" must be an object with a \"name\" and a \"weight\""));
    out.push_back({o.value(QStringLiteral("name")).toString(),
                   o.value(QStringLiteral("path")).toString(),
                   o.value(QStringLiteral("weight")).toDouble()});
  }
  return out;
}

MessageStats MessageStats::fromJson(const QJsonObject& o) {
  MessageStats s;
  s.promptTokens = o.value(QStringLiteral("prompt_tokens")).toInteger();
  s.generatedTokens = o.value(QStringLiteral("generated_tokens")).toInteger();
  s.cachedPromptTokens = o.value(QStringLiteral("cached_prompt_tokens")).toInteger();
  s.proposedTokens = o.value(QStringLiteral("proposed_tokens")).toInteger();
  s.acceptedTokens = o.value(QStringLiteral("accepted_tokens")).toInteger();
  s.promptSeconds = o.value(QStringLiteral("prompt_seconds")).toDouble();
  s.decodeSeconds = o.value(QStringLiteral("decode_seconds")).toDouble();
  s.finishReason = o.value(QStringLiteral("finish_reason")).toString();
  s.model = o.value(QStringLiteral("model")).toString();
  return s;
}

ChatStore::ChatStore(const QString& path, Durability durability)
    : db_(path), durability_(durability) {
  configure();
  migrate();
  recovered_ = recoverInterrupted();
}

ChatStore::~ChatStore() = default;

int ChatStore::currentSchemaVersion() {
  return kSchemaVersion;
}

QString ChatStore::defaultPath() {
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  QDir().mkpath(dir);
  return dir + QStringLiteral("/history.sqlite");
}

int ChatStore::schemaVersion() {
  return static_cast<int>(db_.queryInt("PRAGMA user_version"));
}

void ChatStore::configure() {
  const QString mode = db_.queryText("PRAGMA journal_mode=WAL");
  // ":memory:" (the fallback when the history file cannot be used) has no WAL.
  if (db_.path() == u":memory:") {
    db_.exec("PRAGMA foreign_keys=ON");
    return;
  }
  if (mode.compare(u"wal", Qt::CaseInsensitive) != 0)
    throw StoreError(
        QStringLiteral("%1: cannot switch to WAL mode (journal mode is %2)").arg(db_.path(), mode));
  db_.exec("PRAGMA foreign_keys=ON");
  setSynchronous(durability_ == Durability::Full);
}

void ChatStore::setSynchronous(bool full) {
  if (durability_ == Durability::Normal) full = false;
  const int wanted = full ? 1 : 0;
  // Inside a transaction the outer operation has chosen already.
  if (wanted == synchronous_ || !db_.inAutocommit()) return;
  db_.exec(full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  synchronous_ = wanted;
}

void ChatStore::migrate() {
  const int version = schemaVersion();
  if (version > kSchemaVersion)
    throw StoreError(QStringLiteral("%1 has schema version %2, written by a newer Hearth; this "
                                    "version reads up to %3")
                         .arg(db_.path())
                         .arg(version)
                         .arg(kSchemaVersion));
  for (int v = version; v < kSchemaVersion; ++v) {
    Transaction tx(db_);
    db_.exec(kMigrations[v]);
    db_.exec(QByteArray("PRAGMA user_version=").append(QByteArray::number(v + 1)).constData());
    tx.commit();
  }
}

int ChatStore::recoverInterrupted() {
  Transaction tx(db_);
  SqliteStatement st(db_.handle(), "UPDATE messages SET state = ?1 WHERE state = ?2");
  st.bind(1, qint64(MessageState::Incomplete)).bind(2, qint64(MessageState::Streaming)).run();
  const int n = db_.changes();
  tx.commit();
  return n;
}

void ChatStore::touch(qint64 conversationId) {
  SqliteStatement st(db_.handle(), "UPDATE conversations SET updated_at = ?1 WHERE id = ?2");
  st.bind(1, nowMs()).bind(2, conversationId).run();
}

qint64 ChatStore::createConversation(const QString& title, const QString& systemPrompt,
                                     const QJsonObject& sampling) {
  setSynchronous(true);
  Transaction tx(db_);
  SqliteStatement st(db_.handle(),
                     "INSERT INTO conversations(title, system_prompt, sampling, created_at, "
                     "updated_at) VALUES (?1, ?2, ?3, ?4, ?4)");
  st.bind(1, title).bind(2, systemPrompt).bind(3, jsonText(sampling)).bind(4, nowMs()).run();
  const qint64 id = db_.lastInsertId();
  tx.commit();
  return id;
}

void ChatStore::renameConversation(qint64 id, const QString& title) {
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "UPDATE conversations SET title = ?1 WHERE id = ?2");
  st.bind(1, title).bind(2, id).run();
}

void ChatStore::setSystemPrompt(qint64 id, const QString& prompt) {
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "UPDATE conversations SET system_prompt = ?1 WHERE id = ?2");
  st.bind(1, prompt).bind(2, id).run();
}

void ChatStore::setSampling(qint64 id, const QJsonObject& sampling) {
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "UPDATE conversations SET sampling = ?1 WHERE id = ?2");
  st.bind(1, jsonText(sampling)).bind(2, id).run();
}

void ChatStore::deleteConversation(qint64 id) {
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "DELETE FROM conversations WHERE id = ?1");
  st.bind(1, id).run();
}

std::optional<ConversationRecord> ChatStore::conversation(qint64 id) {
  SqliteStatement st(db_.handle(), QByteArray("SELECT ")
                                       .append(kConversationColumns)
                                       .append(" FROM conversations WHERE id = ?1"));
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return readConversation(st);
}

QVector<ConversationRecord> ChatStore::conversations() {
  SqliteStatement st(db_.handle(), QByteArray("SELECT ")
                                       .append(kConversationColumns)
                                       .append(" FROM conversations ORDER BY updated_at DESC, "
                                               "id DESC"));
  QVector<ConversationRecord> out;
  while (st.step()) out.push_back(readConversation(st));
  return out;
}

qint64 ChatStore::addMessage(qint64 conversationId, const QString& role, const QString& content,
                             const MessageStats& stats) {
  checkRole(role);
  setSynchronous(true);
  Transaction tx(db_);
  SqliteStatement st(db_.handle(),
                     "INSERT INTO messages(conversation_id, role, content, state, stats, "
                     "created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  st.bind(1, conversationId).bind(2, role).bind(3, content).bind(4, qint64(MessageState::Complete));
  if (stats.isEmpty())
    st.bindNull(5);
  else
    st.bind(5, jsonText(stats.toJson()));
  st.bind(6, nowMs()).run();
  const qint64 id = db_.lastInsertId();
  writeAdapters(id, stats.adapters);
  touch(conversationId);
  tx.commit();
  return id;
}

qint64 ChatStore::beginMessage(qint64 conversationId, const QString& role) {
  checkRole(role);
  setSynchronous(false);
  Transaction tx(db_);
  SqliteStatement st(db_.handle(),
                     "INSERT INTO messages(conversation_id, role, content, state, created_at) "
                     "VALUES (?1, ?2, '', ?3, ?4)");
  st.bind(1, conversationId)
      .bind(2, role)
      .bind(3, qint64(MessageState::Streaming))
      .bind(4, nowMs());
  st.run();
  const qint64 id = db_.lastInsertId();
  touch(conversationId);
  tx.commit();
  return id;
}

void ChatStore::checkpointMessage(qint64 messageId, const QString& content) {
  setSynchronous(false);
  SqliteStatement st(db_.handle(), "UPDATE messages SET content = ?1 WHERE id = ?2");
  st.bind(1, content).bind(2, messageId).run();
}

void ChatStore::finishMessage(qint64 messageId, const QString& content, const MessageStats& stats) {
  setSynchronous(true);
  Transaction tx(db_);
  SqliteStatement st(db_.handle(),
                     "UPDATE messages SET content = ?1, state = ?2, stats = ?3 WHERE id = ?4");
  st.bind(1, content).bind(2, qint64(MessageState::Complete));
  if (stats.isEmpty())
    st.bindNull(3);
  else
    st.bind(3, jsonText(stats.toJson()));
  st.bind(4, messageId).run();
  writeAdapters(messageId, stats.adapters);
  tx.commit();
}

void ChatStore::writeAdapters(qint64 messageId, const QVector<AdapterUse>& adapters) {
  SqliteStatement clear(db_.handle(), "DELETE FROM message_adapters WHERE message_id = ?1");
  clear.bind(1, messageId).run();
  if (adapters.isEmpty()) return;
  SqliteStatement st(db_.handle(),
                     "INSERT INTO message_adapters(message_id, position, name, path, weight) "
                     "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (qsizetype i = 0; i < adapters.size(); ++i) {
    st.bind(1, messageId)
        .bind(2, qint64(i))
        .bind(3, adapters[i].name)
        .bind(4, adapters[i].path)
        .bind(5, adapters[i].weight)
        .run();
  }
}

// One query for the whole conversation (or one message when conversationId is 0).
void ChatStore::readAdapters(QVector<MessageRecord>& messages, qint64 conversationId) {
  if (messages.isEmpty()) return;
  SqliteStatement st(db_.handle(),
                     conversationId
                         ? QByteArray("SELECT a.message_id, a.name, a.path, a.weight "
                                      "FROM message_adapters a JOIN messages m ON m.id = "
                                      "a.message_id WHERE m.conversation_id = ?1 "
                                      "ORDER BY a.message_id, a.position")
                         : QByteArray("SELECT message_id, name, path, weight FROM "
                                      "message_adapters WHERE message_id = ?1 ORDER BY position"));
  st.bind(1, conversationId ? conversationId : messages.front().id);
  QHash<qint64, qsizetype> rows;
  for (qsizetype i = 0; i < messages.size(); ++i) rows.insert(messages[i].id, i);
  while (st.step()) {
    const auto row = rows.constFind(st.int64(0));
    if (row == rows.cend()) continue;
    messages[*row].stats.adapters.push_back({st.text(1), st.text(2), st.real(3)});
  }
}

void ChatStore::interruptMessage(qint64 messageId, const QString& content) {
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "UPDATE messages SET content = ?1, state = ?2 WHERE id = ?3");
  st.bind(1, content).bind(2, qint64(MessageState::Incomplete)).bind(3, messageId).run();
}

void ChatStore::setMessageContent(qint64 messageId, const QString& content) {
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "UPDATE messages SET content = ?1 WHERE id = ?2");
  st.bind(1, content).bind(2, messageId).run();
}

void ChatStore::truncateFrom(qint64 messageId) {
  const auto m = message(messageId);
  if (!m) return;
  setSynchronous(true);
  SqliteStatement st(db_.handle(), "DELETE FROM messages WHERE conversation_id = ?1 AND id >= ?2");
  st.bind(1, m->conversationId).bind(2, messageId).run();
}

QVector<MessageRecord> ChatStore::messages(qint64 conversationId) {
  SqliteStatement st(db_.handle(), QByteArray("SELECT ")
                                       .append(kMessageColumns)
                                       .append(" FROM messages WHERE conversation_id = ?1 "
                                               "ORDER BY id"));
  st.bind(1, conversationId);
  QVector<MessageRecord> out;
  while (st.step()) out.push_back(readMessage(st));
  readAdapters(out, conversationId);
  return out;
}

std::optional<MessageRecord> ChatStore::message(qint64 messageId) {
  SqliteStatement st(
      db_.handle(),
      QByteArray("SELECT ").append(kMessageColumns).append(" FROM messages WHERE id = ?1"));
  st.bind(1, messageId);
  if (!st.step()) return std::nullopt;
  QVector<MessageRecord> one{readMessage(st)};
  readAdapters(one, 0);
  return one.front();
}

QVector<SearchHit> ChatStore::search(const QString& query, int limit) {
  QVector<SearchHit> out;
  const QString q = query.trimmed();
  if (q.isEmpty()) return out;
  // The trigram tokenizer matches any substring of three or more characters (any script, CJK
  // included); a shorter query falls back to a substring scan.
  if (q.size() >= 3) {
    QString phrase = q;
    phrase.replace(u'"', QStringLiteral("\"\""));
    SqliteStatement st(db_.handle(),
                       "SELECT m.conversation_id, m.id, c.title, "
                       "snippet(messages_fts, 0, '[', ']', '…', 12) "
                       "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                       "JOIN conversations c ON c.id = m.conversation_id "
                       "WHERE messages_fts MATCH ?1 ORDER BY rank LIMIT ?2");
    st.bind(1, QStringLiteral("\"%1\"").arg(phrase)).bind(2, qint64(limit));
    while (st.step()) out.push_back({st.int64(0), st.int64(1), st.text(2), st.text(3)});
  } else {
    SqliteStatement st(db_.handle(),
                       "SELECT m.conversation_id, m.id, c.title, m.content FROM messages m "
                       "JOIN conversations c ON c.id = m.conversation_id "
                       "WHERE instr(lower(m.content), lower(?1)) > 0 ORDER BY m.id DESC LIMIT ?2");
    st.bind(1, q).bind(2, qint64(limit));
    while (st.step()) {
      const QString content = st.text(3);
      const qsizetype at = std::max<qsizetype>(0, content.indexOf(q, 0, Qt::CaseInsensitive));
      const qsizetype from = std::max<qsizetype>(0, at - 30);
      QString snippet = content.mid(from, 80);
      snippet.replace(at - from, q.size(), QStringLiteral("[%1]").arg(content.mid(at, q.size())));
      if (from > 0) snippet.prepend(u'…');
      out.push_back({st.int64(0), st.int64(1), st.text(2), snippet});
    }
  }
  return out;
}

QString ChatStore::integrityCheck() {
  return db_.queryText("PRAGMA integrity_check");
}

QStringList ChatStore::foreignKeyProblems() {
  SqliteStatement st(db_.handle(), "PRAGMA foreign_key_check");
  QStringList out;
  while (st.step())
    out << QStringLiteral("%1 row %2 → %3").arg(st.text(0)).arg(st.int64(1)).arg(st.text(2));
  return out;
}

}  // namespace hearth::app
