// corpus mine: the path table, the commit rules and trailer parsing (mine_rules), and mine() on
// small git repositories with a kernel layout made here with the git CLI.

#include "autodriver/corpus/git_repo.hpp"
#include "autodriver/corpus/mine.hpp"
#include "autodriver/corpus/mine_rules.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/subprocess.hpp"

#include <gtest/gtest.h>

using namespace autodriver;
using namespace autodriver::corpus;
using namespace std::chrono_literals;

TEST(MineRules, PathTable) {
  EXPECT_EQ(classify_path("include/linux/netdevice.h"), PathClass::core);
  EXPECT_EQ(classify_path("include/uapi/linux/ethtool.h"), PathClass::core);
  EXPECT_EQ(classify_path("arch/x86/include/asm/io.h"), PathClass::core);
  EXPECT_EQ(classify_path("arch/x86/kernel/setup.c"), PathClass::other);
  EXPECT_EQ(classify_path("kernel/workqueue.c"), PathClass::core);
  EXPECT_EQ(classify_path("mm/slab.c"), PathClass::core);
  EXPECT_EQ(classify_path("net/core/dev.c"), PathClass::core);
  EXPECT_EQ(classify_path("net/ipv4/tcp.c"), PathClass::other);
  EXPECT_EQ(classify_path("net/mac80211/rx.c"), PathClass::core);
  EXPECT_EQ(classify_path("fs/namei.c"), PathClass::core);
  EXPECT_EQ(classify_path("fs/sysfs/file.c"), PathClass::core);
  EXPECT_EQ(classify_path("fs/ext4/inode.c"), PathClass::other);
  EXPECT_EQ(classify_path("drivers/net/ethernet/intel/e1000/e1000_main.c"), PathClass::driver);
  EXPECT_EQ(classify_path("drivers/base/core.c"), PathClass::core);
  EXPECT_EQ(classify_path("drivers/usb/core/hub.c"), PathClass::core);
  EXPECT_EQ(classify_path("drivers/usb/serial/ftdi_sio.c"), PathClass::driver);
  EXPECT_EQ(classify_path("drivers/gpu/drm/drm_atomic.c"), PathClass::core);
  EXPECT_EQ(classify_path("drivers/gpu/drm/i915/i915_drv.c"), PathClass::driver);
  EXPECT_EQ(classify_path("drivers/pci/probe.c"), PathClass::core);
  EXPECT_EQ(classify_path("drivers/pci/controller/pci-host-common.c"), PathClass::driver);
  EXPECT_EQ(classify_path("drivers/scsi/scsi_lib.c"), PathClass::core);
  EXPECT_EQ(classify_path("drivers/scsi/scsi_debug.c"), PathClass::driver);
  EXPECT_EQ(classify_path("sound/core/pcm.c"), PathClass::core);
  EXPECT_EQ(classify_path("sound/soc/soc-core.c"), PathClass::core);
  EXPECT_EQ(classify_path("sound/pci/hda/hda_intel.c"), PathClass::driver);
  EXPECT_EQ(classify_path("Documentation/driver-api/index.rst"), PathClass::other);
  EXPECT_EQ(classify_path("kernelx/foo.c"), PathClass::other); // a prefix matches whole components only
  EXPECT_EQ(classify_path("MAINTAINERS"), PathClass::other);
}

TEST(MineRules, SourceAndUnit) {
  EXPECT_TRUE(is_source_path("drivers/net/a.c"));
  EXPECT_TRUE(is_source_path("include/linux/foo.h"));
  EXPECT_TRUE(is_source_path("arch/x86/lib/memcpy_64.S"));
  EXPECT_FALSE(is_source_path("drivers/net/Kconfig"));
  EXPECT_FALSE(is_source_path("drivers/net/Makefile"));
  EXPECT_EQ(driver_unit_of("drivers/net/ethernet/intel/e1000/e1000_main.c"), "drivers/net/ethernet/intel/e1000");
  EXPECT_EQ(driver_unit_of("Makefile"), ".");
}

static CommitKind kind(std::vector<ChangedFile> files, std::size_t threshold = 50) { return classify_commit(files, threshold); }

