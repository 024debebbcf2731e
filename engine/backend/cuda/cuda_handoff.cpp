// Activations handed from one GPU's backend to the next when a model is split by layers: a
// device-to-device copy on the receiver's stream, fenced by events on both streams, so that
// neither host waits and each stage's CUDA graph stays a single-device graph.
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/error.h"

namespace hearth::cuda {

void CudaBackend::enable_peer_access(int peer) {
  if (peer == options_.device || peers_enabled_.count(peer)) return;
  int can = 0;
  check_cuda(cudaDeviceCanAccessPeer(&can, options_.device, peer), "querying peer access");
  if (can) {
    // Without it (no NVLink or P2P over PCIe) cudaMemcpyPeerAsync stages through the host.
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status != cudaSuccess && status != cudaErrorPeerAccessAlreadyEnabled) {
      check_cuda(status, "enabling peer access between GPUs");
    }
    cudaGetLastError();
  }
  peers_enabled_.insert(peer);
}

void CudaBackend::receive(Backend& from, DeviceTensor src, DeviceTensor dst, int64_t rows) {
  auto* sender = dynamic_cast<CudaBackend*>(&from);
  if (!sender) {
    fail(ErrorCode::kInvalidArgument, "receive: a CUDA backend receives from CUDA backends only");
  }
  HEARTH_CHECK(!capturing() && !sender->capturing(), "receive: called inside a captured step");
  HEARTH_CHECK(src.dtype == dst.dtype && src.cols == dst.cols, "receive: shapes differ");
  check_rows(src, rows, "receive");
  check_rows(dst, rows, "receive");
  const size_t bytes = static_cast<size_t>(rows * src.cols) * dtype_size(src.dtype);
  if (bytes == 0) return;
  {
    DeviceGuard guard(sender->device());
    sender->flush_linears();
    check_cuda(cudaEventRecord(sender->handoff_event_, sender->stream_), "recording an event");
  }
  DeviceGuard guard(options_.device);
  flush_linears();
  enable_peer_access(sender->device());
  check_cuda(cudaStreamWaitEvent(stream_, sender->handoff_event_, 0), "waiting for another GPU");
  check_cuda(
      cudaMemcpyPeerAsync(dst.data, options_.device, src.data, sender->device(), bytes, stream_),
      "copying activations between GPUs");
  check_cuda(cudaEventRecord(handoff_event_, stream_), "recording an event");
  DeviceGuard sender_guard(sender->device());
  check_cuda(cudaStreamWaitEvent(sender->stream_, handoff_event_, 0), "waiting for another GPU");
}

}  // namespace hearth::cuda
