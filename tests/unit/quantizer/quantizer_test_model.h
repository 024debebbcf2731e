// A tiny Llama model written as a Hugging Face folder (config.json, model.safetensors, a
// byte-level tokenizer.json) for whole quantization jobs, and a double-precision forward pass
// of its decoder written independently of the engine, to recompute every layer's input
// Hessian in the tests.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer::test {

struct TinySpec {
  int64_t vocab = 260, hidden = 64, inter = 96, layers = 2, heads = 4, kv_heads = 2, head_dim = 16;
  double rope_theta = 10000, eps = 1e-5;
  bool tied = true;
  std::string omit;  // a tensor left out of model.safetensors (tests of incomplete models)
};

// GPT-2's byte -> printable character map, as UTF-8 strings.
inline std::vector<std::string> byte_symbols() {
  std::vector<int> bs;
  for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
  for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
  for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
  std::vector<int> cs = bs;
  int n = 0;
  for (int b = 0; b < 256; ++b) {
    if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
      bs.push_back(b);
      cs.push_back(256 + n++);
    }
  }
  std::vector<std::string> out(256);
  for (size_t i = 0; i < bs.size(); ++i) {
    const int c = cs[i];
    std::string s;
    if (c < 0x80) {
      s += static_cast<char>(c);
    } else {
      s += static_cast<char>(0xC0 | (c >> 6));
      s += static_cast<char>(0x80 | (c & 0x3F));
    }
    out[static_cast<size_t>(bs[i])] = s;
  }
  return out;
}

inline std::map<std::string, std::vector<float>> write_tiny_model(const std::filesystem::path& dir,
                                                                  const TinySpec& s,
                                                                  uint32_t seed = 7) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  std::mt19937 rng(seed);
  std::map<std::string, std::vector<float>> w;
  NamedTensors tensors;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float mean) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    std::normal_distribution<float> dist(mean, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = half_to_float(float_to_half(dist(rng)));  // exact in fp16
    HostTensor t = HostTensor::allocate(DType::kF16, shape);
    auto* p = static_cast<uint16_t*>(t.mutable_data());
    for (size_t i = 0; i < v.size(); ++i) p[i] = float_to_half(v[i]);
    if (name == s.omit) return;
    tensors.emplace_back(name, t);
    w[name] = std::move(v);
  };
  const int64_t H = s.hidden, I = s.inter, Q = s.heads * s.head_dim, KV = s.kv_heads * s.head_dim;
  add("model.embed_tokens.weight", {s.vocab, H}, 1.0f, 0);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    add(p + "input_layernorm.weight", {H}, 0.1f, 1.0f);
    add(p + "self_attn.q_proj.weight", {Q, H}, 0.15f, 0);
    add(p + "self_attn.k_proj.weight", {KV, H}, 0.15f, 0);
    add(p + "self_attn.v_proj.weight", {KV, H}, 0.15f, 0);
    add(p + "self_attn.o_proj.weight", {H, Q}, 0.15f, 0);
    add(p + "post_attention_layernorm.weight", {H}, 0.1f, 1.0f);
    add(p + "mlp.gate_proj.weight", {I, H}, 0.15f, 0);
    add(p + "mlp.up_proj.weight", {I, H}, 0.15f, 0);
    add(p + "mlp.down_proj.weight", {H, I}, 0.15f, 0);
  }
  add("model.norm.weight", {H}, 0.1f, 1.0f);
  if (!s.tied) add("lm_head.weight", {s.vocab, H}, 0.1f, 0);
  write_safetensors(dir / "model.safetensors", tensors);

  nlohmann::json cfg{{"architectures", {"LlamaForCausalLM"}},
                     {"model_type", "llama"},
                     {"vocab_size", s.vocab},
                     {"hidden_size", H},
                     {"intermediate_size", I},
                     {"num_hidden_layers", s.layers},
                     {"num_attention_heads", s.heads},
                     {"num_key_value_heads", s.kv_heads},
                     {"head_dim", s.head_dim},
                     {"rms_norm_eps", s.eps},
                     {"rope_theta", s.rope_theta},
                     {"max_position_embeddings", 512},
                     {"tie_word_embeddings", s.tied},
                     {"bos_token_id", 256},
                     {"eos_token_id", 257},
                     {"torch_dtype", "float16"}};
  std::ofstream(dir / "config.json") << cfg.dump(1);

  const auto sym = byte_symbols();
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  for (int b = 0; b < 256; ++b) vocab[sym[b]] = b;
  nlohmann::json added = nlohmann::json::array();
  const char* specials[] = {"<s>", "</s>", "<pad>", "<unk>"};
  for (int i = 0; i < 4; ++i) {
    vocab[specials[i]] = 256 + i;
    added.push_back({{"id", 256 + i},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  nlohmann::ordered_json tok;
  tok["version"] = "1.0";
  tok["added_tokens"] = added;
  tok["normalizer"] = nullptr;
  tok["pre_tokenizer"] = {{"type", "ByteLevel"},
                          {"add_prefix_space", false},
                          {"trim_offsets", true},
                          {"use_regex", true}};
  tok["post_processor"] = nullptr;
  tok["decoder"] = {{"type", "ByteLevel"},
                    {"add_prefix_space", true},
                    {"trim_offsets", true},
                    {"use_regex", true}};
  tok["model"] = {{"type", "BPE"},
                  {"dropout", nullptr},
                  {"unk_token", nullptr},
                  {"continuing_subword_prefix", nullptr},
                  {"end_of_word_suffix", nullptr},
                  {"fuse_unk", false},
                  {"byte_fallback", false},
                  {"vocab", vocab},
                  {"merges", nlohmann::json::array()}};
  std::ofstream(dir / "tokenizer.json") << tok.dump(1);
  std::ofstream(dir / "tokenizer_config.json")
      << R"({"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": false})";
  std::ofstream(dir / "README.md") << "tiny test model\n";
  return w;
}

// --- an independent double-precision decoder -------------------------------------------

using Mat = std::vector<double>;  // row-major

inline Mat matmul_t(const Mat& x, int64_t T, int64_t K, const std::vector<float>& w, int64_t N) {
  Mat y(static_cast<size_t>(T * N), 0.0);  // y = x · Wᵀ, W [N, K]
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += x[t * K + k] * w[n * K + k];
      y[t * N + n] = s;
    }
  }
  return y;
}

