// The malformed-GGUF corpus (TESTING.md, "Malformed inputs"; after llama.cpp's test-gguf
// categories and published parser bugs): every file must be rejected with hearth::Error naming
// the defect and its byte offset, quickly, without crashing or allocating by declared counts.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <random>

#include "engine/io/gguf_config.h"
#include "engine/io/gguf_file.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth {
namespace {

using test::Bytes;
using test::ByteWriter;
using test::GgufBuilder;

void reject(const Bytes& image, ErrorCode code, std::initializer_list<std::string> needles) {
  test::expect_error(
      [&] {
        GgufFile::parse({image.data(), image.size()}, "bad.gguf");
      },
      code, needles);
}

void reject_config(const GgufBuilder& b, ErrorCode code,
                   std::initializer_list<std::string> needles) {
  const Bytes image = b.build();
  const GgufFile g = GgufFile::parse({image.data(), image.size()}, "bad.gguf");
  test::expect_error([&] { config_from_gguf(g); }, code, needles);
}

// Header: magic, version, counts.
ByteWriter header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  ByteWriter w;
  w.text("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  return w;
}

TEST(GgufMalformed, Header) {
  reject({}, ErrorCode::kInvalidFile, {"not a GGUF file"});
  reject(test::to_bytes("GGU"), ErrorCode::kInvalidFile, {"not a GGUF file"});
  reject(test::to_bytes("GGUG\x03\0\0\0"), ErrorCode::kInvalidFile, {"not a GGUF file"});
  reject(test::to_bytes("GGUF"), ErrorCode::kInvalidFile, {"version", "at byte 4"});
  reject(header(1, 0, 0).take(), ErrorCode::kUnsupported, {"version 1"});
  reject(header(0, 0, 0).take(), ErrorCode::kUnsupported, {"unknown GGUF version 0"});
  reject(header(4, 0, 0).take(), ErrorCode::kUnsupported, {"unknown GGUF version 4"});
  reject(header(0x03000000, 0, 0).take(), ErrorCode::kUnsupported, {"big-endian"});
  reject(ByteWriter().text("GGUF").u32(3).u64(0).take(), ErrorCode::kInvalidFile,
         {"metadata count", "at byte 16"});
}

TEST(GgufMalformed, AbsurdCounts) {
  // "Negative" (2^64 - 1) and > SIZE_MAX / sizeof counts: rejected before anything is sized by
  // them.
  for (uint64_t n : {~0ull, ~0ull / 8 + 1, 1ull << 40, 70000ull}) {
    SCOPED_TRACE(n);
    reject(header(3, n, 0).zeros(64).take(), ErrorCode::kInvalidFile, {"tensor count"});
    reject(header(3, 0, n).zeros(64).take(), ErrorCode::kInvalidFile, {"metadata count"});
  }
  // Within the caps, but more than the bytes that follow could hold.
  reject(header(3, 1000, 0).zeros(64).take(), ErrorCode::kInvalidFile, {"tensor count", "fit"});
  reject(header(3, 0, 1000).zeros(64).take(), ErrorCode::kInvalidFile, {"metadata count", "fit"});
}

TEST(GgufMalformed, Strings) {
  // Key length 2^64 - 1, and longer than the rest of the file.
  reject(header(3, 0, 1).u64(~0ull).zeros(16).take(), ErrorCode::kInvalidFile,
         {"metadata key #0", "string length 18446744073709551615", "at byte 24"});
  reject(header(3, 0, 1).u64(100).text("abc").zeros(10).take(), ErrorCode::kInvalidFile,
         {"string length 100", "exceeds"});
  // String value length 2^64 - 1 and > remaining.
  reject(header(3, 0, 1).str("k").u32(test::kGString).u64(~0ull).take(), ErrorCode::kInvalidFile,
         {"value of \"k\"", "string length"});
  reject(header(3, 0, 1).str("k").u32(test::kGString).u64(5).text("abcd").take(),
         ErrorCode::kInvalidFile, {"value of \"k\"", "exceeds"});
  // Truncated inside a fixed-size value.
  reject(header(3, 0, 1).str("k").u32(test::kGU64).u32(0).take(), ErrorCode::kInvalidFile,
         {"value of \"k\"", "needs 8 bytes"});
}

TEST(GgufMalformed, ValueTypes) {
  for (uint32_t t : {13u, 100u, 0xffffffffu}) {
    reject(header(3, 0, 1).str("k").u32(t).u32(0).take(), ErrorCode::kInvalidFile,
           {"\"k\"", "unknown value type " + std::to_string(t), "at byte 33"});
  }
  reject(header(3, 0, 1).str("flag").u32(test::kGBool).u8(2).take(), ErrorCode::kInvalidFile,
         {"\"flag\"", "neither 0 nor 1"});
  reject(header(3, 0, 2).str("k").u32(test::kGU8).u8(1).str("k").u32(test::kGU8).u8(2).take(),
         ErrorCode::kInvalidFile, {"duplicate metadata key \"k\""});
}

TEST(GgufMalformed, Arrays) {
  auto array = [](uint32_t elem, uint64_t count) {
    return header(3, 0, 1).str("arr").u32(test::kGArray).u32(elem).u64(count);
  };
  reject(array(test::kGU32, ~0ull).zeros(8).take(), ErrorCode::kInvalidFile,
         {"\"arr\"", "18446744073709551615 elements of u32"});
  reject(array(test::kGU32, 3).u32(1).take(), ErrorCode::kInvalidFile, {"3 elements of u32"});
  reject(array(test::kGString, ~0ull).take(), ErrorCode::kInvalidFile, {"elements of string"});
  reject(array(test::kGString, 2).str("a").u64(~0ull).take(), ErrorCode::kInvalidFile,
         {"string length"});
  reject(array(test::kGArray, ~0ull / 2).take(), ErrorCode::kInvalidFile, {"elements of array"});
  reject(array(77, 1).take(), ErrorCode::kInvalidFile, {"unknown array element type 77"});
  reject(array(test::kGBool, 2).u8(0).u8(9).take(), ErrorCode::kInvalidFile, {"neither 0 nor 1"});
}

TEST(GgufMalformed, DeeplyNestedArraysAreRefusedWithoutRecursingIntoThem) {
  // An array of arrays is valid; nesting deeper than 8 levels is not (gguf-py RecursionError).
  auto nested = [](int depth) {
    ByteWriter w = header(3, 0, 1).str("deep").u32(test::kGArray);
    for (int i = 0; i < depth; ++i) w.u32(test::kGArray).u64(1);
    w.u32(test::kGU8).u64(1).u8(7);
    return w.take();
  };
  const Bytes ok = nested(7);
  EXPECT_NO_THROW(GgufFile::parse({ok.data(), ok.size()}));
  reject(nested(8), ErrorCode::kInvalidFile, {"\"deep\"", "nested deeper than 8"});
  reject(nested(100000), ErrorCode::kInvalidFile, {"nested deeper than 8"});
}

TEST(GgufMalformed, Alignment) {
  auto with_alignment = [](uint32_t type, Bytes value) {
    GgufBuilder b;
    b.kv("general.alignment", type, std::move(value));
    b.f32_tensor("t", {8}, std::vector<float>(8, 1.0f));
    return b.build();
  };
  for (uint32_t a : {0u, 3u, 48u, 0x80000000u}) {
    SCOPED_TRACE(a);
    reject(with_alignment(test::kGU32, ByteWriter().u32(a).take()), ErrorCode::kInvalidFile,
           {"general.alignment " + std::to_string(a), "power of two"});
  }
  reject(with_alignment(test::kGI32, ByteWriter().i32(32).take()), ErrorCode::kInvalidFile,
         {"general.alignment", "i32", "expected u32"});
  reject(with_alignment(test::kGU64, ByteWriter().u64(32).take()), ErrorCode::kInvalidFile,
         {"general.alignment", "u64"});
}

// One tensor info after an empty KV section.
ByteWriter one_tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type,
                      uint64_t offset, uint32_t n_dims_override = 0, size_t trailing = 64) {
  ByteWriter w = header(3, 1, 0);
  w.str(name).u32(n_dims_override ? n_dims_override : static_cast<uint32_t>(dims.size()));
  for (uint64_t d : dims) w.u64(d);
  w.u32(type).u64(offset);
  return w.zeros(trailing);
}

