#include "engine/backend/cuda/runtime_library.h"

#include <cstdlib>
#include <filesystem>

namespace hearth::cuda {
namespace {

std::vector<std::string> candidate_paths(const std::string& soname,
                                         const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> paths;
  if (const char* dir = std::getenv("HEARTH_CUDA_LIB_DIR"); dir && *dir) {
    paths.push_back(std::string(dir) + "/" + soname);
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    paths.push_back((exe.parent_path() / HEARTH_PRIVATE_LIB_DIR / soname).lexically_normal());
  }
  paths.push_back(soname);  // the system's search path (ld.so.cache, LD_LIBRARY_PATH)
#ifdef HEARTH_CUDA_TOOLKIT_LIB_DIR
  paths.push_back(std::string(HEARTH_CUDA_TOOLKIT_LIB_DIR) + "/" + soname);
#endif
  for (const std::string& dir : extra_dirs) paths.push_back(dir + "/" + soname);
  return paths;
}

}  // namespace

RuntimeLibrary open_runtime_library(
    const std::string& soname, const std::vector<std::string>& extra_dirs,
    const std::function<bool(void* handle, std::string& why)>& accept) {
  RuntimeLibrary out;
  for (const std::string& path : candidate_paths(soname, extra_dirs)) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why;
    if (handle) {
      if (accept(handle, why)) {
        out.handle = handle;
        out.path = path;
        return out;
      }
      dlclose(handle);
    } else {
      const char* message = dlerror();
      why = message ? message : "not found";
    }
    out.tried += "\n  " + path + ": " + why;
  }
  return out;
}

}  // namespace hearth::cuda
