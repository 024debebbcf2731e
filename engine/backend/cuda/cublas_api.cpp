#include "engine/backend/cuda/cublas_api.h"

#include "engine/backend/cuda/runtime_library.h"
#include "engine/core/error.h"

namespace hearth::cuda {
namespace {

#define HEARTH_STRINGIFY_INNER(x) #x
#define HEARTH_STRINGIFY(x) HEARTH_STRINGIFY_INNER(x)

const char kSoname[] = "libcublas.so." HEARTH_STRINGIFY(CUBLAS_VER_MAJOR);

struct Loaded {
  CublasApi api{};
  std::string error;
  std::string path;
};

bool bind_all(void* lib, CublasApi& api, std::string& error) {
  // The macros of cublas_v2.h name the versioned symbols (cublasCreate is cublasCreate_v2).
#define HEARTH_BIND(field, function) bind_symbol(lib, api.field, HEARTH_STRINGIFY(function), error)
  return HEARTH_BIND(Create, cublasCreate) && HEARTH_BIND(Destroy, cublasDestroy) &&
         HEARTH_BIND(SetStream, cublasSetStream) && HEARTH_BIND(SetWorkspace, cublasSetWorkspace) &&
         HEARTH_BIND(SetMathMode, cublasSetMathMode) &&
         HEARTH_BIND(GetStatusName, cublasGetStatusName) &&
         HEARTH_BIND(GetStatusString, cublasGetStatusString) && HEARTH_BIND(Sgemm, cublasSgemm) &&
         HEARTH_BIND(Ssyrk, cublasSsyrk) && HEARTH_BIND(Strsm, cublasStrsm) &&
         HEARTH_BIND(GemmEx, cublasGemmEx);
#undef HEARTH_BIND
}

const Loaded& loaded() {
  static const Loaded result = [] {
    Loaded out;
    const RuntimeLibrary lib =
        open_runtime_library(kSoname, {}, [&](void* handle, std::string& why) {
          using GetProperty = cublasStatus_t (*)(libraryPropertyType, int*);
          auto get_property = reinterpret_cast<GetProperty>(dlsym(handle, "cublasGetProperty"));
          int major = 0;
          if (!get_property || get_property(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
              major != CUBLAS_VER_MAJOR) {
            why = "it is cuBLAS " + std::to_string(major) + ", not " +
                  std::to_string(CUBLAS_VER_MAJOR);
            return false;
          }
          return bind_all(handle, out.api, why);
        });
    out.path = lib.path;
    if (!lib.handle) {
      out.api = {};
      out.error = std::string("cuBLAS (") + kSoname + ") could not be loaded; tried:" + lib.tried;
    }
    return out;
  }();
  return result;
}

}  // namespace

const CublasApi& cublas() {
  const Loaded& l = loaded();
  if (!l.error.empty()) fail(ErrorCode::kBackend, l.error);
  return l.api;
}

const std::string& cublas_load_error() {
  return loaded().error;
}

const std::string& cublas_path() {
  return loaded().path;
}

}  // namespace hearth::cuda
