// LoRA adapters on the CPU reference: an adapted model must equal the same model with the
// adapters merged into its weights (W + Σ w·s·B·A, computed here in double), per sequence of a
// batch; adapter files that do not fit the model are refused naming the adapter and tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#include "engine/model/llama_model.h"
#include "engine/model/lora_adapter.h"
#include "engine/quantizer/safetensors_writer.h"
#include "tests/common/tiny_model.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

struct Projection {
  const char* module;
  LoraProjection which;
};
constexpr Projection kAll[] = {
    {"self_attn.q_proj", LoraProjection::kQ}, {"self_attn.k_proj", LoraProjection::kK},
    {"self_attn.v_proj", LoraProjection::kV}, {"self_attn.o_proj", LoraProjection::kO},
    {"mlp.gate_proj", LoraProjection::kGate}, {"mlp.up_proj", LoraProjection::kUp},
    {"mlp.down_proj", LoraProjection::kDown}};

HostTensor random_tensor(std::mt19937& rng, std::vector<int64_t> shape, float scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return HostTensor::from_floats(std::move(v), shape);
}

// A PEFT adapter folder with random A and B on `targets` of every layer.
struct PeftSpec {
  int rank = 4;
  double alpha = 8;
  bool rslora = false;
  std::vector<int> targets;  // indices into kAll
  uint32_t seed = 1;
};

fs::path write_peft(
    const fs::path& dir, const ModelConfig& c, const PeftSpec& spec,
    const std::function<void(quantizer::NamedTensors&, nlohmann::json&)>& edit = {}) {
  fs::create_directories(dir);
  std::mt19937 rng(spec.seed);
  quantizer::NamedTensors tensors;
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    for (int t : spec.targets) {
      const auto [out, in] = lora_projection_shape(kAll[t].which, c);
      const std::string base =
          "base_model.model.model.layers." + std::to_string(layer) + "." + kAll[t].module;
      tensors.emplace_back(base + ".lora_A.weight", random_tensor(rng, {spec.rank, in}, 0.3f));
      tensors.emplace_back(base + ".lora_B.weight", random_tensor(rng, {out, spec.rank}, 0.3f));
    }
  }
  nlohmann::json config = {{"peft_type", "LORA"},
                           {"r", spec.rank},
                           {"lora_alpha", spec.alpha},
                           {"use_rslora", spec.rslora},
                           {"bias", "none"},
                           {"use_dora", false},
                           {"modules_to_save", nullptr},
                           {"fan_in_fan_out", false},
                           {"rank_pattern", nlohmann::json::object()},
                           {"alpha_pattern", nlohmann::json::object()}};
  if (edit) edit(tensors, config);
  quantizer::write_safetensors(dir / "adapter_model.safetensors", tensors);
  std::ofstream(dir / "adapter_config.json") << config.dump(2);
  return dir;
}

// The tiny model's weights with adapters merged in: W + Σ weight · scale · B·A.
class MergedWeights final : public TensorSource {
 public:
  MergedWeights(const ModelConfig& c,
                const std::vector<std::pair<const LoraAdapter*, double>>& adapters)
      : base_(c) {
    for (const auto& [adapter, weight] : adapters) {
      for (const LoraLinear& l : adapter->linears) {
        const std::string name = "model.layers." + std::to_string(l.layer) + "." +
                                 kAll[static_cast<int>(l.projection)].module + ".weight";
        auto it = merged_.find(name);
        if (it == merged_.end()) {
          const std::vector<float> w = base_.get(name).to_floats();
          it = merged_.emplace(name, std::vector<double>(w.begin(), w.end())).first;
        }
        const int64_t out = l.b.shape[0], in = l.a.shape[1], rank = l.rank();
        const float* a = l.a.as<float>();
        const float* b = l.b.as<float>();
        for (int64_t i = 0; i < out; ++i) {
          for (int64_t j = 0; j < in; ++j) {
            double d = 0;
            for (int64_t k = 0; k < rank; ++k) {
              d += static_cast<double>(b[i * rank + k]) * a[k * in + j];
            }
            it->second[static_cast<size_t>(i * in + j)] += weight * l.scale * d;
          }
        }
      }
    }
  }
  std::vector<std::string> tensor_names() const override { return base_.tensor_names(); }
  bool has(std::string_view name) const override { return base_.has(name); }
  TensorInfo info(std::string_view name) const override { return base_.info(name); }
  HostTensor get(std::string_view name) const override {
    const auto it = merged_.find(std::string(name));
    if (it == merged_.end()) return base_.get(name);
    return HostTensor::from_floats(std::vector<float>(it->second.begin(), it->second.end()),
                                   base_.info(name).shape);
  }
  uint64_t file_bytes() const override { return 0; }

