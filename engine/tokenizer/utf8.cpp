#include "engine/tokenizer/utf8.h"

namespace hearth::utf8 {
namespace {

// Number of bytes of a sequence that starts with `lead`, 0 when `lead` cannot start one.
inline int sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `b` may follow `lead` as the second byte (excludes overlongs, surrogates and
// values above U+10FFFF, per Unicode Table 3-7).
inline bool valid_second(uint8_t lead, uint8_t b) {
  switch (lead) {
    case 0xE0:
      return b >= 0xA0 && b <= 0xBF;
    case 0xED:
      return b >= 0x80 && b <= 0x9F;
    case 0xF0:
      return b >= 0x90 && b <= 0xBF;
    case 0xF4:
      return b >= 0x80 && b <= 0x8F;
    default:
      return b >= 0x80 && b <= 0xBF;
  }
}

inline bool is_continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Length of the valid prefix of a sequence starting at `pos`: the full length when the
// character is complete and valid, otherwise the number of bytes of its maximal subpart
// (at least 1), negated.
inline int scan(std::string_view s, size_t pos) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const int n = sequence_length(lead);
  if (n == 1) return 1;
  if (n == 0) return -1;
  int have = 1;
  for (; have < n; ++have) {
    if (pos + have >= s.size()) return -have;
    const auto b = static_cast<uint8_t>(s[pos + have]);
    const bool ok = have == 1 ? valid_second(lead, b) : is_continuation(b);
    if (!ok) return -have;
  }
  return n;
}

}  // namespace

DecodedChar decode(std::string_view s, size_t pos) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  if (lead < 0x80) return {lead, 1};
  const int n = scan(s, pos);
  if (n < 0) return {kInvalidBase + lead, 1};
  uint32_t cp = lead & (0xFF >> (n + 1));
  for (int i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  return {cp, static_cast<uint32_t>(n)};
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode(uint32_t cp) {
  std::string out;
  append(out, cp);
  return out;
}

bool is_valid(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const int n = scan(s, pos);
    if (n < 0) return false;
    pos += static_cast<size_t>(n);
  }
  return true;
}

std::string to_valid_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    // Copy the longest valid run at once.
    size_t run = pos;
    int n;
    while (run < bytes.size() && (n = scan(bytes, run)) > 0) run += static_cast<size_t>(n);
    out.append(bytes.substr(pos, run - pos));
    if (run >= bytes.size()) break;
    out.append("\xEF\xBF\xBD");
    pos = run + static_cast<size_t>(-scan(bytes, run));
  }
  return out;
}

size_t incomplete_suffix_length(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence runs to the end, incomplete.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const size_t pos = s.size() - back;
    const auto b = static_cast<uint8_t>(s[pos]);
    if (is_continuation(b)) continue;
    const int n = sequence_length(b);
    if (n <= static_cast<int>(back)) return 0;  // ASCII, invalid lead, or complete
    return scan(s, pos) == -static_cast<int>(back) ? back : 0;
  }
  return 0;
}

}  // namespace hearth::utf8