TEST(MineRules, CommitKinds) {
  EXPECT_EQ(kind({{"include/linux/foo.h"}, {"drivers/net/a.c"}, {"drivers/hwmon/b.c"}}), CommitKind::mined);
  EXPECT_EQ(kind({{"include/linux/foo.h"}, {"kernel/foo.c"}}), CommitKind::core_only);
  EXPECT_EQ(kind({{"drivers/net/a.c"}}), CommitKind::driver_only);
  EXPECT_EQ(kind({{"Documentation/foo.rst"}, {"tools/x.c"}}), CommitKind::unrelated);
  EXPECT_EQ(kind({}), CommitKind::unrelated);
  // Kconfig and Makefile changes do not make a case on their own.
  EXPECT_EQ(kind({{"include/linux/foo.h"}, {"drivers/net/Kconfig"}}), CommitKind::core_only);
  EXPECT_EQ(kind({{"include/linux/Kconfig.x"}, {"drivers/net/a.c"}}), CommitKind::driver_only);
  // Whitespace-only files do not count; all whitespace-only: the commit is whitespace-only.
  EXPECT_EQ(kind({{"include/linux/foo.h", false}, {"drivers/net/a.c", false}}), CommitKind::whitespace_only);
  EXPECT_EQ(kind({{"include/linux/foo.h", false}, {"drivers/net/a.c", true}}), CommitKind::driver_only);
  // Treewide: more driver files than the threshold (Kconfig/Makefile count as driver files).
  std::vector<ChangedFile> many{{"include/linux/foo.h"}};
  for (int i = 0; i < 6; ++i) many.push_back({"drivers/x" + std::to_string(i) + "/a.c"});
  EXPECT_EQ(classify_commit(many, 5), CommitKind::treewide);
  EXPECT_EQ(classify_commit(many, 6), CommitKind::mined);
}

TEST(MineRules, Trailers) {
  const char* msg = "net: foo: convert to new bar_register() API\n"
                    "\n"
                    "bar_register() now takes a struct bar_config. Fixes: this word in prose is not a trailer.\n"
                    "Convert all users.\n"
                    "\n"
                    "Fixes: 1234567890ab (\"net: foo: add bar support\")\n"
                    "Reported-by: Some One <some@one.org>\n"
                    "Closes: https://lore.kernel.org/r/abc@def/\n"
                    "Link: https://lore.kernel.org/r/20240101.123@example.org\n"
                    "[ jdoe: rebased on net-next ]\n"
                    "Signed-off-by: Jane Doe <jane@example.org>\n"
                    "Signed-off-by: John Doe <john@example.org>\n";
  Trailers t = parse_trailers(msg);
  ASSERT_EQ(t.fixes.size(), 1u);
  EXPECT_EQ(t.fixes[0], "1234567890ab (\"net: foo: add bar support\")");
  ASSERT_EQ(t.link.size(), 1u);
  EXPECT_EQ(t.link[0], "https://lore.kernel.org/r/20240101.123@example.org");
  EXPECT_EQ(t.closes.size(), 1u);
  EXPECT_EQ(t.reported_by.size(), 1u);
  ASSERT_EQ(t.signed_off_by.size(), 2u);
  EXPECT_EQ(t.signed_off_by[1], "John Doe <john@example.org>");
  EXPECT_EQ(subject_of(msg), "net: foo: convert to new bar_register() API");

  // A subject that looks like a trailer is not one; a body paragraph that is mostly prose is not a block.
  Trailers none = parse_trailers("Fixes: typo\n\nThis fixes the build.\nLink: not really a trailer here\nmore prose\n");
  EXPECT_TRUE(none.fixes.empty());
  EXPECT_TRUE(none.link.empty());
}

TEST(MineRules, SafePaths) {
  EXPECT_TRUE(is_safe_relative_path("drivers/net/a.c"));
  EXPECT_FALSE(is_safe_relative_path("/etc/passwd"));
  EXPECT_FALSE(is_safe_relative_path("drivers/../../x"));
  EXPECT_FALSE(is_safe_relative_path("drivers//a.c"));
  EXPECT_FALSE(is_safe_relative_path(""));
}

namespace {

/// A scratch git repository driven through the git CLI (tests only; the engine uses libgit2).
class GitRepo {
public:
  explicit GitRepo(const util::fs::path& dir) : m_dir(dir) { git({"init", "-q", "-b", "master"}); }
  void git(std::vector<std::string> args) {
    util::RunRequest r;
    r.argv = {"git", "-c", "user.name=T", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"};
    r.argv.insert(r.argv.end(), args.begin(), args.end());
    r.cwd = m_dir;
    r.timeout = 30s;
    auto res = util::run(r);
    ASSERT_TRUE(res);
    ASSERT_TRUE(res->ok()) << res->err;
  }
  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories((m_dir / path).parent_path());
    ASSERT_TRUE(util::write_file(m_dir / path, text));
  }
  void commit(const std::string& msg) {
    git({"add", "-A"});
    git({"commit", "-q", "-m", msg});
  }

private:
  util::fs::path m_dir;
};

} // namespace

TEST(Mine, BadInputIsOneClearError) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-mine-");
  ASSERT_TRUE(tmp);
  MineOptions o;
  o.repo = tmp->path() / "nope";
  o.range = "a..b";
  o.out = tmp->path() / "out";
  auto r = mine(o, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, util::ErrorKind::not_found);

  std::filesystem::create_directories(tmp->path() / "plain");
  o.repo = tmp->path() / "plain";
  r = mine(o, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, util::ErrorKind::config);
  EXPECT_NE(r.error().message.find("not a git repository"), std::string::npos);

  std::filesystem::create_directories(tmp->path() / "repo");
  GitRepo g(tmp->path() / "repo");
  g.write("include/linux/foo.h", "int foo(int);\n");
  g.commit("base");
  o.repo = tmp->path() / "repo";
  o.range = "master";
  r = mine(o, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("A..B"), std::string::npos);
  o.range = "v9.9..master";
  r = mine(o, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown revision 'v9.9'"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(o.out)); // nothing written on bad input
}

TEST(GitHistory, EveryVersionOfTheWantedFilesOnceOldestFirst) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-git-");
  ASSERT_TRUE(tmp);
  GitRepo g(tmp->path());
  g.write("a.c", "int a(void) { return 1; }\n");
  g.write("notes.txt", "one\n");
  g.commit("first");
  g.write("a.c", "int a(void) { return 2; }\n");
  g.write("sub/b.h", "int b(void);\n");
  g.commit("second");
  g.write("notes.txt", "two\n");
  g.commit("notes only");
  g.write("a.c", "int a(void) { return 1; }\n"); // the first text again: already seen
  g.commit("back");
  auto repo = git::open_repository(tmp->path());
  ASSERT_TRUE(repo);
  std::vector<std::string> seen;
  auto n = git::each_file_version(
      repo->get(), "HEAD", [](std::string_view p) { return p.ends_with(".c") || p.ends_with(".h"); },
      [&](const std::string& path, const std::string& commit, std::string_view text) {
        EXPECT_EQ(commit.size(), 40u);
        seen.push_back(path + ": " + std::string(text));
      });
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 4);
  EXPECT_EQ(seen, (std::vector<std::string>{"a.c: int a(void) { return 1; }\n", "a.c: int a(void) { return 2; }\n",
                                            "sub/b.h: int b(void);\n"}));
  EXPECT_FALSE(git::each_file_version(
      repo->get(), "v9", [](std::string_view) { return true; }, [](const std::string&, const std::string&, std::string_view) {}));
}

TEST(Mine, ApiChangeCommitBecomesACase) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-mine-");
  ASSERT_TRUE(tmp);
  GitRepo g(tmp->path());
  g.write("include/linux/foo.h", "int foo_register(struct device *dev);\n");
  g.write("drivers/net/a.c", "#include <linux/foo.h>\nint a_probe(struct device *d) { return foo_register(d); }\n");
  g.write("drivers/hwmon/b.c", "#include <linux/foo.h>\nint b_probe(struct device *d) { return foo_register(d); }\n");
  g.commit("base");
  g.git({"tag", "base"});
  g.write("include/linux/foo.h", "int foo_register(struct device *dev, unsigned int flags);\n");
  g.write("drivers/net/a.c", "#include <linux/foo.h>\nint a_probe(struct device *d) { return foo_register(d, 0); }\n");
  g.write("drivers/hwmon/b.c", "#include <linux/foo.h>\nint b_probe(struct device *d) { return foo_register(d, 0); }\n");
  g.commit("foo: add flags to foo_register()\n\nFixes: 0123456789ab (\"foo: add\")\nSigned-off-by: A <a@b.c>");
  g.write("drivers/net/a.c", "#include <linux/foo.h>\nint a_probe(struct device *d) {  return foo_register(d, 0); }\n");
  g.write("include/linux/foo.h", "int  foo_register(struct device *dev, unsigned int flags);\n");
  g.commit("whitespace");

  MineOptions o;
  o.repo = tmp->path();
  o.range = "base..master";
  o.out = tmp->path() / "out";
  auto r = mine(o, {});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->commits_walked, 2u);
  EXPECT_EQ(r->cases_written, 1u);
  EXPECT_EQ(r->by_kind["whitespace_only"], 1u);
  ASSERT_EQ(r->case_ids.size(), 1u);
  auto dir = o.out / "cases" / r->case_ids[0];
  auto before = util::read_file(dir / "before/drivers/net/a.c");
  auto golden = util::read_file(dir / "golden/drivers/hwmon/b.c");
  ASSERT_TRUE(before && golden);
  EXPECT_NE(before->find("foo_register(d)"), std::string::npos);
  EXPECT_NE(golden->find("foo_register(d, 0)"), std::string::npos);
  auto patch = util::read_file(dir / "api_delta.patch");
  ASSERT_TRUE(patch);
  EXPECT_NE(patch->find("+int foo_register(struct device *dev, unsigned int flags);"), std::string::npos);
  EXPECT_EQ(patch->find("drivers/"), std::string::npos);
  auto meta = nlohmann::json::parse(*util::read_file(dir / "metadata.json"));
  EXPECT_EQ(meta["origin"], "mined");
  EXPECT_EQ(meta["trailers"]["fixes"][0], "0123456789ab (\"foo: add\")");
  EXPECT_EQ(meta["driver_units"], nlohmann::json({"drivers/hwmon", "drivers/net"}));

  // Resumable: a second run redoes nothing.
  auto again = mine(o, {});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->cases_written, 0u);
  EXPECT_EQ(again->cases_present, 1u);
}
