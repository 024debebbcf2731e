// safetensors files: header parsing and validation as strict as the reference implementation
// (huggingface/safetensors), zero-copy tensor views, and sharded indexes.
//
// Layout: 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data buffer.
// The JSON maps tensor names to {dtype, shape, data_offsets: [begin, end]} (relative to the
// data buffer) plus an optional "__metadata__" string->string map.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/core/host_tensor.h"

namespace hearth {

class MappedFile;

inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;  // as the reference

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;      // as written ("F16", "BOOL", "F8_E4M3", ...)
  std::optional<DType> dtype;  // nullopt: a valid safetensors dtype Hearth does not load
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets relative to the data buffer
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  // Maps and validates a file. Error(kIo) when it cannot be read; Error(kInvalidFile) naming
  // the file, tensor and byte offset when malformed; Error(kUnsupported) for pickle checkpoints.
  static SafetensorsFile open(const std::filesystem::path& path);
  // Validates an image held in memory (the fuzz entry point). `bytes` must outlive the result.
  static SafetensorsFile parse(std::span<const std::byte> bytes,
                               std::string display_name = "<memory>");

  const std::string& display_name() const { return name_; }
  // Tensors in data order (by offset).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  uint64_t data_offset() const { return data_offset_; }  // 8 + N
  uint64_t file_size() const { return bytes_.size(); }

  std::span<const std::byte> raw_data(const SafetensorsTensor& t) const;
  // A view into the mapping (keep_alive holds it); copied only when the bytes are not aligned
  // to the element size. Error(kUnsupported) for dtypes Hearth does not load.
  HostTensor tensor(const SafetensorsTensor& t) const;

 private:
  SafetensorsFile() = default;
  void parse_header();

  std::string name_;
  std::span<const std::byte> bytes_;
  std::shared_ptr<const MappedFile> mapping_;  // null for parse()
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::vector<uint32_t> by_name_;  // indices into tensors_, sorted by name
  std::map<std::string, std::string> metadata_;
};

// Bits per element of a safetensors dtype name (F4 = 4, F6_* = 6, BOOL = 8, ...), nullopt when
// the name is not a safetensors dtype.
std::optional<uint64_t> safetensors_dtype_bits(std::string_view name);

// The DType of a safetensors dtype name Hearth loads; nullopt for other (or unknown) names.
std::optional<DType> safetensors_dtype(std::string_view name);

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file}}.
struct SafetensorsIndex {
  std::map<std::string, std::string> weight_map;  // tensor -> shard, relative to the folder
  std::vector<std::string> shards;                // distinct shards, in first-seen order
};

// Parses and checks an index: weight_map present, every value a plain relative file name
// without "..", absolute paths, backslashes or NUL. Touches no file (the fuzz entry point).
SafetensorsIndex parse_safetensors_index(std::string_view json, const std::string& display_name);

// True for names of pickle-based checkpoints (pytorch_model.bin, *.pt, *.pth, *.bin, *.ckpt,
// *.pkl), which Hearth refuses to open.
bool is_pickle_checkpoint_name(const std::filesystem::path& path);
// Error(kUnsupported): Hearth never opens pickle checkpoints.
[[noreturn]] void refuse_pickle_checkpoint(const std::filesystem::path& path);
// True when `head` (the first bytes of a file) starts like a pickle, a zip (torch.save), or a
// 7z archive.
bool looks_like_pickle_or_archive(std::span<const std::byte> head);

}  // namespace hearth
