// The quantized KV cache's bits (engine/backend/kv_cache_quant.h) against their definitions, and
// the CPU backend's attention over a quantized cache against a dense reference.
#include "engine/backend/kv_cache_quant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/dtype.h"
#include "engine/core/error.h"

namespace hearth {
namespace {

std::vector<float> normal(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Stores len positions of k, v ([len, kv_heads × D]) into `cache` at pages {2, 0, 3} of one
// sequence through the CPU backend's attention, and returns its output for q [len, heads × D].
std::vector<float> attention_over(Backend& backend, KvCacheStorage& cache, int64_t len,
                                  int64_t heads, int64_t kv_heads, int64_t D,
                                  const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v) {
  const std::vector<int32_t> tokens(static_cast<size_t>(len), 1), table = {2, 0, 3};
  BatchDesc b;
  SequenceSlice slice;
  slice.tokens = tokens;
  slice.page_table = table;
  b.seqs.push_back(slice);
  backend.prepare_batch(b);
  auto make = [&](int64_t cols, const std::vector<float>& values) {
    DeviceTensor t = backend.alloc_activation(len, cols);
    std::copy(values.begin(), values.end(), static_cast<float*>(t.data));
    return t;
  };
  DeviceTensor out = backend.alloc_activation(len, heads * D);
  backend.attention(make(heads * D, q), make(kv_heads * D, k), make(kv_heads * D, v), cache,
                    {0, heads, kv_heads, D, 0.125f}, out);
  return backend.read(out, len);
}

// H·x from the matrix definition: H[i][j] = (-1)^popcount(i & j) / √n.
std::vector<double> dense_hadamard(const std::vector<float>& x) {
  const size_t n = x.size();
  std::vector<double> y(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      y[i] += (std::popcount(i & j) % 2 ? -1.0 : 1.0) * x[j];
    }
    y[i] /= std::sqrt(static_cast<double>(n));
  }
  return y;
}

TEST(KvCacheQuant, HadamardMatchesTheMatrixAndIsItsOwnInverse) {
  std::mt19937 rng(1);
  for (int64_t n : {64, 128}) {
    const std::vector<float> x = normal(static_cast<size_t>(n), rng);
    std::vector<float> y = x;
    hadamard_rotate(y.data(), n);
    const std::vector<double> ref = dense_hadamard(x);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], ref[i], 1e-5) << "n " << n << " i " << i;
    hadamard_rotate(y.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(y[i], x[i], 1e-5);
  }
}

TEST(KvCacheQuant, CodesAndScalesFollowTheDefinition) {
  // One group of 32 with max |x| = 8: q4's scale is 8 / 8 = 1, q8's 8 / 128.
  std::vector<float> row(64, 0.0f);
  row[0] = 3.2f;
  row[1] = -8.0f;
  row[2] = 8.0f;
  row[3] = -0.3f;
  row[31] = 0.99f;
  // The second group is all zeros: scale 0, every value reads back 0.
  std::vector<uint8_t> codes(64);
  uint16_t scales[2];
  quantize_kv_row(row.data(), 64, 4, codes.data(), scales);
  EXPECT_EQ(half_to_float(scales[0]), 1.0f);
  EXPECT_EQ(scales[1], 0);
  // q4's positive levels, written out: u · (3/4 + 5u²/1024) for u = 0.5 .. 7.5.
  const float levels[8] = {0.3756103515625f, 1.1414794921875f, 1.9512939453125f, 2.8343505859375f,
                           3.8199462890625f, 4.9373779296875f, 6.2159423828125f, 7.6849365234375f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(kv_q4_level(8 + i), levels[i]);
    EXPECT_EQ(kv_q4_level(7 - i), -kv_q4_level(8 + i));
  }
  // The nearest levels: 3.2 → 2.834 (code 11; the midpoint to 3.820 is 3.327), -8 → code 0,
  // 8 → 15, -0.3 → 7, 0.99 → 9 (past the midpoint 0.759); value j in nibble j % 2 of byte j / 2.
  EXPECT_EQ(codes[0], 11 | (0 << 4));
  EXPECT_EQ(codes[1], 15 | (7 << 4));
  EXPECT_EQ(codes[15] >> 4, 9);
  std::vector<float> back(64);
  dequantize_kv_row(codes.data(), scales, 64, 4, back.data());
  EXPECT_EQ(back[0], kv_q4_level(11));
  EXPECT_EQ(back[1], -kv_q4_level(15));
  EXPECT_EQ(back[2], kv_q4_level(15));
  EXPECT_EQ(back[3], kv_q4_level(7));
  for (int j = 32; j < 64; ++j) EXPECT_EQ(back[j], 0.0f);
  // A value exactly on a midpoint goes to the larger magnitude, on both sides of zero.
  const float midpoint = 0.5f * (kv_q4_level(10) + kv_q4_level(11));
  row[4] = midpoint;
  row[5] = -midpoint;
  quantize_kv_row(row.data(), 64, 4, codes.data(), scales);
  EXPECT_EQ(codes[2], 11 | (4 << 4));

  // q6: the low nibbles as q4, then the high 2 bits of value j at bits 2·(j % 4) of byte
  // 32 + j / 4 (64 values). Scale 8 / 32 = 0.25: 3.2 → floor(12.8) + 32 = 44 = 0b10'1100.
  std::vector<uint8_t> codes6(48);
  quantize_kv_row(row.data(), 64, 6, codes6.data(), scales);
  EXPECT_EQ(half_to_float(scales[0]), 0.25f);
  EXPECT_EQ(codes6[0] & 15, 44 & 15);
  EXPECT_EQ(codes6[32] & 3, 44 >> 4);
  // Value 2 (8.0 → 64, clamped to 63): high bits 3 at bits 4..5 of byte 32.
  EXPECT_EQ((codes6[32] >> 4) & 3, 3);
  dequantize_kv_row(codes6.data(), scales, 64, 6, back.data());
  EXPECT_EQ(back[0], (44 - 32 + 0.5f) * 0.25f);

  // q8: one byte per value.
  quantize_kv_row(row.data(), 64, 8, codes.data(), scales);
  EXPECT_EQ(half_to_float(scales[0]), 8.0f / 128.0f);
  EXPECT_EQ(codes[0], static_cast<uint8_t>(std::floor(3.2f * 16.0f) + 128));
}

TEST(KvCacheQuant, ErrorStaysWithinHalfTheGapAndNonFiniteValuesDoNotEscape) {
  std::mt19937 rng(2);
  for (int bits : {8, 6, 4}) {
    std::vector<float> row = normal(128, rng);
    row[5] = 40.0f;  // an outlier inflates only its own group's step
    std::vector<uint8_t> codes(128);
    uint16_t scales[4];
    quantize_kv_row(row.data(), 128, bits, codes.data(), scales);
    std::vector<float> back(128);
    dequantize_kv_row(codes.data(), scales, 128, bits, back.data());
    // q4's levels are uneven: its widest gap, between the two top levels, is 1.47 steps.
    const float bound = bits == 4 ? 0.5f * (kv_q4_level(15) - kv_q4_level(14)) : 0.5f;
    for (int j = 0; j < 128; ++j) {
      const float step = half_to_float(scales[j / 32]);
      EXPECT_LE(std::fabs(back[j] - row[j]), step * bound) << "bits " << bits << " j " << j;
    }
    row[70] = std::numeric_limits<float>::quiet_NaN();
    quantize_kv_row(row.data(), 128, bits, codes.data(), scales);
    dequantize_kv_row(codes.data(), scales, 128, bits, back.data());
    for (int j = 64; j < 96; ++j) EXPECT_TRUE(std::isfinite(back[j]));
  }
}

TEST(KvCacheQuant, Q4LevelsHaveLessErrorThanEvenStepsOnNormalRows) {
  // Rotated rows are close to normal; even steps (what q8 and q6 use) would read a q4 code c back
  // as (c - 7.5) · s.
  std::mt19937 rng(5);
  double levels_error = 0, even_error = 0;
  for (int r = 0; r < 200; ++r) {
    const std::vector<float> row = normal(128, rng);
    std::vector<uint8_t> codes(64);
    uint16_t scales[4];
    quantize_kv_row(row.data(), 128, 4, codes.data(), scales);
    std::vector<float> back(128);
    dequantize_kv_row(codes.data(), scales, 128, 4, back.data());
    for (int j = 0; j < 128; ++j) {
      const float s = half_to_float(scales[j / 32]);
      const float even = (std::clamp(std::floor(row[j] / s), -8.0f, 7.0f) + 0.5f) * s;
      levels_error += std::pow(back[j] - row[j], 2);
      even_error += std::pow(even - row[j], 2);
    }
  }
  std::printf("[ q4 ] squared error of normal rows: levels %.4f, even steps %.4f (ratio %.3f)\n",
              levels_error, even_error, levels_error / even_error);
  EXPECT_LT(levels_error, 0.9 * even_error);
}

TEST(KvCacheQuant, BytesPerTokenCountCodesScalesAndFirstKeys) {
  KvCacheSpec spec{32, 8, 128, 64, 10, KvCacheType::kF16};
  EXPECT_EQ(spec.bytes_per_token(), size_t{32} * 8 * 2 * 128 * 2);  // 128 KiB
  EXPECT_EQ(spec.bytes(), spec.bytes_per_token() * 640);
  // A page's fp16 first keys (32 layers × 8 heads × 128 dims × 2 bytes) over its 64 positions.
  const size_t first_keys = size_t{32} * 8 * 128 * 2 / 64;
  spec.type = KvCacheType::kQ8;
  EXPECT_EQ(spec.bytes_per_token(), size_t{32} * 8 * 2 * (128 + 8) + first_keys);
  spec.type = KvCacheType::kQ6;
  EXPECT_EQ(spec.bytes_per_token(), size_t{32} * 8 * 2 * (96 + 8) + first_keys);
  spec.type = KvCacheType::kQ4;
  EXPECT_EQ(spec.bytes_per_token(), size_t{32} * 8 * 2 * (64 + 8) + first_keys);
  EXPECT_EQ(spec.bytes(), spec.bytes_per_token() * 640);
  EXPECT_EQ(spec.page_bytes(), spec.bytes_per_token() * 64);
  EXPECT_EQ(KvQuantLayout::of(spec).layer_page_bytes * 32, spec.page_bytes());
  EXPECT_EQ(parse_kv_cache_type("q6"), KvCacheType::kQ6);
  EXPECT_EQ(parse_kv_cache_type("fp32"), std::nullopt);  // not a choice users have
  EXPECT_STREQ(kv_cache_type_name(KvCacheType::kQ4), "q4");
}

// Attention over a quantized cache equals dense attention over the keys and values the cache
// holds (each row rotated, quantized, dequantized and rotated back): the rotated-space
// computation is exact up to rounding. And it stays close to attention over the originals.
TEST(KvCacheQuant, CpuAttentionOverAQuantizedCacheMatchesDenseAttention) {
  std::mt19937 rng(3);
  auto backend = create_cpu_backend(2);
  const int64_t heads = 4, kv_heads = 2, D = 64, page = 16, len = 40;
  for (KvCacheType type : {KvCacheType::kQ8, KvCacheType::kQ6, KvCacheType::kQ4}) {
    auto cache = backend->create_kv_cache({1, kv_heads, D, page, 4, type});
    const int bits = kv_cache_bits(type);
    const auto qv = normal(len * heads * D, rng), kv = normal(len * kv_heads * D, rng, 2.0f),
               vv = normal(len * kv_heads * D, rng);
    const std::vector<float> o =
        attention_over(*backend, *cache, len, heads, kv_heads, D, qv, kv, vv);

    // What the cache holds, back in the original space (the first position's keys in fp16).
    auto held = [&](const std::vector<float>& x, bool keys) {
      std::vector<float> y(x.size());
      std::vector<uint8_t> codes(static_cast<size_t>(D * bits / 8));
      uint16_t scales[2];
      for (size_t r = 0; r < x.size() / D; ++r) {
        std::vector<float> row(x.begin() + r * D, x.begin() + (r + 1) * D);
        hadamard_rotate(row.data(), D);
        if (keys && r < static_cast<size_t>(kv_heads)) {
          std::vector<uint16_t> half(static_cast<size_t>(D));
          store_first_key(row.data(), D, half.data());
          load_first_key(half.data(), D, row.data());
        } else {
          quantize_kv_row(row.data(), D, bits, codes.data(), scales);
          dequantize_kv_row(codes.data(), scales, D, bits, row.data());
        }
        hadamard_rotate(row.data(), D);
        std::copy(row.begin(), row.end(), y.begin() + r * D);
      }
      return y;
    };
    const std::vector<float> kh = held(kv, true), vh = held(vv, false);
    double worst_held = 0, worst_original = 0, err2 = 0, ref2 = 0;
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t g = h / (heads / kv_heads);
        for (int pass = 0; pass < 2; ++pass) {
          const std::vector<float>& K = pass == 0 ? kh : kv;
          const std::vector<float>& V = pass == 0 ? vh : vv;
          std::vector<double> w(t + 1);
          double mx = -1e300, sum = 0;
          for (int64_t j = 0; j <= t; ++j) {
            double d = 0;
            for (int64_t e = 0; e < D; ++e) {
              d += double(qv[(t * heads + h) * D + e]) * K[(j * kv_heads + g) * D + e];
            }
            w[j] = d * 0.125;
            mx = std::max(mx, w[j]);
          }
          for (double& x : w) sum += (x = std::exp(x - mx));
          for (int64_t e = 0; e < D; ++e) {
            double ref = 0;
            for (int64_t j = 0; j <= t; ++j) ref += w[j] / sum * V[(j * kv_heads + g) * D + e];
            const double err = std::fabs(o[(t * heads + h) * D + e] - ref);
            (pass == 0 ? worst_held : worst_original) =
                std::max(pass == 0 ? worst_held : worst_original, err);
            if (pass == 1) {
              err2 += err * err;
              ref2 += ref * ref;
            }
          }
        }
      }
    }
    EXPECT_LT(worst_held, 2e-5) << kv_cache_type_name(type);
    // The quantization error itself, relative to the outputs (RMS).
    const double relative = std::sqrt(err2 / ref2);
    std::printf("[ %s ] attention error vs unquantized: %.4f RMS relative, %.4f max\n",
                kv_cache_type_name(type), relative, worst_original);
    const double bound = bits == 8 ? 0.012 : bits == 6 ? 0.045 : 0.17;
    EXPECT_LT(relative, bound) << kv_cache_type_name(type);
    EXPECT_GT(relative, 0.0) << kv_cache_type_name(type);
  }
}

