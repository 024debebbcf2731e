#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hearth
