// Hands out the KV cache's pages to sequences. A sequence holds the pages covering its
// positions, in order; freed pages return to the pool.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace hearth {

class PagePool {
 public:
  PagePool(int64_t num_pages, int64_t page_size);

  int64_t page_size() const { return page_size_; }
  int64_t num_pages() const { return num_pages_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  int64_t pages_for(int64_t tokens) const { return (tokens + page_size_ - 1) / page_size_; }

  // `count` pages, or nullopt when fewer are free (nothing is taken then).
  std::optional<std::vector<int32_t>> allocate(int64_t count);
  void release(const std::vector<int32_t>& pages);

 private:
  int64_t num_pages_;
  int64_t page_size_;
  std::vector<int32_t> free_;  // a stack: recently freed pages are reused first
};

}  // namespace hearth
