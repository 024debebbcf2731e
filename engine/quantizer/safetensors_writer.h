// Writes safetensors files the way the reference implementation does: 8-byte header length,
// JSON header (no __metadata__), padded with spaces to a multiple of 8 bytes, tensors packed in
// the given order. The file appears atomically (written beside it, then renamed).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/host_tensor.h"

namespace hearth::quantizer {

using NamedTensors = std::vector<std::pair<std::string, HostTensor>>;

// Throws Error(kIo) naming the file when it cannot be written.
void write_safetensors(const std::filesystem::path& path, const NamedTensors& tensors);

// Bytes write_safetensors would write for these tensors.
uint64_t safetensors_file_size(const NamedTensors& tensors);

// Writes `bytes` to `path` through a temporary file in the same folder and a rename, with the
// data flushed to disk first, so a crash leaves either the old or the new file.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

}  // namespace hearth::quantizer
