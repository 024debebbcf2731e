// Helpers for running the same op on the CPU reference backend and the CUDA backend through
// the Backend interface. Inputs reach a backend's activations through embed(): a test uploads
// its values as an "embedding table" whose row r is the input row r, and batches use token id r
// for row r. Inputs are rounded to fp16 first, so both backends start from identical values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/core/dtype.h"

namespace hearth::gpu_test {

inline bool have_gpu() {
  return cuda_device_count() > 0;
}

#define HEARTH_REQUIRE_GPU()               \
  do {                                     \
    if (!::hearth::gpu_test::have_gpu()) { \
      GTEST_SKIP() << "skipped: no GPU";   \
    }                                      \
  } while (0)

inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform values in [-scale, scale), rounded to the given 16-bit type.
inline std::vector<float> random_values(size_t n, uint64_t seed, float scale,
                                        DType round_to = DType::kF16) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t z = mix(seed * 0x9e3779b97f4a7c15ull + i + 1);
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    const float x = (2.0f * u - 1.0f) * scale;
    v[i] = round_to == DType::kBF16 ? bf16_to_float(float_to_bf16(x))
                                    : half_to_float(float_to_half(x));
  }
  return v;
}

// A batch whose row r carries token id r (so embed() can load row r of a test table).
struct TestBatch {
  struct Seq {
    int32_t start_pos = 0;
    int32_t count = 0;
    std::vector<int32_t> pages;
    bool all_logits = false;
  };
  std::vector<Seq> seqs;
  std::vector<std::vector<int32_t>> token_storage;

  int64_t rows() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += s.count;
    return n;
  }
  BatchDesc desc() {
    token_storage.clear();
    BatchDesc d;
    int32_t row = 0;
    for (const auto& s : seqs) {
      std::vector<int32_t> t(static_cast<size_t>(s.count));
      for (auto& id : t) id = row++;
      token_storage.push_back(std::move(t));
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      SequenceSlice slice;
      slice.tokens = token_storage[i];
      slice.start_pos = seqs[i].start_pos;
      slice.page_table = seqs[i].pages;
      slice.all_logits = seqs[i].all_logits;
      d.seqs.push_back(slice);
    }
    return d;
  }
};

// Loads `values` ([rows, cols]) into the first rows of `t` through embed (batch prepared with
// the TestBatch token layout; rows past `rows` get row 0). `keep` holds the table alive.
inline void load(Backend& b, const std::vector<float>& values, int64_t rows, int64_t cols,
                 DeviceTensor t, int64_t prepared_rows,
                 std::vector<std::unique_ptr<BackendWeight>>& keep) {
  keep.push_back(b.upload(HostTensor::from_floats(values, {rows, cols})));
  b.embed(*keep.back(), t.first_rows(prepared_rows));
}

struct Diff {
  double nmse = 0;     // Σ(a-b)² / Σb²
  double max_abs = 0;  // max |a-b|
  double max_ref = 0;  // max |b|
  int64_t worst = -1;  // index of max_abs
  bool finite = true;
  std::string str() const {
    return "nmse " + std::to_string(nmse) + ", max |err| " + std::to_string(max_abs) + " at " +
           std::to_string(worst) + ", max |ref| " + std::to_string(max_ref) +
           (finite ? "" : ", NOT FINITE");
  }
};

inline Diff compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Diff d;
  double num = 0, den = 0;
  const size_t n = std::min(got.size(), ref.size());
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(got[i])) d.finite = false;
    const double e = static_cast<double>(got[i]) - ref[i];
    num += e * e;
    den += static_cast<double>(ref[i]) * ref[i];
    if (std::fabs(e) > d.max_abs) {
      d.max_abs = std::fabs(e);
      d.worst = static_cast<int64_t>(i);
    }
    d.max_ref = std::max(d.max_ref, std::fabs(static_cast<double>(ref[i])));
  }
  d.nmse = den > 0 ? num / den : num;
  if (got.size() != ref.size()) d.finite = false;
  return d;
}

// Element-wise |got - ref| <= atol + rtol |ref| for all elements; returns the first failure.
inline int64_t first_outside(const std::vector<float>& got, const std::vector<float>& ref,
                             double atol, double rtol) {
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(e <= atol + rtol * std::fabs(static_cast<double>(ref[i]))))
      return static_cast<int64_t>(i);
  }
  return -1;
}

// Adapters on three linears of one x (q/k/v-like; outs: their widths), in three slots: slot 0
// rank 8 on linears 0 and 2, slot 2 rank 16 on all three, slot 5 rank 4 on linear 1, each with
// its own scale; A and B random, drawn from `seed` on.
inline LoraSource three_slot_lora(int64_t in, const std::vector<int64_t>& outs, uint64_t seed) {
  LoraSource lora;
  lora.name = "test q/k/v";
  lora.in_features = in;
  lora.out_features = outs;
  const struct {
    int slot, rank;
    std::vector<int> targets;
    float scale;
  } adapters[] = {{0, 8, {0, 2}, 2.0f}, {2, 16, {0, 1, 2}, 0.7f}, {5, 4, {1}, 4.0f}};
  for (const auto& a : adapters) {
    for (int target : a.targets) {
      const int64_t out = outs[static_cast<size_t>(target)];
      lora.parts.push_back(
          {target, a.slot,
           HostTensor::from_floats(random_values(static_cast<size_t>(a.rank * in), seed, 0.05f),
                                   {a.rank, in}),
           HostTensor::from_floats(random_values(static_cast<size_t>(out * a.rank), seed + 1, 0.1f),
                                   {out, a.rank}),
           a.scale});
      seed += 2;
    }
  }
  return lora;
}

}  // namespace hearth::gpu_test
