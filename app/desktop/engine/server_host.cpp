#include "app/desktop/engine/server_host.h"

#include <chrono>
#include <exception>

#include "engine/core/error.h"

#if HEARTH_WITH_SERVER
#include "engine/server/openai_server.h"
#include "engine/server/serving_loop.h"
#endif

namespace hearth::app {

namespace {

LocalServerStatus statusOf(LocalServerStatus::State state) {
  LocalServerStatus s;
  s.state = state;
  return s;
}

}  // namespace

#if HEARTH_WITH_SERVER
struct ServerHost::Server {
  Server(hearth::server::ServingLoop& l, const LocalServerConfig& c,
         const hearth::server::ServerOptions& options)
      : loop(&l), config(c), http(l, options) {}
  hearth::server::ServingLoop* loop;
  LocalServerConfig config;
  hearth::server::OpenAiServer http;
};
#else
struct ServerHost::Server {};
#endif

ServerHost::ServerHost() = default;

ServerHost::~ServerHost() {
  std::lock_guard lock(mutex_);
  stopServer();
}

bool ServerHost::available() {
#if HEARTH_WITH_SERVER
  return true;
#else
  return false;
#endif
}

void ServerHost::setListener(Listener listener) {
  std::lock_guard lock(statusMutex_);
  listener_ = std::move(listener);
}

void ServerHost::attach(hearth::server::ServingLoop& loop) {
  std::lock_guard lock(mutex_);
  loop_ = &loop;
  reconcile();
}

void ServerHost::detach() {
  std::lock_guard lock(mutex_);
  stopServer();
  loop_ = nullptr;
  reconcile();
}

void ServerHost::configure(const LocalServerConfig& config) {
  std::lock_guard lock(mutex_);
  config_ = config;
  reconcile();
}

LocalServerStatus ServerHost::status() const {
  std::lock_guard lock(statusMutex_);
  return status_;
}

LocalServerCounters ServerHost::counters() const {
  std::lock_guard lock(countersMutex_);
  LocalServerCounters c;
  c.served = servedBefore_;
#if HEARTH_WITH_SERVER
  if (live_) {
    c.inFlight = live_->http.requests_in_flight();
    c.served += live_->http.requests_served();
  }
#endif
  return c;
}

void ServerHost::stopServer() {
  if (!server_) return;
#if HEARTH_WITH_SERVER
  // The counters stay readable while it stops (its requests end as cancelled).
  server_->http.stop();
  {
    std::lock_guard lock(countersMutex_);
    servedBefore_ += server_->http.requests_served();
    live_ = nullptr;
  }
#endif
  server_.reset();
}

void ServerHost::reconcile() {
  using State = LocalServerStatus::State;
#if HEARTH_WITH_SERVER
  // A server that no longer matches (turned off, another port or key, another loop) goes first.
  if (server_ && (!config_.enabled || server_->loop != loop_ || !(server_->config == config_))) {
    stopServer();
  }
  if (!config_.enabled) return publish(statusOf(State::Off));
  if (!loop_) return publish(statusOf(State::WaitingForModel));
  if (server_) return;  // already serving as configured
  hearth::server::ServerOptions options;
  options.host = "127.0.0.1";  // never beyond this machine: the app has no host setting
  options.port = config_.port;
  options.api_key = config_.apiKey.toStdString();
  // Turning it off or loading another model ends its requests at once (as cancelled).
  options.shutdown_grace = std::chrono::milliseconds(0);
  LocalServerStatus s;
  try {
    auto server = std::make_unique<Server>(*loop_, config_, options);
    s.state = State::Running;
    s.url = QString::fromStdString(server->http.url());
    s.port = server->http.port();
    s.model = QString::fromStdString(loop_->engine().info().name);  // const: any thread may ask
    {
      std::lock_guard lock(countersMutex_);
      live_ = server.get();
    }
    server_ = std::move(server);
  } catch (const hearth::Error& e) {
    s.state = State::Failed;
    s.portUnavailable = e.code() == hearth::ErrorCode::kIo;
    s.error = QString::fromUtf8(e.what());
  } catch (const std::exception& e) {
    s.state = State::Failed;
    s.error = QString::fromUtf8(e.what());
  }
  publish(s);
#else
  publish(statusOf(config_.enabled ? State::Unavailable : State::Off));
#endif
}

void ServerHost::publish(LocalServerStatus status) {
  std::lock_guard lock(statusMutex_);
  status_ = std::move(status);
  if (listener_) listener_(status_);
}

}  // namespace hearth::app
