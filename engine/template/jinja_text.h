// Text helpers for the chat-template interpreter: UTF-8 code points (Python strings count and
// slice by code point), Python's whitespace and case rules, and the exact text Python prints for
// floats, string reprs and json.dumps strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::jinja {

// Decodes the code point at s[pos] and advances pos. Invalid bytes decode as themselves (one byte
// each) so that any input can be walked without failing.
char32_t next_code_point(std::string_view s, size_t& pos);
void append_utf8(std::string& out, char32_t cp);

size_t code_point_count(std::string_view s);
// Byte offset of each code point, plus s.size() at the end (size = count + 1).
std::vector<size_t> code_point_offsets(std::string_view s);

// Python's str.isspace() for one code point.
bool is_py_space(char32_t cp);
// Python's str.strip([chars]) family; chars == nullptr strips whitespace.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
// Python's str.splitlines() (without keepends).
std::vector<std::string> py_splitlines(std::string_view s);

// Case mapping for ASCII, Latin-1, Greek and Cyrillic letters; other text is left as it is.
std::string upper_text(std::string_view s);
std::string lower_text(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_title(std::string_view s);       // str.title()

// repr(float) in Python: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string py_float_repr(double v);
// repr(str) in Python: single quotes unless the text holds ' and no ".
std::string py_string_repr(std::string_view s);
// A JSON string literal as Python's json.dumps writes it.
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii);

}  // namespace hearth::jinja
