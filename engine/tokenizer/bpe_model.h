// The BPE model: turns one pre-tokenized piece into ids by applying ranked merges, lowest rank
// first (leftmost on ties), with a priority queue so a long piece costs O(n log n), and a cache
// of recent pieces. Semantics of Hugging Face tokenizers' BPE (ignore_merges, byte_fallback,
// unk_token, fuse_unk).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hearth {

struct BpeMerge {
  int32_t left, right, result;  // ids; rank = position in the merge list
};

struct BpeModelOptions {
  // Pieces are raw bytes, and each byte starts as the token of its GPT-2 byte character
  // (ByteLevel pre-tokenizer). Otherwise each UTF-8 character starts as its own token.
  bool byte_level = true;
  bool ignore_merges = false;  // a piece that is a whole vocabulary token is taken as is
  bool byte_fallback = false;  // unknown characters become <0xXX> tokens
  std::optional<int32_t> unk_id;
  bool fuse_unk = false;
};

class BpeModel {
 public:
  // `vocab[id]` is the token string of id ("" for an unused id). Throws Error(kInvalidFile) on
  // inconsistent input (a merge id out of range).
  BpeModel(const std::vector<std::string>& vocab, const std::vector<BpeMerge>& merges,
           BpeModelOptions options);
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one piece to `out`.
  void tokenize(std::string_view piece, std::vector<int32_t>& out) const;

 private:
  struct MergeValue {
    uint32_t rank;
    int32_t result;
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

  // Open-addressing table from (left, right) to the merge; lookups are the hot path.
  const MergeValue* find_merge(int32_t left, int32_t right) const;
  void merge_symbols(std::vector<int32_t>& symbols) const;
  void initial_symbols(std::string_view piece, std::vector<int32_t>& symbols) const;
  bool cached(std::string_view piece, std::vector<int32_t>& out) const;
  void remember(std::string_view piece, const std::vector<int32_t>& ids) const;

  BpeModelOptions options_;
  StringMap token_ids_;                // model-space string (raw bytes when byte_level) -> id
  std::vector<int32_t> byte_ids_;      // byte_level: byte -> id of its character, -1 if none
  std::vector<int32_t> fallback_ids_;  // byte_fallback: byte -> id of "<0xXX>", -1 if none
  std::vector<uint64_t> merge_keys_;
  std::vector<MergeValue> merge_values_;
  uint64_t merge_mask_ = 0;

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace hearth
