// Subprocess runner, cpio writer, strings: the pieces every gate stands on.

#include "autodriver/kernel/modules_dep.hpp"
#include "autodriver/util/cpio.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/sandbox.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include "skip.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace autodriver;
using namespace std::chrono_literals;

TEST(Subprocess, ExitCodeIsDataNotError) {
  util::RunRequest r;
  r.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  r.timeout = 10s;
  auto res = util::run(r);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->exit_code, 3);
  EXPECT_EQ(res->out, "out\n");
  EXPECT_EQ(res->err, "err\n");
  EXPECT_FALSE(res->ok());
}

TEST(Subprocess, TimeoutKillsTheWholeProcessGroup) {
  auto dir = util::TempDir::create(util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  auto pidfile = dir->path() / "grandchild.pid";
  util::RunRequest r;
  // The grandchild would outlive a plain kill of the shell.
  r.argv = {"sh", "-c", "sleep 100 & echo $! > " + pidfile.string() + "; wait"};
  r.timeout = 500ms;
  auto res = util::run(r);
  ASSERT_TRUE(res);
  EXPECT_TRUE(res->timed_out);
  EXPECT_LT(res->elapsed, 5000ms);
  auto pid_text = util::read_file(pidfile);
  ASSERT_TRUE(pid_text);
  pid_t pid = std::stoi(*pid_text);
  usleep(100000);
  // Dead or a zombie waiting for init to reap it: either way no longer running.
  auto stat = util::read_file("/proc/" + std::to_string(pid) + "/stat");
  bool running = stat && stat->find(") Z") == std::string::npos;
  EXPECT_FALSE(running) << "grandchild still alive: " << (stat ? *stat : "");
}

TEST(Subprocess, RequiresATimeoutAndReportsMissingPrograms) {
  util::RunRequest r;
  r.argv = {"true"};
  auto no_timeout = util::run(r);
  ASSERT_FALSE(no_timeout);
  EXPECT_EQ(no_timeout.error().kind, util::ErrorKind::config);
  r.argv = {"/nonexistent/program"};
  r.timeout = 5s;
  auto missing = util::run(r);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, util::ErrorKind::spawn);
}

TEST(Subprocess, CapsOutputEnvAndCwd) {
  util::RunRequest r;
  r.argv = {"sh", "-c", "head -c 100000 /dev/zero; echo \"$AD_X-${HOME:-unset}\" >&2; pwd >&2"};
  r.timeout = 10s;
  r.output_cap = 1000;
  r.env_set = {{"AD_X", "yes"}};
  r.env_unset = {"HOME"};
  r.cwd = "/";
  auto res = util::run(r);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->out.size(), 1000u);
  EXPECT_EQ(res->out_dropped, 99000u);
  EXPECT_EQ(res->err, "yes-unset\n/\n");
}

TEST(Cpio, ArchiveListsWithCpioTool) {
  util::CpioWriter w;
  w.add_directory("bin");
  w.add_file("bin/hello", "hello world\n", 0755);
  w.add_symlink("bin/sh", "busybox");
  w.add_char_device("console", 5, 1);
  auto archive = w.finish();
  ASSERT_TRUE(archive) << archive.error().message;
  EXPECT_EQ(archive->size() % 4, 0u);
  util::RunRequest r;
  r.argv = {"cpio", "-itv", "--quiet"};
  r.timeout = 10s;
  r.stdin_data = *archive;
  auto res = util::run(r);
  if (!res) AD_SKIP("cpio not installed");
  ASSERT_EQ(res->exit_code, 0) << res->err;
  EXPECT_NE(res->out.find("bin/hello"), std::string::npos);
  EXPECT_NE(res->out.find("bin/sh -> busybox"), std::string::npos);
  EXPECT_NE(res->out.find("crw"), std::string::npos);
}

TEST(Strings, SplitCommandAndSubstitute) {
  auto words = util::split_command("make KERNELDIR={kdir} 'CFLAGS=-O2 -g' \"V=1\"");
  ASSERT_EQ(words.size(), 4u);
  EXPECT_EQ(words[2], "CFLAGS=-O2 -g");
  EXPECT_EQ(util::substitute(words[1], {{"kdir", "/k"}}), "KERNELDIR=/k");
  EXPECT_EQ(util::substitute("{kver}/{kver}", {{"kver", "6.1"}}), "6.1/6.1");
}

TEST(ModulesDep, LoadOrderPutsDependenciesFirst) {
  auto md = kernel::ModulesDep::parse("kernel/drivers/net/mii.ko.xz:\n"
                                      "kernel/drivers/net/ethernet/realtek/8139cp.ko.xz: kernel/drivers/net/mii.ko.xz\n"
                                      "kernel/drivers/media/v4l2-core/videodev.ko.xz: kernel/drivers/media/mc/mc.ko.xz\n"
                                      "kernel/drivers/media/mc/mc.ko.xz:\n"
                                      "kernel/drivers/misc/pvpanic/pvpanic-pci.ko.xz: kernel/drivers/misc/pvpanic/pvpanic.ko.xz\n"
                                      "kernel/drivers/misc/pvpanic/pvpanic.ko.xz:\n");
  std::vector<std::string> missing;
  auto order = md.load_order({"videodev", "8139cp", "pvpanic-pci", "nosuch"}, missing);
  EXPECT_EQ(order, (std::vector<std::string>{"mc", "videodev", "mii", "8139cp", "pvpanic", "pvpanic_pci"}));
  EXPECT_EQ(missing, (std::vector<std::string>{"nosuch"}));
  EXPECT_EQ(md.path_of("pvpanic_pci"), "kernel/drivers/misc/pvpanic/pvpanic-pci.ko.xz");
}

