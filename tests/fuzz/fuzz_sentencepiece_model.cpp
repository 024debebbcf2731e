// libFuzzer target F6 (TESTING.md, "Fuzz targets"): a fuzzed sentencepiece tokenizer.model is
// validated, loaded by libsentencepiece and used to encode and decode. Any hearth::Error is an
// expected outcome; a crash, leak, hang or other exception is a finding. Seeds:
// tests/fixtures/tokenizer/spm/*.model.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_loaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view model(reinterpret_cast<const char*>(data), size);
  try {
    const auto tok = hearth::parse_sentencepiece_model(model, std::nullopt, "fuzz/tokenizer.model");
    const auto ids = tok->encode("Hello wörld 12345 \t\n 😀 <s> </s> ＡＢＣ", true);
    (void)tok->decode(ids, false);
    (void)tok->decode(ids, true);
  } catch (const hearth::Error&) {
  }
  return 0;
}
