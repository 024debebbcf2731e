#include "app/desktop/store/sqlite_db.h"

#include <sqlite3.h>

namespace hearth::app {

namespace {

QString describe(sqlite3* db, const char* what, const QByteArray& sql) {
  QString msg = QStringLiteral("SQLite: %1: %2")
                    .arg(QString::fromUtf8(what), QString::fromUtf8(sqlite3_errmsg(db)));
  if (!sql.isEmpty()) msg += QStringLiteral(" (in: %1)").arg(QString::fromUtf8(sql.left(160)));
  return msg;
}

}  // namespace

SqliteStatement::SqliteStatement(sqlite3* db, const QByteArray& sql) : db_(db), sql_(sql) {
  if (sqlite3_prepare_v2(db_, sql_.constData(), int(sql_.size()), &stmt_, nullptr) != SQLITE_OK)
    raise("prepare");
}

SqliteStatement::~SqliteStatement() {
  sqlite3_finalize(stmt_);
}

void SqliteStatement::raise(const char* what) const {
  throw StoreError(describe(db_, what, sql_));
}

SqliteStatement& SqliteStatement::bind(int index, qint64 value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) raise("bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) raise("bind");
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, const QString& value) {
  const QByteArray utf8 = value.toUtf8();
  if (sqlite3_bind_text64(stmt_, index, utf8.constData(), static_cast<sqlite3_uint64>(utf8.size()),
                          SQLITE_TRANSIENT, SQLITE_UTF8) != SQLITE_OK)
    raise("bind");
  return *this;
}

SqliteStatement& SqliteStatement::bindNull(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) raise("bind");
  return *this;
}

bool SqliteStatement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  raise("step");
}

void SqliteStatement::run() {
  while (step()) {
  }
  reset();
}

void SqliteStatement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

qint64 SqliteStatement::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double SqliteStatement::real(int column) const {
  return sqlite3_column_double(stmt_, column);
}

QString SqliteStatement::text(int column) const {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return QString::fromUtf8(data, sqlite3_column_bytes(stmt_, column));
}

QByteArray SqliteStatement::bytes(int column) const {
  const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  return QByteArray(data, sqlite3_column_bytes(stmt_, column));
}

bool SqliteStatement::isNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

SqliteDb::SqliteDb(const QString& path) : path_(path) {
  const int rc = sqlite3_open_v2(path.toUtf8().constData(), &db_,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    const QString msg =
        QStringLiteral("SQLite: cannot open %1: %2")
            .arg(path, QString::fromUtf8(db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg);
  }
  sqlite3_extended_result_codes(db_, 1);
  // Another connection (a second window, a backup) may hold a lock briefly.
  sqlite3_busy_timeout(db_, 5000);
}

SqliteDb::~SqliteDb() {
  sqlite3_close_v2(db_);
}

void SqliteDb::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    QString msg = QStringLiteral("SQLite: %1 (in: %2)")
                      .arg(QString::fromUtf8(err ? err : "error"),
                           QString::fromUtf8(QByteArray(sql).left(160)));
    sqlite3_free(err);
    throw StoreError(msg);
  }
}

qint64 SqliteDb::queryInt(const char* sql) {
  SqliteStatement st(db_, sql);
  return st.step() ? st.int64(0) : 0;
}

QString SqliteDb::queryText(const char* sql) {
  SqliteStatement st(db_, sql);
  return st.step() ? st.text(0) : QString();
}

bool SqliteDb::inAutocommit() const {
  return sqlite3_get_autocommit(db_) != 0;
}

qint64 SqliteDb::lastInsertId() const {
  return sqlite3_last_insert_rowid(db_);
}
int SqliteDb::changes() const {
  return sqlite3_changes(db_);
}

Transaction::Transaction(SqliteDb& db, bool immediate) : db_(db) {
  // Inside an outer transaction this one is a savepoint, so that store operations compose.
  nested_ = !db_.inAutocommit();
  if (nested_)
    db_.exec("SAVEPOINT hearth_nested");
  else
    db_.exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction() {
  if (done_) return;
  try {
    db_.exec(nested_ ? "ROLLBACK TO hearth_nested; RELEASE hearth_nested" : "ROLLBACK");
  } catch (const StoreError&) {
    // SQLite may already have rolled the transaction back itself (e.g. after SQLITE_FULL).
  }
}

void Transaction::commit() {
  db_.exec(nested_ ? "RELEASE hearth_nested" : "COMMIT");
  done_ = true;
}

}  // namespace hearth::app
