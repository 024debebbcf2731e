// libFuzzer target F8 (TESTING.md, "Fuzz targets"): fuzzed text through fixed tokenizers.
//  - byte-level BPE (Llama 3 layout) is lossless on bytes: decode(encode(x)) equals x with
//    invalid UTF-8 replaced, exactly as a lossy UTF-8 conversion of x;
//  - the streaming detokenizer reproduces decode() and emits only whole characters;
//  - the native SentencePiece-BPE (GGUF "llama" vocabulary) gives libsentencepiece's ids on
//    valid UTF-8.
// Fixtures are read from the source tree: $HEARTH_SOURCE_DIR, or the current directory
// (scripts/fuzz.sh runs from the repository root).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/io/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_loaders.h"
#include "engine/tokenizer/utf8.h"

namespace {

std::string fixtures_dir() {
  const char* root = std::getenv("HEARTH_SOURCE_DIR");
  return std::string(root && *root ? root : ".") + "/tests/fixtures/tokenizer/";
}

std::string fixture(const std::string& relative) {
  std::ifstream in(fixtures_dir() + relative, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "missing fixture %s%s (run from the repository root)\n",
                 fixtures_dir().c_str(), relative.c_str());
    std::abort();
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Tokenizers {
  std::unique_ptr<hearth::Tokenizer> byte_level =
      hearth::parse_tokenizer_json(fixture("synthetic/llama3/tokenizer.json"),
                                   fixture("synthetic/llama3/tokenizer_config.json"), "llama3");
  std::unique_ptr<hearth::Tokenizer> spm =
      hearth::parse_sentencepiece_model(fixture("spm/bpe.model"), std::nullopt, "bpe.model");
  hearth::GgufFile gguf = hearth::GgufFile::open(fixtures_dir() + "spm/bpe_vocab.gguf");
  std::unique_ptr<hearth::Tokenizer> native = hearth::load_tokenizer_from_gguf(gguf);
};

const Tokenizers& tokenizers() {
  static const Tokenizers t;
  return t;
}

void check_stream(const hearth::Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (bool skip : {false, true}) {
    hearth::StreamingDetokenizer stream(tok, skip);
    std::string streamed;
    for (int32_t id : ids) {
      const std::string piece = stream.feed(id);
      if (!hearth::utf8::is_valid(piece)) std::abort();
      streamed += piece;
    }
    streamed += stream.flush();
    if (streamed != tok.decode(ids, skip)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& t = tokenizers();
  const auto ids = t.byte_level->encode(text);
  if (t.byte_level->decode(ids) != hearth::utf8::to_valid_lossy(text)) std::abort();
  check_stream(*t.byte_level, ids);

  if (hearth::utf8::is_valid(text)) {
    const auto spm_ids = t.spm->encode(text);
    if (t.native->encode(text) != spm_ids) std::abort();
    check_stream(*t.native, spm_ids);
    check_stream(*t.spm, spm_ids);
  }
  return 0;
}
