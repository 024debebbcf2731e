// The GPU tile layout checked on the CPU: the bit codec round-trips every width, the pair
// arrangement matches the register layout that mma.sync m16n8k16 defines (transcribed from the
// PTX ISA's fragment tables), and the layouts built from the fixtures reproduce the reference
// product x · Wᵀ when decoded exactly as the kernels decode them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/dtype.h"
#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_weight.h"
#include "engine/formats/quant_tile_layout.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/io/gguf_dequant.h"
#include "kernels/quant_tile_codec.cuh"
#include "tests/unit/formats/quant_test_util.h"
#include "tests/unit/io/gguf_test_util.h"

namespace hearth::test {
namespace {

// B: a width, or qtile::kIq4Width (4-bit codebook indices, decoding to their 8-bit codes).
template <int B>
void codec_round_trip() {
  constexpr int kBits = qtile::width_bits(B);
  auto value = [](uint32_t code) { return B == qtile::kIq4Width ? qtile::iq4_code(code) : code; };
  std::mt19937 rng(B);
  uint32_t codes[32], words[8], pairs[16], back[32];
  for (int round = 0; round < 2000; ++round) {
    for (auto& c : codes) c = rng() & ((1u << kBits) - 1u);
    qtile::encode_lane<B>(codes, words);
    qtile::decode_lane<B>(words, pairs);
    qtile::decode_lane_codes(B, words, back);  // the stored codes, as the column shards move them
    for (int p = 0; p < 16; ++p) {
      ASSERT_EQ(pairs[p] & 0xffffu, 0x6400u | value(codes[2 * p])) << "B=" << B << " p=" << p;
      ASSERT_EQ(pairs[p] >> 16, 0x6400u | value(codes[2 * p + 1])) << "B=" << B << " p=" << p;
      // The magic-number half is exactly 1024 + code.
      ASSERT_EQ(half_to_float(static_cast<uint16_t>(pairs[p])), 1024.0f + value(codes[2 * p]));
      ASSERT_EQ(back[2 * p], codes[2 * p]);
      ASSERT_EQ(back[2 * p + 1], codes[2 * p + 1]);
    }
  }
  // Every bit of the words carries exactly one bit of one code.
  std::vector<int> owner(32 * kBits, -1);
  for (int v = 0; v < 32; ++v) {
    for (int bit = 0; bit < kBits; ++bit) {
      for (auto& c : codes) c = 0;
      codes[v] = 1u << bit;
      qtile::encode_lane<B>(codes, words);
      int set = 0;
      for (int i = 0; i < kBits; ++i) {
        for (int j = 0; j < 32; ++j) {
          if ((words[i] >> j) & 1u) {
            ++set;
            EXPECT_EQ(owner[i * 32 + j], -1) << "B=" << B << " bit shared";
            owner[i * 32 + j] = v * 8 + bit;
          }
        }
      }
      EXPECT_EQ(set, 1) << "B=" << B << " value " << v << " bit " << bit;
    }
  }
}

TEST(QuantTileCodec, RoundTripsEveryWidth) {
  codec_round_trip<2>();
  codec_round_trip<3>();
  codec_round_trip<4>();
  codec_round_trip<5>();
  codec_round_trip<6>();
  codec_round_trip<8>();
}

// IQ4's codebook chunks: 4-bit indices (laid out for the lookup) decode to the magic-number pair
// of their 8-bit code, the codebook's value + 128.
TEST(QuantTileCodec, Iq4CodebookRoundTrips) {
  for (uint32_t i = 0; i < 16; ++i) {
    EXPECT_EQ(static_cast<int>(qtile::iq4_code(i)), kIq4Values[i] + 128) << "index " << i;
  }
  EXPECT_EQ(qtile::width_bits(qtile::kIq4Width), 4);
  codec_round_trip<qtile::kIq4Width>();
}

// mma.sync.aligned.m16n8k16 (f16 inputs), PTX ISA "Matrix Fragments for mma.m16n8k16":
// A (16×16, row): a_i, i = 0..7, in registers i/2; row = groupID + 8·((i/2) % 2... as tabulated:
//   row = groupID for i in {0,1,4,5}, groupID + 8 for {2,3,6,7};
//   col = 2·threadID_in_group + (i & 1) for i < 4, + 8 for i >= 4.
// B (16×8, col): b_i, i = 0..3: row(k) = 2·threadID_in_group + (i & 1) (+ 8 for i >= 2), col =
// groupID. C (16×8): c_i: row = groupID (+ 8 for i >= 2), col = 2·threadID_in_group + (i & 1).
TEST(QuantTileCodec, PairsAreTheMmaFragments) {
  // For each (nt, ks), the lane's A registers r = 0..3 must be pairs (nt·2 + ks)·4 + r, i.e.
  // element a_{2r+h} must be the weight of output pair_output(p) and row pair_row(p, h).
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane & 3;
    for (int nt = 0; nt < 2; ++nt) {
      for (int ks = 0; ks < 2; ++ks) {
        for (int i = 0; i < 8; ++i) {
          const int a_row = g + ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0);
          const int a_col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
          const int p = (nt * 2 + ks) * 4 + i / 2;
          EXPECT_EQ(qtile::pair_output(p, lane), nt * 16 + a_row);
          EXPECT_EQ(qtile::pair_row(p, lane, i & 1), ks * 16 + a_col);
          EXPECT_EQ(qtile::pair_output(p, lane), g + 8 * qtile::pair_output_slot(p));
        }
      }
    }
  }
  // And a full product through those fragments equals the plain sum.
  std::mt19937 rng(3);
  float W[32][32], X[32][8];  // W[row k][output o] of one chunk, X[k][token]
  for (auto& r : W)
    for (auto& v : r) v = static_cast<float>(static_cast<int>(rng() % 17) - 8);
  for (auto& r : X)
    for (auto& v : r) v = static_cast<float>(static_cast<int>(rng() % 9) - 4);
  float C[2][32][4] = {};  // [nt][lane][c_i]
  for (int nt = 0; nt < 2; ++nt) {
    for (int ks = 0; ks < 2; ++ks) {
      // Emulated mma: D = A·B + C over the warp's registers.
      float A[16][16], B[16][8];
      for (int lane = 0; lane < 32; ++lane) {
        for (int r = 0; r < 4; ++r) {
          const int p = (nt * 2 + ks) * 4 + r;
          for (int h = 0; h < 2; ++h) {
            const int i = 2 * r + h;
            const int a_row = (lane >> 2) + ((i == 2 || i == 3 || i == 6 || i == 7) ? 8 : 0);
            const int a_col = 2 * (lane & 3) + (i & 1) + (i >= 4 ? 8 : 0);
            A[a_row][a_col] = W[qtile::pair_row(p, lane, h)][qtile::pair_output(p, lane)];
          }
        }
        for (int i = 0; i < 4; ++i) {
          const int k = 2 * (lane & 3) + (i & 1) + (i >= 2 ? 8 : 0);
          B[k][lane >> 2] = X[ks * 16 + k][lane >> 2];
        }
      }
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 4; ++i) {
          const int row = (lane >> 2) + (i >= 2 ? 8 : 0), col = 2 * (lane & 3) + (i & 1);
          for (int k = 0; k < 16; ++k) C[nt][lane][i] += A[row][k] * B[k][col];
        }
      }
    }
  }
  for (int nt = 0; nt < 2; ++nt) {
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const int o = nt * 16 + (lane >> 2) + (i >= 2 ? 8 : 0), tok = 2 * (lane & 3) + (i & 1);
        float want = 0;
        for (int k = 0; k < 32; ++k) want += W[k][o] * X[k][tok];
        EXPECT_EQ(C[nt][lane][i], want);
      }
    }
  }
}

