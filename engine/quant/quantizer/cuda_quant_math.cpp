#include "engine/quant/quantizer/cuda_quant_math.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cmath>
#include <string>

#include "engine/core/error.h"
#include "engine/quant/quantizer/group_quantizer.h"
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
void check(cusolverStatus_t s, const char* what) {
  if (s != CUSOLVER_STATUS_SUCCESS) {
    fail(ErrorCode::kBackend, std::string("quantizer: ") + what + ": cuSOLVER status " +
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
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct CudaQuantMath::Impl {
  int device = 0;
  cublasHandle_t blas = nullptr;
  cusolverDnHandle_t solver = nullptr;
  Buffer a, b, work;
  Buffer gw, gu, gerr, gdeq, gscale, gzero, gtmp1, gtmp2, gpart;
  void* gcodes = nullptr;
  size_t gcodes_bytes = 0;
  int* info = nullptr;
  ~Impl() {
    if (gcodes) cudaFree(gcodes);
    if (info) cudaFree(info);
    if (solver) cusolverDnDestroy(solver);
    if (blas) cublasDestroy(blas);
  }
};

CudaQuantMath::CudaQuantMath(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cublasCreate(&impl_->blas), "cublasCreate");
  check(cusolverDnCreate(&impl_->solver), "cusolverDnCreate");
  // Plain fp32 (no TF32): the results are compared with the CPU reference.
  check(cublasSetMathMode(impl_->blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check(cudaMalloc(reinterpret_cast<void**>(&impl_->info), sizeof(int)), "cudaMalloc");
}

CudaQuantMath::~CudaQuantMath() = default;

std::vector<float> CudaQuantMath::gram(const float* x, int64_t rows, int64_t k) {
  check(cudaSetDevice(impl_->device), "cudaSetDevice");
  const size_t nx = static_cast<size_t>(rows * k), ng = static_cast<size_t>(k * k);
  float* dx = impl_->a.floats(nx);
  float* dg = impl_->b.floats(ng);
  check(cudaMemcpy(dx, x, nx * sizeof(float), cudaMemcpyHostToDevice), "copy x");
  // Row-major x [rows, k] is column-major [k, rows]: G = A·Aᵀ with A = that matrix.
  const float one = 1.0f, zero = 0.0f;
  check(cublasSsyrk(impl_->blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, static_cast<int>(k),
                    static_cast<int>(rows), &one, dx, static_cast<int>(k), &zero, dg,
                    static_cast<int>(k)),
        "cublasSsyrk");
  std::vector<float> g(ng);
  check(cudaMemcpy(g.data(), dg, ng * sizeof(float), cudaMemcpyDeviceToHost), "copy gram");
  // Column-major lower = row-major upper: mirror to a full matrix.
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < i; ++j) g[i * k + j] = g[j * k + i];
  }
  return g;
}

bool CudaQuantMath::inverse_upper_cholesky(const std::vector<float>& h, int64_t n,
                                           std::vector<float>& u) {
  check(cudaSetDevice(impl_->device), "cudaSetDevice");
  const size_t nn = static_cast<size_t>(n * n);
  std::vector<float> r(nn);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) r[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
  }
  float* dr = impl_->a.floats(nn);
  float* dx = impl_->b.floats(nn);
  check(cudaMemcpy(dr, r.data(), nn * sizeof(float), cudaMemcpyHostToDevice), "copy H");
  int lwork = 0;
  const int ni = static_cast<int>(n);
  check(cusolverDnSpotrf_bufferSize(impl_->solver, CUBLAS_FILL_MODE_LOWER, ni, dr, ni, &lwork),
        "potrf buffer size");
  float* dw = impl_->work.floats(static_cast<size_t>(std::max(lwork, 1)));
  check(cusolverDnSpotrf(impl_->solver, CUBLAS_FILL_MODE_LOWER, ni, dr, ni, dw, lwork, impl_->info),
        "cusolverDnSpotrf");
  int info = 0;
  check(cudaMemcpy(&info, impl_->info, sizeof(int), cudaMemcpyDeviceToHost), "copy info");
  if (info != 0) return false;
  // X = L⁻¹: solve L·X = I.
  std::vector<float> eye(nn, 0.0f);
  for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1.0f;
  check(cudaMemcpy(dx, eye.data(), nn * sizeof(float), cudaMemcpyHostToDevice), "copy I");
  const float one = 1.0f;
  check(cublasStrsm(impl_->blas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                    CUBLAS_DIAG_NON_UNIT, ni, ni, &one, dr, ni, dx, ni),
        "cublasStrsm");
  std::vector<float> x(nn);
  check(cudaMemcpy(x.data(), dx, nn * sizeof(float), cudaMemcpyDeviceToHost), "copy L^-1");
  // x is column-major: X(i, j) = x[j·n + i]. U = J·X·J, upper.
  u.assign(nn, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      const float v = x[(n - 1 - j) * n + (n - 1 - i)];
      if (!std::isfinite(v)) return false;
      u[i * n + j] = v;
    }
  }
  return true;
}

