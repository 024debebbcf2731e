// Helpers shared by the engine/io tests: fixtures, temporary folders, byte builders, and an
// expectation that a call fails with a given error code and message, quickly.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/common/test_paths.h"

namespace hearth::test {

using Bytes = std::vector<std::byte>;

inline nlohmann::json load_fixture(const std::string& name) {
  const auto path = fixtures_dir() / "io" / name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing fixture " + path.string());
  return nlohmann::json::parse(in);
}

inline Bytes from_hex(const std::string& hex) {
  Bytes out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

inline Bytes from_base64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  Bytes out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) continue;  // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::byte>((acc >> bits) & 0xff));
    }
  }
  return out;
}

inline Bytes to_bytes(std::string_view s) {
  Bytes b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

// A folder under /tmp removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "hearth-io-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  if (!bytes.empty()) {
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
}
inline void write_file(const std::filesystem::path& path, std::string_view text) {
  write_file(path, to_bytes(text));
}

// Runs `fn`, which must throw hearth::Error with `code` and a message containing every one of
// `needles`, within `max_seconds`.
inline void expect_error(const std::function<void()>& fn, ErrorCode code,
                         std::initializer_list<std::string> needles, double max_seconds = 1.0) {
  const auto start = std::chrono::steady_clock::now();
  try {
    fn();
    ADD_FAILURE() << "expected an error containing \"" << *needles.begin() << "\", got success";
  } catch (const Error& e) {
    if (std::getenv("HEARTH_PRINT_ERRORS"))
      std::printf("  [%s] %s\n", error_code_name(e.code()), e.what());
    EXPECT_EQ(e.code(), code) << "message: " << e.what();
    for (const auto& n : needles) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << n << "\"";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected hearth::Error, got another exception: " << e.what();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, max_seconds) << "rejection took " << seconds << " s";
}

// Timing limits hold for optimized builds; sanitizer and debug builds run several times slower.
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__)
inline constexpr double kSlowdown = 1.0;
#else
inline constexpr double kSlowdown = 10.0;
#endif

// Little-endian byte writer for hand-made GGUF and safetensors images.
class ByteWriter {
 public:
  ByteWriter& u8(uint8_t v) { return raw(&v, 1); }
  ByteWriter& u16(uint16_t v) { return raw(&v, 2); }
  ByteWriter& u32(uint32_t v) { return raw(&v, 4); }
  ByteWriter& i32(int32_t v) { return raw(&v, 4); }
  ByteWriter& u64(uint64_t v) { return raw(&v, 8); }
  ByteWriter& i64(int64_t v) { return raw(&v, 8); }
  ByteWriter& f32(float v) { return raw(&v, 4); }
  ByteWriter& f64(double v) { return raw(&v, 8); }
  ByteWriter& str(std::string_view s) {  // GGUF string: u64 length + bytes
    u64(s.size());
    return raw(s.data(), s.size());
  }
  ByteWriter& text(std::string_view s) { return raw(s.data(), s.size()); }
  ByteWriter& bytes(const Bytes& b) { return raw(b.data(), b.size()); }
  ByteWriter& zeros(size_t n) {
    bytes_.resize(bytes_.size() + n);
    return *this;
  }
  ByteWriter& pad_to(size_t alignment) {
    while (bytes_.size() % alignment) bytes_.push_back(std::byte{0});
    return *this;
  }
  ByteWriter& raw(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  size_t size() const { return bytes_.size(); }
  const Bytes& data() const { return bytes_; }
  Bytes take() { return std::move(bytes_); }

 private:
  Bytes bytes_;
};

// A safetensors image: 8-byte header length, the header text, then `data`.
inline Bytes safetensors_image(std::string_view header, const Bytes& data) {
  ByteWriter w;
  w.u64(header.size()).text(header).bytes(data);
  return w.take();
}

}  // namespace hearth::test
