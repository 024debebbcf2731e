#include "engine/tokenizer/unicode_props.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace hearth::unicode {
namespace {

constexpr uint32_t kRuns[] = {
#include "engine/tokenizer/unicode_table.inc"
};

uint8_t lookup_runs(uint32_t cp) {
  // The last run whose first code point is <= cp.
  const uint32_t key = (cp << 8) | 0xFFu;
  const uint32_t* it = std::upper_bound(std::begin(kRuns), std::end(kRuns), key);
  return static_cast<uint8_t>(*(it - 1) & 0xFFu);
}

// The Basic Multilingual Plane is looked up directly: nearly all text lives there.
struct BmpTable {
  std::array<uint8_t, 0x10000> flags{};
  BmpTable() {
    for (uint32_t cp = 0; cp < 0x10000; ++cp) flags[cp] = lookup_runs(cp);
  }
};

const BmpTable& bmp_table() {
  static const BmpTable table;
  return table;
}

}  // namespace

uint8_t char_flags(uint32_t cp) {
  if (cp < 0x10000) return bmp_table().flags[cp];
  if (cp > 0x10FFFF) return 0;
  return lookup_runs(cp);
}

}  // namespace hearth::unicode
