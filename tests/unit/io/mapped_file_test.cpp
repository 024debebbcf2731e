#include <gtest/gtest.h>

#include "engine/io/mapped_file.h"
#include "tests/unit/io/io_test_util.h"

namespace hearth {
namespace {

TEST(MappedFile, MapsTheWholeFile) {
  test::TempDir dir;
  test::write_file(dir / "a.bin", std::string_view("hello world"));
  const auto f = MappedFile::open(dir / "a.bin");
  EXPECT_EQ(f->size(), 11u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data()), f->size()), "hello world");
  EXPECT_EQ(f->path(), dir / "a.bin");
  f->will_need(0, 100);  // clamps, never fails
  f->will_need(100, 1);
}

TEST(MappedFile, EmptyFilesMapToAnEmptySpan) {
  test::TempDir dir;
  test::write_file(dir / "empty", std::string_view(""));
  const auto f = MappedFile::open(dir / "empty");
  EXPECT_EQ(f->size(), 0u);
  EXPECT_TRUE(f->bytes().empty());
}

TEST(MappedFile, ReportsWhatCannotBeMapped) {
  test::TempDir dir;
  test::expect_error([&] { MappedFile::open(dir / "missing"); }, ErrorCode::kIo,
                     {"missing", "No such file"});
  test::expect_error([&] { MappedFile::open(dir.path()); }, ErrorCode::kIo, {"directory"});
}

}  // namespace
}  // namespace hearth
