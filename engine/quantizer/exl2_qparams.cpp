#include "engine/quantizer/exl2_qparams.h"

#include <cmath>
#include <cstdio>

#include "engine/core/error.h"

namespace hearth::quantizer {
namespace {

using P = Exl2QParams;

// A setting from (group size per part, bits, proportions).
P qp(std::vector<int64_t> gs, std::vector<int> bits, std::vector<double> prop) {
  P q;
  for (size_t i = 0; i < bits.size(); ++i) {
    q.parts.push_back({bits[i], prop[i], gs.size() == 1 ? gs[0] : gs[i]});
  }
  return q;
}
P qp(int64_t gs, std::vector<int> bits, std::vector<double> prop) {
  return qp(std::vector<int64_t>{gs}, std::move(bits), std::move(prop));
}

}  // namespace

std::string Exl2QParams::describe() const {
  std::string s;
  for (const Part& p : parts) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%g:%db_%lldg", s.empty() ? "" : "/", p.proportion, p.bits,
                  static_cast<long long>(p.group_size));
    s += buf;
  }
  return s + " s" + std::to_string(scale_bits);
}

bool Exl2QParams::operator==(const Exl2QParams& o) const {
  if (parts.size() != o.parts.size() || scale_bits != o.scale_bits) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].bits != o.parts[i].bits || parts[i].proportion != o.parts[i].proportion ||
        parts[i].group_size != o.parts[i].group_size) {
      return false;
    }
  }
  return true;
}

std::vector<Exl2Group> exl2_group_layout(const Exl2QParams& qp, int64_t rows) {
  if (qp.parts.empty()) fail(ErrorCode::kInvalidArgument, "EXL2 setting with no bit widths");
  std::vector<Exl2Group> groups;
  int64_t remaining = rows;
  int64_t row = 0;
  int prev_bits = 99;
  for (const auto& part : qp.parts) {
    if (part.bits != 2 && part.bits != 3 && part.bits != 4 && part.bits != 5 && part.bits != 6 &&
        part.bits != 8) {
      fail(ErrorCode::kInvalidArgument, "EXL2 setting " + qp.describe() +
                                            ": bits must be one of "
                                            "2, 3, 4, 5, 6, 8");
    }
    if (part.bits > prev_bits) {
      fail(ErrorCode::kInvalidArgument,
           "EXL2 setting " + qp.describe() + ": widths must come in non-increasing order");
    }
    prev_bits = part.bits;
    const int64_t gs = part.group_size;
    if (gs <= 0 || gs % (part.bits == 2 ? 16 : 32) != 0) {
      fail(ErrorCode::kInvalidArgument, "EXL2 setting " + qp.describe() +
                                            ": group sizes must be multiples of 32 (16 at 2 bits)");
    }
    // As exllamav2 (in doubles): g = ceil(min(rows * p, remaining) / gs).
    const double want =
        std::min(static_cast<double>(rows) * part.proportion, static_cast<double>(remaining));
    const auto count =
        want <= 0 ? int64_t{0} : static_cast<int64_t>(std::ceil(want / static_cast<double>(gs)));
    for (int64_t g = 0; g < count && row < rows; ++g) {
      const int64_t r = std::min(gs, rows - row);
      groups.push_back({part.bits, row, r});
      row += r;
    }
    remaining -= count * gs;
  }
  if (row < rows) {
    fail(ErrorCode::kInvalidArgument, "EXL2 setting " + qp.describe() + " covers " +
                                          std::to_string(row) + " of " + std::to_string(rows) +
                                          " rows");
  }
  return groups;
}

int64_t exl2_total_bits(const Exl2QParams& qp, int64_t rows, int64_t columns, int64_t bias) {
  const std::vector<Exl2Group> groups = exl2_group_layout(qp, rows);
  int64_t bits = 0;
  for (const auto& g : groups) bits += g.rows * columns * g.bits;
  const auto G = static_cast<int64_t>(groups.size());
  bits += G * 16;                       // q_scale_max
  bits += G * 32;                       // q_groups
  bits += G * columns * qp.scale_bits;  // q_scale
  bits += rows * 32;                    // q_invperm
  bits += bias * 16;
  return bits;
}

const std::vector<std::vector<Exl2QParams>>& exl2_attention_ladder() {
  // (q, k, v, o) per row; docs/FORMATS.md Appendix A (exllamav2's qparams_attn).
  static const std::vector<std::vector<Exl2QParams>> ladder = [] {
    const P a32 = qp(64, {3, 2}, {0.05, 0.95});
    const P b32 = qp(64, {3, 2}, {0.1, 0.9});
    const P b32v = qp(64, {3, 2}, {0.25, 0.75});
    const P c43 = qp(128, {4, 3}, {0.1, 0.9});
    const P c43_64 = qp(64, {4, 3}, {0.1, 0.9});
    const P d4_128 = qp(128, {4}, {1}), d4_64 = qp(64, {4}, {1}), d4_32 = qp(32, {4}, {1});
    const P e54_128 = qp(128, {5, 4}, {0.1, 0.9}), e54_64 = qp(64, {5, 4}, {0.1, 0.9});
    const P e54_32 = qp(32, {5, 4}, {0.1, 0.9});
    const P f5_64 = qp(64, {5}, {1}), f5_32 = qp(32, {5}, {1});
    const P g65_128 = qp(128, {6, 5}, {0.1, 0.9}), g65_32 = qp(32, {6, 5}, {0.1, 0.9});
    const P h6_128 = qp(128, {6}, {1}), h6_32 = qp(32, {6}, {1});
    const P i8_128 = qp(128, {8}, {1}), i8_32 = qp(32, {8}, {1});
    return std::vector<std::vector<P>>{
        {a32, a32, a32, a32},
        {b32, b32, b32v, b32},
        {b32, b32, c43, b32},
        {b32, b32, c43, c43},
        {c43, c43, c43, c43},
        {c43, c43, c43_64, c43},
        {d4_128, d4_128, d4_128, d4_128},
        {d4_128, d4_128, d4_64, d4_128},
        {d4_64, d4_64, d4_32, d4_64},
        {d4_32, d4_32, d4_32, d4_32},
        {e54_128, e54_128, e54_64, e54_128},
        {e54_64, e54_64, e54_32, e54_64},
        {e54_64, e54_64, f5_64, e54_64},
        {e54_32, e54_32, f5_32, e54_32},
        {g65_128, g65_128, h6_128, g65_128},
        {g65_32, g65_32, h6_32, g65_32},
        {h6_128, h6_128, h6_128, h6_128},
        {h6_32, h6_32, i8_32, h6_32},
        {i8_128, i8_128, i8_128, i8_128},
    };
  }();
  return ladder;
}

