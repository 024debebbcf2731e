#include "engine/quant/quantizer/cuda_quant_math.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cmath>
#include <string>

#include "engine/core/error.h"

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
  int* info = nullptr;
  ~Impl() {
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

}  // namespace hearth::quantizer
