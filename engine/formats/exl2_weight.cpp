#include "engine/formats/exl2_weight.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/formats/quant_bits.h"
#include "engine/formats/quant_tensors.h"

namespace hearth {
namespace {

using quant::LoadedTensor;
using quant::require_tensor;

bool exl2_bits_allowed(int64_t b) {
  return b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8;
}

// Decodes `rows` codes of one column (a strided bitstream) and scatters the fp16 values to
// row[dst[j]]. Widths up to 6 bits go through a table of every code's value (exact: one fp16
// rounding per entry), which costs less than rounding each weight when the group is long enough.
template <int B>
void decode_column(const uint32_t* col, int64_t stride, int64_t rows, float scale,
                   const int32_t* dst, float* row) {
  constexpr int kZero = 1 << (B - 1);
  constexpr uint32_t kMask = (1u << B) - 1u;
  if ((1 << B) > rows) {
    quant::BitReader reader(col, stride);
    for (int64_t j = 0; j < rows; ++j) {
      const int q = static_cast<int>(reader.next<B>());
      row[dst[j]] = quant::round_to_half(static_cast<float>(q - kZero) * scale);
    }
    return;
  }
  float lut[1 << B];
  for (int q = 0; q < (1 << B); ++q) {
    lut[q] = quant::round_to_half(static_cast<float>(q - kZero) * scale);
  }
  if constexpr (32 % B == 0) {
    constexpr int kPerWord = 32 / B;
    int64_t j = 0;
    for (; j + kPerWord <= rows; j += kPerWord, col += stride) {
      const uint32_t w = *col;
      for (int i = 0; i < kPerWord; ++i) row[dst[j + i]] = lut[(w >> (B * i)) & kMask];
    }
    if (j < rows) {
      const uint32_t w = *col;
      for (int i = 0; j < rows; ++i, ++j) row[dst[j]] = lut[(w >> (B * i)) & kMask];
    }
  } else {
    quant::BitReader reader(col, stride);
    for (int64_t j = 0; j < rows; ++j) row[dst[j]] = lut[reader.next<B>()];
  }
}

}  // namespace

std::shared_ptr<const Exl2Weight> Exl2Weight::load(const TensorSource& source,
                                                   const std::string& prefix,
                                                   int64_t out_features) {
  std::shared_ptr<Exl2Weight> w(new Exl2Weight());
  w->name_ = prefix;
  LoadedTensor q_weight =
      require_tensor(source, prefix + ".q_weight", {DType::kI32, DType::kU32}, 2);
  LoadedTensor q_scale = require_tensor(source, prefix + ".q_scale", {DType::kI32, DType::kU32}, 2);
  LoadedTensor q_scale_max =
      require_tensor(source, prefix + ".q_scale_max", {DType::kF16, DType::kF32}, 1);
  LoadedTensor q_groups =
      require_tensor(source, prefix + ".q_groups", {DType::kI16, DType::kU16}, 1);
  LoadedTensor q_invperm =
      require_tensor(source, prefix + ".q_invperm", {DType::kI32, DType::kI64, DType::kI16}, 1);

  const int64_t Q = q_weight.tensor.dim(0);
  const int64_t n_pad = q_weight.tensor.dim(1);
  if (n_pad % 8 != 0) {
    quant::invalid(q_weight, "has " + std::to_string(n_pad) +
                                 " columns, not a multiple of 8 (8 scale codes per q_scale word)");
  }
  const int64_t G = q_scale.tensor.dim(0);
  quant::require_shape(q_scale, {G, n_pad / 8}, "groups × columns/8 of " + q_weight.name);
  quant::require_shape(q_scale_max, {G}, "one value per group of " + q_scale.name);
  quant::require_shape(q_groups, {2 * G}, "(bits, first packed row) per group of " + q_scale.name);
  if (G > Q)
    quant::invalid(q_scale, "has more groups (" + std::to_string(G) + ") than " + q_weight.name +
                                " has packed rows");
  const int64_t K = q_invperm.tensor.dim(0);

  if (out_features > 0) {
    if (out_features > n_pad || n_pad - out_features >= 32) {
      quant::invalid(q_weight, "has " + std::to_string(n_pad) + " columns, the layer has " +
                                   std::to_string(out_features) +
                                   " outputs (a padded width is the next multiple of 32)");
    }
    w->n_ = out_features;
  } else {
    w->n_ = n_pad;
  }
  w->k_ = K;
  w->n_pad_ = n_pad;
  w->q_rows_ = Q;

  // Groups: (bits, first packed row) pairs, as uint16.
  auto group_field = [&](int64_t i) {
    return static_cast<int64_t>(static_cast<uint16_t>(quant::int_at(q_groups.tensor, i)));
  };
  int64_t row = 0;
  w->groups_.resize(static_cast<size_t>(G));
  for (int64_t g = 0; g < G; ++g) {
    Group& gr = w->groups_[static_cast<size_t>(g)];
    const std::string at = " group " + std::to_string(g);
    const int64_t b = group_field(2 * g);
    if (!exl2_bits_allowed(b)) {
      quant::invalid(q_groups, at + " has " + std::to_string(b) +
                                   " bits; EXL2 groups have 2, 3, 4, 5, 6 or 8");
    }
    const int64_t r0 = group_field(2 * g + 1);
    const int64_t r1 = g + 1 < G ? group_field(2 * (g + 1) + 1) : Q;
    if (g == 0 && r0 != 0)
      quant::invalid(q_groups, at + " starts at packed row " + std::to_string(r0) + ", not 0");
    if (r1 <= r0 || r1 > Q) {
      quant::invalid(q_groups, at + " spans packed rows " + std::to_string(r0) + ".." +
                                   std::to_string(r1) + " of " + std::to_string(Q));
    }
    if (g > 0) {
      const int prev = w->groups_[static_cast<size_t>(g - 1)].bits;
      if (b > prev) {
        quant::invalid(q_groups, at + " has " + std::to_string(b) + " bits after a " +
                                     std::to_string(prev) +
                                     "-bit group; EXL2 orders groups by non-increasing bits");
      }
      const int64_t align = (b == prev && b == 2) ? 16 : 32;
      if (row % align != 0) {
        quant::invalid(q_groups, at + " starts at row " + std::to_string(row) +
                                     ", not a multiple of " + std::to_string(align));
      }
    }
    int64_t rows;
    if (g + 1 < G) {
      if (((r1 - r0) * 32) % b != 0) {
        quant::invalid(q_groups, at + ": " + std::to_string(r1 - r0) +
                                     " packed rows do not hold a whole number of " +
                                     std::to_string(b) + "-bit values");
      }
      rows = (r1 - r0) * 32 / b;
      if (row + rows >= K) {
        quant::invalid(q_groups, at + " ends at row " + std::to_string(row + rows) +
                                     ", but later groups follow and the layer has " +
                                     std::to_string(K) + " inputs");
      }
    } else {
      // The last group may be short: it holds the remaining rows, packed with ceil.
      rows = K - row;
      if (rows <= 0 || (rows * b + 31) / 32 != r1 - r0) {
        quant::invalid(q_groups, "last group (" + std::to_string(b) + " bits, " +
                                     std::to_string(r1 - r0) + " packed rows) cannot hold the " +
                                     std::to_string(rows) + " remaining of " + std::to_string(K) +
                                     " rows");
      }
    }
    gr.bits = static_cast<int>(b);
    gr.qrow_begin = r0;
    gr.qrow_end = r1;
    gr.row_begin = row;
    gr.rows = rows;
    const float smax = q_scale_max.tensor.dtype == DType::kF16
                           ? half_to_float(q_scale_max.tensor.as<uint16_t>()[g])
                           : quant::round_to_half(q_scale_max.tensor.as<float>()[g]);
    if (!std::isfinite(smax)) {
      quant::invalid(q_scale_max, "holds a non-finite value for group " + std::to_string(g));
    }
    gr.scale_max = quant::round_to_half(smax * (1.0f / 256.0f));
    row += rows;
  }

  // q_perm = argsort(q_invperm); q_invperm must be a permutation of 0..K-1.
  w->perm_.assign(static_cast<size_t>(K), -1);
  for (int64_t s = 0; s < K; ++s) {
    const int64_t inv = quant::int_at(q_invperm.tensor, s);
    if (inv < 0 || inv >= K) {
      quant::invalid(q_invperm, "element " + std::to_string(s) + " is " + std::to_string(inv) +
                                    ", outside 0.." + std::to_string(K - 1));
    }
    if (w->perm_[static_cast<size_t>(inv)] != -1) {
      quant::invalid(q_invperm, "is not a permutation: " + std::to_string(inv) + " appears twice");
    }
    w->perm_[static_cast<size_t>(inv)] = static_cast<int32_t>(s);
  }
  // A q_perm in the file (the converter never writes one) must agree.
  if (source.has(prefix + ".q_perm")) {
    LoadedTensor q_perm =
        require_tensor(source, prefix + ".q_perm", {DType::kI32, DType::kI64, DType::kI16}, 1);
    quant::require_shape(q_perm, {K}, "one entry per input");
    for (int64_t s = 0; s < K; ++s) {
      if (quant::int_at(q_perm.tensor, s) != w->perm_[static_cast<size_t>(s)]) {
        quant::invalid(q_perm,
                       "is not argsort(" + q_invperm.name + ") at element " + std::to_string(s));
      }
    }
  }

  uint64_t bytes = q_weight.tensor.nbytes() + q_scale.tensor.nbytes() +
                   q_scale_max.tensor.nbytes() + q_groups.tensor.nbytes() +
                   q_invperm.tensor.nbytes();
  w->bits_per_weight_ =
      static_cast<double>(bytes) * 8.0 / (static_cast<double>(K) * static_cast<double>(w->n_));
  w->q_weight_ = std::move(q_weight.tensor);
  w->q_scale_ = std::move(q_scale.tensor);
  return w;
}

int Exl2Weight::scale_code(int64_t g, int64_t n) const {
  const uint32_t word = q_scale()[g * (n_pad_ / 8) + (n >> 3)];
  return static_cast<int>((word >> (4 * (n & 7))) & 15u);
}

float Exl2Weight::scale(int64_t g, int64_t n) const {
  const int nib = scale_code(g, n) + 1;
  return quant::round_to_half(static_cast<float>(nib * nib) *
                              groups_[static_cast<size_t>(g)].scale_max);
}

uint32_t Exl2Weight::code(const Group& g, int64_t s, int64_t n) const {
  return quant::bits_at(q_weight() + g.qrow_begin * n_pad_ + n, n_pad_, g.bits, s - g.row_begin);
}

void Exl2Weight::dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const {
  HEARTH_CHECK(0 <= n_begin && n_begin <= n_end && n_end <= n_, "dequantize_rows: range");
  for (int64_t n = n_begin; n < n_end; ++n) {
    float* row = out + (n - n_begin) * k_;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const Group& g = groups_[gi];
      const float s = scale(static_cast<int64_t>(gi), n);
      const uint32_t* col = q_weight() + g.qrow_begin * n_pad_ + n;
      const int32_t* dst = perm_.data() + g.row_begin;
      switch (g.bits) {
        case 2:
          decode_column<2>(col, n_pad_, g.rows, s, dst, row);
          break;
        case 3:
          decode_column<3>(col, n_pad_, g.rows, s, dst, row);
          break;
        case 4:
          decode_column<4>(col, n_pad_, g.rows, s, dst, row);
          break;
        case 5:
          decode_column<5>(col, n_pad_, g.rows, s, dst, row);
          break;
        case 6:
          decode_column<6>(col, n_pad_, g.rows, s, dst, row);
          break;
        default:
          decode_column<8>(col, n_pad_, g.rows, s, dst, row);
          break;
      }
    }
  }
}

}  // namespace hearth