const std::vector<std::vector<Exl2QParams>>& exl2_mlp_ladder() {
  // (gate, up, down) per row; FORMATS.md Appendix A (exllamav2's qparams_mlp).
  static const std::vector<std::vector<Exl2QParams>> ladder = {
      {qp(64, {3, 2}, {0.05, 0.95}), qp(64, {3, 2}, {0.05, 0.95}),
       qp({32, 64, 64}, {6, 3, 2}, {0.05, 0.2, 0.75})},
      {qp(64, {3, 2}, {0.1, 0.9}), qp(64, {3, 2}, {0.25, 0.75}),
       qp({32, 64, 64}, {6, 3, 2}, {0.05, 0.2, 0.75})},
      {qp(64, {3, 2}, {0.1, 0.9}), qp(64, {3, 2}, {0.3, 0.7}), qp(32, {5, 3}, {0.05, 0.95})},
      {qp(64, {3, 2}, {0.1, 0.9}), qp(64, {3, 2}, {0.3, 0.7}), qp(32, {5, 4}, {0.05, 0.95})},
      {qp(128, {4, 3}, {0.1, 0.9}), qp(128, {4, 3}, {0.25, 0.75}),
       qp({32, 128, 128}, {8, 4, 3}, {0.05, 0.1, 0.85})},
      {qp(32, {4, 3}, {0.1, 0.9}), qp(32, {4, 3}, {0.25, 0.75}),
       qp({32, 32, 32}, {8, 4, 3}, {0.05, 0.1, 0.85})},
      {qp(32, {4, 3}, {0.1, 0.9}), qp(32, {4, 3}, {0.25, 0.75}),
       qp({32, 128}, {8, 4}, {0.05, 0.95})},
      {qp(128, {4}, {1}), qp(32, {4}, {1}), qp({32, 128}, {8, 4}, {0.05, 0.95})},
      {qp(32, {4}, {1}), qp(32, {4}, {1}), qp({32, 32}, {8, 4}, {0.05, 0.95})},
      {qp(128, {5, 4}, {0.1, 0.9}), qp(128, {5, 4}, {0.25, 0.75}),
       qp({32, 128, 128}, {8, 5, 4}, {0.05, 0.1, 0.85})},
      {qp(32, {5, 4}, {0.1, 0.9}), qp(32, {5, 4}, {0.25, 0.75}),
       qp({32, 32, 32}, {8, 5, 4}, {0.05, 0.1, 0.85})},
      {qp(128, {6, 5}, {0.1, 0.9}), qp(128, {6, 5}, {0.25, 0.75}),
       qp({32, 128, 128}, {8, 6, 5}, {0.05, 0.1, 0.85})},
      {qp(32, {6, 5}, {0.1, 0.9}), qp(32, {6, 5}, {0.25, 0.75}),
       qp({32, 32, 32}, {8, 6, 5}, {0.05, 0.1, 0.85})},
      {qp(128, {6}, {1}), qp(128, {6}, {1}), qp({32, 128}, {8, 6}, {0.05, 0.95})},
      {qp(128, {8, 6}, {0.1, 0.9}), qp(128, {8, 6}, {0.1, 0.9}), qp(128, {8, 6}, {0.15, 0.85})},
      {qp(128, {8, 6}, {0.1, 0.9}), qp(128, {8, 6}, {0.1, 0.9}), qp(128, {8}, {1})},
      {qp(128, {8}, {1}), qp(128, {8}, {1}), qp(128, {8}, {1})},
  };
  return ladder;
}

Exl2QParams exl2_head_qparams(int head_bits) {
  switch (head_bits) {
    case 2:
      return qp(32, {4, 2}, {0.3, 0.7});
    case 3:
      return qp(32, {4, 3}, {0.15, 0.85});
    case 4:
      return qp(32, {6, 4}, {0.15, 0.85});
    case 5:
      return qp(128, {6, 5}, {0.15, 0.85});
    case 6:
      return qp(128, {8, 6}, {0.15, 0.85});
    case 8:
      return qp(128, {8}, {1.0});
    default:
      fail(ErrorCode::kInvalidArgument,
           "head bits must be 2, 3, 4, 5, 6 or 8 (got " + std::to_string(head_bits) + ")");
  }
}

}  // namespace hearth::quantizer
