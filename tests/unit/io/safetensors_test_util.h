// Writes small safetensors images the way the reference writer does (header padded with spaces
// to a multiple of 8, tensors in order).
#pragma once

#include <string>
#include <vector>

#include "tests/unit/io/io_test_util.h"

namespace hearth::test {

struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  Bytes data;
};

inline Bytes make_safetensors(const std::vector<StTensor>& tensors,
                              const nlohmann::json& metadata = nullptr, bool pad = true) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.is_null()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  Bytes data;
  for (const auto& t : tensors) {
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
    data.insert(data.end(), t.data.begin(), t.data.end());
  }
  std::string text = header.dump();
  if (pad) {
    while ((text.size() + 8) % 8) text += ' ';
  }
  return safetensors_image(text, data);
}

inline Bytes f32_bytes(const std::vector<float>& v) {
  ByteWriter w;
  for (float f : v) w.f32(f);
  return w.take();
}

}  // namespace hearth::test