TEST(KvCacheQuant, UnsupportedHeadDimIsRefused) {
  auto backend = create_cpu_backend(1);
  try {
    backend->create_kv_cache({1, 2, 48, 16, 4, KvCacheType::kQ4});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("heads of 64 or 128 dims; this model's have 48"),
              std::string::npos)
        << e.what();
  }
}

// Keys with a large part common to every position (as real models' keys have) lose much less
// to a q4 cache stored less that part (KvCacheStorage::set_key_offsets), and attention needs
// nothing added back: each query's scores all shift by the same q·μ.
TEST(KvCacheQuant, KeyOffsetsCutTheErrorOfKeysWithACommonPart) {
  std::mt19937 rng(11);
  auto backend = create_cpu_backend(2);
  const int64_t heads = 4, kv_heads = 2, D = 64, page = 16, len = 40;
  std::vector<float> common(static_cast<size_t>(kv_heads * D), 0.0f);
  for (int64_t g = 0; g < kv_heads; ++g) {
    for (int64_t e : {3, 17, 40, 41}) common[g * D + e] = (g ? -6.0f : 9.0f) + float(e % 3);
  }
  const auto qv = normal(len * heads * D, rng), vv = normal(len * kv_heads * D, rng);
  std::vector<float> kv = normal(len * kv_heads * D, rng);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] += common[i % common.size()];
  const std::vector<int32_t> table = {2, 0, 3};  // attention_over's pages
  auto run = [&](KvCacheStorage& cache) {
    return attention_over(*backend, cache, len, heads, kv_heads, D, qv, kv, vv);
  };
  auto exact = backend->create_kv_cache({1, kv_heads, D, page, 4, KvCacheType::kF32});
  auto plain = backend->create_kv_cache({1, kv_heads, D, page, 4, KvCacheType::kQ4});
  auto offset = backend->create_kv_cache({1, kv_heads, D, page, 4, KvCacheType::kQ4});
  std::vector<float> rotated_common = common;
  for (int64_t g = 0; g < kv_heads; ++g) hadamard_rotate(rotated_common.data() + g * D, D);
  EXPECT_FALSE(exact->offsets_keys());
  ASSERT_TRUE(offset->offsets_keys());
  offset->set_key_offsets(rotated_common);
  const std::vector<float> want = run(*exact), got_plain = run(*plain), got = run(*offset);
  auto rms_error = [&](const std::vector<float>& o) {
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < o.size(); ++i) {
      err2 += (o[i] - want[i]) * double(o[i] - want[i]);
      ref2 += want[i] * double(want[i]);
    }
    return std::sqrt(err2 / ref2);
  };
  std::printf("[ q4 ] attention error with a common key part: %.4f plain, %.4f offset\n",
              rms_error(got_plain), rms_error(got));
  // Values are quantized alike in both, so part of the error is common (measured: 0.166 plain,
  // 0.107 with offsets).
  EXPECT_LT(rms_error(got), 0.75 * rms_error(got_plain));
  EXPECT_LT(rms_error(got), 0.17);

  // The mean key read back (offsets added back) is the rotated mean of what was stored.
  const std::vector<float> mean = offset->mean_keys(table, 0, len);
  ASSERT_EQ(mean.size(), static_cast<size_t>(kv_heads * D));
  for (int64_t g = 0; g < kv_heads; ++g) {
    std::vector<float> stored(static_cast<size_t>(D), 0.0f);
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t e = 0; e < D; ++e) stored[e] += kv[(t * kv_heads + g) * D + e] / float(len);
    }
    hadamard_rotate(stored.data(), D);
    for (int64_t e = 0; e < D; ++e) EXPECT_NEAR(mean[g * D + e], stored[e], 0.05) << g << " " << e;
  }
}

TEST(KvCacheQuant, BadKeyOffsetsAreRefused) {
  auto backend = create_cpu_backend(1);
  auto q8 = backend->create_kv_cache({2, 2, 64, 16, 4, KvCacheType::kQ8});
  auto f32 = backend->create_kv_cache({2, 2, 64, 16, 4, KvCacheType::kF32});
  auto code = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;  // no error
  };
  std::vector<float> right(2 * 2 * 64, 0.5f);
  EXPECT_EQ(code([&] { q8->set_key_offsets(std::vector<float>(10)); }),
            ErrorCode::kInvalidArgument);
  std::vector<float> nan = right;
  nan[77] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(code([&] { q8->set_key_offsets(nan); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { f32->set_key_offsets(right); }), ErrorCode::kUnsupported);
  const std::vector<int32_t> pages = {1};
  EXPECT_EQ(code([&] { q8->mean_keys(pages, 0, 17); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { q8->mean_keys(std::vector<int32_t>{9}, 0, 4); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { q8->set_key_offsets(right); }), ErrorCode::kInternal);
  EXPECT_EQ(q8->mean_keys(pages, 0, 16).size(), right.size());
}

}  // namespace
}  // namespace hearth
