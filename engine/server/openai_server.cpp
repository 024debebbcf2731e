#include "engine/server/openai_server.h"

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "engine/core/error.h"
#include "engine/server/metrics.h"
#include "engine/server/serving_loop.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// How often a waiting response writes a keep-alive (an SSE comment, or a space before a JSON
// body): a client that has gone away makes the write fail, which cancels its generation.
constexpr auto kKeepAlive = std::chrono::milliseconds(1000);

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The host name of a Host header value ("[::1]:8080" -> "::1", "localhost:80" -> "localhost").
std::string host_name(const std::string& header) {
  if (!header.empty() && header.front() == '[') {
    const size_t end = header.find(']');
    return end == std::string::npos ? header : header.substr(1, end - 1);
  }
  const size_t colon = header.find(':');
  if (colon != std::string::npos && header.find(':', colon + 1) == std::string::npos) {
    return lower(header.substr(0, colon));
  }
  return lower(header);
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(prefix) + buf;
}

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(error_body(error), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& type,
                const std::string& message, const std::string& code = {}) {
  ApiError e;
  e.status = status;
  e.type = type;
  e.message = message;
  e.code = code;
  send_error(res, e);
}

// An API error for a failure of the engine (a request it refused, or a step that failed).
ApiError engine_error(ErrorCode code, const std::string& message) {
  ApiError e;
  e.message = message;
  if (code != ErrorCode::kInvalidArgument) {
    e.status = 500;
    e.type = "server_error";
  }
  return e;
}

// cpp-httplib listens with a backlog of 5 (fixed when the library was built): a burst of
// clients connecting at once overflows it, and connections whose handshake the kernel dropped
// are reset once their request arrives. Find our listening socket and raise its backlog (Linux
// applies a second listen() to a listening socket as a new backlog).
void widen_listen_backlog(int port) {
#ifdef __linux__
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t addr_len = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) {
      bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    }
    if (bound == port) listen(fd, SOMAXCONN);
  }
#else
  (void)port;
#endif
}

}  // namespace

