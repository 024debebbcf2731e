// Pre-tokenizers: split a text segment into the pieces that the BPE model encodes one by one,
// with the semantics of Hugging Face `tokenizers` (ByteLevel, Digits, Split, Sequence).
// Regex splits use hand-written matchers for the known pattern strings (GPT-2, Llama 3, Qwen2,
// digit groups): std::regex cannot do \p{L}, and an arbitrary regex could backtrack without
// bound, so an unknown pattern is refused with Error(kUnsupported).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

// Keeps strings that pieces point into when a step rewrites text (ByteLevel's prefix space).
class PieceArena {
 public:
  std::string_view keep(std::string s) { return strings_.emplace_back(std::move(s)); }

 private:
  std::deque<std::string> strings_;  // a deque never moves its elements
};

// The code points of one piece, their character classes and byte offsets (offsets has one
// more entry: the piece's length).
struct CharBuffer {
  std::vector<uint32_t> cps;
  std::vector<uint8_t> flags;
  std::vector<uint32_t> offsets;
  void assign(std::string_view text);
  size_t size() const { return cps.size(); }
};

// Number of characters matched at character `pos` (0 = no match).
using CharMatcher = size_t (*)(const CharBuffer& chars, size_t pos);

// What a split does with the matched parts (tokenizers' SplitDelimiterBehavior).
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces every piece by its splits; empty pieces are dropped.
  virtual void split(std::vector<std::string_view>& pieces, PieceArena& arena) const = 0;
  // Whether the model sees the pieces' bytes through GPT-2's byte-to-character mapping.
  virtual bool byte_level() const { return false; }
};

// The matcher for a known regex pattern (exact string as in tokenizer.json), or nullptr.
CharMatcher find_known_regex(std::string_view pattern);

// ByteLevel: optional prefix space on each piece, GPT-2 regex split when use_regex.
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);
// Digits: numeric characters split off, each on its own when individual_digits.
std::unique_ptr<PreTokenizer> make_digits_pre_tokenizer(bool individual_digits);
// Split on a known regex; throws Error(kUnsupported) naming the pattern otherwise.
std::unique_ptr<PreTokenizer> make_regex_split_pre_tokenizer(std::string_view pattern,
                                                             SplitBehavior behavior, bool invert);
// Split on a literal string.
std::unique_ptr<PreTokenizer> make_literal_split_pre_tokenizer(std::string literal,
                                                               SplitBehavior behavior, bool invert);
std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(
    std::vector<std::unique_ptr<PreTokenizer>> steps);

// Pattern strings of the known pre-tokenizer regexes.
namespace regex_patterns {
inline constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}  // namespace regex_patterns

}  // namespace hearth
