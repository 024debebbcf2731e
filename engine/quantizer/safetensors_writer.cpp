#include "engine/quantizer/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "engine/core/error.h"

namespace hearth::quantizer {
namespace fs = std::filesystem;
namespace {

std::string header_json(const NamedTensors& tensors) {
  std::string h = "{";
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    if (i) h += ",";
    h += "\"" + name + "\":{\"dtype\":\"" + std::string(dtype_name(t.dtype)) + "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d) h += ",";
      h += std::to_string(t.shape[d]);
    }
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," +
         std::to_string(offset + t.nbytes()) + "]}";
    offset += t.nbytes();
  }
  h += "}";
  while (h.size() % 8 != 0) h += ' ';
  return h;
}

class File {
 public:
  explicit File(const fs::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(ErrorCode::kIo, path.string() + ": cannot create: " + std::strerror(errno));
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(ErrorCode::kIo, path_.string() + ": write failed: " + std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void sync_and_close() {
    if (::fsync(fd_) != 0) fail(ErrorCode::kIo, path_.string() + ": fsync failed");
    if (::close(fd_) != 0) {
      fd_ = -1;
      fail(ErrorCode::kIo, path_.string() + ": close failed");
    }
    fd_ = -1;
  }

 private:
  fs::path path_;
  int fd_ = -1;
};

fs::path temp_path(const fs::path& path) {
  return path.parent_path() / ("." + path.filename().string() + ".tmp");
}

void commit(const fs::path& tmp, const fs::path& path) {
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fail(ErrorCode::kIo, path.string() + ": cannot rename into place: " + ec.message());
}

}  // namespace

uint64_t safetensors_file_size(const NamedTensors& tensors) {
  uint64_t total = 8 + header_json(tensors).size();
  for (const auto& [name, t] : tensors) total += t.nbytes();
  return total;
}

void write_safetensors(const fs::path& path, const NamedTensors& tensors) {
  const std::string header = header_json(tensors);
  const fs::path tmp = temp_path(path);
  {
    File f(tmp);
    uint8_t len[8];
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
    f.write(len, 8);
    f.write(header.data(), header.size());
    for (const auto& [name, t] : tensors) f.write(t.data, t.nbytes());
    f.sync_and_close();
  }
  commit(tmp, path);
}

void write_file_atomically(const fs::path& path, const std::string& bytes) {
  const fs::path tmp = temp_path(path);
  {
    File f(tmp);
    f.write(bytes.data(), bytes.size());
    f.sync_and_close();
  }
  commit(tmp, path);
}

}  // namespace hearth::quantizer
