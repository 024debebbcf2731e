// The local OpenAI-compatible server as the settings show it (QML singleton LocalServer): on/off,
// the port and the API key (kept in AppSettings), the address to paste into other programs, its
// status and the live request counts. It serves whatever model the app has loaded, through the
// engine worker's serving loop, on 127.0.0.1 only; with no model loaded it stays on and waits
// (nothing listens meanwhile). Changes are applied by ServerHost on a thread of this object's
// own, in order, because stopping a server waits for its requests; the status comes back as a
// queued call and the counters are read once a second while it runs.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QPointer>
#include <QQmlEngine>
#include <QThreadPool>
#include <QTimer>
#include <memory>

#include "app/desktop/engine/server_host.h"

namespace hearth::app {

class AppSettings;

class LocalServer : public QObject {
  Q_OBJECT
  QML_ELEMENT
  QML_SINGLETON

  Q_PROPERTY(bool available READ available CONSTANT)  // false: built without the server
  Q_PROPERTY(bool enabled READ enabled WRITE setEnabled NOTIFY enabledChanged)
  Q_PROPERTY(int port READ port WRITE setPort NOTIFY portChanged)
  Q_PROPERTY(QString apiKey READ apiKey WRITE setApiKey NOTIFY apiKeyChanged)
  Q_PROPERTY(Status status READ status NOTIFY statusChanged)
  Q_PROPERTY(bool running READ running NOTIFY statusChanged)
  // What clients are given: the listening address while it runs, else the configured one.
  Q_PROPERTY(QString url READ url NOTIFY urlChanged)
  Q_PROPERTY(QString model READ model NOTIFY statusChanged)  // the id /v1/models names
  Q_PROPERTY(QString error READ error NOTIFY statusChanged)  // the engine's words, when it failed
  Q_PROPERTY(int requestsInFlight READ requestsInFlight NOTIFY countersChanged)
  Q_PROPERTY(qint64 requestsServed READ requestsServed NOTIFY countersChanged)

 public:
  enum Status { Off, WaitingForModel, Running, PortUnavailable, Failed, Unavailable };
  Q_ENUM(Status)

  // No default constructor: Qt 6.4 would build a second instance for QML instead of calling
  // create(). `host` comes from the engine worker (EngineController::serverHost()).
  LocalServer(std::shared_ptr<ServerHost> host, AppSettings* settings, QObject* parent = nullptr);
  ~LocalServer() override;  // turns the server off
  static LocalServer* create(QQmlEngine*, QJSEngine*);
  static void setInstance(LocalServer* instance);

  bool available() const { return ServerHost::available(); }
  bool enabled() const;
  void setEnabled(bool value);
  int port() const;
  void setPort(int value);  // 0: a free port the system picks
  QString apiKey() const;
  void setApiKey(const QString& value);
  Status status() const { return status_; }
  bool running() const { return status_ == Running; }
  QString url() const;
  QString model() const { return model_; }
  QString error() const { return error_; }
  int requestsInFlight() const { return counters_.inFlight; }
  qint64 requestsServed() const { return counters_.served; }

  // A new key of 32 random bytes from the system's generator, as 64 hex digits: set and returned.
  Q_INVOKABLE QString generateApiKey();

  // For tests: returns once every change made so far is applied.
  void waitUntilApplied();

 signals:
  void enabledChanged();
  void portChanged();
  void apiKeyChanged();
  void statusChanged();
  void urlChanged();
  void countersChanged();

 private:
  void apply();  // hands the settings to the host, on applier_'s thread
  void onStatus(const LocalServerStatus& status);
  void pollCounters();

  std::shared_ptr<ServerHost> host_;
  QPointer<AppSettings> settings_;
  QThreadPool applier_;  // one thread: changes are applied in the order they were made
  QTimer counterTimer_;
  Status status_ = Off;
  QString runningUrl_;
  QString model_;
  QString error_;
  LocalServerCounters counters_;
};

}  // namespace hearth::app