bool is_loopback(const std::string& host) {
  const std::string h = lower(host);
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

// One generation call, shared by its handler and its response's content provider.
struct Call {
  ApiRequest api;
  ResponseContext ctx;
  std::shared_ptr<RequestStream> stream;
  std::vector<int64_t> prompt_tokens;
  Clock::time_point submitted;
  std::vector<std::optional<GenerationResult>> results;  // by choice
  std::vector<std::optional<Clock::time_point>> first_text;
  std::vector<int64_t> text_offset;   // completions' logprobs: where each choice's text is
  std::vector<size_t> logprobs_sent;  // log-probabilities already streamed, by choice
  std::optional<ApiError> failure;    // the first choice the engine refused or lost
  int open = 0;                       // choices not yet ended
  std::shared_ptr<void> in_flight;    // counts the call as in flight while it exists
};

struct OpenAiServer::Impl {
  Impl(std::unique_ptr<ServingLoop> own, ServingLoop& shared, ServerOptions o)
      : owned_loop(std::move(own)), loop(shared), engine(shared.engine()), options(std::move(o)) {}

  std::unique_ptr<ServingLoop> owned_loop;  // null when the loop is shared
  ServingLoop& loop;
  Engine& engine;
  ServerOptions options;
  Metrics metrics;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> served{0};
  std::mutex streams_mutex;
  std::vector<std::weak_ptr<RequestStream>> streams;  // of calls that may still run
  httplib::Server http;
  std::thread listener;
  std::atomic<int> in_flight{0};
  std::string model_id;
  int64_t created = 0;
  int port = 0;
  bool stopped = false;

  bool host_allowed(const httplib::Request& req) const;
  httplib::Server::HandlerResponse screen(const httplib::Request& req, httplib::Response& res);
  void generate(Endpoint endpoint, const httplib::Request& req, httplib::Response& res);
  std::shared_ptr<Call> start_call(Endpoint endpoint, const httplib::Request& req);
  // Applies one event to the call; for streams, appends its server-sent events to `out`.
  void apply(Call& call, StreamEvent& event, std::string* out);
  void respond_whole(httplib::Response& res, std::shared_ptr<Call> call);
  void respond_stream(httplib::Response& res, std::shared_ptr<Call> call);
};

bool OpenAiServer::Impl::host_allowed(const httplib::Request& req) const {
  if (!req.has_header("Host")) return false;
  const std::string host = host_name(req.get_header_value("Host"));
  if (is_loopback(host)) return true;
  if (host == lower(options.host) && options.host != "0.0.0.0" && options.host != "::") {
    return true;
  }
  return std::any_of(options.allowed_hosts.begin(), options.allowed_hosts.end(),
                     [&](const std::string& h) { return lower(h) == host; });
}

// Runs before routing: the Host header, CORS, the API key and the body's type.
httplib::Server::HandlerResponse OpenAiServer::Impl::screen(const httplib::Request& req,
                                                            httplib::Response& res) {
  using R = httplib::Server::HandlerResponse;
  if (!host_allowed(req)) {
    send_error(res, 403, "invalid_request_error",
               "the Host header does not name this server; start it with --allowed-host to "
               "accept that name");
    return R::Handled;
  }
  const std::string origin = req.get_header_value("Origin");
  const bool origin_ok = !origin.empty() && !options.cors_origin.empty() &&
                         (options.cors_origin == "*" || options.cors_origin == origin);
  if (origin_ok) {
    res.set_header("Access-Control-Allow-Origin", options.cors_origin == "*" ? "*" : origin);
    res.set_header("Vary", "Origin");
  }
  if (req.method == "OPTIONS") {
    if (!origin_ok) {
      send_error(res, 403, "invalid_request_error",
                 "cross-origin requests from this origin are not allowed (--cors-origin)");
      return R::Handled;
    }
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.set_header("Access-Control-Max-Age", "600");
    return R::Handled;
  }
  if (!options.api_key.empty() && req.path != "/health") {
    const std::string auth = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (auth.rfind(prefix, 0) != 0 ||
        !constant_time_equal(auth.substr(prefix.size()), options.api_key)) {
      send_error(res, 401, "invalid_request_error",
                 "a valid API key is required (Authorization: Bearer <key>)", "invalid_api_key");
      return R::Handled;
    }
  }
  if (req.method == "POST" &&
      lower(req.get_header_value("Content-Type")).rfind("application/json", 0) != 0) {
    send_error(res, 415, "invalid_request_error", "the request body must be application/json");
    return R::Handled;
  }
  return R::Unhandled;
}

// Parses, tokenizes, checks and submits a request. Throws ApiException with the answer to give
// when it cannot run.
std::shared_ptr<Call> OpenAiServer::Impl::start_call(Endpoint endpoint,
                                                     const httplib::Request& req) {
  auto call = std::make_shared<Call>();
  ++in_flight;
  call->in_flight = std::shared_ptr<void>(nullptr, [this](void*) { --in_flight; });
  if (in_flight > options.max_concurrent) {
    ApiError e;
    e.status = 429;
    e.type = "rate_limit_error";
    e.code = "rate_limit_exceeded";
    e.message = "too many requests in flight (" + std::to_string(options.max_concurrent) +
                "); retry shortly";
    throw ApiException(e);
  }
  auto unavailable = [] {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "shutting_down";
    e.message = "the server is shutting down";
    return ApiException(e);
  };
  if (stopping || loop.stopping()) throw unavailable();

  call->api = parse_request(endpoint, req.body, options.limits);
  const std::string param = endpoint == Endpoint::kChatCompletions ? "messages" : "prompt";
  const int64_t vocab = engine.info().config.vocab_size;
  for (const auto& [token, bias] : call->api.prompts.front().sampling.logit_bias) {
    if (token >= vocab) {
      ApiError e;
      e.param = "logit_bias";
      e.message = "'logit_bias' names token " + std::to_string(token) + "; the vocabulary has " +
                  std::to_string(vocab);
      throw ApiException(e);
    }
  }
  // Tokenized here, on the request's own thread, so that the loop never waits for it.
  std::vector<std::vector<int32_t>> tokens;
  for (const GenerationRequest& p : call->api.prompts) {
    try {
      tokens.push_back(engine.encode_prompt(p));
    } catch (const Error& e) {
      ApiError error = engine_error(e.code(), e.what());
      error.param = param;
      throw ApiException(error);
    }
    for (int32_t id : tokens.back()) {
      if (id < 0 || id >= vocab) {
        ApiError e;
        e.param = param;
        e.message = "token id " + std::to_string(id) + " is outside the vocabulary";
        throw ApiException(e);
      }
    }
    call->prompt_tokens.push_back(static_cast<int64_t>(tokens.back().size()));
  }
  std::vector<GenerationRequest> requests =
      expand_choices(call->api, std::move(tokens), engine.max_seq_len());

  call->ctx.api = &call->api;
  call->ctx.id = random_id(endpoint == Endpoint::kChatCompletions ? "chatcmpl-" : "cmpl-");
  call->ctx.created = static_cast<int64_t>(std::time(nullptr));
  call->ctx.model = model_id;
  const Tokenizer& tokenizer = engine.tokenizer();
  call->ctx.token_text = [&tokenizer](int32_t id) {
    const int32_t ids[] = {id};
    return tokenizer.decode(ids, false);
  };
  call->open = static_cast<int>(requests.size());
  call->results.resize(requests.size());
  call->first_text.resize(requests.size());
  call->text_offset.assign(requests.size(), 0);
  call->logprobs_sent.assign(requests.size(), 0);
  try {
    call->stream = loop.submit(std::move(requests));
  } catch (const Error&) {
    throw unavailable();
  }
  {
    std::lock_guard lock(streams_mutex);
    std::erase_if(streams, [](const std::weak_ptr<RequestStream>& w) { return w.expired(); });
    streams.push_back(call->stream);
  }
  call->submitted = Clock::now();
  return call;
}

void OpenAiServer::Impl::apply(Call& call, StreamEvent& event, std::string* out) {
  const int c = event.choice;
  auto sse = [&](const json& j) { *out += "data: " + dump(j) + "\n\n"; };
  switch (event.kind) {
    case StreamEvent::Kind::kText: {
      const bool first = !call.first_text[c];
      if (first) call.first_text[c] = Clock::now();
      call.logprobs_sent[c] += event.logprobs.size();
      if (out) {
        sse(text_chunk(call.ctx, c, event.text, event.logprobs, first, call.text_offset[c]));
      }
      break;
    }
    case StreamEvent::Kind::kDone: {
      GenerationResult& r = event.result;
      const double first_s =
          std::chrono::duration<double>((call.first_text[c] ? *call.first_text[c] : Clock::now()) -
                                        call.submitted)
              .count();
      const int64_t n = r.stats.generated_tokens;
      metrics.generation_done(r.stats.prompt_tokens, n, first_s,
                              n > 1 ? r.stats.decode_seconds / static_cast<double>(n - 1) : 0.0);
      if (out) {
        if (!call.first_text[c] && call.api.endpoint == Endpoint::kChatCompletions) {
          sse(text_chunk(call.ctx, c, "", {}, true, call.text_offset[c]));  // the role
        }
        // Log-probabilities of tokens whose text never came (held back, or cut by a stop).
        const std::span<const TokenLogprobs> shown = shown_logprobs(r);
        sse(end_chunk(call.ctx, c, r.finish,
                      shown.subspan(std::min(shown.size(), call.logprobs_sent[c])),
                      call.text_offset[c]));
      }
      call.results[c] = std::move(r);
      --call.open;
      break;
    }
    case StreamEvent::Kind::kFailed: {
      const ApiError e = engine_error(event.code, event.error);
      if (!call.failure) call.failure = e;
      if (out) *out += "data: " + error_body(e) + "\n\n";
      --call.open;
      break;
    }
  }
}

// A non-streaming answer: one JSON body once every choice has ended. While waiting, a space is
// written every second (JSON allows leading whitespace): a failed write means the client left.
void OpenAiServer::Impl::respond_whole(httplib::Response& res, std::shared_ptr<Call> call) {
  // Most refusals come at once: wait briefly so that they still get their own status.
  const auto until = Clock::now() + std::chrono::milliseconds(500);
  StreamEvent event;
  while (call->open > 0 && Clock::now() < until &&
         call->stream->next(
             event, std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()))) {
    apply(*call, event, nullptr);
  }
  auto body = [call]() -> std::string {
    if (call->failure) return error_body(*call->failure);
    std::vector<GenerationResult> results;
    for (auto& r : call->results) results.push_back(std::move(*r));
    return dump(response_body(call->ctx, results, call->prompt_tokens));
  };
  if (call->open == 0) {
    if (call->failure) {
      send_error(res, *call->failure);
    } else {
      res.set_content(body(), "application/json");
    }
    return;
  }
  res.set_chunked_content_provider(
      "application/json",
      [this, call, body, last_write = Clock::now()](size_t, httplib::DataSink& sink) mutable {
        StreamEvent e;
        for (auto now = Clock::now(); call->open > 0 && now - last_write < kKeepAlive;
             now = Clock::now()) {
          const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
              kKeepAlive - (now - last_write));
          if (call->stream->next(e, wait)) apply(*call, e, nullptr);
        }
        if (call->open > 0) {
          last_write = Clock::now();
          return sink.write(" ", 1);
        }
        const std::string text = body();
        if (!sink.write(text.data(), text.size())) return false;
        sink.done();
        return true;
      },
      [call](bool success) {
        if (!success) call->stream->cancel();
      });
}

