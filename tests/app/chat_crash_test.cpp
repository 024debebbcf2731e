// kill -9 during chat writes (docs/TESTING.md, "History survives a crash"). A child process writes
// conversations as the app does; after a uniformly random delay (0–100 ms, so kills land during
// startup recovery, inside transactions, and during WAL checkpoints) it gets SIGKILL. Then, through
// a raw SQLite connection: integrity_check is "ok", foreign_key_check is empty, the FTS index is
// consistent, every message the child acknowledged as committed is there, complete and exact, every
// answer that was streaming is absent or a flagged prefix of its text, and no text holds broken
// UTF-8. The same database is reused, so each child also recovers what the previous kill left.
#include <sqlite3.h>

#include <QElapsedTimer>
#include <QHash>
#include <QProcess>
#include <QRandomGenerator>
#include <QSet>
#include <QStringDecoder>
#include <QTemporaryDir>
#include <QTest>

#include "app/desktop/store/chat_store.h"
#include "tests/app/crash_text.h"

namespace {

constexpr int kIterationsPerConfig = 100;

struct Entry {
  quint64 key = 0;
  qint64 conversation = 0;
};

struct Ledger {
  QHash<qint64, Entry> acknowledged;  // message id → its text's key and conversation
  QHash<qint64, Entry> begun;         // streaming answers not acknowledged
  QSet<qint64> deleting;              // conversations the child announced it would delete
};

bool validUtf8(const QByteArray& bytes) {
  QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
  (void)decoder.decode(bytes);
  return !decoder.hasError();
}

}  // namespace

class ChatCrashTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  // Parses the child's acknowledgements.
  static void readLedger(const QByteArray& out, Ledger* ledger) {
    for (const QByteArray& line : out.split('\n')) {
      const QList<QByteArray> f = line.split(' ');
      if (f[0] == "ACK" && f.size() == 4) {
        ledger->acknowledged.insert(f[1].toLongLong(), {f[2].toULongLong(), f[3].toLongLong()});
        ledger->begun.remove(f[1].toLongLong());
      } else if (f[0] == "BEGIN" && f.size() == 4) {
        ledger->begun.insert(f[1].toLongLong(), {f[2].toULongLong(), f[3].toLongLong()});
      } else if (f[0] == "DELETING" && f.size() == 2) {
        ledger->deleting.insert(f[1].toLongLong());
      }
    }
  }

  // Checks the database with a raw connection; returns an empty string when all is well.
  static QString verify(const QString& path, Ledger* ledger, int* deletedMessages) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE, nullptr) !=
        SQLITE_OK)
      return QStringLiteral("cannot open the database");
    QString problem;
    auto one = [&](const char* sql) {
      sqlite3_stmt* st = nullptr;
      QString out;
      if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK)
        return QStringLiteral("prepare failed: ") + QString::fromUtf8(sqlite3_errmsg(db));
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_ROW)
        out = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
      else if (rc == SQLITE_DONE)
        out = QStringLiteral("<no rows>");
      else
        out = QStringLiteral("error: ") + QString::fromUtf8(sqlite3_errmsg(db));
      sqlite3_finalize(st);
      return out;
    };
    if (const QString ic = one("PRAGMA integrity_check"); ic != u"ok")
      problem = QStringLiteral("integrity_check: ") + ic;
    else if (const QString fk = one("PRAGMA foreign_key_check"); fk != u"<no rows>")
      problem = QStringLiteral("foreign_key_check: ") + fk;
    // Killed before the first migration committed: an empty database is a correct outcome.
    const bool migrated = one("PRAGMA user_version").toInt() >= 2;
    if (problem.isEmpty() && migrated) {
      if (const QString fts = one("INSERT INTO messages_fts(messages_fts, rank) "
                                  "VALUES('integrity-check', 1)");
          fts != u"<no rows>")
        problem = QStringLiteral("fts integrity-check: ") + fts;
    }
    if (!migrated && !ledger->acknowledged.isEmpty())
      problem = QStringLiteral("the schema is gone although messages were acknowledged");

    // Every row: valid UTF-8; acknowledged ones exact and complete; streaming ones a prefix.
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT id, content, state FROM messages", -1, &st, nullptr);
    QSet<qint64> present;
    while (problem.isEmpty() && sqlite3_step(st) == SQLITE_ROW) {
      const qint64 id = sqlite3_column_int64(st, 0);
      const QByteArray bytes(static_cast<const char*>(sqlite3_column_blob(st, 1)),
                             sqlite3_column_bytes(st, 1));
      const int state = sqlite3_column_int(st, 2);
      present.insert(id);
      if (!validUtf8(bytes)) {
        problem = QStringLiteral("message %1 holds invalid UTF-8").arg(id);
      } else if (ledger->acknowledged.contains(id)) {
        const QString expected = hearth::test::crashText(ledger->acknowledged[id].key);
        if (QString::fromUtf8(bytes) != expected || state != 0)
          problem = QStringLiteral("acknowledged message %1 changed (state %2)").arg(id).arg(state);
      } else if (ledger->begun.contains(id)) {
        const QString expected = hearth::test::crashText(ledger->begun[id].key);
        const QString got = QString::fromUtf8(bytes);
        if (!expected.startsWith(got))
          problem = QStringLiteral("streamed message %1 is not a prefix of its text").arg(id);
        else if (state == 0 && got != expected)
          problem = QStringLiteral("partial message %1 marked complete").arg(id);
      }
    }
    sqlite3_finalize(st);
    // An acknowledged message may only be missing when the child announced that it would
    // delete its conversation.
    if (problem.isEmpty()) {
      for (auto it = ledger->acknowledged.begin(); it != ledger->acknowledged.end();) {
        if (present.contains(it.key())) {
          ++it;
        } else if (ledger->deleting.contains(it->conversation)) {
          it = ledger->acknowledged.erase(it);
          ++*deletedMessages;
        } else {
          problem = QStringLiteral("acknowledged message %1 is lost").arg(it.key());
          break;
        }
      }
      for (auto it = ledger->begun.begin(); it != ledger->begun.end();)
        it = present.contains(it.key()) ? std::next(it) : ledger->begun.erase(it);
    }
    sqlite3_close(db);
    return problem;
  }

  void runConfig(const char* mode) {
    const QString path = dir_.filePath(QStringLiteral("crash-%1.sqlite").arg(QLatin1String(mode)));
    Ledger ledger;
    QSet<qint64> everAcked;
    int deletedMessages = 0;
    int inFlightAtKill = 0;
    int killedBeforeOpen = 0;
    qint64 slowestReopenMs = 0;
    QRandomGenerator rng(0x5eed ^ qHash(QByteArray(mode)));
    for (int i = 0; i < kIterationsPerConfig; ++i) {
      QProcess child;
      child.setProgram(QStringLiteral(HEARTH_CRASH_WRITER));
      child.setArguments({path, QLatin1String(mode), QString::number(i + 1)});
      QElapsedTimer started;
      started.start();
      child.start();
      QVERIFY2(child.waitForStarted(10000), qPrintable(child.errorString()));
      const int delayMs = int(rng.bounded(101));
      while (started.elapsed() < delayMs && child.state() == QProcess::Running)
        child.waitForReadyRead(int(std::max<qint64>(1, delayMs - started.elapsed())));
      QVERIFY2(child.state() == QProcess::Running,
               qPrintable(QString::fromUtf8(child.readAllStandardError())));
      child.kill();  // SIGKILL
      QVERIFY(child.waitForFinished(10000));
      const QByteArray out = child.readAllStandardOutput();
      if (!out.startsWith("OPEN")) ++killedBeforeOpen;
      const int begunBefore = ledger.begun.size();
      readLedger(out, &ledger);
      if (ledger.begun.size() > begunBefore) ++inFlightAtKill;
      for (auto it = ledger.acknowledged.cbegin(); it != ledger.acknowledged.cend(); ++it)
        everAcked.insert(it.key());
      const QString problem = verify(path, &ledger, &deletedMessages);
      QVERIFY2(problem.isEmpty(),
               qPrintable(QStringLiteral("iteration %1 (%2, killed after %3 ms): %4")
                              .arg(i)
                              .arg(QLatin1String(mode))
                              .arg(delayMs)
                              .arg(problem)));
      // Restart to usable history (the store's open: migration check and recovery).
      QElapsedTimer reopen;
      reopen.start();
      {
        hearth::app::ChatStore store(path);
        QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
        (void)store.conversations();
      }
      slowestReopenMs = std::max(slowestReopenMs, reopen.elapsed());
    }
    QVERIFY2(everAcked.size() > kIterationsPerConfig, "the writer committed too little to test");
    QVERIFY2(slowestReopenMs <= 2000, "reopening took longer than 2 s");
    qInfo(
        "%s: %d kills, %lld messages acknowledged (%d later deleted by the writer), %d kills "
        "with an answer streaming, %d before the store opened, slowest reopen %lld ms",
        mode, kIterationsPerConfig, static_cast<long long>(everAcked.size()), deletedMessages,
        inFlightAtKill, killedBeforeOpen, static_cast<long long>(slowestReopenMs));
  }

 private slots:
  void killDuringWritesSynchronousFull() { runConfig("full"); }
  void killDuringWritesSynchronousNormal() { runConfig("normal"); }
};

QTEST_GUILESS_MAIN(ChatCrashTest)
#include "chat_crash_test.moc"
