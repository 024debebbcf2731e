#include "engine/formats/gptq_weight.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/formats/quant_bits.h"
#include "engine/formats/quant_tensors.h"

namespace hearth {
namespace {

using quant::LoadedTensor;
using quant::require_tensor;

// Decodes column n (k codes along a strided bitstream); `lut` holds, for every group, the value
// of every code: lut[g << B | q] = fp16((q − z_g) · s_g).
template <int B>
void decode_column(const uint32_t* col, int64_t stride, int64_t k, const int32_t* g_idx,
                   const float* lut, float* row) {
  constexpr uint32_t kMask = (1u << B) - 1u;
  if constexpr (32 % B == 0) {
    constexpr int kPerWord = 32 / B;
    for (int64_t i = 0; i < k; i += kPerWord, col += stride) {
      const uint32_t w = *col;
      for (int j = 0; j < kPerWord; ++j) {
        row[i + j] = lut[(static_cast<uint32_t>(g_idx[i + j]) << B) | ((w >> (B * j)) & kMask)];
      }
    }
  } else {
    quant::BitReader reader(col, stride);
    for (int64_t i = 0; i < k; ++i) {
      row[i] = lut[(static_cast<uint32_t>(g_idx[i]) << B) | reader.next<B>()];
    }
  }
}

// As above, computing each weight (for wide codes with many small groups, where the table
// would cost more than the column).
template <int B>
void decode_column_direct(const uint32_t* col, int64_t stride, int64_t k, const int32_t* g_idx,
                          const float* zeros, const float* scales, float* row) {
  quant::BitReader reader(col, stride);
  for (int64_t i = 0; i < k; ++i) {
    const int32_t g = g_idx[i];
    row[i] = quant::round_to_half((static_cast<float>(reader.next<B>()) - zeros[g]) * scales[g]);
  }
}

// The group size a checkpoint without a usable g_idx was made with.
int64_t infer_group_size(const GptqConfig& config, int64_t K, int64_t G,
                         const LoadedTensor& scales) {
  if (config.group_size) {
    const int64_t gs = *config.group_size == -1 ? K : *config.group_size;
    if ((K + gs - 1) / gs != G) {
      quant::invalid(scales, "has " + std::to_string(G) + " groups, but group_size " +
                                 std::to_string(*config.group_size) + " over " + std::to_string(K) +
                                 " inputs makes " + std::to_string((K + gs - 1) / gs));
    }
    return gs;
  }
  if (G == 1) return K;
  if (K % G == 0) return K / G;
  for (int64_t gs = 1; gs <= K; gs *= 2) {  // exllamav2's rule: the power of two that fits
    if ((K + gs - 1) / gs == G) return gs;
  }
  quant::invalid(scales,
                 "has " + std::to_string(G) + " groups for " + std::to_string(K) +
                     " inputs, and neither g_idx nor a group_size says how rows map to them");
}

}  // namespace

GptqZeros resolve_gptq_zeros(const std::string& checkpoint_format, bool all_v1_sym,
                             bool all_v2_sym) {
  if (all_v1_sym) return GptqZeros::kV1;
  if (all_v2_sym) return GptqZeros::kV2;
  return checkpoint_format == "gptq_v2" ? GptqZeros::kV2 : GptqZeros::kV1;
}

std::shared_ptr<const GptqWeight> GptqWeight::load(const TensorSource& source,
                                                   const std::string& prefix,
                                                   const GptqConfig& config, int64_t out_features) {
  if (!config.quant_method.empty() && config.quant_method != "gptq") {
    fail(ErrorCode::kUnsupported, prefix + ": quantization method \"" + config.quant_method +
                                      "\" is not GPTQ; Hearth loads EXL2 and GPTQ");
  }
  if (config.is_marlin_format ||
      (!config.checkpoint_format.empty() && config.checkpoint_format != "gptq" &&
       config.checkpoint_format != "gptq_v2")) {
    fail(ErrorCode::kUnsupported,
         prefix + ": GPTQ checkpoint format \"" +
             (config.is_marlin_format ? std::string("marlin") : config.checkpoint_format) +
             "\" is not supported (Hearth reads the \"gptq\" and \"gptq_v2\" layouts)");
  }
  std::shared_ptr<GptqWeight> w(new GptqWeight());
  w->name_ = prefix;
  LoadedTensor qweight = require_tensor(source, prefix + ".qweight", {DType::kI32, DType::kU32}, 2);
  LoadedTensor qzeros = require_tensor(source, prefix + ".qzeros", {DType::kI32, DType::kU32}, 2);
  LoadedTensor scales =
      require_tensor(source, prefix + ".scales", {DType::kF16, DType::kF32, DType::kBF16}, 2);

  const int64_t N = qweight.tensor.dim(1);
  const int64_t G = scales.tensor.dim(0);
  quant::require_shape(scales, {G, N}, "groups × outputs of " + qweight.name);
  if (qzeros.tensor.dim(0) != G) {
    quant::invalid(qzeros, "has " + std::to_string(qzeros.tensor.dim(0)) + " rows, " + scales.name +
                               " has " + std::to_string(G) + " groups");
  }
  const int64_t zero_words = qzeros.tensor.dim(1);
  if ((zero_words * 32) % N != 0) {
    quant::invalid(qzeros, "has " + std::to_string(zero_words) + " words per row for " +
                               std::to_string(N) + " outputs: not a whole number of bits each");
  }
  const int64_t bits = zero_words * 32 / N;
  if (config.bits && *config.bits != bits) {
    quant::invalid(qzeros, "packs " + std::to_string(bits) + "-bit zeros, the config says bits = " +
                               std::to_string(*config.bits));
  }
  if (bits != 2 && bits != 3 && bits != 4 && bits != 8) {
    fail(ErrorCode::kUnsupported,
         qzeros.where() + " packs " + std::to_string(bits) +
             "-bit values; GPTQ layers of 2, 3, 4 or 8 bits are supported");
  }
  const int64_t packed = qweight.tensor.dim(0);
  if ((packed * 32) % bits != 0) {
    quant::invalid(qweight, "has " + std::to_string(packed) + " rows, not a whole number of " +
                                std::to_string(bits) + "-bit inputs");
  }
  const int64_t K = packed * 32 / bits;
  if (G > K) quant::invalid(scales, "has more groups (" + std::to_string(G) + ") than inputs");
  if (out_features > 0 && out_features != N) {
    quant::invalid(qweight, "has " + std::to_string(N) + " columns, the layer has " +
                                std::to_string(out_features) + " outputs");
  }
  w->bits_ = static_cast<int>(bits);
  w->k_ = K;
  w->n_ = N;
  w->groups_ = G;

  // Group of each row: g_idx when it says something, else k / group_size.
  bool use_g_idx = false;
  uint64_t g_idx_bytes = 0;
  if (source.has(prefix + ".g_idx")) {
    LoadedTensor g_idx = require_tensor(source, prefix + ".g_idx", {DType::kI32, DType::kI64}, 1);
    quant::require_shape(g_idx, {K}, "one group per input row");
    g_idx_bytes = g_idx.tensor.nbytes();
    w->g_idx_.resize(static_cast<size_t>(K));
    bool all_zero = true;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t g = quant::int_at(g_idx.tensor, k);
      if (g < 0 || g >= G) {
        quant::invalid(g_idx, "element " + std::to_string(k) + " is " + std::to_string(g) +
                                  ", outside the " + std::to_string(G) + " groups");
      }
      all_zero = all_zero && g == 0;
      w->g_idx_[static_cast<size_t>(k)] = static_cast<int32_t>(g);
    }
    // An all-zero g_idx over several groups means "no act-order" (exllamav2 reads it so).
    use_g_idx = !(all_zero && G > 1);
  }
  if (!use_g_idx) {
    const int64_t gs = infer_group_size(config, K, G, scales);
    w->group_size_ = gs;
    w->g_idx_.resize(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k)
      w->g_idx_[static_cast<size_t>(k)] = static_cast<int32_t>(k / gs);
  }