 private:
  test::TinyWeights base_;
  std::map<std::string, std::vector<double>> merged_;
};

class LoraTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("hearth_lora_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Logits of every position of `prompts`, one sequence each, batched, each sequence weighing
  // the adapter slots as given.
  std::vector<std::vector<float>> logits(LlamaModel& model,
                                         const std::vector<std::vector<int32_t>>& prompts,
                                         const std::vector<std::vector<float>>& weights) {
    auto cache = backend_->create_kv_cache(model.kv_cache_spec(8, 64));
    std::vector<std::vector<int32_t>> pages;
    BatchDesc batch;
    for (size_t i = 0; i < prompts.size(); ++i)
      pages.push_back({int32_t(2 * i), int32_t(2 * i + 1)});
    for (size_t i = 0; i < prompts.size(); ++i) {
      SequenceSlice s;
      s.tokens = prompts[i];
      s.page_table = pages[i];
      s.all_logits = true;
      s.adapter_weights = weights[i];
      batch.seqs.push_back(s);
    }
    const DeviceTensor out = model.forward(batch, *cache);
    const std::vector<float> all = backend_->read(out, batch.logit_rows());
    std::vector<std::vector<float>> per_seq;
    size_t at = 0;
    for (const auto& p : prompts) {
      const size_t n = p.size() * static_cast<size_t>(out.cols);
      per_seq.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at),
                           all.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
    }
    return per_seq;
  }

  static double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double m = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
  }

  LlamaModel make_model(const TensorSource& weights) {
    return LlamaModel(config_, *backend_, weights, options_);
  }

  fs::path dir_;
  ModelConfig config_ = test::tiny_config();
  std::unique_ptr<Backend> backend_ = create_cpu_backend(1);
  LlamaModelOptions options_{128, 128, 128};
  const std::vector<std::vector<int32_t>> prompts_ = {
      {72, 101, 108, 108, 111, 32, 119}, {84, 104, 101, 32, 113}, {49, 44, 32, 50, 44, 32, 51, 44}};
};

TEST_F(LoraTest, AdaptedModelEqualsMergedWeightsPerSequence) {
  const LoraAdapter attn = read_lora_adapter(
      write_peft(dir_ / "attn", config_, {4, 8, false, {0, 1, 2, 3}, 11}), config_);
  const LoraAdapter all = read_lora_adapter(
      write_peft(dir_ / "all", config_, {8, 16, true, {0, 1, 2, 3, 4, 5, 6}, 12}), config_);
  EXPECT_EQ(attn.format, "peft");
  EXPECT_EQ(attn.max_rank(), 4);
  EXPECT_EQ(attn.linears.size(), 8u);
  EXPECT_FLOAT_EQ(attn.linears[0].scale, 2.0f);                    // alpha / r
  EXPECT_FLOAT_EQ(all.linears[0].scale, 16.0f / std::sqrt(8.0f));  // rsLoRA: alpha / √r
  EXPECT_EQ(all.target_names().size(), 7u);

  const test::TinyWeights base_weights(config_);
  LlamaModel model = make_model(base_weights);
  const auto base = logits(model, prompts_, {{}, {}, {}});
  model.set_adapters({std::make_shared<LoraAdapter>(attn), std::make_shared<LoraAdapter>(all)});

  // One batch: a sequence per adapter, one mixing both, and one with none.
  const std::vector<std::vector<float>> weights = {{1.0f, 0.0f}, {0.7f, 0.3f}, {}};
  const auto ours = logits(model, prompts_, weights);
  const MergedWeights only_attn(config_, {{&attn, 1.0}});
  const MergedWeights mixed(config_, {{&attn, 0.7}, {&all, 0.3}});
  LlamaModel model_attn = make_model(only_attn);
  LlamaModel model_mixed = make_model(mixed);
  const auto want_attn = logits(model_attn, prompts_, {{}, {}, {}});
  const auto want_mixed = logits(model_mixed, prompts_, {{}, {}, {}});
  EXPECT_LT(max_abs_diff(ours[0], want_attn[0]), 2e-4);
  EXPECT_LT(max_abs_diff(ours[1], want_mixed[1]), 2e-4);
  EXPECT_EQ(ours[2], base[2]);  // no weights: exactly the base model
  // The adapters do change the output (the comparison above is not vacuous).
  EXPECT_GT(max_abs_diff(ours[0], base[0]), 0.05);
  EXPECT_GT(max_abs_diff(ours[1], base[1]), 0.05);
  // Weights of 0 are the base model too, and a sequence alone gets what it got in the batch.
  const auto zero = logits(model, {prompts_[0]}, {{0.0f, 0.0f}});
  EXPECT_EQ(zero[0], base[0]);
  const auto alone = logits(model, {prompts_[1]}, {{0.7f, 0.3f}});
  EXPECT_EQ(alone[0], ours[1]);
}

