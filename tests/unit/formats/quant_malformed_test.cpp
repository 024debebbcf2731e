// Hostile and damaged EXL2 / GPTQ layers: each is derived from a valid fixture by breaking one
// thing, and must be refused with Error(kInvalidFile) (or kUnsupported for well-formed layers
// Hearth does not run) naming the tensor — never decoded into a wrong answer, never a crash.
// CI runs these under ASan + UBSan (label "parsers").
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_config.h"
#include "engine/formats/gptq_weight.h"
#include "engine/io/tensor_source.h"
#include "tests/unit/formats/quant_test_util.h"

namespace hearth::test {
namespace {

std::unique_ptr<MemorySource> fixture(const std::string& set, const std::string& file) {
  const auto s = load_quant_fixtures(set);
  if (!s) throw std::runtime_error("missing fixtures " + set);
  return std::make_unique<MemorySource>(*open_safetensors_source(s->dir / file));
}

std::unique_ptr<MemorySource> exl2() {
  return fixture("exl2_numpy", "mixed_8_6_5_4_3_2_bias.safetensors");
}
std::unique_ptr<MemorySource> gptq() {
  return fixture("gptq", "b4_g128_act_sym_v1.safetensors");
}

void load(const TensorSource& s, const std::string& config = "", int64_t out = 0) {
  QuantizedLinearOptions o;
  o.quantization_config_json = config;
  o.out_features = out;
  const auto w = load_quantized_linear(s, "layer", o);
  // Whatever loads must decode without touching memory outside its tensors.
  std::vector<float> rows(static_cast<size_t>(w->in_features()) * 3);
  w->dequantize_rows(0, std::min<int64_t>(3, w->out_features()), rows.data());
}

TEST(QuantMalformed, ValidFixturesLoad) {
  EXPECT_NO_THROW(load(*exl2()));
  EXPECT_NO_THROW(load(*gptq()));
}

// ---- EXL2 ----

TEST(QuantMalformed, Exl2BitsNotAllowed) {
  auto s = exl2();
  s->data<int16_t>("layer.q_groups")[0] = 7;
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "group 0", "7 bits"});
}

TEST(QuantMalformed, Exl2GroupOrderIncreasingBits) {
  auto s = exl2();
  // The file's groups run 8, 6, 5, 4, 3, 2 bits; make a later group wider than the one before.
  auto* g = s->data<int16_t>("layer.q_groups");
  const int64_t groups = s->info("layer.q_groups").shape[0] / 2;
  int64_t last = -1;
  for (int64_t i = 1; i < groups; ++i) {
    if (g[2 * i] < g[2 * (i - 1)]) last = i;
  }
  ASSERT_GT(last, 0);
  g[2 * last] = 8;
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "non-increasing"});
}

TEST(QuantMalformed, Exl2FirstGroupNotAtZero) {
  auto s = exl2();
  s->data<int16_t>("layer.q_groups")[1] = 1;
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "group 0"});
}

TEST(QuantMalformed, Exl2PackedRowsGoBackwards) {
  auto s = exl2();
  auto* g = s->data<int16_t>("layer.q_groups");
  std::swap(g[3], g[5]);
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups"});
}

TEST(QuantMalformed, Exl2PackedRowBeyondTensor) {
  auto s = exl2();
  auto* g = s->data<int16_t>("layer.q_groups");
  const int64_t groups = s->info("layer.q_groups").shape[0] / 2;
  g[2 * (groups - 1) + 1] = static_cast<int16_t>(-1);  // 65535 as uint16
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups"});
}

TEST(QuantMalformed, Exl2BoundaryNotOnMultipleOf32) {
  // 4-bit groups of 128 rows (16 packed rows); moving the second start by one packed row makes
  // the first group 120 rows: the next group then starts at row 120.
  const auto fx = load_quant_fixtures("exl2_numpy");
  auto s = fixture("exl2_numpy", "b4_g128.safetensors");
  auto* g = s->data<int16_t>("layer.q_groups");
  ASSERT_EQ(g[3], 16);
  g[3] = 15;
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "multiple of 32"});
}

TEST(QuantMalformed, Exl2WholeValuesPerGroup) {
  // 3-bit groups of 128 rows span 12 packed rows; 13 rows do not hold whole 3-bit values.
  auto s = fixture("exl2_numpy", "b3_g128.safetensors");
  auto* g = s->data<int16_t>("layer.q_groups");
  ASSERT_EQ(g[3], 12);
  g[3] = 13;
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "whole number"});
}

