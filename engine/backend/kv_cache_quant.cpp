#include "engine/backend/kv_cache_quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/core/dtype.h"
#include "engine/core/error.h"

namespace hearth {

KvQuantLayout KvQuantLayout::of(const KvCacheSpec& spec) {
  KvQuantLayout l;
  l.bits = kv_cache_bits(spec.type);
  HEARTH_CHECK(l.bits < 16, "KvQuantLayout of a 16/32-bit cache");
  const int64_t rows = spec.num_kv_heads * spec.page_size;
  l.row_bytes = spec.head_dim * l.bits / 8;
  l.scales_per_row = spec.head_dim / kKvQuantGroup;
  l.v_codes = rows * l.row_bytes;
  l.k_scales = 2 * l.v_codes;
  l.v_scales = l.k_scales + rows * l.scales_per_row * 2;
  l.first_keys = l.v_scales + rows * l.scales_per_row * 2;
  l.layer_page_bytes = l.first_keys + spec.num_kv_heads * spec.head_dim * 2;
  return l;
}

bool kv_quant_supported(int64_t head_dim) {
  return head_dim == 64 || head_dim == 128;
}

void require_kv_quant_supported(KvCacheType type, int64_t head_dim) {
  if (!is_quantized(type) || kv_quant_supported(head_dim)) return;
  fail(ErrorCode::kUnsupported, std::string("a ") + kv_cache_type_name(type) +
                                    " KV cache needs heads of 64 or 128 dims; this model's have " +
                                    std::to_string(head_dim) + ": choose fp16");
}

void hadamard_rotate(float* x, int64_t n) {
  for (int64_t h = 1; h < n; h *= 2) {
    for (int64_t i = 0; i < n; i += 2 * h) {
      for (int64_t j = i; j < i + h; ++j) {
        const float a = x[j];
        const float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const float norm = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t j = 0; j < n; ++j) x[j] *= norm;
}

namespace {

int code_at(const uint8_t* codes, int64_t d, int64_t j, int bits) {
  if (bits == 8) return codes[j];
  const int low = (codes[j / 2] >> (4 * (j % 2))) & 15;
  if (bits == 4) return low;
  const int high = (codes[d / 2 + j / 4] >> (2 * (j % 4))) & 3;
  return low | (high << 4);
}

// The midpoints between q4's positive levels kv_q4_level(8 .. 15).
constexpr std::array<float, 7> q4_midpoints() {
  std::array<float, 7> t{};
  for (int i = 0; i < 7; ++i) t[i] = 0.5f * (kv_q4_level(8 + i) + kv_q4_level(9 + i));
  return t;
}

int q4_code(float y) {
  static constexpr std::array<float, 7> kMidpoints = q4_midpoints();
  const float a = std::fabs(y);
  int k = 0;
  for (float t : kMidpoints) k += a >= t ? 1 : 0;
  return y < 0.0f ? 7 - k : 8 + k;
}

}  // namespace

void quantize_kv_row(const float* rotated, int64_t head_dim, int bits, uint8_t* codes,
                     uint16_t* scales) {
  const int half = 1 << (bits - 1);
  const int top = (1 << bits) - 1;
  std::fill_n(codes, head_dim * bits / 8, uint8_t{0});
  for (int64_t g = 0; g < head_dim / kKvQuantGroup; ++g) {
    const float* x = rotated + g * kKvQuantGroup;
    float max_abs = 0.0f;
    for (int i = 0; i < kKvQuantGroup; ++i) max_abs = std::max(max_abs, std::fabs(x[i]));
    // Rounded up to fp16, so that every |x| · (1/s) stays within 2^(b-1), the levels' range.
    const float wanted = std::fmin(max_abs / static_cast<float>(half), 65504.0f);
    uint16_t scale = float_to_half(wanted);
    if (half_to_float(scale) < wanted) ++scale;
    scales[g] = scale;
    const float s = half_to_float(scale);
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    for (int i = 0; i < kKvQuantGroup; ++i) {
      const int64_t j = g * kKvQuantGroup + i;
      // q8/q6: fmax/fmin before the conversion, so a NaN becomes code 0, not undefined behaviour.
      const int c = bits == 4
                        ? q4_code(x[i] * inv)
                        : static_cast<int>(std::fmin(
                              std::fmax(std::floor(x[i] * inv) + static_cast<float>(half), 0.0f),
                              static_cast<float>(top)));
      if (bits == 8) {
        codes[j] = static_cast<uint8_t>(c);
        continue;
      }
      codes[j / 2] |= static_cast<uint8_t>((c & 15) << (4 * (j % 2)));
      if (bits == 6) codes[head_dim / 2 + j / 4] |= static_cast<uint8_t>((c >> 4) << (2 * (j % 4)));
    }
  }
}

void dequantize_kv_row(const uint8_t* codes, const uint16_t* scales, int64_t head_dim, int bits,
                       float* rotated) {
  const int half = 1 << (bits - 1);
  for (int64_t j = 0; j < head_dim; ++j) {
    const float s = half_to_float(scales[j / kKvQuantGroup]);
    const int c = code_at(codes, head_dim, j, bits);
    rotated[j] = (bits == 4 ? kv_q4_level(c) : static_cast<float>(c - half) + 0.5f) * s;
  }
}

void store_first_key(const float* rotated, int64_t head_dim, uint16_t* row) {
  for (int64_t j = 0; j < head_dim; ++j) row[j] = float_to_half(rotated[j]);
}

void load_first_key(const uint16_t* row, int64_t head_dim, float* rotated) {
  for (int64_t j = 0; j < head_dim; ++j) rotated[j] = half_to_float(row[j]);
}

void check_key_offsets(const KvCacheSpec& spec, std::span<const float> offsets) {
  const auto wanted = static_cast<size_t>(spec.num_layers * spec.num_kv_heads * spec.head_dim);
  if (offsets.size() != wanted) {
    fail(ErrorCode::kInvalidArgument, "key offsets: " + std::to_string(offsets.size()) +
                                          " values for a cache that needs " +
                                          std::to_string(wanted));
  }
  for (float x : offsets) {
    if (!std::isfinite(x)) fail(ErrorCode::kInvalidArgument, "key offsets: a value is not finite");
  }
}

std::vector<float> mean_stored_keys(const KvCacheSpec& spec, std::span<const int32_t> pages,
                                    int64_t begin, int64_t end, std::span<const float> offsets,
                                    const std::function<const uint8_t*(int32_t page)>& page_bytes) {
  if (begin < 0 || end <= begin || end > static_cast<int64_t>(pages.size()) * spec.page_size) {
    fail(ErrorCode::kInvalidArgument, "mean_keys: positions out of the sequence's pages");
  }
  for (int32_t page : pages) {
    if (page < 0 || page >= spec.num_pages) {
      fail(ErrorCode::kInvalidArgument, "mean_keys: page out of range");
    }
  }
  const KvQuantLayout layout = KvQuantLayout::of(spec);
  const int64_t D = spec.head_dim;
  const int64_t heads = spec.num_kv_heads;
  std::vector<double> sums(static_cast<size_t>(spec.num_layers * heads * D), 0.0);
  float row[kMaxHeadDim];
  uint16_t scales[kMaxHeadDim / kKvQuantGroup];
  for (int64_t first = begin; first < end;) {
    const int64_t index = first / spec.page_size;
    const int64_t last = std::min(end, (index + 1) * spec.page_size);
    const uint8_t* page = page_bytes(pages[static_cast<size_t>(index)]);
    for (int64_t layer = 0; layer < spec.num_layers; ++layer) {
      const uint8_t* block = page + layer * layout.layer_page_bytes;
      for (int64_t head = 0; head < heads; ++head) {
        double* sum = sums.data() + (layer * heads + head) * D;
        for (int64_t pos = first; pos < last; ++pos) {
          const int64_t r = head * spec.page_size + pos % spec.page_size;
          if (pos == 0) {
            uint16_t first_key[kMaxHeadDim];
            std::memcpy(first_key, block + layout.first_keys + head * D * 2,
                        static_cast<size_t>(D) * 2);
            load_first_key(first_key, D, row);
          } else {
            std::memcpy(scales, block + layout.k_scales + r * layout.scales_per_row * 2,
                        static_cast<size_t>(layout.scales_per_row) * 2);
            dequantize_kv_row(block + r * layout.row_bytes, scales, D, layout.bits, row);
          }
          for (int64_t j = 0; j < D; ++j) sum[j] += row[j];
        }
      }
    }
    first = last;
  }
  std::vector<float> mean(sums.size());
  const auto n = static_cast<double>(end - begin);
  for (size_t i = 0; i < sums.size(); ++i) {
    mean[i] = static_cast<float>(sums[i] / n) + (offsets.empty() ? 0.0f : offsets[i]);
  }
  return mean;
}

}  // namespace hearth
