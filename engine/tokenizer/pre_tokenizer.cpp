#include "engine/tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/tokenizer/unicode_props.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {

void CharBuffer::assign(std::string_view text) {
  cps.clear();
  flags.clear();
  offsets.clear();
  for (size_t pos = 0; pos < text.size();) {
    const auto ch = utf8::decode(text, pos);
    cps.push_back(ch.cp);
    flags.push_back(unicode::char_flags(ch.cp));  // invalid bytes: no class, like punctuation
    offsets.push_back(static_cast<uint32_t>(pos));
    pos += ch.len;
  }
  offsets.push_back(static_cast<uint32_t>(text.size()));
}

namespace {

struct Span {
  size_t begin, end;  // byte offsets in the piece
  bool is_match;
};

// Turns the matched/unmatched spans of one piece (covering it in order) into output pieces,
// as tokenizers' NormalizedString::split does for each behavior.
void apply_behavior(std::string_view piece, std::vector<Span>& spans, SplitBehavior behavior,
                    bool invert, std::vector<std::string_view>& out) {
  if (invert)
    for (auto& s : spans) s.is_match = !s.is_match;
  std::vector<Span> merged;
  merged.reserve(spans.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      merged = spans;
      break;
    case SplitBehavior::kRemoved:
      for (const auto& s : spans)
        if (!s.is_match) merged.push_back(s);
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const auto& s : spans) {
        if (s.is_match && !previous_match && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (size_t k = spans.size(); k-- > 0;) {
        const auto& s = spans[k];
        if (s.is_match && !previous_match && !merged.empty()) {
          merged.back().begin = s.begin;
        } else {
          merged.push_back(s);
        }
        previous_match = s.is_match;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    case SplitBehavior::kContiguous:
      for (const auto& s : spans) {
        if (s.is_match == previous_match && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
  }
  for (const auto& s : merged)
    if (s.end > s.begin) out.push_back(piece.substr(s.begin, s.end - s.begin));
}

// Matched and unmatched spans of a piece for a character matcher (leftmost matches, scanning
// forward; unmatched characters between matches form one span).
void find_spans(const CharBuffer& chars, CharMatcher matcher, std::vector<Span>& spans) {
  spans.clear();
  size_t gap_start = 0;
  for (size_t i = 0; i < chars.size();) {
    const size_t n = matcher(chars, i);
    if (n == 0) {
      ++i;
      continue;
    }
    if (gap_start < i) spans.push_back({chars.offsets[gap_start], chars.offsets[i], false});
    spans.push_back({chars.offsets[i], chars.offsets[i + n], true});
    i += n;
    gap_start = i;
  }
  if (gap_start < chars.size())
    spans.push_back({chars.offsets[gap_start], chars.offsets[chars.size()], false});
}

class MatcherSplit final : public PreTokenizer {
 public:
  MatcherSplit(CharMatcher matcher, SplitBehavior behavior, bool invert)
      : matcher_(matcher), behavior_(behavior), invert_(invert) {}

  void split(std::vector<std::string_view>& pieces, PieceArena&) const override {
    std::vector<std::string_view> out;
    out.reserve(pieces.size() * 2);
    CharBuffer chars;
    std::vector<Span> spans;
    for (std::string_view piece : pieces) {
      chars.assign(piece);
      find_spans(chars, matcher_, spans);
      apply_behavior(piece, spans, behavior_, invert_, out);
    }
    pieces.swap(out);
  }

 private:
  CharMatcher matcher_;
  SplitBehavior behavior_;
  bool invert_;
};

class LiteralSplit final : public PreTokenizer {
 public:
  LiteralSplit(std::string literal, SplitBehavior behavior, bool invert)
      : literal_(std::move(literal)), behavior_(behavior), invert_(invert) {
    if (literal_.empty()) fail(ErrorCode::kInvalidFile, "Split pre-tokenizer: empty pattern");
  }

  void split(std::vector<std::string_view>& pieces, PieceArena&) const override {
    std::vector<std::string_view> out;
    std::vector<Span> spans;
    for (std::string_view piece : pieces) {
      spans.clear();
      size_t prev = 0;
      for (size_t at = piece.find(literal_); at != std::string_view::npos;
           at = piece.find(literal_, at + literal_.size())) {
        if (prev < at) spans.push_back({prev, at, false});
        spans.push_back({at, at + literal_.size(), true});
        prev = at + literal_.size();
      }
      if (prev < piece.size()) spans.push_back({prev, piece.size(), false});
      apply_behavior(piece, spans, behavior_, invert_, out);
    }
    pieces.swap(out);
  }

 private:
  std::string literal_;
  SplitBehavior behavior_;
  bool invert_;
};

size_t match_numeric_char(const CharBuffer& c, size_t i) {
  return (c.flags[i] & unicode::kNumeric) ? 1 : 0;
}

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        regex_(find_known_regex(regex_patterns::kGpt2), SplitBehavior::kIsolated, false),
        use_regex_(use_regex) {}

  void split(std::vector<std::string_view>& pieces, PieceArena& arena) const override {
    if (add_prefix_space_) {
      for (auto& piece : pieces)
        if (!piece.empty() && piece.front() != ' ') piece = arena.keep(" " + std::string(piece));
    }
    if (use_regex_) regex_.split(pieces, arena);
  }
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  MatcherSplit regex_;
  bool use_regex_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {
    // The byte mapping happens after the last step; a step after ByteLevel would see mapped
    // text, which our pipeline does not model.
    for (size_t i = 0; i + 1 < steps_.size(); ++i)
      if (steps_[i]->byte_level())
        fail(ErrorCode::kUnsupported, "pre-tokenizer Sequence: ByteLevel must be the last step");
  }

  void split(std::vector<std::string_view>& pieces, PieceArena& arena) const override {
    for (const auto& step : steps_) step->split(pieces, arena);
  }
  bool byte_level() const override { return !steps_.empty() && steps_.back()->byte_level(); }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  return std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, use_regex);
}

std::unique_ptr<PreTokenizer> make_digits_pre_tokenizer(bool individual_digits) {
  return std::make_unique<MatcherSplit>(
      match_numeric_char, individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
      false);
}

std::unique_ptr<PreTokenizer> make_regex_split_pre_tokenizer(std::string_view pattern,
                                                             SplitBehavior behavior, bool invert) {
  CharMatcher matcher = find_known_regex(pattern);
  if (!matcher) {
    std::string shown(pattern.substr(0, 200));
    fail(ErrorCode::kUnsupported,
         "Split pre-tokenizer: regex \"" + shown +
             "\" is not one of the patterns Hearth implements (GPT-2, Llama 3, Qwen2, digit "
             "groups); arbitrary regexes are refused because they could backtrack without bound");
  }
  return std::make_unique<MatcherSplit>(matcher, behavior, invert);
}

std::unique_ptr<PreTokenizer> make_literal_split_pre_tokenizer(std::string literal,
                                                               SplitBehavior behavior,
                                                               bool invert) {
  return std::make_unique<LiteralSplit>(std::move(literal), behavior, invert);
}

std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(
    std::vector<std::unique_ptr<PreTokenizer>> steps) {
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

}  // namespace hearth
