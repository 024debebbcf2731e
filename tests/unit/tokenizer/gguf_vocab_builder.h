// Writes small vocabulary-only GGUF images in memory (no tensors), for tokenizer metadata tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hearth::test {

class GgufVocabBuilder {
 public:
  enum Type : uint32_t {
    kU8 = 0,
    kI8 = 1,
    kU32 = 4,
    kI32 = 5,
    kF32 = 6,
    kBool = 7,
    kString = 8,
    kArray = 9
  };

  GgufVocabBuilder& string(const std::string& key, const std::string& value) {
    begin(key, kString);
    str(value);
    return *this;
  }
  GgufVocabBuilder& u32(const std::string& key, uint32_t value) {
    begin(key, kU32);
    pod(value);
    return *this;
  }
  GgufVocabBuilder& boolean(const std::string& key, bool value) {
    begin(key, kBool);
    pod(static_cast<uint8_t>(value));
    return *this;
  }
  GgufVocabBuilder& strings(const std::string& key, const std::vector<std::string>& values) {
    begin(key, kArray);
    pod(static_cast<uint32_t>(kString));
    pod(static_cast<uint64_t>(values.size()));
    for (const auto& v : values) str(v);
    return *this;
  }
  template <typename T>
  GgufVocabBuilder& array(const std::string& key, Type element, const std::vector<T>& values) {
    begin(key, kArray);
    pod(static_cast<uint32_t>(element));
    pod(static_cast<uint64_t>(values.size()));
    for (const auto& v : values) pod(v);
    return *this;
  }

  std::vector<std::byte> build() const {
    std::vector<std::byte> out;
    auto put = [&](const void* p, size_t n) {
      const auto* b = static_cast<const std::byte*>(p);
      out.insert(out.end(), b, b + n);
    };
    const uint32_t version = 3;
    const uint64_t n_tensors = 0, n_kv = count_;
    put("GGUF", 4);
    put(&version, 4);
    put(&n_tensors, 8);
    put(&n_kv, 8);
    put(kvs_.data(), kvs_.size());
    while (out.size() % 32 != 0) out.push_back(std::byte{0});
    return out;
  }

 private:
  void begin(const std::string& key, Type type) {
    ++count_;
    str(key);
    pod(static_cast<uint32_t>(type));
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    kvs_.insert(kvs_.end(), s.begin(), s.end());
  }
  template <typename T>
  void pod(const T& v) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    kvs_.insert(kvs_.end(), bytes, bytes + sizeof(T));
  }

  std::vector<char> kvs_;
  uint64_t count_ = 0;
};

}  // namespace hearth::test
