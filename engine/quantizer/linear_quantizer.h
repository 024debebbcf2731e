// Quantizes one linear layer (Hugging Face weight [N, K]) with a prepared Hessian: EXL2 with a
// QParams setting, or GPTQ with bits / group size / symmetry. Gives the reconstruction (what
// inference will compute with) and, when asked, the packed tensors, which are read back through
// Hearth's EXL2/GPTQ readers and compared with the reconstruction bit for bit before anyone
// writes them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/quantizer/exl2_qparams.h"
#include "engine/quantizer/gptq_solver.h"
#include "engine/quantizer/hessian.h"
#include "engine/quantizer/packed_layer.h"
#include "engine/quantizer/phase_times.h"

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

struct LinearWeights {
  std::string name;                        // "model.layers.0.self_attn.q_proj"
  int64_t out_features = 0;                // N
  int64_t in_features = 0;                 // K
  std::vector<float> weight;               // [N, K]
  std::optional<std::vector<float>> bias;  // [N]
  // Names these weights for caches (a GPU keeps its copy while a module's settings are
  // measured); 0: never cached. next_weights_id() gives fresh ones.
  uint64_t id = 0;
};
uint64_t next_weights_id();

// One linear layer's GPTQ elsewhere (the GPU, CudaQuantMath::gptq_linear), the work
// quantize_linear_* does around gptq_quantize included: W [N, K] in its file layout goes in
// (permuted by h.perm and transposed to [K, n_pad] there); out come the reconstruction in
// [N, K] and input order, and the codes [K, n_pad] (permuted rows) when asked for.
struct GptqLinearResult {
  std::vector<float> reconstruction;  // [N, K], exact fp16 values
  std::vector<uint8_t> codes;         // [K, n_pad]; empty unless want_codes
  std::vector<GroupParams> params;    // one per group
  double proxy_error = 0;             // as GptqResult's
};
// `storage` may become the reconstruction's buffer.
using GptqRunner = std::function<GptqLinearResult(
    const LinearWeights& w, int64_t n_pad, const PreparedHessian& h,
    const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind, bool want_codes,
    std::vector<float> storage)>;

struct GptqSettings {
  int bits = 4;
  int64_t group_size = 128;  // -1: one group
  bool symmetric = true;
};

struct QuantizedLinear {
  std::vector<float> reconstruction;  // [N, K], exact fp16 values, original input order
  PackedTensors tensors;              // empty unless packing was asked for
  double proxy_error = 0;             // GPTQ's own loss (see GptqResult)
  int64_t total_bits = 0;             // storage as the EXL2 optimizer counts it
};

// `runner`: where GPTQ runs (empty: the CPU solver). `times`, when given, gets the phases
// "transpose", "gptq" and "pack". `storage`: a buffer the reconstruction may be written into
// (its pages are reused).
QuantizedLinear quantize_linear_exl2(const LinearWeights& w, const PreparedHessian& h,
                                     const Exl2QParams& qp, bool pack, ThreadPool& pool,
                                     const GptqRunner& runner = {}, PhaseTimes* times = nullptr,
                                     std::vector<float> storage = {});

QuantizedLinear quantize_linear_gptq(const LinearWeights& w, const PreparedHessian& h,
                                     const GptqSettings& settings, bool pack, ThreadPool& pool,
                                     const GptqRunner& runner = {}, PhaseTimes* times = nullptr);

// Reads `tensors` back through Hearth's reader of `format` ("exl2"/"gptq") and checks that the
// dequantized weights equal `reconstruction` exactly. Error(kInternal) naming the layer and the
// first mismatching element otherwise.
void verify_packed_layer(const std::string& name, const std::string& format,
                         const PackedTensors& tensors, int64_t out_features, int64_t in_features,
                         const std::vector<float>& reconstruction);

// Relative Frobenius error ‖Ŵ − W‖ / ‖W‖ (for logs).
double relative_weight_error(const std::vector<float>& w, const std::vector<float>& w_hat);

}  // namespace hearth::quantizer
