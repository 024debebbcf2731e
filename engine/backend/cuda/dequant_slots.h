// Two buffers of fp16 weight slices for the large-batch quantized linears (cuda_quant_linear.cpp),
// written in turn by a stream of their own while the backend's stream multiplies the other one with
// cuBLAS. Writing a slice is bound by memory and cuBLAS's product by the tensor cores, so the next
// slice's dequantization (of this matrix, or the next matrix's first) can run beside this one's
// product instead of before it.
//
// Ordering, per buffer: the side stream waits for `released` (recorded on the main stream after
// the last product that read the buffer) before writing, and records `filled`, which the main
// stream waits for before reading. Never-recorded events are complete, so the first fill of each
// buffer does not wait. Only steps recorded without a graph key use these buffers: a captured
// graph replays later, out of reach of the events, and a graph key's direct warm-up step must
// grow the one buffer its capture will use (CudaBackend::GraphStepScope).
#pragma once

#include <cuda_runtime.h>

#include <array>

namespace hearth::cuda {

class DequantSlots {
 public:
  static constexpr int kSlots = 2;

  DequantSlots() = default;
  DequantSlots(const DequantSlots&) = delete;
  DequantSlots& operator=(const DequantSlots&) = delete;
  ~DequantSlots() { release(); }

  // Creates the side stream and the events on the current device (once); throws on failure.
  void start();
  cudaStream_t side() const { return side_; }

  // The slot the next fill writes (slots alternate).
  int next() {
    const int s = next_;
    next_ = (next_ + 1) % kSlots;
    return s;
  }
  // Around the side stream's writes of slot s.
  void begin_fill(int s);
  void end_fill(int s);
  // Around the main stream's reads of slot s.
  void begin_read(int s, cudaStream_t main);
  void end_read(int s, cudaStream_t main);
  // Waits for the side stream's work (before its buffers are freed or moved).
  void synchronize();
  void release() noexcept;

 private:
  cudaStream_t side_ = nullptr;
  std::array<cudaEvent_t, kSlots> filled_{};
  std::array<cudaEvent_t, kSlots> released_{};
  int next_ = 0;
};

}  // namespace hearth::cuda