// A symlink to a sibling file is copied as that symlink under its own name (fs::relative would
// resolve it to the sibling's name and clobber the sibling with a self-link); file modes are kept.
TEST(Files, StageTreeKeepsTheBuildOfWhatDidNotChange) {
  namespace fs = std::filesystem;
  using namespace std::chrono_literals;
  auto dir = util::TempDir::create(util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  fs::path built = dir->path() / "built", src = dir->path() / "src", out = dir->path() / "out";
  fs::create_directories(built);
  ASSERT_TRUE(util::write_file(built / "a.c", "int a;\n"));
  ASSERT_TRUE(util::write_file(built / "b.c", "int b;\n"));
  ASSERT_TRUE(util::write_file(built / "gone.c", "int g;\n"));
  ASSERT_TRUE(util::write_file(built / "a.o", "OBJ"));
  ASSERT_TRUE(util::write_file(built / ".a.o.cmd", "cmd"));
  // Sources older than their objects, as after a build.
  auto old = fs::file_time_type::clock::now() - 1h;
  for (const char* f : {"a.c", "b.c", "gone.c"}) fs::last_write_time(built / f, old);
  fs::create_directories(src);
  ASSERT_TRUE(util::write_file(src / "a.c", "int a;\n"));
  ASSERT_TRUE(util::write_file(src / "b.c", "int b = 1;\n"));
  ASSERT_TRUE(util::write_file(src / "new.h", "#define N 1\n"));
  auto r = util::stage_tree(src, built, out);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*util::read_file(out / "a.o"), "OBJ");
  EXPECT_TRUE(fs::exists(out / ".a.o.cmd"));
  EXPECT_EQ(fs::last_write_time(out / "a.c"), old) << "an unchanged source keeps its time (make leaves a.o)";
  EXPECT_EQ(*util::read_file(out / "b.c"), "int b = 1;\n");
  EXPECT_GT(fs::last_write_time(out / "b.c"), fs::last_write_time(out / "a.o")) << "a changed source is newer than the objects";
  EXPECT_TRUE(fs::exists(out / "new.h"));
  EXPECT_FALSE(fs::exists(out / "gone.c"));
  // Without a built tree: the sources alone.
  fs::path plain = dir->path() / "plain";
  ASSERT_TRUE(util::stage_tree(src, fs::path(), plain));
  EXPECT_FALSE(fs::exists(plain / "a.o"));
  EXPECT_TRUE(fs::exists(plain / "b.c"));
}

