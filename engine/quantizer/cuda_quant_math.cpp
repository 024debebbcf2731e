#include "engine/quantizer/cuda_quant_math.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/device_memory.h"
#include "engine/core/error.h"
#include "engine/quantizer/group_quantizer.h"
#include "kernels/quantizer_kernels.h"

namespace hearth::quantizer {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    fail(e == cudaErrorMemoryAllocation ? ErrorCode::kOutOfMemory : ErrorCode::kBackend,
         std::string("quantizer: ") + what + ": " + cudaGetErrorString(e));
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    fail(ErrorCode::kBackend, std::string("quantizer: ") + what + ": cuBLAS status " +
                                  std::to_string(static_cast<int>(s)));
  }
}

// A device buffer that grows as needed.
struct Buffer {
  void* p = nullptr;
  size_t bytes = 0;
  float* floats(size_t n) {
    if (n * sizeof(float) > bytes) {
      if (p) cudaFree(p);
      p = nullptr;
      check(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
      bytes = n * sizeof(float);
    }
    return static_cast<float*>(p);
  }
  ~Buffer() {
    if (p) cudaFree(p);
  }
};

}  // namespace

bool cuda_quant_math_available() {
  return cuda_available();  // a driver, a GPU the kernels run on, and cuBLAS
}

struct CudaQuantMath::Impl {
  int device = 0;
  cublasHandle_t blas = nullptr;
  Buffer a, b;
  std::vector<double> host_block;  // the Cholesky's diagonal block, factored on the host
  Buffer gw, gu, gerr, gdeq, gscale, gzero, gtmp1, gtmp2, gpart;
  Buffer gperm, gcolerr, gsrc, gqscale, gscales, gqmax;
  cuda::PinnedBuffer stage;  // host side of the reconstruction's download
  void* gcodes = nullptr;
  size_t gcodes_bytes = 0;
  int* info = nullptr;
  uint64_t u_id = 0;  // the PreparedHessian whose factor gu holds (0: none)
  uint64_t w_id = 0;  // the LinearWeights whose [N, K] weight gsrc holds (0: none)
  uint8_t* codes(size_t bytes) {
    if (bytes > gcodes_bytes) {
      if (gcodes) cudaFree(gcodes);
      gcodes = nullptr;
      check(cudaMalloc(&gcodes, bytes), "cudaMalloc");
      gcodes_bytes = bytes;
    }
    return static_cast<uint8_t*>(gcodes);
  }
  ~Impl() {
    if (gcodes) cudaFree(gcodes);
    if (info) cudaFree(info);
    if (blas) cuda::cublas().Destroy(blas);
  }
};

