// EXL2 and GPTQ layers decoded bit-exactly against fixtures written by outside packers:
// exllamav2's own packer (exl2_exllamav2/, made on a GPU by tests/reference/exl2_make_fixtures.py,
// when present), a numpy re-implementation of it (exl2_numpy/) and AutoGPTQ's packing loops in
// numpy (gptq/). Expected matrices come from the reference dequantizers of docs/FORMATS.md §1.9
// and §2.6.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_weight.h"
#include "engine/formats/quant_bits.h"
#include "engine/io/tensor_source.h"
#include "tests/unit/formats/quant_test_util.h"

namespace hearth::test {
namespace {

// Decodes the whole layer in uneven blocks of output rows and compares fp16 bit patterns.
void expect_exact(const QuantizedWeight& w, const std::vector<uint16_t>& expected,
                  const std::string& name) {
  const int64_t N = w.out_features();
  const int64_t K = w.in_features();
  ASSERT_EQ(static_cast<int64_t>(expected.size()), N * K) << name;
  std::vector<float> rows;
  int64_t mismatches = 0;
  for (int64_t n0 = 0, step = 1; n0 < N; n0 += step, step = step % 7 + 3) {
    const int64_t n1 = std::min(N, n0 + step);
    rows.assign(static_cast<size_t>((n1 - n0) * K), NAN);
    w.dequantize_rows(n0, n1, rows.data());
    for (int64_t i = 0; i < (n1 - n0) * K; ++i) {
      const uint16_t want = expected[static_cast<size_t>(n0 * K + i)];
      const uint16_t got = float_to_half(rows[static_cast<size_t>(i)]);
      // The value must be an fp16 value exactly (not merely round to one).
      const bool exact = half_to_float(got) == rows[static_cast<size_t>(i)];
      if ((got != want && !(want == 0x8000 && got == 0) && !(want == 0 && got == 0x8000)) ||
          !exact) {
        if (++mismatches <= 5) {
          ADD_FAILURE() << name << ": W[" << n0 + i / K << "][" << i % K
                        << "] = " << rows[static_cast<size_t>(i)] << ", expected "
                        << half_to_float(want);
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << name;
}

// exllamav2's fused GEMM (fp16 partial sums, relative error about 1e-3) on the fixture's x,
// against x · Wᵀ (+ bias) with the weights decoded here.
void expect_close_to_exllamav2_gemm(const QuantizedWeight& w, const TensorSource& src,
                                    const std::string& prefix, const std::string& name) {
  const std::vector<float> x = src.get("x").to_floats();
  const std::vector<float> y = src.get("y_exllamav2").to_floats();
  const int64_t K = w.in_features(), N = w.out_features();
  const int64_t R = static_cast<int64_t>(x.size()) / K;
  ASSERT_EQ(static_cast<int64_t>(y.size()), R * N) << name;
  std::vector<float> W(static_cast<size_t>(N * K));
  w.dequantize_rows(0, N, W.data());
  std::vector<float> bias;
  if (src.has(prefix + ".bias")) bias = src.get(prefix + ".bias").to_floats();
  double num = 0, den = 0, worst = 0, top = 0;
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t n = 0; n < N; ++n) {
      double ref = bias.empty() ? 0.0 : bias[static_cast<size_t>(n)];
      for (int64_t k = 0; k < K; ++k) ref += double(x[r * K + k]) * W[n * K + k];
      const double e = y[r * N + n] - ref;
      num += e * e;
      den += ref * ref;
      worst = std::max(worst, std::fabs(e));
      top = std::max(top, std::fabs(ref));
    }
  }
  EXPECT_LE(num / den, 1e-5) << name << ": NMSE against exllamav2's GEMM";
  EXPECT_LE(worst, 1e-2 * top) << name << ": worst |error| against exllamav2's GEMM";
}

void run_set(const std::string& set, bool required) {
  const auto fixtures = load_quant_fixtures(set);
  if (!fixtures) {
    if (required) FAIL() << "missing fixture set " << set;
    GTEST_SKIP() << "fixture set " << set << " not generated yet";
  }
  int cases = 0;
  for (const auto& c : fixtures->manifest["cases"]) {
    const std::string name = set + "/" + c["name"].get<std::string>();
    SCOPED_TRACE(name);
    const auto source = open_safetensors_source(fixtures->dir / c["file"].get<std::string>());
    const auto w = load_quantized_linear(*source, c["prefix"].get<std::string>(), case_options(c));
    EXPECT_EQ(w->format(), c["format"].get<std::string>());
    EXPECT_EQ(w->in_features(), c["in_features"].get<int64_t>());
    EXPECT_EQ(w->out_features(), c["out_features"].get<int64_t>());
    EXPECT_GT(w->bits_per_weight(), 1.5);
    EXPECT_LT(w->bits_per_weight(), 20.0);
    if (c["format"] == "exl2") {
      const auto& e = dynamic_cast<const Exl2Weight&>(*w);
      EXPECT_EQ(static_cast<int64_t>(e.groups().size()), c["groups"].get<int64_t>());
      if (c.contains("q_groups")) {
        for (size_t g = 0; g < e.groups().size(); ++g) {
          EXPECT_EQ(e.groups()[g].bits, c["q_groups"][2 * g].get<int>());
          EXPECT_EQ(e.groups()[g].qrow_begin, c["q_groups"][2 * g + 1].get<int64_t>());
        }
      }
      if (c.contains("padded_out_features")) {
        EXPECT_EQ(e.padded_out_features(), c["padded_out_features"].get<int64_t>());
      }
    } else {
      const auto& g = dynamic_cast<const GptqWeight&>(*w);
      EXPECT_EQ(g.bits(), c["bits"].get<int>());
      EXPECT_EQ(g.groups(), c["groups"].get<int64_t>());
      EXPECT_EQ(g.zero_format() == GptqZeros::kV2 ? "v2" : "v1",
                c["zero_format"].get<std::string>());
      if (!c["damaged_v1_zeros"].get<bool>()) {
        EXPECT_EQ(g.symmetric(), c["symmetric"].get<bool>());
      }
    }
    expect_exact(*w, expected_bits(*source), name);
    if (source->has("x") && source->has("y_exllamav2")) {
      expect_close_to_exllamav2_gemm(*w, *source, c["prefix"].get<std::string>(), name);
    }
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

TEST(QuantFormat, Exl2NumpyFixturesDecodeExactly) {
  run_set("exl2_numpy", true);
}
TEST(QuantFormat, Exl2ExllamaFixturesDecodeExactly) {
  run_set("exl2_exllamav2", false);
}
TEST(QuantFormat, GptqFixturesDecodeExactly) {
  run_set("gptq", true);
}

// The worked example of docs/FORMATS.md §1.2.5, as the document states it: 35 groups,
// q_groups starting [8,0, 8,8, 8,16, 8,24, 6,32, 6,44, 6,56, 6,68, 5,80, 5,85], Q = 262.
TEST(QuantFormat, Exl2SpecWorkedExampleGroups) {
  const auto fixtures = load_quant_fixtures("exl2_numpy");
  ASSERT_TRUE(fixtures);
  const auto source =
      open_safetensors_source(fixtures->dir / "spec_worked_example_mixed.safetensors");
  const auto w = Exl2Weight::load(*source, "layer", 0);
  EXPECT_EQ(w->groups().size(), 35u);
  EXPECT_EQ(w->packed_rows(), 262);
  const int expect[] = {8, 0, 8, 8, 8, 16, 8, 24, 6, 32, 6, 44, 6, 56, 6, 68, 5, 80, 5, 85};
  for (int g = 0; g < 10; ++g) {
    EXPECT_EQ(w->groups()[g].bits, expect[2 * g]) << g;
    EXPECT_EQ(w->groups()[g].qrow_begin, expect[2 * g + 1]) << g;
  }
  // Four 8-bit groups of 32 rows, then 6-bit groups of 64 rows, then 5-bit groups of 32.
  EXPECT_EQ(w->groups()[3].rows, 32);
  EXPECT_EQ(w->groups()[4].rows, 64);
  EXPECT_EQ(w->groups()[8].rows, 32);
}

TEST(QuantFormat, PaddedExl2HeadReportsRealWidth) {
  const auto fixtures = load_quant_fixtures("exl2_numpy");
  ASSERT_TRUE(fixtures);
  const auto source = open_safetensors_source(fixtures->dir / "head_n200_padded.safetensors");
  QuantizedLinearOptions o;
  o.out_features = 200;
  EXPECT_EQ(load_quantized_linear(*source, "layer", o)->out_features(), 200);
  o.out_features = 0;
  EXPECT_EQ(load_quantized_linear(*source, "layer", o)->out_features(), 224);
  o.out_features = 192;  // 32 short of the stored width: not a padding
  expect_error([&] { load_quantized_linear(*source, "layer", o); }, ErrorCode::kInvalidFile,
               {"layer.q_weight", "224"});
  o.out_features = 225;
  expect_error([&] { load_quantized_linear(*source, "layer", o); }, ErrorCode::kInvalidFile,
               {"layer.q_weight"});
}

// A GPTQ folder without quantization_config: the loader reads quantize_config.json beside it.
TEST(QuantFormat, GptqReadsQuantizeConfigJson) {
  const auto fixtures = load_quant_fixtures("gptq");
  ASSERT_TRUE(fixtures);
  const auto source = open_safetensors_source(fixtures->dir / "b4_g128_thebloke_quantize_config" /
                                              "model.safetensors");
  QuantizedLinearOptions o;  // no config given
  const auto w = load_quantized_linear(*source, "layer", o);
  EXPECT_EQ(dynamic_cast<const GptqWeight&>(*w).bits(), 4);
  // A config that contradicts the tensors is refused.
  o.quantization_config_json = R"({"quant_method": "gptq", "bits": 8})";
  expect_error([&] { load_quantized_linear(*source, "layer", o); }, ErrorCode::kInvalidFile,
               {"layer.qzeros", "bits = 8"});
}

TEST(QuantFormat, GptqZeroFormatResolution) {
  // Symmetric zero words decide whatever the label says; otherwise the label does.
  EXPECT_EQ(resolve_gptq_zeros("gptq_v2", true, false), GptqZeros::kV1);
  EXPECT_EQ(resolve_gptq_zeros("gptq", false, true), GptqZeros::kV2);
  EXPECT_EQ(resolve_gptq_zeros("", false, true), GptqZeros::kV2);
  EXPECT_EQ(resolve_gptq_zeros("gptq_v2", false, false), GptqZeros::kV2);
  EXPECT_EQ(resolve_gptq_zeros("gptq", false, false), GptqZeros::kV1);
  EXPECT_EQ(resolve_gptq_zeros("", false, false), GptqZeros::kV1);
}

// round_to_half is the exact fp16 rounding (ties to even) on the whole float range.
TEST(QuantBits, RoundToHalfMatchesConversion) {
  std::mt19937 rng(7);
  auto check = [](float x) {
    const float a = quant::round_to_half(x);
    const float b = half_to_float(float_to_half(x));
    if (std::isnan(b)) return std::isnan(a);
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    return ua == ub;
  };
  for (uint32_t e = 0; e < 256; ++e) {  // every exponent, edges of the mantissa
    for (uint32_t m : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x3000u, 0x7fffffu, 0x7fe000u,
                       0x7ff000u, 0x7fefffu}) {
      for (uint32_t s : {0u, 0x80000000u}) {
        const uint32_t u = s | (e << 23) | m;
        float x;
        std::memcpy(&x, &u, 4);
        ASSERT_TRUE(check(x)) << std::hex << u;
      }
    }
  }
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t u = rng();
    float x;
    std::memcpy(&x, &u, 4);
    ASSERT_TRUE(check(x)) << std::hex << u;
  }
}

TEST(QuantBits, BitsAtReadsLittleEndianStream) {
  // Three 3-bit values straddling words: v10 = bits 30..32 across w0 and w1.
  const uint32_t words[3] = {0xC0000000u | 5u, 0x00000001u, 0};
  EXPECT_EQ(quant::bits_at(words, 1, 3, 0), 5u);
  EXPECT_EQ(quant::bits_at(words, 1, 3, 10), 7u);  // 0b11 from w0 + 0b1 from w1
  quant::BitReader r(words, 1);
  EXPECT_EQ(r.next<3>(), 5u);
  for (int j = 1; j < 10; ++j) EXPECT_EQ(r.next<3>(), 0u);
  EXPECT_EQ(r.next<3>(), 7u);
}

}  // namespace
}  // namespace hearth::test