void check_layout_product(const std::string& set) {
  const auto fixtures = load_quant_fixtures(set);
  ASSERT_TRUE(fixtures);
  std::mt19937 rng(11);
  for (const auto& c : fixtures->manifest["cases"]) {
    const std::string name = set + "/" + c["name"].get<std::string>();
    SCOPED_TRACE(name);
    const auto source = open_safetensors_source(fixtures->dir / c["file"].get<std::string>());
    const auto w = load_quantized_linear(*source, c["prefix"].get<std::string>(), case_options(c));
    const QuantTileLayout L = build_quant_tile_layout(*w, 2);
    const int64_t K = w->in_features(), N = w->out_features(), R = 3;
    EXPECT_EQ(L.chunks * 32 >= K, true);
    EXPECT_EQ(static_cast<int64_t>(L.qweight.size()), L.blocks * L.lines * 32);
    std::vector<float> x(static_cast<size_t>(R * K));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = half_to_float(float_to_half(u(rng)));
    std::vector<float> y(static_cast<size_t>(R * N));
    emulate_quant_tile_gemm(L, x.data(), R, y.data());
    const std::vector<uint16_t> W = expected_bits(*source);
    double worst = 0;
    for (int64_t r = 0; r < R; ++r) {
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = double(x[r * K + k]) * half_to_float(W[n * K + k]);
          ref += p;
          mag += std::fabs(p);
        }
        const double err = std::fabs(y[r * N + n] - ref) / (mag + 1e-30);
        worst = std::max(worst, err);
      }
    }
    // Same weights, fp32 sums in another order: a few float ulps of the absolute sum.
    EXPECT_LT(worst, 1e-5) << name;
  }
}

