// libFuzzer target F5 (TESTING.md, "Fuzz targets"): a fuzzed tokenizer.json is loaded, then encodes
// and decodes a text (fuzzed too), and the streaming detokenizer must reproduce decode(). Any
// hearth::Error is an expected outcome; every other exception, crash, leak or hang is a finding.
//
// Input layout: tokenizer.json bytes, optionally followed by "\x00" and the text to encode.
// Seeds: tests/fixtures/tokenizer/synthetic/*/tokenizer.json.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  std::string_view text = "Hello <|im_start|>wörld 12345 \t\n 😀 don't";
  if (nul != std::string_view::npos) text = input.substr(nul + 1);
  try {
    const auto tok = hearth::parse_tokenizer_json(json, std::nullopt, "fuzz/tokenizer.json");
    const auto ids = tok->encode(text, true);
    for (bool skip : {false, true}) {
      const std::string decoded = tok->decode(ids, skip);
      hearth::StreamingDetokenizer stream(*tok, skip);
      std::string streamed;
      for (int32_t id : ids) streamed += stream.feed(id);
      streamed += stream.flush();
      if (streamed != decoded) std::abort();  // the streaming invariant is broken
    }
    for (int32_t id : ids) (void)tok->piece(id);
  } catch (const hearth::Error&) {
  }
  return 0;
}
