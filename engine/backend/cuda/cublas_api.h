// cuBLAS, loaded when the CUDA backend or the quantizer's GPU math first needs it instead of
// linked: Hearth then starts on machines without it (no NVIDIA driver, no CUDA toolkit), and the
// package ships the library in its own folder. Where it is searched: runtime_library.h.
#pragma once

#include <cublas_v2.h>

#include <string>

namespace hearth::cuda {

// The entry points Hearth calls, named as in cublas_v2.h.
struct CublasApi {
  decltype(&cublasCreate) Create;
  decltype(&cublasDestroy) Destroy;
  decltype(&cublasSetStream) SetStream;
  decltype(&cublasSetWorkspace) SetWorkspace;
  decltype(&cublasSetMathMode) SetMathMode;
  decltype(&cublasGetStatusName) GetStatusName;
  decltype(&cublasGetStatusString) GetStatusString;
  decltype(&cublasSgemm) Sgemm;
  decltype(&cublasSsyrk) Ssyrk;
  decltype(&cublasStrsm) Strsm;
  // cublas_api.h overloads cublasGemmEx for C++ callers; this is the library's C symbol.
  cublasStatus_t (*GemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                           int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                           cublasGemmAlgo_t);
};

// The loaded library. Throws Error(kBackend) with cublas_load_error() when it cannot be loaded.
const CublasApi& cublas();

// Empty once cuBLAS is loaded; otherwise where it was looked for and why each failed. Loads it
// on the first call. Never throws.
const std::string& cublas_load_error();

// Where cuBLAS was loaded from (empty when it was not).
const std::string& cublas_path();

}  // namespace hearth::cuda
