#include "engine/backend/cuda/nccl_api.h"

#include <vector>

#include "engine/backend/cuda/runtime_library.h"
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

bool bind_all(void* lib, NcclApi& api, std::string& error) {
#define HEARTH_BIND(field) bind_symbol(lib, api.field, "nccl" #field, error)
  return HEARTH_BIND(GetVersion) && HEARTH_BIND(CommInitAll) && HEARTH_BIND(CommDestroy) &&
         HEARTH_BIND(CommGetAsyncError) && HEARTH_BIND(GetErrorString) && HEARTH_BIND(GroupStart) &&
         HEARTH_BIND(GroupEnd) && HEARTH_BIND(AllReduce);
#undef HEARTH_BIND
}

const Loaded& loaded() {
  static const Loaded result = [] {
    Loaded out;
    std::vector<std::string> extra_dirs;
#ifdef HEARTH_NCCL_LIB_DIR
    extra_dirs.push_back(HEARTH_NCCL_LIB_DIR);  // where the build found it (e.g. NVIDIA's wheel)
#endif
    // The major version is in the soname; NCCL 2.x keeps its ABI within it.
    const RuntimeLibrary lib =
        open_runtime_library(kSoname, extra_dirs, [&](void* handle, std::string& why) {
          int version = 0;
          if (!bind_all(handle, out.api, why)) return false;
          if (out.api.GetVersion(&version) == ncclSuccess) return true;
          why = "ncclGetVersion failed";
          return false;
        });
    if (!lib.handle) {
      out.api = {};
      out.error = std::string("NCCL (") + kSoname + ") could not be loaded; tried:" + lib.tried;
    }
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
