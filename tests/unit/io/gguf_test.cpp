// GGUF reader: metadata of every type, tensor infos, dequantization bit-exact against gguf-py,
// the llama config, Hugging Face names and the q/k un-permutation, and the real SmolLM2 model
// against gguf-py and transformers (fixtures from tests/reference/io_gguf_reference.py).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/io/gguf_config.h"
#include "engine/io/gguf_dequant.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_names.h"
#include "engine/io/tensor_source.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth {
namespace {

using test::Bytes;
using test::ByteWriter;
using test::GgufBuilder;

std::span<const std::byte> span(const Bytes& b) {
  return {b.data(), b.size()};
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// --- dequantization ------------------------------------------------------------------------------

TEST(GgufDequant, EveryTypeMatchesGgufPyBitExactly) {
  const auto fixture = test::load_fixture("gguf_quant_blocks.json");
  const std::map<std::string, GgmlType> types = {
      {"F32", GgmlType::kF32},   {"F16", GgmlType::kF16},       {"BF16", GgmlType::kBF16},
      {"Q8_0", GgmlType::kQ8_0}, {"Q4_0", GgmlType::kQ4_0},     {"Q4_1", GgmlType::kQ4_1},
      {"Q5_0", GgmlType::kQ5_0}, {"Q5_1", GgmlType::kQ5_1},     {"Q4_K", GgmlType::kQ4_K},
      {"Q5_K", GgmlType::kQ5_K}, {"Q6_K", GgmlType::kQ6_K},     {"Q2_K", GgmlType::kQ2_K},
      {"Q3_K", GgmlType::kQ3_K}, {"IQ4_NL", GgmlType::kIQ4_NL}, {"IQ4_XS", GgmlType::kIQ4_XS}};
  ASSERT_EQ(fixture.size(), types.size());
  for (const auto& [name, type] : types) {
    SCOPED_TRACE(name);
    const auto& entry = fixture.at(name);
    const Bytes src = test::from_hex(entry.at("bytes"));
    const Bytes want = test::from_hex(entry.at("expected"));
    const int64_t n = entry.at("elements");
    ASSERT_EQ(want.size(), static_cast<size_t>(n) * 4);
    std::vector<float> got(n);
    dequantize_ggml(type, src.data(), got.data(), n);
    int mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t expected;
      std::memcpy(&expected, want.data() + 4 * i, 4);
      if (bits_of(got[i]) != expected && ++mismatches <= 5) {
        float e;
        std::memcpy(&e, &expected, 4);
        ADD_FAILURE() << name << " element " << i << ": got " << got[i] << ", gguf-py " << e;
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

TEST(GgufDequant, TypeTableMatchesGgml) {
  EXPECT_EQ(ggml_type_traits(2)->block_bytes, 18u);
  EXPECT_EQ(ggml_type_traits(14)->block_bytes, 210u);
  EXPECT_EQ(ggml_type_traits(14)->block_elements, 256u);
  EXPECT_FALSE(ggml_type_traits(4).has_value());  // removed Q4_2
  EXPECT_FALSE(ggml_type_traits(0xffffffffu).has_value());
  EXPECT_STREQ(ggml_type_name(GgmlType::kQ4_1), "Q4_1");
  const auto iq2_xxs = static_cast<GgmlType>(16);  // a type Hearth does not decode
  EXPECT_FALSE(ggml_can_dequantize(iq2_xxs));
  float out[256];
  const Bytes block(66);
  EXPECT_THROW(dequantize_ggml(iq2_xxs, block.data(), out, 256), Error);
}

// --- metadata ------------------------------------------------------------------------------------

GgufBuilder every_value_type() {
  GgufBuilder b;
  b.kv("u8", test::kGU8, ByteWriter().u8(200).take())
      .kv("i8", test::kGI8, ByteWriter().u8(0x85).take())
      .kv("u16", test::kGU16, ByteWriter().u16(65000).take())
      .kv("i16", test::kGI16, ByteWriter().u16(0x8001).take())
      .kv("u32", test::kGU32, ByteWriter().u32(4000000000u).take())
      .kv("i32", test::kGI32, ByteWriter().i32(-7).take())
      .kv("f32", test::kGF32, ByteWriter().f32(1.5f).take())
      .kv("bool", test::kGBool, ByteWriter().u8(1).take())
      .kv("string", test::kGString, ByteWriter().str("héllo").take())
      .kv("u64", test::kGU64, ByteWriter().u64(1ull << 40).take())
      .kv("i64", test::kGI64, ByteWriter().i64(-(1ll << 40)).take())
      .kv("f64", test::kGF64, ByteWriter().f64(0.1).take())
      .kv("big_u64", test::kGU64, ByteWriter().u64(~0ull).take())
      .kv("ints", test::kGArray,
          ByteWriter().u32(test::kGI16).u64(3).u16(1).u16(0xffff).u16(3).take())
      .kv("floats", test::kGArray, ByteWriter().u32(test::kGF64).u64(2).f64(0.5).f64(-2).take())
      .kv("strings", test::kGArray, ByteWriter().u32(test::kGString).u64(2).str("a").str("").take())
      .kv("nested", test::kGArray,
          ByteWriter()
              .u32(test::kGArray)
              .u64(2)
              .u32(test::kGU8)
              .u64(2)
              .u8(1)
              .u8(2)
              .u32(test::kGString)
              .u64(1)
              .str("x")
              .take())
      .kv("bools", test::kGArray, ByteWriter().u32(test::kGBool).u64(2).u8(0).u8(1).take());
  return b;
}

TEST(GgufFile, ReadsEveryMetadataValueType) {
  for (uint32_t version : {2u, 3u}) {
    GgufBuilder b = every_value_type();
    b.version = version;
    const Bytes image = b.build();
    const GgufFile g = GgufFile::parse(span(image), "mem.gguf");
    EXPECT_EQ(g.version(), version);
    EXPECT_EQ(g.alignment(), 32u);
    EXPECT_EQ(g.keys().size(), b.kvs.size());
    EXPECT_EQ(g.get_int("u8"), 200);
    EXPECT_EQ(g.get_int("i8"), -123);
    EXPECT_EQ(g.get_int("u16"), 65000);
    EXPECT_EQ(g.get_int("i16"), -32767);
    EXPECT_EQ(g.get_int("u32"), 4000000000ll);
    EXPECT_EQ(g.get_int("i32"), -7);
    EXPECT_EQ(g.get_float("f32"), 1.5);
    EXPECT_EQ(g.get_bool("bool"), true);
    EXPECT_EQ(g.get_string("string"), "héllo");
    EXPECT_EQ(g.get_int("u64"), 1ll << 40);
    EXPECT_EQ(g.get_int("i64"), -(1ll << 40));
    EXPECT_EQ(g.get_float("f64"), 0.1);
    EXPECT_EQ(g.get_int_array("ints"), (std::vector<int64_t>{1, -1, 3}));
    EXPECT_EQ(g.get_float_array("floats"), (std::vector<float>{0.5f, -2.0f}));
    EXPECT_EQ(g.get_string_array("strings"), (std::vector<std::string>{"a", ""}));
    EXPECT_EQ(g.array_length("nested"), 2u);
    EXPECT_EQ(g.type("nested"), GgufValueType::kArray);
    EXPECT_EQ(g.describe("nested"), "[[1, 2], [\"x\"]]");
    EXPECT_EQ(g.describe("strings"), "[\"a\", \"\"]");
    EXPECT_EQ(g.describe("bools"), "[false, true]");
    EXPECT_EQ(g.describe("i32"), "-7");
    EXPECT_FALSE(g.get_int("absent").has_value());
    EXPECT_FALSE(g.has("absent"));
    EXPECT_TRUE(g.tensors().empty());
    // Wrong accessors are errors naming the key, never a reinterpretation.
    test::expect_error([&] { g.get_string("u32"); }, ErrorCode::kInvalidFile,
                       {"\"u32\"", "string"});
    test::expect_error([&] { g.get_int("f32"); }, ErrorCode::kInvalidFile, {"f32"});
    test::expect_error([&] { g.get_int("big_u64"); }, ErrorCode::kInvalidFile, {"int64"});
    test::expect_error([&] { g.get_string_array("ints"); }, ErrorCode::kInvalidFile, {"ints"});
    test::expect_error([&] { g.get_int_array("nested"); }, ErrorCode::kInvalidFile, {"nested"});
    test::expect_error([&] { g.get_bool("u8"); }, ErrorCode::kInvalidFile, {"bool"});
  }
}

TEST(GgufFile, DescribeAbbreviatesLongArrays) {
  GgufBuilder b;
  std::vector<std::string> many(100, "tok");
  b.string_array("tokens", many);
  const Bytes image = b.build();
  const GgufFile g = GgufFile::parse(span(image));
  EXPECT_EQ(g.describe("tokens"),
            "[\"tok\", \"tok\", \"tok\", \"tok\", \"tok\", \"tok\", ... (100 items)]");
}

TEST(GgufFile, HonoursGeneralAlignment) {
  GgufBuilder b;
  b.alignment = 64;
  b.u32("general.alignment", 64);
  b.f32_tensor("a", {3}, {1, 2, 3});
  b.f32_tensor("b", {2, 2}, {4, 5, 6, 7});
  const Bytes image = b.build();
  const GgufFile g = GgufFile::parse(span(image));
  EXPECT_EQ(g.alignment(), 64u);
  ASSERT_EQ(g.tensors().size(), 2u);
  EXPECT_EQ(g.tensors()[1].offset, 64u);
  const HostTensor t = g.dequantize(*g.find_tensor("b"));
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.to_floats(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(g.raw_data(g.tensors()[0]).size(), 12u);
}

TEST(GgufFile, ReadsQuantizedTensorsFromAFile) {
  // One Q8_0 block per row, two rows: (q * d) with d = 0.5.
  ByteWriter data;
  for (int row = 0; row < 2; ++row) {
    data.u16(float_to_half(0.5f));
    for (int j = 0; j < 32; ++j) data.u8(static_cast<uint8_t>(static_cast<int8_t>(j - 16 + row)));
  }
  GgufBuilder b;
  b.tensor("q", {32, 2}, 8, data.take());
  test::TempDir dir;
  test::write_file(dir / "q.gguf", b.build());
  const GgufFile g = GgufFile::open(dir / "q.gguf");
  EXPECT_EQ(g.display_name(), (dir / "q.gguf").string());
  const GgufTensorInfo& t = g.tensors().at(0);
  EXPECT_EQ(t.type, GgmlType::kQ8_0);
  EXPECT_EQ(t.nbytes, 68u);
  const auto v = g.dequantize(t).to_floats();
  ASSERT_EQ(v.size(), 64u);
  EXPECT_EQ(v[0], -8.0f);
  EXPECT_EQ(v[32 + 31], 8.0f);
}

// --- llama config, names and the q/k permutation -------------------------------------------------

TEST(GgufConfig, ReadsLlamaMetadata) {
  const Bytes image = test::tiny_llama_gguf(true).build();
  const GgufFile g = GgufFile::parse(span(image), "tiny.gguf");
  const ModelConfig c = config_from_gguf(g);
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.name, "Tiny Llama");
  EXPECT_EQ(c.num_layers, 1);
  EXPECT_EQ(c.hidden_size, 16);
  EXPECT_EQ(c.intermediate_size, 32);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.num_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.vocab_size, 8);  // from the token list
  EXPECT_EQ(c.max_position_embeddings, 256);
  EXPECT_DOUBLE_EQ(c.rope_theta, 50000.0);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, static_cast<double>(1e-5f));
  EXPECT_DOUBLE_EQ(c.partial_rotary_factor, 1.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 7}));  // eos + eot
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);

