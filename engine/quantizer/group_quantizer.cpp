#include "engine/quantizer/group_quantizer.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/formats/quant_bits.h"
#include "engine/quantizer/exl2_grid_search.h"

namespace hearth::quantizer {
namespace {

constexpr float kMinP = 0.70f;
constexpr float kMaxP = 1.2f;
constexpr int kPGrid = 96;

}  // namespace

Exl2ScaleCandidates exl2_scale_candidates(const std::vector<float>& base) {
  Exl2ScaleCandidates c;
  for (float b : base) c.smax = std::max(c.smax, b);
  const auto n = base.size();
  c.qscale.resize(n);
  c.scale.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float t = std::sqrt(base[i] / c.smax) * 16.0f;
    const float q = std::clamp(std::nearbyint(t), 1.0f, 16.0f);  // round half to even, as torch
    c.qscale[i] = static_cast<uint8_t>(q);
    const float qw = q / 16.0f;
    c.scale[i] = qw * qw * c.smax;
  }
  return c;
}

int exl2_grid_size() {
  return kPGrid + 1;
}

float exl2_grid_multiplier(int i) {
  const float pi = static_cast<float>(i) / static_cast<float>(kPGrid);
  return kMinP * (1.0f - pi) + kMaxP * pi;
}

GroupParams exl2_params_from(const Exl2ScaleCandidates& c, int best_i, int bits) {
  GroupParams p;
  p.bits = bits;
  const float qzero = static_cast<float>(1 << (bits - 1));
  const float best_f = static_cast<float>(best_i) / static_cast<float>(kPGrid);
  const float best_p = kMaxP * best_f + kMinP * (1.0f - best_f);
  p.qscale = c.qscale;
  p.qscale_max = quant::round_to_half(c.smax * best_p);
  // What the reader computes: fp16(fp16(qs²) · fp16(q_scale_max / 256)).
  const float premul = quant::round_to_half(p.qscale_max * (1.0f / 256.0f));
  const auto n = c.qscale.size();
  p.scale.resize(n);
  p.zero.assign(n, qzero);
  for (size_t i = 0; i < n; ++i) {
    const float q2 = static_cast<float>(c.qscale[i]) * static_cast<float>(c.qscale[i]);
    p.scale[i] = quant::round_to_half(q2 * premul);
  }
  return p;
}

GroupParams exl2_find_params(const float* w, int64_t rows, int64_t n, int64_t stride, int bits,
                             ThreadPool* pool) {
  const float maxq = static_cast<float>((1 << bits) - 1);
  std::vector<float> base(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    float m = 0;
    for (int64_t r = 0; r < rows; ++r) m = std::max(m, std::fabs(w[r * stride + c]));
    base[c] = (m + 1e-12f) / (maxq / 2.0f);
  }
  const Exl2ScaleCandidates cand = exl2_scale_candidates(base);
  const std::vector<double> errs =
      exl2_grid_errors(w, rows, n, stride, cand.scale.data(), bits, pool);
  int best_i = 0;
  for (int i = 1; i <= kPGrid; ++i) {
    if (errs[i] < errs[best_i]) best_i = i;
  }
  return exl2_params_from(cand, best_i, bits);
}

GroupParams gptq_params_from(const std::vector<float>& lo, const std::vector<float>& hi, int bits,
                             bool symmetric) {
  GroupParams p;
  p.bits = bits;
  const float maxq = static_cast<float>((1 << bits) - 1);
  const auto n = lo.size();
  p.scale.resize(n);
  p.zero.resize(n);
  for (size_t c = 0; c < n; ++c) {
    float xmin = lo[c], xmax = hi[c];
    if (symmetric) {
      xmax = std::max(std::fabs(xmin), xmax);
      if (xmin < 0) xmin = -xmax;
    }
    if (xmin == 0 && xmax == 0) {
      xmin = -1;
      xmax = 1;
    }
    float scale = quant::round_to_half((xmax - xmin) / maxq);
    if (!(scale > 0)) scale = quant::round_to_half(6.1035156e-05f);  // smallest normal fp16
    float zero;
    if (symmetric) {
      zero = (maxq + 1) / 2;
    } else {
      zero = std::nearbyint(-xmin / scale);
      if (zero < 1) {
        // v1 stores zero − 1: keep zero ≥ 1 and let the scale cover [0, xmax] with maxq − 1
        // steps instead.
        zero = 1;
        scale = std::max(scale, quant::round_to_half(xmax / (maxq - 1)));
      }
      zero = std::min(zero, maxq);
    }
    p.scale[c] = scale;
    p.zero[c] = zero;
  }
  return p;
}

GroupParams gptq_find_params(const float* w, int64_t rows, int64_t n, int64_t stride, int bits,
                             bool symmetric) {
  std::vector<float> lo(static_cast<size_t>(n), 0.0f), hi(static_cast<size_t>(n), 0.0f);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t r = 0; r < rows; ++r) {
      lo[c] = std::min(lo[c], w[r * stride + c]);
      hi[c] = std::max(hi[c], w[r * stride + c]);
    }
  }
  return gptq_params_from(lo, hi, bits, symmetric);
}

void quantize_row(const float* w, const GroupParams& p, int64_t n0, int64_t n1, uint8_t* codes,
                  float* deq) {
  const float maxq = static_cast<float>((1 << p.bits) - 1);
  for (int64_t c = n0; c < n1; ++c) {
    const float s = p.scale[c];
    if (!(s > 0)) {  // a group of (near) zeros whose fp16 scale underflowed
      codes[c] = static_cast<uint8_t>(p.zero[c]);
      deq[c] = 0.0f;
      continue;
    }
    const float q = std::clamp(std::nearbyint(w[c] / s) + p.zero[c], 0.0f, maxq);
    codes[c] = static_cast<uint8_t>(q);
    deq[c] = quant::round_to_half((q - p.zero[c]) * s);
  }
}

}  // namespace hearth::quantizer