  // Scales in fp16, as the kernels use them.
  w->scales_.resize(static_cast<size_t>(G * N));
  for (int64_t i = 0; i < G * N; ++i) {
    float s;
    switch (scales.tensor.dtype) {
      case DType::kF16:
        s = half_to_float(scales.tensor.as<uint16_t>()[i]);
        break;
      case DType::kBF16:
        s = quant::round_to_half(bf16_to_float(scales.tensor.as<uint16_t>()[i]));
        break;
      default:
        s = quant::round_to_half(scales.tensor.as<float>()[i]);
        break;
    }
    if (!std::isfinite(s)) {
      quant::invalid(scales, "element " + std::to_string(i) + " is not a finite fp16 value (" +
                                 std::to_string(static_cast<double>(s)) + ")");
    }
    w->scales_[static_cast<size_t>(i)] = s;
  }

  // Zeros: v1 or v2.
  w->qzeros_ = std::move(qzeros.tensor);
  const uint32_t half_range = 1u << (bits - 1);
  bool v1_sym = true, v2_sym = true;
  for (int64_t g = 0; g < G; ++g) {
    const uint32_t* row = w->qzeros_.as<uint32_t>() + g * zero_words;
    for (int64_t n = 0; n < N; ++n) {
      const uint32_t z = quant::bits_at(row, 1, static_cast<int>(bits), n);
      v1_sym = v1_sym && z == half_range - 1;
      v2_sym = v2_sym && z == half_range;
    }
  }
  w->zeros_ = resolve_gptq_zeros(config.checkpoint_format, v1_sym, v2_sym);
  w->symmetric_ =
      (w->zeros_ == GptqZeros::kV1 && v1_sym) || (w->zeros_ == GptqZeros::kV2 && v2_sym);

