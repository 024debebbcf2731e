// SentencePiece-BPE over a vocabulary given as tokens + scores + token types (GGUF
// tokenizer.ggml.model == "llama", no .model file): repeatedly merge the adjacent pair whose
// merged piece has the highest score (leftmost on ties), then byte fallback (<0xXX>) or unk for
// characters the vocabulary lacks. Spaces become "▁", with a "▁" prefix when
// add_space_prefix. Written to give sentencepiece's ids for the models Llama-family GGUFs carry.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace hearth {

// GGUF / llama.cpp token types.
enum class SpmTokenType : int32_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SpmVocabSpec {
  std::vector<std::string> tokens;
  std::vector<float> scores;        // empty: all 0
  std::vector<SpmTokenType> types;  // empty: all normal
  std::optional<int32_t> bos_id, eos_id, unk_id;
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;
  std::string source;  // for error messages
};

// Throws Error(kInvalidFile) naming spec.source for inconsistent input (array lengths, ids out
// of range, a BYTE token that is not "<0xHH>").
std::unique_ptr<Tokenizer> make_llama_spm_tokenizer(SpmVocabSpec spec);

}  // namespace hearth
