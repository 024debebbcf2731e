#include "engine/tokenizer/added_tokens.h"

#include <algorithm>
#include <map>

#include "engine/tokenizer/unicode_props.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {
namespace {

// The character that ends at `end` (end > 0): its start and code point (invalid bytes decode
// to markers with no class).
utf8::DecodedChar char_before(std::string_view text, size_t end, size_t& start) {
  start = end - 1;
  for (size_t back = 1; back <= 4 && back <= end; ++back) {
    const auto b = static_cast<uint8_t>(text[end - back]);
    if ((b & 0xC0) != 0x80) {
      const auto ch = utf8::decode(text, end - back);
      if (ch.len == back) {
        start = end - back;
        return ch;
      }
      break;
    }
  }
  return utf8::decode(text, end - 1);
}

bool has_flag(uint32_t cp, uint8_t flag) {
  return unicode::char_flags(cp) & flag;
}

bool ends_with_word(std::string_view text, size_t end) {
  if (end == 0) return false;
  size_t start;
  return has_flag(char_before(text, end, start).cp, unicode::kWord);
}

bool starts_with_word(std::string_view text, size_t begin) {
  if (begin >= text.size()) return false;
  return has_flag(utf8::decode(text, begin).cp, unicode::kWord);
}

// Start of the whitespace run that ends at `end`.
size_t skip_space_backward(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start;
    if (!has_flag(char_before(text, end, start).cp, unicode::kSpace)) break;
    end = start;
  }
  return end;
}

size_t skip_space_forward(std::string_view text, size_t pos) {
  while (pos < text.size()) {
    const auto ch = utf8::decode(text, pos);
    if (!has_flag(ch.cp, unicode::kSpace)) break;
    pos += ch.len;
  }
  return pos;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  // Empty contents never match; a repeated content keeps its last definition.
  std::map<std::string_view, size_t> last;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!tokens[i].content.empty()) last[tokens[i].content] = i;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!tokens[i].content.empty() && last[tokens[i].content] == i) tokens_.push_back(tokens[i]);

  nodes_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    int32_t node = 0;
    for (char c : tokens_[t].content) {
      const auto byte = static_cast<uint8_t>(c);
      auto& children = nodes_[node].children;
      auto it = std::lower_bound(children.begin(), children.end(), byte,
                                 [](const auto& child, uint8_t b) { return child.first < b; });
      if (it != children.end() && it->first == byte) {
        node = it->second;
      } else {
        const auto next = static_cast<int32_t>(nodes_.size());
        children.insert(it, {byte, next});
        nodes_.emplace_back();  // invalidates `children`; not used again below
        node = next;
      }
    }
    nodes_[node].token = static_cast<int32_t>(t);
    first_byte_[static_cast<uint8_t>(tokens_[t].content[0])] = true;
  }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t& length) const {
  int32_t best = -1;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    const auto& children = nodes_[node].children;
    auto it = std::lower_bound(children.begin(), children.end(), byte,
                               [](const auto& child, uint8_t b) { return child.first < b; });
    if (it == children.end() || it->first != byte) break;
    node = it->second;
    if (nodes_[node].token >= 0) {
      best = nodes_[node].token;
      length = i + 1 - pos;
    }
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<TextSegment>& out) const {
  size_t emitted = 0;  // end of what has been appended to `out`
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t length = 0;
    const int32_t index = longest_at(text, pos, length);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos;
    size_t stop = pos + length;
    pos = stop;  // matching goes on after this match even when it is discarded
    if (token.single_word && (ends_with_word(text, start) || starts_with_word(text, stop)))
      continue;
    if (token.lstrip) start = std::max(skip_space_backward(text, start), emitted);
    if (token.rstrip) stop = skip_space_forward(text, stop);
    if (emitted < start) out.push_back({text.substr(emitted, start - emitted), -1});
    out.push_back({text.substr(start, stop - start), token.id});
    emitted = stop;
    pos = stop;
  }
  if (emitted < text.size()) out.push_back({text.substr(emitted), -1});
}

}  // namespace hearth
