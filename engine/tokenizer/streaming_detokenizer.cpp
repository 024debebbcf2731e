// Incremental detokenization over a sliding window of ids, as Hugging Face
// text-generation-inference does it: decode the ids from prefix_offset_ on with and without
// the unread ones, and emit the difference once it no longer ends in an incomplete character.
// Decoding a window that starts a few ids back keeps context-dependent rules (sentencepiece's
// leading space) the same as in a full decode.
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {
namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
}

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(tokenizer), skip_special_(skip_special) {}

std::string StreamingDetokenizer::feed(int32_t id) {
  ids_.push_back(id);
  const std::span<const int32_t> all(ids_);
  const std::string prefix_text =
      tokenizer_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_);
  const std::string new_text = tokenizer_.decode(all.subspan(prefix_offset_), skip_special_);
  // A trailing U+FFFD may be the start of a character that later ids complete: wait.
  const bool incomplete = new_text.size() >= kReplacement.size() &&
                          new_text.compare(new_text.size() - kReplacement.size(),
                                           kReplacement.size(), kReplacement) == 0;
  if (incomplete || new_text.size() <= prefix_text.size() ||
      new_text.compare(0, prefix_text.size(), prefix_text) != 0)
    return {};
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  return new_text.substr(prefix_text.size());
}

std::string StreamingDetokenizer::flush() {
  const std::span<const int32_t> all(ids_);
  const std::string prefix_text =
      tokenizer_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_);
  const std::string new_text = tokenizer_.decode(all.subspan(prefix_offset_), skip_special_);
  prefix_offset_ = read_offset_ = ids_.size();
  if (new_text.size() <= prefix_text.size() ||
      new_text.compare(0, prefix_text.size(), prefix_text) != 0)
    return {};
  return new_text.substr(prefix_text.size());
}

}  // namespace hearth
