// The chat store against SQLite itself: schema and pragmas as SQLite reports them, migrations
// from hand-made version-1 and version-3 databases, the LoRA adapters stored with an answer,
// FTS5 search, crash recovery of a streaming answer, and export/import round trips (the Markdown
// export re-read by Qt's own Markdown parser).
#include <sqlite3.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>

#include "app/desktop/store/chat_export.h"
#include "app/desktop/store/chat_store.h"

using namespace hearth::app;

namespace {

// A raw connection, independent of the store's own code.
struct RawDb {
  sqlite3* db = nullptr;
  explicit RawDb(const QString& path) {
    if (sqlite3_open(path.toUtf8().constData(), &db) != SQLITE_OK)
      qFatal("cannot open %s", qPrintable(path));
  }
  ~RawDb() { sqlite3_close(db); }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) qFatal("sql failed: %s", err);
  }
  QString text(const char* sql) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
    QString out;
    if (sqlite3_step(st) == SQLITE_ROW)
      out = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    return out;
  }
};

}  // namespace

class ChatStoreTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  int counter_ = 0;
  QString freshPath() { return dir_.filePath(QStringLiteral("db%1.sqlite").arg(++counter_)); }

 private slots:
  void newDatabaseUsesWalForeignKeysAndCurrentSchema() {
    const QString path = freshPath();
    ChatStore store(path);
    QCOMPARE(store.schemaVersion(), ChatStore::currentSchemaVersion());
    QCOMPARE(store.db().queryInt("PRAGMA foreign_keys"), 1);
    QCOMPARE(store.db().queryInt("PRAGMA synchronous"), 2);  // FULL
    RawDb raw(path);
    QCOMPARE(raw.text("PRAGMA journal_mode"), QStringLiteral("wal"));
    QCOMPARE(raw.text("PRAGMA user_version").toInt(), ChatStore::currentSchemaVersion());
    QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
  }

  void migratesAVersion1Database() {
    const QString path = freshPath();
    {
      // The version-1 schema as it shipped, written by hand.
      RawDb raw(path);
      raw.exec(R"sql(
        CREATE TABLE conversations(id INTEGER PRIMARY KEY, title TEXT NOT NULL,
          created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
        CREATE TABLE messages(id INTEGER PRIMARY KEY,
          conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
          role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
          content TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0, stats TEXT,
          created_at INTEGER NOT NULL);
        CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
        INSERT INTO conversations VALUES (7, 'Old chat', 1000, 2000);
        INSERT INTO messages VALUES (1, 7, 'user', 'What is a penguin?', 0, NULL, 1000);
        INSERT INTO messages VALUES (2, 7, 'assistant', 'A flightless seabird.', 0,
          '{"generated_tokens": 5, "decode_seconds": 0.5}', 1500);
        INSERT INTO messages VALUES (3, 7, 'assistant', 'Half an ans', 1, NULL, 1600);
        PRAGMA user_version = 1;
      )sql");
    }
    ChatStore store(path);
    QCOMPARE(store.schemaVersion(), ChatStore::currentSchemaVersion());
    QCOMPARE(store.recoveredOnOpen(), 1);
    const auto c = store.conversation(7);
    QVERIFY(c);
    QCOMPARE(c->title, QStringLiteral("Old chat"));
    QCOMPARE(c->systemPrompt, QString());
    QVERIFY(c->sampling.isEmpty());
    const auto msgs = store.messages(7);
    QCOMPARE(msgs.size(), 3);
    QCOMPARE(msgs[1].stats.generatedTokens, 5);
    QCOMPARE(msgs[2].state, MessageState::Incomplete);
    // Rows written before the FTS index existed are searchable.
    const auto hits = store.search(QStringLiteral("seabird"));
    QCOMPARE(hits.size(), 1);
    QCOMPARE(hits[0].messageId, 2);
    QCOMPARE(hits[0].conversationTitle, QStringLiteral("Old chat"));
    QVERIFY(store.foreignKeyProblems().isEmpty());
  }

  // A database of the release before adapters (schema 3, as it shipped) opens, keeps its
  // answers (without adapters) and stores the adapters of new ones.
  void migratesAVersion3DatabaseForAdapters() {
    const QString path = freshPath();
    {
      RawDb raw(path);
      raw.exec(R"sql(
        CREATE TABLE conversations(id INTEGER PRIMARY KEY, title TEXT NOT NULL,
          created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
          system_prompt TEXT NOT NULL DEFAULT '', sampling TEXT NOT NULL DEFAULT '{}');
        CREATE TABLE messages(id INTEGER PRIMARY KEY,
          conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
          role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
          content TEXT NOT NULL, state INTEGER NOT NULL DEFAULT 0, stats TEXT,
          created_at INTEGER NOT NULL);
        CREATE INDEX messages_by_conversation ON messages(conversation_id, id);
        CREATE VIRTUAL TABLE messages_fts USING fts5(
          content, content='messages', content_rowid='id', tokenize='trigram');
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
          INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
          INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
          INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES ('delete', old.id, old.content);
          INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
        END;
        INSERT INTO conversations VALUES (4, 'Before adapters', 1000, 2000, 'Be brief.', '{}');
        INSERT INTO messages VALUES (1, 4, 'user', 'Name a colour.', 0, NULL, 1000);
        INSERT INTO messages VALUES (2, 4, 'assistant', 'Blue.', 0,
          '{"generated_tokens": 2, "decode_seconds": 0.1, "model": "SmolLM2"}', 1500);
        PRAGMA user_version = 3;
      )sql");
    }
    ChatStore store(path);
    QCOMPARE(store.schemaVersion(), ChatStore::currentSchemaVersion());
    QVERIFY(ChatStore::currentSchemaVersion() >= 4);
    RawDb raw(path);
    QCOMPARE(raw.text("SELECT count(*) FROM sqlite_master WHERE name = 'message_adapters'"),
             QStringLiteral("1"));
    auto old = store.messages(4);
    QCOMPARE(old.size(), 2);
    QCOMPARE(old[1].content, QStringLiteral("Blue."));
    QCOMPARE(old[1].stats.model, QStringLiteral("SmolLM2"));
    QVERIFY(old[1].stats.adapters.isEmpty());

    // A new answer with two adapters: stored in order, with names, paths and weights.
    const QVector<AdapterUse> used{{QStringLiteral("all_r16"), QStringLiteral("/a/all_r16"), 1.0},
                                   {QStringLiteral("attn_r8"), QStringLiteral("/a/attn_r8"), 0.35}};
    const qint64 answer = store.beginMessage(4, QStringLiteral("assistant"));
    MessageStats stats{9, 3, 0.1, 0.2, QStringLiteral("stop"), QStringLiteral("SmolLM2")};
    stats.adapters = used;
    store.finishMessage(answer, QStringLiteral("Green."), stats);
    QCOMPARE(raw.text("SELECT count(*) FROM message_adapters").toInt(), 2);
    // The adapters are rows of their own, not part of the stats JSON.
    QVERIFY(!raw.text("SELECT stats FROM messages WHERE id = 3").contains(u"all_r16"));
    QCOMPARE(store.message(answer)->stats.adapters, used);
    const auto all = store.messages(4);
    QCOMPARE(all.size(), 3);
    QVERIFY(all[1].stats.adapters.isEmpty());
    QCOMPARE(all[2].stats.adapters, used);

    // Finishing again (a regenerated answer reuses nothing, but a second finish must not
    // duplicate rows), then an answer without adapters in the same conversation.
    stats.adapters = {used[1]};
    store.finishMessage(answer, QStringLiteral("Green."), stats);
    QCOMPARE(store.message(answer)->stats.adapters, QVector<AdapterUse>{used[1]});
    const qint64 plain =
        store.addMessage(4, QStringLiteral("assistant"), QStringLiteral("Red."),
                         MessageStats{9, 2, 0.1, 0.2, QStringLiteral("stop"), QStringLiteral("m")});
    QVERIFY(store.message(plain)->stats.adapters.isEmpty());

    // Deleting the answer (regenerate, edit-and-resend) or the conversation takes its adapters.
    store.truncateFrom(answer);
    QCOMPARE(raw.text("SELECT count(*) FROM message_adapters").toInt(), 0);
    stats.adapters = used;
    store.addMessage(4, QStringLiteral("assistant"), QStringLiteral("Teal."), stats);
    QCOMPARE(raw.text("SELECT count(*) FROM message_adapters").toInt(), 2);
    store.deleteConversation(4);
    QCOMPARE(raw.text("SELECT count(*) FROM message_adapters").toInt(), 0);
    QVERIFY(store.foreignKeyProblems().isEmpty());
    QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
  }

  void refusesADatabaseFromANewerVersion() {
    const QString path = freshPath();
    { RawDb(path).exec("PRAGMA user_version = 999"); }
    try {
      ChatStore store(path);
      QFAIL("opened a database with a newer schema");
    } catch (const StoreError& e) {
      QVERIFY2(e.message().contains(QStringLiteral("newer")), qPrintable(e.message()));
    }
  }

  void conversationsAndCascadingDelete() {
    const QString path = freshPath();
    ChatStore store(path);
    const qint64 a = store.createConversation(QStringLiteral("First"));
    const qint64 b = store.createConversation(QStringLiteral("Second"), QStringLiteral("Be brief."),
                                              QJsonObject{{QStringLiteral("temperature"), 0.7}});
    store.addMessage(a, QStringLiteral("user"), QStringLiteral("hello"));
    store.addMessage(b, QStringLiteral("user"), QStringLiteral("hi"));
    store.addMessage(b, QStringLiteral("assistant"), QStringLiteral("hey"));
    store.renameConversation(a, QStringLiteral("Renamed"));
    store.setSystemPrompt(a, QStringLiteral("You are terse."));
    store.setSampling(a, QJsonObject{{QStringLiteral("top_p"), 0.9}});

    auto ca = store.conversation(a);
    QCOMPARE(ca->title, QStringLiteral("Renamed"));
    QCOMPARE(ca->systemPrompt, QStringLiteral("You are terse."));
    QCOMPARE(ca->sampling.value(QStringLiteral("top_p")).toDouble(), 0.9);
    QCOMPARE(store.conversation(b)->sampling.value(QStringLiteral("temperature")).toDouble(), 0.7);
    QCOMPARE(store.conversations().size(), 2);

    QVERIFY_THROWS_EXCEPTION(StoreError, store.addMessage(a, QStringLiteral("robot"), {}));
    QVERIFY_THROWS_EXCEPTION(StoreError, store.addMessage(12345, QStringLiteral("user"), {}));

    store.deleteConversation(b);
    QVERIFY(!store.conversation(b));
    RawDb raw(path);
    QCOMPARE(raw.text("SELECT count(*) FROM messages").toInt(), 1);
    QVERIFY(store.foreignKeyProblems().isEmpty());
  }

  void streamingAnswerSurvivesAReopenAsIncomplete() {
    const QString path = freshPath();
    qint64 id = 0;
    {
      ChatStore store(path);
      const qint64 c = store.createConversation(QStringLiteral("c"));
      store.addMessage(c, QStringLiteral("user"), QStringLiteral("Count to three"));
      id = store.beginMessage(c, QStringLiteral("assistant"));
      QCOMPARE(store.message(id)->state, MessageState::Streaming);
      store.checkpointMessage(id, QStringLiteral("One, two"));
      // The store goes away without finishing the message, as in a crash.
    }
    ChatStore store(path);
    QCOMPARE(store.recoveredOnOpen(), 1);
    const auto m = store.message(id);
    QCOMPARE(m->state, MessageState::Incomplete);
    QCOMPARE(m->content, QStringLiteral("One, two"));

    store.finishMessage(id, QStringLiteral("One, two, three."),
                        MessageStats{10, 6, 0.1, 0.3, QStringLiteral("stop"), QStringLiteral("m")});
    const auto done = store.message(id);
    QCOMPARE(done->state, MessageState::Complete);
    QCOMPARE(done->stats.generatedTokens, 6);
    QCOMPARE(done->stats.finishReason, QStringLiteral("stop"));
  }

  void truncateFromRemovesTheMessageAndLaterOnes() {
    ChatStore store(freshPath());
    const qint64 c = store.createConversation(QStringLiteral("c"));
    const qint64 other = store.createConversation(QStringLiteral("other"));
    store.addMessage(c, QStringLiteral("user"), QStringLiteral("1"));
    const qint64 second = store.addMessage(c, QStringLiteral("assistant"), QStringLiteral("2"));
    const qint64 keep = store.addMessage(other, QStringLiteral("user"), QStringLiteral("x"));
    store.addMessage(c, QStringLiteral("user"), QStringLiteral("3"));
    store.truncateFrom(second);
    QCOMPARE(store.messages(c).size(), 1);
    QVERIFY(store.message(keep));
  }

  void searchFindsWordsInAnyScript() {
    ChatStore store(freshPath());
    const qint64 c1 = store.createConversation(QStringLiteral("Birds"));
    const qint64 c2 = store.createConversation(QStringLiteral("模型"));
    store.addMessage(c1, QStringLiteral("user"), QStringLiteral("Tell me about Emperor Penguins"));
    const qint64 edited = store.addMessage(c1, QStringLiteral("assistant"),
                                           QStringLiteral("They live in Antarctica."));
    store.addMessage(c2, QStringLiteral("user"),
                     QStringLiteral("请解释一下大型语言模型的工作原理"));
    store.addMessage(c2, QStringLiteral("assistant"), QStringLiteral("Über Größe: ÄÖÜ straße"));

    QCOMPARE(store.search(QStringLiteral("penguin")).size(), 1);  // case-insensitive substring
    QCOMPARE(store.search(QStringLiteral("penguin"))[0].conversationId, c1);
    QVERIFY(
        store.search(QStringLiteral("penguin"))[0].snippet.contains(QStringLiteral("[Penguin]")));
    QCOMPARE(store.search(QStringLiteral("语言模型")).size(), 1);  // trigram, CJK
    QCOMPARE(store.search(QStringLiteral("模型")).size(), 1);      // two characters: substring
    QCOMPARE(store.search(QStringLiteral("模型"))[0].conversationId, c2);
    QCOMPARE(store.search(QStringLiteral("Größe")).size(), 1);
    QCOMPARE(store.search(QStringLiteral("\"quoted\" OR x")).size(), 0);  // no FTS syntax leaks
    QCOMPARE(store.search(QStringLiteral("giraffe")).size(), 0);

    store.setMessageContent(edited, QStringLiteral("They live on the ice."));
    QCOMPARE(store.search(QStringLiteral("Antarctica")).size(), 0);
    QCOMPARE(store.search(QStringLiteral("on the ice")).size(), 1);
    store.deleteConversation(c1);
    QCOMPARE(store.search(QStringLiteral("penguin")).size(), 0);
    QCOMPARE(store.search(QStringLiteral("on the ice")).size(), 0);
    QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
    // FTS5's own consistency check of the index against the messages (throws when corrupt).
    store.db().exec("INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)");
  }

  void jsonExportImportRoundTrip() {
    ChatStore store(freshPath());
    const QJsonObject sampling{{QStringLiteral("temperature"), 0.8}, {QStringLiteral("top_k"), 40}};
    const qint64 c =
        store.createConversation(QStringLiteral("Rust vs C++ — 比较"),
                                 QStringLiteral("You are a helpful reviewer."), sampling);
    store.addMessage(c, QStringLiteral("user"), QStringLiteral("Show me a loop 🦀"));
    store.addMessage(
        c, QStringLiteral("assistant"),
        QStringLiteral("Here:\n\n```cpp\nfor (int i = 0; i < 3; ++i) {}\n```\n"),
        MessageStats{12, 20, 0.05, 0.4, QStringLiteral("stop"), QStringLiteral("SmolLM2")});
    MessageStats adapted{12, 8, 0.05, 0.2, QStringLiteral("stop"), QStringLiteral("SmolLM2")};
    adapted.adapters = {{QStringLiteral("all_r16.gguf"), QStringLiteral("/m/all_r16.gguf"), 0.5}};
    store.addMessage(c, QStringLiteral("assistant"), QStringLiteral("Again, tuned."), adapted);
    const QByteArray json = exportJson(store, c);

    // The document is plain JSON any tool reads.
    const QJsonObject root = QJsonDocument::fromJson(json).object();
    QCOMPARE(root.value(QStringLiteral("format")).toString(),
             QStringLiteral("hearth-conversation"));
    QCOMPARE(root.value(QStringLiteral("messages")).toArray().size(), 3);
    const QJsonArray exportedAdapters =
        root.value(QStringLiteral("messages")).toArray()[2].toObject()[u"adapters"].toArray();
    QCOMPARE(exportedAdapters.size(), 1);
    QCOMPARE(exportedAdapters[0].toObject()[u"name"].toString(), QStringLiteral("all_r16.gguf"));
    QCOMPARE(exportedAdapters[0].toObject()[u"weight"].toDouble(), 0.5);

    const qint64 copy = importJson(store, json);
    QVERIFY(copy != c);
    const auto a = store.conversation(c);
    const auto b = store.conversation(copy);
    QCOMPARE(b->title, a->title);
    QCOMPARE(b->systemPrompt, a->systemPrompt);
    QCOMPARE(b->sampling, a->sampling);
    const auto ma = store.messages(c);
    const auto mb = store.messages(copy);
    QCOMPARE(mb.size(), ma.size());
    for (int i = 0; i < ma.size(); ++i) {
      QCOMPARE(mb[i].role, ma[i].role);
      QCOMPARE(mb[i].content, ma[i].content);
      QCOMPARE(mb[i].stats.generatedTokens, ma[i].stats.generatedTokens);
      QCOMPARE(mb[i].stats.decodeSeconds, ma[i].stats.decodeSeconds);
      QCOMPARE(mb[i].stats.model, ma[i].stats.model);
      QCOMPARE(mb[i].stats.adapters, ma[i].stats.adapters);
    }
    QCOMPARE(mb[2].stats.adapters.size(), 1);
    // Exporting the copy gives the same document apart from dates.
    QJsonObject again = QJsonDocument::fromJson(exportJson(store, copy)).object();
    QJsonObject first = root;
    for (QJsonObject* o : {&again, &first}) {
      o->remove(QStringLiteral("created"));
      QJsonArray msgs = (*o)[QStringLiteral("messages")].toArray();
      for (auto&& v : msgs) {
        QJsonObject m = v.toObject();
        m.remove(QStringLiteral("created"));
        v = m;
      }
      (*o)[QStringLiteral("messages")] = msgs;
    }
    QCOMPARE(again, first);
  }

  void importRejectsMalformedDocumentsWithoutWriting() {
    ChatStore store(freshPath());
    const QList<QByteArray> bad = {
        "not json",
        "[1, 2]",
        R"({"format": "something-else", "version": 1, "title": "x", "messages": []})",
        R"({"format": "hearth-conversation", "version": 99, "title": "x", "messages": []})",
        R"({"format": "hearth-conversation", "version": 1, "messages": []})",
        R"({"format": "hearth-conversation", "version": 1, "title": "x", "messages": {}})",
        R"({"format": "hearth-conversation", "version": 1, "title": "x",
            "messages": [{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}]})",
        R"({"format": "hearth-conversation", "version": 1, "title": "x",
            "messages": [{"role": "user", "content": 5}]})",
        R"({"format": "hearth-conversation", "version": 1, "title": "x", "sampling": 3,
            "messages": []})",
        R"({"format": "hearth-conversation", "version": 1, "title": "x",
            "messages": [{"role": "assistant", "content": "x", "adapters": {}}]})",
        R"({"format": "hearth-conversation", "version": 1, "title": "x",
            "messages": [{"role": "assistant", "content": "x", "adapters": [{"name": "a"}]}]})",
    };
    for (const QByteArray& doc : bad) {
      QVERIFY_THROWS_EXCEPTION(StoreError, importJson(store, doc));
    }
    QCOMPARE(store.conversations().size(), 0);
    RawDb raw(store.path());
    QCOMPARE(raw.text("SELECT count(*) FROM messages").toInt(), 0);
  }

  void markdownExportReadsBackAsMarkdown() {
    ChatStore store(freshPath());
    const qint64 c =
        store.createConversation(QStringLiteral("Sorting"), QStringLiteral("Answer with code."));
    store.addMessage(c, QStringLiteral("user"), QStringLiteral("How do I sort a list?"));
    store.addMessage(c, QStringLiteral("assistant"),
                     QStringLiteral("Use **sorted**:\n\n```python\nprint(sorted([3, 1, 2]))\n```"),
                     MessageStats{5, 20, 0.1, 0.5, QStringLiteral("stop"), {}});
    MessageStats adapted{5, 20, 0.1, 0.5, QStringLiteral("stop"), {}};
    adapted.adapters = {{QStringLiteral("attn_r8"), QStringLiteral("/m/attn_r8"), 1.5}};
    store.addMessage(c, QStringLiteral("assistant"), QStringLiteral("Or **sort** in place."),
                     adapted);
    const QString md = exportMarkdown(store, c);

    // Qt's Markdown reader (md4c) sees the structure we meant.
    QTextDocument doc;
    doc.setMarkdown(md);
    QStringList headings, code;
    QString codeLanguage;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
      if (b.blockFormat().headingLevel() > 0)
        headings << QString::number(b.blockFormat().headingLevel()) + b.text();
      if (b.blockFormat().hasProperty(QTextFormat::BlockCodeFence)) {
        code << b.text();
        codeLanguage = b.blockFormat().stringProperty(QTextFormat::BlockCodeLanguage);
      }
    }
    QCOMPARE(headings, (QStringList{QStringLiteral("1Sorting"), QStringLiteral("2System prompt"),
                                    QStringLiteral("2You"), QStringLiteral("2Assistant"),
                                    QStringLiteral("2Assistant")}));
    QCOMPARE(code.join(u'\n'), QStringLiteral("print(sorted([3, 1, 2]))"));
    QCOMPARE(codeLanguage, QStringLiteral("python"));
    QVERIFY(doc.toPlainText().contains(QStringLiteral("40.0 tokens/s")));
    QVERIFY2(doc.toPlainText().contains(QStringLiteral("Adapters: attn_r8 × 1.50")),
             qPrintable(doc.toPlainText()));
  }
};

QTEST_MAIN(ChatStoreTest)
#include "chat_store_test.moc"
