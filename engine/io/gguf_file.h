// GGUF v2/v3 reader: header, metadata of every value type, tensor infos, alignment, and
// dequantization of F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL and IQ4_XS
// tensors. Every count, size and offset is checked (overflow-safe) before anything is allocated or
// read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/host_tensor.h"

namespace hearth {

enum class GgufValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// ggml tensor types, numbered as in the GGUF file.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kBF16 = 30,
};

const char* ggml_type_name(GgmlType t);

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order: dims[0] is the fastest-varying (row length)
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;  // relative to the start of the data section
  uint64_t nbytes = 0;  // size of the stored (possibly quantized) data
};

class GgufFile {
 public:
  // Maps and parses a file. Throws Error(kIo) or Error(kInvalidFile) naming the file, the
  // key or tensor, and the byte offset of the defect.
  static GgufFile open(const std::filesystem::path& path);
  // Parses a GGUF image held in memory (the fuzz entry point). `bytes` must outlive the result.
  static GgufFile parse(std::span<const std::byte> bytes, std::string display_name = "<memory>");

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& display_name() const;
  uint32_t version() const;
  uint64_t alignment() const;

  std::vector<std::string> keys() const;
  bool has(std::string_view key) const;
  std::optional<GgufValueType> type(std::string_view key) const;
  // Typed accessors: nullopt when absent; Error(kInvalidFile) when present with another type.
  // get_int accepts every integer type (and checks the value fits int64).
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;  // F32 or F64
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;
  // Element count of an array value (without decoding it); nullopt when absent,
  // Error(kInvalidFile) when the value is not an array.
  std::optional<uint64_t> array_length(std::string_view key) const;
  // Human-readable rendering of a value (arrays abbreviated), for `hearth-cli info`.
  std::string describe(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor dequantized to F32, shape in row-major order (GGUF dims reversed).
  HostTensor dequantize(const GgufTensorInfo& tensor) const;
  // The stored bytes of a tensor (inside the mapping).
  std::span<const std::byte> raw_data(const GgufTensorInfo& tensor) const;
  uint64_t file_size() const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth
