// kernel::grep_source: the word index only narrows which files grep reads, so every answer must
// be the one `grep -r` gives over the whole tree.

#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

struct SourceGrepTest : ::testing::Test {
  std::optional<util::TempDir> tmp;
  fs::path src;

  void SetUp() override {
    auto t = util::TempDir::create(util::scratch_root(), "test-source-grep-");
    ASSERT_TRUE(t);
    tmp.emplace(std::move(*t));
    src = tmp->path() / "linux";
    put("drivers/a.c", "int x = foo(1);\nstatic struct foo_ops ops = { .probe = a_probe };\n/* J\xfcrgen foo */\n");
    put("drivers/sub/b.h", "struct foo {\n\tint bar_baz;\n};\n#define FOO_MAX 4\n");
    put("drivers/f.c", "int foobar(void) { return 0; }\nint x2foo;\n");
    put("drivers/g.c", "return table[idx];\nreturn  foo [ 2 ];\n");
    put("drivers/notes.txt", "foo\n");
    put("include/linux/c.h", "#define foo(x) bar(x)\nstatic inline int foo_ops_get(void);\n");
    put("other/d.c", "foo();\n");
    std::error_code ec;
    fs::create_symlink("a.c", src / "drivers" / "link.c", ec);
    ASSERT_FALSE(ec);
  }
  void put(const std::string& rel, const std::string& text) {
    fs::create_directories((src / rel).parent_path());
    ASSERT_TRUE(util::write_file(src / rel, text));
  }
  /// The query answered through the index and by grep over the whole tree.
  void same(kernel::SourceGrep q, const std::vector<std::string>& expected) {
    auto indexed = kernel::grep_source(src, q);
    q.all_of.clear();
    q.any_of.clear();
    auto whole = kernel::grep_source(src, q);
    EXPECT_EQ(indexed, whole) << q.pattern;
    EXPECT_EQ(indexed, expected) << q.pattern;
  }
};

} // namespace

TEST_F(SourceGrepTest, WholeWordsInTheFoldersAndFilesAsked) {
  kernel::SourceGrep q;
  q.options = {"-lw"};
  q.pattern = "foo";
  q.all_of = {"foo"};
  // Not foobar or x2foo (f.c), not a .txt file, not through the symbolic link.
  same(q, {"drivers/a.c", "drivers/g.c", "drivers/sub/b.h", "include/linux/c.h", "other/d.c"});
  q.dirs = {"drivers", "missing"};
  q.includes = {"*.c"};
  same(q, {"drivers/a.c", "drivers/g.c"});
}

TEST_F(SourceGrepTest, LinesAndRegexesAsGrepPrintsThem) {
  kernel::SourceGrep q;
  q.options = {"-nE"};
  q.includes = {"*.h"};
  q.pattern = "^#\\s*define\\s+foo\\(";
  q.all_of = {"foo"};
  same(q, {"include/linux/c.h:1:#define foo(x) bar(x)"});
  q.options = {"-lE"};
  q.includes = {"*.c"};
  q.pattern = "return[[:space:]]+foo[[:space:]]*\\[";
  same(q, {"drivers/g.c"});
  // A phrase: each of its words is on the line.
  q.options = {"-lw"};
  q.includes = {};
  q.pattern = "struct foo";
  q.all_of = {"struct", "foo"};
  same(q, {"drivers/sub/b.h"});
  // Alternatives: one of the words.
  q.options = {"-lwE"};
  q.pattern = "FOO_MAX|foo_ops";
  q.all_of = {};
  q.any_of = {"FOO_MAX", "foo_ops"};
  same(q, {"drivers/a.c", "drivers/sub/b.h"});
}

TEST_F(SourceGrepTest, AWordTheIndexCannotHoldFallsBackToGrep) {
  kernel::SourceGrep q;
  q.options = {"-l"};
  q.pattern = "2foo";
  q.all_of = {"2foo"};
  EXPECT_FALSE(kernel::WordIndex::indexable("2foo"));
  EXPECT_FALSE(kernel::WordIndex::indexable("a-b"));
  EXPECT_TRUE(kernel::WordIndex::indexable("_a9"));
  same(q, {"drivers/f.c"});
}

TEST_F(SourceGrepTest, IndexRoundTripsAndKeepsBigFilesAsCandidates) {
  std::string big(5u << 20, ' ');
  big += "\nint needle;\n";
  put("drivers/big.c", big);
  std::vector<std::string> files = {"drivers/a.c", "drivers/big.c", "drivers/f.c", "drivers/sub/b.h"};
  auto w = kernel::WordIndex::build(src, files);
  EXPECT_EQ(w.files_with("bar_baz"), (std::vector<std::string>{"drivers/big.c", "drivers/sub/b.h"}));
  EXPECT_EQ(w.files_with("needle"), (std::vector<std::string>{"drivers/big.c"}));
  auto foo = w.files_with("foo");
  EXPECT_NE(std::find(foo.begin(), foo.end(), "drivers/a.c"), foo.end());
  auto bytes = w.serialize();
  auto back = kernel::WordIndex::parse(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->files_with("bar_baz"), w.files_with("bar_baz"));
  EXPECT_EQ(back->file_count(), 4u);
  EXPECT_FALSE(kernel::WordIndex::parse(bytes.substr(0, bytes.size() - 3)));
  EXPECT_FALSE(kernel::WordIndex::parse("not an index"));

  kernel::SourceGrep q;
  q.options = {"-lw"};
  q.pattern = "needle";
  q.all_of = {"needle"};
  same(q, {"drivers/big.c"});
}
