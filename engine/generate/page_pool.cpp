#include "engine/generate/page_pool.h"

#include <algorithm>

#include "engine/core/error.h"

namespace hearth {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64's finalizer over the running value: every token changes every bit of the key.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

}  // namespace

PagePool::PagePool(int64_t num_pages, int64_t page_size, uint64_t salt)
    : num_pages_(num_pages), page_size_(page_size), salt_(salt) {
  HEARTH_CHECK(num_pages > 0 && page_size > 0, "page pool sizes");
  free_.reserve(static_cast<size_t>(num_pages));
  for (int64_t p = num_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
  holds_.assign(static_cast<size_t>(num_pages), 0);
  key_.assign(static_cast<size_t>(num_pages), std::nullopt);
  published_.resize(static_cast<size_t>(num_pages));
  lru_pos_.assign(static_cast<size_t>(num_pages), lru_.end());
}

std::optional<std::vector<int32_t>> PagePool::allocate(int64_t count) {
  if (count < 0 || count > available_pages()) return std::nullopt;
  while (free_pages() < count) evict_oldest();
  std::vector<int32_t> pages(free_.end() - count, free_.end());
  free_.resize(free_.size() - static_cast<size_t>(count));
  for (int32_t p : pages) holds_[p] = 1;
  return pages;
}

void PagePool::release(const std::vector<int32_t>& pages) {
  // Last page first, so that a sequence's first page ends up most recently used.
  for (auto it = pages.rbegin(); it != pages.rend(); ++it) {
    const int32_t p = *it;
    HEARTH_CHECK(p >= 0 && p < num_pages_ && holds_[p] > 0, "a page was released twice");
    if (--holds_[p] > 0) continue;
    if (key_[p]) {
      lru_pos_[p] = lru_.insert(lru_.end(), p);
    } else {
      free_.push_back(p);
    }
  }
}

uint64_t PagePool::chain_key(uint64_t parent_key, std::span<const int32_t> page_tokens) const {
  uint64_t h = mix(parent_key, static_cast<uint64_t>(page_tokens.size()));
  for (int32_t t : page_tokens) h = mix(h, static_cast<uint32_t>(t));
  return h;
}

uint64_t PagePool::root_key(uint64_t sequence_salt) const {
  return sequence_salt == 0 ? salt_ : mix(salt_, sequence_salt);
}

PagePool::SharedPrefix PagePool::acquire_prefix(std::span<const int32_t> tokens, int64_t max_pages,
                                                uint64_t sequence_salt) {
  SharedPrefix shared{{}, root_key(sequence_salt)};
  uint64_t& key = shared.chain_key;
  const int64_t full = static_cast<int64_t>(tokens.size()) / page_size_;
  for (int64_t i = 0; i < std::min(full, max_pages); ++i) {
    const auto page_tokens =
        tokens.subspan(static_cast<size_t>(i * page_size_), static_cast<size_t>(page_size_));
    const uint64_t next = chain_key(key, page_tokens);
    const auto found = by_key_.find(next);
    if (found == by_key_.end()) break;
    // The key is a hash: the page's own tokens and its parent's key are compared too.
    const Published& entry = published_[found->second];
    if (entry.parent_key != key || !std::equal(entry.tokens.begin(), entry.tokens.end(),
                                               page_tokens.begin(), page_tokens.end())) {
      break;
    }
    hold(found->second);
    shared.pages.push_back(found->second);
    key = next;
  }
  return shared;
}

uint64_t PagePool::publish(int32_t page, uint64_t parent_key,
                           std::span<const int32_t> page_tokens) {
  HEARTH_CHECK(page >= 0 && page < num_pages_ && holds_[page] > 0, "publishing a page not held");
  HEARTH_CHECK(static_cast<int64_t>(page_tokens.size()) == page_size_, "publishing a partial page");
  const uint64_t key = chain_key(parent_key, page_tokens);
  // Already published, or an equal page is: this one then stays private.
  if (!key_[page] && !by_key_.count(key)) index(page, key, parent_key, page_tokens);
  return key;
}

void PagePool::publish_partial(int32_t page, uint64_t parent_key, std::span<const int32_t> tokens) {
  HEARTH_CHECK(page >= 0 && page < num_pages_ && holds_[page] > 0, "publishing a page not held");
  HEARTH_CHECK(!tokens.empty() && static_cast<int64_t>(tokens.size()) < page_size_,
               "a partial page holds 1 to page_size - 1 tokens");
  // The length is part of the key, so a partial page never answers a full page's lookup.
  const uint64_t key = chain_key(parent_key, tokens);
  if (!key_[page] && !by_key_.count(key)) index(page, key, parent_key, tokens);
}

void PagePool::index(int32_t page, uint64_t key, uint64_t parent_key,
                     std::span<const int32_t> tokens) {
  key_[page] = key;
  published_[page] = {parent_key, std::vector<int32_t>(tokens.begin(), tokens.end())};
  by_key_.emplace(key, page);
  by_parent_.emplace(parent_key, page);
}

PagePool::PartialMatch PagePool::acquire_partial(uint64_t parent_key,
                                                 std::span<const int32_t> tokens) {
  PartialMatch best;
  const auto [first, last] = by_parent_.equal_range(parent_key);
  for (auto it = first; it != last; ++it) {
    const std::vector<int32_t>& held = published_[it->second].tokens;
    const size_t n = std::min(held.size(), tokens.size());
    const auto common = static_cast<int64_t>(
        std::mismatch(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(n), tokens.begin())
            .first -
        held.begin());
    if (common > best.tokens) best = {it->second, common};
  }
  if (best.page >= 0) hold(best.page);
  return best;
}

void PagePool::hold(int32_t page) {
  if (holds_[page]++ == 0) {  // cached until now
    lru_.erase(lru_pos_[page]);
    lru_pos_[page] = lru_.end();
  }
}

void PagePool::evict_oldest() {
  const int32_t p = lru_.front();
  lru_.pop_front();
  lru_pos_[p] = lru_.end();
  by_key_.erase(*key_[p]);
  const auto [first, last] = by_parent_.equal_range(published_[p].parent_key);
  for (auto it = first; it != last; ++it) {
    if (it->second == p) {
      by_parent_.erase(it);
      break;
    }
  }
  key_[p].reset();
  published_[p] = {};
  free_.push_back(p);
}

void PagePool::check_invariants() const {
  std::vector<int> seen(static_cast<size_t>(num_pages_), 0);
  for (int32_t p : free_) {
    HEARTH_CHECK(holds_[p] == 0 && !key_[p], "a free page is held or published");
    ++seen[p];
  }
  for (int32_t p : lru_) {
    HEARTH_CHECK(holds_[p] == 0 && key_[p], "a cached page is held or not published");
    ++seen[p];
  }
  for (int64_t p = 0; p < num_pages_; ++p) {
    HEARTH_CHECK(holds_[p] >= 0, "a negative hold count");
    if (holds_[p] > 0) ++seen[p];
    HEARTH_CHECK(seen[p] == 1,
                 "page " + std::to_string(p) + " is in " + std::to_string(seen[p]) + " states");
    if (key_[p]) {
      const auto found = by_key_.find(*key_[p]);
      HEARTH_CHECK(found != by_key_.end() && found->second == p, "the index lost a page");
    }
  }
  HEARTH_CHECK(by_key_.size() == static_cast<size_t>(std::count_if(
                                     key_.begin(), key_.end(), [](const auto& k) { return k; })),
               "the index holds a page that is not published");
  HEARTH_CHECK(by_parent_.size() == by_key_.size(), "the parent index lost or kept a page");
  for (const auto& [parent, p] : by_parent_) {
    HEARTH_CHECK(key_[p] && published_[p].parent_key == parent,
                 "the parent index holds a page under another parent");
  }
}

}  // namespace hearth
