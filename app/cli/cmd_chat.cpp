// hearth-cli chat: a multi-turn conversation in the terminal, answers streamed.
#include <csignal>
#include <cstdio>
#include <iostream>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "engine/core/error.h"

namespace hearth::cli {
namespace {

CancelToken* g_cancel = nullptr;
void on_interrupt(int) {
  if (g_cancel) g_cancel->cancel();  // stops the answer being generated, not the program
}

}  // namespace

int run_chat(const std::vector<std::string>& raw) {
  const ArgParser args(raw, merge(merge(load_flags(), sampling_flags()), {"system", "max-tokens"}),
                       {});
  const LoadOptions options = load_options_from(args);
  const SamplingParams sampling = sampling_from(args);
  const auto max_tokens = static_cast<int32_t>(args.get_int("max-tokens", 1024, 1, 1 << 20));

  Engine engine;
  std::fprintf(stderr, "loading %s ...\n", options.model_path.c_str());
  load_engine(engine, options, true);
  std::fprintf(stderr, "%s is ready. Type a message; /reset starts over, /exit quits.\n",
               engine.info().name.c_str());

  std::vector<ChatMessage> messages;
  if (auto system = args.get("system")) messages.push_back({"system", *system});
  const size_t system_count = messages.size();
  CancelToken cancel;
  g_cancel = &cancel;
  std::signal(SIGINT, on_interrupt);

  std::string line;
  while (true) {
    std::fputs("\n> ", stdout);
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      messages.resize(system_count);
      std::puts("(conversation cleared)");
      continue;
    }
    if (line.empty()) continue;
    messages.push_back({"user", line});
    GenerationRequest request;
    request.messages = messages;
    request.sampling = sampling;
    request.max_tokens = max_tokens;
    cancel.reset();
    try {
      const GenerationResult r = engine.generate(
          request,
          [](const std::string& piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
          },
          cancel);
      messages.push_back({"assistant", r.text});
      std::fprintf(stderr, "\n[%.1f tok/s]", r.stats.decode_tokens_per_s());
    } catch (const Error& e) {
      messages.pop_back();
      std::fprintf(stderr, "\nerror: %s\n", e.what());
      if (e.code() == ErrorCode::kInvalidArgument) {
        std::fputs("(the conversation is too long; /reset to start over)\n", stderr);
      }
    }
  }
  std::signal(SIGINT, SIG_DFL);
  g_cancel = nullptr;
  std::puts("");
  return 0;
}

}  // namespace hearth::cli
