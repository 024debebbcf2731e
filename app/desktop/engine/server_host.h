// The local OpenAI-compatible server's life, whichever thread asks: the engine worker attaches
// its serving loop after each load and detaches it before the loop stops; the settings
// (LocalServer) configure it from a thread of their own, because stopping a server waits for its
// requests to end. One mutex orders the three, so a server never outlives the loop it serves;
// the counters have a lock of their own that no start or stop holds, so the UI may read them.
// The server listens on 127.0.0.1 only. In a build without cpp-httplib it reports Unavailable.
#pragma once

#include <QString>
#include <functional>
#include <memory>
#include <mutex>

namespace hearth::server {
class ServingLoop;
}

namespace hearth::app {

struct LocalServerConfig {
  bool enabled = false;
  int port = 8080;  // 0: a free port the system picks
  QString apiKey;   // empty: none (loopback only, so any program of this machine may connect)
  bool operator==(const LocalServerConfig&) const = default;
};

struct LocalServerStatus {
  enum class State { Off, WaitingForModel, Running, Failed, Unavailable };
  State state = State::Off;
  QString url;                   // Running: what clients are given, "http://127.0.0.1:8080/v1"
  int port = 0;                  // Running: the port it listens on
  QString model;                 // Running: the id /v1/models names
  bool portUnavailable = false;  // Failed: the port cannot be bound (in use, or privileged)
  QString error;                 // Failed: the engine's message
};

struct LocalServerCounters {
  int inFlight = 0;   // generation requests running now
  qint64 served = 0;  // HTTP requests answered since the host was created (over every restart)
};

class ServerHost {
 public:
  // Called on the thread that changed the status (the worker's or the configuring one), with
  // the host's lock held: post it elsewhere, never call back into the host.
  using Listener = std::function<void(const LocalServerStatus&)>;

  ServerHost();
  ~ServerHost();
  ServerHost(const ServerHost&) = delete;
  ServerHost& operator=(const ServerHost&) = delete;

  static bool available();  // whether this build has the server

  void setListener(Listener listener);
  // The worker's side: `loop` serves the loaded model until detach(), which stops the server
  // (its running requests end as cancelled) before the caller stops the loop.
  void attach(hearth::server::ServingLoop& loop);
  void detach();
  // Starts, restarts (another port or key) or stops the server. Blocks while a server stops.
  void configure(const LocalServerConfig& config);

  LocalServerStatus status() const;
  LocalServerCounters counters() const;  // never waits for a start or a stop

 private:
  struct Server;
  void reconcile();   // mutex_ held: makes the server match config_ and loop_
  void stopServer();  // mutex_ held
  void publish(LocalServerStatus status);

  std::mutex mutex_;  // orders attach, detach and configure; held across starts and stops
  hearth::server::ServingLoop* loop_ = nullptr;
  LocalServerConfig config_;
  std::unique_ptr<Server> server_;  // with the config and loop it was started with

  mutable std::mutex countersMutex_;
  const Server* live_ = nullptr;  // server_ while it may be read
  qint64 servedBefore_ = 0;       // by servers already stopped

  mutable std::mutex statusMutex_;
  LocalServerStatus status_;
  Listener listener_;
};

}  // namespace hearth::app
