// The layout Hearth's quantized GPU kernels read, built once per layer at load time from an EXL2
// or GPTQ layer, or from GGUF blocks (kernels/quant_tile_codec.cuh describes the bit arrangement).
//
// Stored rows are regrouped so that every 32-row chunk has a single bit width and a single
// quantization group: EXL2 keeps its act-order row order (groups already lie on 32-row
// boundaries; a group that does not, such as a 16-row 2-bit group, is padded), GPTQ rows are
// sorted by group (act-order g_idx) and each group is padded to a multiple of 32 rows. row_src
// says which input feature each stored row multiplies (−1: padding, multiplies zero), so the
// kernels gather x through it while staging it — the act-order permutation costs no extra pass.
//
// Scales per (group, output) are arranged per lane group: for 32-output block nb and group g,
// entry [nb][g][i] serves outputs nb·32 + i + 8j, j = 0..3 (the four outputs of lanes 4i..4i+3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/quantized_weight.h"

namespace hearth {

class GgufBlockWeight;

struct QuantTileLayout {
  enum class Kind {
    kExl2,      // 4-bit scale codes per (group, output) and an fp16 maximum per group
    kGptqSym,   // fp16 scales; every zero is 2^(b-1)
    kGptqAsym,  // fp16 scales and zeros
    kGguf,      // GGUF blocks with a minimum or sub-block scales (GgufCodeForm), see below
  };
  // kGguf sub-scale records: what the 16 bits of (group, output) hold.
  enum class SubScales : uint32_t {
    kNone = 0,      // no record: sc = 1, m = −1 (Q4_1/Q5_1: dmin is the block's minimum)
    kScaleMin = 1,  // low byte sc, high byte m, for all 32 rows (Q4_K/Q5_K)
    kHalves = 2,    // low byte sc of rows 0..15, high byte of rows 16..31, signed; m = 0 (Q6_K,
                    // Q3_K)
    kScaleMinHalves = 3,  // rows 0..15 in the low byte, 16..31 in the high: sc | m << 4 (Q2_K)
  };
  Kind kind = Kind::kExl2;
  std::string name;
  int64_t in_features = 0;   // K
  int64_t out_features = 0;  // N (real)
  int64_t blocks = 0;        // NB = ceil(N / 32)
  int64_t chunks = 0;        // C
  int64_t groups = 0;        // G
  int64_t lines = 0;         // Σ bits over chunks: 32-word lines per block column
  uint32_t bits_mask = 0;    // bit (b - 1) set for every width present

  std::vector<uint32_t> qweight;     // [blocks][lines][32]
  std::vector<int32_t> chunk_line;   // [chunks + 1] first line of each chunk
  std::vector<uint32_t> chunk_info;  // [chunks] qtile::chunk_info(bits, group)
  std::vector<int32_t> row_src;      // [chunks · 32] input feature per stored row, −1 = padding
  bool rows_in_order = false;        // row_src[s] = s for s < K, padding only after K

  // kExl2
  std::vector<uint16_t> scale_codes;  // [blocks][groups][8]: nibble j = output i + 8j
  std::vector<uint16_t> scale_max;    // [groups] fp16 bits of q_scale_max / 256
  // kGptqSym / kGptqAsym: fp16 bits, [blocks][groups][8][4]
  std::vector<uint16_t> scales;
  std::vector<uint16_t> zeros;  // kGptqAsym: fp16 bits of 1024 + z
  // kGguf: w = fp32 fma(d·sc, q − gguf_zero, −(dmin·m)), GgufCodeForm's formula, with (d, dmin)
  // per super-block of 2^super_shift groups and (sc, m) per group; the fused kernels multiply
  // that value, the dequantizer writes its fp16.
  std::vector<uint32_t> super_records;  // [blocks][supers][8][4]: fp16 d | fp16 dmin << 16
  std::vector<uint16_t> sub_records;    // [blocks][groups][8][4], empty for SubScales::kNone
  int64_t supers = 0;
  int super_shift = 0;
  SubScales sub_scales = SubScales::kNone;
  int gguf_zero = 0;
  // SubScales::kNone only: every d·q + dmin is exact in fp32 (d and dmin of like magnitude, as a
  // real block minimum is), so an fp16 fma of (q, d, dmin), rounded once, gives the same fp16.
  bool gguf_half_exact = false;

  size_t device_bytes() const;
  // Whether the chunks hold 4-bit indices into IQ4's codebook (width qtile::kIq4Width: IQ4_NL,
  // IQ4_XS; a layout has them in every chunk or in none).
  bool has_iq4_codebook() const;
};

// Builds the layout of an Exl2Weight, a GptqWeight or a GgufBlockWeight of a type with a
// GgufCodeForm (Error(kUnsupported) for anything else), spreading the work over `threads` threads
// (<= 0: one per hardware thread).
QuantTileLayout build_quant_tile_layout(const QuantizedWeight& weight, int threads = 0);
// Whether build_quant_tile_layout() takes this weight.
bool has_quant_tile_layout(const QuantizedWeight& weight);
// GGUF matrices whose fp16 form is at most this size run in fp16 on the GPU: a small model's
// layers (SmolLM2-135M's are 576 wide) decode faster there, the quantized kernels' fixed cost
// per launch outweighing the bytes they save (docs/PERFORMANCE.md, the default model).
inline constexpr size_t kGgufFp16MaxBytes = size_t{4} << 20;
// Whether the CUDA backend runs `weight` packed on the quantized kernels: it has a tile layout
// and is not a GGUF matrix of at most kGgufFp16MaxBytes in fp16. The memory plan and the backend
// both ask this.
bool runs_packed_on_gpu(const QuantizedWeight& weight);
// device_bytes() of the layout of a GGUF weight with a tile layout, from its shape and type alone
// (the memory plan's figure; building the layout reads every block).
size_t gguf_tile_layout_bytes(const GgufBlockWeight& weight);

// What the kernels compute, on the CPU: y[r, n] = Σ_s x[r, row_src[s]] · w(s, n), with every
// weight decoded from the layout exactly as the dequantizer decodes it (fp16 magic-number values,
// fp16 scale products, kGguf's fp32 fma rounded to fp16) and fp32 sums. For tests; slow. (The
// fused kernels multiply kGguf's fp32 values, within one fp16 rounding of these.)
void emulate_quant_tile_gemm(const QuantTileLayout& layout, const float* x, int64_t rows, float* y);

}  // namespace hearth
