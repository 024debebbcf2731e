// hearth-cli serve: the OpenAI-compatible server over one loaded model, until SIGINT or SIGTERM
// (then running requests get shutdown_grace to finish, and the process exits cleanly).
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/server/openai_server.h"

namespace hearth::cli {

int run_serve(const std::vector<std::string>& raw) {
  const ArgParser args(
      raw,
      merge(load_flags(), {"host", "port", "api-key", "cors-origin", "allowed-host",
                           "max-concurrent", "max-body", "shutdown-grace"}),
      {});
  LoadOptions load = load_options_from(args);
  // A server batches many requests: room for 16 sequences unless --max-batch says otherwise.
  if (!args.has("max-batch")) load.max_batch = 16;
  server::ServerOptions options;
  options.host = args.get("host").value_or("127.0.0.1");
  options.port = static_cast<int>(args.get_int("port", 8080, 0, 65535));
  if (auto key = args.get("api-key")) {
    options.api_key = *key;
  } else if (const char* env = std::getenv("HEARTH_API_KEY"); env && *env) {
    options.api_key = env;
  }
  options.cors_origin = args.get("cors-origin").value_or("");
  if (auto hosts = args.get("allowed-host")) options.allowed_hosts = split_list(*hosts);
  options.max_concurrent = static_cast<int>(args.get_int("max-concurrent", 64, 1, 4096));
  options.max_body_bytes =
      static_cast<size_t>(args.get_int("max-body", int64_t{1} << 20, 1024, int64_t{1} << 30));
  options.shutdown_grace =
      std::chrono::milliseconds(args.get_int("shutdown-grace", 10, 0, 3600) * 1000);
  if (!server::is_loopback(options.host) && options.api_key.empty()) {
    throw UsageError("--host " + options.host +
                     " reaches beyond this machine: give --api-key (or set HEARTH_API_KEY)");
  }

  // The signals are taken by this thread alone (sigwait below): block them before any other
  // thread starts, so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Engine engine;
  load_engine(engine, load, true);
  server::OpenAiServer server(engine, options);
  std::printf("serving %s at %s (Ctrl-C stops)\n", engine.info().name.c_str(),
              server.url().c_str());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  std::fprintf(stderr, "hearth-cli: stopping (%s)\n", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  server.stop();
  return 0;
}

}  // namespace hearth::cli