inline Mat rms_norm(const Mat& x, int64_t T, int64_t H, const std::vector<float>& w, double eps) {
  Mat y(x.size());
  for (int64_t t = 0; t < T; ++t) {
    double ss = 0;
    for (int64_t i = 0; i < H; ++i) ss += x[t * H + i] * x[t * H + i];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(H) + eps);
    for (int64_t i = 0; i < H; ++i) y[t * H + i] = x[t * H + i] * r * w[i];
  }
  return y;
}

inline void rope(Mat& x, int64_t T, int64_t heads, int64_t d, double theta) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      double* v = x.data() + t * heads * d + h * d;
      for (int64_t i = 0; i < d / 2; ++i) {
        const double f = static_cast<double>(static_cast<float>(
            1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(d))));
        const double a = static_cast<double>(t) * f;
        const double x0 = v[i], x1 = v[i + d / 2];
        v[i] = x0 * std::cos(a) - x1 * std::sin(a);
        v[i + d / 2] = x1 * std::cos(a) + x0 * std::sin(a);
      }
    }
  }
}

inline Mat attention(const Mat& q, const Mat& k, const Mat& v, int64_t T, const TinySpec& s) {
  const int64_t d = s.head_dim, group = s.heads / s.kv_heads;
  Mat out(static_cast<size_t>(T * s.heads * d), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  std::vector<double> p(static_cast<size_t>(T));
  for (int64_t h = 0; h < s.heads; ++h) {
    const int64_t kh = h / group;
    for (int64_t t = 0; t < T; ++t) {
      double mx = -1e300;
      for (int64_t u = 0; u <= t; ++u) {
        double sc = 0;
        for (int64_t i = 0; i < d; ++i) {
          sc += q[t * s.heads * d + h * d + i] * k[u * s.kv_heads * d + kh * d + i];
        }
        p[u] = sc * scale;
        mx = std::max(mx, p[u]);
      }
      double sum = 0;
      for (int64_t u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - mx));
      for (int64_t u = 0; u <= t; ++u) {
        for (int64_t i = 0; i < d; ++i) {
          out[t * s.heads * d + h * d + i] += p[u] / sum * v[u * s.kv_heads * d + kh * d + i];
        }
      }
    }
  }
  return out;
}

}  // namespace hearth::quantizer::test
