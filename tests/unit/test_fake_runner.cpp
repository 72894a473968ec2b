// util::FakeRunner: gates decided from what a tool printed, without running the tool.

#include "autodriver/gate/kbuild.hpp"
#include "autodriver/util/fake_runner.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

struct FakeRunnerTest : ::testing::Test {
  std::optional<util::TempDir> tmp;
  core::Kernel kernel;
  fs::path tree;
  void SetUp() override {
    auto t = util::TempDir::create(util::scratch_root(), "test-fake-runner-");
    ASSERT_TRUE(t);
    tmp.emplace(std::move(*t));
    kernel.release = "9.9.0-test";
    kernel.build_dir = tmp->path() / "kernel";
    tree = tmp->path() / "drv";
    fs::create_directories(kernel.build_dir);
    fs::create_directories(tree);
    ASSERT_TRUE(util::write_file(tree / "Makefile", "obj-m += drv.o\n"));
  }
};

TEST_F(FakeRunnerTest, RulesMatchWordsAndRecordEveryRequest) {
  util::FakeRunner fake;
  fake.on({"make"}, 2, "generic failure\n");
  fake.on({"make", "M="}, 0, "built\n");
  util::ScopedRunner scoped(fake);
  util::RunRequest r;
  r.argv = {"make", "-C", "/k", "M=/t"};
  r.timeout = std::chrono::seconds(1);
  auto a = util::run(r);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->ok()); // the later rule wins
  EXPECT_EQ(a->out, "built\n");
  r.argv = {"make", "clean"};
  auto b = util::run(r);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->exit_code, 2);
  r.argv = {"git", "status"};
  auto c = util::run(r);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->ok()); // no rule: exit 0
  r.timeout = std::chrono::seconds(0);
  EXPECT_FALSE(util::run(r)); // a command without a timeout is refused, as by the real runner
  EXPECT_EQ(fake.requests().size(), 3u);
  EXPECT_EQ(fake.requests_with("M=").size(), 1u);
}

TEST_F(FakeRunnerTest, TheBuildGateReadsTheCompilersDiagnostics) {
  util::FakeRunner fake;
  fake.on({"make", "modules"}, 2,
          "  CC [M]  /autodriver/tree/drv.o\n"
          "/autodriver/tree/drv.c: In function 'drv_init':\n"
          "/autodriver/tree/drv.c:7:9: error: implicit declaration of function 'del_timer_sync' "
          "[-Werror=implicit-function-declaration]\n"
          "make[2]: *** [scripts/Makefile.build:243: /autodriver/tree/drv.o] Error 1\n");
  util::ScopedRunner scoped(fake);
  gate::BuildSpec spec;
  spec.timeout = std::chrono::seconds(60);
  spec.jobs = 2;
  auto b = gate::build_tree(kernel, tree, spec);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE(b->run.ok());
  EXPECT_EQ(b->compiled, 1);
  ASSERT_FALSE(b->diagnostics.empty());
  const auto& d = b->diagnostics.front();
  EXPECT_EQ(d.file, "drv.c");
  EXPECT_EQ(d.line, 7);
  EXPECT_EQ(d.kind, core::DiagKind::implicit_function_declaration);
  EXPECT_EQ(d.function, "drv_init");
  // The build ran sandboxed: bwrap first, make with -k and the tree at its sandbox path.
  auto makes = fake.requests_with("modules");
  ASSERT_EQ(makes.size(), 1u);
  const auto& argv = makes.front().argv;
  EXPECT_NE(argv.front().find("bwrap"), std::string::npos);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-k"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "M=/autodriver/tree"), argv.end());
}

TEST_F(FakeRunnerTest, AFullDiskIsAnErrorNotTheDriversDiagnostics) {
  util::FakeRunner fake;
  fake.on({"make", "modules"}, 2,
          "  CC [M]  /autodriver/tree/drv.o\n"
          "/autodriver/tree/drv.c:40:1: fatal error: error writing to /tmp/ccX.s: No space left on device\n");
  util::ScopedRunner scoped(fake);
  gate::BuildSpec spec;
  spec.timeout = std::chrono::seconds(60);
  auto b = gate::build_tree(kernel, tree, spec);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().kind, util::ErrorKind::io);
  EXPECT_NE(b.error().message.find("is full"), std::string::npos) << b.error().message;
}

} // namespace
