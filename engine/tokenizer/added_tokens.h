// Added and special tokens ("<|im_start|>", "<s>", ...): found in the text before anything
// else, the way Hugging Face tokenizers' AddedVocabulary does it: leftmost-longest matching,
// then the single_word, lstrip and rstrip rules.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;      // dropped by decode(skip_special)
  bool lstrip = false;       // swallows the whitespace on its left
  bool rstrip = false;       // swallows the whitespace on its right
  bool single_word = false;  // only matches when no word character touches it
  bool normalized = false;   // matched against normalized text (second pass)
};

// One part of the text: an added token (id >= 0) or text to tokenize normally.
struct TextSegment {
  std::string_view text;
  int32_t id = -1;
};

// Finds one set of added tokens (the normalized or the non-normalized ones) in text.
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  bool empty() const { return tokens_.empty(); }
  // Appends the segments of `text` to `out`; their texts cover `text` in order.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;                                 // index into tokens_
  };
  // Longest token starting at `pos`, as an index into tokens_, or -1.
  int32_t longest_at(std::string_view text, size_t pos, size_t& length) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};
};

}  // namespace hearth