TEST_F(LoraTest, ReplacingAdaptersTakesEffectWithoutReloading) {
  const LoraAdapter a =
      read_lora_adapter(write_peft(dir_ / "a", config_, {4, 4, false, {4, 5, 6}, 21}), config_);
  const LoraAdapter b =
      read_lora_adapter(write_peft(dir_ / "b", config_, {2, 4, false, {0, 6}, 22}), config_);
  const test::TinyWeights base_weights(config_);
  LlamaModel model = make_model(base_weights);
  model.set_adapters({std::make_shared<LoraAdapter>(a)});
  const auto with_a = logits(model, {prompts_[0]}, {{1.0f}});
  EXPECT_GT(model.adapter_bytes(), 0u);
  model.set_adapters({nullptr, std::make_shared<LoraAdapter>(b)});  // slot 0 emptied
  const auto with_b = logits(model, {prompts_[0]}, {{1.0f, 1.0f}});
  const MergedWeights only_b(config_, {{&b, 1.0}});
  LlamaModel model_b = make_model(only_b);
  EXPECT_LT(max_abs_diff(with_b[0], logits(model_b, {prompts_[0]}, {{}})[0]), 2e-4);
  EXPECT_GT(max_abs_diff(with_a[0], with_b[0]), 0.05);
  model.set_adapters({});
  EXPECT_EQ(model.adapter_bytes(), 0u);
}

// The error names the adapter and what is wrong; `fragment` must appear in it.
void expect_refused(const fs::path& path, const ModelConfig& c, ErrorCode code,
                    const std::string& fragment) {
  try {
    read_lora_adapter(path, c);
    ADD_FAILURE() << "accepted " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.filename().string()), std::string::npos) << e.what();
  }
}

