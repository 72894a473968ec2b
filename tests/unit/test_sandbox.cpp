// The build sandbox's argv (who the command runs as, what it sees) and the build host's view.
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/kernel/build_host.hpp"
#include "autodriver/kernel/toolchain.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/sandbox.hpp"
#include "autodriver/util/subprocess.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sys/stat.h>
#include <unistd.h>

namespace ad = autodriver;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

bool has(const std::vector<std::string>& argv, const std::string& w) {
  return std::find(argv.begin(), argv.end(), w) != argv.end();
}

// The index of the first `a` followed by `b`, or -1.
long pair_at(const std::vector<std::string>& argv, const std::string& a, const std::string& b) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == a && argv[i + 1] == b) return static_cast<long>(i);
  return -1;
}

long at(const std::vector<std::string>& argv, const std::string& w) {
  auto it = std::find(argv.begin(), argv.end(), w);
  return it == argv.end() ? -1 : it - argv.begin();
}

} // namespace

TEST(Sandbox, AsRootTheCommandRunsAsAnUnprivilegedUidWithNoCapabilities) {
  ad::util::SandboxUser root{true, 65534, 65534};
  auto argv = ad::util::sandbox_argv({}, {"make"}, {}, root);
  EXPECT_FALSE(has(argv, "--unshare-all")) << "no user namespace: it would map the sandbox's uid onto root";
  EXPECT_GE(pair_at(argv, "--cap-drop", "ALL"), 0);
  long sep = at(argv, "--");
  ASSERT_GE(sep, 0);
  ASSERT_LT(sep + 7, static_cast<long>(argv.size()));
  EXPECT_TRUE(argv[sep + 1].ends_with("setpriv"));
  EXPECT_TRUE(has(argv, "--reuid=65534"));
  EXPECT_TRUE(has(argv, "--regid=65534"));
  EXPECT_TRUE(has(argv, "--clear-groups"));
  EXPECT_TRUE(has(argv, "--bounding-set=-all"));
  EXPECT_EQ(argv.back(), "make");
  // The working directory is entered by the unprivileged uid that owns it, not by bubblewrap.
  auto in_tree = ad::util::sandbox_argv({}, {"make"}, "/tmp/x/tree", root);
  EXPECT_FALSE(has(in_tree, "--chdir"));
  long env = at(in_tree, "/usr/bin/env");
  ASSERT_GT(env, at(in_tree, "--reuid=65534"));
  EXPECT_EQ(in_tree[env + 1], "-C");
  EXPECT_EQ(in_tree[env + 2], "/tmp/x/tree");
  EXPECT_EQ(in_tree[env + 4], "PWD=/tmp/x/tree") << "Makefiles build M=$(PWD)";
  // A working directory given with a trailing '/' (tree / "") is exported without it: a Makefile's
  // M=$(PWD) would make gcc print "/tmp/x/tree//x.c".
  auto slash = ad::util::sandbox_argv({}, {"make"}, "/tmp/x/tree/", root);
  EXPECT_TRUE(has(slash, "PWD=/tmp/x/tree"));
  EXPECT_TRUE(has(slash, "/tmp/x/tree"));
  // Only the capabilities setpriv needs are kept until it runs.
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--cap-add") {
      EXPECT_TRUE(argv[i + 1] == "CAP_SETUID" || argv[i + 1] == "CAP_SETGID" || argv[i + 1] == "CAP_SETPCAP");
    }
}

TEST(Sandbox, AsAUserBubblewrapsOwnNamespaceDropsEverything) {
  ad::util::SandboxUser user{false, 65534, 65534};
  auto argv = ad::util::sandbox_argv({}, {"make"}, {}, user);
  EXPECT_TRUE(has(argv, "--unshare-all"));
  EXPECT_GE(pair_at(argv, "--cap-drop", "ALL"), 0);
  EXPECT_FALSE(has(argv, "--cap-add"));
  EXPECT_FALSE(has(argv, "--reuid=65534"));
  EXPECT_EQ(argv[at(argv, "--") + 1], "make");
}

