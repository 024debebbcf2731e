// libFuzzer target: a LoRA adapter (engine/model/lora_adapter.h) from fuzzed bytes, as a GGUF
// adapter or as a PEFT folder, read against a small Llama config. A malformed adapter must be a
// hearth::Error; any other exception, a crash or a sanitizer report is a finding, and so is an
// adapter accepted with a linear that does not fit the model.
//
// Input: byte 0 even: the rest is a .gguf file; odd: bytes 1-2 (little endian) are the length of
// adapter_config.json, which follows, and the rest is adapter_model.safetensors. The files are
// written to a folder of this process under the temporary directory, since the reader takes
// paths. Seeds: tests/fuzz/make_seeds.py (fuzz_lora_adapter); dictionary: lora_adapter.dict.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "engine/core/error.h"
#include "engine/io/model_config.h"
#include "engine/model/lora_adapter.h"

namespace {

// make_seeds.py's adapters are for this shape: 2 layers, hidden 16, 4 heads of 4, 2 kv heads,
// MLP 32.
hearth::ModelConfig small_llama() {
  hearth::ModelConfig c;
  c.vocab_size = 8;
  c.hidden_size = 16;
  c.intermediate_size = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 4;
  return c;
}

// The process's folder for the files of one input, removed when the process ends.
struct WorkFolder {
  WorkFolder()
      : path(std::filesystem::temp_directory_path() /
             ("hearth-fuzz-lora-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path / "peft");
  }
  ~WorkFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::filesystem::path path;
};

void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

void check(const hearth::LoraAdapter& adapter, const hearth::ModelConfig& config) {
  if (adapter.linears.empty()) __builtin_trap();
  for (const hearth::LoraLinear& l : adapter.linears) {
    const auto [out, in] = hearth::lora_projection_shape(l.projection, config);
    if (l.layer < 0 || l.layer >= config.num_layers) __builtin_trap();
    if (l.a.shape.size() != 2 || l.b.shape.size() != 2 || l.rank() <= 0) __builtin_trap();
    if (l.a.shape[1] != in || l.b.shape[0] != out || l.b.shape[1] != l.rank()) __builtin_trap();
    if (l.a.dtype != hearth::DType::kF32 || l.b.dtype != hearth::DType::kF32) __builtin_trap();
    if (!std::isfinite(l.scale)) __builtin_trap();
    for (const hearth::HostTensor* t : {&l.a, &l.b}) {
      const float* v = t->as<float>();
      for (int64_t i = 0; i < t->numel(); ++i) {
        if (!std::isfinite(v[i])) __builtin_trap();
      }
    }
  }
  (void)adapter.max_rank();
  (void)adapter.layer_count();
  (void)adapter.target_names();
  (void)adapter.parameter_count();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const hearth::ModelConfig config = small_llama();
  static const WorkFolder work;
  const std::filesystem::path& folder = work.path;
  std::filesystem::path path;
  if (data[0] % 2 == 0) {
    path = folder / "adapter.gguf";
    write_file(path, data + 1, size - 1);
  } else {
    if (size < 3) return 0;
    const size_t config_bytes = std::min<size_t>(data[1] | (size_t(data[2]) << 8), size - 3);
    path = folder / "peft";
    write_file(path / "adapter_config.json", data + 3, config_bytes);
    write_file(path / "adapter_model.safetensors", data + 3 + config_bytes,
               size - 3 - config_bytes);
  }
  (void)hearth::is_lora_adapter_path(path);
  try {
    check(hearth::read_lora_adapter(path, config), config);
  } catch (const hearth::Error&) {
    // A clear refusal: what a malformed adapter must give.
  }
  return 0;
}