TEST_F(LoraTest, RefusesAdaptersThatDoNotFit) {
  const PeftSpec spec{4, 8, false, {0, 4}, 31};
  // A tensor missing.
  expect_refused(write_peft(dir_ / "missing_b", config_, spec,
                            [](quantizer::NamedTensors& t, nlohmann::json&) { t.pop_back(); }),
                 config_, ErrorCode::kInvalidFile, "model.layers.1.mlp.gate_proj has lora A");
  // NaN.
  expect_refused(
      write_peft(dir_ / "nan", config_, spec,
                 [](quantizer::NamedTensors& t, nlohmann::json&) {
                   t[1].second = HostTensor::from_floats(
                       std::vector<float>(static_cast<size_t>(t[1].second.numel()), std::nanf("")),
                       t[1].second.shape);
                 }),
      config_, ErrorCode::kInvalidFile, "non-finite");
  // Rank 0.
  expect_refused(write_peft(dir_ / "rank0", config_, {0, 8, false, {0}, 32}), config_,
                 ErrorCode::kInvalidFile, "rank 0");
  // Another model's shapes: made for a wider model.
  ModelConfig wide = config_;
  wide.hidden_size = 96;
  wide.head_dim = 24;
  expect_refused(write_peft(dir_ / "other_model", wide, spec), config_, ErrorCode::kInvalidFile,
                 "another model");
  // More layers than the model.
  ModelConfig deep = config_;
  deep.num_layers = 3;
  expect_refused(write_peft(dir_ / "deep", deep, spec), config_, ErrorCode::kInvalidFile,
                 "the model has 2 layers");
  // Features Hearth does not apply.
  expect_refused(
      write_peft(dir_ / "dora", config_, spec,
                 [](quantizer::NamedTensors&, nlohmann::json& j) { j["use_dora"] = true; }),
      config_, ErrorCode::kUnsupported, "DoRA");
  expect_refused(write_peft(dir_ / "bias", config_, spec,
                            [](quantizer::NamedTensors&, nlohmann::json& j) { j["bias"] = "all"; }),
                 config_, ErrorCode::kUnsupported, "bias");
  expect_refused(write_peft(dir_ / "embed", config_, spec,
                            [&](quantizer::NamedTensors& t, nlohmann::json&) {
                              std::mt19937 rng(3);
                              t.emplace_back("base_model.model.model.embed_tokens.lora_embedding_A",
                                             random_tensor(rng, {4, config_.vocab_size}, 1));
                            }),
                 config_, ErrorCode::kUnsupported, "embed_tokens");
  expect_refused(write_peft(dir_ / "rank_mismatch", config_, spec,
                            [](quantizer::NamedTensors&, nlohmann::json& j) { j["r"] = 8; }),
                 config_, ErrorCode::kInvalidFile, "adapter_config.json says");
  // A pickle checkpoint is never opened.
  fs::create_directories(dir_ / "pickled");
  std::ofstream(dir_ / "pickled" / "adapter_config.json") << R"({"r": 4, "lora_alpha": 8})";
  std::ofstream(dir_ / "pickled" / "adapter_model.bin") << "\x80\x02}q\x00.";
  try {
    read_lora_adapter(dir_ / "pickled", config_);
    ADD_FAILURE() << "a pickle adapter was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
  }
  EXPECT_TRUE(is_lora_adapter_path(dir_ / "pickled"));
  EXPECT_FALSE(is_lora_adapter_path(dir_ / "nothing_here"));
}

TEST_F(LoraTest, RankAndAlphaPatternsSetEachModulesScale) {
  const fs::path path =
      write_peft(dir_ / "patterns", config_, {4, 8, false, {0, 1}, 41},
                 [](quantizer::NamedTensors& t, nlohmann::json& j) {
                   // k_proj of every layer gets rank 2: cut its A and B.
                   for (auto& [name, tensor] : t) {
                     if (name.find("k_proj") == std::string::npos) continue;
                     const bool is_a = name.find("lora_A") != std::string::npos;
                     std::vector<float> v = tensor.to_floats();
                     std::vector<float> cut;
                     const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
                     for (int64_t r = 0; r < (is_a ? 2 : rows); ++r) {
                       for (int64_t c = 0; c < (is_a ? cols : 2); ++c)
                         cut.push_back(v[r * cols + c]);
                     }
                     tensor = HostTensor::from_floats(cut, {is_a ? 2 : rows, is_a ? cols : 2});
                   }
                   j["rank_pattern"] = {{"k_proj", 2}};
                   j["alpha_pattern"] = {{"model.layers.1.self_attn.q_proj", 2}};
                 });
  const LoraAdapter a = read_lora_adapter(path, config_);
  for (const LoraLinear& l : a.linears) {
    if (l.projection == LoraProjection::kK) {
      EXPECT_EQ(l.rank(), 2);
      EXPECT_FLOAT_EQ(l.scale, 4.0f);
    } else {
      EXPECT_FLOAT_EQ(l.scale, l.layer == 1 ? 0.5f : 2.0f);
    }
  }
}

}  // namespace
}  // namespace hearth
