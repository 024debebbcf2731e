// Hands out the KV cache's pages to sequences and keeps the full pages of earlier sequences for
// reuse. A sequence holds the pages covering its positions, in order. A page whose positions are
// all computed can be published under the hash chain of the tokens up to its end; a later
// sequence that starts with the same tokens acquires it instead of computing it again. Pages are
// reference-counted: a published page no sequence holds stays cached until allocate() needs the
// space, and is then evicted least recently used first. Only full pages are shared, and a shared
// page is never written (its positions lie before the sharing sequence's first new position).
// A finished sequence's last, partly filled page can be published too; it is never shared, but a
// later sequence whose tokens after the same chain start alike may copy its leading positions
// (acquire_partial) instead of computing them.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace hearth {

class PagePool {
 public:
  // `salt` starts every hash chain: whatever else changes a page's contents (the model, the
  // cache type, RoPE settings, adapters) belongs in it.
  PagePool(int64_t num_pages, int64_t page_size, uint64_t salt = 0);

  int64_t page_size() const { return page_size_; }
  int64_t num_pages() const { return num_pages_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  // Published pages no sequence holds (allocate() may evict them).
  int64_t cached_pages() const { return static_cast<int64_t>(lru_.size()); }
  int64_t available_pages() const { return free_pages() + cached_pages(); }
  int64_t pages_for(int64_t tokens) const { return (tokens + page_size_ - 1) / page_size_; }

  // `count` pages, free ones first, then cached ones evicted least recently used first; nullopt
  // when fewer are available (nothing is taken or evicted then).
  std::optional<std::vector<int32_t>> allocate(int64_t count);
  // Gives up one hold on each page: pages nobody holds become free, or cached when published.
  // The first page of a sequence stays cached longest (a prefix outlives its continuations).
  void release(const std::vector<int32_t>& pages);

  // The hash chain value after `page_tokens` (one full page) following `parent_key`.
  uint64_t chain_key(uint64_t parent_key, std::span<const int32_t> page_tokens) const;
  // Where a sequence's chain starts: `sequence_salt` holds what changes its pages beyond the
  // pool's salt (the adapters it runs with); 0 for none.
  uint64_t root_key(uint64_t sequence_salt = 0) const;

  // The leading full pages of `tokens`, at most `max_pages`, that are published: each is held
  // (release it like an allocated page). Stops at the first page not found.
  struct SharedPrefix {
    std::vector<int32_t> pages;
    uint64_t chain_key = 0;  // after the last page (root_key() when there is none)
  };
  SharedPrefix acquire_prefix(std::span<const int32_t> tokens, int64_t max_pages,
                              uint64_t sequence_salt = 0);
  // Publishes `page` (held by the caller, all its positions computed) as holding `page_tokens`
  // after the chain `parent_key`; returns the page's chain key. When an equal page is already
  // published, this one stays private and is freed on release.
  uint64_t publish(int32_t page, uint64_t parent_key, std::span<const int32_t> page_tokens);
  // Publishes a page whose first `tokens.size()` (1 .. page_size - 1) positions are computed and
  // will never be written again (its sequence has ended), for acquire_partial only.
  void publish_partial(int32_t page, uint64_t parent_key, std::span<const int32_t> tokens);

  // The published page after the chain `parent_key` (full or partial) whose tokens start with the
  // longest run of `tokens`' first ones, held (release it like an allocated page once its
  // positions are copied); page -1 and 0 tokens when none starts alike.
  struct PartialMatch {
    int32_t page = -1;
    int64_t tokens = 0;  // leading positions that hold `tokens`' first ones
  };
  PartialMatch acquire_partial(uint64_t parent_key, std::span<const int32_t> tokens);

  // For tests: each page is exactly one of free, held or cached, and the index agrees. Throws
  // Error(kInternal) otherwise.
  void check_invariants() const;

 private:
  struct Published {
    uint64_t parent_key = 0;
    std::vector<int32_t> tokens;
  };
  void hold(int32_t page);
  void evict_oldest();
  // Records `page` as published under `key` (not published yet, and no page has that key).
  void index(int32_t page, uint64_t key, uint64_t parent_key, std::span<const int32_t> tokens);

  int64_t num_pages_;
  int64_t page_size_;
  uint64_t salt_;
  std::vector<int32_t> free_;                 // a stack: recently freed pages are reused first
  std::vector<int32_t> holds_;                // per page: how many sequences hold it
  std::vector<std::optional<uint64_t>> key_;  // per page: its chain key when published
  std::vector<Published> published_;          // per page, when published
  std::unordered_map<uint64_t, int32_t> by_key_;
  std::unordered_multimap<uint64_t, int32_t> by_parent_;  // published pages by their parent key
  std::list<int32_t> lru_;                                // cached pages, least recently used first
  std::vector<std::list<int32_t>::iterator> lru_pos_;
};

}  // namespace hearth