// A streaming answer: server-sent events in OpenAI's framing, "data: [DONE]" last. While no
// token comes, an SSE comment is written every second, so a client that left is noticed.
void OpenAiServer::Impl::respond_stream(httplib::Response& res, std::shared_ptr<Call> call) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, call](size_t, httplib::DataSink& sink) {
        std::string out;
        StreamEvent e;
        if (!call->stream->next(e, kKeepAlive)) {
          out = ": keep-alive\n\n";
        } else {
          apply(*call, e, &out);
          while (call->open > 0 && call->stream->next(e, std::chrono::milliseconds(0))) {
            apply(*call, e, &out);
          }
        }
        if (call->open == 0) {
          if (call->api.include_usage) {
            int64_t prompts = 0, completion = 0;
            std::vector<int64_t> cached;
            for (int64_t p : call->prompt_tokens) prompts += p;
            for (const auto& r : call->results) {
              if (r) completion += r->stats.generated_tokens;
              cached.push_back(r ? r->stats.cached_prompt_tokens : 0);
            }
            const int64_t reused = usage_cached_tokens(cached, call->prompt_tokens.size());
            out += "data: " + dump(usage_chunk(call->ctx, prompts, completion, reused)) + "\n\n";
          }
          out += "data: [DONE]\n\n";
        }
        if (!sink.write(out.data(), out.size())) return false;
        if (call->open == 0) sink.done();
        return true;
      },
      [call](bool success) {
        if (!success) call->stream->cancel();
      });
}

