#include "engine/tokenizer/byte_level.h"

#include <array>

#include "engine/tokenizer/utf8.h"

namespace hearth::byte_level {
namespace {

struct Tables {
  std::array<uint32_t, 256> to_char{};
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 512> from_char{};  // every mapped character is below U+0200

  Tables() {
    from_char.fill(-1);
    // Printable Latin-1 bytes stand for themselves; the others get U+0100 upwards, in order.
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_char[b] = printable ? b : next++;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      to_utf8[b] = utf8::encode(to_char[b]);
      from_char[to_char[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

uint32_t byte_to_char(uint8_t byte) {
  return tables().to_char[byte];
}
const std::string& byte_to_utf8(uint8_t byte) {
  return tables().to_utf8[byte];
}

int char_to_byte(uint32_t cp) {
  return cp < 512 ? tables().from_char[cp] : -1;
}

std::string encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (char c : raw) out += byte_to_utf8(static_cast<uint8_t>(c));
  return out;
}

std::optional<std::string> decode(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const auto ch = utf8::decode(token, pos);
    const int b = char_to_byte(ch.cp);
    if (b < 0) return std::nullopt;
    out.push_back(static_cast<char>(b));
    pos += ch.len;
  }
  return out;
}

}  // namespace hearth::byte_level
