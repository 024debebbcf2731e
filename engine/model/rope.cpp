#include "engine/model/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hearth {
namespace {

double yarn_mscale(double scale, double mscale = 1.0) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// The dimension at which a frequency completes `rotations` turns over `max_pos` positions.
double yarn_correction_dim(double rotations, double dim, double base, double max_pos) {
  return dim * std::log(max_pos / (rotations * 2 * std::numbers::pi)) / (2 * std::log(base));
}

}  // namespace

RopeFrequencies compute_rope_frequencies(const ModelConfig& config, int64_t max_seq_len) {
  const int64_t dim = config.rotary_dim();
  const int64_t half = dim / 2;
  const RopeScaling& rs = config.rope_scaling;
  double base = config.rope_theta;

  if (config.ntk_alpha != 1.0) {
    base *= std::pow(config.ntk_alpha, static_cast<double>(dim) / static_cast<double>(dim - 2));
  }
  if (rs.type == RopeScalingType::kDynamic) {
    const double max_pos = static_cast<double>(config.max_position_embeddings);
    const double seq = std::max<double>(static_cast<double>(max_seq_len), max_pos);
    base *= std::pow(rs.factor * seq / max_pos - (rs.factor - 1.0),
                     static_cast<double>(dim) / static_cast<double>(dim - 2));
  }

  // Base frequencies as HF computes them: 1 / base^(2i/d) (the exponent in fp32).
  std::vector<double> inv(half);
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    inv[i] = 1.0 / std::pow(base, static_cast<double>(exponent));
  }

  RopeFrequencies out;
  switch (rs.type) {
    case RopeScalingType::kNone:
    case RopeScalingType::kDynamic:
      break;
    case RopeScalingType::kLinear:
      for (double& f : inv) f /= rs.factor;
      break;
    case RopeScalingType::kLlama3: {
      const double old_ctx = rs.original_max_position_embeddings > 0
                                 ? static_cast<double>(rs.original_max_position_embeddings)
                                 : 8192.0;
      const double low_wavelen = old_ctx / rs.low_freq_factor;
      const double high_wavelen = old_ctx / rs.high_freq_factor;
      for (double& f : inv) {
        const double wavelen = 2 * std::numbers::pi / f;
        if (wavelen < high_wavelen) continue;  // high frequencies kept
        if (wavelen > low_wavelen) {
          f /= rs.factor;  // low frequencies interpolated
          continue;
        }
        const double smooth =
            (old_ctx / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        f = (1 - smooth) * f / rs.factor + smooth * f;
      }
      break;
    }
    case RopeScalingType::kYarn: {
      const double factor = rs.factor;
      const double original = rs.original_max_position_embeddings > 0
                                  ? static_cast<double>(rs.original_max_position_embeddings)
                                  : static_cast<double>(config.max_position_embeddings);
      if (rs.attention_factor) {
        out.attention_factor = static_cast<float>(*rs.attention_factor);
      } else if (rs.mscale && rs.mscale_all_dim) {
        out.attention_factor =
            static_cast<float>(yarn_mscale(factor, *rs.mscale) / yarn_mscale(factor, *rs.mscale_all_dim));
      } else {
        out.attention_factor = static_cast<float>(yarn_mscale(factor));
      }
      double low = std::floor(yarn_correction_dim(rs.beta_fast, dim, base, original));
      double high = std::ceil(yarn_correction_dim(rs.beta_slow, dim, base, original));
      low = std::max(low, 0.0);
      high = std::min(high, static_cast<double>(dim - 1));
      if (low == high) high += 0.001;
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
        const double extrapolation_weight = 1.0 - ramp;
        const double extrapolated = inv[i];
        const double interpolated = inv[i] / factor;
        inv[i] = interpolated * (1 - extrapolation_weight) + extrapolated * extrapolation_weight;
      }
      break;
    }
  }
  out.inv_freq.assign(inv.begin(), inv.end());
  return out;
}

}  // namespace hearth