  const Bytes untied = test::tiny_llama_gguf(false).build();
  EXPECT_FALSE(config_from_gguf(GgufFile::parse(span(untied))).tie_word_embeddings);
}

TEST(GgufConfig, ReadsTheEosIdList) {
  GgufBuilder b = test::tiny_llama_gguf();
  ByteWriter ids;
  ids.u32(test::kGI32).u64(3).i32(7).i32(5).i32(2);  // eos and eot are already in the list
  b.kv("tokenizer.ggml.eos_token_ids", test::kGArray, ids.take());
  const Bytes image = b.build();
  EXPECT_EQ(config_from_gguf(GgufFile::parse(span(image))).eos_token_ids,
            (std::vector<int32_t>{2, 7, 5}));

  GgufBuilder wrong = test::tiny_llama_gguf();
  wrong.string_array("tokenizer.ggml.eos_token_ids", {"</s>"});
  const Bytes bad = wrong.build();
  try {
    config_from_gguf(GgufFile::parse(span(bad), "bad.gguf"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("eos_token_ids"), std::string::npos) << e.what();
  }

  GgufBuilder negative = test::tiny_llama_gguf();
  ByteWriter neg;
  neg.u32(test::kGI32).u64(1).i32(-4);
  negative.kv("tokenizer.ggml.eos_token_ids", test::kGArray, neg.take());
  const Bytes bad_id = negative.build();
  EXPECT_THROW(config_from_gguf(GgufFile::parse(span(bad_id))), Error);
}

TEST(GgufConfig, ReadsRopeScalingKeys) {
  GgufBuilder b = test::tiny_llama_gguf();
  b.string("llama.rope.scaling.type", "yarn")
      .f32("llama.rope.scaling.factor", 4.0f)
      .u32("llama.rope.scaling.original_context_length", 64);
  const Bytes image = b.build();
  const ModelConfig c = config_from_gguf(GgufFile::parse(span(image)));
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 64);
}

