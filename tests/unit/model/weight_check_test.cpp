// LlamaModel::check_weights: every tensor a config implies must be present with its shape, and
// the first one that is not is named. Loading refuses the same models with the same message,
// before it uploads anything.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/model/llama_model.h"
#include "tests/common/tiny_model.h"

namespace hearth {
namespace {

// The tiny model's weights with one tensor hidden or given another shape.
class AlteredWeights final : public TensorSource {
 public:
  explicit AlteredWeights(const ModelConfig& config) : inner_(config) {}
  std::set<std::string> hidden;
  std::string reshaped;  // reported with a shape one row short

  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const std::string& n : inner_.tensor_names()) {
      if (!hidden.count(n)) names.push_back(n);
    }
    return names;
  }
  bool has(std::string_view name) const override {
    return !hidden.count(std::string(name)) && inner_.has(name);
  }
  TensorInfo info(std::string_view name) const override {
    if (!has(name)) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
    TensorInfo info = inner_.info(name);
    if (name == reshaped) info.shape[0] -= 1;
    return info;
  }
  HostTensor get(std::string_view name) const override {
    if (!has(name)) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
    return inner_.get(name);
  }
  uint64_t file_bytes() const override { return 0; }

 private:
  test::TinyWeights inner_;
};

// The message of the Error(kInvalidFile) that `f` throws; fails the test for anything else.
template <typename F>
std::string invalid_file_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

TEST(WeightCheck, CompleteWeightsPass) {
  const ModelConfig config = test::tiny_config();
  EXPECT_NO_THROW(LlamaModel::check_weights(config, AlteredWeights(config)));
}

TEST(WeightCheck, EachMissingTensorIsNamed) {
  const ModelConfig config = test::tiny_config();
  for (const std::string name :
       {"model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
        "model.layers.1.self_attn.k_proj.weight", "model.layers.1.mlp.down_proj.weight",
        "model.layers.0.post_attention_layernorm.weight", "model.norm.weight"}) {
    AlteredWeights weights(config);
    weights.hidden = {name};
    const std::string message =
        invalid_file_message([&] { LlamaModel::check_weights(config, weights); });
    EXPECT_NE(message.find(name), std::string::npos) << message;
  }
}

TEST(WeightCheck, AMisshapenTensorIsNamedWithBothShapes) {
  const ModelConfig config = test::tiny_config();
  AlteredWeights weights(config);
  weights.reshaped = "model.layers.1.mlp.gate_proj.weight";
  const std::string message =
      invalid_file_message([&] { LlamaModel::check_weights(config, weights); });
  EXPECT_NE(message.find("model.layers.1.mlp.gate_proj.weight has shape [95, 64]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("needs [96, 64]"), std::string::npos) << message;
}

TEST(WeightCheck, AnUntiedModelNeedsItsHead) {
  ModelConfig config = test::tiny_config();
  config.tie_word_embeddings = false;  // the tiny weights have no lm_head
  const std::string message =
      invalid_file_message([&] { LlamaModel::check_weights(config, AlteredWeights(config)); });
  EXPECT_NE(message.find("no lm_head"), std::string::npos) << message;
}

TEST(WeightCheck, LoadingRefusesWhatTheCheckRefuses) {
  const ModelConfig config = test::tiny_config();
  AlteredWeights weights(config);
  weights.hidden = {"model.layers.1.mlp.up_proj.weight"};
  auto backend = create_cpu_backend(1);
  int64_t uploaded = 0;
  const std::string message = invalid_file_message([&] {
    LlamaModel model(config, *backend, weights, LlamaModelOptions{},
                     [&](int64_t done, int64_t) { uploaded = done; });
  });
  EXPECT_NE(message.find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << message;
  EXPECT_EQ(uploaded, 0) << "the check runs before any weight is uploaded";
}

}  // namespace
}  // namespace hearth
