// Character classes of code points, as the Hugging Face `tokenizers` regexes and pre-tokenizers
// see them (\p{L}, \p{N}, \s, \w, Rust's char::is_numeric). Table: unicode_table.inc.
#pragma once

#include <cstdint>

namespace hearth::unicode {

enum CharFlags : uint8_t {
  kLetter = 1,   // \p{L}  (Unicode 16.0, as Oniguruma in tokenizers)
  kNumber = 2,   // \p{N}  (Unicode 16.0)
  kNumeric = 4,  // Rust char::is_numeric (Unicode 17.0), used by the Digits pre-tokenizer
  kMark = 8,     // \p{M}
  kWord = 16,    // Rust regex \w (approximation: L, M, Nd, Nl, Pc, ZWNJ/ZWJ, circled letters)
  kSpace = 32,   // White_Space: \s in Oniguruma and Rust regex
};

// Flags of a code point; 0 for anything above U+10FFFF (e.g. our marker for invalid bytes).
uint8_t char_flags(uint32_t cp);

}  // namespace hearth::unicode