// The factors llama.cpp's converter writes for Llama 3.1 (convert_hf_to_gguf.py, LlamaModel).
TEST(GgufConfig, RecognisesLlama3RopeFreqs) {
  GgufBuilder b = test::tiny_llama_gguf();
  // Make the model's rotary dim 128 (head_dim 128): hidden 512, 4 heads.
  for (auto& kv : b.kvs) {
    if (kv.key == "llama.embedding_length") kv.value = ByteWriter().u32(512).take();
    if (kv.key == "llama.rope.dimension_count") kv.value = ByteWriter().u32(128).take();
    if (kv.key == "llama.rope.freq_base") kv.value = ByteWriter().f32(500000.0f).take();
  }
  std::vector<float> factors;
  const double factor = 8, low = 1, high = 4, old_ctx = 8192;
  for (int i = 0; i < 64; ++i) {
    const double freq = 1.0 / std::pow(500000.0, (2.0 * i) / 128.0);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < old_ctx / high) {
      factors.push_back(1.0f);
    } else if (wavelen > old_ctx / low) {
      factors.push_back(static_cast<float>(factor));
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      factors.push_back(static_cast<float>(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  b.f32_tensor("rope_freqs.weight", {64}, factors);
  const Bytes image = b.build();
  const GgufFile g = GgufFile::parse(span(image));
  const ModelConfig c = config_from_gguf(g);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kLlama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_FALSE(open_gguf_source(std::make_shared<GgufFile>(GgufFile::parse(span(image))), c)
                   ->has("rope_freqs.weight"));
}

TEST(GgufNames, MapsToHuggingFaceNames) {
  EXPECT_EQ(gguf_to_hf_name("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(gguf_to_hf_name("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(gguf_to_hf_name("output.weight"), "lm_head.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.12.attn_q.weight"), "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.0.attn_k.bias"), "model.layers.0.self_attn.k_proj.bias");
  EXPECT_EQ(gguf_to_hf_name("blk.3.attn_v.weight"), "model.layers.3.self_attn.v_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.attn_output.weight"), "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_gate.weight"), "model.layers.3.mlp.gate_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_up.weight"), "model.layers.3.mlp.up_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_down.weight"), "model.layers.3.mlp.down_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.attn_norm.weight"), "model.layers.3.input_layernorm.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.ffn_norm.weight"),
            "model.layers.3.post_attention_layernorm.weight");
  EXPECT_FALSE(gguf_to_hf_name("rope_freqs.weight").has_value());
  EXPECT_FALSE(gguf_to_hf_name("blk.x.attn_q.weight").has_value());
  EXPECT_FALSE(gguf_to_hf_name("blk..attn_q.weight").has_value());
  EXPECT_EQ(rope_permutation_of("blk.1.attn_q.weight"), RopePermutation::kQuery);
  EXPECT_EQ(rope_permutation_of("blk.1.attn_k.bias"), RopePermutation::kKey);
  EXPECT_EQ(rope_permutation_of("blk.1.attn_v.weight"), RopePermutation::kNone);
}

