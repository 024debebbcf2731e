// hearth-cli generate: one prompt, streamed to stdout or printed as one JSON object.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"

namespace hearth::cli {

int run_generate(const std::vector<std::string>& raw) {
  const ArgParser args(
      raw, merge(merge(load_flags(), sampling_flags()), {"prompt", "max-tokens", "stop", "system"}),
      {"chat", "json", "ignore-eos"});
  const LoadOptions options = load_options_from(args);
  GenerationRequest request;
  const std::string prompt = args.require("prompt");
  request.sampling = sampling_from(args);
  request.max_tokens = static_cast<int32_t>(args.get_int("max-tokens", 256, 0, 1 << 20));
  if (auto stop = args.get("stop")) request.stop_strings.push_back(*stop);
  request.ignore_eos = args.has("ignore-eos");
  if (args.has("chat")) {
    if (auto system = args.get("system")) request.messages.push_back({"system", *system});
    request.messages.push_back({"user", prompt});
  } else {
    if (args.has("system")) throw UsageError("--system needs --chat");
    request.prompt = prompt;
  }
  const bool json = args.has("json");

  Engine engine;
  load_engine(engine, options, !json);
  TextCallback stream;
  if (!json) {
    stream = [](const std::string& piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
  }
  const GenerationResult result = engine.generate(request, stream);
  if (json) {
    nlohmann::json j;
    j["text"] = result.text;
    j["tokens"] = result.tokens;
    j["prompt_tokens"] = result.stats.prompt_tokens;
    j["cached_tokens"] = result.stats.cached_prompt_tokens;
    j["generated_tokens"] = result.stats.generated_tokens;
    j["proposed_tokens"] = result.stats.proposed_tokens;
    j["accepted_tokens"] = result.stats.accepted_tokens;
    j["prompt_tokens_per_s"] = result.stats.prompt_tokens_per_s();
    j["decode_tokens_per_s"] = result.stats.decode_tokens_per_s();
    j["finish_reason"] = finish_reason_name(result.finish);
    j["adapters"] = nlohmann::json::array();
    for (const AppliedAdapter& a : result.adapters) {
      j["adapters"].push_back({{"name", a.name}, {"path", a.path.string()}, {"weight", a.weight}});
    }
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::printf("\n");
    std::fflush(stdout);  // the statistics on stderr come after the text's last line
    std::string speculation;
    if (result.stats.proposed_tokens > 0) {
      speculation = ", " + std::to_string(result.stats.accepted_tokens) + " of " +
                    std::to_string(result.stats.proposed_tokens) + " proposed tokens kept";
    }
    std::fprintf(
        stderr, "[%lld prompt tokens at %.1f tok/s, %lld generated at %.1f tok/s%s, %s]\n",
        static_cast<long long>(result.stats.prompt_tokens), result.stats.prompt_tokens_per_s(),
        static_cast<long long>(result.stats.generated_tokens), result.stats.decode_tokens_per_s(),
        speculation.c_str(), finish_reason_name(result.finish));
  }
  return 0;
}

}  // namespace hearth::cli
