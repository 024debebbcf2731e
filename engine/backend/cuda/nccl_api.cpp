#include "engine/backend/cuda/nccl_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "engine/core/error.h"

namespace hearth::cuda {
namespace {

#define HEARTH_STRINGIFY_INNER(x) #x
#define HEARTH_STRINGIFY(x) HEARTH_STRINGIFY_INNER(x)

const char kSoname[] = "libnccl.so." HEARTH_STRINGIFY(NCCL_MAJOR);

struct Loaded {
  NcclApi api{};
  std::string error;
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
  paths.push_back(kSoname);
#ifdef HEARTH_CUDA_TOOLKIT_LIB_DIR
  paths.push_back(std::string(HEARTH_CUDA_TOOLKIT_LIB_DIR) + "/" + kSoname);
#endif
#ifdef HEARTH_NCCL_LIB_DIR
  paths.push_back(std::string(HEARTH_NCCL_LIB_DIR) + "/" + kSoname);
#endif
  return paths;
}

template <typename Fn>
bool bind(void* library, Fn& fn, const char* symbol, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (!fn) error = std::string("it has no ") + symbol;
  return fn != nullptr;
}

bool bind_all(void* lib, NcclApi& api, std::string& error) {
#define HEARTH_BIND(field) bind(lib, api.field, "nccl" #field, error)
  return HEARTH_BIND(GetVersion) && HEARTH_BIND(CommInitAll) && HEARTH_BIND(CommDestroy) &&
         HEARTH_BIND(CommGetAsyncError) && HEARTH_BIND(GetErrorString) && HEARTH_BIND(GroupStart) &&
         HEARTH_BIND(GroupEnd) && HEARTH_BIND(AllReduce);
#undef HEARTH_BIND
}

const Loaded& loaded() {
  static const Loaded result = [] {
    Loaded out;
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      std::string why;
      if (lib) {
        int version = 0;
        if (bind_all(lib, out.api, why) && out.api.GetVersion(&version) == ncclSuccess) {
          // The major version is in the soname; NCCL 2.x keeps its ABI within it.
          return out;
        }
        if (why.empty()) why = "ncclGetVersion failed";
        dlclose(lib);
      } else {
        const char* message = dlerror();
        why = message ? message : "not found";
      }
      tried += "\n  " + path + ": " + why;
    }
    out.api = {};
    out.error = std::string("NCCL (") + kSoname + ") could not be loaded; tried:" + tried;
    return out;
  }();
  return result;
}

}  // namespace

const NcclApi& nccl() {
  const Loaded& l = loaded();
  if (!l.error.empty()) fail(ErrorCode::kBackend, l.error);
  return l.api;
}

const std::string& nccl_load_error() {
  return loaded().error;
}

void check_nccl(ncclResult_t result, const char* what) {
  if (result == ncclSuccess) return;
  fail(ErrorCode::kBackend,
       std::string(what) + ": NCCL failed (" + nccl().GetErrorString(result) + ")");
}

}  // namespace hearth::cuda