// llama.cpp's converter (convert_hf_to_gguf.py, LlamaModel.permute):
//   w.reshape(n_head, 2, rows // n_head // 2, cols).swapaxes(1, 2).reshape(rows, cols)
// written out here index by index: GGUF row h*d + 2*i + s holds HF row h*d + s*d/2 + i.
std::vector<float> converter_permute(const std::vector<float>& hf, int64_t rows, int64_t cols,
                                     int64_t n_head) {
  std::vector<float> out(hf.size());
  const int64_t d = rows / n_head;
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 2; ++i)
        for (int64_t c = 0; c < cols; ++c)
          out[((h * (d / 2) + i) * 2 + s) * cols + c] = hf[((h * 2 + s) * (d / 2) + i) * cols + c];
  return out;
}

TEST(GgufNames, UndoesTheConverterPermutation) {
  const int64_t rows = 24, cols = 3, heads = 3;
  std::vector<float> hf(rows * cols);
  for (size_t i = 0; i < hf.size(); ++i) hf[i] = static_cast<float>(i);
  const auto gguf = converter_permute(hf, rows, cols, heads);
  EXPECT_NE(gguf, hf);
  const HostTensor back =
      unpermute_rope_rows(HostTensor::from_floats(gguf, {rows, cols}), heads, "q");
  EXPECT_EQ(back.to_floats(), hf);
  // Biases (1-D) follow the same rows.
  std::vector<float> bias(rows);
  for (int64_t i = 0; i < rows; ++i) bias[i] = static_cast<float>(i);
  EXPECT_EQ(
      unpermute_rope_rows(HostTensor::from_floats(converter_permute(bias, rows, 1, heads), {rows}),
                          heads, "b")
          .to_floats(),
      bias);
  test::expect_error(
      [&] {
        unpermute_rope_rows(HostTensor::from_floats(hf, {rows, cols}), 5, "q");
      },
      ErrorCode::kInvalidFile, {"heads"});
}

