#include "engine/generate/ngram_proposer.h"

#include <algorithm>

namespace hearth {

std::vector<int32_t> propose_from_ngrams(std::span<const int32_t> tokens, int max_tokens,
                                         const NgramLookup& lookup) {
  const auto len = static_cast<int64_t>(tokens.size());
  if (max_tokens <= 0) return {};
  for (int n = lookup.max_ngram; n >= std::max(1, lookup.min_ngram); --n) {
    if (len <= n) continue;
    const auto tail = tokens.last(static_cast<size_t>(n));
    // Latest earlier start first; the match must be followed by at least one token.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (tokens[static_cast<size_t>(start)] != tail[0]) continue;
      if (!std::equal(tail.begin(), tail.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(max_tokens, len - from);
      return {tokens.begin() + from, tokens.begin() + from + count};
    }
  }
  return {};
}

}  // namespace hearth
