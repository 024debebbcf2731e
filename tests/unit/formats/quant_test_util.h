// Shared by the engine/quant tests: the committed fixture manifests, a tensor source held in
// memory (to derive malformed variants of real fixtures), and fp16-exact comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/core/host_tensor.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/io/tensor_source.h"
#include "tests/common/test_paths.h"

namespace hearth::test {

// A fixture set: tests/fixtures/quant/<set>/manifest.json and its files.
struct QuantFixtureSet {
  std::filesystem::path dir;
  nlohmann::json manifest;
};

inline std::optional<QuantFixtureSet> load_quant_fixtures(const std::string& set) {
  QuantFixtureSet s;
  s.dir = fixtures_dir() / "quant" / set;
  std::ifstream in(s.dir / "manifest.json");
  if (!in) return std::nullopt;
  s.manifest = nlohmann::json::parse(in);
  return s;
}

inline QuantizedLinearOptions case_options(const nlohmann::json& c) {
  QuantizedLinearOptions o;
  if (c.contains("config") && !c["config"].is_null())
    o.quantization_config_json = c["config"].dump();
  o.out_features = c["out_features"].get<int64_t>();
  o.in_features = c["in_features"].get<int64_t>();
  return o;
}

// The expected matrix of a case ([N, K] F16 tensor "expected") as fp16 bit patterns.
inline std::vector<uint16_t> expected_bits(const TensorSource& src) {
  const HostTensor t = src.get("expected");
  EXPECT_EQ(t.dtype, DType::kF16);
  const auto* p = t.as<uint16_t>();
  return std::vector<uint16_t>(p, p + t.numel());
}

// Tensors held in memory, copied from another source; tests replace or drop single tensors.
class MemorySource final : public TensorSource {
 public:
  explicit MemorySource(const TensorSource& from, std::string file = "memory.safetensors")
      : file_(std::move(file)) {
    for (const auto& name : from.tensor_names()) {
      const HostTensor t = from.get(name);
      set(name, t.dtype, t.shape, t.data);
    }
  }
  void set(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data) {
    HostTensor t = HostTensor::allocate(dtype, std::move(shape));
    if (data) std::memcpy(t.mutable_data(), data, t.nbytes());
    tensors_[name] = std::move(t);
  }
  template <class T>
  T* data(const std::string& name) {
    return static_cast<T*>(tensors_.at(name).mutable_data());
  }
  void drop(const std::string& name) { tensors_.erase(name); }

  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& [n, t] : tensors_) names.push_back(n);
    return names;
  }
  bool has(std::string_view name) const override { return tensors_.count(std::string(name)) > 0; }
  TensorInfo info(std::string_view name) const override {
    const auto it = tensors_.find(std::string(name));
    if (it == tensors_.end()) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
    TensorInfo i;
    i.name = it->first;
    i.dtype = it->second.dtype;
    i.shape = it->second.shape;
    i.stored_type = std::string(dtype_name(it->second.dtype));
    i.file = file_;
    return i;
  }
  HostTensor get(std::string_view name) const override {
    const auto it = tensors_.find(std::string(name));
    if (it == tensors_.end()) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
    return it->second;
  }
  uint64_t file_bytes() const override { return 0; }

 private:
  std::string file_;
  std::map<std::string, HostTensor> tensors_;
};

// Runs fn, which must throw hearth::Error with `code` and a message containing every needle.
template <class Fn>
void expect_error(Fn&& fn, ErrorCode code, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected " << error_code_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& n : needles) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << n << "\"";
    }
  }
}

}  // namespace hearth::test
