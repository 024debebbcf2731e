#include "engine/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "engine/core/error.h"

namespace hearth {

namespace {

[[noreturn]] void fail_io(const std::filesystem::path& path, const std::string& what, int err) {
  fail(ErrorCode::kIo, path.string() + ": " + what + ": " + std::strerror(err));
}

// Closes the descriptor on every path out of open(); the mapping outlives it.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::shared_ptr<const MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_io(path, "cannot open", errno);
  FdCloser closer{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_io(path, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) fail(ErrorCode::kIo, path.string() + ": is a directory, not a file");
  if (!S_ISREG(st.st_mode)) fail(ErrorCode::kIo, path.string() + ": not a regular file");
  if (st.st_size < 0) fail(ErrorCode::kIo, path.string() + ": negative file size");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > static_cast<uint64_t>(SIZE_MAX)) {
    fail(ErrorCode::kIo, path.string() + ": file too large to map");
  }

  const std::byte* data = nullptr;
  if (size > 0) {  // mmap rejects zero-length mappings; an empty file is simply an empty span
    void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) fail_io(path, "cannot map " + std::to_string(size) + " bytes", errno);
    data = static_cast<const std::byte*>(p);
  }
  return std::shared_ptr<const MappedFile>(new MappedFile(path, data, size));
}

MappedFile::MappedFile(std::filesystem::path path, const std::byte* data, uint64_t size)
    : path_(std::move(path)), data_(data), size_(size) {}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), static_cast<size_t>(size_));
}

void MappedFile::will_need(uint64_t offset, uint64_t length) const {
  if (!data_ || offset >= size_) return;
  if (length > size_ - offset) length = size_ - offset;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  ::madvise(const_cast<std::byte*>(data_) + start, static_cast<size_t>(offset + length - start),
            MADV_WILLNEED);
}

}  // namespace hearth
