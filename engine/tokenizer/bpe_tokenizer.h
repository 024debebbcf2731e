// Byte-level (and plain) BPE tokenizer: added tokens, pre-tokenizer, BPE model, decoder and
// the BOS/EOS post-processing, assembled from tokenizer.json, GGUF metadata or code.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth {

// How ids turn back into text.
enum class BpeDecoder {
  kByteLevel,  // tokens' GPT-2 byte characters back to bytes, then lossy UTF-8
  kMetaspace,  // "▁" -> " ", <0xXX> -> byte, the first leading space dropped (Llama 2 style)
  kJoin,       // no decoder: tokens joined with spaces, as tokenizers does without one
  // A Sequence ending in ByteLevel after [ByteFallback,] Fuse[, Replace…] (what transformers 5
  // writes for byte-level GGUF vocabularies): <0xXX> tokens to bytes, tokens joined, the
  // replacements applied, then the whole text mapped back to bytes — or kept as it is when any
  // character is outside the byte mapping (tokenizers maps the fused text all or nothing).
  kByteLevelFused,
};

struct BpeTokenizerSpec {
  std::vector<std::string> vocab;  // model vocabulary: vocab[id]; "" for an unused id
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<AddedToken> added_tokens;         // ids may lie beyond the model vocabulary
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // null: the whole segment is one piece
  // Text rewrite before pre-tokenization (Llama 2 style): replace " " with "▁" and prepend "▁"
  // to each segment.
  bool metaspace_normalizer = false;
  BpeDecoder decoder = BpeDecoder::kByteLevel;
  bool decoder_byte_fallback = false;                                     // kByteLevelFused
  std::vector<std::pair<std::string, std::string>> decoder_replacements;  // kByteLevelFused
  bool ignore_merges = false;
  bool byte_fallback = false;
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  std::vector<int32_t> prefix_ids;  // added by encode(add_special = true), e.g. {bos}
  std::vector<int32_t> suffix_ids;
  std::optional<int32_t> bos_id, eos_id;
  std::string source;  // file name for error messages
};

// Throws Error(kInvalidFile) naming spec.source when the parts do not fit together (a merge of
// unknown tokens, an id out of range, ...).
std::unique_ptr<Tokenizer> make_bpe_tokenizer(BpeTokenizerSpec spec);

}  // namespace hearth
