#include "engine/backend/cuda/cublas_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

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

std::vector<std::string> candidate_paths() {
  std::vector<std::string> paths;
  if (const char* dir = std::getenv("HEARTH_CUDA_LIB_DIR"); dir && *dir) {
    paths.push_back(std::string(dir) + "/" + kSoname);
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path() / HEARTH_PRIVATE_LIB_DIR / kSoname).lexically_normal());
  }
  paths.push_back(kSoname);  // the system's search path (ld.so.cache, LD_LIBRARY_PATH)
#ifdef HEARTH_CUDA_TOOLKIT_LIB_DIR
  paths.push_back(std::string(HEARTH_CUDA_TOOLKIT_LIB_DIR) + "/" + kSoname);
#endif
  return paths;
}

template <typename Fn>
bool bind(void* library, Fn& fn, const char* symbol, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (!fn) error = std::string("it has no ") + symbol;
  return fn != nullptr;
}

bool bind_all(void* lib, CublasApi& api, std::string& error) {
  // The macros of cublas_v2.h name the versioned symbols (cublasCreate is cublasCreate_v2).
#define HEARTH_BIND(field, function) bind(lib, api.field, HEARTH_STRINGIFY(function), error)
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
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      // RTLD_LOCAL: cuBLAS's symbols stay out of the global namespace of the process.
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      std::string why;
      if (lib) {
        using GetProperty = cublasStatus_t (*)(libraryPropertyType, int*);
        auto get_property = reinterpret_cast<GetProperty>(dlsym(lib, "cublasGetProperty"));
        int major = 0;
        if (!get_property || get_property(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
            major != CUBLAS_VER_MAJOR) {
          why =
              "it is cuBLAS " + std::to_string(major) + ", not " + std::to_string(CUBLAS_VER_MAJOR);
        } else if (bind_all(lib, out.api, why)) {
          out.path = path;
          return out;
        }
        dlclose(lib);
      } else {
        const char* message = dlerror();
        why = message ? message : "not found";
      }
      tried += "\n  " + path + ": " + why;
    }
    out.api = {};
    out.error = std::string("cuBLAS (") + kSoname + ") could not be loaded; tried:" + tried;
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