TEST(QuantTileLayout, Exl2LayoutReproducesReference) {
  check_layout_product("exl2_numpy");
}
TEST(QuantTileLayout, GptqLayoutReproducesReference) {
  check_layout_product("gptq");
}

TEST(QuantTileLayout, RowOrderAndPadding) {
  const auto fx = load_quant_fixtures("gptq");
  ASSERT_TRUE(fx);
  auto layout_of = [&](const std::string& file) {
    const auto src = open_safetensors_source(fx->dir / file);
    return build_quant_tile_layout(*load_quantized_linear(*src, "layer", QuantizedLinearOptions{}),
                                   1);
  };
  const QuantTileLayout seq = layout_of("b4_g32_seq_sym_v1.safetensors");
  EXPECT_TRUE(seq.rows_in_order);
  EXPECT_EQ(seq.chunks, 256 / 32);
  EXPECT_EQ(seq.kind, QuantTileLayout::Kind::kGptqSym);
  const QuantTileLayout act = layout_of("b4_g128_act_sym_v1.safetensors");
  EXPECT_FALSE(act.rows_in_order);
  EXPECT_EQ(act.chunks, 512 / 32);
  const QuantTileLayout g100 = layout_of("b4_g100_seq_sym_v1_f32scales.safetensors");
  EXPECT_EQ(g100.chunks, 4 + 4 + 4 + 1);  // 100, 100, 100 and 20 rows, each padded to 32s
  EXPECT_FALSE(g100.rows_in_order);
  const QuantTileLayout asym = layout_of("b4_g32_act_asym_v2.safetensors");
  EXPECT_EQ(asym.kind, QuantTileLayout::Kind::kGptqAsym);
  // Every input feature appears exactly once among the stored rows.
  for (const QuantTileLayout* L : {&seq, &act, &g100, &asym}) {
    std::vector<int> seen(static_cast<size_t>(L->in_features), 0);
    for (int32_t s : L->row_src) {
      if (s >= 0) ++seen[static_cast<size_t>(s)];
    }
    for (int v : seen) EXPECT_EQ(v, 1);
  }
}

constexpr GgmlType kPackedGgufTypes[] = {GgmlType::kQ4_0, GgmlType::kQ5_0,   GgmlType::kQ8_0,
                                         GgmlType::kQ4_1, GgmlType::kQ5_1,   GgmlType::kQ2_K,
                                         GgmlType::kQ3_K, GgmlType::kQ4_K,   GgmlType::kQ5_K,
                                         GgmlType::kQ6_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// Weights the kernels decode (emulated, through one-hot x rows) that differ from the fp16 of
// the reference dequantization.
int64_t emulated_mismatches(const GgufBlockWeight& w, const QuantTileLayout& L) {
  const int64_t K = w.in_features(), N = w.out_features();
  std::vector<float> x(static_cast<size_t>(K * K), 0.0f);
  for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(k * K + k)] = 1.0f;
  std::vector<float> y(static_cast<size_t>(K * N)), ref(static_cast<size_t>(N * K));
  emulate_quant_tile_gemm(L, x.data(), K, y.data());
  w.dequantize_rows(0, N, ref.data());
  int64_t mismatches = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      const float want = half_to_float(float_to_half(ref[static_cast<size_t>(n * K + k)]));
      mismatches += y[static_cast<size_t>(k * N + n)] != want;
    }
  }
  return mismatches;
}

