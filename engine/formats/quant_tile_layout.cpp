#include "engine/formats/quant_tile_layout.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <thread>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_weight.h"
#include "engine/formats/quant_bits.h"
#include "engine/formats/quant_tile_shard.h"
#include "engine/io/gguf_block_weight.h"
#include "kernels/quant_tile_codec.cuh"

namespace hearth {
namespace {

constexpr int64_t kRows = qtile::kChunkRows;
constexpr int64_t kOut = qtile::kTileOutputs;

// Runs fn(i) for i in [0, n) on `threads` threads.
template <class Fn>
void parallel(int64_t n, int threads, Fn&& fn) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(n, 1)));
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}

// Reads `count` consecutive b-bit codes of a strided bitstream into out[i * out_stride].
template <int B>
void read_codes(const uint32_t* words, int64_t stride, int64_t count, uint8_t* out,
                int64_t out_stride) {
  quant::BitReader r(words, stride);
  for (int64_t i = 0; i < count; ++i) out[i * out_stride] = static_cast<uint8_t>(r.next<B>());
}

void read_codes(int bits, const uint32_t* words, int64_t stride, int64_t count, uint8_t* out,
                int64_t out_stride) {
  switch (bits) {
    case 2:
      return read_codes<2>(words, stride, count, out, out_stride);
    case 3:
      return read_codes<3>(words, stride, count, out, out_stride);
    case 4:
      return read_codes<4>(words, stride, count, out, out_stride);
    case 5:
      return read_codes<5>(words, stride, count, out, out_stride);
    case 6:
      return read_codes<6>(words, stride, count, out, out_stride);
    default:
      return read_codes<8>(words, stride, count, out, out_stride);
  }
}

// Chunk bookkeeping shared by both formats: appends a segment of `rows` stored rows (one group,
// one width) starting on a chunk boundary, padded to whole chunks.
struct ChunkPlan {
  std::vector<int32_t> row_src;
  std::vector<uint32_t> info;
  void add_segment(int bits, int64_t group, int64_t rows) {
    const int64_t chunks = (rows + kRows - 1) / kRows;
    for (int64_t c = 0; c < chunks; ++c)
      info.push_back(qtile::chunk_info(bits, static_cast<uint32_t>(group)));
    row_src.resize(row_src.size() + static_cast<size_t>(chunks * kRows), -1);
  }
};

// Fills qweight from per-block code matrices: codes_of(nb, buf) writes the codes of stored
// rows × the block's 32 outputs into buf[s * 32 + o] (padding rows may hold anything).
template <class CodesOf>
void pack_blocks(QuantTileLayout& L, int threads, CodesOf&& codes_of) {
  L.qweight.assign(static_cast<size_t>(L.blocks * L.lines * 32), 0);
  parallel(L.blocks, threads, [&](int64_t nb) {
    std::vector<uint8_t> buf(static_cast<size_t>(L.chunks * kRows * kOut), 0);
    codes_of(nb, buf.data());
    uint32_t codes[32], words[8];
    for (int64_t c = 0; c < L.chunks; ++c) {
      const int width = qtile::chunk_width(L.chunk_info[static_cast<size_t>(c)]);
      const int bits = qtile::width_bits(width);
      const uint8_t* chunk = buf.data() + c * kRows * kOut;
      const int64_t line0 = nb * L.lines + L.chunk_line[static_cast<size_t>(c)];
      for (int lane = 0; lane < 32; ++lane) {
        for (int p = 0; p < qtile::kPairs; ++p) {
          const int o = qtile::pair_output(p, lane);
          codes[2 * p] = chunk[qtile::pair_row(p, lane, 0) * kOut + o];
          codes[2 * p + 1] = chunk[qtile::pair_row(p, lane, 1) * kOut + o];
        }
        qtile::encode_lane_bits(width, codes, words);
        for (int i = 0; i < bits; ++i) {
          L.qweight[static_cast<size_t>((line0 + i) * 32 + lane)] = words[i];
        }
      }
    }
  });
}