TEST(Files, CopyKeepsModificationTimes) {
  namespace fs = std::filesystem;
  using namespace std::chrono_literals;
  auto dir = util::TempDir::create(util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  ASSERT_TRUE(util::write_file(dir->path() / "old", "x"));
  ASSERT_TRUE(util::write_file(dir->path() / "future", "y"));
  auto old = fs::file_time_type::clock::now() - 2h;
  fs::last_write_time(dir->path() / "old", old);
  fs::last_write_time(dir->path() / "future", fs::file_time_type::clock::now() + 24h);
  ASSERT_TRUE(util::copy_file(dir->path() / "old", dir->path() / "old2"));
  ASSERT_TRUE(util::copy_file(dir->path() / "future", dir->path() / "future2"));
  EXPECT_EQ(fs::last_write_time(dir->path() / "old2"), old);
  EXPECT_LE(fs::last_write_time(dir->path() / "future2"), fs::file_time_type::clock::now()) << "a future time is clamped";
}

TEST(Sandbox, TreeBoundAtAnotherPathIsTheWorkingDirectory) {
  util::SandboxSpec spec;
  spec.moved.emplace_back("/tmp/x/trial-1/tree", "/autodriver/tree");
  auto argv = util::sandbox_argv(spec, {"make"}, "/tmp/x/trial-1/tree/sub", {false, 65534, 65534});
  auto at = [&](const std::string& w) { return std::find(argv.begin(), argv.end(), w) - argv.begin(); };
  auto bind = at("/tmp/x/trial-1/tree");
  ASSERT_LT(bind + 1, static_cast<long>(argv.size()));
  EXPECT_EQ(argv[bind - 1], "--bind");
  EXPECT_EQ(argv[bind + 1], "/autodriver/tree");
  auto chdir = at("--chdir");
  ASSERT_LT(chdir + 1, static_cast<long>(argv.size()));
  EXPECT_EQ(argv[chdir + 1], "/autodriver/tree/sub");
}

TEST(Subprocess, AvailableCpusIsAtLeastOne) {
  int n = util::available_cpus();
  EXPECT_GE(n, 1);
  EXPECT_LE(n, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(Files, CopyTreeKeepsSymlinksUnderTheirOwnNames) {
  namespace fs = std::filesystem;
  auto dir = util::TempDir::create(util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  fs::path from = dir->path() / "from", to = dir->path() / "to";
  fs::create_directories(from / "fw");
  ASSERT_TRUE(util::write_file(from / "fw/a.hex", "data\n"));
  fs::create_symlink("a.hex", from / "fw/b.hex");
  ASSERT_TRUE(util::write_file(from / "run.sh", "#!/bin/sh\n"));
  fs::permissions(from / "run.sh", fs::perms::owner_all);
  auto r = util::copy_tree(from, to, util::SkipBuildProducts::yes);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(to / "fw/a.hex")));
  EXPECT_EQ(*util::read_file(to / "fw/a.hex"), "data\n");
  ASSERT_TRUE(fs::is_symlink(to / "fw/b.hex"));
  EXPECT_EQ(fs::read_symlink(to / "fw/b.hex"), "a.hex");
  EXPECT_EQ(fs::status(to / "run.sh").permissions() & fs::perms::owner_exec, fs::perms::owner_exec);
  auto files = util::list_files(from);
  EXPECT_EQ(std::count(files.begin(), files.end(), fs::path("fw/a.hex")), 1);
}

TEST(Files, ScratchFoldersOfDeadRunsAreRemovedOthersKept) {
  namespace fs = std::filesystem;
  auto root = util::TempDir::create(fs::temp_directory_path(), "ad-scratch-test-");
  ASSERT_TRUE(root);
  const fs::path r = root->path();
  // A run that is gone: a child that exited, stamped with its pid and a start time.
  pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  fs::create_directories(r / "port-dead");
  ASSERT_TRUE(util::write_file(r / "port-dead" / ".autodriver-owner", fmt::format("{} 12345\n", child)));
  ASSERT_TRUE(util::write_file(r / "port-dead" / "x.c", "int x;\n"));
  fs::create_directories(r / "port-dead" / "ro");
  fs::permissions(r / "port-dead" / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  // A pid that is alive but stamped with another start time: a reused pid, not the owner.
  fs::create_directories(r / "port-reused");
  ASSERT_TRUE(util::write_file(r / "port-reused" / ".autodriver-owner", fmt::format("{} 1\n", getpid())));
  // Not stamped: not ours to judge.
  fs::create_directories(r / "unstamped");
  // A live run: made the way every run makes its scratch folder (stamped by TempDir::create).
  const char* old = std::getenv("TMPDIR");
  std::string saved = old ? old : "";
  setenv("TMPDIR", r.c_str(), 1);
  auto live = util::TempDir::create(util::scratch_root(), "check-");
  if (old) setenv("TMPDIR", saved.c_str(), 1);
  else unsetenv("TMPDIR");
  ASSERT_TRUE(live);
  ASSERT_TRUE(fs::exists(live->path() / ".autodriver-owner"));

  EXPECT_EQ(util::remove_orphaned_scratch(r), 2u);
  EXPECT_FALSE(fs::exists(r / "port-dead"));
  EXPECT_FALSE(fs::exists(r / "port-reused"));
  EXPECT_TRUE(fs::exists(r / "unstamped"));
  EXPECT_EQ(util::remove_orphaned_scratch(live->path().parent_path()), 0u) << "the live run's folder stays";
  EXPECT_TRUE(fs::exists(live->path()));
}

TEST(Json, InvalidUtf8NeverThrows) {
  // A Latin-1 author name in a driver comment, carried into a diagnostic's message.
  nlohmann::json j{{"message", std::string("/* J\xfcrgen */")}};
  std::string text;
  EXPECT_NO_THROW(text = j.dump(-1, ' ', false, util::json_bytes));
  EXPECT_NE(text.find("J\xef\xbf\xbdrgen"), std::string::npos) << text; // U+FFFD
  EXPECT_TRUE(nlohmann::json::accept(text)) << text;
}

TEST(JsonText, NumbersOutOfRangeAreTheFallbackNotUndefinedBehaviour) {
  auto j = nlohmann::json::parse(R"({"big": 3.3e56, "huge": 18446744073709551615, "neg": -1, "whole": 42.0, "s": "7",
                                     "inf_like": -1e300, "ok": 12})");
  EXPECT_EQ(util::json_get(j, "big", 0L), 0L);
  EXPECT_EQ(util::json_get(j, "huge", 5L), 5L);
  EXPECT_EQ(util::json_get(j, "neg", 3u), 3u);
  EXPECT_EQ(util::json_get(j, "whole", 0L), 42L);
  EXPECT_EQ(util::json_get(j, "s", 1), 1);
  EXPECT_EQ(util::json_get(j, "inf_like", 2), 2);
  EXPECT_EQ(util::json_get(j, "ok", 0), 12);
  EXPECT_EQ(util::json_get(j, "missing", 9L), 9L);
}
