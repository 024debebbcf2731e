#include "engine/backend/cpu/int8_weight.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_weight.h"
#include "engine/io/gguf_block_weight.h"
#include "engine/io/gguf_dequant.h"

namespace hearth::cpu {
namespace {

// A run of stored rows that share one scale and offset per output.
struct Segment {
  int64_t begin = 0;
  int64_t rows = 0;
};

// What a format tells the re-layout: its stored order, its segments, the nibble table when
// every code fits one, and how to read one output: the byte codes u (in stored order, unpadded)
// and each segment's scale and offset.
struct FormatCodes {
  std::vector<int32_t> order;
  std::vector<Segment> segments;
  std::optional<std::array<uint8_t, 16>> lut;
  std::function<void(int64_t n, uint8_t* u, float* scale, float* offset)> read;
};

// Codes q − 2^(b−1) of at most 4 bits lie in [−8, 7]: nibble i holds the value i − 8.
std::array<uint8_t, 16> centered_nibble_lut() {
  std::array<uint8_t, 16> lut{};
  for (int i = 0; i < 16; ++i) lut[i] = static_cast<uint8_t>(i - 8 + 128);
  return lut;
}

uint8_t biased(int value) {
  return static_cast<uint8_t>(value + 128);
}

FormatCodes exl2_codes(const Exl2Weight& w) {
  FormatCodes f;
  f.order.assign(w.perm().begin(), w.perm().end());
  bool narrow = true;
  for (const Exl2Weight::Group& g : w.groups()) {
    f.segments.push_back({g.row_begin, g.rows});
    narrow = narrow && g.bits <= 4;
  }
  if (narrow) f.lut = centered_nibble_lut();
  f.read = [&w](int64_t n, uint8_t* u, float* scale, float* offset) {
    const auto& groups = w.groups();
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Exl2Weight::Group& g = groups[gi];
      scale[gi] = w.scale(static_cast<int64_t>(gi), n);
      offset[gi] = 0.0f;
      const int zero = 1 << (g.bits - 1);
      for (int64_t s = g.row_begin; s < g.row_begin + g.rows; ++s) {
        u[s] = biased(static_cast<int>(w.code(g, s, n)) - zero);
      }
    }
  };
  return f;
}

// GPTQ rows sorted by group (act-order's g_idx need not be monotone); w = a·(q − z) is held as
// a·(q − 2^(b−1)) + a·(2^(b−1) − z), so asymmetric zeros become offsets.
FormatCodes gptq_codes(const GptqWeight& w) {
  FormatCodes f;
  const std::span<const int32_t> g_idx = w.group_index();
  f.order.resize(g_idx.size());
  std::iota(f.order.begin(), f.order.end(), 0);
  std::stable_sort(f.order.begin(), f.order.end(),
                   [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  std::vector<int32_t> segment_group;
  for (int64_t s = 0; s < static_cast<int64_t>(f.order.size()); ++s) {
    const int32_t g = g_idx[f.order[s]];
    if (segment_group.empty() || segment_group.back() != g) {
      f.segments.push_back({s, 0});
      segment_group.push_back(g);
    }
    ++f.segments.back().rows;
  }
  if (w.bits() <= 4) f.lut = centered_nibble_lut();
  f.read = [&w, order = f.order, segments = f.segments, segment_group](
               int64_t n, uint8_t* u, float* scale, float* offset) {
    const int half = 1 << (w.bits() - 1);
    for (size_t i = 0; i < segments.size(); ++i) {
      const int32_t g = segment_group[i];
      const float a = w.scale(g, n);
      scale[i] = a;
      offset[i] = a * static_cast<float>(half - w.zero(g, n));
      for (int64_t s = segments[i].begin; s < segments[i].begin + segments[i].rows; ++s) {
        u[s] = biased(static_cast<int>(w.code(order[s], n)) - half);
      }
    }
  };
  return f;
}

bool is_iq4(GgmlType type) {
  return type == GgmlType::kIQ4_NL || type == GgmlType::kIQ4_XS;
}

// GGUF blocks in GgufCodeForm: per span of 16 (or 32) inputs, scale d·sc and offset −dmin·m,
// so a·(q − zero) + offset is the fma dequantize_ggml rounds once.
FormatCodes gguf_codes(const GgufBlockWeight& w) {
  const GgufCodeForm form = w.code_form();
  FormatCodes f;
  const int64_t K = w.in_features();
  f.order.resize(static_cast<size_t>(K));
  std::iota(f.order.begin(), f.order.end(), 0);
  const int64_t span = form.sub_blocks_of_16 ? 16 : 32;
  for (int64_t k = 0; k < K; k += span) f.segments.push_back({k, std::min(span, K - k)});
  if (is_iq4(w.type())) {
    std::array<uint8_t, 16> lut{};
    for (int i = 0; i < 16; ++i) lut[i] = biased(kIq4Values[i]);
    f.lut = lut;
  } else if (form.bits <= 4) {
    std::array<uint8_t, 16> lut{};
    for (int i = 0; i < 16; ++i) lut[i] = biased(i - form.zero);
    f.lut = lut;
  }
  f.read = [&w, form, span, K](int64_t n, uint8_t* u, float* scale, float* offset) {
    thread_local GgufRowCodes rc;
    w.row_codes(n, rc);
    for (int64_t k = 0; k < K; ++k) u[k] = biased(static_cast<int>(rc.codes[k]) - form.zero);
    for (int64_t k = 0, i = 0; k < K; k += span, ++i) {
      const int64_t super = k / form.super_inputs;
      const float d = half_to_float(rc.d[super]);
      const float dmin = form.has_min ? half_to_float(rc.dmin[super]) : 0.0f;
      scale[i] = d * static_cast<float>(rc.sc[k / 16]);
      offset[i] = -(dmin * static_cast<float>(rc.m[k / 16]));
    }
  };
  return f;
}

// Where the segments go in the stored rows: every segment starts a span, of 32 rows when all
// segments are whole multiples of 32 (else 16), and the rows end on a multiple of 32.
struct StoredRows {
  int span = 32;
  std::vector<int64_t> padded_begin;  // per segment
  int64_t stored = 0;
};
StoredRows stored_rows_of(const std::vector<Segment>& segments) {
  StoredRows r;
  for (const Segment& s : segments) {
    if (s.rows % 32 != 0) r.span = 16;
  }
  int64_t stored = 0;
  for (const Segment& s : segments) {
    r.padded_begin.push_back(stored);
    stored += (s.rows + r.span - 1) / r.span * r.span;
  }
  r.stored = (stored + 31) / 32 * 32;
  return r;
}

FormatCodes format_codes(const QuantizedWeight& weight) {
  if (const auto* e = dynamic_cast<const Exl2Weight*>(&weight)) return exl2_codes(*e);
  if (const auto* g = dynamic_cast<const GptqWeight*>(&weight)) return gptq_codes(*g);
  if (const auto* b = dynamic_cast<const GgufBlockWeight*>(&weight)) {
    if (b->code_form().bits > 0) return gguf_codes(*b);
  }
  fail(ErrorCode::kUnsupported,
       "int8 path: no integer form for a " + std::string(weight.format()) + " weight");
}

}  // namespace

size_t Int8Weight::bytes() const {
  return codes.size() + (scales.size() + offsets.size()) * sizeof(float) +
         row_src.size() * sizeof(int32_t);
}

bool has_int8_weight(const QuantizedWeight& weight) {
  if (dynamic_cast<const Exl2Weight*>(&weight) || dynamic_cast<const GptqWeight*>(&weight)) {
    return true;
  }
  const auto* b = dynamic_cast<const GgufBlockWeight*>(&weight);
  return b != nullptr && b->code_form().bits > 0;
}

size_t int8_weight_bytes(const QuantizedWeight& weight) {
  const FormatCodes f = format_codes(weight);
  const StoredRows rows = stored_rows_of(f.segments);
  const auto N = static_cast<size_t>(weight.out_features());
  const auto S = static_cast<size_t>(rows.stored);
  const size_t spans = S / static_cast<size_t>(rows.span);
  bool offsets = false;
  if (const auto* g = dynamic_cast<const GptqWeight*>(&weight)) offsets = !g->symmetric();
  if (const auto* b = dynamic_cast<const GgufBlockWeight*>(&weight)) {
    offsets = b->code_form().has_min;
  }
  return N * (f.lut ? S / 2 : S) + N * spans * sizeof(float) * (offsets ? 2 : 1) +
         S * sizeof(int32_t);
}

Int8Weight build_int8_weight(const QuantizedWeight& weight, ThreadPool& pool) {
  const FormatCodes f = format_codes(weight);
  Int8Weight r;
  r.in_features = weight.in_features();
  r.out_features = weight.out_features();
  const int64_t K = r.in_features;
  const int64_t N = r.out_features;
  HEARTH_CHECK(static_cast<int64_t>(f.order.size()) == K, "int8 path: stored order size");

  const StoredRows layout = stored_rows_of(f.segments);
  r.span_rows = layout.span;
  const int64_t span = r.span_rows;
  const std::vector<int64_t>& padded_begin = layout.padded_begin;
  r.stored_rows = layout.stored;
  const int64_t S = r.stored_rows;
  r.row_src.assign(static_cast<size_t>(S), -1);
  for (size_t i = 0; i < f.segments.size(); ++i) {
    for (int64_t j = 0; j < f.segments[i].rows; ++j) {
      r.row_src[padded_begin[i] + j] = f.order[f.segments[i].begin + j];
    }
  }
  r.rows_in_order = true;
  for (int64_t s = 0; s < S; ++s) {
    if (r.row_src[s] != (s < K ? s : -1)) r.rows_in_order = false;
  }

  std::array<int16_t, 256> nibble_of{};
  nibble_of.fill(-1);
  if (f.lut) {
    r.nibbles = true;
    r.lut = *f.lut;
    for (int i = 15; i >= 0; --i) nibble_of[r.lut[i]] = static_cast<int16_t>(i);
  }
  const int64_t spans = r.spans();
  const int64_t code_bytes = r.code_bytes_per_output();
  r.codes.assign(static_cast<size_t>(N * code_bytes), 0);
  r.scales.assign(static_cast<size_t>(N * spans), 0.0f);
  r.offsets.assign(static_cast<size_t>(N * spans), 0.0f);
  std::atomic<bool> bad_code = false;

  pool.parallel_for(N, 8, [&](int64_t n0, int64_t n1) {
    std::vector<uint8_t> u(static_cast<size_t>(K));
    std::vector<uint8_t> row(static_cast<size_t>(S));
    std::vector<float> seg_scale(f.segments.size()), seg_offset(f.segments.size());
    for (int64_t n = n0; n < n1; ++n) {
      f.read(n, u.data(), seg_scale.data(), seg_offset.data());
      std::fill(row.begin(), row.end(), r.nibbles ? r.lut[0] : uint8_t{128});
      float* scale = r.scales.data() + n * spans;
      float* offset = r.offsets.data() + n * spans;
      for (size_t i = 0; i < f.segments.size(); ++i) {
        const Segment& seg = f.segments[i];
        std::copy_n(u.begin() + seg.begin, seg.rows, row.begin() + padded_begin[i]);
        for (int64_t sp = padded_begin[i] / span; sp * span < padded_begin[i] + seg.rows; ++sp) {
          scale[sp] = seg_scale[i];
          offset[sp] = seg_offset[i];
        }
      }
      uint8_t* out = r.codes.data() + n * code_bytes;
      if (!r.nibbles) {
        std::copy(row.begin(), row.end(), out);
        continue;
      }
      for (int64_t b = 0; b < S; b += 32) {
        for (int j = 0; j < 16; ++j) {
          const int lo = nibble_of[row[b + j]], hi = nibble_of[row[b + j + 16]];
          if (lo < 0 || hi < 0) bad_code = true;
          out[b / 2 + j] = static_cast<uint8_t>((lo & 15) | (hi & 15) << 4);
        }
      }
    }
  });
  HEARTH_CHECK(!bad_code, "int8 path: a code outside the weight's nibble table");
  if (std::all_of(r.offsets.begin(), r.offsets.end(), [](float o) { return o == 0.0f; })) {
    r.offsets.clear();
    r.offsets.shrink_to_fit();
  }
  return r;
}

void int8_weight_row(const Int8Weight& w, int64_t n, float* out) {
  const int64_t code_bytes = w.code_bytes_per_output();
  const uint8_t* codes = w.codes.data() + n * code_bytes;
  const float* scale = w.scales.data() + n * w.spans();
  const float* offset = w.offsets.empty() ? nullptr : w.offsets.data() + n * w.spans();
  for (int64_t s = 0; s < w.stored_rows; ++s) {
    const int32_t k = w.row_src[s];
    if (k < 0) continue;
    uint8_t u = codes[s];
    if (w.nibbles) {
      const uint8_t byte = codes[(s / 32) * 16 + s % 16];
      u = w.lut[s % 32 < 16 ? byte & 15 : byte >> 4];
    }
    const int64_t sp = s / w.span_rows;
    out[k] = std::fma(scale[sp], static_cast<float>(static_cast<int>(u) - 128),
                      offset ? offset[sp] : 0.0f);
  }
}

}  // namespace hearth::cpu
