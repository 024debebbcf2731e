#include "engine/tokenizer/bpe_model.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/utf8.h"

namespace hearth {
namespace {

constexpr uint64_t kEmptyKey = ~uint64_t{0};
constexpr size_t kMaxCachedPieceBytes = 64;
constexpr size_t kMaxCacheEntries = 1 << 15;

inline uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
}

inline uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

// A queued merge of the symbol at `pos` with its right neighbour.
struct QueuedMerge {
  uint32_t rank;
  uint32_t pos;
  int32_t result;
};
// std heap functions build a max-heap; "greater" puts the lowest rank, then leftmost, on top.
struct LaterMerge {
  bool operator()(const QueuedMerge& a, const QueuedMerge& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

}  // namespace

BpeModel::BpeModel(const std::vector<std::string>& vocab, const std::vector<BpeMerge>& merges,
                   BpeModelOptions options)
    : options_(options) {
  const auto n_vocab = static_cast<int64_t>(vocab.size());
  token_ids_.reserve(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id) {
    const std::string& token = vocab[id];
    if (token.empty()) continue;
    if (options_.byte_level) {
      // Tokens with characters outside the byte mapping cannot come out of the byte pieces.
      if (auto raw = byte_level::decode(token))
        token_ids_[std::move(*raw)] = static_cast<int32_t>(id);
    } else {
      token_ids_[token] = static_cast<int32_t>(id);
    }
  }
  if (options_.byte_level) {
    byte_ids_.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
      auto it = token_ids_.find(std::string(1, static_cast<char>(b)));
      if (it != token_ids_.end()) byte_ids_[b] = it->second;
    }
  }
  if (options_.byte_fallback) {
    fallback_ids_.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = token_ids_.find(std::string_view(name));
      if (it != token_ids_.end()) fallback_ids_[b] = it->second;
    }
  }
  if (options_.unk_id && (*options_.unk_id < 0 || *options_.unk_id >= n_vocab))
    fail(ErrorCode::kInvalidFile, "BPE: unk token id " + std::to_string(*options_.unk_id) +
                                      " is outside the vocabulary of " + std::to_string(n_vocab));

  size_t capacity = 16;
  while (capacity < merges.size() * 2) capacity <<= 1;
  merge_keys_.assign(capacity, kEmptyKey);
  merge_values_.resize(capacity);
  merge_mask_ = capacity - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const BpeMerge& m = merges[rank];
    for (int32_t id : {m.left, m.right, m.result})
      if (id < 0 || id >= n_vocab)
        fail(ErrorCode::kInvalidFile, "BPE: merge " + std::to_string(rank) + " refers to id " +
                                          std::to_string(id) + " outside the vocabulary");
    const uint64_t key = pair_key(m.left, m.right);
    uint64_t slot = mix(key) & merge_mask_;
    while (merge_keys_[slot] != kEmptyKey && merge_keys_[slot] != key)
      slot = (slot + 1) & merge_mask_;
    // A repeated pair takes its later rank, as a hash map filled in order would.
    merge_keys_[slot] = key;
    merge_values_[slot] = {static_cast<uint32_t>(rank), m.result};
  }
}

const BpeModel::MergeValue* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (uint64_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
    if (merge_keys_[slot] == key) return &merge_values_[slot];
    if (merge_keys_[slot] == kEmptyKey) return nullptr;
  }
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<int32_t>& symbols) const {
  symbols.clear();
  // An unknown character becomes unk; consecutive ones fuse into one unk with fuse_unk.
  bool pending_unk = false;
  auto flush_unk = [&] {
    if (pending_unk) symbols.push_back(*options_.unk_id);
    pending_unk = false;
  };
  auto unknown = [&] {
    if (!options_.unk_id) return;  // no unk token: the character is dropped, as in tokenizers
    if (pending_unk && !options_.fuse_unk) flush_unk();
    pending_unk = true;
  };
  if (options_.byte_level) {
    for (char c : piece) {
      const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id < 0) {
        unknown();
      } else {
        flush_unk();
        symbols.push_back(id);
      }
    }
  } else {
    for (size_t pos = 0; pos < piece.size();) {
      const size_t len = utf8::decode(piece, pos).len;
      const std::string_view ch = piece.substr(pos, len);
      pos += len;
      if (auto it = token_ids_.find(ch); it != token_ids_.end()) {
        flush_unk();
        symbols.push_back(it->second);
        continue;
      }
      if (options_.byte_fallback && std::all_of(ch.begin(), ch.end(), [&](char b) {
            return fallback_ids_[static_cast<uint8_t>(b)] >= 0;
          })) {
        flush_unk();
        for (char b : ch) symbols.push_back(fallback_ids_[static_cast<uint8_t>(b)]);
        continue;
      }
      unknown();
    }
  }
  flush_unk();
}

void BpeModel::merge_symbols(std::vector<int32_t>& symbols) const {
  const size_t n = symbols.size();
  if (n < 2) return;
  thread_local std::vector<int32_t> prev, next;
  thread_local std::vector<QueuedMerge> heap;
  prev.resize(n);
  next.resize(n);
  heap.clear();
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  for (size_t i = 0; i + 1 < n; ++i)
    if (const MergeValue* m = find_merge(symbols[i], symbols[i + 1]))
      heap.push_back({m->rank, static_cast<uint32_t>(i), m->result});
  std::make_heap(heap.begin(), heap.end(), LaterMerge{});

  constexpr int32_t kRemoved = -1;
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), LaterMerge{});
    const QueuedMerge top = heap.back();
    heap.pop_back();
    const int32_t pos = static_cast<int32_t>(top.pos);
    if (symbols[pos] == kRemoved || next[pos] < 0) continue;
    const int32_t right = next[pos];
    // Stale entry: the pair at pos changed since it was queued.
    const MergeValue* current = find_merge(symbols[pos], symbols[right]);
    if (!current || current->result != top.result) continue;

    symbols[pos] = top.result;
    symbols[right] = kRemoved;
    next[pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = pos;
    if (prev[pos] >= 0)
      if (const MergeValue* m = find_merge(symbols[prev[pos]], symbols[pos])) {
        heap.push_back({m->rank, static_cast<uint32_t>(prev[pos]), m->result});
        std::push_heap(heap.begin(), heap.end(), LaterMerge{});
      }
    if (next[pos] >= 0)
      if (const MergeValue* m = find_merge(symbols[pos], symbols[next[pos]])) {
        heap.push_back({m->rank, static_cast<uint32_t>(pos), m->result});
        std::push_heap(heap.begin(), heap.end(), LaterMerge{});
      }
  }
  symbols.erase(std::remove(symbols.begin(), symbols.end(), kRemoved), symbols.end());
}

bool BpeModel::cached(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.size() > kMaxCachedPieceBytes) return false;
  std::lock_guard lock(cache_mutex_);
  auto it = cache_.find(piece);
  if (it == cache_.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

void BpeModel::remember(std::string_view piece, const std::vector<int32_t>& ids) const {
  if (piece.size() > kMaxCachedPieceBytes) return;
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= kMaxCacheEntries) cache_.clear();
  cache_.emplace(std::string(piece), ids);
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    if (auto it = token_ids_.find(piece); it != token_ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (cached(piece, out)) return;
  thread_local std::vector<int32_t> symbols;
  initial_symbols(piece, symbols);
  merge_symbols(symbols);
  remember(piece, symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

}  // namespace hearth
