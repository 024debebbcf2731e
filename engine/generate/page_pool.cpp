#include "engine/generate/page_pool.h"

#include "engine/core/error.h"

namespace hearth {

PagePool::PagePool(int64_t num_pages, int64_t page_size)
    : num_pages_(num_pages), page_size_(page_size) {
  HEARTH_CHECK(num_pages > 0 && page_size > 0, "page pool sizes");
  free_.reserve(static_cast<size_t>(num_pages));
  for (int64_t p = num_pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

std::optional<std::vector<int32_t>> PagePool::allocate(int64_t count) {
  if (count < 0 || count > free_pages()) return std::nullopt;
  std::vector<int32_t> pages(free_.end() - count, free_.end());
  free_.resize(free_.size() - static_cast<size_t>(count));
  return pages;
}

void PagePool::release(const std::vector<int32_t>& pages) {
  for (auto it = pages.rbegin(); it != pages.rend(); ++it) free_.push_back(*it);
  HEARTH_CHECK(free_pages() <= num_pages_, "a page was released twice");
}

}  // namespace hearth
