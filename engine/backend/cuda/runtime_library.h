// Opening the NVIDIA libraries Hearth loads at run time instead of linking (cuBLAS, NCCL), so
// that it starts on machines without them. Searched, in order: $HEARTH_CUDA_LIB_DIR, the folder
// the package installs them to (lib/<multiarch>/hearth beside the executable's bin/), the
// system's library path, the CUDA toolkit Hearth was built with, then any further folders.
#pragma once

#include <dlfcn.h>

#include <functional>
#include <string>
#include <vector>

namespace hearth::cuda {

struct RuntimeLibrary {
  void* handle = nullptr;  // null when none was accepted
  std::string path;        // where it was opened from
  std::string tried;       // when none: a line per path tried, saying why it failed
};

// Opens the first `soname` found that `accept` takes (it checks the version and binds the
// symbols, saying `why` when it refuses; a refused library is closed again). RTLD_LOCAL: the
// library's symbols stay out of the process's global namespace. Never throws.
RuntimeLibrary open_runtime_library(
    const std::string& soname, const std::vector<std::string>& extra_dirs,
    const std::function<bool(void* handle, std::string& why)>& accept);

// Binds `symbol` of `library` to `fn`; false, with `error` naming it, when it is missing.
template <typename Fn>
bool bind_symbol(void* library, Fn& fn, const char* symbol, std::string& error) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (!fn) error = std::string("it has no ") + symbol;
  return fn != nullptr;
}

}  // namespace hearth::cuda
