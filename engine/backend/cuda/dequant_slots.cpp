#include "engine/backend/cuda/dequant_slots.h"

#include "engine/backend/cuda/cuda_check.h"

namespace hearth::cuda {

void DequantSlots::start() {
  if (side_) return;
  try {
    check_cuda(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking),
               "creating the dequantization stream");
    for (int s = 0; s < kSlots; ++s) {
      check_cuda(cudaEventCreateWithFlags(&filled_[s], cudaEventDisableTiming),
                 "creating an event");
      check_cuda(cudaEventCreateWithFlags(&released_[s], cudaEventDisableTiming),
                 "creating an event");
    }
  } catch (...) {
    release();
    throw;
  }
}

void DequantSlots::begin_fill(int s) {
  check_cuda(cudaStreamWaitEvent(side_, released_[s], 0), "ordering a weight slice's writes");
}

void DequantSlots::end_fill(int s) {
  check_cuda(cudaEventRecord(filled_[s], side_), "recording a weight slice's writes");
}

void DequantSlots::begin_read(int s, cudaStream_t main) {
  check_cuda(cudaStreamWaitEvent(main, filled_[s], 0), "ordering a weight slice's reads");
}

void DequantSlots::end_read(int s, cudaStream_t main) {
  check_cuda(cudaEventRecord(released_[s], main), "recording a weight slice's reads");
}

void DequantSlots::synchronize() {
  if (side_) check_cuda(cudaStreamSynchronize(side_), "waiting for the dequantization stream");
}

void DequantSlots::release() noexcept {
  if (side_) cudaStreamSynchronize(side_);
  for (auto* events : {&filled_, &released_}) {
    for (cudaEvent_t& e : *events) {
      if (e) cudaEventDestroy(e);
      e = nullptr;
    }
  }
  if (side_) cudaStreamDestroy(side_);
  side_ = nullptr;
  next_ = 0;
}

}  // namespace hearth::cuda