CudaQuantMath::CudaQuantMath(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cuda::cublas().Create(&impl_->blas), "cublasCreate");
  // Plain fp32 (no TF32): the results are compared with the CPU reference.
  check(cuda::cublas().SetMathMode(impl_->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check(cudaMalloc(reinterpret_cast<void**>(&impl_->info), sizeof(int)), "cudaMalloc");
}

CudaQuantMath::~CudaQuantMath() = default;

CudaQuantMath::GramSum::GramSum(CudaQuantMath& math, int64_t k) : math_(math), k_(k) {
  check(cudaSetDevice(math.impl_->device), "cudaSetDevice");
  const size_t bytes = static_cast<size_t>(k * k) * sizeof(double);
  check(cudaMalloc(reinterpret_cast<void**>(&sum_), bytes), "cudaMalloc");
  check(cudaMemset(sum_, 0, bytes), "cudaMemset");
}

CudaQuantMath::GramSum::~GramSum() {
  if (sum_) cudaFree(sum_);
}

std::unique_ptr<CudaQuantMath::GramSum> CudaQuantMath::gram_sum(int64_t k) {
  return std::unique_ptr<GramSum>(new GramSum(*this, k));
}

void CudaQuantMath::GramSum::add(const float* x, int64_t rows) {
  if (rows <= 0) return;
  Impl& m = *math_.impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const int64_t k = k_;
  const size_t nx = static_cast<size_t>(rows * k), ng = static_cast<size_t>(k * k);
  float* dx = m.a.floats(nx);
  float* dg = m.b.floats(ng);
  check(cudaMemcpy(dx, x, nx * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  // Row-major x [rows, k] is column-major [k, rows]: G = A·Aᵀ with A = that matrix. The upper
  // triangle in column-major order is the lower one in row-major order.
  const float one = 1.0f, zero = 0.0f;
  check(cuda::cublas().Ssyrk(m.blas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, static_cast<int>(k),
                             static_cast<int>(rows), &one, dx, static_cast<int>(k), &zero, dg,
                             static_cast<int>(k)),
        "cublasSsyrk");
  check(kernels::quantizer_accumulate_lower(nullptr, dg, k, sum_), "accumulate");
  tokens_ += rows;
}

std::vector<float> CudaQuantMath::GramSum::finish() const {
  Impl& m = *math_.impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const int64_t k = k_;
  std::vector<float> h(static_cast<size_t>(k * k), 0.0f);
  if (tokens_ == 0) {
    for (int64_t i = 0; i < k; ++i) h[i * k + i] = 1.0f;
    return h;
  }
  float* dh = m.b.floats(static_cast<size_t>(k * k));
  check(kernels::quantizer_finish_hessian(nullptr, sum_, k, 2.0 / static_cast<double>(tokens_), dh),
        "finish Hessian");
  check(cudaMemcpy(h.data(), dh, h.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy Hessian");
  return h;
}

namespace {

// The lower Cholesky factor of the symmetric n×n column-major matrix `a` (lower triangle read),
// in place, blocked right-looking: each diagonal block is factored on the host in double (small:
// kBlock² elements), the panel below it solved against it (Strsm) and the trailing matrix
// updated (Ssyrk) on the device. Done with cuBLAS alone so that the package need not ship
// cuSOLVER (and the cuSPARSE and nvJitLink it needs, 400 MB). False when a pivot is not
// positive and finite.
bool cholesky_lower_on_device(cublasHandle_t blas, float* a, int n, std::vector<double>& host) {
  constexpr int kBlock = 256;
  const cuda::CublasApi& api = cuda::cublas();
  std::vector<float> block;
  for (int j0 = 0; j0 < n; j0 += kBlock) {
    const int jb = std::min(kBlock, n - j0);
    float* a11 = a + j0 + static_cast<size_t>(j0) * n;
    block.resize(static_cast<size_t>(jb) * jb);
    check(cudaMemcpy2D(block.data(), jb * sizeof(float), a11, n * sizeof(float), jb * sizeof(float),
                       jb, cudaMemcpyDeviceToHost),
          "copy a diagonal block");
    // Row-major on the host (element (r, c) at r·jb + c), so that the dot products below run
    // along contiguous rows; only the lower triangle is current (Ssyrk updates only that).
    host.assign(static_cast<size_t>(jb) * jb, 0.0);
    for (int c = 0; c < jb; ++c) {
      for (int r = c; r < jb; ++r) host[r * jb + c] = block[r + c * jb];
    }
    for (int c = 0; c < jb; ++c) {
      const double* row_c = &host[static_cast<size_t>(c) * jb];
      double d = row_c[c];
      for (int p = 0; p < c; ++p) d -= row_c[p] * row_c[p];
      if (!(d > 0.0) || !std::isfinite(d)) return false;
      const double pivot = std::sqrt(d);
      host[c * jb + c] = pivot;
      for (int r = c + 1; r < jb; ++r) {
        double* row_r = &host[static_cast<size_t>(r) * jb];
        double v = row_r[c];
        for (int p = 0; p < c; ++p) v -= row_r[p] * row_c[p];
        row_r[c] = v / pivot;
      }
    }
    for (int c = 0; c < jb; ++c) {
      for (int r = c; r < jb; ++r) block[r + c * jb] = static_cast<float>(host[r * jb + c]);
    }
    check(cudaMemcpy2D(a11, n * sizeof(float), block.data(), jb * sizeof(float), jb * sizeof(float),
                       jb, cudaMemcpyHostToDevice),
          "copy a diagonal block back");
    const int rest = n - j0 - jb;
    if (rest == 0) break;
    float* a21 = a11 + jb;  // the panel below the block
    float* a22 = a21 + static_cast<size_t>(jb) * n;
    const float one = 1.0f, minus_one = -1.0f;
    check(api.Strsm(blas, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T,
                    CUBLAS_DIAG_NON_UNIT, rest, jb, &one, a11, n, a21, n),
          "cublasStrsm (Cholesky panel)");
    check(api.Ssyrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, rest, jb, &minus_one, a21, n, &one,
                    a22, n),
          "cublasSsyrk (Cholesky update)");
  }
  return true;
}

}  // namespace

bool CudaQuantMath::inverse_upper_cholesky(const std::vector<float>& h, int64_t n,
                                           std::vector<float>& u) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const size_t nn = static_cast<size_t>(n * n);
  // R = J·h·J (the flat reversal), factored as lower L·Lᵀ; then X = L⁻¹ by a triangular solve
  // and U = J·X·J (upper): every step on the device, one matrix each way.
  float* dx = m.b.floats(nn);
  check(cudaMemcpy(dx, h.data(), nn * sizeof(float), cudaMemcpyHostToDevice), "copy H");
  float* dr = m.a.floats(nn);
  check(kernels::quantizer_reverse(nullptr, dx, static_cast<int64_t>(nn), dr), "reverse");
  const int ni = static_cast<int>(n);
  if (!cholesky_lower_on_device(m.blas, dr, ni, m.host_block)) return false;
  check(kernels::quantizer_identity(nullptr, dx, n), "identity");
  const float one = 1.0f;
  check(cuda::cublas().Strsm(m.blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                             CUBLAS_DIAG_NON_UNIT, ni, ni, &one, dr, ni, dx, ni),
        "cublasStrsm");
  // dr is free again: the flipped upper factor goes there.
  check(kernels::quantizer_flip_upper(nullptr, dx, n, dr, m.info), "flip");
  int bad = 0;
  check(cudaMemcpy(&bad, m.info, sizeof(int), cudaMemcpyDeviceToHost), "copy flag");
  if (bad != 0) return false;
  u.resize(nn);
  check(cudaMemcpy(u.data(), dr, nn * sizeof(float), cudaMemcpyDeviceToHost), "copy U");
  return true;
}

// GPTQ on the device-resident working matrix W [k, n] (impl.gw) with U [k, k] (impl.gu):
// codes into impl.gcodes, the reconstruction into impl.gdeq; returns the group parameters and
// the proxy error.
GptqResult CudaQuantMath::run_gptq(int64_t k, int64_t n, const std::vector<GptqGroupSpec>& groups,
                                   GroupQuantizerKind kind, int64_t block, bool want_params) {
  Impl& m = *impl_;
  const cudaStream_t st = nullptr;  // the legacy stream: cuBLAS and the kernels stay in order
  float* W = m.gw.floats(static_cast<size_t>(k * n));
  float* U = m.gu.floats(static_cast<size_t>(k * k));
  float* E = m.gerr.floats(static_cast<size_t>(block * n));
  float* D = m.gdeq.floats(static_cast<size_t>(k * n));
  float* S = m.gscale.floats(static_cast<size_t>(n));
  float* Z = m.gzero.floats(static_cast<size_t>(n));
  float* T1 = m.gtmp1.floats(static_cast<size_t>(n));
  float* T2 = m.gtmp2.floats(static_cast<size_t>(n));
  float* P = m.gpart.floats(static_cast<size_t>(exl2_grid_size()) * ((n + 255) / 256) + 128);
  uint8_t* C = m.codes(static_cast<size_t>(k * n));
  // EXL2: every group's scale codes, scales and q_scale_max, kept until the end.
  const size_t G = groups.size();
  auto* QS = reinterpret_cast<uint8_t*>(m.gqscale.floats((G * n + 3) / 4));
  float* SALL = m.gscales.floats(G * n);
  float* QMAX = m.gqmax.floats(G + 1);
  float* SMAX = QMAX + G;

  GptqResult res;
  res.params.reserve(groups.size());
  std::vector<float> hlo(static_cast<size_t>(n)), hhi(static_cast<size_t>(n));
  auto* E2 = reinterpret_cast<double*>(m.gcolerr.floats(static_cast<size_t>(2 * n)));
  check(cudaMemsetAsync(E2, 0, static_cast<size_t>(n) * sizeof(double), st), "clear errors");
  int64_t expect = 0;
  for (const GptqGroupSpec& g : groups) {
    HEARTH_CHECK(g.row_begin == expect && g.rows > 0, "GPTQ: groups must tile K");
    expect += g.rows;
    // Group parameters from the group's current rows.
    const float maxq = static_cast<float>((1 << g.bits) - 1);
    const float* Wg = W + g.row_begin * n;
    GroupParams params;
    auto t = time_phase(times_, "gptq: groups");
    if (kind == GroupQuantizerKind::kExl2) {
      // Everything on the device (no round trip per group); the parameters come back at the
      // end, and only when asked for.
      const size_t gi = res.params.size();
      check(kernels::quantizer_column_absmax(st, Wg, g.rows, n, maxq, T1), "absmax");
      check(kernels::quantizer_exl2_candidates(st, T1, n, QS + gi * n, T2, SMAX), "candidates");
      float* dev_err = P + static_cast<size_t>(exl2_grid_size()) * ((n + 255) / 256);
      check(kernels::quantizer_pgrid_error(st, Wg, g.rows, n, T2,
                                           static_cast<float>(1 << (g.bits - 1)), maxq, P, dev_err),
            "grid error");
      check(kernels::quantizer_exl2_params(st, dev_err, SMAX, QS + gi * n, n, g.bits, S, Z,
                                           SALL + gi * n, QMAX + gi),
            "group parameters");
      params.bits = g.bits;
    } else {
      check(kernels::quantizer_column_minmax(st, Wg, g.rows, n, T1, T2), "minmax");
      check(cudaMemcpy(hlo.data(), T1, hlo.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copy minima");
      check(cudaMemcpy(hhi.data(), T2, hhi.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copy maxima");
      params = gptq_params_from(hlo, hhi, g.bits, kind == GroupQuantizerKind::kGptqSymmetric);
      check(cudaMemcpy(S, params.scale.data(), params.scale.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            "copy scale");
      check(cudaMemcpy(Z, params.zero.data(), params.zero.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            "copy zero");
    }
    res.params.push_back(std::move(params));
    t.stop();
    // The group's rows, in blocks of at most `block`.
    for (int64_t b0 = g.row_begin; b0 < g.row_begin + g.rows; b0 += block) {
      const int64_t b1 = std::min(b0 + block, g.row_begin + g.rows);
      check(kernels::quantizer_quantize_block(st, W, n, k, U, b0, b1, S, Z, maxq, C, D, E, E2),
            "quantize block");
      const int64_t bw = b1 - b0;
      if (b1 < k) {
        // W[b1:, :] −= U[b0:b1, b1:]ᵀ · E (column-major: C[n × (k−b1)] −= A[n × bw] · Bᵀ).
        const float minus = -1.0f, one = 1.0f;
        check(cuda::cublas().Sgemm(m.blas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(n),
                                   static_cast<int>(k - b1), static_cast<int>(bw), &minus, E,
                                   static_cast<int>(n), U + b0 * k + b1, static_cast<int>(k), &one,
                                   W + b1 * n, static_cast<int>(n)),
              "cublasSgemm");
      }
    }
  }
  HEARTH_CHECK(expect == k, "GPTQ: groups do not cover K");
  if (kind == GroupQuantizerKind::kExl2 && want_params) {
    auto t = time_phase(times_, "gptq: copies");
    std::vector<uint8_t> qs(G * n);
    std::vector<float> scales(G * n), qmax(G);
    check(cudaMemcpy(qs.data(), QS, qs.size(), cudaMemcpyDeviceToHost), "copy scale codes");
    check(cudaMemcpy(scales.data(), SALL, scales.size() * sizeof(float), cudaMemcpyDeviceToHost),
          "copy scales");
    check(cudaMemcpy(qmax.data(), QMAX, qmax.size() * sizeof(float), cudaMemcpyDeviceToHost),
          "copy maxima");
    for (size_t gi = 0; gi < G; ++gi) {
      GroupParams& p = res.params[gi];
      p.qscale.assign(qs.begin() + gi * n, qs.begin() + (gi + 1) * n);
      p.scale.assign(scales.begin() + gi * n, scales.begin() + (gi + 1) * n);
      p.zero.assign(n, static_cast<float>(1 << (p.bits - 1)));
      p.qscale_max = qmax[gi];
    }
  }
  // Σ e² per column, summed in column order (deterministic).
  std::vector<double> e2(static_cast<size_t>(n));
  check(cudaMemcpy(e2.data(), E2, e2.size() * sizeof(double), cudaMemcpyDeviceToHost),
        "copy errors");
  double proxy = 0;
  for (double v : e2) proxy += v;
  res.proxy_error = proxy;
  return res;
}

GptqResult CudaQuantMath::gptq(std::vector<float>& w, int64_t k, int64_t n,
                               const std::vector<float>& hinv_upper,
                               const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind,
                               int64_t block) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const size_t nw = static_cast<size_t>(k * n);
  check(cudaMemcpy(m.gw.floats(nw), w.data(), nw * sizeof(float), cudaMemcpyHostToDevice),
        "copy W");
  m.u_id = 0;  // U is replaced by a factor no PreparedHessian names
  check(cudaMemcpy(m.gu.floats(static_cast<size_t>(k * k)), hinv_upper.data(),
                   static_cast<size_t>(k * k) * sizeof(float), cudaMemcpyHostToDevice),
        "copy U");
  GptqResult res = run_gptq(k, n, groups, kind, block, true);
  res.codes.resize(nw);
  res.dequantized.resize(nw);
  check(cudaMemcpy(res.codes.data(), m.gcodes, nw, cudaMemcpyDeviceToHost), "copy codes");
  check(cudaMemcpy(res.dequantized.data(), m.gdeq.p, nw * sizeof(float), cudaMemcpyDeviceToHost),
        "copy reconstruction");
  check(cudaMemcpy(w.data(), m.gw.p, nw * sizeof(float), cudaMemcpyDeviceToHost), "copy W");
  return res;
}

GptqLinearResult CudaQuantMath::gptq_linear(const LinearWeights& w, int64_t n_pad,
                                            const PreparedHessian& h,
                                            const std::vector<GptqGroupSpec>& groups,
                                            GroupQuantizerKind kind, bool want_codes,
                                            std::vector<float> storage, int64_t block) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const int64_t n = w.out_features, k = w.in_features;
  HEARTH_CHECK(static_cast<int64_t>(w.weight.size()) == n * k && h.k == k && n_pad >= n,
               "gptq_linear: shapes");
  const size_t nk = static_cast<size_t>(n * k), nw = static_cast<size_t>(k * n_pad);
  float* src = m.gsrc.floats(nk);
  auto* dinv = reinterpret_cast<int32_t*>(m.gperm.floats(static_cast<size_t>(k)));
  {
    auto t = time_phase(times_, "gptq: copies");
    // The weight stays on the device for every setting measured on it (same id).
    if (m.w_id != w.id || w.id == 0) {
      m.w_id = 0;
      check(cudaMemcpy(src, w.weight.data(), nk * sizeof(float), cudaMemcpyHostToDevice), "copy W");
      m.w_id = w.id;
    }
    // U as well, for every setting measured against the same Hessian.
    if (m.u_id != h.id || h.id == 0) {
      m.u_id = 0;
      check(cudaMemcpy(m.gu.floats(static_cast<size_t>(k * k)), h.hinv_upper.data(),
                       static_cast<size_t>(k * k) * sizeof(float), cudaMemcpyHostToDevice),
            "copy U");
      m.u_id = h.id;
    }
    std::vector<int32_t> inv(static_cast<size_t>(k));
    for (int64_t s = 0; s < k; ++s) inv[static_cast<size_t>(h.perm[s])] = static_cast<int32_t>(s);
    check(cudaMemcpy(dinv, inv.data(), inv.size() * sizeof(int32_t), cudaMemcpyHostToDevice),
          "copy permutation");
  }
  // W [N, K] → the working matrix [K, n_pad], rows in act-order.
  float* W = m.gw.floats(std::max(nk, nw));
  check(kernels::quantizer_permute_transpose(nullptr, src, n, k, dinv, n_pad, W), "permute");
  GptqResult r = run_gptq(k, n_pad, groups, kind, block, want_codes);
  GptqLinearResult out;
  out.params = std::move(r.params);
  out.proxy_error = r.proxy_error;
  // The reconstruction back to [N, K] in input order, into W's buffer (GPTQ is done with it).
  check(kernels::quantizer_unpermute(nullptr, static_cast<const float*>(m.gdeq.p), k, n, n_pad,
                                     dinv, W),
        "unpermute");
  auto t = time_phase(times_, "gptq: copies");
  // Through a pinned buffer: a direct copy into pageable memory runs at a fraction of the speed.
  if (m.stage.size() < nk * sizeof(float)) m.stage = cuda::PinnedBuffer(nk * sizeof(float));
  check(cudaMemcpy(m.stage.get(), W, nk * sizeof(float), cudaMemcpyDeviceToHost),
        "copy reconstruction");
  const float* staged = m.stage.as<float>();
  out.reconstruction = std::move(storage);
  out.reconstruction.resize(nk);  // a no-op for a reused buffer of this size
  std::memcpy(out.reconstruction.data(), staged, nk * sizeof(float));
  if (want_codes) {
    out.codes.resize(nw);
    check(cudaMemcpy(out.codes.data(), m.gcodes, nw, cudaMemcpyDeviceToHost), "copy codes");
  }
  return out;
}

}  // namespace hearth::quantizer
