// An EXL2 linear layer (exllamav2's format, docs/FORMATS.md §1), validated on load and kept
// packed as the file holds it (views into the mapped file).
//
// Tensors of layer P: P.q_weight I32 [Q, N_pad] (column n is a little-endian bitstream along
// the stored rows), P.q_scale I32 [G, N_pad/8] (4-bit scale codes), P.q_scale_max F16 [G],
// P.q_groups I16 [2G] (bits, first packed row) and P.q_invperm I32 [K]. Stored row s holds input
// feature q_perm[s], q_perm = argsort(q_invperm). Groups come in non-increasing bit order and
// start on multiples of 32 rows (16 between 2-bit groups).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/host_tensor.h"
#include "engine/core/quantized_weight.h"
#include "engine/io/tensor_source.h"

namespace hearth {

class Exl2Weight final : public QuantizedWeight {
 public:
  struct Group {
    int bits = 0;
    int64_t qrow_begin = 0;  // first packed row (q_weight row)
    int64_t qrow_end = 0;    // one past its last packed row
    int64_t row_begin = 0;   // first stored row
    int64_t rows = 0;        // stored rows in the group
    float scale_max = 0;     // fp16(q_scale_max[g] / 256), as float (exact)
  };

  // Loads and validates layer `prefix`. `out_features`: the layer's real N from the model
  // config (the file may pad it up to a multiple of 32), or 0 to take the stored width.
  static std::shared_ptr<const Exl2Weight> load(const TensorSource& source,
                                                const std::string& prefix, int64_t out_features);

  std::string_view format() const override { return "exl2"; }
  int64_t in_features() const override { return k_; }
  int64_t out_features() const override { return n_; }
  double bits_per_weight() const override { return bits_per_weight_; }
  void dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const override;

  // --- for kernels and tests ---
  const std::string& name() const { return name_; }
  int64_t padded_out_features() const { return n_pad_; }  // N_pad, the stored width
  int64_t packed_rows() const { return q_rows_; }         // Q
  const std::vector<Group>& groups() const { return groups_; }
  std::span<const int32_t> perm() const { return perm_; }  // stored row -> input feature
  const uint32_t* q_weight() const { return q_weight_.as<uint32_t>(); }  // [Q, N_pad]
  const uint32_t* q_scale() const { return q_scale_.as<uint32_t>(); }    // [G, N_pad / 8]
  // Code of stored row s (in group g), column n, and the group's effective scale of column n.
  uint32_t code(const Group& g, int64_t s, int64_t n) const;
  int scale_code(int64_t g, int64_t n) const;  // the 4-bit nibble, 0..15
  float scale(int64_t g, int64_t n) const;     // fp16((nib+1)^2 * scale_max), as float

 private:
  Exl2Weight() = default;

  std::string name_;
  int64_t k_ = 0, n_ = 0, n_pad_ = 0, q_rows_ = 0;
  double bits_per_weight_ = 0;
  HostTensor q_weight_, q_scale_;
  std::vector<Group> groups_;
  std::vector<int32_t> perm_;
};

}  // namespace hearth
