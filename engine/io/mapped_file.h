// A read-only memory mapping of a whole file. Model files are only ever read through mappings,
// so opening a multi-gigabyte file costs no reading until its bytes are touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

namespace hearth {

class MappedFile {
 public:
  // Maps `path` read-only. Throws Error(kIo) naming the file and the reason when it cannot be
  // opened or mapped (missing, a directory, permission denied, ...). An empty file maps to an
  // empty span.
  static std::shared_ptr<const MappedFile> open(const std::filesystem::path& path);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::filesystem::path& path() const { return path_; }
  const std::byte* data() const { return data_; }
  uint64_t size() const { return size_; }
  std::span<const std::byte> bytes() const { return {data_, static_cast<size_t>(size_)}; }

  // Hints that [offset, offset + length) will be read soon (best effort, never fails).
  void will_need(uint64_t offset, uint64_t length) const;

 private:
  MappedFile(std::filesystem::path path, const std::byte* data, uint64_t size);

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace hearth
