// propose::apply_edit in a built tree: files it reads and writes back unchanged (old-kernel
// branches hidden while a rename runs) keep their modification time, so that kbuild does not
// recompile every file including them (issue 16: 170 of 174 files rebuilt for a one-file rename).
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace autodriver;
namespace fs = std::filesystem;

TEST(ApplyTimes, FilesWrittenBackAsTheyWereKeepTheirTime) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-apply-times-");
  ASSERT_TRUE(tmp);
  fs::path tree = tmp->path() / "tree";
  fs::create_directories(tree / "include");
  const std::string header =
      "#if LINUX_VERSION_CODE < KERNEL_VERSION(3, 13, 0)\n#define OLD_WAY 1\n#else\n#define NEW_WAY 1\n#endif\n";
  ASSERT_TRUE(util::write_file(tree / "include/compat.h", header));
  ASSERT_TRUE(util::write_file(tree / "a.c", "#include \"include/compat.h\"\nvoid f(void) { OLD_NAME(x); }\n"));
  const auto old_time = fs::last_write_time(tree / "include/compat.h") - std::chrono::hours(1);
  fs::last_write_time(tree / "include/compat.h", old_time);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  propose::Edit e;
  e.change_id = "ident:OLD_NAME";
  e.renames = {{"OLD_NAME", "NEW_NAME"}};
  propose::ApplyOptions o;
  o.version_code = (6 << 16) + (12 << 8); // the header's first branch is dead on 6.12: hidden, then put back
  auto r = propose::apply_edit(e, tree, tmp->path() / "scratch", o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->changed_files, (std::vector<std::string>{"a.c"}));
  EXPECT_EQ(*util::read_file(tree / "include/compat.h"), header);
  EXPECT_EQ(fs::last_write_time(tree / "include/compat.h"), old_time);
  EXPECT_NE(util::read_file(tree / "a.c")->find("NEW_NAME(x)"), std::string::npos);
}

// A rename reaches a macro's body (`#define p_free kzfree`: gcc reports the old name there) but
// not the macro's own name, its parameters, nor an #ifdef asking whether the old name exists; a
// shim mapping the new name onto the old one is not made to map onto itself.
TEST(ApplyRenames, AMacroBodyIsRenamedItsNameAndConditionsAreNot) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-apply-renames-");
  ASSERT_TRUE(tmp);
  fs::path tree = tmp->path() / "tree";
  fs::create_directories(tree);
  ASSERT_TRUE(util::write_file(tree / "main.h", "#ifndef kzfree\n"
                                                "#define p_free kzfree\n"
                                                "#define p_free2(kzfree) kzfree(kzfree)\n"
                                                "#  define p_free3(x)\tkzfree(x) /* kzfree */\n"
                                                "#define kfree_sensitive kzfree\n"
                                                "#endif\n"
                                                "static void f(void *p) { kzfree(p); }\n"));
  propose::Edit e;
  e.change_id = "inline:kzfree";
  e.renames = {{"kzfree", "kfree_sensitive"}};
  auto r = propose::apply_edit(e, tree, tmp->path() / "scratch", {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*util::read_file(tree / "main.h"), "#ifndef kzfree\n"
                                               "#define p_free kfree_sensitive\n"
                                               "#define p_free2(kzfree) kzfree(kzfree)\n"
                                               "#  define p_free3(x)\tkfree_sensitive(x) /* kzfree */\n"
                                               "#define kfree_sensitive kzfree\n"
                                               "#endif\n"
                                               "static void f(void *p) { kfree_sensitive(p); }\n");
}
