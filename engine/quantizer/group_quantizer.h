// How one group of rows of a (permuted) weight matrix W[K, N] is turned into integer codes:
// per-column scales (and zeros) chosen on the group's current, error-compensated rows, then
// each row rounded with them. Dequantized values are the exact fp16 values the format's
// reader reconstructs, so GPTQ's error feedback sees what inference will see
// (docs/FORMATS.md §1.5, §5.11).
#pragma once

#include <cstdint>
#include <vector>

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

// Parameters of one group, per column n.
struct GroupParams {
  int bits = 4;
  std::vector<float> scale;  // effective fp16 scale (as float)
  std::vector<float> zero;   // integer zero point (as float)
  // EXL2 only: 4-bit scale codes 1..16 and the group's fp16 maximum scale.
  std::vector<uint8_t> qscale;
  float qscale_max = 0;
};

// EXL2 (FORMATS.md §3.4): square-law 4-bit scale codes relative to the group maximum, then a
// search over one multiplier p in [0.70, 1.2] (97 steps) minimising Σ|ŵ − w|^3.5.
// `w` points at the group's first row; rows × n floats, row stride `stride`.
// The grid's errors come from exl2_grid_errors (exl2_grid_search.h); `pool` (optional) spreads
// its rows over threads, with the same result.
GroupParams exl2_find_params(const float* w, int64_t rows, int64_t n, int64_t stride, int bits,
                             ThreadPool* pool = nullptr);

// GPTQ (AutoGPTQ's min/max quantizer): per column, symmetric (zero 2^(b−1), scale from
// max|w|) or asymmetric (scale (max−min)/maxq, zero round(−min/scale)). Scales are rounded to
// fp16 before use. Asymmetric zeros are kept ≥ 1 so that the v1 file format (which stores
// zero − 1) never needs −1.
GroupParams gptq_find_params(const float* w, int64_t rows, int64_t n, int64_t stride, int bits,
                             bool symmetric);

// The pieces of exl2_find_params, shared with the GPU path (which computes the column maxima
// and the grid errors on the device): scale codes from base[n] = (max|w| + 1e-12) / (maxq/2),
// the 97 multipliers, and the final parameters from the winning multiplier.
struct Exl2ScaleCandidates {
  std::vector<uint8_t> qscale;  // 1..16
  std::vector<float> scale;     // (qs/16)² · smax, before the multiplier
  float smax = 0;
};
Exl2ScaleCandidates exl2_scale_candidates(const std::vector<float>& base);
int exl2_grid_size();               // 97
float exl2_grid_multiplier(int i);  // p_i
GroupParams exl2_params_from(const Exl2ScaleCandidates& c, int best_index, int bits);
// GPTQ parameters from per-column min(0, min w) and max(0, max w).
GroupParams gptq_params_from(const std::vector<float>& lo, const std::vector<float>& hi, int bits,
                             bool symmetric);

// codes[n] = clamp(rint(w[n] / scale[n]) + zero[n], 0, 2^b − 1);
// deq[n] = fp16((codes[n] − zero[n]) · scale[n]) as float. Columns [n0, n1).
void quantize_row(const float* w, const GroupParams& p, int64_t n0, int64_t n1, uint8_t* codes,
                  float* deq);

}  // namespace hearth::quantizer
