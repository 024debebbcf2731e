// Validation of an untrusted sentencepiece model (protobuf) before libsentencepiece sees it:
// well-formed wire format, bounded piece count and lengths, no NUL in pieces, and a
// precompiled_charsmap whose double-array trie cannot send a lookup out of bounds (the input
// that crashed sentencepiece: google/sentencepiece #1263, #1269, #1308).
#pragma once

#include <string>
#include <string_view>

namespace hearth {

// Throws Error(kInvalidFile) naming `source`, the field and the byte offset of the defect.
void check_sentencepiece_model(std::string_view bytes, const std::string& source);

}  // namespace hearth
