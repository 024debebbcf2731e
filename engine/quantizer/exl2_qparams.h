// EXL2 quantization settings of one linear layer ("QParams", docs/FORMATS.md §3.3.5 and
// Appendix A): which bit widths cover which share of the (act-order permuted) input rows, at
// what group size, and what that costs in bits. Also the candidate ladders the measurement tries
// per module, and the head options chosen by head bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hearth::quantizer {

struct Exl2QParams {
  struct Part {
    int bits = 4;           // 2, 3, 4, 5, 6 or 8
    double proportion = 1;  // share of the rows
    int64_t group_size = 128;
  };
  std::vector<Part> parts;  // non-increasing bits
  int scale_bits = 4;

  // "0.1:5b_128g/0.9:4b_128g s4" (as exllamav2 describes a setting)
  std::string describe() const;
  bool operator==(const Exl2QParams& o) const;
};

// One group of the stored rows.
struct Exl2Group {
  int bits = 0;
  int64_t row_begin = 0;
  int64_t rows = 0;
};

// The groups a setting cuts K rows into (FORMATS.md §1.2.3): per width,
// ceil(min(K·p, remaining) / group size) groups; only the last group of the matrix may be
// short. Widths whose share is used up get no groups. Error(kInvalidArgument) when the shares do
// not cover K.
std::vector<Exl2Group> exl2_group_layout(const Exl2QParams& qp, int64_t rows);

// Storage bits as exllamav2's optimizer counts them (FORMATS.md §1.10): weights, 4-bit
// scales, q_scale_max, q_groups, q_invperm (and 16 per bias element).
int64_t exl2_total_bits(const Exl2QParams& qp, int64_t rows, int64_t columns, int64_t bias = 0);

// The measurement's candidates: rows of (q, k, v, o) settings for attention (19), and of
// (gate, up, down) for the MLP (17), cheapest first.
const std::vector<std::vector<Exl2QParams>>& exl2_attention_ladder();
const std::vector<std::vector<Exl2QParams>>& exl2_mlp_ladder();
// The lm_head setting for head bits 2, 3, 4, 5, 6 or 8; Error(kInvalidArgument) otherwise.
Exl2QParams exl2_head_qparams(int head_bits);

}  // namespace hearth::quantizer