TEST(GgufMalformed, TensorInfos) {
  reject(one_tensor("t", {}, 0, 0).take(), ErrorCode::kInvalidFile,
         {"tensor \"t\" has 0 dimensions", "at byte 33"});
  reject(one_tensor("t", {1, 1, 1, 1, 1}, 0, 0).take(), ErrorCode::kInvalidFile, {"5 dimensions"});
  reject(one_tensor("t", {1}, 0, 0, 0xffffffffu).take(), ErrorCode::kInvalidFile,
         {"4294967295 dimensions"});
  reject(one_tensor("t", {0}, 0, 0).take(), ErrorCode::kInvalidFile, {"dimension 0 is 0"});
  reject(one_tensor("t", {4, ~0ull}, 0, 0).take(), ErrorCode::kInvalidFile,
         {"dimension 1 is -1", "positive"});
  // Element counts that overflow (llama.cpp #18674).
  reject(one_tensor("t", {(1ull << 42) + 1, (1ull << 42) + 1}, 0, 0).take(),
         ErrorCode::kInvalidFile, {"overflows"});
  reject(one_tensor("t", {1ull << 32, 1ull << 31}, 0, 0).take(), ErrorCode::kInvalidFile,
         {"overflows"});
  // Type numbers ggml does not define: removed ones, negative, past the end.
  for (uint32_t type : {4u, 5u, 31u, 42u, 1000u, 0xffffffffu}) {
    reject(one_tensor("t", {32}, type, 0).take(), ErrorCode::kInvalidFile,
           {"unknown ggml type " + std::to_string(type)});
  }
  reject(one_tensor("t", {33, 2}, 2 /* Q4_0 */, 0).take(), ErrorCode::kInvalidFile,
         {"row length 33", "Q4_0 block size 32"});
  reject(one_tensor("t", {255}, 12 /* Q4_K */, 0).take(), ErrorCode::kInvalidFile,
         {"Q4_K block size 256"});
  reject(one_tensor("t", {8}, 0, 4).take(), ErrorCode::kInvalidFile,
         {"data offset 4", "alignment"});
  reject(one_tensor("t", {8}, 0, ~0ull - 31).take(), ErrorCode::kInvalidFile, {"tensor \"t\""});
  reject(header(3, 1, 0).u64(~0ull).zeros(64).take(), ErrorCode::kInvalidFile, {"tensor name #0"});
  reject(one_tensor(std::string(2000, 'x'), {8}, 0, 0).take(), ErrorCode::kInvalidFile,
         {"string length 2000", "limit"});
}