void finish_chunks(QuantTileLayout& L, ChunkPlan& plan) {
  L.chunks = static_cast<int64_t>(plan.info.size());
  L.chunk_info = std::move(plan.info);
  L.row_src = std::move(plan.row_src);
  L.chunk_line.assign(static_cast<size_t>(L.chunks + 1), 0);
  for (int64_t c = 0; c < L.chunks; ++c) {
    const int bits = qtile::chunk_bits(L.chunk_info[static_cast<size_t>(c)]);
    L.bits_mask |= 1u << (bits - 1);
    L.chunk_line[static_cast<size_t>(c + 1)] = L.chunk_line[static_cast<size_t>(c)] + bits;
  }
  L.lines = L.chunk_line.back();
  L.rows_in_order = true;
  for (int64_t s = 0; s < L.chunks * kRows; ++s) {
    const int32_t want = s < L.in_features ? static_cast<int32_t>(s) : -1;
    if (L.row_src[static_cast<size_t>(s)] != want) L.rows_in_order = false;
  }
}

QuantTileLayout build_exl2(const Exl2Weight& w, int threads) {
  QuantTileLayout L;
  L.kind = QuantTileLayout::Kind::kExl2;
  L.name = w.name();
  L.in_features = w.in_features();
  L.out_features = w.out_features();
  L.blocks = (L.out_features + kOut - 1) / kOut;
  L.groups = static_cast<int64_t>(w.groups().size());
  ChunkPlan plan;
  std::vector<int64_t> group_first_row;  // first stored (tile) row of each group
  for (size_t g = 0; g < w.groups().size(); ++g) {
    const auto& gr = w.groups()[g];
    const int64_t start = static_cast<int64_t>(plan.row_src.size());
    group_first_row.push_back(start);
    plan.add_segment(gr.bits, static_cast<int64_t>(g), gr.rows);
    for (int64_t j = 0; j < gr.rows; ++j) {
      plan.row_src[static_cast<size_t>(start + j)] =
          w.perm()[static_cast<size_t>(gr.row_begin + j)];
    }
  }
  finish_chunks(L, plan);
  const int64_t n_pad = w.padded_out_features();
  pack_blocks(L, threads, [&](int64_t nb, uint8_t* buf) {
    for (int64_t o = 0; o < kOut; ++o) {
      const int64_t n = nb * kOut + o;
      if (n >= L.out_features) continue;  // never written out
      for (size_t g = 0; g < w.groups().size(); ++g) {
        const auto& gr = w.groups()[g];
        read_codes(gr.bits, w.q_weight() + gr.qrow_begin * n_pad + n, n_pad, gr.rows,
                   buf + group_first_row[g] * kOut + o, kOut);
      }
    }
  });
  L.scale_codes.assign(static_cast<size_t>(L.blocks * L.groups * 8), 0);
  for (int64_t nb = 0; nb < L.blocks; ++nb) {
    for (int64_t g = 0; g < L.groups; ++g) {
      for (int i = 0; i < 8; ++i) {
        uint16_t v = 0;
        for (int j = 0; j < 4; ++j) {
          const int64_t n = nb * kOut + i + 8 * j;
          if (n < L.out_features) v |= static_cast<uint16_t>(w.scale_code(g, n) << (4 * j));
        }
        L.scale_codes[static_cast<size_t>((nb * L.groups + g) * 8 + i)] = v;
      }
    }
  }
  for (const auto& gr : w.groups()) L.scale_max.push_back(float_to_half(gr.scale_max));
  return L;
}