// Every GGUF type with a code form decodes, as the kernels decode it, to the fp16 of its
// dequantized value, for every output (N not a multiple of 32), also with the rows reordered as
// q_proj/k_proj are: Q4_0/Q5_0/Q8_0 as symmetric GPTQ, the types with a minimum or sub-block
// scales in their own form, IQ4 as 4-bit codebook indices; K = 512 holds two K-quant
// super-blocks.
TEST(QuantTileLayout, GgufBlocksDecodeToTheirDequantizedValues) {
  const int64_t K = 512, N = 40;
  std::vector<int32_t> reversed(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n)
    reversed[static_cast<size_t>(n)] = static_cast<int32_t>(N - 1 - n);
  for (GgmlType type : kPackedGgufTypes) {
    SCOPED_TRACE(ggml_type_name(type));
    const RandomGguf g(type, K, N, 5);
    for (const auto& order : {std::vector<int32_t>{}, reversed}) {
      const GgufBlockWeight w(g.file, g.tensor(), order);
      ASSERT_TRUE(has_quant_tile_layout(w));
      const QuantTileLayout L = build_quant_tile_layout(w, 2);
      const bool symmetric =
          type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0 || type == GgmlType::kQ8_0;
      EXPECT_EQ(L.kind, symmetric ? QuantTileLayout::Kind::kGptqSym : QuantTileLayout::Kind::kGguf);
      const bool iq4 = type == GgmlType::kIQ4_NL || type == GgmlType::kIQ4_XS;
      EXPECT_EQ(L.has_iq4_codebook(), iq4);
      for (uint32_t info : L.chunk_info) {
        ASSERT_EQ(qtile::chunk_width(info), iq4 ? qtile::kIq4Width : gguf_code_form(type).bits);
      }
      EXPECT_TRUE(L.rows_in_order);
      EXPECT_EQ(L.groups, K / 32);
      EXPECT_EQ(L.device_bytes(), gguf_tile_layout_bytes(w));
      EXPECT_EQ(emulated_mismatches(w, L), 0);
    }
  }
  EXPECT_EQ(gguf_code_form(GgmlType::kQ8_1).bits, 0);  // not a weight type
}

// Q4_1/Q5_1 blocks whose minimum is of d's magnitude (as real ones are) take the kernels' fp16
// path; a tensor with minimums far smaller than d, where d·q + m is not exact in fp32, keeps the
// fp32 one. Both decode to the dequantized values' fp16.
TEST(QuantTileLayout, GgufMinimumsChooseTheExactDecode) {
  for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kQ5_1}) {
    for (bool tiny : {false, true}) {
      SCOPED_TRACE(std::string(ggml_type_name(type)) + (tiny ? " tiny minimums" : ""));
      const RandomGguf g(type, 96, 40, 9, tiny);
      const GgufBlockWeight w(g.file, g.tensor(), {});
      const QuantTileLayout L = build_quant_tile_layout(w, 2);
      EXPECT_EQ(L.gguf_half_exact, !tiny);
      EXPECT_EQ(emulated_mismatches(w, L), 0);
    }
  }
}

// On the GPU a GGUF matrix of a model's size takes at most 3 % more than in the file (Q4_K: 4.625
// bits per weight against 4.5; the legacy types their own 4.5 to 8.5), Q3_K 6 % (3.625 against
// 3.4375: its 12-bit scale pairs take 16 bits), IQ4_XS 10 % (4.625 against 4.25: its 6-bit
// scale per 32 takes 16 bits) and IQ4_NL 11 % (5 against 4.5: its fp16 d takes a 32-bit record).
TEST(QuantTileLayout, GgufLayoutsAreTheSizeOfTheFile) {
  for (GgmlType type : kPackedGgufTypes) {
    SCOPED_TRACE(ggml_type_name(type));
    const RandomGguf g(type, 4096, 4096, 3);
    const GgufBlockWeight w(g.file, g.tensor(), {});
    const auto in_file = static_cast<double>(g.tensor().nbytes);
    EXPECT_GE(static_cast<double>(gguf_tile_layout_bytes(w)), in_file);
    const double bound = type == GgmlType::kIQ4_NL   ? 1.12
                         : type == GgmlType::kIQ4_XS ? 1.10
                         : type == GgmlType::kQ3_K   ? 1.06
                                                     : 1.03;
    EXPECT_LT(static_cast<double>(gguf_tile_layout_bytes(w)), bound * in_file);
  }
}

}  // namespace
}  // namespace hearth::test
