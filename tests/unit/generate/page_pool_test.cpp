#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "engine/generate/page_pool.h"

namespace hearth {
namespace {

TEST(PagePool, AllocatesDistinctPagesAndRefusesOverdraw) {
  PagePool pool(10, 16);
  EXPECT_EQ(pool.pages_for(0), 0);
  EXPECT_EQ(pool.pages_for(16), 1);
  EXPECT_EQ(pool.pages_for(17), 2);
  auto a = pool.allocate(4);
  auto b = pool.allocate(6);
  ASSERT_TRUE(a && b);
  std::set<int32_t> all(a->begin(), a->end());
  all.insert(b->begin(), b->end());
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 9);
  EXPECT_FALSE(pool.allocate(1));
  pool.release(*a);
  EXPECT_EQ(pool.free_pages(), 4);
  EXPECT_FALSE(pool.allocate(5));
  EXPECT_EQ(pool.free_pages(), 4);  // a refused request takes nothing
  EXPECT_TRUE(pool.allocate(4));
}

std::vector<int32_t> tokens(std::initializer_list<int32_t> list) {
  return list;
}

// Published pages are found by the tokens before and in them, only as a whole leading chain,
// and stay cached after release until allocation needs them.
TEST(PagePool, PublishedPagesAreSharedByPrefix) {
  PagePool pool(6, 2);
  const std::vector<int32_t> seq = {1, 2, 3, 4, 5, 6, 7};
  auto pages = *pool.allocate(4);
  uint64_t key = pool.root_key();
  for (int i = 0; i < 3; ++i) {  // the fourth page holds one token: never published
    key = pool.publish(pages[i], key, std::span(seq).subspan(2 * i, 2));
  }
  pool.release(pages);
  EXPECT_EQ(pool.cached_pages(), 3);
  EXPECT_EQ(pool.free_pages(), 3);

  const std::vector<int32_t> head = {1, 2, 3, 4, 9, 9};
  const auto match = pool.acquire_prefix(head, 3);
  const auto& shared = match.pages;
  ASSERT_EQ(shared.size(), 2u);  // the third page differs
  EXPECT_EQ(shared[0], pages[0]);
  EXPECT_EQ(shared[1], pages[1]);
  EXPECT_EQ(match.chain_key,
            pool.chain_key(pool.chain_key(pool.root_key(), std::span(head).first(2)),
                           std::span(head).subspan(2, 2)));
  EXPECT_TRUE(pool.acquire_prefix(tokens({3, 4, 5, 6}), 2).pages.empty());  // not leading
  auto again = pool.acquire_prefix(seq, 1).pages;                           // limited by max_pages
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], pages[0]);
  pool.check_invariants();

  // 3 free and 1 cached (pages[2]) may be allocated; held pages may not.
  EXPECT_FALSE(pool.allocate(5));
  auto all = *pool.allocate(4);
  EXPECT_EQ(std::count(all.begin(), all.end(), pages[2]), 1);
  EXPECT_EQ(pool.acquire_prefix(seq, 3).pages.size(), 2u);  // pages[2] was evicted
  pool.check_invariants();
}

// An equal page published twice (two jobs computed the same prefix together) keeps the first;
// the second stays private and is freed, not cached, on release.
TEST(PagePool, ADuplicatePageStaysPrivate) {
  PagePool pool(4, 2);
  auto a = *pool.allocate(1);
  auto b = *pool.allocate(1);
  pool.publish(a[0], pool.root_key(), tokens({5, 5}));
  pool.publish(b[0], pool.root_key(), tokens({5, 5}));
  pool.release(b);
  EXPECT_EQ(pool.free_pages(), 3);
  pool.release(a);
  EXPECT_EQ(pool.cached_pages(), 1);
  pool.check_invariants();
}

// A page published after a chain, full or partial, lends its leading positions to a later page
// that starts alike after the same chain: the longest common start wins, held until released; a
// partial page never answers a full page's lookup, and an evicted one is forgotten.
TEST(PagePool, PartialMatchesFindTheLongestCommonStartAfterTheSameChain) {
  PagePool pool(4, 4);
  const uint64_t root = pool.root_key();
  auto pages = *pool.allocate(3);
  const uint64_t first = pool.publish(pages[0], root, tokens({1, 2, 3, 4}));
  pool.publish(pages[1], first, tokens({5, 6, 7, 8}));
  pool.publish_partial(pages[2], first, tokens({5, 6, 9}));
  pool.release(pages);
  EXPECT_EQ(pool.cached_pages(), 3);
  pool.check_invariants();

  auto match = pool.acquire_partial(first, tokens({5, 6, 9, 1}));
  EXPECT_EQ(match.page, pages[2]);
  EXPECT_EQ(match.tokens, 3);
  EXPECT_EQ(pool.cached_pages(), 2);  // held now
  pool.release({match.page});
  match = pool.acquire_partial(first, tokens({5, 6, 7}));
  EXPECT_EQ(match.page, pages[1]);
  EXPECT_EQ(match.tokens, 3);
  pool.release({match.page});
  EXPECT_EQ(pool.acquire_partial(first, tokens({4, 5})).page, -1);  // starts otherwise
  EXPECT_EQ(pool.acquire_partial(root, tokens({5, 6})).page, -1);   // after another chain
  // The partial page is not a full page of its tokens.
  EXPECT_EQ(pool.acquire_prefix(tokens({1, 2, 3, 4, 5, 6, 9, 0}), 2).pages.size(), 1u);
  pool.release({pages[0]});
  // Evicted pages (all three, for four new ones) are no longer found.
  auto all = *pool.allocate(4);
  EXPECT_EQ(pool.acquire_partial(first, tokens({5, 6, 9})).page, -1);
  pool.release(all);
  pool.check_invariants();
}

