// Hand-written matchers for the pre-tokenizer regexes that real tokenizers ship. Each returns
// what Oniguruma (the regex engine of Hugging Face `tokenizers`) matches at a position: the
// alternatives are tried in order and the backtracking of the lookahead/optional parts is
// spelled out. All run in time linear in the match length.
#include <array>
#include <utility>

#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/unicode_props.h"

namespace hearth {
namespace {

using unicode::kLetter;
using unicode::kNumber;
using unicode::kSpace;

inline bool is_letter(const CharBuffer& c, size_t i) {
  return c.flags[i] & kLetter;
}
inline bool is_number(const CharBuffer& c, size_t i) {
  return c.flags[i] & kNumber;
}
inline bool is_space(const CharBuffer& c, size_t i) {
  return c.flags[i] & kSpace;
}
// [^\s\p{L}\p{N}]
inline bool is_other(const CharBuffer& c, size_t i) {
  return !(c.flags[i] & (kLetter | kNumber | kSpace));
}
inline bool is_newline(const CharBuffer& c, size_t i) {
  return c.cps[i] == '\r' || c.cps[i] == '\n';
}

template <typename Pred>
inline size_t run_end(const CharBuffer& c, size_t i, Pred pred) {
  while (i < c.size() && pred(c, i)) ++i;
  return i;
}

// 's|'t|'re|'ve|'m|'ll|'d, case-sensitive or with Unicode simple case folding (where only
// ASCII upper case and U+017F LATIN SMALL LETTER LONG S fold onto these letters).
template <bool kIgnoreCase>
size_t match_contraction(const CharBuffer& c, size_t i) {
  if (c.cps[i] != '\'' || i + 1 >= c.size()) return 0;
  auto fold = [](uint32_t cp) -> uint32_t {
    if constexpr (kIgnoreCase) {
      if (cp >= 'A' && cp <= 'Z') return cp + 32;
      if (cp == 0x17F) return 's';
    }
    return cp;
  };
  const uint32_t a = fold(c.cps[i + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= c.size()) return 0;
  const uint32_t b = fold(c.cps[i + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S)|\s+ : a whitespace run, less its last character when a non-space follows and the
// run is longer than one.
size_t match_trailing_space(const CharBuffer& c, size_t i) {
  if (!is_space(c, i)) return 0;
  const size_t end = run_end(c, i, is_space);
  if (end < c.size() && end - i >= 2) return end - 1 - i;
  return end - i;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t match_gpt2(const CharBuffer& c, size_t i) {
  if (size_t n = match_contraction<false>(c, i)) return n;
  const size_t j = c.cps[i] == ' ' && i + 1 < c.size() ? i + 1 : i;
  if (is_letter(c, j)) return run_end(c, j, is_letter) - i;
  if (is_number(c, j)) return run_end(c, j, is_number) - i;
  if (is_other(c, j)) return run_end(c, j, is_other) - i;
  return match_trailing_space(c, i);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+   (Llama 3 with N = 3, Qwen2 with N = 1)
template <size_t kMaxDigits>
size_t match_llama3(const CharBuffer& c, size_t i) {
  if (size_t n = match_contraction<true>(c, i)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (i + 1 < c.size() && !is_letter(c, i) && !is_number(c, i) && !is_newline(c, i) &&
      is_letter(c, i + 1))
    return run_end(c, i + 1, is_letter) - i;
  if (is_letter(c, i)) return run_end(c, i, is_letter) - i;
  // \p{N}{1,N}
  if (is_number(c, i)) {
    size_t end = i;
    while (end < c.size() && end - i < kMaxDigits && is_number(c, end)) ++end;
    return end - i;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  const size_t j = c.cps[i] == ' ' && i + 1 < c.size() ? i + 1 : i;
  if (is_other(c, j)) return run_end(c, run_end(c, j, is_other), is_newline) - i;
  if (!is_space(c, i)) return 0;
  // \s*[\r\n]+ : the whitespace run up to its last line break.
  const size_t end = run_end(c, i, is_space);
  for (size_t k = end; k > i; --k)
    if (is_newline(c, k - 1)) return k - i;
  return match_trailing_space(c, i);
}

template <size_t kMaxDigits>
size_t match_number_group(const CharBuffer& c, size_t i) {
  size_t end = i;
  while (end < c.size() && end - i < kMaxDigits && is_number(c, end)) ++end;
  return end - i;
}

size_t match_number_run(const CharBuffer& c, size_t i) {
  return run_end(c, i, is_number) - i;
}
size_t match_space_run(const CharBuffer& c, size_t i) {
  return run_end(c, i, is_space) - i;
}

struct KnownRegex {
  std::string_view pattern;
  CharMatcher matcher;
};

constexpr std::array kKnownRegexes = {
    KnownRegex{regex_patterns::kGpt2, match_gpt2},
    // llama.cpp's spelling of the GPT-2 regex (same splits: a lone whitespace character that no
    // alternative matches is left over as its own piece, just as \s+ would match it).
    KnownRegex{R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
               match_gpt2},
    KnownRegex{regex_patterns::kLlama3, match_llama3<3>},
    KnownRegex{regex_patterns::kQwen2, match_llama3<1>},
    KnownRegex{R"(\p{N}{1,3})", match_number_group<3>},
    KnownRegex{R"(\p{N})", match_number_group<1>},
    KnownRegex{R"(\p{N}+)", match_number_run},
    KnownRegex{R"(\s+)", match_space_run},
};

}  // namespace

CharMatcher find_known_regex(std::string_view pattern) {
  for (const auto& known : kKnownRegexes)
    if (known.pattern == pattern) return known.matcher;
  return nullptr;
}

}  // namespace hearth
