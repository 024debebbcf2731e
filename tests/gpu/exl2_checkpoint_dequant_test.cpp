// Hearth's dequantization of every quantized layer of a real exllamav2 checkpoint against
// exllamav2's own reconstruction of it (its kernel: ExLlamaV2Linear.get_weight_tensor_dq ->
// exllamav2_ext.reconstruct), bit for bit in fp16.
//
// HEARTH_EXL2_RECON names the folder `tests/reference/exl2_diagnose.py recon` wrote on the GPU
// machine: manifest.json (model_dir, and per layer key, in_features, out_features) and
// recon.safetensors (per layer key one F16 [out_features, in_features] tensor, original
// input-feature order, padded output columns dropped). Without it the test skips. It needs no
// GPU itself; tests/gpu/exl2_reference_job.sh runs it in its "dequant" stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/host_tensor.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/tensor_source.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

TEST(Exl2Checkpoint, DequantizationMatchesExllamav2Reconstruct) {
  const char* env = std::getenv("HEARTH_EXL2_RECON");
  if (!env || !*env) GTEST_SKIP() << "skipped: HEARTH_EXL2_RECON is not set";
  const fs::path dir = env;
  std::ifstream in(dir / "manifest.json");
  ASSERT_TRUE(in) << "no manifest.json in " << dir;
  const auto manifest = nlohmann::json::parse(in);
  const auto model = open_safetensors_source(manifest["model_dir"].get<std::string>());
  const auto recon = open_safetensors_source(dir / manifest["file"].get<std::string>());
  ASSERT_FALSE(manifest["layers"].empty());

  int64_t layers = 0, weights = 0, mismatches = 0, zero_sign_only = 0, bad_layers = 0;
  double max_abs = 0;
  for (const auto& layer : manifest["layers"]) {
    const std::string key = layer["key"].get<std::string>();
    QuantizedLinearOptions o;
    o.in_features = layer["in_features"].get<int64_t>();
    o.out_features = layer["out_features"].get<int64_t>();
    const auto w = load_quantized_linear(*model, key, o);
    ASSERT_EQ(w->format(), "exl2") << key;
    ASSERT_EQ(w->in_features(), o.in_features) << key;
    ASSERT_EQ(w->out_features(), o.out_features) << key;
    const HostTensor expected = recon->get(key);
    ASSERT_EQ(expected.dtype, DType::kF16) << key;
    ASSERT_EQ(expected.shape, (std::vector<int64_t>{o.out_features, o.in_features})) << key;

    std::vector<float> ours(static_cast<size_t>(o.out_features * o.in_features));
    w->dequantize_rows(0, o.out_features, ours.data());
    const auto* ref = expected.as<uint16_t>();
    int64_t layer_mismatches = 0, first = -1;
    double layer_max = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      const uint16_t bits = float_to_half(ours[i]);
      if (bits == ref[i]) continue;
      const float r = half_to_float(ref[i]);
      if (r == ours[i]) {  // +0 against -0
        ++zero_sign_only;
        continue;
      }
      if (first < 0) first = static_cast<int64_t>(i);
      ++layer_mismatches;
      const double d = std::isfinite(r) ? std::fabs(static_cast<double>(r) - ours[i]) : INFINITY;
      layer_max = std::max(layer_max, d);
    }
    ++layers;
    weights += static_cast<int64_t>(ours.size());
    mismatches += layer_mismatches;
    max_abs = std::max(max_abs, layer_max);
    if (layer_mismatches > 0) {
      ++bad_layers;
      const int64_t n = first / o.in_features, k = first % o.in_features;
      std::printf(
          "%s [%lld x %lld]: %lld of %zu differ, max |diff| %.4g; first at out %lld, in %lld:"
          " Hearth %.6g, exllamav2 %.6g\n",
          key.c_str(), static_cast<long long>(o.out_features),
          static_cast<long long>(o.in_features), static_cast<long long>(layer_mismatches),
          ours.size(), layer_max, static_cast<long long>(n), static_cast<long long>(k),
          ours[static_cast<size_t>(first)], half_to_float(ref[static_cast<size_t>(first)]));
    }
  }
  std::printf(
      "exl2 checkpoint %s: %lld layers, %lld weights, %lld differ (%lld layers), "
      "max |diff| %.4g, %lld differ only in the sign of zero\n",
      manifest["model_dir"].get<std::string>().c_str(), static_cast<long long>(layers),
      static_cast<long long>(weights), static_cast<long long>(mismatches),
      static_cast<long long>(bad_layers), max_abs, static_cast<long long>(zero_sign_only));
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace hearth
