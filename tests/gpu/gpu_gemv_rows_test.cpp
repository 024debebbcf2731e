// The row GEMV's several-row form (kernels::gemv_row with R > 1, used for the dense linears of
// speculative check batches) gives every row exactly the bits the one-row kernel gives it alone,
// with either one-row variant, for single matrices and groups sharing x, with bias and fp32
// outputs; and its values are the product's within fp16 rounding.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "kernels/kernels.h"
#include "tests/gpu/gpu_test_util.h"

namespace hearth {
namespace {

using gpu_test::random_values;

// Device memory freed at the end of the test.
class DeviceArena {
 public:
  ~DeviceArena() {
    for (void* p : blocks_) cudaFree(p);
  }
  void* alloc(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess);
    blocks_.push_back(p);
    return p;
  }
  void* copy(const std::vector<uint16_t>& host) {
    void* p = alloc(host.size() * 2);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
    return p;
  }

 private:
  std::vector<void*> blocks_;
};

std::vector<uint16_t> to_half(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_half(v[i]);
  return h;
}

struct MatrixCase {
  int64_t n;
  bool bias;
  bool f32_out;
};

// One launch of gemv_row over the first `rows` rows of x; returns each matrix's output as
// raw 32-bit words per value (fp16 outputs widened bit-exactly through their 16 bits).
std::vector<std::vector<uint32_t>> run(DeviceArena& arena, const std::vector<MatrixCase>& cases,
                                       const std::vector<void*>& weights,
                                       const std::vector<float*>& biases, const void* x,
                                       int64_t rows, int64_t k, int variant) {
  std::vector<kernels::GemvOutput> outs;
  std::vector<void*> buffers;
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t bytes = static_cast<size_t>(rows * cases[i].n) * (cases[i].f32_out ? 4 : 2);
    buffers.push_back(arena.alloc(bytes));
    EXPECT_EQ(cudaMemset(buffers.back(), 0xff, bytes), cudaSuccess);
    outs.push_back({weights[i], biases[i], buffers.back(),
                    cases[i].f32_out ? kernels::Elem::kF32 : kernels::Elem::kF16, cases[i].n});
  }
  EXPECT_EQ(kernels::gemv_row({nullptr, false, 0}, kernels::Elem::kF16, outs.data(),
                              static_cast<int>(outs.size()), x, rows, k, variant),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::vector<uint32_t>> result;
  for (size_t i = 0; i < cases.size(); ++i) {
    const size_t count = static_cast<size_t>(rows * cases[i].n);
    std::vector<uint32_t> words(count);
    if (cases[i].f32_out) {
      EXPECT_EQ(cudaMemcpy(words.data(), buffers[i], count * 4, cudaMemcpyDeviceToHost),
                cudaSuccess);
    } else {
      std::vector<uint16_t> h(count);
      EXPECT_EQ(cudaMemcpy(h.data(), buffers[i], count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
      for (size_t j = 0; j < count; ++j) words[j] = h[j];
    }
    result.push_back(std::move(words));
  }
  return result;
}

float value_of(uint32_t word, bool f32) {
  if (!f32) return half_to_float(static_cast<uint16_t>(word));
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

TEST(GpuGemvRows, EveryRowGetsTheBitsOfItsOneRowProduct) {
  HEARTH_REQUIRE_GPU();
  struct Case {
    std::string name;
    int64_t k;
    std::vector<MatrixCase> matrices;
  };
  // K not a multiple of 256 (lanes with fewer chunks than others), a matrix alone, and q/k/v-like
  // groups sharing x with a bias and fp32 outputs.
  const std::vector<Case> cases = {
      {"one matrix, K 1032", 1032, {{300, false, false}}},
      {"one matrix, K 4096", 4096, {{1000, true, false}}},
      {"group of three", 2056, {{512, true, false}, {64, false, true}, {200, true, true}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    DeviceArena arena;
    const int64_t max_rows = kernels::kGemvRowsMaxRows;
    const auto x_host = to_half(random_values(static_cast<size_t>(max_rows * c.k), 3, 1.0f));
    void* x = arena.copy(x_host);
    std::vector<void*> weights;
    std::vector<float*> biases;
    std::vector<std::vector<uint16_t>> w_host;
    std::vector<std::vector<float>> b_host;
    for (size_t i = 0; i < c.matrices.size(); ++i) {
      const MatrixCase& m = c.matrices[i];
      w_host.push_back(to_half(random_values(static_cast<size_t>(m.n * c.k), 10 + i, 0.05f)));
      weights.push_back(arena.copy(w_host.back()));
      b_host.push_back(m.bias ? random_values(static_cast<size_t>(m.n), 20 + i, 0.5f)
                              : std::vector<float>());
      float* b = nullptr;
      if (m.bias) {
        b = static_cast<float*>(arena.alloc(b_host.back().size() * 4));
        EXPECT_EQ(
            cudaMemcpy(b, b_host.back().data(), b_host.back().size() * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
      }
      biases.push_back(b);
    }
    // Each row alone, with both one-row variants (the same chunk order: the same bits).
    std::vector<std::vector<std::vector<uint32_t>>> alone;
    for (int64_t r = 0; r < max_rows; ++r) {
      const void* xr = static_cast<const uint16_t*>(x) + r * c.k;
      alone.push_back(run(arena, c.matrices, weights, biases, xr, 1, c.k, 0));
      EXPECT_EQ(run(arena, c.matrices, weights, biases, xr, 1, c.k, 1), alone.back())
          << "row " << r << ": the one-row variants differ";
    }
    for (int64_t rows = 2; rows <= max_rows; ++rows) {
      const auto together = run(arena, c.matrices, weights, biases, x, rows, c.k, 0);
      for (size_t i = 0; i < c.matrices.size(); ++i) {
        const int64_t n = c.matrices[i].n;
        for (int64_t r = 0; r < rows; ++r) {
          const bool same = std::equal(together[i].begin() + r * n,
                                       together[i].begin() + (r + 1) * n, alone[r][i].begin());
          EXPECT_TRUE(same) << "matrix " << i << ", row " << r << " of " << rows;
        }
      }
    }
    // The values: the product in double, within the output's rounding and fp32 accumulation.
    const auto all = run(arena, c.matrices, weights, biases, x, max_rows, c.k, 0);
    for (size_t i = 0; i < c.matrices.size(); ++i) {
      const MatrixCase& m = c.matrices[i];
      double worst = 0, largest = 0;
      for (int64_t r = 0; r < max_rows; ++r) {
        for (int64_t f = 0; f < m.n; ++f) {
          double ref = m.bias ? b_host[i][f] : 0.0;
          for (int64_t j = 0; j < c.k; ++j) {
            ref +=
                double(half_to_float(w_host[i][f * c.k + j])) * half_to_float(x_host[r * c.k + j]);
          }
          const double got = value_of(all[i][r * m.n + f], m.f32_out);
          worst = std::max(worst, std::abs(got - ref));
          largest = std::max(largest, std::abs(ref));
        }
      }
      EXPECT_LE(worst, (m.f32_out ? 1e-5 : 2e-3) * largest + 1e-6)
          << "matrix " << i << ": largest error " << worst << " at values up to " << largest;
    }
  }
}

TEST(GpuGemvRows, RowCountsOutsideTheKernelAreRefused) {
  HEARTH_REQUIRE_GPU();
  DeviceArena arena;
  void* w = arena.alloc(64 * 64 * 2);
  void* x = arena.alloc(64 * 64 * 2);
  void* out = arena.alloc(64 * 64 * 2);
  const kernels::GemvOutput o{w, nullptr, out, kernels::Elem::kF16, 64};
  for (int64_t rows : {int64_t{0}, int64_t{kernels::kGemvRowsMaxRows + 1}}) {
    EXPECT_EQ(kernels::gemv_row({nullptr, false, 0}, kernels::Elem::kF16, &o, 1, x, rows, 64),
              cudaErrorInvalidValue)
        << rows << " rows";
  }
}

}  // namespace
}  // namespace hearth