// Thousands of random allocations, prefix acquisitions, publications and releases against a
// shadow of what each page holds: a page someone holds is never handed out again, a shared
// page always holds the tokens it was found by, and when everyone lets go no page is missing.
TEST(PagePool, RandomUseNeverHandsOutAHeldPageOrLosesOne) {
  constexpr int64_t kPages = 24, kPageSize = 4;
  PagePool pool(kPages, kPageSize, /*salt=*/77);
  std::mt19937 rng(5);
  struct Seq {
    std::vector<int32_t> tokens;
    std::vector<int32_t> pages;
    int64_t published = 0;
    uint64_t key = 0;
  };
  std::vector<Seq> seqs;
  std::map<int32_t, std::vector<int32_t>> content;  // page -> tokens written there
  std::vector<int> holders(kPages, 0);
  for (int step = 0; step < 20000; ++step) {
    const int action = static_cast<int>(rng() % 4);
    if (action == 0 && seqs.size() < 8) {  // a new sequence over a 3-letter alphabet
      Seq s;
      for (int i = 0, n = 1 + static_cast<int>(rng() % 14); i < n; ++i) {
        s.tokens.push_back(static_cast<int32_t>(rng() % 3));
      }
      const int64_t need = pool.pages_for(static_cast<int64_t>(s.tokens.size()));
      auto match =
          pool.acquire_prefix(s.tokens, (static_cast<int64_t>(s.tokens.size()) - 1) / kPageSize);
      s.pages = std::move(match.pages);
      s.key = match.chain_key;
      uint64_t key = pool.root_key();
      for (size_t i = 0; i < s.pages.size(); ++i) {
        const auto expect = std::vector<int32_t>(s.tokens.begin() + i * kPageSize,
                                                 s.tokens.begin() + (i + 1) * kPageSize);
        ASSERT_EQ(content[s.pages[i]], expect) << "a shared page was overwritten";
        key = pool.chain_key(key, expect);
      }
      ASSERT_EQ(s.key, key);
      s.published = static_cast<int64_t>(s.pages.size());
      // The next page's start, copied from a page that begins alike (held until copied).
      const int64_t start = s.published * kPageSize;
      const auto rest = std::span(s.tokens).subspan(static_cast<size_t>(start));
      const auto partial =
          pool.acquire_partial(s.key, rest.first(std::min<size_t>(rest.size(), kPageSize)));
      if (partial.page >= 0) {
        const auto& lent = content[partial.page];
        ASSERT_GE(static_cast<int64_t>(lent.size()), partial.tokens);
        ASSERT_TRUE(std::equal(lent.begin(), lent.begin() + partial.tokens, rest.begin()))
            << "a lent page does not start with the tokens it was matched by";
      }
      auto own = pool.allocate(need - static_cast<int64_t>(s.pages.size()));
      if (!own) {  // the cache is full of held pages: give the shared ones back
        if (partial.page >= 0) pool.release({partial.page});
        pool.release(s.pages);
        continue;
      }
      for (int32_t p : *own) {
        ASSERT_EQ(holders[p], 0) << "page " << p << " handed out while held";
        ASSERT_NE(p, partial.page) << "the page being copied from was handed out";
        content[p].clear();
      }
      if (partial.page >= 0) {
        content[own->front()].assign(rest.begin(), rest.begin() + partial.tokens);
        pool.release({partial.page});
      }
      for (int32_t p : s.pages) ++holders[p];
      for (int32_t p : *own) ++holders[p];
      s.pages.insert(s.pages.end(), own->begin(), own->end());
      seqs.push_back(std::move(s));
    } else if (action == 1 && !seqs.empty()) {  // compute and publish the next full page
      Seq& s = seqs[rng() % seqs.size()];
      const int64_t i = s.published;
      if ((i + 1) * kPageSize <= static_cast<int64_t>(s.tokens.size())) {
        const auto page_tokens = std::span(s.tokens).subspan(i * kPageSize, kPageSize);
        content[s.pages[i]].assign(page_tokens.begin(), page_tokens.end());
        s.key = pool.publish(s.pages[i], s.key, page_tokens);
        ++s.published;
      }
    } else if (action == 2 && !seqs.empty()) {  // finish or cancel
      const size_t k = rng() % seqs.size();
      Seq& s = seqs[k];
      // Half the time the ended sequence leaves its partly computed next page for copying.
      const int64_t start = s.published * kPageSize;
      const int64_t computed =
          std::min<int64_t>(static_cast<int64_t>(s.tokens.size()) - start, kPageSize - 1);
      if (rng() % 2 == 0 && computed > 0 && s.published < static_cast<int64_t>(s.pages.size())) {
        const auto part =
            std::span(s.tokens).subspan(static_cast<size_t>(start), static_cast<size_t>(computed));
        content[s.pages[s.published]].assign(part.begin(), part.end());
        pool.publish_partial(s.pages[s.published], s.key, part);
      }
      for (int32_t p : seqs[k].pages) --holders[p];
      pool.release(seqs[k].pages);
      seqs.erase(seqs.begin() + static_cast<std::ptrdiff_t>(k));
    }
    pool.check_invariants();
  }
  for (auto& s : seqs) pool.release(s.pages);
  pool.check_invariants();
  EXPECT_EQ(pool.available_pages(), kPages);
  EXPECT_GT(pool.cached_pages(), 0);
}

}  // namespace
}  // namespace hearth
