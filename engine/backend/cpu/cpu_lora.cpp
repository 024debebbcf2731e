// LoRA on the CPU, the reference the CUDA kernels are tested against: for each row and part,
// t = A·x in fp32, then out += w · (scale·B)·t, parts in the order given.
#include <vector>

#include "engine/backend/cpu/cpu_backend_impl.h"
#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/error.h"

namespace hearth::cpu {

size_t CpuLoraWeight::device_bytes() const {
  size_t n = 0;
  for (const Part& p : parts) n += (p.a.size() + p.b.size()) * sizeof(float);
  return n;
}

std::unique_ptr<BackendWeight> CpuBackend::upload_lora(const LoraSource& source) {
  auto w = std::make_unique<CpuLoraWeight>(lora_bytes_);
  w->in_features = source.in_features;
  w->out_features = source.out_features;
  for (const LoraPart& part : source.parts) {
    HEARTH_CHECK(part.target >= 0 && part.target < static_cast<int>(source.out_features.size()),
                 source.name + ": LoRA target out of range");
    HEARTH_CHECK(part.slot >= 0 && part.slot < kMaxLoraSlots, source.name + ": LoRA slot");
    const int64_t n = source.out_features[static_cast<size_t>(part.target)];
    HEARTH_CHECK(part.a.shape.size() == 2 && part.b.shape.size() == 2 &&
                     part.a.shape[1] == source.in_features && part.b.shape[0] == n &&
                     part.b.shape[1] == part.a.shape[0],
                 source.name + ": LoRA A/B shapes");
    CpuLoraWeight::Part p;
    p.target = part.target;
    p.slot = part.slot;
    p.rank = part.a.shape[0];
    p.a = part.a.to_floats();
    p.b = part.b.to_floats();
    for (float& v : p.b) v *= part.scale;
    w->parts.push_back(std::move(p));
  }
  *lora_bytes_ += w->device_bytes();
  return w;
}

void CpuBackend::lora(const BackendWeight& weight, DeviceTensor x,
                      std::span<const DeviceTensor> outs) {
  const auto& w = static_cast<const CpuLoraWeight&>(weight);
  HEARTH_CHECK(x.cols == w.in_features && outs.size() == w.out_features.size(), "lora: shapes");
  for (size_t t = 0; t < outs.size(); ++t) {
    HEARTH_CHECK(outs[t].cols == w.out_features[t] && outs[t].rows >= x.rows, "lora: output shape");
  }
  if (batch_.adapter_weights.empty()) return;  // no sequence weighs any adapter
  HEARTH_CHECK(static_cast<int64_t>(batch_.adapter_weights.size()) >= x.rows * kMaxLoraSlots,
               "lora: more rows than the batch");
  const int64_t K = w.in_features;
  pool_.parallel_for(x.rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<float> t;
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = static_cast<const float*>(x.data) + r * K;
      for (const CpuLoraWeight::Part& p : w.parts) {
        const float weight_of_row =
            batch_.adapter_weights[static_cast<size_t>(r * kMaxLoraSlots + p.slot)];
        if (weight_of_row == 0.0f) continue;
        t.resize(static_cast<size_t>(p.rank));
        for (int64_t j = 0; j < p.rank; ++j) t[j] = dot(xr, p.a.data() + j * K, K);
        const DeviceTensor& out = outs[static_cast<size_t>(p.target)];
        float* yr = static_cast<float*>(out.data) + r * out.cols;
        for (int64_t n = 0; n < out.cols; ++n) {
          yr[n] += weight_of_row * dot(t.data(), p.b.data() + n * p.rank, p.rank);
        }
      }
    }
  });
}

}  // namespace hearth::cpu
