// Prompt lookup: proposals for speculative decoding copied from a sequence's own earlier text.
// When the last n tokens (n from max_ngram down to min_ngram) occurred before, the tokens that
// followed their most recent earlier occurrence are proposed; an edit of a function, a summary
// quoting its source, or an answer repeating retrieved text continue that way for many tokens.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hearth {

struct NgramLookup {
  int max_ngram = 4;
  int min_ngram = 2;  // a single token matches too often to predict anything
};

// Up to `max_tokens` proposed continuations of `tokens` (empty when nothing matches).
std::vector<int32_t> propose_from_ngrams(std::span<const int32_t> tokens, int max_tokens,
                                         const NgramLookup& lookup = {});

}  // namespace hearth