GptqResult CudaQuantMath::gptq(std::vector<float>& w, int64_t k, int64_t n,
                               const std::vector<float>& hinv_upper,
                               const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind,
                               int64_t block) {
  Impl& m = *impl_;
  check(cudaSetDevice(m.device), "cudaSetDevice");
  const cudaStream_t st = nullptr;  // the legacy stream: cuBLAS and the kernels stay in order
  const size_t nw = static_cast<size_t>(k * n);
  float* W = m.gw.floats(nw);
  float* U = m.gu.floats(static_cast<size_t>(k * k));
  float* E = m.gerr.floats(static_cast<size_t>(block * n));
  float* D = m.gdeq.floats(nw);
  float* S = m.gscale.floats(static_cast<size_t>(n));
  float* Z = m.gzero.floats(static_cast<size_t>(n));
  float* T1 = m.gtmp1.floats(static_cast<size_t>(n));
  float* T2 = m.gtmp2.floats(static_cast<size_t>(n));
  float* P = m.gpart.floats(static_cast<size_t>(exl2_grid_size()) * ((n + 255) / 256) + 128);
  if (nw > m.gcodes_bytes) {
    if (m.gcodes) cudaFree(m.gcodes);
    m.gcodes = nullptr;
    check(cudaMalloc(&m.gcodes, nw), "cudaMalloc");
    m.gcodes_bytes = nw;
  }
  auto* C = static_cast<uint8_t*>(m.gcodes);
  check(cudaMemcpy(W, w.data(), nw * sizeof(float), cudaMemcpyHostToDevice), "copy W");
  check(cudaMemcpy(U, hinv_upper.data(), static_cast<size_t>(k * k) * sizeof(float),
                   cudaMemcpyHostToDevice),
        "copy U");

  GptqResult res;
  res.params.reserve(groups.size());
  std::vector<float> hbase(static_cast<size_t>(n)), hlo(static_cast<size_t>(n)),
      hhi(static_cast<size_t>(n));
  double proxy = 0;
  int64_t expect = 0;
  for (const GptqGroupSpec& g : groups) {
    HEARTH_CHECK(g.row_begin == expect && g.rows > 0, "GPTQ: groups must tile K");
    expect += g.rows;
    // Group parameters from the group's current rows.
    const float maxq = static_cast<float>((1 << g.bits) - 1);
    const float* Wg = W + g.row_begin * n;
    GroupParams params;
    if (kind == GroupQuantizerKind::kExl2) {
      check(kernels::quantizer_column_absmax(st, Wg, g.rows, n, maxq, T1), "absmax");
      check(cudaMemcpy(hbase.data(), T1, hbase.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copy maxima");
      const Exl2ScaleCandidates cand = exl2_scale_candidates(hbase);
      check(cudaMemcpy(T2, cand.scale.data(), cand.scale.size() * sizeof(float),
                       cudaMemcpyHostToDevice),
            "copy scales");
      std::vector<float> errs(static_cast<size_t>(exl2_grid_size()));
      float* dev_err = P + static_cast<size_t>(exl2_grid_size()) * ((n + 255) / 256);
      check(kernels::quantizer_pgrid_error(st, Wg, g.rows, n, T2,
                                           static_cast<float>(1 << (g.bits - 1)), maxq, P, dev_err),
            "grid error");
      check(cudaMemcpy(errs.data(), dev_err, errs.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copy grid error");
      int best = 0;
      for (int i = 1; i < exl2_grid_size(); ++i) {
        if (errs[i] < errs[best]) best = i;
      }
      params = exl2_params_from(cand, best, g.bits);
    } else {
      check(kernels::quantizer_column_minmax(st, Wg, g.rows, n, T1, T2), "minmax");
      check(cudaMemcpy(hlo.data(), T1, hlo.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copy minima");
      check(cudaMemcpy(hhi.data(), T2, hhi.size() * sizeof(float), cudaMemcpyDeviceToHost),
            "copy maxima");
      params = gptq_params_from(hlo, hhi, g.bits, kind == GroupQuantizerKind::kGptqSymmetric);
    }
    check(cudaMemcpy(S, params.scale.data(), params.scale.size() * sizeof(float),
                     cudaMemcpyHostToDevice),
          "copy scale");
    check(cudaMemcpy(Z, params.zero.data(), params.zero.size() * sizeof(float),
                     cudaMemcpyHostToDevice),
          "copy zero");
    res.params.push_back(std::move(params));
    // The group's rows, in blocks of at most `block`.
    for (int64_t b0 = g.row_begin; b0 < g.row_begin + g.rows; b0 += block) {
      const int64_t b1 = std::min(b0 + block, g.row_begin + g.rows);
      // Diagonal entries of U for the block's rows (host side: one small copy per block).
      std::vector<float> diag(static_cast<size_t>(b1 - b0));
      for (int64_t c = b0; c < b1; ++c) diag[c - b0] = hinv_upper[c * k + c];
      for (int64_t c = b0; c < b1; ++c) {
        float* ec = E + (c - b0) * n;
        check(kernels::quantizer_quantize_row(st, W + c * n, n, S, Z, maxq, diag[c - b0], C + c * n,
                                              D + c * n, ec),
              "quantize row");
        check(kernels::quantizer_rank1_update(st, W, n, U + c * k, c + 1, b1, ec), "rank-1");
      }
      const int64_t bw = b1 - b0;
      float e2 = 0;
      check(cublasSdot(m.blas, static_cast<int>(bw * n), E, 1, E, 1, &e2), "cublasSdot");
      proxy += e2;
      if (b1 < k) {
        // W[b1:, :] −= U[b0:b1, b1:]ᵀ · E (column-major: C[n × (k−b1)] −= A[n × bw] · Bᵀ).
        const float minus = -1.0f, one = 1.0f;
        check(cublasSgemm(m.blas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(n),
                          static_cast<int>(k - b1), static_cast<int>(bw), &minus, E,
                          static_cast<int>(n), U + b0 * k + b1, static_cast<int>(k), &one,
                          W + b1 * n, static_cast<int>(n)),
              "cublasSgemm");
      }
    }
  }
  HEARTH_CHECK(expect == k, "GPTQ: groups do not cover K");
  res.codes.resize(nw);
  res.dequantized.resize(nw);
  check(cudaMemcpy(res.codes.data(), C, nw, cudaMemcpyDeviceToHost), "copy codes");
  check(cudaMemcpy(res.dequantized.data(), D, nw * sizeof(float), cudaMemcpyDeviceToHost),
        "copy reconstruction");
  check(cudaMemcpy(w.data(), W, nw * sizeof(float), cudaMemcpyDeviceToHost), "copy W");
  res.proxy_error = proxy;
  return res;
}

}  // namespace hearth::quantizer