TEST(QuantMalformed, Exl2InvpermNotPermutation) {
  auto s = exl2();
  auto* p = s->data<int32_t>("layer.q_invperm");
  p[5] = p[6];
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_invperm", "permutation"});
  auto t = exl2();
  t->data<int32_t>("layer.q_invperm")[3] = 1 << 20;
  expect_error([&] { load(*t); }, ErrorCode::kInvalidFile, {"layer.q_invperm", "element 3"});
  auto u = exl2();
  u->data<int32_t>("layer.q_invperm")[0] = -1;
  expect_error([&] { load(*u); }, ErrorCode::kInvalidFile, {"layer.q_invperm"});
}

TEST(QuantMalformed, Exl2QPermDisagrees) {
  auto s = exl2();
  const int64_t K = s->info("layer.q_invperm").shape[0];
  std::vector<int32_t> perm(static_cast<size_t>(K));
  for (int64_t i = 0; i < K; ++i) perm[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  s->set("layer.q_perm", DType::kI32, {K}, perm.data());
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_perm", "argsort"});
}

TEST(QuantMalformed, Exl2ShapeMismatches) {
  {
    auto s = exl2();
    const auto info = s->info("layer.q_scale");
    s->set("layer.q_scale", DType::kI32, {info.shape[0], info.shape[1] - 1}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_scale", "shape"});
  }
  {
    auto s = exl2();
    const auto info = s->info("layer.q_scale_max");
    s->set("layer.q_scale_max", DType::kF16, {info.shape[0] + 1}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_scale_max"});
  }
  {
    auto s = exl2();
    const auto info = s->info("layer.q_weight");
    s->set("layer.q_weight", DType::kI32, {info.shape[0], 36}, nullptr);  // 36 % 8 != 0
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_weight", "multiple of 8"});
  }
  {
    auto s = exl2();
    const auto info = s->info("layer.q_weight");
    s->set("layer.q_weight", DType::kI32, {info.shape[0] - 1, info.shape[1]}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups"});
  }
  {
    auto s = exl2();  // K larger than the groups can hold
    const auto info = s->info("layer.q_invperm");
    std::vector<int32_t> p(static_cast<size_t>(info.shape[0] + 64));
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int32_t>(i);
    s->set("layer.q_invperm", DType::kI32, {info.shape[0] + 64}, p.data());
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "last group"});
  }
}

TEST(QuantMalformed, Exl2WrongDtypesAndMissingTensors) {
  {
    auto s = exl2();
    const auto info = s->info("layer.q_weight");
    s->set("layer.q_weight", DType::kF32, info.shape, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_weight", "dtype"});
  }
  {
    auto s = exl2();
    s->drop("layer.q_invperm");
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_invperm"});
  }
  {
    auto s = exl2();
    const auto info = s->info("layer.q_groups");
    s->set("layer.q_groups", DType::kI16, {info.shape[0], 1}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_groups", "dimensions"});
  }
}

TEST(QuantMalformed, Exl2NonFiniteScaleMax) {
  auto s = exl2();
  s->data<uint16_t>("layer.q_scale_max")[2] = 0x7c00;  // +inf
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.q_scale_max", "group 2"});
  auto t = exl2();
  t->data<uint16_t>("layer.q_scale_max")[0] = 0x7e00;  // nan
  expect_error([&] { load(*t); }, ErrorCode::kInvalidFile, {"layer.q_scale_max"});
}

// ---- GPTQ ----

TEST(QuantMalformed, GptqGIdxOutOfRange) {
  auto s = gptq();
  s->data<int32_t>("layer.g_idx")[17] = 4;  // 4 groups: 0..3
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.g_idx", "element 17"});
  auto t = gptq();
  t->data<int32_t>("layer.g_idx")[0] = -3;
  expect_error([&] { load(*t); }, ErrorCode::kInvalidFile, {"layer.g_idx"});
}

TEST(QuantMalformed, GptqShapes) {
  {
    auto s = gptq();
    const auto info = s->info("layer.g_idx");
    s->set("layer.g_idx", DType::kI32, {info.shape[0] - 8}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.g_idx", "shape"});
  }
  {
    auto s = gptq();
    const auto info = s->info("layer.scales");
    s->set("layer.scales", DType::kF16, {info.shape[0], info.shape[1] + 1}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.scales"});
  }
  {
    auto s = gptq();
    const auto info = s->info("layer.qzeros");
    s->set("layer.qzeros", DType::kI32, {info.shape[0] + 1, info.shape[1]}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.qzeros", "rows"});
  }
  {
    auto s = gptq();  // 32 outputs of 4-bit zeros = 4 words; 5 words = 5 bits each
    const auto info = s->info("layer.qzeros");
    s->set("layer.qzeros", DType::kI32, {info.shape[0], 5}, nullptr);
    expect_error([&] { load(*s); }, ErrorCode::kUnsupported, {"layer.qzeros", "5-bit"});
  }
  {
    auto s = gptq();
    const auto info = s->info("layer.qzeros");
    s->set("layer.qzeros", DType::kI32, {info.shape[0], 3}, nullptr);  // 3 bits for 32 outputs
    s->set("layer.qweight", DType::kI32, {100, 32}, nullptr);          // 100·32/3 is not whole
    expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.qweight"});
  }
}

TEST(QuantMalformed, GptqScales) {
  auto s = gptq();
  s->data<uint16_t>("layer.scales")[40] = 0x7e00;
  expect_error([&] { load(*s); }, ErrorCode::kInvalidFile, {"layer.scales", "element 40"});
  // fp32 scales beyond the fp16 range would decode to inf.
  auto t = gptq();
  const auto info = t->info("layer.scales");
  std::vector<float> big(static_cast<size_t>(info.shape[0] * info.shape[1]), 1e6f);
  t->set("layer.scales", DType::kF32, info.shape, big.data());
  expect_error([&] { load(*t); }, ErrorCode::kInvalidFile, {"layer.scales"});
}

TEST(QuantMalformed, GptqUnsupportedFlavours) {
  auto s = gptq();
  expect_error([&] { load(*s, R"({"quant_method": "awq", "bits": 4})"); }, ErrorCode::kUnsupported,
               {"awq"});
  expect_error([&] { load(*s, R"({"quant_method": "gptq", "checkpoint_format": "marlin"})"); },
               ErrorCode::kUnsupported, {"marlin"});
  expect_error([&] { load(*s, R"({"quant_method": "gptq", "is_marlin_format": true})"); },
               ErrorCode::kUnsupported, {"marlin"});
}

TEST(QuantMalformed, GptqBadConfigJson) {
  auto s = gptq();
  expect_error([&] { load(*s, R"({"bits": "four"})"); }, ErrorCode::kInvalidFile, {"bits"});
  expect_error([&] { load(*s, R"({"group_size": 0})"); }, ErrorCode::kInvalidFile, {"group_size"});
  expect_error([&] { load(*s, R"([1, 2])"); }, ErrorCode::kInvalidFile, {"object"});
  expect_error([&] { load(*s, R"({"bits": 4,)"); }, ErrorCode::kInvalidFile, {});
  expect_error([&] { load(*s, R"({"sym": "yes"})"); }, ErrorCode::kInvalidFile, {"sym"});
}

TEST(QuantMalformed, GptqGroupSizeContradictsScales) {
  auto s = fixture("gptq", "b4_g64_no_g_idx.safetensors");
  expect_error([&] { load(*s, R"({"bits": 4, "group_size": 32})"); }, ErrorCode::kInvalidFile,
               {"layer.scales", "group_size 32"});
}

TEST(QuantMalformed, OutFeaturesMismatch) {
  auto s = gptq();
  expect_error([&] { load(*s, "", 31); }, ErrorCode::kInvalidFile, {"layer.qweight", "31"});
}

// Random single-word corruptions of every tensor: whatever loads must decode in bounds
// (ASan checks), whatever does not must fail with a hearth::Error.
TEST(QuantMalformed, RandomCorruptionsNeverCrash) {
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int round = 0; round < 300; ++round) {
    auto s = round % 2 ? exl2() : gptq();
    const auto names = s->tensor_names();
    const std::string name = names[next() % names.size()];
    if (name == "expected") continue;
    const HostTensor t = s->get(name);
    auto* bytes = static_cast<uint8_t*>(t.mutable_data());
    for (int i = 0; i < 3; ++i)
      bytes[next() % t.nbytes()] ^= static_cast<uint8_t>(1u << (next() % 8));
    try {
      load(*s);
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace hearth::test
