// gate::find_build_root: drivers whose Makefile reaches a sibling folder (issue 17 item 7).

#include "autodriver/gate/build_root.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

using Refs = std::vector<std::string>;

TEST(OutsideReferences, ReadsThePathsThatLeaveTheFolder) {
  EXPECT_EQ(gate::outside_references("obj-m += drv.o\ndrv-objs := main.o ../common/hal.o ../common/os/osdep.o\n"),
            (Refs{"../common/hal.o", "../common/os/osdep.o"}));
  EXPECT_EQ(gate::outside_references("ccflags-y += -I$(src)/../include -I${PWD}/../../shared\n"),
            (Refs{"../include", "../../shared"}));
  EXPECT_EQ(gate::outside_references("EXTRA_CFLAGS += -I../inc\ninclude ../rules.mk\n"), (Refs{"../inc", "../rules.mk"}));
  EXPECT_EQ(gate::outside_references("drv-y += $(patsubst %.c,%.o,$(wildcard $(src)/../lib/*.c))\n"), (Refs{"../lib/*.c"}));
}

TEST(OutsideReferences, IgnoresCommentsAndPathsThatStayInside) {
  EXPECT_TRUE(gate::outside_references("# built from ../common once\nobj-m += a.o\n").empty());
  EXPECT_TRUE(gate::outside_references("drv-objs := sub/../a.o\n").empty());
  EXPECT_TRUE(gate::outside_references("VERSION := 1..2\n").empty());
}

struct BuildRootTest : ::testing::Test {
  std::optional<util::TempDir> tmp;
  fs::path repo;
  void SetUp() override {
    auto t = util::TempDir::create(util::scratch_root(), "test-build-root-");
    ASSERT_TRUE(t);
    tmp.emplace(std::move(*t));
    repo = fs::weakly_canonical(tmp->path() / "repo");
  }
  void put(const std::string& rel, const std::string& text) {
    fs::create_directories((repo / rel).parent_path());
    ASSERT_TRUE(util::write_file(repo / rel, text));
  }
};

TEST_F(BuildRootTest, ASelfContainedDriverIsItsOwnRoot) {
  put("drv/Makefile", "obj-m += drv.o\ndrv-objs := a.o sub/b.o\n");
  auto r = gate::find_build_root(repo / "drv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo / "drv");
  EXPECT_TRUE(r->subdir.empty());
  EXPECT_TRUE(r->outside.empty());
}

TEST_F(BuildRootTest, ASiblingFolderMakesTheParentTheRoot) {
  put("drivers/wifi/Makefile", "obj-m += wifi.o\nwifi-objs := main.o ../../common/hal/hal.o\n");
  put("drivers/wifi/main.c", "int x;\n");
  put("common/hal/hal.c", "int y;\n");
  auto r = gate::find_build_root(repo / "drivers" / "wifi");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo);
  EXPECT_EQ(r->subdir, fs::path("drivers/wifi"));
  EXPECT_EQ(r->outside, (Refs{"../../common/hal/hal.o"}));
}

TEST_F(BuildRootTest, AnIncludeFolderOfANestedKbuildCounts) {
  put("drv/Makefile", "obj-m += sub/\n");
  put("drv/sub/Kbuild", "ccflags-y += -I$(src)/../../include\nobj-m += x.o\n");
  put("include/shared.h", "\n");
  auto r = gate::find_build_root(repo / "drv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo);
  EXPECT_EQ(r->subdir, fs::path("drv"));
}

TEST_F(BuildRootTest, MissingFoldersAreNamedNotGuessed) {
  put("drv/Makefile", "obj-m += drv.o\ndrv-objs := a.o ../gone/x.o\n");
  auto r = gate::find_build_root(repo / "drv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo / "drv");
  EXPECT_EQ(r->unresolved, (Refs{"../gone/x.o"}));
}

TEST_F(BuildRootTest, APatternCountsOnlyWhenSomethingMatchesIt) {
  // A release target writing "../pkg-$(VER).tgz" next to the driver names nothing to copy.
  put("drv/Makefile", "obj-m += drv.o\nTGZ=../drv-$(VER).tgz\n");
  put("unrelated/x.c", "int x;\n");
  auto r = gate::find_build_root(repo / "drv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo / "drv");
  EXPECT_TRUE(r->outside.empty());
  EXPECT_TRUE(r->unresolved.empty());
  // The same pattern with a match beside the driver does.
  put("drv-1.0.tgz", "");
  r = gate::find_build_root(repo / "drv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo);
  // A wildcard into a sibling folder counts when the folder is there.
  put("lib/Makefile", "obj-m += lib.o\nlib-y += $(patsubst %.c,%.o,$(wildcard $(src)/../shared/*.c))\n");
  put("shared/s.c", "int s;\n");
  r = gate::find_build_root(repo / "lib");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo);
  EXPECT_EQ(r->subdir, fs::path("lib"));
}

TEST_F(BuildRootTest, ARootTooFarUpIsNotChosen) {
  put("a/b/c/d/drv/Makefile", "obj-m += drv.o\ndrv-objs := a.o ../../../../../lib/x.o\n");
  put("lib/x.c", "int x;\n");
  auto r = gate::find_build_root(repo / "a/b/c/d/drv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo / "a/b/c/d/drv");
  EXPECT_EQ(r->unresolved, (Refs{"../../../../../lib/x.o"}));
}

TEST_F(BuildRootTest, AGivenRootMustHoldTheDriver) {
  put("drv/Makefile", "obj-m += drv.o\n");
  put("other/Makefile", "\n");
  auto r = gate::find_build_root(repo / "drv", repo);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->root, repo);
  EXPECT_EQ(r->subdir, fs::path("drv"));
  auto bad = gate::find_build_root(repo / "drv", repo / "other");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, util::ErrorKind::config);
  EXPECT_FALSE(gate::find_build_root(repo / "nowhere"));
}

} // namespace