TEST(Sandbox, TheEnvironmentIsTheSandboxsOwn) {
  ad::util::SandboxSpec spec;
  spec.path_first = {"/autodriver/host/bin"};
  spec.env = {{"kernelver", "6.1.0-57-amd64"}, {"PATH", "/evil"}};
  auto argv = ad::util::sandbox_argv(spec, {"make"}, {}, {false, 65534, 65534});
  long clear = at(argv, "--clearenv");
  ASSERT_GE(clear, 0);
  long path = pair_at(argv, "--setenv", "PATH");
  ASSERT_GT(path, clear) << "set after the caller's environment is cleared";
  EXPECT_TRUE(argv[path + 2].starts_with("/autodriver/host/bin:/usr/local/sbin:"));
  EXPECT_FALSE(has(argv, "/evil"));
  long kv = pair_at(argv, "--setenv", "kernelver");
  ASSERT_GT(kv, clear);
  EXPECT_EQ(argv[kv + 2], "6.1.0-57-amd64");
}

TEST(Sandbox, ABindIntoTheRootFollowsItsSymlinksAndNeedsItsMountPoint) {
  auto dir = ad::util::TempDir::create(ad::util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  fs::path root = dir->path() / "root", view = dir->path() / "view";
  fs::create_directories(root / "usr/lib");
  fs::create_directories(root / "usr/bin");
  fs::create_symlink("usr/lib", root / "lib");
  fs::create_directories(view);
  ad::util::SandboxSpec spec;
  spec.root = root;
  spec.read_only_at = {{view, "/lib/modules"}};
  auto argv = ad::util::sandbox_argv(spec, {"true"}, {}, {false, 65534, 65534});
  EXPECT_LT(pair_at(argv, view.string(), "/usr/lib/modules"), 0) << "no mount point in a read-only root: not bound";
  fs::create_directories(root / "usr/lib/modules");
  argv = ad::util::sandbox_argv(spec, {"true"}, {}, {false, 65534, 65534});
  long b = pair_at(argv, view.string(), "/usr/lib/modules");
  ASSERT_GT(b, 0);
  EXPECT_EQ(argv[b - 1], "--ro-bind");
}

TEST(Sandbox, FoldersOnTheWayToABindAreReachable) {
  ad::util::SandboxSpec spec;
  spec.read_only = {"/nonexistent-cache/autodriver/kernels/x"};
  spec.moved = {{"/tmp/t/tree", "/autodriver/tree"}};
  auto argv = ad::util::sandbox_argv(spec, {"true"}, {}, {true, 65534, 65534});
  for (const char* d :
       {"/nonexistent-cache", "/nonexistent-cache/autodriver", "/nonexistent-cache/autodriver/kernels", "/autodriver"}) {
    long i = pair_at(argv, "--dir", d);
    ASSERT_GT(i, 1) << d;
    EXPECT_EQ(argv[i - 2], "--perms");
    EXPECT_EQ(argv[i - 1], "0755");
  }
  EXPECT_LT(pair_at(argv, "--dir", "/autodriver/tree"), 0) << "the bind itself is not a --dir";
}

namespace {

ad::core::Kernel fake_kernel(const fs::path& base) {
  ad::core::Kernel k;
  k.release = "7.9.1+deb99-amd64";
  k.compiler = "gcc-14";
  k.toolchain_root = base / "root";
  k.build_dir = base / "kernel/root/usr/src/linux-headers-7.9.1+deb99-amd64";
  fs::create_directories(k.toolchain_root / "usr/bin");
  for (const char* f : {"gcc-14", "cpp-14", "gcc-ar-14", "as", "x86_64-linux-gnu-objcopy"})
    EXPECT_TRUE(ad::util::write_file(k.toolchain_root / "usr/bin" / f, ""));
  fs::create_directories(k.build_dir);
  EXPECT_TRUE(ad::util::write_file(k.build_dir / "Makefile", "all:\n"));
  return k;
}

fs::path entry_target(const std::vector<ad::kernel::HostEntry>& entries, const std::string& path) {
  for (const auto& e : entries)
    if (e.path == path) return e.target;
  return "(missing)";
}

} // namespace

TEST(BuildHost, PlainCompilerNamesLeadToTheKernelsCompiler) {
  auto dir = ad::util::TempDir::create(ad::util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  auto k = fake_kernel(dir->path());
  auto entries = ad::kernel::build_host_entries(k);
  EXPECT_EQ(entry_target(entries, "bin/gcc"), "/usr/bin/gcc-14");
  EXPECT_EQ(entry_target(entries, "bin/cc"), "/usr/bin/gcc-14");
  EXPECT_EQ(entry_target(entries, "bin/cpp"), "/usr/bin/cpp-14");
  EXPECT_EQ(entry_target(entries, "bin/gcc-ar"), "/usr/bin/gcc-ar-14");
  EXPECT_EQ(entry_target(entries, "bin/gcc-nm"), "(missing)") << "not in the root: no dangling name";
  EXPECT_EQ(entry_target(entries, "bin/as"), "(missing)") << "the root's own plain name is kept";
  EXPECT_EQ(entry_target(entries, "bin/objcopy"), "/usr/bin/x86_64-linux-gnu-objcopy");
  EXPECT_EQ(entry_target(entries, "modules/7.9.1+deb99-amd64/build"), k.build_dir);
}

TEST(BuildHost, DebianKernelsModuleFolderIsTheirs) {
  auto dir = ad::util::TempDir::create(ad::util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  auto k = fake_kernel(dir->path());
  fs::path mods = dir->path() / "kernel/root/lib/modules" / k.release;
  fs::create_directories(mods);
  fs::create_symlink("../../../usr/src/linux-headers-7.9.1+deb99-amd64", mods / "build");
  auto entries = ad::kernel::build_host_entries(k);
  EXPECT_EQ(entry_target(entries, "modules/7.9.1+deb99-amd64"), mods);
}

TEST(BuildHost, UnameAnswersTheTargetsRelease) {
  auto dir = ad::util::TempDir::create(ad::util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  auto k = fake_kernel(dir->path());
  std::string script;
  for (const auto& e : ad::kernel::build_host_entries(k))
    if (e.path == "bin/uname") script = e.text;
  ASSERT_FALSE(script.empty());
  ASSERT_TRUE(ad::util::write_file(dir->path() / "uname", script));
  auto run = [&](std::vector<std::string> args) {
    ad::util::RunRequest req;
    req.argv = {"sh", (dir->path() / "uname").string()};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.timeout = 10s;
    auto r = ad::util::run(req);
    EXPECT_TRUE(r && r->ok());
    return r ? r->out : std::string();
  };
  EXPECT_EQ(run({"-r"}), "7.9.1+deb99-amd64\n");
  EXPECT_NE(run({"-a"}).find("7.9.1+deb99-amd64"), std::string::npos);
  EXPECT_EQ(run({"-m"}), "x86_64\n");
  EXPECT_EQ(run({"-s"}), "Linux\n");
}

TEST(BuildHost, TheFolderIsMadeOnceAndNamedByItsContents) {
  auto dir = ad::util::TempDir::create(ad::util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  auto k = fake_kernel(dir->path());
  setenv("AUTODRIVER_CACHE", (dir->path() / "cache").c_str(), 1);
  auto a = ad::kernel::ensure_build_host(k);
  auto b = ad::kernel::ensure_build_host(k);
  k.compiler = "gcc-15";
  auto c = ad::kernel::ensure_build_host(k);
  unsetenv("AUTODRIVER_CACHE");
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_EQ(fs::read_symlink(*a / "bin/gcc"), "/usr/bin/gcc-14");
  EXPECT_TRUE(fs::exists(k.toolchain_root / "usr/bin")); // the fake root is not merged-/usr:
  EXPECT_TRUE(fs::is_directory(k.toolchain_root / "lib/modules")) << "its /lib/modules is made to bind the view on";
}

TEST(BuildHost, DkmsNamesOfABuildCommand) {
  const std::vector<std::pair<std::string, std::string>> names = {{"kernelver", "6.1.0-57-amd64"}, {"arch", "x86_64"}};
  EXPECT_EQ(ad::gate::expand_dkms_names("KVER=${kernelver}", names), "KVER=6.1.0-57-amd64");
  EXPECT_EQ(ad::gate::expand_dkms_names("/lib/modules/$kernelver/build", names), "/lib/modules/6.1.0-57-amd64/build");
  EXPECT_EQ(ad::gate::expand_dkms_names("$kernelversion $arch", names), "$kernelversion x86_64");
  EXPECT_EQ(ad::gate::expand_dkms_names("$kernelver$kernelver", names), "6.1.0-57-amd646.1.0-57-amd64");
}

TEST(Sandbox, QemuKeepsRootsUidButNoCapabilityAndItsDevice) {
  ad::util::SandboxSpec spec;
  spec.root_runs = ad::util::SandboxSpec::RootRuns::root_without_caps;
  spec.devices = {"/dev/kvm"};
  auto argv = ad::util::sandbox_argv(spec, {"qemu-system-x86_64"}, {}, {true, 65534, 65534});
  EXPECT_GE(pair_at(argv, "--cap-drop", "ALL"), 0);
  EXPECT_FALSE(has(argv, "--cap-add"));
  EXPECT_FALSE(has(argv, "--reuid=65534"));
  EXPECT_FALSE(has(argv, "--unshare-all"));
  EXPECT_TRUE(has(argv, "--unshare-net"));
  EXPECT_GE(pair_at(argv, "--dev-bind", "/dev/kvm"), 0);
  EXPECT_EQ(argv[at(argv, "--") + 1], "qemu-system-x86_64");
}

TEST(Sandbox, AsRootTheWritableTreeIsGivenToTheUnprivilegedUid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (chown)";
  auto dir = ad::util::TempDir::create(ad::util::scratch_root(), "test-");
  ASSERT_TRUE(dir);
  fs::path tree = dir->path() / "tree";
  fs::create_directories(tree / "sub");
  ASSERT_TRUE(ad::util::write_file(tree / "sub/ro.c", "int x;\n"));
  fs::permissions(tree / "sub/ro.c", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  ad::util::RunRequest req;
  req.argv = {"sh", "-c", "echo y >> sub/ro.c && touch sub/new.o"};
  req.cwd = tree;
  req.timeout = 30s;
  req.stderr_mode = ad::util::Stderr::merge;
  ad::util::SandboxSpec spec;
  spec.writable = {tree};
  auto s = ad::util::sandbox_request(req, spec);
  ASSERT_TRUE(s) << s.error().message;
  auto r = ad::util::run(req);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->ok()) << r->out;
  struct stat st {};
  ASSERT_EQ(::stat((tree / "sub/new.o").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u) << "made by the unprivileged uid";
}

TEST(Sandbox, BuildDepsAreDebianPackageNamesSortedOnce) {
  auto a = ad::kernel::build_deps_of("pkgconf, libxtables-dev,perl pkgconf");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(*a, (std::vector<std::string>{"libxtables-dev", "perl", "pkgconf"}));
  auto b = ad::kernel::build_deps_of("  ,, ");
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->empty());
  for (const char* bad : {"Perl", "x", "-perl", "perl;rm", "libfoo:any", "../etc"}) {
    auto r = ad::kernel::build_deps_of(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("not a Debian package name"), std::string::npos) << r.error().message;
  }
}