QuantTileLayout build_gptq(const GptqWeight& w, int threads) {
  QuantTileLayout L;
  L.kind = w.symmetric() ? QuantTileLayout::Kind::kGptqSym : QuantTileLayout::Kind::kGptqAsym;
  L.name = w.name();
  L.in_features = w.in_features();
  L.out_features = w.out_features();
  L.blocks = (L.out_features + kOut - 1) / kOut;
  L.groups = w.groups();
  // Rows sorted by group (stable), each group on its own chunks.
  std::vector<std::vector<int32_t>> members(static_cast<size_t>(L.groups));
  for (int64_t k = 0; k < L.in_features; ++k) {
    members[static_cast<size_t>(w.group_index()[static_cast<size_t>(k)])].push_back(
        static_cast<int32_t>(k));
  }
  ChunkPlan plan;
  std::vector<int64_t> tile_row(static_cast<size_t>(L.in_features));
  for (int64_t g = 0; g < L.groups; ++g) {
    const auto& rows = members[static_cast<size_t>(g)];
    if (rows.empty()) continue;
    const int64_t start = static_cast<int64_t>(plan.row_src.size());
    plan.add_segment(w.bits(), g, static_cast<int64_t>(rows.size()));
    for (size_t j = 0; j < rows.size(); ++j) {
      plan.row_src[static_cast<size_t>(start) + j] = rows[j];
      tile_row[static_cast<size_t>(rows[j])] = start + static_cast<int64_t>(j);
    }
  }
  finish_chunks(L, plan);
  // Codes of one column in k order, scattered to their stored rows.
  const int64_t N = L.out_features;
  pack_blocks(L, threads, [&](int64_t nb, uint8_t* buf) {
    std::vector<uint8_t> codes(static_cast<size_t>(L.in_features));
    for (int64_t o = 0; o < kOut; ++o) {
      const int64_t n = nb * kOut + o;
      if (n >= N) continue;
      read_codes(w.bits(), w.qweight() + n, N, L.in_features, codes.data(), 1);
      for (int64_t k = 0; k < L.in_features; ++k) {
        buf[tile_row[static_cast<size_t>(k)] * kOut + o] = codes[static_cast<size_t>(k)];
      }
    }
  });
  const size_t entries = static_cast<size_t>(L.blocks * L.groups * 32);
  L.scales.assign(entries, 0);
  if (L.kind == QuantTileLayout::Kind::kGptqAsym) L.zeros.assign(entries, float_to_half(1024.0f));
  for (int64_t nb = 0; nb < L.blocks; ++nb) {
    for (int64_t g = 0; g < L.groups; ++g) {
      for (int i = 0; i < 8; ++i) {
        for (int j = 0; j < 4; ++j) {
          const int64_t n = nb * kOut + i + 8 * j;
          if (n >= N) continue;
          const size_t at = static_cast<size_t>(((nb * L.groups + g) * 8 + i) * 4 + j);
          L.scales[at] = float_to_half(w.scale(g, n));
          if (!L.zeros.empty()) {
            L.zeros[at] = float_to_half(1024.0f + static_cast<float>(w.zero(g, n)));
          }
        }
      }
    }
  }
  return L;
}

// Whether d·q + m is exact in fp32 for every code q in [0, q_max] (fp16 d and m): true when the
// lowest bit either can have and the largest sum lie within fp32's 24 bits.
bool legacy_sum_exact_in_fp32(uint16_t d_bits, uint16_t m_bits, int q_max) {
  const float d = half_to_float(d_bits), m = half_to_float(m_bits);
  if (d == 0.0f || m == 0.0f) return true;  // a product of an fp16 and a code, or m alone
  auto lowest_bit = [](float v) {           // fp16: 11 significant bits, nothing below 2^-24
    int e;
    std::frexp(v, &e);
    return std::max(e - 11, -24);
  };
  const int low = std::min(lowest_bit(d), lowest_bit(m));
  return std::abs(double(d)) * q_max + std::abs(double(m)) < std::ldexp(1.0, low + 24);
}

// Q4_0 / Q5_0 / Q8_0 (one scale per block, no minimum, no codebook) are laid out as symmetric
// GPTQ, the fp16 product d·(q − z) being their value.
bool gguf_as_symmetric_gptq(const GgufCodeForm& form) {
  return !form.has_min && form.super_inputs == kRows && !form.iq4_codebook;
}
// The chunks' width code: IQ4_NL / IQ4_XS store their 4-bit codebook indices.
int gguf_chunk_width(const GgufCodeForm& form) {
  return form.iq4_codebook ? qtile::kIq4Width : form.bits;
}

