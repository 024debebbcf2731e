// Hearth's local OpenAI-compatible HTTP server (cpp-httplib): GET /v1/models, POST
// /v1/completions and /v1/chat/completions (streamed as server-sent events when asked), GET
// /health and GET /metrics, over one loaded Engine whose requests a ServingLoop batches together.
//
// Safe by default: it listens on 127.0.0.1; an address beyond this machine needs an API key; with
// a key, every route but /health needs "Authorization: Bearer <key>"; the Host header must name
// this machine (DNS rebinding); cross-origin requests are refused unless an origin is allowed;
// POST bodies must be JSON and at most max_body_bytes; past max_concurrent requests in flight
// the answer is 429. A client that goes away cancels its generation.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/api/engine.h"
#include "engine/server/openai_protocol.h"

namespace hearth::server {

class ServingLoop;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: a free port the system picks (port() tells which)
  std::string api_key;
  std::vector<std::string> allowed_hosts;  // Host header names besides this machine's own
  std::string cors_origin;                 // "": no cross-origin requests; "*": any origin
  size_t max_body_bytes = size_t{1} << 20;
  int max_concurrent = 64;  // generation requests in flight; more are answered 429
  RequestLimits limits;
  std::chrono::milliseconds shutdown_grace{10000};
};

// Whether `host` is a loopback address or name (127.0.0.0/8, ::1, localhost).
bool is_loopback(const std::string& host);

class OpenAiServer {
 public:
  // Starts listening. `engine` must be loaded and outlive the server, and nothing else may step
  // it meanwhile. Throws Error(kInvalidArgument) for options that are not safe (an address
  // beyond loopback without an API key) and Error(kIo) when the address cannot be bound.
  OpenAiServer(Engine& engine, ServerOptions options);
  // Serves through a loop that others share (the desktop app's chat): requests from both are
  // batched together. `loop` must outlive the server; stop() leaves it running.
  OpenAiServer(ServingLoop& loop, ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  int port() const;
  // Generation requests being served now, and HTTP requests answered since the start.
  int requests_in_flight() const;
  int64_t requests_served() const;
  std::string url() const;  // "http://127.0.0.1:8080/v1"
  // Refuses new generations (503), lets running ones finish for up to shutdown_grace (then
  // cancels them; their clients get a normal ending), and returns once the listener is closed.
  void stop();

 private:
  void start(std::unique_ptr<ServingLoop> owned, ServingLoop& loop, ServerOptions options);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::server
