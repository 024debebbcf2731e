// Quantizes one linear layer (Hugging Face weight [N, K]) with a prepared Hessian: EXL2 with a
// QParams setting, or GPTQ with bits / group size / symmetry. Gives the reconstruction (what
// inference will compute with) and, when asked, the packed tensors, which are read back through
// Hearth's EXL2/GPTQ readers and compared with the reconstruction bit for bit before anyone
// writes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/quant/quantizer/exl2_qparams.h"
#include "engine/quant/quantizer/hessian.h"
#include "engine/quant/quantizer/packed_layer.h"

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
};

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

// `runner`: where GPTQ runs (empty: the CPU solver).
QuantizedLinear quantize_linear_exl2(const LinearWeights& w, const PreparedHessian& h,
                                     const Exl2QParams& qp, bool pack, ThreadPool& pool,
                                     const GptqRunner& runner = {});

QuantizedLinear quantize_linear_gptq(const LinearWeights& w, const PreparedHessian& h,
                                     const GptqSettings& settings, bool pack, ThreadPool& pool,
                                     const GptqRunner& runner = {});

// Reads `tensors` back through Hearth's reader of `format` ("exl2"/"gptq") and checks that the
// dequantized weights equal `reconstruction` exactly. Error(kInternal) naming the layer and the
// first mismatching element otherwise.
void verify_packed_layer(const std::string& name, const std::string& format,
                         const PackedTensors& tensors, int64_t out_features, int64_t in_features,
                         const std::vector<float>& reconstruction);

// Relative Frobenius error ‖Ŵ − W‖ / ‖W‖ (for logs).
double relative_weight_error(const std::vector<float>& w, const std::vector<float>& w_hat);

}  // namespace hearth::quantizer