TEST(GgufSource, ServesHuggingFaceNamesShapesAndLayouts) {
  const Bytes image = test::tiny_llama_gguf(false).build();
  auto g = std::make_shared<GgufFile>(GgufFile::parse(span(image), "tiny.gguf"));
  const ModelConfig c = config_from_gguf(*g);
  const auto src = open_gguf_source(g, c);
  EXPECT_EQ(src->tensor_names().size(), 12u);
  EXPECT_TRUE(src->has("lm_head.weight"));
  EXPECT_TRUE(src->has("model.layers.0.mlp.down_proj.weight"));
  const TensorInfo info = src->info("model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(info.shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(info.dtype, DType::kF32);
  EXPECT_EQ(info.stored_type, "F32");
  EXPECT_EQ(info.file, "tiny.gguf");

  // q/k come back in HF row order: un-permuting what the converter did to the HF tensor.
  const HostTensor q = src->get("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(q.shape, (std::vector<int64_t>{16, 16}));
  const auto gguf_q = g->dequantize(*g->find_tensor("blk.0.attn_q.weight")).to_floats();
  EXPECT_EQ(converter_permute(q.to_floats(), 16, 16, 4), gguf_q);
  const HostTensor k = src->get("model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(k.shape, (std::vector<int64_t>{8, 16}));
  const auto gguf_k = g->dequantize(*g->find_tensor("blk.0.attn_k.weight")).to_floats();
  EXPECT_EQ(converter_permute(k.to_floats(), 8, 16, 2), gguf_k);  // per kv head
  // Other tensors are untouched.
  EXPECT_EQ(src->get("model.layers.0.self_attn.v_proj.weight").to_floats(),
            g->dequantize(*g->find_tensor("blk.0.attn_v.weight")).to_floats());
  test::expect_error([&] { src->get("model.layers.1.mlp.up_proj.weight"); },
                     ErrorCode::kInvalidFile, {"no tensor"});
}

// --- the real model ------------------------------------------------------------------------------

struct Checksums {
  uint64_t bitsum = 0;
  uint64_t wsum = 0;
  double sum = 0;
};

Checksums checksums(const std::vector<float>& v) {
  Checksums c;
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t b = bits_of(v[i]);
    c.bitsum += b;
    c.wsum += b * (i + 1);
    c.sum += v[i];
  }
  return c;
}

void expect_matches(const std::string& name, const HostTensor& t, const nlohmann::json& want) {
  SCOPED_TRACE(name);
  EXPECT_EQ(t.shape, want.at("shape").get<std::vector<int64_t>>());
  const auto v = t.to_floats();
  const auto idx = want.at("idx").get<std::vector<int64_t>>();
  const auto val = want.at("val").get<std::vector<double>>();
  for (size_t i = 0; i < idx.size(); ++i) {
    ASSERT_LT(static_cast<size_t>(idx[i]), v.size());
    EXPECT_EQ(v[idx[i]], static_cast<float>(val[i])) << "at flat index " << idx[i];
  }
  const Checksums c = checksums(v);
  EXPECT_EQ(c.bitsum, want.at("bitsum").get<uint64_t>());
  EXPECT_EQ(c.wsum, want.at("wsum").get<uint64_t>());
  const double ref = want.at("sum");
  EXPECT_NEAR(c.sum, ref, 1e-9 * (1 + std::fabs(ref)) + 1e-6);
  if (want.contains("row_sums")) {
    const auto rows = want.at("row_sums").get<std::vector<double>>();
    ASSERT_EQ(rows.size(), static_cast<size_t>(t.shape[0]));
    const int64_t cols = t.shape[1];
    for (size_t r = 0; r < rows.size(); ++r) {
      double s = 0;
      for (int64_t j = 0; j < cols; ++j) s += v[r * cols + j];
      EXPECT_NEAR(s, rows[r], 1e-9 * (1 + std::fabs(rows[r])) + 1e-6) << "row " << r;
    }
  }
}

class SmolLM2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test::test_model())) return;
    fixture_ = new nlohmann::json(test::load_fixture("smollm2_gguf.json"));
  }
  static void TearDownTestSuite() {
    delete fixture_;
    fixture_ = nullptr;
  }
  void SetUp() override {
    if (!fixture_) GTEST_SKIP() << "test model missing: " << test::test_model();
  }
  static nlohmann::json* fixture_;
};
nlohmann::json* SmolLM2::fixture_ = nullptr;