void OpenAiServer::Impl::generate(Endpoint endpoint, const httplib::Request& req,
                                  httplib::Response& res) {
  std::shared_ptr<Call> call;
  try {
    ServingLoop::Arrival arriving = loop.arrival();  // until start_call has submitted
    call = start_call(endpoint, req);
  } catch (const ApiException& e) {
    send_error(res, e.error());
    return;
  }
  res.set_header("X-Request-Id", call->ctx.id);
  if (call->api.stream) {
    respond_stream(res, call);
  } else {
    respond_whole(res, call);
  }
}

OpenAiServer::OpenAiServer(Engine& engine, ServerOptions options) {
  if (!engine.loaded()) fail(ErrorCode::kInvalidArgument, "the server needs a loaded model");
  auto loop = std::make_unique<ServingLoop>(engine);
  ServingLoop& shared = *loop;
  start(std::move(loop), shared, std::move(options));
}

OpenAiServer::OpenAiServer(ServingLoop& loop, ServerOptions options) {
  start(nullptr, loop, std::move(options));
}

void OpenAiServer::start(std::unique_ptr<ServingLoop> owned, ServingLoop& loop,
                         ServerOptions options) {
  if (!is_loopback(options.host) && options.api_key.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "listening on " + options.host +
             " reaches beyond this machine: set an API key (--api-key or HEARTH_API_KEY)");
  }
  if (options.port < 0 || options.port > 65535) {
    fail(ErrorCode::kInvalidArgument, "the port must be between 0 and 65535");
  }
  if (options.max_concurrent < 1) fail(ErrorCode::kInvalidArgument, "max_concurrent must be >= 1");
  // A client that disconnects must fail our write, not end the process.
  std::signal(SIGPIPE, SIG_IGN);

  impl_ = std::make_unique<Impl>(std::move(owned), loop, std::move(options));
  Impl& s = *impl_;
  s.model_id = s.engine.info().name;
  s.created = static_cast<int64_t>(std::time(nullptr));
  httplib::Server& http = s.http;
  // Each request in flight holds a thread while it streams: room for all, and for /health.
  const size_t threads = static_cast<size_t>(s.options.max_concurrent) + 8;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // cpp-httplib's default socket options include SO_REUSEPORT, which lets a second server (the
  // app and hearth-cli serve, say) bind the same port and silently take half its connections.
  // SO_REUSEADDR alone still allows a quick restart on the port.
  http.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_payload_max_length(s.options.max_body_bytes);
  http.set_read_timeout(10, 0);
  http.set_write_timeout(10, 0);
  http.set_pre_routing_handler(
      [&s](const httplib::Request& req, httplib::Response& res) { return s.screen(req, res); });
  // Counted once the whole response is written (a streamed answer counts when it ends), so a
  // client may read its answer a moment before the count moves.
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    // Routes by name, every other path as one: a client cannot grow the metrics without bound.
    static const std::set<std::string> kRoutes = {"/health", "/metrics", "/v1/models",
                                                  "/v1/completions", "/v1/chat/completions"};
    const std::string route = kRoutes.count(req.path)                 ? req.path
                              : req.path.rfind("/v1/models/", 0) == 0 ? "/v1/models/{id}"
                                                                      : "other";
    s.metrics.request_done(route, res.status);
    ++s.served;
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404:
        send_error(res, 404, "invalid_request_error", "no such route", "not_found");
        break;
      case 413:
        send_error(res, 413, "invalid_request_error", "the request body is too large",
                   "request_too_large");
        break;
      default:
        send_error(res, res.status, res.status >= 500 ? "server_error" : "invalid_request_error",
                   "the request could not be handled (HTTP " + std::to_string(res.status) + ")");
    }
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, 500, "server_error", what);
      });

  http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    const bool up = !s.stopping && !s.loop.stopping();
    res.status = up ? 200 : 503;
    res.set_content(dump(json{{"status", up ? "ok" : "shutting down"}, {"model", s.model_id}}),
                    "application/json");
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics.render(s.loop.stats(), s.in_flight.load()),
                    "text/plain; version=0.0.4");
  });
  auto model_json = [&s] {
    return json{
        {"id", s.model_id}, {"object", "model"}, {"created", s.created}, {"owned_by", "hearth"}};
  };
  http.Get("/v1/models", [model_json](const httplib::Request&, httplib::Response& res) {
    res.set_content(dump(json{{"object", "list"}, {"data", json::array({model_json()})}}),
                    "application/json");
  });
  http.Get(R"(/v1/models/(.+))",
           [&s, model_json](const httplib::Request& req, httplib::Response& res) {
             if (req.matches[1] != s.model_id) {
               send_error(res, 404, "invalid_request_error",
                          "the model '" + std::string(req.matches[1]) + "' is not served here",
                          "model_not_found");
               return;
             }
             res.set_content(dump(model_json()), "application/json");
           });
  http.Post("/v1/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    s.generate(Endpoint::kCompletions, req, res);
  });
  http.Post("/v1/chat/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    s.generate(Endpoint::kChatCompletions, req, res);
  });

  if (s.options.port == 0) {
    s.port = http.bind_to_any_port(s.options.host);
  } else {
    s.port = http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1;
  }
  if (s.port <= 0) {
    fail(ErrorCode::kIo, "cannot listen on " + s.options.host + ":" +
                             std::to_string(s.options.port) +
                             " (in use, or not an address of this machine)");
  }
  widen_listen_backlog(s.port);
  s.listener = std::thread([&http] { http.listen_after_bind(); });
  // cpp-httplib's stop() does nothing before the listener has started, and the listener would
  // then run forever: return only once it runs, so that a stop() right away still ends it.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!http.is_running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

