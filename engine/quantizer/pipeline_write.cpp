// The write stage: the output folder (fp16 embeddings and norms, the packed layers in shards,
// the source's side files, config.json with its quantization_config).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/io/gguf_file.h"
#include "engine/io/safetensors.h"
#include "engine/quantizer/hf_export.h"
#include "engine/quantizer/pipeline_state.h"
#include "engine/quantizer/safetensors_writer.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

HostTensor fp16_of(const std::vector<float>& v, std::vector<int64_t> shape,
                   std::vector<std::string>* warnings, const std::string& name) {
  HostTensor t = HostTensor::allocate(DType::kF16, std::move(shape));
  auto* out = static_cast<uint16_t*>(t.mutable_data());
  int64_t clamped = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    float x = v[i];
    if (std::fabs(x) > 65504.0f && std::isfinite(x)) {
      x = std::copysign(65504.0f, x);
      ++clamped;
    }
    out[i] = float_to_half(x);
  }
  if (clamped && warnings) {
    warnings->push_back(name + ": " + std::to_string(clamped) +
                        " values beyond the fp16 range were clamped to ±65504");
  }
  return t;
}

}  // namespace

std::vector<std::pair<std::string, HostTensor>> QuantPipeline::Impl::output_tensors() {
  std::vector<std::pair<std::string, HostTensor>> t;
  std::vector<std::string>* warns = &state.warnings;
  const int64_t H = config.hidden_size;
  auto dense = [&](const std::string& name) {
    const HostTensor src = bundle.weights->get(name);
    t.emplace_back(name, fp16_of(to_floats(src), src.shape, warns, name));
  };
  auto packed = [&](const std::string& name) {
    SafetensorsFile f = SafetensorsFile::open(layer_file(name));
    for (const auto& st : f.tensors()) {
      // Copy out of the mapping (the file object goes away).
      const HostTensor v = f.tensor(st);
      HostTensor c = HostTensor::allocate(v.dtype, v.shape);
      std::memcpy(c.mutable_data(), v.data, v.nbytes());
      t.emplace_back(st.name, std::move(c));
    }
  };
  (void)H;
  dense("model.embed_tokens.weight");
  for (int64_t i = 0; i < config.num_layers; ++i) {
    const std::string p = layer_key(i) + ".";
    dense(p + "input_layernorm.weight");
    for (const char* proj : kAttnProj) packed(p + "self_attn." + proj);
    dense(p + "post_attention_layernorm.weight");
    for (const char* proj : kMlpProj) packed(p + "mlp." + proj);
  }
  dense("model.norm.weight");
  if (quantize_head()) {
    packed("lm_head");
  } else if (bundle.weights->has("lm_head.weight")) {
    dense("lm_head.weight");
  }
  return t;
}

void QuantPipeline::Impl::copy_side_files(const fs::path& out) {
  if (bundle.gguf) {
    write_tokenizer_files_from_gguf(*bundle.gguf, config, out);
    return;
  }
  for (const auto& e : fs::directory_iterator(opt.source)) {
    if (!e.is_regular_file()) continue;
    const std::string n = e.path().filename().string();
    const std::string ext = e.path().extension().string();
    if (ext == ".safetensors" || ext == ".bin" || ext == ".pt" || ext == ".pth" || ext == ".gguf" ||
        ext == ".ckpt" || n == "model.safetensors.index.json" || n == "config.json" ||
        n == "quantize_config.json" || n.starts_with(".")) {
      continue;
    }
    fs::copy_file(e.path(), out / n, fs::copy_options::overwrite_existing);
  }
}

void QuantPipeline::Impl::write_config(const fs::path& out) {
  nlohmann::ordered_json cfg;
  if (!bundle.gguf) {
    std::ifstream in(opt.source / "config.json");
    std::ostringstream ss;
    ss << in.rdbuf();
    cfg = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
    if (cfg.is_discarded() || !cfg.is_object()) {
      fail(ErrorCode::kInvalidFile, (opt.source / "config.json").string() + " is not JSON");
    }
  } else {
    cfg = config_json_from(config);
  }
  cfg["torch_dtype"] = "float16";
  nlohmann::ordered_json q;
  if (exl2()) {
    q["quant_method"] = "exl2";
    q["version"] = "0.3.2";
    q["bits"] = opt.target_bpw;
    q["head_bits"] = opt.head_bits;
    q["calibration"] = {
        {"rows", opt.rows},
        {"length", opt.length},
        {"dataset", opt.calibration_file.empty() ? std::string("(default)")
                                                 : opt.calibration_file.filename().string()}};
    q["quantizer"] = "Hearth";
  } else {
    q["bits"] = opt.bits;
    q["group_size"] = opt.group_size;
    q["damp_percent"] = opt.damp_percent;
    q["desc_act"] = opt.act_order;
    q["static_groups"] = false;
    q["sym"] = opt.symmetric;
    q["true_sequential"] = true;
    q["model_name_or_path"] = nullptr;
    q["model_file_base_name"] = "model";
    q["quant_method"] = "gptq";
    q["checkpoint_format"] = "gptq";
    q["lm_head"] = opt.quantize_head;
    write_file_atomically(out / "quantize_config.json", q.dump(2) + "\n");
  }
  cfg["quantization_config"] = q;
  write_file_atomically(out / "config.json", cfg.dump(2) + "\n");
}

void QuantPipeline::Impl::run_write() {
  state.steps = 1;
  state.step = 0;
  report(opt.output.string());
  std::error_code ec;
  fs::create_directories(opt.output, ec);
  if (ec) fail(ErrorCode::kIo, opt.output.string() + ": cannot create: " + ec.message());
  // Remove shards of an interrupted earlier write.
  for (const auto& e : fs::directory_iterator(opt.output)) {
    if (e.path().extension() == ".safetensors") fs::remove(e.path(), ec);
  }
  auto tensors = output_tensors();
  const uint64_t limit =
      opt.shard_size_mb <= 0 ? UINT64_MAX : static_cast<uint64_t>(opt.shard_size_mb) << 20;
  std::vector<NamedTensors> shards(1);
  uint64_t cur = 0;
  for (auto& nt : tensors) {
    const uint64_t sz = nt.second.nbytes();
    if (!shards.back().empty() && cur + sz > limit) {
      shards.emplace_back();
      cur = 0;
    }
    cur += sz;
    shards.back().push_back(std::move(nt));
  }
  const size_t N = shards.size();
  auto name = [&](size_t i) {
    const std::string base = exl2() ? "output" : "model";
    if (N == 1) return base + ".safetensors";
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.safetensors", i + 1, N);
    return base + buf;
  };
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < N; ++i) {
    cancel.throw_if_cancelled();
    write_safetensors(opt.output / name(i), shards[i]);
    for (const auto& nt : shards[i]) weight_map[nt.first] = name(i);
  }
  if (!exl2() && N > 1) {  // Hugging Face sharded layout for GPTQ (EXL2 writes no index)
    nlohmann::ordered_json idx{{"metadata", json::object()}, {"weight_map", weight_map}};
    write_file_atomically(opt.output / "model.safetensors.index.json", idx.dump(2) + "\n");
  }
  copy_side_files(opt.output);
  write_config(opt.output);
  state.step = 1;
  save();
}

}  // namespace hearth::quantizer
