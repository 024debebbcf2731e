// Whether the code of the sm_90a object (kernels/CMakeLists.txt) is what the driver loaded for the
// current device: on an sm_90 GPU it is, elsewhere the compute_90 PTX or nothing is, and there
// HEARTH_WGMMA is 0.
#include <atomic>

#include "kernels/wgmma.cuh"

namespace hearth::kernels {
namespace {

__global__ void wgmma_probe_kernel(int* out) {
  *out = HEARTH_WGMMA;
}

}  // namespace

bool wgmma_supported() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  constexpr int kMaxDevices = 64;
  static std::atomic<int> known[kMaxDevices] = {};  // 0 unknown, 1 no, 2 yes
  if (device < 0 || device >= kMaxDevices) return false;
  if (const int k = known[device].load(); k != 0) return k == 2;
  int* flag = nullptr;
  int result = 0;
  bool ok = cudaMalloc(&flag, sizeof(int)) == cudaSuccess;
  if (ok) {
    wgmma_probe_kernel<<<1, 1>>>(flag);
    ok = cudaMemcpy(&result, flag, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaFree(flag);
  }
  if (!ok) {
    cudaGetLastError();  // a device without a matching module: no wgmma, and no sticky error
    result = 0;
  }
  known[device].store(result == 1 ? 2 : 1);
  return result == 1;
}

}  // namespace hearth::kernels
