#include "engine/quantizer/packed_layer.h"

#include <algorithm>

#include "engine/core/error.h"

namespace hearth::quantizer {
namespace {

// Appends the b-bit value v at bit position `bit` of a little-endian bitstream of words spaced
// `stride` apart (the words must start zeroed).
inline void put_bits(uint32_t* words, int64_t stride, int bits, int64_t j, uint32_t v) {
  const int64_t off = j * bits;
  const int64_t wi = off >> 5;
  const int sh = static_cast<int>(off & 31);
  words[wi * stride] |= v << sh;
  if (sh + bits > 32) words[(wi + 1) * stride] |= v >> (32 - sh);
}

HostTensor fp16_tensor(const std::vector<float>& values) {
  HostTensor t = HostTensor::allocate(DType::kF16, {static_cast<int64_t>(values.size())});
  auto* out = static_cast<uint16_t*>(t.mutable_data());
  for (size_t i = 0; i < values.size(); ++i) out[i] = float_to_half(values[i]);
  return t;
}

}  // namespace

PackedTensors pack_exl2(const std::string& prefix, int64_t k, int64_t n_pad,
                        const std::vector<uint8_t>& codes, const std::vector<GptqGroupSpec>& groups,
                        const std::vector<GroupParams>& params, const std::vector<int32_t>& perm,
                        const std::optional<std::vector<float>>& bias) {
  HEARTH_CHECK(n_pad % 32 == 0, "EXL2 columns must be padded to 32");
  HEARTH_CHECK(groups.size() == params.size(), "EXL2: one parameter set per group");
  const auto G = static_cast<int64_t>(groups.size());
  if (k > 65536) {
    fail(ErrorCode::kUnsupported,
         prefix + ": EXL2 allows at most 65536 input features (16-bit permutation)");
  }
  std::vector<int64_t> qrow_start(static_cast<size_t>(G));
  int64_t Q = 0;
  for (int64_t g = 0; g < G; ++g) {
    qrow_start[g] = Q;
    Q += (groups[g].rows * groups[g].bits + 31) / 32;
  }
  if (Q > 32767 || G > 32767) {
    fail(ErrorCode::kUnsupported, prefix +
                                      ": too many packed rows or groups for EXL2 (16-bit "
                                      "indices)");
  }
  HostTensor q_weight = HostTensor::allocate(DType::kI32, {Q, n_pad});
  auto* qw = static_cast<uint32_t*>(q_weight.mutable_data());
  for (int64_t g = 0; g < G; ++g) {
    const GptqGroupSpec& gs = groups[g];
    uint32_t* base = qw + qrow_start[g] * n_pad;
    for (int64_t j = 0; j < gs.rows; ++j) {
      const uint8_t* row = codes.data() + (gs.row_begin + j) * n_pad;
      for (int64_t c = 0; c < n_pad; ++c) put_bits(base + c, n_pad, gs.bits, j, row[c]);
    }
  }
  HostTensor q_scale = HostTensor::allocate(DType::kI32, {G, n_pad / 8});
  auto* qs = static_cast<uint32_t*>(q_scale.mutable_data());
  std::vector<float> scale_max(static_cast<size_t>(G));
  for (int64_t g = 0; g < G; ++g) {
    const GroupParams& p = params[g];
    HEARTH_CHECK(static_cast<int64_t>(p.qscale.size()) == n_pad, "EXL2: scale codes per column");
    for (int64_t c = 0; c < n_pad; ++c) {
      const uint32_t nib = static_cast<uint32_t>(p.qscale[c] - 1) & 15u;
      qs[g * (n_pad / 8) + c / 8] |= nib << (4 * (c % 8));
    }
    scale_max[g] = p.qscale_max;
  }
  HostTensor q_groups = HostTensor::allocate(DType::kI16, {2 * G});
  auto* qg = static_cast<int16_t*>(q_groups.mutable_data());
  for (int64_t g = 0; g < G; ++g) {
    qg[2 * g] = static_cast<int16_t>(groups[g].bits);
    qg[2 * g + 1] = static_cast<int16_t>(qrow_start[g]);
  }
  HostTensor q_invperm = HostTensor::allocate(DType::kI32, {k});
  auto* inv = static_cast<int32_t*>(q_invperm.mutable_data());
  for (int64_t s = 0; s < k; ++s) inv[perm[s]] = static_cast<int32_t>(s);

  PackedTensors out;
  if (bias) out.emplace_back(prefix + ".bias", fp16_tensor(*bias));
  out.emplace_back(prefix + ".q_groups", std::move(q_groups));
  out.emplace_back(prefix + ".q_invperm", std::move(q_invperm));
  out.emplace_back(prefix + ".q_scale", std::move(q_scale));
  out.emplace_back(prefix + ".q_scale_max", fp16_tensor(scale_max));
  out.emplace_back(prefix + ".q_weight", std::move(q_weight));
  return out;
}

PackedTensors pack_gptq(const std::string& prefix, int64_t k, int64_t n, int bits,
                        const std::vector<uint8_t>& codes, const std::vector<GptqGroupSpec>& groups,
                        const std::vector<GroupParams>& params, const std::vector<int32_t>& perm,
                        const std::optional<std::vector<float>>& bias) {
  if ((k * bits) % 32 != 0 || (n * bits) % 32 != 0) {
    fail(ErrorCode::kUnsupported, prefix + ": GPTQ at " + std::to_string(bits) +
                                      " bits needs in_features (" + std::to_string(k) +
                                      ") and out_features (" + std::to_string(n) +
                                      ") whose products with the bit width are multiples of 32");
  }
  const auto G = static_cast<int64_t>(groups.size());
  HostTensor qweight = HostTensor::allocate(DType::kI32, {k * bits / 32, n});
  auto* qw = static_cast<uint32_t*>(qweight.mutable_data());
  HostTensor g_idx = HostTensor::allocate(DType::kI32, {k});
  auto* gi = static_cast<int32_t*>(g_idx.mutable_data());
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t j = 0; j < groups[g].rows; ++j) {
      const int64_t s = groups[g].row_begin + j;
      const int64_t orig = perm[s];
      gi[orig] = static_cast<int32_t>(g);
      const uint8_t* row = codes.data() + s * n;
      for (int64_t c = 0; c < n; ++c) put_bits(qw + c, n, bits, orig, row[c]);
    }
  }
  HostTensor qzeros = HostTensor::allocate(DType::kI32, {G, n * bits / 32});
  auto* qz = static_cast<uint32_t*>(qzeros.mutable_data());
  HostTensor scales = HostTensor::allocate(DType::kF16, {G, n});
  auto* sc = static_cast<uint16_t*>(scales.mutable_data());
  for (int64_t g = 0; g < G; ++g) {
    const GroupParams& p = params[g];
    for (int64_t c = 0; c < n; ++c) {
      const auto z = static_cast<int64_t>(p.zero[c]);
      HEARTH_CHECK(z >= 1 && z < (int64_t{1} << bits) + 1, "GPTQ v1 zero out of range");
      put_bits(qz + g * (n * bits / 32), 1, bits, c, static_cast<uint32_t>(z - 1));
      sc[g * n + c] = float_to_half(p.scale[c]);
    }
  }
  PackedTensors out;
  if (bias) out.emplace_back(prefix + ".bias", fp16_tensor(*bias));
  out.emplace_back(prefix + ".g_idx", std::move(g_idx));
  out.emplace_back(prefix + ".qweight", std::move(qweight));
  out.emplace_back(prefix + ".qzeros", std::move(qzeros));
  out.emplace_back(prefix + ".scales", std::move(scales));
  return out;
}

}  // namespace hearth::quantizer