TEST(GgufMalformed, TensorLayout) {
  // Duplicate names.
  GgufBuilder dup;
  dup.f32_tensor("w", {8}, std::vector<float>(8)).f32_tensor("w", {8}, std::vector<float>(8));
  reject(dup.build(), ErrorCode::kInvalidFile, {"duplicate tensor \"w\""});

  // Non-contiguous, overlapping, past the end, truncated data section.
  GgufBuilder two;
  two.f32_tensor("a", {8}, std::vector<float>(8)).f32_tensor("b", {8}, std::vector<float>(8));
  const Bytes good = two.build();
  EXPECT_NO_THROW(GgufFile::parse({good.data(), good.size()}));
  auto with_offset_of_b = [&](uint64_t offset) {
    Bytes image = good;
    // The offset field of "b" is the last 8 bytes of the tensor infos.
    const size_t infos_end = 24 + (8 + 1 + 4 + 8 + 4 + 8) * 2;
    std::memcpy(image.data() + infos_end - 8, &offset, 8);
    return image;
  };
  reject(with_offset_of_b(64), ErrorCode::kInvalidFile,
         {"tensor \"b\"", "data offset 64 should be 32"});
  reject(with_offset_of_b(0), ErrorCode::kInvalidFile, {"data offset 0 should be 32"});
  Bytes truncated = good;
  truncated.resize(truncated.size() - 1);
  reject(truncated, ErrorCode::kInvalidFile, {"tensor \"b\"", "past the end", "truncated"});
  reject(one_tensor("t", {8}, 0, 0, 0, 0).pad_to(32).zeros(16).take(), ErrorCode::kInvalidFile,
         {"32 bytes of F32", "past the end"});
}

TEST(GgufMalformed, EveryTruncationIsRejected) {
  const Bytes full = test::tiny_llama_gguf().build();
  EXPECT_NO_THROW(GgufFile::parse({full.data(), full.size()}));
  for (size_t n = 0; n < full.size(); ++n) {
    try {
      GgufFile::parse({full.data(), n});
      ADD_FAILURE() << "a " << n << "-byte prefix was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    }
  }
}

// Random byte edits of a valid model: each must parse or fail with hearth::Error, and whatever
// parses must survive every accessor, the config reader and dequantization.
TEST(GgufMalformed, RandomMutationsNeverCrash) {
  const Bytes base = test::tiny_llama_gguf(false).build();
  std::mt19937_64 rng(42);
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = base;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[at] = static_cast<std::byte>(rng());
          break;
        case 1:
          b[at] = static_cast<std::byte>(0xff);
          break;
        default:
          b.resize(at);
          break;
      }
      if (b.empty()) break;
    }
    try {
      const GgufFile g = GgufFile::parse({b.data(), b.size()});
      ++parsed;
      for (const auto& k : g.keys()) (void)g.describe(k);
      try {
        (void)config_from_gguf(g);
      } catch (const Error&) {
      }
      for (const auto& t : g.tensors()) {
        try {
          (void)g.dequantize(t);
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
  }
  std::printf("[ info ] %d of 3000 mutated files still parsed\n", parsed);
}

TEST(GgufMalformed, HostileCountsAllocateNothingLarge) {
  // Counts just under the caps, in a 4 MiB file of zeros: the parser must fail at the second
  // entry (a duplicate empty key) without having sized anything by the counts.
  const Bytes image = header(3, 65000, 65000).zeros(4 << 20).take();
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  for (int i = 0; i < 50; ++i) {
    EXPECT_THROW(GgufFile::parse({image.data(), image.size()}), Error);
  }
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);  // KiB
}