TEST_F(SmolLM2, OpensInMillisecondsAndReadsTheConfig) {
  const auto start = std::chrono::steady_clock::now();
  const GgufFile g = GgufFile::open(test::test_model());
  const ModelConfig c = config_from_gguf(g);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] open + parse metadata + config of %s: %.2f ms\n",
              test::test_model().filename().c_str(), ms);
  EXPECT_LT(ms,
            200.0 * test::kSlowdown);  // milliseconds in practice; generous for a loaded CI machine
  EXPECT_EQ(g.file_size(), fixture_->at("model_bytes").get<uint64_t>());
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.tensors().size(), fixture_->at("gguf").size());
  EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens")->size(), 49152u);

  // Against the config transformers builds from the same file.
  const auto& hf = fixture_->at("config");
  EXPECT_EQ(c.num_layers, 30);
  EXPECT_EQ(c.hidden_size, 576);
  EXPECT_EQ(c.num_heads, 9);
  EXPECT_EQ(c.num_kv_heads, 3);
  EXPECT_EQ(c.vocab_size, 49152);
  EXPECT_DOUBLE_EQ(c.rope_theta, 100000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.num_layers, hf.at("num_hidden_layers").get<int64_t>());
  EXPECT_EQ(c.hidden_size, hf.at("hidden_size").get<int64_t>());
  EXPECT_EQ(c.intermediate_size, hf.at("intermediate_size").get<int64_t>());
  EXPECT_EQ(c.num_heads, hf.at("num_attention_heads").get<int64_t>());
  EXPECT_EQ(c.num_kv_heads, hf.at("num_key_value_heads").get<int64_t>());
  EXPECT_EQ(c.head_dim, hf.at("head_dim").get<int64_t>());
  EXPECT_EQ(c.vocab_size, hf.at("vocab_size").get<int64_t>());
  EXPECT_EQ(c.max_position_embeddings, hf.at("max_position_embeddings").get<int64_t>());
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, hf.at("rms_norm_eps").get<double>());
  EXPECT_DOUBLE_EQ(c.rope_theta, hf.at("rope_theta").get<double>());
  EXPECT_EQ(hf.at("rope_type"), "default");
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::kNone);
  EXPECT_EQ(c.tie_word_embeddings, hf.at("tie_word_embeddings").get<bool>());
  EXPECT_EQ(c.bos_token_id, hf.at("bos_token_id").get<int32_t>());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{hf.at("eos_token_id").get<int32_t>()}));
  EXPECT_EQ(c.pad_token_id, hf.at("pad_token_id").get<int32_t>());
  EXPECT_EQ(c.name, hf.at("name").get<std::string>());
}

