#include "engine/quantizer/gptq_solver.h"

#include <algorithm>

#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/error.h"
#include "engine/core/thread_pool.h"

namespace hearth::quantizer {
namespace {

constexpr int64_t kColumnTile = 256;  // columns per work item in the parallel updates

}  // namespace

GptqResult gptq_quantize(std::vector<float>& w, int64_t k, int64_t n,
                         const std::vector<float>& hinv_upper,
                         const std::vector<GptqGroupSpec>& groups, const FindParams& find_params,
                         ThreadPool& pool, int64_t block, CpuMathPath path) {
  HEARTH_CHECK(static_cast<int64_t>(w.size()) == k * n, "GPTQ: weight size");
  HEARTH_CHECK(static_cast<int64_t>(hinv_upper.size()) == k * k, "GPTQ: Hessian size");
  GptqResult res;
  res.codes.assign(static_cast<size_t>(k * n), 0);
  res.dequantized.assign(static_cast<size_t>(k * n), 0.0f);
  res.params.reserve(groups.size());
  const float* U = hinv_upper.data();
  float* W = w.data();
  std::vector<float> err(static_cast<size_t>(std::max<int64_t>(block, 1) * n));
  const int64_t tiles = (n + kColumnTile - 1) / kColumnTile;

  // Blocks never straddle a group boundary: parameters are found at the start of a block.
  struct Block {
    int64_t begin, end;
    size_t group;
    bool starts_group;
  };
  std::vector<Block> blocks;
  int64_t expect = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    HEARTH_CHECK(groups[g].row_begin == expect && groups[g].rows > 0, "GPTQ: groups must tile K");
    for (int64_t r = 0; r < groups[g].rows; r += block) {
      const int64_t b0 = groups[g].row_begin + r;
      blocks.push_back({b0, std::min(b0 + block, groups[g].row_begin + groups[g].rows), g, r == 0});
    }
    expect += groups[g].rows;
  }
  HEARTH_CHECK(expect == k, "GPTQ: groups do not cover K");

  double proxy = 0;
  for (const Block& b : blocks) {
    const GptqGroupSpec& gs = groups[b.group];
    if (b.starts_group) {
      res.params.push_back(find_params(W + gs.row_begin * n, gs.rows, n, gs.bits));
    }
    const GroupParams& params = res.params.back();
    const int64_t bw = b.end - b.begin;
    // Row by row within the block: quantize, scale the error, and apply the rank-1 updates of
    // the block's later rows. Columns never interact here, so each column tile runs the whole
    // block on its own (one parallel loop per block, the tile's rows staying in cache).
    pool.parallel_for(tiles, 1, [&](int64_t t0, int64_t t1) {
      // Tiles are processed one by one (never merged into a longer range), so that vector
      // bodies and tails fall on the same columns whatever the thread count.
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t n0 = t * kColumnTile, n1 = std::min(n, n0 + kColumnTile);
        for (int64_t c = b.begin; c < b.end; ++c) {
          const float d = U[c * k + c];
          const float* wc = W + c * n;
          float* ec = err.data() + (c - b.begin) * n;
          quantize_row(wc, params, n0, n1, res.codes.data() + c * n,
                       res.dequantized.data() + c * n);
          const float* dq = res.dequantized.data() + c * n;
          for (int64_t j = n0; j < n1; ++j) ec[j] = (wc[j] - dq[j]) / d;
          for (int64_t i = c + 1; i < b.end; ++i) {
            const float u = U[c * k + i];
            if (u != 0.0f) cpu::axpy(-u, ec + n0, W + i * n + n0, n1 - n0);
          }
        }
      }
    });
    for (int64_t c = 0; c < bw; ++c) {
      const float* ec = err.data() + c * n;
      double e2 = 0;
      for (int64_t j = 0; j < n; ++j) e2 += static_cast<double>(ec[j]) * ec[j];
      proxy += e2;
    }
    // Rows after the block: W[i] −= Σ_{c in block} U[c][i] · err[c].
    if (b.end < k && path == CpuMathPath::kBlas) {
      // As a matrix product: W[b.end:k, :] −= U[block, b.end:k]ᵀ · err.
      blas_subtract_at_b(U + b.begin * k + b.end, k, err.data(), n, k - b.end, n, bw, W + b.end * n,
                         n, pool);
    } else if (b.end < k) {
      // In order of c.
      pool.parallel_for(tiles, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t n0 = t * kColumnTile, n1 = std::min(n, n0 + kColumnTile);
          for (int64_t i = b.end; i < k; ++i) {
            float* wi = W + i * n;
            for (int64_t c = 0; c < bw; ++c) {
              const float u = U[(b.begin + c) * k + i];
              if (u != 0.0f) cpu::axpy(-u, err.data() + c * n + n0, wi + n0, n1 - n0);
            }
          }
        }
      });
    }
  }
  res.proxy_error = proxy;
  return res;
}

}  // namespace hearth::quantizer
