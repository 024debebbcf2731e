// libFuzzer target F9 (TESTING.md, "Fuzz targets"): a fuzzed HTTP request body through the
// server's request checks, then (when accepted) the choices against a small context and the
// response built from made-up results. ApiException is the expected refusal; any other
// exception, crash or sanitizer report is a finding, and so is an accepted request whose
// sampling values the engine would refuse.
//
// Input layout: one byte choosing the endpoint (even: chat, odd: completions), then the body.
// Dictionary: openai_request.dict.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/core/error.h"
#include "engine/server/openai_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hearth::server;
  if (size == 0) return 0;
  const Endpoint endpoint = data[0] % 2 == 0 ? Endpoint::kChatCompletions : Endpoint::kCompletions;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const ApiRequest api = parse_request(endpoint, body, RequestLimits{});
    constexpr int64_t kVocab = 1 << 20;  // above any id the parser lets through for logit_bias
    for (const hearth::GenerationRequest& p : api.prompts) {
      try {
        p.sampling.validate(kVocab);
      } catch (const hearth::Error&) {
        __builtin_trap();  // the parser let through what the engine refuses
      }
    }
    std::vector<std::vector<int32_t>> tokens;
    for (size_t i = 0; i < api.prompts.size(); ++i)
      tokens.push_back(std::vector<int32_t>(i + 1, 7));
    const auto requests = expand_choices(api, std::move(tokens), 64);
    std::vector<hearth::GenerationResult> results(requests.size());
    for (auto& r : results) {
      r.text = "ok";
      r.tokens = {7};
      r.finish = hearth::FinishReason::kLength;
      r.stats.generated_tokens = 1;
    }
    ResponseContext ctx;
    ctx.api = &api;
    ctx.id = "fuzz";
    ctx.model = "fuzz";
    ctx.token_text = [](int32_t) { return std::string("\xff"); };
    (void)dump(response_body(ctx, results, std::vector<int64_t>(api.prompts.size(), 1)));
  } catch (const ApiException&) {
  }
  return 0;
}
