// Builds without CUDA: the GPU path of the quantizer's math is absent.
#include "engine/core/error.h"
#include "engine/quantizer/cuda_quant_math.h"

namespace hearth::quantizer {

bool cuda_quant_math_available() {
  return false;
}

struct CudaQuantMath::Impl {};

CudaQuantMath::CudaQuantMath(int) {
  fail(ErrorCode::kUnsupported, "this build of Hearth has no CUDA support");
}
CudaQuantMath::~CudaQuantMath() = default;
CudaQuantMath::GramSum::~GramSum() = default;
std::unique_ptr<CudaQuantMath::GramSum> CudaQuantMath::gram_sum(int64_t) {
  fail(ErrorCode::kUnsupported, "this build of Hearth has no CUDA support");
}
void CudaQuantMath::GramSum::add(const float*, int64_t) {}
std::vector<float> CudaQuantMath::GramSum::finish() const {
  return {};
}
bool CudaQuantMath::inverse_upper_cholesky(const std::vector<float>&, int64_t,
                                           std::vector<float>&) {
  return false;
}

GptqResult CudaQuantMath::gptq(std::vector<float>&, int64_t, int64_t, const std::vector<float>&,
                               const std::vector<GptqGroupSpec>&, GroupQuantizerKind, int64_t) {
  return {};
}

GptqLinearResult CudaQuantMath::gptq_linear(const LinearWeights&, int64_t, const PreparedHessian&,
                                            const std::vector<GptqGroupSpec>&, GroupQuantizerKind,
                                            bool, std::vector<float>, int64_t) {
  return {};
}

}  // namespace hearth::quantizer
