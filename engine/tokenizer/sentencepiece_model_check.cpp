#include "engine/tokenizer/sentencepiece_model_check.h"

#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer_loaders.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {
namespace {

constexpr size_t kMaxModelBytes = size_t{256} << 20;
constexpr size_t kMaxPieceBytes = 16 << 10;

// One field of a protobuf message.
struct Field {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t varint = 0;     // wire type 0
  std::string_view bytes;  // wire type 2
  size_t offset = 0;       // of the field's tag, in the whole model
};

class WireReader {
 public:
  WireReader(std::string_view data, size_t base, const std::string& where)
      : data_(data), base_(base), where_(where) {}

  bool next(Field& f) {
    if (pos_ >= data_.size()) return false;
    f = Field{};
    f.offset = base_ + pos_;
    const uint64_t tag = varint();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire_type = static_cast<uint32_t>(tag & 7);
    if (f.number == 0) bad("field number 0");
    switch (f.wire_type) {
      case 0:
        f.varint = varint();
        break;
      case 1:
        skip(8);
        break;
      case 2: {
        const uint64_t len = varint();
        if (len > data_.size() - pos_) bad("length " + std::to_string(len) + " runs past the end");
        f.bytes = data_.substr(pos_, len);
        pos_ += len;
        break;
      }
      case 5:
        skip(4);
        break;
      default:
        bad("unsupported wire type " + std::to_string(f.wire_type));
    }
    return true;
  }
  size_t base_of(const Field& f) const {
    return static_cast<size_t>(f.bytes.data() - data_.data()) + base_;
  }
  [[noreturn]] void bad(const std::string& what) const {
    fail(ErrorCode::kInvalidFile,
         where_ + ": malformed protobuf at byte " + std::to_string(base_ + pos_) + ": " + what);
  }

 private:
  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) bad("truncated varint");
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      value |= uint64_t{b & 0x7Fu} << shift;
      if (!(b & 0x80)) return value;
    }
    bad("varint longer than 10 bytes");
  }
  void skip(size_t n) {
    if (n > data_.size() - pos_) bad("truncated fixed-size field");
    pos_ += n;
  }

  std::string_view data_;
  size_t base_;
  const std::string& where_;
  size_t pos_ = 0;
};

uint32_t load_u32(std::string_view s, size_t pos) {
  uint32_t v;
  std::memcpy(&v, s.data() + pos, 4);
  return v;  // sentencepiece stores the charsmap little-endian; so do the machines we run on
}

// Darts-clone double-array unit accessors.
inline bool has_leaf(uint32_t u) {
  return (u >> 8) & 1;
}
inline uint32_t value_of(uint32_t u) {
  return u & ((1u << 31) - 1);
}
inline uint32_t label_of(uint32_t u) {
  return u & ((1u << 31) | 0xFF);
}
inline uint32_t offset_of(uint32_t u) {
  return (u >> 10) << ((u & (1u << 9)) >> 6);
}

void check_charsmap(std::string_view blob, size_t base, const std::string& where) {
  if (blob.empty()) return;
  auto bad = [&](const std::string& what) {
    fail(ErrorCode::kInvalidFile,
         where + ": precompiled_charsmap (byte " + std::to_string(base) + "): " + what);
  };
  if (blob.size() < 4) bad("shorter than its 4-byte header");
  const uint32_t trie_bytes = load_u32(blob, 0);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > blob.size() - 4)
    bad("trie size " + std::to_string(trie_bytes) + " does not fit the blob of " +
        std::to_string(blob.size()));
  const size_t units = trie_bytes / 4;
  const std::string_view normalized = blob.substr(4 + trie_bytes);
  if (!normalized.empty() && normalized.back() != '\0')
    bad("normalized strings are not NUL-terminated");
  auto unit = [&](size_t i) { return load_u32(blob, 4 + i * 4); };

  // Walk every node a lookup can reach: each child index and each leaf must lie inside the
  // array, and each leaf value inside the normalized strings.
  std::vector<bool> seen(units, false);
  std::deque<uint32_t> queue{0};
  seen[0] = true;
  while (!queue.empty()) {
    const uint32_t node = queue.front();
    queue.pop_front();
    const uint32_t base_pos = node ^ offset_of(unit(node));
    for (uint32_t c = 0; c < 256; ++c) {
      const uint32_t child = base_pos ^ c;
      if (child >= units) bad("a lookup of byte " + std::to_string(c) + " leaves the trie");
      const uint32_t u = unit(child);
      if (label_of(u) != c) continue;
      const uint32_t next = child ^ offset_of(u);
      if (has_leaf(u)) {
        if (next >= units) bad("a leaf lies outside the trie");
        if (value_of(unit(next)) >= normalized.size())
          bad("a leaf points outside the normalized strings");
      }
      if (!seen[child]) {
        seen[child] = true;
        queue.push_back(child);
      }
    }
  }
}

void check_normalizer(std::string_view spec, size_t base, const std::string& where) {
  WireReader reader(spec, base, where);
  Field f;
  while (reader.next(f))
    if (f.number == 2 && f.wire_type == 2) check_charsmap(f.bytes, reader.base_of(f), where);
}

void check_piece(std::string_view message, size_t base, size_t index, const std::string& where) {
  WireReader reader(message, base, where);
  Field f;
  while (reader.next(f)) {
    if (f.number != 1 || f.wire_type != 2) continue;
    const std::string at =
        where + ": piece " + std::to_string(index) + " (byte " + std::to_string(f.offset) + ")";
    if (f.bytes.size() > kMaxPieceBytes)
      fail(ErrorCode::kInvalidFile, at + " is " + std::to_string(f.bytes.size()) +
                                        " bytes long (limit " + std::to_string(kMaxPieceBytes) +
                                        ")");
    if (f.bytes.find('\0') != std::string_view::npos)
      fail(ErrorCode::kInvalidFile, at + " contains a NUL byte");
    if (!utf8::is_valid(f.bytes)) fail(ErrorCode::kInvalidFile, at + " is not valid UTF-8");
  }
}

}  // namespace

void check_sentencepiece_model(std::string_view bytes, const std::string& source) {
  if (bytes.size() > kMaxModelBytes)
    fail(ErrorCode::kInvalidFile, source + ": " + std::to_string(bytes.size()) +
                                      " bytes exceeds the limit for a sentencepiece model");
  if (bytes.empty()) fail(ErrorCode::kInvalidFile, source + ": empty file");
  WireReader reader(bytes, 0, source);
  Field f;
  size_t pieces = 0;
  while (reader.next(f)) {
    if (f.number == 1 && f.wire_type == 2) {
      if (static_cast<int64_t>(++pieces) > kMaxVocabSize)
        fail(ErrorCode::kInvalidFile,
             source + ": more than " + std::to_string(kMaxVocabSize) + " pieces");
      check_piece(f.bytes, reader.base_of(f), pieces - 1, source);
    } else if ((f.number == 3 || f.number == 5) && f.wire_type == 2) {
      check_normalizer(f.bytes, reader.base_of(f), source);
    } else if (f.number >= 1 && f.number <= 5 && f.wire_type != 2) {
      reader.bad("field " + std::to_string(f.number) + " must be a message");
    }
  }
  if (pieces == 0)
    fail(ErrorCode::kInvalidFile, source + ": no pieces (not a sentencepiece model?)");
}

}  // namespace hearth
