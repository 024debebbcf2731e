// UTF-8 helpers for the tokenizers: strict decoding that treats each invalid byte as its own
// unit, and the lossy conversion (one U+FFFD per maximal invalid subpart, as Rust's
// String::from_utf8_lossy and Python's bytes.decode(errors="replace") do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::utf8 {

// Marker for an invalid byte: kInvalidBase + the byte value; never a real code point.
inline constexpr uint32_t kInvalidBase = 0x110000;

struct DecodedChar {
  uint32_t cp;   // the code point, or kInvalidBase + byte for an invalid byte
  uint32_t len;  // bytes consumed (1 for an invalid byte)
};

// Decodes the character at `pos` (pos < s.size()). Overlong forms, surrogates and values above
// U+10FFFF are invalid.
DecodedChar decode(std::string_view s, size_t pos);

void append(std::string& out, uint32_t cp);
std::string encode(uint32_t cp);

bool is_valid(std::string_view s);

// Replaces every maximal invalid subpart by U+FFFD.
std::string to_valid_lossy(std::string_view bytes);

// Length of a trailing sequence that is a proper prefix of a valid UTF-8 character (0..3):
// the bytes a streaming decoder must hold back because later bytes may complete them.
size_t incomplete_suffix_length(std::string_view s);

}  // namespace hearth::utf8