  const uint64_t bytes =
      qweight.tensor.nbytes() + w->qzeros_.nbytes() + scales.tensor.nbytes() + g_idx_bytes;
  w->bits_per_weight_ =
      static_cast<double>(bytes) * 8.0 / (static_cast<double>(K) * static_cast<double>(N));
  w->qweight_ = std::move(qweight.tensor);
  return w;
}

uint32_t GptqWeight::code(int64_t k, int64_t n) const {
  return quant::bits_at(qweight_.as<uint32_t>() + n, n_, bits_, k);
}

int GptqWeight::zero(int64_t g, int64_t n) const {
  const int64_t words = qzeros_.dim(1);
  const int z = static_cast<int>(quant::bits_at(qzeros_.as<uint32_t>() + g * words, 1, bits_, n));
  return zeros_ == GptqZeros::kV1 ? z + 1 : z;
}

float GptqWeight::scale(int64_t g, int64_t n) const {
  return scales_[static_cast<size_t>(g * n_ + n)];
}

void GptqWeight::dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const {
  HEARTH_CHECK(0 <= n_begin && n_begin <= n_end && n_end <= n_, "dequantize_rows: range");
  // K is a multiple of 32 / bits for 2, 4 and 8 bits (whole words), so the word loop is exact.
  const bool table = (groups_ << bits_) <= k_ / 2;
  std::vector<float> lut(table ? static_cast<size_t>(groups_) << bits_ : 0);
  std::vector<float> zeros(static_cast<size_t>(groups_)), scales(static_cast<size_t>(groups_));
  for (int64_t n = n_begin; n < n_end; ++n) {
    for (int64_t g = 0; g < groups_; ++g) {
      zeros[static_cast<size_t>(g)] = static_cast<float>(zero(g, n));
      scales[static_cast<size_t>(g)] = scale(g, n);
      if (!table) continue;
      float* t = lut.data() + (g << bits_);
      for (int q = 0; q < (1 << bits_); ++q) {
        t[q] = quant::round_to_half((static_cast<float>(q) - zeros[static_cast<size_t>(g)]) *
                                    scales[static_cast<size_t>(g)]);
      }
    }
    const uint32_t* col = qweight_.as<uint32_t>() + n;
    float* row = out + (n - n_begin) * k_;
    const int32_t* gi = g_idx_.data();
    if (!table) {
      switch (bits_) {
        case 2:
          decode_column_direct<2>(col, n_, k_, gi, zeros.data(), scales.data(), row);
          break;
        case 3:
          decode_column_direct<3>(col, n_, k_, gi, zeros.data(), scales.data(), row);
          break;
        case 4:
          decode_column_direct<4>(col, n_, k_, gi, zeros.data(), scales.data(), row);
          break;
        default:
          decode_column_direct<8>(col, n_, k_, gi, zeros.data(), scales.data(), row);
          break;
      }
      continue;
    }
    switch (bits_) {
      case 2:
        decode_column<2>(col, n_, k_, gi, lut.data(), row);
        break;
      case 3:
        decode_column<3>(col, n_, k_, gi, lut.data(), row);
        break;
      case 4:
        decode_column<4>(col, n_, k_, gi, lut.data(), row);
        break;
      default:
        decode_column<8>(col, n_, k_, gi, lut.data(), row);
        break;
    }
  }
}

}  // namespace hearth