OpenAiServer::~OpenAiServer() {
  if (impl_) stop();
}

int OpenAiServer::port() const {
  return impl_->port;
}

int OpenAiServer::requests_in_flight() const {
  return impl_->in_flight.load();
}

int64_t OpenAiServer::requests_served() const {
  return impl_->served.load();
}

std::string OpenAiServer::url() const {
  const std::string& h = impl_->options.host;
  const std::string host = h.find(':') != std::string::npos ? "[" + h + "]" : h;
  return "http://" + host + ":" + std::to_string(impl_->port) + "/v1";
}

void OpenAiServer::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  // New generations are refused (503) from here on; running ones get the grace to finish.
  s.stopping = true;
  auto wait_for_calls = [&s](std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (s.in_flight > 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  if (s.owned_loop) {
    s.owned_loop->stop(s.options.shutdown_grace);
  } else {
    // The loop goes on serving its other users: end only this server's requests.
    wait_for_calls(s.options.shutdown_grace);
    std::lock_guard lock(s.streams_mutex);
    for (const auto& weak : s.streams) {
      if (auto stream = weak.lock()) stream->cancel();
    }
  }
  // The responses write their last events before the connections close: cpp-httplib's stop()
  // ends every response still being written.
  wait_for_calls(std::chrono::seconds(5));
  s.http.stop();
  if (s.listener.joinable()) s.listener.join();
}

}  // namespace hearth::server