// GGUF blocks, rows in order, a group per 32 inputs. The symmetric types as GPTQ (kGptqSym), the
// others in their own form (kGguf).
QuantTileLayout build_gguf(const GgufBlockWeight& w, int threads) {
  const GgufCodeForm form = w.code_form();
  if (form.bits == 0) {
    fail(ErrorCode::kUnsupported,
         "no GPU layout for GGUF blocks of type " + std::string(ggml_type_name(w.type())));
  }
  using Sub = QuantTileLayout::SubScales;
  QuantTileLayout L;
  const bool symmetric = gguf_as_symmetric_gptq(form);
  L.kind = symmetric ? QuantTileLayout::Kind::kGptqSym : QuantTileLayout::Kind::kGguf;
  L.name = "gguf";
  L.in_features = w.in_features();
  L.out_features = w.out_features();
  L.blocks = (L.out_features + kOut - 1) / kOut;
  L.groups = L.in_features / kRows;  // GGUF block types hold whole blocks per row
  ChunkPlan plan;
  for (int64_t g = 0; g < L.groups; ++g) plan.add_segment(gguf_chunk_width(form), g, kRows);
  for (int64_t k = 0; k < L.in_features; ++k) plan.row_src[static_cast<size_t>(k)] = int32_t(k);
  finish_chunks(L, plan);
  // The codebook index of each 8-bit code (the codes row_codes gives).
  uint8_t index_of[256] = {};
  for (uint32_t i = 0; i < 16; ++i) index_of[qtile::iq4_code(i)] = static_cast<uint8_t>(i);
  const size_t entries = static_cast<size_t>(L.blocks * L.groups * 32);
  if (symmetric) {
    L.scales.assign(entries, 0);
  } else {
    L.supers = L.in_features / form.super_inputs;
    L.super_shift = form.super_inputs == kRows ? 0 : 3;  // 256 inputs: 8 groups
    L.sub_scales = form.super_inputs == kRows ? Sub::kNone
                   : !form.has_min            ? Sub::kHalves
                   : form.sub_blocks_of_16    ? Sub::kScaleMinHalves
                                              : Sub::kScaleMin;
    L.gguf_zero = form.zero;
    L.super_records.assign(static_cast<size_t>(L.blocks * L.supers * 32), 0);
    if (L.sub_scales != Sub::kNone) L.sub_records.assign(entries, 0);
  }
  // (kGgufHalf decodes no codebook.)
  std::atomic<bool> half_exact{L.sub_scales == Sub::kNone && !symmetric && !form.iq4_codebook};
  // One pass per output: its codes into the block's buffer, its records into their slots.
  pack_blocks(L, threads, [&](int64_t nb, uint8_t* buf) {
    GgufRowCodes row;
    for (int64_t o = 0; o < kOut; ++o) {
      const int64_t n = nb * kOut + o;
      if (n >= L.out_features) continue;
      w.row_codes(n, row);
      for (int64_t k = 0; k < L.in_features; ++k) {
        const uint8_t code = row.codes[static_cast<size_t>(k)];
        buf[k * kOut + o] = form.iq4_codebook ? index_of[code] : code;
      }
      const int64_t slot = (o % 8) * 4 + o / 8;  // [8][4]: output i + 8j at i·4 + j
      if (symmetric) {
        for (int64_t g = 0; g < L.groups; ++g) {
          L.scales[static_cast<size_t>((nb * L.groups + g) * 32 + slot)] =
              row.d[static_cast<size_t>(g)];
        }
        continue;
      }
      bool exact = true;
      for (int64_t s = 0; s < L.supers; ++s) {
        const uint16_t d = row.d[static_cast<size_t>(s)], dmin = row.dmin[static_cast<size_t>(s)];
        L.super_records[static_cast<size_t>((nb * L.supers + s) * 32 + slot)] =
            d | (static_cast<uint32_t>(dmin) << 16);
        exact = exact && legacy_sum_exact_in_fp32(d, dmin, (1 << form.bits) - 1);
      }
      if (!exact) half_exact = false;
      if (L.sub_scales == Sub::kNone) continue;
      for (int64_t g = 0; g < L.groups; ++g) {
        const auto h0 = static_cast<size_t>(2 * g), h1 = h0 + 1;  // the group's two halves
        uint8_t lo = static_cast<uint8_t>(row.sc[h0]), hi = static_cast<uint8_t>(row.sc[h1]);
        if (L.sub_scales == Sub::kScaleMin) {
          hi = static_cast<uint8_t>(row.m[h0]);
        } else if (L.sub_scales == Sub::kScaleMinHalves) {
          lo = static_cast<uint8_t>((row.sc[h0] & 15) | (row.m[h0] << 4));
          hi = static_cast<uint8_t>((row.sc[h1] & 15) | (row.m[h1] << 4));
        }
        L.sub_records[static_cast<size_t>((nb * L.groups + g) * 32 + slot)] =
            static_cast<uint16_t>(lo | (hi << 8));
      }
    }
  });
  L.gguf_half_exact = half_exact;
  return L;
}

}  // namespace

