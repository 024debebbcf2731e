// GPT-2's reversible byte <-> printable-character mapping used by byte-level BPE vocabularies
// (e.g. the space byte 0x20 is written "Ġ", U+0120).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hearth::byte_level {

// The character that stands for `byte` in vocabulary strings.
uint32_t byte_to_char(uint8_t byte);
// UTF-8 of byte_to_char(byte).
const std::string& byte_to_utf8(uint8_t byte);
// The byte a vocabulary character stands for, or -1 when it stands for none.
int char_to_byte(uint32_t cp);

// Raw bytes -> vocabulary string.
std::string encode(std::string_view raw);
// Vocabulary string -> raw bytes; nullopt when a character is not one of the 256 mapped ones.
std::optional<std::string> decode(std::string_view token);

}  // namespace hearth::byte_level
