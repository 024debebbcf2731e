// NCCL, loaded when a tensor-parallel backend first needs it instead of linked, as cuBLAS is
// (cublas_api.h): Hearth then starts on machines without it. Searched where runtime_library.h
// says, then in the folder NCCL was found in at build time.
#pragma once

#include <nccl.h>

#include <string>

namespace hearth::cuda {

// The entry points Hearth calls, named as in nccl.h.
struct NcclApi {
  decltype(&ncclGetVersion) GetVersion;
  decltype(&ncclCommInitAll) CommInitAll;
  decltype(&ncclCommDestroy) CommDestroy;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError;
  decltype(&ncclGetErrorString) GetErrorString;
  decltype(&ncclGroupStart) GroupStart;
  decltype(&ncclGroupEnd) GroupEnd;
  decltype(&ncclAllReduce) AllReduce;
};

// The loaded library. Throws Error(kBackend) with nccl_load_error() when it cannot be loaded.
const NcclApi& nccl();

// Empty once NCCL is loaded; otherwise where it was looked for and why each failed. Never throws.
const std::string& nccl_load_error();

// Throws Error(kBackend) naming `what` and NCCL's message unless `result` is ncclSuccess.
void check_nccl(ncclResult_t result, const char* what);

}  // namespace hearth::cuda