TEST_F(SmolLM2, EveryTensorDequantizesExactlyAsGgufPy) {
  const GgufFile g = GgufFile::open(test::test_model());
  const auto& want = fixture_->at("gguf");
  const auto start = std::chrono::steady_clock::now();
  for (const auto& t : g.tensors()) {
    ASSERT_TRUE(want.contains(t.name)) << t.name;
    EXPECT_EQ(ggml_type_name(t.type), want.at(t.name).at("type").get<std::string>());
    expect_matches(t.name, g.dequantize(t), want.at(t.name));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] dequantized and checked all %zu tensors in %.2f s\n", g.tensors().size(),
              s);
}

TEST_F(SmolLM2, SourceMatchesTransformersGgufLoader) {
  auto g = std::make_shared<GgufFile>(GgufFile::open(test::test_model()));
  const ModelConfig c = config_from_gguf(*g);
  const auto src = open_gguf_source(g, c);
  const auto& want = fixture_->at("hf");
  auto names = src->tensor_names();
  std::sort(names.begin(), names.end());
  std::vector<std::string> want_names;
  for (const auto& [name, _] : want.items()) want_names.push_back(name);
  std::sort(want_names.begin(), want_names.end());
  EXPECT_EQ(names, want_names);  // tied: no lm_head on either side
  for (const auto& name : names) {
    const TensorInfo info = src->info(name);
    EXPECT_EQ(info.shape, want.at(name).at("shape").get<std::vector<int64_t>>()) << name;
    expect_matches(name, src->get(name), want.at(name));
  }
  EXPECT_LE(src->file_bytes(), g->file_size());
  EXPECT_GT(src->file_bytes(), g->file_size() * 9 / 10);
}

TEST_F(SmolLM2, DequantizingEveryTensorTakesUnderAFewSeconds) {
  auto g = std::make_shared<GgufFile>(GgufFile::open(test::test_model()));
  const auto src = open_gguf_source(g, config_from_gguf(*g));
  const auto start = std::chrono::steady_clock::now();
  int64_t elements = 0;
  for (const auto& name : src->tensor_names()) elements += src->get(name).numel();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] get() of all tensors (%lld elements): %.3f s\n",
              static_cast<long long>(elements), s);
  EXPECT_LT(s, 5.0 * test::kSlowdown);
}

}  // namespace
}  // namespace hearth