bool has_quant_tile_layout(const QuantizedWeight& weight) {
  if (const auto* g = dynamic_cast<const GgufBlockWeight*>(&weight)) {
    return g->code_form().bits > 0;
  }
  return dynamic_cast<const Exl2Weight*>(&weight) || dynamic_cast<const GptqWeight*>(&weight) ||
         dynamic_cast<const TileLayoutWeight*>(&weight);
}

bool runs_packed_on_gpu(const QuantizedWeight& weight) {
  if (!has_quant_tile_layout(weight)) return false;
  if (!dynamic_cast<const GgufBlockWeight*>(&weight)) return true;
  const auto fp16_bytes = static_cast<size_t>(weight.out_features() * weight.in_features()) * 2;
  return fp16_bytes > kGgufFp16MaxBytes;
}

size_t QuantTileLayout::device_bytes() const {
  return qweight.size() * 4 + chunk_line.size() * 4 + chunk_info.size() * 4 + row_src.size() * 4 +
         scale_codes.size() * 2 + scale_max.size() * 2 + scales.size() * 2 + zeros.size() * 2 +
         super_records.size() * 4 + sub_records.size() * 2;
}

bool QuantTileLayout::has_iq4_codebook() const {
  return !chunk_info.empty() && qtile::chunk_width(chunk_info.front()) == qtile::kIq4Width;
}

size_t gguf_tile_layout_bytes(const GgufBlockWeight& w) {
  const GgufCodeForm form = w.code_form();
  HEARTH_CHECK(form.bits > 0, "gguf_tile_layout_bytes: no tile layout for this type");
  const auto blocks = static_cast<size_t>((w.out_features() + kOut - 1) / kOut);
  const auto groups = static_cast<size_t>(w.in_features() / kRows);
  const auto supers = static_cast<size_t>(w.in_features() / form.super_inputs);
  const auto bits = static_cast<size_t>(qtile::width_bits(gguf_chunk_width(form)));
  size_t bytes = blocks * groups * bits * 32 * 4                     // qweight
                 + (groups + 1) * 4 + groups * 4 + groups * 32 * 4;  // chunk facts, row_src
  if (gguf_as_symmetric_gptq(form)) return bytes + blocks * groups * 32 * 2;  // fp16 scales
  bytes += blocks * supers * 32 * 4;                                          // (d, dmin)
  if (form.super_inputs != kRows) bytes += blocks * groups * 32 * 2;          // sub-scales
  return bytes;
}

QuantTileLayout build_quant_tile_layout(const QuantizedWeight& weight, int threads) {
  if (const auto* e = dynamic_cast<const Exl2Weight*>(&weight)) return build_exl2(*e, threads);
  if (const auto* g = dynamic_cast<const GptqWeight*>(&weight)) return build_gptq(*g, threads);
  if (const auto* g = dynamic_cast<const GgufBlockWeight*>(&weight)) return build_gguf(*g, threads);
  if (const auto* t = dynamic_cast<const TileLayoutWeight*>(&weight)) return t->layout();
  fail(ErrorCode::kUnsupported,
       "no GPU layout for quantized weights of format " + std::string(weight.format()));
}