// Hyper-parameters and special tokens (llama.cpp #25821, #25508): config_from_gguf must refuse
// values that later stages would trust.
GgufBuilder with_u32(GgufBuilder b, const std::string& key, uint32_t value) {
  for (auto& kv : b.kvs) {
    if (kv.key == key) {
      kv = {key, test::kGU32, ByteWriter().u32(value).take()};
      return b;
    }
  }
  b.u32(key, value);
  return b;
}

GgufBuilder without(GgufBuilder b, const std::string& key) {
  std::erase_if(b.kvs, [&](const auto& kv) { return kv.key == key; });
  return b;
}

TEST(GgufMalformed, AbsurdHyperParameters) {
  const GgufBuilder base = test::tiny_llama_gguf();
  reject_config(with_u32(base, "llama.block_count", 513), ErrorCode::kInvalidFile,
                {"bad.gguf", "num_hidden_layers", "513"});
  reject_config(with_u32(base, "llama.attention.head_count", 0), ErrorCode::kInvalidFile,
                {"head_count", "positive"});
  reject_config(with_u32(base, "llama.attention.head_count_kv", 3), ErrorCode::kInvalidFile,
                {"num_key_value_heads"});
  reject_config(with_u32(base, "llama.embedding_length", 15), ErrorCode::kInvalidFile,
                {"divisible"});
  reject_config(with_u32(base, "llama.rope.dimension_count", 1000), ErrorCode::kInvalidFile,
                {"rope.dimension_count"});
  reject_config(without(base, "llama.block_count"), ErrorCode::kInvalidFile,
                {"llama.block_count is missing"});
  reject_config(without(base, "general.architecture"), ErrorCode::kInvalidFile,
                {"general.architecture is missing"});
  GgufBuilder qwen = without(base, "general.architecture");
  qwen.string("general.architecture", "qwen2");
  reject_config(qwen, ErrorCode::kUnsupported, {"\"qwen2\""});
  GgufBuilder wrong_type = without(base, "llama.embedding_length");
  wrong_type.string("llama.embedding_length", "16");
  reject_config(wrong_type, ErrorCode::kInvalidFile, {"llama.embedding_length", "string"});
  reject_config(with_u32(base, "llama.expert_count", 8), ErrorCode::kUnsupported,
                {"mixture-of-experts"});
  GgufBuilder rope = base;
  rope.string("llama.rope.scaling.type", "longrope");
  reject_config(rope, ErrorCode::kUnsupported, {"longrope"});
  GgufBuilder freqs = base;
  freqs.f32_tensor("rope_freqs.weight", {2}, {1.0f, 3.0f});
  reject_config(freqs, ErrorCode::kUnsupported, {"rope_freqs.weight"});
}

TEST(GgufMalformed, SpecialTokensOutsideTheVocabulary) {
  const GgufBuilder base = test::tiny_llama_gguf();  // 8 tokens
  reject_config(with_u32(base, "tokenizer.ggml.eos_token_id", 8), ErrorCode::kInvalidFile,
                {"eos_token_id", "outside the vocabulary"});
  reject_config(with_u32(base, "tokenizer.ggml.eot_token_id", 100), ErrorCode::kInvalidFile,
                {"outside the vocabulary"});
  reject_config(with_u32(base, "tokenizer.ggml.bos_token_id", 4000000000u), ErrorCode::kInvalidFile,
                {"bos_token_id", "not a valid token id"});
  // A vocabulary smaller than the special ids.
  GgufBuilder small = without(base, "tokenizer.ggml.tokens");
  small.string_array("tokenizer.ggml.tokens", {"a", "b"});
  reject_config(small, ErrorCode::kInvalidFile, {"outside the vocabulary"});
  // Token list of the wrong element type (llama.cpp #26690).
  GgufBuilder narrow = without(base, "tokenizer.ggml.tokens");
  narrow.kv("tokenizer.ggml.tokens", test::kGArray,
            ByteWriter().u32(test::kGU8).u64(8).zeros(8).take());
  const Bytes image = narrow.build();
  const GgufFile g = GgufFile::parse({image.data(), image.size()});
  test::expect_error([&] { g.get_string_array("tokenizer.ggml.tokens"); }, ErrorCode::kInvalidFile,
                     {"tokenizer.ggml.tokens", "array of u8"});
}

}  // namespace
}  // namespace hearth
