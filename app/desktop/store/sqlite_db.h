// A thin RAII layer over the sqlite3 C API: one connection, prepared statements, transactions.
// Every failure is a hearth::app::StoreError naming the statement and SQLite's message.
#pragma once

#include <QByteArray>
#include <QString>
#include <QVariant>
#include <stdexcept>

struct sqlite3;
struct sqlite3_stmt;

namespace hearth::app {

class StoreError : public std::runtime_error {
 public:
  explicit StoreError(const QString& message) : std::runtime_error(message.toStdString()) {}
  QString message() const { return QString::fromStdString(what()); }
};

class SqliteStatement {
 public:
  SqliteStatement(sqlite3* db, const QByteArray& sql);
  ~SqliteStatement();
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Binds 1-based parameters; a null QVariant binds NULL.
  SqliteStatement& bind(int index, qint64 value);
  SqliteStatement& bind(int index, double value);
  SqliteStatement& bind(int index, const QString& value);
  SqliteStatement& bindNull(int index);

  // Advances; true while a row is available.
  bool step();
  // Runs a statement that returns no rows (or ignores them).
  void run();
  void reset();

  qint64 int64(int column) const;
  double real(int column) const;
  QString text(int column) const;
  QByteArray bytes(int column) const;  // the stored bytes as they are, without decoding
  bool isNull(int column) const;

 private:
  [[noreturn]] void raise(const char* what) const;
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  QByteArray sql_;
};

class SqliteDb {
 public:
  // Opens (creating if needed) the database file.
  explicit SqliteDb(const QString& path);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void exec(const char* sql);        // one or more statements, no parameters
  qint64 queryInt(const char* sql);  // first column of the first row
  QString queryText(const char* sql);
  bool inAutocommit() const;  // no transaction open
  qint64 lastInsertId() const;
  int changes() const;
  sqlite3* handle() const { return db_; }
  const QString& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  QString path_;
};

// Commits on commit(), rolls back if destroyed before (an exception unwinding). Nests as a
// savepoint inside an open transaction.
class Transaction {
 public:
  explicit Transaction(SqliteDb& db, bool immediate = true);
  ~Transaction();
  void commit();

 private:
  SqliteDb& db_;
  bool nested_ = false;
  bool done_ = false;
};

}  // namespace hearth::app
