// Encode throughput (printed, not judged beyond a floor that catches quadratic behaviour), and
// bounded time on inputs that are one huge word.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "engine/io/gguf_file.h"
#include "engine/tokenizer/tokenizer_loaders.h"
#include "tests/unit/tokenizer/fixture_cases.h"

namespace hearth {
namespace {

// About 4 MB of mixed text: the fixture strings and prose, repeated.
std::string corpus() {
  std::string text;
  const auto cases = test::load_cases(test::tokenizer_fixtures() / "smollm2_cases.json");
  while (text.size() < (4u << 20))
    for (const auto& c : cases) text += c.text + "\n";
  return text;
}

// About 4 MB of English prose and code: the repository's own documentation, repeated.
std::string prose() {
  std::string docs;
  for (const char* name : {"README.md", "docs/ARCHITECTURE.md", "docs/DEVELOPERS.md"})
    if (std::filesystem::exists(test::source_dir() / name))
      docs += test::read_file(test::source_dir() / name);
  if (docs.empty()) return {};
  std::string text;
  while (text.size() < (4u << 20)) text += docs;
  return text;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report(const char* name, const Tokenizer& tok, const std::string& text) {
  tok.encode(text.substr(0, 1 << 16));  // warm the piece cache a little, as a server would be
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tok.encode(text);
  const double s = seconds_since(start);
  const double mb_s = static_cast<double>(text.size()) / 1e6 / s;
  std::printf("[ speed    ] %-28s %7.2f MB/s  (%zu bytes -> %zu ids in %.3f s)\n", name, mb_s,
              text.size(), ids.size(), s);
  EXPECT_GT(mb_s, 0.05) << name;  // catches quadratic behaviour, even in sanitizer builds
}

TEST(TokenizerSpeed, EncodeThroughput) {
  const std::string text = corpus();
  if (std::filesystem::exists(test::test_model())) {
    const auto gguf = GgufFile::open(test::test_model());
    const auto smollm2 = load_tokenizer_from_gguf(gguf);
    report("SmolLM2 (GGUF, byte BPE)", *smollm2, text);
    if (const std::string docs = prose(); !docs.empty())
      report("SmolLM2 on English docs", *smollm2, docs);
  }
  const auto synth = test::tokenizer_fixtures() / "synthetic";
  report("llama3 layout (tokenizer.json)", *load_tokenizer(synth / "llama3"), text);
  report("llama2 layout (tokenizer.json)", *load_tokenizer(synth / "llama2_style"), text);
  const auto spm = test::tokenizer_fixtures() / "spm";
  report("sentencepiece BPE (libspm)",
         *parse_sentencepiece_model(test::read_file(spm / "bpe.model"), std::nullopt, "bpe.model"),
         text);
  report("sentencepiece BPE (GGUF, native)",
         *load_tokenizer_from_gguf(GgufFile::open(spm / "bpe_vocab.gguf")), text);
}

TEST(TokenizerSpeed, HugeWordsTakeBoundedTime) {
  // 1 MB without any split point: a single BPE piece / a single SentencePiece run.
  std::mt19937 rng(1);
  std::string word(1 << 20, 'a');
  for (auto& c : word) c = static_cast<char>('a' + rng() % 26);
  const auto synth = test::tokenizer_fixtures() / "synthetic";
  for (const char* layout : {"gpt2_added", "llama2_style"}) {
    const auto tok = load_tokenizer(synth / layout);
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok->encode(word);
    EXPECT_LT(seconds_since(start), 10.0) << layout;
    EXPECT_EQ(tok->decode(ids), word) << layout;
  }
  const auto native = load_tokenizer_from_gguf(
      GgufFile::open(test::tokenizer_fixtures() / "spm" / "bpe_vocab.gguf"));
  const auto start = std::chrono::steady_clock::now();
  const auto ids = native->encode(word);
  EXPECT_LT(seconds_since(start), 10.0);
  EXPECT_EQ(native->decode(ids), word);
}

}  // namespace
}  // namespace hearth