void emulate_quant_tile_gemm(const QuantTileLayout& L, const float* x, int64_t rows, float* y) {
  const int64_t K = L.in_features, N = L.out_features;
  std::fill(y, y + rows * N, 0.0f);
  uint32_t words[8], pairs[qtile::kPairs];
  for (int64_t nb = 0; nb < L.blocks; ++nb) {
    for (int64_t c = 0; c < L.chunks; ++c) {
      const uint32_t info = L.chunk_info[static_cast<size_t>(c)];
      const int width = qtile::chunk_width(info);
      const int bits = qtile::width_bits(width);
      const int64_t g = qtile::chunk_group(info);
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < bits; ++i) {
          words[i] = L.qweight[static_cast<size_t>(
              (nb * L.lines + L.chunk_line[static_cast<size_t>(c)] + i) * 32 + lane)];
        }
        qtile::decode_lane_bits(width, words, pairs);
        const int gi = lane >> 2;
        for (int p = 0; p < qtile::kPairs; ++p) {
          const int slot = qtile::pair_output_slot(p);
          const int64_t n = nb * kOut + qtile::pair_output(p, lane);
          if (n >= N) continue;
          const size_t at = static_cast<size_t>(((nb * L.groups + g) * 8 + gi) * 4 + slot);
          // The weight of code value v (1024 + q) in row half `half` (rows 16·half ..) of the
          // chunk.
          std::function<float(float, int)> weight;
          if (L.kind == QuantTileLayout::Kind::kGguf) {
            const uint32_t rec = L.super_records[static_cast<size_t>(
                ((nb * L.supers + (g >> L.super_shift)) * 8 + gi) * 4 + slot)];
            const float d = half_to_float(static_cast<uint16_t>(rec & 0xffffu));
            const float dmin = half_to_float(static_cast<uint16_t>(rec >> 16));
            const uint16_t sub = L.sub_records.empty() ? uint16_t{0} : L.sub_records[at];
            const auto lo = static_cast<int8_t>(sub & 0xffu), hi = static_cast<int8_t>(sub >> 8);
            weight = [&, d, dmin, lo, hi](float v, int half) {
              float sc = 1.0f, m = -1.0f;
              if (L.sub_scales == QuantTileLayout::SubScales::kScaleMin) {
                sc = lo, m = hi;
              } else if (L.sub_scales == QuantTileLayout::SubScales::kHalves) {
                sc = half ? hi : lo, m = 0.0f;
              } else if (L.sub_scales == QuantTileLayout::SubScales::kScaleMinHalves) {
                const auto byte = static_cast<uint8_t>(half ? hi : lo);
                sc = static_cast<float>(byte & 15), m = static_cast<float>(byte >> 4);
              }
              // fp32 products (exact) and one fma, then fp16: GgufCodeForm's formula.
              const float q_z = v - 1024.0f - static_cast<float>(L.gguf_zero);
              return quant::round_to_half(std::fma(d * sc, q_z, -(dmin * m)));
            };
          } else {
            float scale, zero;
            if (L.kind == QuantTileLayout::Kind::kExl2) {
              const int nib =
                  (L.scale_codes[static_cast<size_t>((nb * L.groups + g) * 8 + gi)] >> (4 * slot)) &
                  15;
              scale = quant::round_to_half(static_cast<float>((nib + 1) * (nib + 1)) *
                                           half_to_float(L.scale_max[static_cast<size_t>(g)]));
              zero = 1024.0f + static_cast<float>(1 << (bits - 1));
            } else {
              scale = half_to_float(L.scales[at]);
              zero = L.zeros.empty() ? 1024.0f + static_cast<float>(1 << (bits - 1))
                                     : half_to_float(L.zeros[at]);
            }
            // hsub2 then hmul2, as the kernels: both exact / rounded once in fp16.
            weight = [scale, zero](float v, int) {
              return quant::round_to_half(quant::round_to_half(v - zero) * scale);
            };
          }
          for (int h = 0; h < 2; ++h) {
            const int64_t s = c * kRows + qtile::pair_row(p, lane, h);
            const int32_t src = L.row_src[static_cast<size_t>(s)];
            if (src < 0) continue;
            const float v = half_to_float(static_cast<uint16_t>(pairs[p] >> (16 * h)));
            const float w = weight(v, qtile::pair_row(p, lane, h) >= 16);
            for (int64_t r = 0; r < rows; ++r) y[r * N + n] += x[r * K + src] * w;
          }
        }
      }
    }
  }
}

}  // namespace hearth
