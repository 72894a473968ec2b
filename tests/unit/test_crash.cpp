// Crash reports: real QEMU console logs of the tests' own seeded bugs (fixtures/console) and the
// public report formats of fixtures/crash; symbolization of a real object built with -g.
#include "autodriver/crash/localize.hpp"
#include "autodriver/crash/repair.hpp"
#include "autodriver/crash/report.hpp"
#include "autodriver/crash/symbolize.hpp"
#include "autodriver/crash/tail_call.hpp"
#include "autodriver/crash/teardown.hpp"
#include "autodriver/loop/boot_crash.hpp"
#include "autodriver/loop/crash_repair.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/subprocess.hpp"
#include "fixtures.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace autodriver;

namespace {

crash::CrashReport only(const std::string& rel) {
  auto rs = crash::parse_reports(fixture(rel));
  EXPECT_EQ(rs.size(), 1u) << rel;
  return rs.empty() ? crash::CrashReport{} : rs.front();
}

} // namespace

TEST(CrashReport, RealOopsInProbeOn612) {
  auto r = only("console/6.12-oops-in-probe.txt");
  EXPECT_EQ(r.kind, crash::CrashKind::null_deref);
  EXPECT_EQ(r.title, "BUG: kernel NULL pointer dereference in edu_oops_probe");
  ASSERT_TRUE(r.rip);
  EXPECT_EQ(r.rip->function, "edu_oops_probe");
  EXPECT_EQ(r.rip->offset, 0x26u);
  EXPECT_EQ(r.rip->size, 0x40u);
  EXPECT_EQ(r.rip->module, "edu_oops");
  EXPECT_EQ(r.registers["CR2"], "0000000000000000");
  EXPECT_EQ(r.registers["RAX"], "0000000000000000");
  // The user-mode registers after "RIP: 0033" are not the fault's.
  EXPECT_EQ(r.registers["RBX"], "ffffc90000613a58");
  EXPECT_EQ(r.task, "insmod");
  EXPECT_EQ(r.pid, 134);
  EXPECT_EQ(r.taint, "G OE");
  EXPECT_EQ(r.release, "6.12.117+deb12-amd64");
  EXPECT_TRUE(r.panicked);
  EXPECT_FALSE(r.truncated);
  ASSERT_FALSE(r.trace.empty());
  EXPECT_EQ(r.trace.front().function, "local_pci_probe");
  // "? __pfx_edu_oops_driver_init+0x10/0x10 [edu_oops]" is an unreliable frame of the module.
  auto unreliable = std::find_if(r.trace.begin(), r.trace.end(), [](const auto& f) { return !f.reliable; });
  ASSERT_NE(unreliable, r.trace.end());
  EXPECT_EQ(r.first_in("edu_oops"), &*r.rip);
}

TEST(CrashReport, TheSameBugOnTwoKernelsHasOneTitle) {
  auto a = only("console/6.1-oops-in-probe.txt");
  auto b = only("console/6.12-oops-in-probe.txt");
  EXPECT_EQ(a.title, b.title);
  EXPECT_NE(a.rip->offset, 0u);
}

TEST(CrashReport, AWarningPrintedTwiceByTheDmesgDumpIsOneReport) {
  auto r = only("console/6.1-warn.txt");
  EXPECT_EQ(r.kind, crash::CrashKind::warning);
  EXPECT_EQ(r.title, "WARNING in warn_init_init");
  EXPECT_NE(r.detail.find("warn_init.c:9"), std::string::npos);
  EXPECT_FALSE(r.panicked);
}

TEST(CrashReport, CleanLogsHaveNoReport) {
  for (const char* f : {"console/6.1-8139cp-clean.txt", "console/6.12-edu-ok-markers.txt", "console/6.1-unknown-symbol.txt",
                        "console/6.12-invalid-module-format.txt"})
    EXPECT_TRUE(crash::parse_reports(fixture(f)).empty()) << f;
}

TEST(CrashReport, KasanUseAfterFreeWithItsStacks) {
  auto r = only("crash/kasan-uaf-syzbot.txt");
  EXPECT_EQ(r.kind, crash::CrashKind::kasan_use_after_free);
  EXPECT_EQ(r.title, "KASAN: slab-use-after-free Read in mydrv_remove");
  EXPECT_EQ(r.access.rfind("Read of size 8 at addr", 0), 0u);
  EXPECT_EQ(r.task, "rmmod");
  ASSERT_FALSE(r.alloc_stack.empty());
  ASSERT_FALSE(r.free_stack.empty());
  auto in_mod = [](const std::vector<crash::Frame>& v) {
    for (const auto& f : v)
      if (f.module == "mydrv") return f.function;
    return std::string();
  };
  EXPECT_EQ(in_mod(r.alloc_stack), "mydrv_probe");
  EXPECT_EQ(in_mod(r.free_stack), "mydrv_remove");
  // Symbolized frames keep their file:line, inline frames are marked.
  auto dl = std::find_if(r.trace.begin(), r.trace.end(), [](const auto& f) { return f.function == "device_remove"; });
  ASSERT_NE(dl, r.trace.end());
  EXPECT_TRUE(dl->inlined);
  EXPECT_EQ(dl->file, "drivers/base/dd.c");
  EXPECT_EQ(dl->line, 567);
  EXPECT_FALSE(r.truncated);
}

TEST(CrashReport, TwoReportsOfOneBugGetOneTitle) {
  auto a = only("crash/kasan-uaf-syzbot.txt");
  auto b = only("crash/kasan-uaf-syzbot-again.txt");
  EXPECT_EQ(a.title, b.title);
  EXPECT_NE(a.pid, b.pid);
}

TEST(CrashReport, EachKindAndTheFunctionItsTitleNames) {
  struct Want {
    const char* file;
    crash::CrashKind kind;
    const char* title;
  };
  for (const auto& w : std::vector<Want>{
           {"crash/refcount-underflow.txt", crash::CrashKind::refcount, "refcount bug in mydrv_put_ctx"},
           {"crash/lockdep-circular.txt", crash::CrashKind::lockdep, "possible deadlock in mydrv_work"},
           {"crash/hung-task.txt", crash::CrashKind::hung_task, "INFO: task hung in mydrv_probe"},
           {"crash/soft-lockup.txt", crash::CrashKind::soft_lockup, "BUG: soft lockup in mydrv_wait_ready"},
           {"crash/arm64-null.txt", crash::CrashKind::null_deref, "BUG: kernel NULL pointer dereference in mydrv_probe"},
           {"crash/ubsan-shift.txt", crash::CrashKind::ubsan, "UBSAN: shift-out-of-bounds in mydrv_set_mask"},
           {"crash/bug-on-truncated.txt", crash::CrashKind::bug_on, "kernel BUG in mydrv_setup"},
           {"crash/gpf-kasan-null.txt", crash::CrashKind::general_protection, "general protection fault in mydrv_ioctl"},
       }) {
    auto r = only(w.file);
    EXPECT_EQ(r.kind, w.kind) << w.file;
    EXPECT_EQ(r.title, w.title) << w.file;
  }
}

TEST(CrashReport, TruncatedLogsSayTheyAre) {
  EXPECT_TRUE(only("crash/bug-on-truncated.txt").truncated);
  EXPECT_FALSE(only("crash/hung-task.txt").truncated);
  auto full = fixture("console/6.12-oops-in-probe.txt");
  auto cut = full.substr(0, full.find("do_one_initcall"));
  auto rs = crash::parse_reports(cut);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_TRUE(rs[0].truncated);
  EXPECT_EQ(rs[0].title, "BUG: kernel NULL pointer dereference in edu_oops_probe");
}

TEST(CrashReport, Arm64RegistersAndPc) {
  auto r = only("crash/arm64-null.txt");
  ASSERT_TRUE(r.rip);
  EXPECT_EQ(r.rip->function, "mydrv_probe");
  EXPECT_EQ(r.rip->offset, 0x34u);
  EXPECT_EQ(r.registers["sp"], "ffff800082b0b9a0");
  EXPECT_EQ(r.registers["x29"], "ffff800082b0b9a0");
}

TEST(CrashReport, FramesOfEveryShape) {
  auto f = crash::parse_frame(" ? __pfx_x+0x10/0x10 [edu_oops]");
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->reliable);
  EXPECT_EQ(f->module, "edu_oops");
  f = crash::parse_frame(" [<ffffffffa0012345>] old_style+0x1a/0x30 [mod]");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->function, "old_style");
  f = crash::parse_frame(" kfree+0x196/0x430 mm/slub.c:4727");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->file, "mm/slub.c");
  EXPECT_EQ(f->line, 4727);
  EXPECT_FALSE(crash::parse_frame("Modules linked in: mydrv(OE+)"));
  EXPECT_FALSE(crash::parse_frame("which lock already depends on the new lock."));
  EXPECT_FALSE(crash::parse_frame(" <TASK>"));
}

TEST(CrashReport, JunkNeverThrows) {
  std::string junk("BUG: KASAN: \xff\x00 in \nCall Trace:\n \x01+0x/0x [\nRIP: 0010:\n---[ end trace", 60);
  EXPECT_NO_THROW((void)crash::parse_reports(junk));
  EXPECT_TRUE(crash::parse_reports("").empty());
}

TEST(Symbolize, AFunctionOffsetOfARelocatableObjectGivesItsLine) {
  // A relocatable ELF object with debug info, as a .ko is: symbols are section offsets.
  auto dir = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-sym");
  ASSERT_TRUE(dir);
  auto c = dir->path() / "m.c";
  ASSERT_TRUE(util::write_file(c, "int g;\n"
                                  "static int helper(int x)\n{\n\treturn x * 3;\n}\n"
                                  "int probe(int *p)\n{\n\tg = helper(g);\n\t*p = 1;\n\treturn 0;\n}\n"));
  util::RunRequest req;
  req.argv = {"gcc", "-g", "-O0", "-c", c.string(), "-o", (dir->path() / "m.ko").string()};
  req.timeout = std::chrono::seconds(120);
  auto r = util::run(req);
  ASSERT_TRUE(r && r->ok()) << (r ? r->err : r.error().message);
  auto place = crash::find_symbol(dir->path() / "m.ko", "probe");
  ASSERT_TRUE(place) << place.error().message;
  EXPECT_EQ(place->section, ".text");
  // Every byte of probe maps into lines 6..11 of m.c, the first to its opening line.
  auto lines = crash::symbolize(dir->path() / "m.ko", "probe", 0);
  ASSERT_TRUE(lines) << lines.error().message;
  ASSERT_FALSE(lines->empty());
  EXPECT_EQ(lines->front().function, "probe");
  EXPECT_EQ(std::filesystem::path(lines->front().file).filename(), "m.c");
  EXPECT_GE(lines->front().line, 6);
  EXPECT_LE(lines->front().line, 8);
  auto end = crash::symbolize(dir->path() / "m.ko", "probe", place->size - 1);
  ASSERT_TRUE(end && !end->empty());
  EXPECT_GE(end->front().line, 9);
  EXPECT_LE(end->front().line, 11);
  EXPECT_FALSE(crash::find_symbol(dir->path() / "m.ko", "no_such_function"));
  EXPECT_FALSE(crash::find_symbol(c, "probe")); // not ELF

  // A report's frames in that module get their file:line.
  crash::CrashReport rep;
  rep.rip = crash::Frame{"probe", 0, place->size, "m", true, false, "", 0};
  rep.trace.push_back(crash::Frame{"helper", 2, 0, "m", true, false, "", 0});
  EXPECT_EQ(crash::symbolize_report(rep, {{"m", dir->path() / "m.ko"}}), 2);
  EXPECT_EQ(std::filesystem::path(rep.rip->file).filename(), "m.c");
  EXPECT_GE(rep.trace[0].line, 2);
  EXPECT_LE(rep.trace[0].line, 5);
}

namespace {

/// A driver tree with one file, in a temporary folder kept for the test's life.
struct Tree {
  std::optional<util::TempDir> dir;
  explicit Tree(const std::string& c_text) {
    auto d = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-tree");
    if (!d) return;
    dir.emplace(std::move(*d));
    (void)util::write_file(dir->path() / "drv.c", c_text);
  }
  std::filesystem::path path() const { return dir ? dir->path() : std::filesystem::path(); }
};

/// A report whose faulting frame `fn` in module drv is already symbolized to drv.c:line.
crash::CrashReport null_report(const std::string& fn, int line) {
  crash::CrashReport r;
  r.kind = crash::CrashKind::null_deref;
  r.headline = "BUG: kernel NULL pointer dereference, address: 0000000000000008";
  r.rip = crash::Frame{fn, 0x10, 0x40, "drv", true, false, "/autodriver/tree/drv.c", line};
  r.trace = {crash::Frame{"local_pci_probe", 0x45, 0xa0, "", true, false, "", 0}};
  r.registers["CR2"] = "0000000000000008";
  return r;
}

std::vector<crash::Hypothesis> hyps_of(const crash::CrashReport& r, const Tree& t) {
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  return crash::hypothesize(r, where, t.path());
}

} // namespace

TEST(CrashLocalize, TheSeededNullWriteIsNamedWithItsAssignment) {
  Tree t("static int p0(struct pci_dev *pdev)\n{\n\tint *volatile p = NULL;\n\n\tdev_info(&pdev->dev, \"x\");\n\t*p = 1;\n"
         "\treturn 0;\n}\n");
  auto r = null_report("p0", 6);
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].file, "drv.c");
  EXPECT_EQ(where[0].role, "fault");
  auto h = crash::hypothesize(r, where, t.path());
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "null-pointer");
  EXPECT_EQ(h[0].statement, "p is set to NULL at drv.c:3 and dereferenced at drv.c:6 in p0()");
}

TEST(CrashLocalize, AnUncheckedAllocationIsNamed) {
  Tree t("static int p1(struct device *dev)\n{\n\tstruct priv *priv = devm_kzalloc(dev, sizeof(*priv), GFP_KERNEL);\n\n"
         "\tpriv->dev = dev;\n\treturn 0;\n}\n");
  auto h = hyps_of(null_report("p1", 5), t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "unchecked-result");
  EXPECT_EQ(h[0].statement,
            "priv = devm_kzalloc() at drv.c:3 is dereferenced at drv.c:5 in p1() without a check; devm_kzalloc() returned NULL");
  // With the check in place the statement no longer claims it is missing.
  Tree checked("static int p1(struct device *dev)\n{\n\tstruct priv *priv = devm_kzalloc(dev, 8, GFP_KERNEL);\n"
               "\tif (!priv)\n\t\treturn -ENOMEM;\n\tpriv->dev = dev;\n\treturn 0;\n}\n");
  auto h2 = hyps_of(null_report("p1", 6), checked);
  ASSERT_FALSE(h2.empty());
  EXPECT_NE(h2[0].kind, "unchecked-result");
}

TEST(CrashLocalize, UseBeforeSetAndParameters) {
  Tree t("static int p2(struct pci_dev *pdev)\n{\n\tstruct priv *priv;\n\n\tpriv->irq = pdev->irq;\n"
         "\tpriv = pci_get_drvdata(pdev);\n\treturn 0;\n}\n"
         "static void h(struct priv *priv)\n{\n\tpriv->count++;\n}\n");
  auto h = hyps_of(null_report("p2", 5), t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-before-set");
  EXPECT_EQ(h[0].statement, "p2() dereferences priv at drv.c:5 before it is set at drv.c:6");
  auto r = null_report("h", 11);
  r.trace = {crash::Frame{"p2", 0x22, 0x80, "drv", true, false, "", 0}};
  auto hp = hyps_of(r, t);
  ASSERT_FALSE(hp.empty());
  EXPECT_EQ(hp[0].statement, "h() dereferences its parameter priv at drv.c:11; p2() passed NULL");
}

TEST(CrashLocalize, KasanUseAfterFreeNamesTheFreeAndTheUse) {
  auto r = only("crash/kasan-uaf-syzbot.txt");
  auto where = crash::localize(r, {"mydrv"}, {}, "/autodriver/tree");
  ASSERT_GE(where.size(), 3u);
  EXPECT_EQ(where[0].role, "fault");
  EXPECT_EQ(where[0].function, "mydrv_remove");
  auto h = crash::hypothesize(r, where, {});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].kind, "use-after-free");
  EXPECT_EQ(h[0].statement,
            "the object allocated by mydrv_probe() is read by mydrv_remove() after it was freed by mydrv_remove()");
}

TEST(CrashLocalize, ACrashOutsideTheDriverHasNoLocation) {
  auto r = only("console/6.12-oops-in-probe.txt");
  EXPECT_TRUE(crash::localize(r, {"some_other_module"}, {}, "/autodriver/tree").empty());
  EXPECT_TRUE(crash::hypothesize(r, {}, {}).empty());
}

TEST(CrashRepair, UseBeforeSetMovesTheAssignmentAndItsTest) {
  Tree t("static int p(struct pci_dev *pdev)\n{\n\tstruct priv *priv = NULL;\n\n\tpriv->pdev = pdev;\n"
         "\tpriv = devm_kzalloc(&pdev->dev, sizeof(*priv), GFP_KERNEL);\n\tif (!priv)\n\t\treturn -ENOMEM;\n"
         "\tpriv->n++;\n\treturn 0;\n}\n");
  auto r = null_report("p", 5);
  auto h = hyps_of(r, t);
  ASSERT_FALSE(h.empty());
  ASSERT_EQ(h[0].kind, "use-before-set");
  EXPECT_EQ(h[0].set_line, 6);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_EQ(reps[0].new_text, "static int p(struct pci_dev *pdev)\n{\n\tstruct priv *priv = NULL;\n\n"
                              "\tpriv = devm_kzalloc(&pdev->dev, sizeof(*priv), GFP_KERNEL);\n\tif (!priv)\n\t\treturn -ENOMEM;\n"
                              "\tpriv->pdev = pdev;\n\tpriv->n++;\n\treturn 0;\n}\n");
}

TEST(CrashRepair, NothingMovesAcrossAnAssignmentItReads) {
  // The allocation reads `size`, which is set between the use and it: moving it would read it unset.
  Tree t("static int p(struct device *dev)\n{\n\tstruct priv *priv = NULL;\n\tint size;\n\n\tpriv->n = 1;\n\tsize = 64;\n"
         "\tpriv = devm_kzalloc(dev, size, GFP_KERNEL);\n\treturn 0;\n}\n");
  auto h = hyps_of(null_report("p", 6), t);
  ASSERT_FALSE(h.empty());
  ASSERT_EQ(h[0].kind, "use-before-set");
  EXPECT_TRUE(crash::propose_repairs(h, t.path(), {}).empty());
}

TEST(CrashRepair, AnUncheckedResultGetsATestOnlyWithAValueToReturn) {
  Tree t("static int p1(struct device *dev)\n{\n\tstruct priv *priv = devm_kzalloc(dev, 8, GFP_KERNEL);\n\n"
         "\tpriv->dev = dev;\n\treturn 0;\n}\n"
         "static void p2(struct device *dev)\n{\n\tstruct priv *priv = dev_get_drvdata(dev);\n\n\tpriv->n = 0;\n}\n");
  // No kernel source to learn the error from: an int function gets no invented value.
  auto h1 = hyps_of(null_report("p1", 5), t);
  ASSERT_FALSE(h1.empty());
  EXPECT_TRUE(crash::propose_repairs(h1, t.path(), {}).empty());
  // A void function returns early.
  auto h2 = hyps_of(null_report("p2", 12), t);
  ASSERT_FALSE(h2.empty());
  ASSERT_EQ(h2[0].kind, "unchecked-result");
  auto reps = crash::propose_repairs(h2, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\tstruct priv *priv = dev_get_drvdata(dev);\n\tif (!priv)\n\t\treturn;\n"), std::string::npos);
}

TEST(CrashRepair, TheErrorValueIsLearnedFromTheKernelsDrivers) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/a");
  ASSERT_TRUE(util::write_file(k->path() / "drivers/a/x.c",
                               "\tp = thing_get(dev);\n\tif (!p)\n\t\treturn -ENODEV;\n"
                               "\tq = thing_get(dev);\n\tif (!q) {\n\t\tdev_err(dev, \"no\");\n\t\treturn -ENODEV;\n\t}\n"));
  ASSERT_TRUE(util::write_file(k->path() / "drivers/a/y.c", "\tr = thing_get(d);\n\tif (r == NULL)\n\t\treturn -EINVAL;\n"));
  auto how = crash::failure_handling(k->path(), "thing_get");
  EXPECT_EQ(how.error, "-ENODEV");
  EXPECT_EQ(how.seen, 3);
  EXPECT_FALSE(how.is_err);
  EXPECT_TRUE(crash::failure_handling(k->path(), "other_get").error.empty());
}

TEST(CrashRelease, WhichCallsReleaseIsLearnedFromTheKernelsDrivers) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/a");
  // thing_free(x) ends x's use: last in the function, or on an error path that returns; thing_stop(x) does not.
  std::string c;
  for (int i = 0; i < 6; ++i)
    c += "static void r" + std::to_string(i) + "(struct t *x)\n{\n\tthing_stop(x);\n\tx->n = 0;\n\tthing_free(x);\n}\n";
  for (int i = 0; i < 4; ++i)
    c += "static int p" + std::to_string(i) +
         "(void)\n{\n\tstruct t *x = thing_new();\n\tif (go(x)) {\n\t\tthing_free(x);\n"
         "\t\treturn -EIO;\n\t}\n\tx->n = 1;\n\treturn 0;\n}\n";
  ASSERT_TRUE(util::write_file(k->path() / "drivers/a/x.c", c));
  auto fr = crash::release_evidence(k->path(), "thing_free");
  EXPECT_EQ(fr.calls, 10);
  EXPECT_EQ(fr.last_use, 10);
  EXPECT_TRUE(fr.releases());
  // Last on its path every time: the end of the function, or a return after it.
  EXPECT_EQ(fr.last_call, 10);
  EXPECT_TRUE(fr.released_last());
  auto st = crash::release_evidence(k->path(), "thing_stop");
  EXPECT_EQ(st.calls, 6);
  EXPECT_EQ(st.last_use, 0);
  EXPECT_EQ(st.last_call, 0);
  EXPECT_FALSE(st.releases());
  // The repair of a release before a use: after the last use, and, as the kernel's drivers release
  // it last, also last in the function (a pointer into the object the source does not show).
  Tree t("static void rm(struct pci_dev *pdev)\n{\n\tstruct t *x = pci_get_drvdata(pdev);\n"
         "\tstruct p *p = pci_priv(pdev);\n\n\tthing_free(x);\n\tthing_stop(x);\n\tp_fini(p);\n"
         "\tpci_disable_device(pdev);\n}\n");
  auto r = null_report("rm", 7);
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path(),
                              crash::release_oracle(k->path()));
  ASSERT_FALSE(h.empty());
  ASSERT_EQ(h[0].kind, "use-after-release");
  auto reps = crash::propose_repairs({h[0]}, t.path(), k->path());
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_NE(reps[0].new_text.find("\tthing_stop(x);\n\tthing_free(x);\n\tp_fini(p);"), std::string::npos) << reps[0].new_text;
  EXPECT_NE(reps[1].new_text.find("\tpci_disable_device(pdev);\n\tthing_free(x);\n}"), std::string::npos) << reps[1].new_text;
  EXPECT_EQ(crash::propose_repairs({h[0]}, t.path(), {}).size(), 1u);
}

namespace {

/// thing_free(x) releases x; thing_unmap(dev, base) releases its second argument.
crash::ReleaseEvidence frees_only(const std::string& callee, std::size_t arg) {
  const bool frees = (callee == "thing_free" && arg == 0) || (callee == "thing_unmap" && arg == 1);
  return frees ? crash::ReleaseEvidence{callee, 10, 10} : crash::ReleaseEvidence{callee, 10, 2};
}
std::vector<crash::Hypothesis> hyps_of_releasing(const crash::CrashReport& r, const Tree& t) {
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  return crash::hypothesize(r, where, t.path(), frees_only);
}

const char* k_remove = "static void rm(struct pci_dev *pdev)\n{\n\tstruct t *x = pci_get_drvdata(pdev);\n"
                       "\tstruct p *p = thing_priv(x);\n\n\tthing_free(x);\n\tthing_stop(x);\n\tiounmap(p->regs);\n"
                       "\tpci_disable_device(pdev);\n}\n";

} // namespace

TEST(CrashRelease, AReleaseBeforeAUseIsNamedFromEitherEnd) {
  Tree t(k_remove);
  // The kernel stopped in the release (its BUG_ON): the driver's frame is the release's line.
  auto r = null_report("rm", 6);
  r.kind = crash::CrashKind::bug_on;
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].statement, "rm() releases x with thing_free() at drv.c:6 and still uses it at drv.c:7");
  EXPECT_EQ(h[0].set_line, 6);
  // The crash showed a later use of a pointer derived from the released one: the release is the cause, ranked first.
  auto r2 = null_report("rm", 8);
  auto where2 = crash::localize(r2, {"drv"}, t.path(), "/autodriver/tree");
  auto h2 = crash::hypothesize(r2, where2, t.path(), frees_only);
  ASSERT_FALSE(h2.empty());
  EXPECT_EQ(h2[0].kind, "use-after-release");
  EXPECT_EQ(h2[0].set_line, 6);
  EXPECT_EQ(h2[0].line, 8);
  crash::rank_by_hypotheses(where2, h2);
  ASSERT_EQ(where2.size(), 2u);
  EXPECT_EQ(where2[0].role, "cause");
  EXPECT_EQ(where2[0].line, 6);
  // Without the kernel's word that the call releases, no such claim.
  auto h3 = crash::hypothesize(r2, where2, t.path(), {});
  ASSERT_FALSE(h3.empty());
  EXPECT_NE(h3[0].kind, "use-after-release");
}

TEST(CrashRepair, AReleaseMovesAfterTheLastUse) {
  Tree t(k_remove);
  auto r = null_report("rm", 8);
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_EQ(reps[0].kind, "use-after-release");
  EXPECT_EQ(reps[0].new_text, "static void rm(struct pci_dev *pdev)\n{\n\tstruct t *x = pci_get_drvdata(pdev);\n"
                              "\tstruct p *p = thing_priv(x);\n\n\tthing_stop(x);\n\tiounmap(p->regs);\n\tthing_free(x);\n"
                              "\tpci_disable_device(pdev);\n}\n");
  // A jump between the release and the last use: not moved.
  Tree g("static void rm(struct t *x)\n{\n\tthing_free(x);\n\tif (x->n)\n\t\tgoto out;\n\tthing_stop(x);\nout:\n\treturn;\n}\n");
  auto hg = crash::hypothesize(null_report("rm", 4), crash::localize(null_report("rm", 4), {"drv"}, g.path(), "/autodriver/tree"),
                               g.path(), frees_only);
  ASSERT_FALSE(hg.empty());
  EXPECT_EQ(hg[0].kind, "use-after-release");
  EXPECT_TRUE(crash::propose_repairs(hg, g.path(), {}).empty());
}

TEST(CrashReport, SlubDebugsDoubleFreeWithItsTracksAndTheWarningsTrace) {
  auto r = only("console/6.12-slab-double-free.txt");
  EXPECT_EQ(r.kind, crash::CrashKind::slab);
  EXPECT_EQ(r.detail, "Object already free");
  EXPECT_EQ(r.title, "BUG: slab Object already free in slab_df_init");
  ASSERT_FALSE(r.alloc_stack.empty());
  EXPECT_EQ(r.alloc_stack[0].function, "slab_df_init");
  EXPECT_EQ(r.alloc_stack[0].module, "slab_df");
  ASSERT_FALSE(r.free_stack.empty());
  EXPECT_EQ(r.free_stack[0].offset, 0x30u);
  const crash::Frame* g = r.guilty();
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->function, "slab_df_init");
  EXPECT_EQ(g->offset, 0x38u);
  auto where = crash::localize(r, {"slab_df"}, {}, "/autodriver/tree");
  auto h = crash::hypothesize(r, where, {});
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-free");
  EXPECT_EQ(h[0].statement, "slab_df_init() frees an object already freed by slab_df_init()");
}

TEST(CrashRepair, TheSecondOfTwoIdenticalReleasesGoes) {
  Tree t("static void rm(struct pci_dev *pdev)\n{\n\tstruct t *x = pci_get_drvdata(pdev);\n\n\tthing_stop(x);\n"
         "\tthing_free(x);\n\tpci_disable_device(pdev);\n\tthing_free(x);\n}\n");
  auto r = null_report("rm", 8);
  r.kind = crash::CrashKind::bug_on;
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-release");
  EXPECT_EQ(h[0].statement,
            "rm() calls thing_free(x) at drv.c:8 after calling it at drv.c:6 on the same path (x is not set again in between)");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_EQ(reps[0].new_text, "static void rm(struct pci_dev *pdev)\n{\n\tstruct t *x = pci_get_drvdata(pdev);\n\n"
                              "\tthing_stop(x);\n\tthing_free(x);\n\tpci_disable_device(pdev);\n}\n");
  // Set again in between: two objects, no double release.
  Tree n("static void rm(void)\n{\n\tstruct t *x = thing_new();\n\n\tthing_free(x);\n\tx = thing_new();\n\tthing_free(x);\n}\n");
  auto r2 = null_report("rm", 7);
  r2.kind = crash::CrashKind::bug_on;
  auto h2 = crash::hypothesize(r2, crash::localize(r2, {"drv"}, n.path(), "/autodriver/tree"), n.path(), frees_only);
  ASSERT_FALSE(h2.empty());
  EXPECT_NE(h2[0].kind, "double-release");
}

// Releases are mostly of members (`kfree(adapter->ring)`): a repeated one is a double release,
// and when the driver allocates another member it never releases (a copied line that kept the
// wrong member), that member is released first; dropping the second call is the other candidate.
TEST(CrashRepair, ARepeatedReleaseOfAMemberReleasesTheMemberLeftBehind) {
  const std::string probe = "static int pr(struct pci_dev *pdev)\n{\n\tstruct t *a = thing_new();\n"
                            "\ta->x = thing_new();\n\ta->y = thing_new();\n\tpci_set_drvdata(pdev, a);\n\treturn 0;\n}\n";
  const std::string rm = "static void rm(struct pci_dev *pdev)\n{\n\tstruct t *a = pci_get_drvdata(pdev);\n\n"
                         "\tthing_free(a->x);\n\tthing_free(a->x);\n\tthing_free(a);\n}\n";
  Tree t(probe + rm);
  auto r = null_report("rm", 14);
  r.kind = crash::CrashKind::bug_on;
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-release");
  EXPECT_EQ(h[0].variable, "a->x");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_NE(reps[0].new_text.find("\tthing_free(a->x);\n\tthing_free(a->y);\n\tthing_free(a);\n"), std::string::npos)
      << reps[0].new_text;
  EXPECT_NE(reps[1].new_text.find("\tthing_free(a->x);\n\tthing_free(a);\n}"), std::string::npos) << reps[1].new_text;
  // Every member released somewhere: only the drop.
  Tree all(probe + "static void rm(struct pci_dev *pdev)\n{\n\tstruct t *a = pci_get_drvdata(pdev);\n\n"
                   "\tthing_free(a->x);\n\tthing_free(a->x);\n\tthing_free(a->y);\n}\n");
  auto ha = crash::hypothesize(r, crash::localize(r, {"drv"}, all.path(), "/autodriver/tree"), all.path(), frees_only);
  ASSERT_FALSE(ha.empty());
  EXPECT_EQ(crash::propose_repairs(ha, all.path(), {}).size(), 1u);
  // e1000's shape: the left member is released on probe's error path, and the object has other
  // members set from other calls (`a->regs = ioremap(...)`): the sibling set from the same
  // allocation call that remove never releases is the one meant.
  const std::string probe2 = "static int pr(struct pci_dev *pdev)\n{\n\tstruct t *a = thing_new();\n"
                             "\ta->x = kcalloc(1, 64, GFP_KERNEL);\n\ta->y = kcalloc(1, 64, GFP_KERNEL);\n"
                             "\ta->regs = ioremap(0, 8);\n\tif (!a->regs) {\n\t\tkfree(a->x);\n\t\tkfree(a->y);\n"
                             "\t\treturn -ENOMEM;\n\t}\n\tpci_set_drvdata(pdev, a);\n\treturn 0;\n}\n";
  Tree e(probe2 + "static void rm(struct pci_dev *pdev)\n{\n\tstruct t *a = pci_get_drvdata(pdev);\n\n"
                  "\tkfree(a->x);\n\tkfree(a->x);\n\tiounmap(a->regs);\n}\n");
  auto re = null_report("rm", 20);
  re.kind = crash::CrashKind::bug_on;
  const auto kfrees = [](const std::string& callee, std::size_t) {
    crash::ReleaseEvidence ev{callee, 0, 0, 0};
    if (callee == "kfree") ev.calls = ev.last_use = 10;
    return ev;
  };
  auto he = crash::hypothesize(re, crash::localize(re, {"drv"}, e.path(), "/autodriver/tree"), e.path(), kfrees);
  ASSERT_FALSE(he.empty());
  ASSERT_EQ(he[0].kind, "double-release");
  auto rese = crash::propose_repairs(he, e.path(), {});
  ASSERT_EQ(rese.size(), 2u);
  EXPECT_NE(rese[0].new_text.find("\tkfree(a->x);\n\tkfree(a->y);\n\tiounmap(a->regs);\n"), std::string::npos)
      << rese[0].new_text;
  // A member used after its release is a use after release, moved after the use.
  Tree u("static void rm(struct t *a)\n{\n\tthing_free(a->ring);\n\ta->ring->n = 0;\n\tthing_stop(a);\n}\n");
  auto ru = null_report("rm", 4);
  auto hu = crash::hypothesize(ru, crash::localize(ru, {"drv"}, u.path(), "/autodriver/tree"), u.path(), frees_only);
  ASSERT_FALSE(hu.empty());
  EXPECT_EQ(hu[0].kind, "use-after-release");
  EXPECT_EQ(hu[0].variable, "a->ring");
  // Setting the member anew is no use (`a->ring = NULL;` after the release).
  Tree n("static void rm(struct t *a)\n{\n\tthing_free(a->ring);\n\ta->ring = NULL;\n\ta->n = 0;\n}\n");
  auto rn = null_report("rm", 4);
  auto hn = crash::hypothesize(rn, crash::localize(rn, {"drv"}, n.path(), "/autodriver/tree"), n.path(), frees_only);
  EXPECT_TRUE(hn.empty() || hn[0].kind != "use-after-release");
}

// 8139cp's remove with iounmap() moved before unregister_netdev(): the crash is in .ndo_stop,
// reached through unregister_netdev(), reading the registers through the driver's own macro.
// The release sits in the caller: the hypothesis names it, the repair moves it after the call.
TEST(CrashRepair, AReleaseBeforeTheCallThatReachesTheUseMovesAfterIt) {
  Tree t("#define cpr8(reg) readb(cp->regs + (reg))\n"
         "static int cp_close(struct net_device *dev)\n{\n\tstruct cp_private *cp = netdev_priv(dev);\n\n"
         "\tcpr8(Cmd);\n\treturn 0;\n}\n"
         "static void cp_remove(struct pci_dev *pdev)\n{\n\tstruct net_device *dev = pci_get_drvdata(pdev);\n"
         "\tstruct cp_private *cp = netdev_priv(dev);\n\n\tthing_free(cp->regs);\n\tunregister_netdev(dev);\n"
         "\tfree_netdev(dev);\n}\n");
  auto r = null_report("cp_close", 6);
  r.kind = crash::CrashKind::paging_request;
  r.trace = {crash::Frame{"__dev_close_many", 0x45, 0xa0, "", true, false, "", 0},
             crash::Frame{"unregister_netdev", 0x20, 0x30, "", true, false, "", 0},
             crash::Frame{"cp_remove", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 15}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  ASSERT_EQ(where.size(), 2u);
  auto h = crash::hypothesize(r, where, t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].function, "cp_remove");
  EXPECT_EQ(h[0].variable, "cp->regs");
  EXPECT_EQ(h[0].set_line, 14);
  EXPECT_EQ(h[0].statement, "cp_remove() releases cp->regs with thing_free() at drv.c:14 and then calls what reaches "
                            "cp_close() at drv.c:15, which still reads it at drv.c:6");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\tunregister_netdev(dev);\n\tthing_free(cp->regs);\n\tfree_netdev(dev);\n"), std::string::npos)
      << reps[0].new_text;
  // A member the callback does not read: no claim.
  Tree o("static int cp_close(struct net_device *dev)\n{\n\tstruct cp_private *cp = netdev_priv(dev);\n\n"
         "\tcp->n = 0;\n\treturn 0;\n}\n"
         "static void cp_remove(struct pci_dev *pdev)\n{\n\tstruct net_device *dev = pci_get_drvdata(pdev);\n"
         "\tstruct cp_private *cp = netdev_priv(dev);\n\n\tthing_free(cp->regs);\n\tunregister_netdev(dev);\n}\n");
  auto ro = null_report("cp_close", 5);
  ro.trace = {crash::Frame{"cp_remove", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 14}};
  auto ho = crash::hypothesize(ro, crash::localize(ro, {"drv"}, o.path(), "/autodriver/tree"), o.path(), frees_only);
  EXPECT_TRUE(ho.empty() || ho[0].kind != "use-after-release");
}

// The driver's own release helper called twice in a row (a duplicated line): the second call
// faults on what the first released; the second call goes (not the first moved after it).
TEST(CrashRepair, AReleaseHelperCalledTwiceLosesTheSecondCall) {
  Tree t("static void release_res(struct a *adapter)\n{\n\tthing_free(adapter->wq);\n}\n"
         "static void rm(struct pci_dev *pdev)\n{\n\tstruct a *adapter = pci_get_drvdata(pdev);\n\n"
         "\trelease_res(adapter);\n\trelease_res(adapter);\n\tpci_disable_device(pdev);\n}\n");
  auto r = null_report("release_res", 3);
  r.kind = crash::CrashKind::bug_on;
  r.trace = {crash::Frame{"rm", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 10}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-release");
  EXPECT_EQ(h[0].function, "rm");
  EXPECT_EQ(h[0].line, 10);
  EXPECT_EQ(h[0].set_line, 9);
  crash::rank_by_hypotheses(where, h);
  ASSERT_FALSE(where.empty());
  EXPECT_EQ(where.front().line, 10);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps.back().new_text.find("\trelease_res(adapter);\n\tpci_disable_device(pdev);"), std::string::npos);
  EXPECT_EQ(reps.back().new_text.find("\trelease_res(adapter);\n\trelease_res(adapter);"), std::string::npos)
      << reps.back().new_text;
}

// A teardown that puts the object before calling the driver's function with a pointer derived
// from it (`scsi_host_put(host); release(adapter);`, adapter = shost_priv(host)): the crash is in
// the callee, the put moves after the call.
TEST(CrashRepair, AnObjectReleasedBeforeTheCallHandedItMovesAfterTheCall) {
  Tree t("static void shutdown_hw(struct a *adapter)\n{\n\tdestroy_thing(adapter->wq);\n}\n"
         "static void rm(struct pci_dev *pdev)\n{\n\tstruct host *host = pci_get_drvdata(pdev);\n"
         "\tstruct a *adapter = host_priv(host);\n\n\tthing_free(host);\n\tshutdown_hw(adapter);\n}\n");
  auto r = null_report("shutdown_hw", 3);
  r.kind = crash::CrashKind::general_protection;
  r.trace = {crash::Frame{"rm", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 11}};
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].function, "rm");
  EXPECT_EQ(h[0].variable, "host");
  EXPECT_EQ(h[0].set_line, 10);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\tshutdown_hw(adapter);\n\tthing_free(host);\n}"), std::string::npos) << reps[0].new_text;
  // The call is handed something else: no claim.
  Tree o("static void shutdown_hw(struct a *adapter)\n{\n\tdestroy_thing(adapter->wq);\n}\n"
         "static void rm(struct pci_dev *pdev)\n{\n\tstruct host *host = pci_get_drvdata(pdev);\n"
         "\tstruct a *adapter = pci_priv(pdev);\n\n\tthing_free(host);\n\tshutdown_hw(adapter);\n}\n");
  auto ho = crash::hypothesize(r, crash::localize(r, {"drv"}, o.path(), "/autodriver/tree"), o.path(), frees_only);
  EXPECT_TRUE(ho.empty() || ho[0].kind != "use-after-release");
}

// The driver's own function releases a member of the object (an unmap two levels down, in an `if`)
// and a later call still reads that member: the call of the driver's function moves after it.
TEST(CrashRepair, ADriverFunctionThatReleasesAMemberMovesAfterTheCallReadingIt) {
  const std::string text = "static void hw_write(struct a *adapter, int v)\n{\n\twritel(v, adapter->mmio);\n}\n"
                           "static void unmap_all(struct a *ad)\n{\n\tif (ad->mmio)\n\t\tthing_unmap(ad->dev, ad->mmio);\n}\n"
                           "static void release_res(struct a *adapter)\n{\n\tdestroy_thing(adapter->wq);\n"
                           "\tunmap_all(adapter);\n}\n"
                           "static void rm(struct pci_dev *pdev)\n{\n\tstruct a *adapter = pci_get_drvdata(pdev);\n\n"
                           "\trelease_res(adapter);\n\thw_write(adapter, 0);\n\tpci_disable_device(pdev);\n}\n";
  Tree t(text);
  auto r = null_report("hw_write", 3);
  r.kind = crash::CrashKind::paging_request;
  r.trace = {crash::Frame{"rm", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 20}};
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].variable, "adapter");
  EXPECT_EQ(h[0].callee, "release_res");
  EXPECT_EQ(h[0].set_line, 19);
  EXPECT_EQ(h[0].statement, "rm() calls release_res(adapter) at drv.c:19, which releases ad->mmio with thing_unmap() at "
                            "drv.c:8, and then calls what reaches hw_write() at drv.c:20, which still reads it at drv.c:3");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\thw_write(adapter, 0);\n\trelease_res(adapter);\n\tpci_disable_device(pdev);"),
            std::string::npos)
      << reps[0].new_text;
  // Without the kernel's word that the unmap releases its second argument, no claim.
  auto first_only = [](const std::string& callee, std::size_t arg) {
    return crash::ReleaseEvidence{callee, 10, arg == 0 && callee == "thing_unmap" ? 10 : 0};
  };
  auto hn = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path(), first_only);
  EXPECT_TRUE(hn.empty() || hn[0].kind != "use-after-release");
}

// A loop that runs one past the count the driver's other loops over the same array stop before
// (an array of the heap, whose size the source does not say): the bound the file agrees on.
TEST(CrashRepair, ALoopOnePastTheCountTheFileUsesElsewhereStopsBeforeIt) {
  const std::string init = "static int rx_init(struct vi *vi)\n{\n\tint i;\n\n\tfor (i = 0; i < vi->max_q; i++)\n"
                           "\t\tvi->sq[i].n = 1;\n\treturn 0;\n}\n";
  Tree t(init + "static void rx_fini(struct vi *vi)\n{\n\tint i;\n\n\tfor (i = 0; i <= vi->max_q; i++)\n"
                "\t\tvi->sq[i].n = 0;\n}\n");
  auto r = null_report("rx_fini", 14);
  r.kind = crash::CrashKind::paging_request;
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path());
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "loop-bound");
  EXPECT_EQ(h[0].line, 13);
  EXPECT_EQ(h[0].call, "i < vi->max_q");
  EXPECT_EQ(h[0].statement, "the loop at drv.c:13 runs i up to vi->max_q inclusive and indexes sq[i]; the file's other 1 "
                            "loop(s) over sq stop before vi->max_q (drv.c:5): its last pass is one past the end");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("rx_fini(struct vi *vi)\n{\n\tint i;\n\n\tfor (i = 0; i < vi->max_q; i++)"), std::string::npos)
      << reps[0].new_text;
  // The fault's line in an inlined callee: the frame's own function's loop.
  Tree in("static inline void clear(struct q *q)\n{\n\tq->n = 0;\n}\n" + init +
          "static void rx_fini(struct vi *vi)\n{\n\tint i;\n\n\tfor (i = 0; i <= vi->max_q; i++)\n"
          "\t\tclear(&vi->sq[i]);\n}\n");
  auto hi = crash::hypothesize(null_report("rx_fini", 3),
                               crash::localize(null_report("rx_fini", 3), {"drv"}, in.path(), "/autodriver/tree"), in.path());
  ASSERT_FALSE(hi.empty());
  EXPECT_EQ(hi[0].kind, "loop-bound");
  EXPECT_EQ(hi[0].function, "rx_fini");
  EXPECT_EQ(hi[0].line, 17);
  // No other loop of the file stops before that bound: no claim.
  Tree o("static void rx_fini(struct vi *vi)\n{\n\tint i;\n\n\tfor (i = 0; i <= vi->max_q; i++)\n"
         "\t\tvi->sq[i].n = 0;\n}\n");
  auto ho = crash::hypothesize(null_report("rx_fini", 6),
                               crash::localize(null_report("rx_fini", 6), {"drv"}, o.path(), "/autodriver/tree"), o.path());
  EXPECT_TRUE(ho.empty() || ho[0].kind != "loop-bound");
}

// A member the probe sets only after the call that uses it: the crash is in the callee with its
// parameter valid (not "its caller passed NULL"); the assignment and its test move before the call.
TEST(CrashRepair, AMemberSetAfterTheCallThatUsesItMovesBeforeTheCall) {
  Tree t("static void ring_init(struct priv *p)\n{\n\tp->ring->head = 0;\n}\n"
         "static int pr(struct pci_dev *pdev)\n{\n\tstruct priv *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);\n\n"
         "\tring_init(p);\n\tp->ring = devm_kzalloc(&pdev->dev, 64, GFP_KERNEL);\n\tif (!p->ring)\n\t\treturn -ENOMEM;\n"
         "\treturn 0;\n}\n");
  auto r = null_report("ring_init", 3);
  r.trace = {crash::Frame{"pr", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 9}};
  auto h = crash::hypothesize(r, crash::localize(r, {"drv"}, t.path(), "/autodriver/tree"), t.path());
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-before-set");
  EXPECT_EQ(h[0].function, "pr");
  EXPECT_EQ(h[0].variable, "p->ring");
  EXPECT_EQ(h[0].set_line, 10);
  EXPECT_EQ(h[0].statement, "ring_init() dereferences ring at drv.c:3 while it is still unset: pr() sets it only at drv.c:10, "
                            "after the call at drv.c:9 that led there");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\tp->ring = devm_kzalloc(&pdev->dev, 64, GFP_KERNEL);\n\tif (!p->ring)\n\t\treturn -ENOMEM;\n"
                                  "\tring_init(p);\n\treturn 0;\n"),
            std::string::npos)
      << reps[0].new_text;
  // Set (not to NULL) before the call too: not this.
  Tree b("static void ring_init(struct priv *p)\n{\n\tp->ring->head = 0;\n}\n"
         "static int pr(struct pci_dev *pdev)\n{\n\tstruct priv *p = devm_kzalloc(&pdev->dev, sizeof(*p), GFP_KERNEL);\n"
         "\tp->ring = &p->ring0;\n\tring_init(p);\n\tp->ring = devm_kzalloc(&pdev->dev, 64, GFP_KERNEL);\n\treturn 0;\n}\n");
  auto hb = crash::hypothesize(r, crash::localize(r, {"drv"}, b.path(), "/autodriver/tree"), b.path());
  EXPECT_TRUE(hb.empty() || hb[0].kind != "use-before-set" || hb[0].function != "pr");
}

// A timer armed in probe and never stopped in remove fires after rmmod into the module's freed
// text (softirq, no driver frame). What ends timer_setup() on a teardown path is learned from the
// kernel's drivers; the driver's remove gets it first, with its own variable for the object.
TEST(CrashRepair, ATimerRemoveNeverStopsIsStoppedFirstInRemove) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/a");
  for (int i = 0; i < 12; ++i)
    ASSERT_TRUE(util::write_file(
        k->path() / ("drivers/a/d" + std::to_string(i) + ".c"),
        "static int d_probe(struct platform_device *pdev)\n{\n\tstruct d_priv *p = devm_kzalloc(&pdev->dev, 8, 0);\n"
        "\ttimer_setup(&p->timer, d_tick, 0);\n\tmod_timer(&p->timer, 1);\n\treturn 0;\n}\n"
        "static void d_remove(struct platform_device *pdev)\n{\n\tstruct d_priv *p = platform_get_drvdata(pdev);\n\n" +
            std::string(i < 9 ? "\ttimer_delete_sync(&p->timer);\n" : "") +
            "}\nstatic struct platform_driver d = {\n\t.probe = d_probe,\n\t.remove = d_remove,\n};\n"));
  auto pair = crash::teardown_pair(k->path(), "timer_setup");
  EXPECT_EQ(pair.release, "timer_delete_sync");
  EXPECT_EQ(pair.calls, 12);
  EXPECT_EQ(pair.released, 9);
  EXPECT_TRUE(crash::torn_down(pair));
  // Arming it is ended the same way; an allocation on &pdev->dev by nothing that names its member.
  EXPECT_EQ(crash::teardown_pair(k->path(), "mod_timer").release, "timer_delete_sync");
  EXPECT_FALSE(crash::torn_down(crash::teardown_pair(k->path(), "devm_kzalloc")));
  Tree t("static int w_probe(struct platform_device *pdev)\n{\n\tstruct w_priv *wp = devm_kzalloc(&pdev->dev, 8, 0);\n"
         "\ttimer_setup(&wp->timer, w_tick, 0);\n\tplatform_set_drvdata(pdev, wp);\n\treturn 0;\n}\n"
         "static void w_remove(struct platform_device *pdev)\n{\n\tstruct w_priv *priv = platform_get_drvdata(pdev);\n\n"
         "\tw_stop(priv);\n}\n"
         "static struct platform_driver w = {\n\t.probe = w_probe,\n\t.remove = w_remove,\n};\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::paging_request;
  r.headline = "BUG: unable to handle page fault for address: ffffffffc0a01040";
  r.registers["CR2"] = "ffffffffc0a01040";
  r.trace = {crash::Frame{"call_timer_fn", 0x2b, 0x160, "", true, false, "", 0}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  ASSERT_TRUE(where.empty());
  auto h = crash::hypothesize(r, where, t.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].kind, "missing-teardown");
  EXPECT_EQ(h[0].function, "w_remove");
  EXPECT_EQ(h[0].call, "timer_delete_sync(&priv->timer)");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\tstruct w_priv *priv = platform_get_drvdata(pdev);\n\n\ttimer_delete_sync(&priv->timer);\n"
                                  "\tw_stop(priv);\n"),
            std::string::npos)
      << reps[0].new_text;
  // A remove that stops it (under any name): nothing to add.
  Tree ok("static int w_probe(struct platform_device *pdev)\n{\n\tstruct w_priv *wp = devm_kzalloc(&pdev->dev, 8, 0);\n"
          "\ttimer_setup(&wp->timer, w_tick, 0);\n\treturn 0;\n}\n"
          "static void w_remove(struct platform_device *pdev)\n{\n\tstruct w_priv *priv = platform_get_drvdata(pdev);\n"
          "\tdel_timer_sync(&priv->timer);\n}\n"
          "static struct platform_driver w = {\n\t.probe = w_probe,\n\t.remove = w_remove,\n};\n");
  EXPECT_TRUE(crash::hypothesize(r, where, ok.path(), {}, {}, {}, crash::teardown_oracle(k->path())).empty());
  // The teardown goes where the driver already ends its other timers (a helper remove calls), not
  // in the first helper that can name the object.
  Tree two("static int w_probe(struct platform_device *pdev)\n{\n\tstruct w_priv *wp = devm_kzalloc(&pdev->dev, 8, 0);\n"
           "\ttimer_setup(&wp->timer, w_tick, 0);\n\ttimer_setup(&wp->other, w_tick, 0);\n\treturn 0;\n}\n"
           "static void w_mng(struct w_priv *p)\n{\n\tp->n = 0;\n}\n"
           "static void w_halt(struct w_priv *p)\n{\n\ttimer_delete_sync(&p->other);\n}\n"
           "static void w_remove(struct platform_device *pdev)\n{\n\tstruct w_priv *priv = platform_get_drvdata(pdev);\n"
           "\tw_mng(priv);\n\tw_halt(priv);\n}\n"
           "static struct platform_driver w = {\n\t.probe = w_probe,\n\t.remove = w_remove,\n};\n");
  auto h2 = crash::hypothesize(r, where, two.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_EQ(h2.size(), 1u);
  EXPECT_EQ(h2[0].function, "w_halt");
  EXPECT_EQ(h2[0].call, "timer_delete_sync(&p->timer)");
  // Armed again by the helper .ndo_open calls: ended in the function that undoes that helper (the
  // one making the calls of its unwind ladder), not in remove.
  Tree up("static int w_probe(struct platform_device *pdev)\n{\n\tstruct w_priv *wp = devm_kzalloc(&pdev->dev, 8, 0);\n"
          "\ttimer_setup(&wp->timer, w_tick, 0);\n\treturn 0;\n}\n"
          "static int w_up(struct w_priv *p)\n{\n\tint err = w_alloc(p);\n\n\tif (err)\n\t\treturn err;\n"
          "\tmod_timer(&p->timer, 1);\n\terr = w_irq(p);\n\tif (err)\n\t\tgoto err_timer;\n\treturn 0;\n"
          "err_timer:\n\ttimer_delete_sync(&p->timer);\n\tw_free(p);\n\treturn err;\n}\n"
          "static void w_down(struct w_priv *p)\n{\n\tw_noirq(p);\n\tw_free(p);\n}\n"
          "static void w_remove(struct platform_device *pdev)\n{\n\tstruct w_priv *priv = platform_get_drvdata(pdev);\n"
          "\tw_stop(priv);\n}\n"
          "static struct platform_driver w = {\n\t.probe = w_probe,\n\t.remove = w_remove,\n};\n");
  auto h3 = crash::hypothesize(r, where, up.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_FALSE(h3.empty());
  EXPECT_EQ(h3[0].function, "w_down");
  EXPECT_EQ(h3[0].call, "timer_delete_sync(&p->timer)");
}

TEST(CrashLocalize, AFrameLostToATailCallIsFoundThroughTheMemberTheKernelCalls) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/base");
  ASSERT_TRUE(util::write_file(k->path() / "drivers/base/bus.c",
                               "static void bus_remove(struct dev *d)\n{\n\tif (d->drv->remove)\n\t\td->drv->remove(d);\n}\n"));
  EXPECT_EQ(crash::members_called_by(k->path(), "bus_remove"), (std::set<std::string>{"remove"}));
  Tree t("static void rm(struct dev *d)\n{\n\tstruct t *x = d->priv;\n\n\tthing_free(x);\n\tthing_free(x);\n}\n"
         "static int pr(struct dev *d)\n{\n\treturn thing_free(d);\n}\n"
         "static struct drv d = {\n\t.probe = pr,\n\t.remove = rm,\n};\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::general_protection;
  r.headline = "Oops: general protection fault";
  r.rip = crash::Frame{"kfree", 0x72, 0x370, "", true, false, "", 0};
  r.trace = {crash::Frame{"thing_free", 0x2e, 0x1e0, "", true, false, "", 0},
             crash::Frame{"bus_remove", 0x40, 0xa0, "", true, false, "", 0}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree", k->path());
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].function, "rm");
  EXPECT_EQ(where[0].line, 6);
  EXPECT_EQ(where[0].inferred, "tail-call");
  EXPECT_FALSE(where[0].from_debug_info);
  auto h = crash::hypothesize(r, where, t.path(), {});
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-release");
  // Without the kernel's source, or with a driver frame in the trace, nothing is inferred.
  EXPECT_TRUE(crash::localize(r, {"drv"}, t.path(), "/autodriver/tree").empty());
}

TEST(CrashLocalize, ATailCallIsFoundThroughInlinedCallersAndInlineWrappers) {
  // The kernel calls ->set_mode through a function of the same file it inlines; the driver's last
  // statement calls a header's inline wrapper of the function the trace shows.
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "net/core");
  std::filesystem::create_directories(k->path() / "include/linux");
  ASSERT_TRUE(util::write_file(k->path() / "net/core/dev.c",
                               "static void apply_mode(struct dev *d)\n{\n\td->ops->set_mode(d);\n}\n"
                               "int dev_up(struct dev *d)\n{\n\td->ops->open(d);\n\tapply_mode(d);\n\treturn 0;\n}\n"));
  ASSERT_TRUE(util::write_file(k->path() / "include/linux/wq.h",
                               "static inline bool kick(struct work *w)\n{\n\treturn kick_on(0, w);\n}\n"));
  EXPECT_EQ(crash::members_called_by(k->path(), "dev_up"), (std::set<std::string>{"open", "set_mode"}));
  Tree t("static void mode(struct dev *d)\n{\n\tstruct p *p = d->priv;\n\n\tkick(&p->w);\n}\n"
         "static struct dev_ops o = {\n\t.set_mode = mode,\n};\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::warning;
  r.headline = "WARNING: CPU: 0 PID: 1 at kernel/wq.c:10 __kick+0x3/0x40";
  r.trace = {crash::Frame{"kick_on", 0x65, 0x70, "", true, false, "", 0},
             crash::Frame{"dev_up", 0x134, 0x1b0, "", true, false, "", 0}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree", k->path());
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].function, "mode");
  EXPECT_EQ(where[0].line, 5);
}

// The driver's remove tail-calls its own function, which faults: the trace holds the callee and
// the kernel's caller; remove is the lost caller, and the put before its tail call is the cause.
TEST(CrashLocalize, ACallerLostToATailCallIsTheFunctionTheKernelCalls) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/base");
  ASSERT_TRUE(util::write_file(k->path() / "drivers/base/bus.c",
                               "static void bus_remove(struct dev *d)\n{\n\tif (d->drv->remove)\n\t\td->drv->remove(d);\n}\n"));
  Tree t("static void hw_fini(struct dev *d)\n{\n\tstruct p *p = d->priv;\n\n\tif (p->mmio)\n\t\tp->mmio = 0;\n}\n"
         "static void rm(struct dev *d)\n{\n\tthing_stop(d);\n\tthing_free(d);\n\thw_fini(d);\n}\n"
         "static struct drv dr = {\n\t.remove = rm,\n};\n");
  auto r = null_report("hw_fini", 5);
  r.kind = crash::CrashKind::general_protection;
  r.trace = {crash::Frame{"bus_remove", 0x40, 0xa0, "", true, false, "", 0}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree", k->path());
  ASSERT_EQ(where.size(), 2u);
  EXPECT_EQ(where[1].function, "rm");
  EXPECT_EQ(where[1].line, 12);
  EXPECT_EQ(where[1].role, "caller");
  EXPECT_EQ(where[1].inferred, "tail-call");
  auto h = crash::hypothesize(r, where, t.path(), frees_only);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].set_line, 11);
  // The kernel calls the faulting function itself through the member: nothing was lost.
  Tree d("static void rm(struct dev *d)\n{\n\tstruct p *p = d->priv;\n\n\tif (p->mmio)\n\t\tp->mmio = 0;\n}\n"
         "static struct drv dr = {\n\t.remove = rm,\n};\n");
  auto rd = null_report("rm", 5);
  rd.trace = r.trace;
  EXPECT_EQ(crash::localize(rd, {"drv"}, d.path(), "/autodriver/tree", k->path()).size(), 1u);
}

TEST(CrashReport, SevenXsWarningHeadline) {
  auto r = only("console/7.3-warning-disable-twice.txt");
  EXPECT_EQ(r.kind, crash::CrashKind::warning);
  EXPECT_EQ(r.detail, "drivers/pci/pci.c:2238");
  EXPECT_EQ(r.title, "WARNING in pci_disable_device");
  EXPECT_EQ(r.task, "rmmod");
  EXPECT_EQ(r.release, "7.3.4+deb13-amd64");
  ASSERT_TRUE(r.rip.has_value());
  EXPECT_EQ(r.rip->function, "pci_disable_device");
}

TEST(CrashLock, WhichCallsTakeALockIsLearnedFromTheKernelsDrivers) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/a");
  // thing_lock(&x->l) is given back with thing_unlock in the same function; pin(x) is followed
  // by pin_more(x) only half the time: not scoped.
  std::string c;
  for (int i = 0; i < 9; ++i)
    c += "static int f" + std::to_string(i) +
         "(struct t *x, unsigned long fl)\n{\n\tthing_lock(&x->l, fl);\n\tx->n++;\n\tthing_unlock(&x->l, fl);\n"
         "\tpin(x);\n" +
         (i % 2 ? "\tpin_more(x);\n" : "") + "\treturn 0;\n}\n";
  ASSERT_TRUE(util::write_file(k->path() / "drivers/a/x.c", c));
  auto p = crash::scoped_pair(k->path(), "thing_lock");
  EXPECT_EQ(p.release, "thing_unlock");
  EXPECT_EQ(p.calls, 9);
  EXPECT_EQ(p.released, 9);
  EXPECT_TRUE(p.scoped());
  EXPECT_TRUE(p.release_takes_all_args());
  EXPECT_FALSE(crash::scoped_pair(k->path(), "pin").scoped());
  EXPECT_FALSE(crash::scoped_pair(k->path(), "no_such_call").scoped());
  EXPECT_TRUE(crash::same_lock("& priv -> lock", "&p->lock"));
  EXPECT_TRUE(crash::same_lock("&mll.lock", "& mll . lock"));
  EXPECT_FALSE(crash::same_lock("&a.lock", "&b.lock"));
  EXPECT_FALSE(crash::same_lock("&p->lock", "&p->other"));
}

namespace {

crash::ScopedPair mutex_pair(const std::string& acquire) {
  if (acquire == "mutex_lock" || acquire == "mutex_lock_interruptible") return {acquire, "mutex_unlock", 100, 99, 0};
  if (acquire == "spin_lock_irqsave") return {acquire, "spin_unlock_irqrestore", 100, 98, 97};
  return {acquire, "", 100, 0, 0};
}

std::vector<int> held_lines(const std::string& code, const std::string& acquire) {
  auto t = csrc::tokenize(code);
  std::vector<int> out;
  for (const auto& u : csrc::find_units(t))
    for (const auto& h : crash::held_exits(t, u, mutex_pair(acquire))) out.push_back(h.exit_line);
  return out;
}

} // namespace

TEST(CrashLock, ExitsThatLeaveTheLockHeld) {
  // An unbraced early return, a goto past the unlock, and the end of the body.
  const std::string a = "int f(struct s *p)\n{\n\tmutex_lock(&p->m);\n\tif (p->n)\n\t\treturn 0;\n"
                        "\tif (p->k)\n\t\tgoto out;\n\tmutex_unlock(&p->m);\nout:\n\treturn 1;\n}\n"
                        "void g(struct s *p)\n{\n\tmutex_lock(&p->m);\n\tp->n = 0;\n}\n";
  EXPECT_EQ(held_lines(a, "mutex_lock"), (std::vector<int>{5, 7, 16}));
  // A goto to the unlock, a failed interruptible lock (both forms), a return after the unlock.
  const std::string b = "int f(struct s *p)\n{\n\tint ret;\n\tif (mutex_lock_interruptible(&p->m))\n\t\treturn -EINTR;\n"
                        "\tif (p->n)\n\t\tgoto unlock;\n\tp->n = 1;\nunlock:\n\tmutex_unlock(&p->m);\n\treturn 0;\n}\n"
                        "int g(struct s *p)\n{\n\tint ret = 0;\n\tret = mutex_lock_interruptible(&p->m);\n\tif (ret)\n"
                        "\t\treturn ret;\n\tmutex_unlock(&p->m);\n\treturn ret;\n}\n";
  EXPECT_TRUE(held_lines(b, "mutex_lock_interruptible").empty());
  // An unlock in one switch case does not cover another case's return; an unlock only under an if covers nothing.
  const std::string c = "int f(struct s *p, int x)\n{\n\tmutex_lock(&p->m);\n\tswitch (x) {\n\tcase 1:\n"
                        "\t\tmutex_unlock(&p->m);\n\t\treturn 1;\n\tdefault:\n\t\treturn 2;\n\t}\n}\n"
                        "int g(struct s *p)\n{\n\tmutex_lock(&p->m);\n\tif (p->n)\n\t\tmutex_unlock(&p->m);\n\treturn 0;\n}\n";
  EXPECT_EQ(held_lines(c, "mutex_lock"), (std::vector<int>{9, 11, 17}));
  // The release gets all the acquire's arguments when the kernel's drivers pass them all.
  auto t = csrc::tokenize("void f(struct s *p)\n{\n\tunsigned long fl;\n\tspin_lock_irqsave(&p->l, fl);\n\tif (p->n)\n"
                          "\t\treturn;\n\tspin_unlock_irqrestore(&p->l, fl);\n}\n");
  auto units = csrc::find_units(t);
  ASSERT_EQ(units.size(), 1u);
  auto held = crash::held_exits(t, units[0], mutex_pair("spin_lock_irqsave"));
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].release_call, "spin_unlock_irqrestore(&p->l, fl)");
  EXPECT_EQ(held[0].lock, "&p->l");
  EXPECT_EQ(held[0].acquire_line, 4);
  EXPECT_TRUE(held[0].released_elsewhere);
}

TEST(CrashRepair, AHungTaskOnALockLeftHeldGetsTheUnlock) {
  Tree t("static ssize_t rd(struct file *f)\n{\n\tstruct s *st = f->private_data;\n\n\tmutex_lock(&st->lock);\n"
         "\tif (st->done)\n\t\treturn 0;\n\tst->done = 1;\n\tmutex_unlock(&st->lock);\n\treturn 1;\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::hung_task;
  r.headline = "INFO: task cat:153 blocked for more than 15 seconds.";
  r.trace = {crash::Frame{"__mutex_lock.constprop.0", 0x37d, 0x6f0, "", true, false, "", 0},
             crash::Frame{"rd", 0x5d, 0xd0, "drv", true, false, "/autodriver/tree/drv.c", 5}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), {}, mutex_pair);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "missing-unlock");
  EXPECT_EQ(h[0].statement, "rd() returns at drv.c:7 with &st->lock held (taken with mutex_lock() at line 5, released with "
                            "mutex_unlock() on its other exits); rd() then blocks taking it at drv.c:5");
  crash::rank_by_hypotheses(where, h);
  ASSERT_FALSE(where.empty());
  EXPECT_EQ(where[0].role, "cause");
  EXPECT_EQ(where[0].line, 7);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_EQ(reps[0].new_text,
            "static ssize_t rd(struct file *f)\n{\n\tstruct s *st = f->private_data;\n\n\tmutex_lock(&st->lock);\n"
            "\tif (st->done) {\n\t\tmutex_unlock(&st->lock);\n\t\treturn 0;\n\t}\n\tst->done = 1;\n"
            "\tmutex_unlock(&st->lock);\n\treturn 1;\n}\n");
  // Without the kernel's word that mutex_lock is given back in the same function, no such claim.
  auto h2 = crash::hypothesize(r, where, t.path(), {}, {});
  ASSERT_FALSE(h2.empty());
  EXPECT_EQ(h2[0].kind, "blocked");
}

TEST(CrashRepair, ASleepUnderASpinlockMovesAfterTheLockIsGivenBack) {
  Tree t("static void down(struct s *tp)\n{\n\tunsigned long flags;\n\n\tspin_lock_irqsave(&tp->lock, flags);\n"
         "\tstop(tp);\n\tmsleep(2);\n\tclean(tp);\n\tspin_unlock_irqrestore(&tp->lock, flags);\n\tfinish(tp);\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::bug_other;
  r.headline = "BUG: scheduling while atomic: ip/223/0x00000002";
  r.trace = {crash::Frame{"msleep", 0x2b, 0x40, "", true, false, "", 0},
             crash::Frame{"down", 0xa5, 0x2a0, "drv", true, false, "/autodriver/tree/drv.c", 7}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), {}, mutex_pair);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "sleep-in-atomic");
  EXPECT_EQ(h[0].line, 7);
  EXPECT_EQ(h[0].set_line, 5);
  EXPECT_EQ(h[0].callee, "msleep");
  EXPECT_EQ(h[0].call, "spin_unlock_irqrestore(&tp->lock, flags)");
  EXPECT_EQ(h[0].variable, "&tp->lock");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_EQ(reps[0].new_text,
            "static void down(struct s *tp)\n{\n\tunsigned long flags;\n\n\tspin_lock_irqsave(&tp->lock, flags);\n"
            "\tstop(tp);\n\tclean(tp);\n\tspin_unlock_irqrestore(&tp->lock, flags);\n\tmsleep(2);\n"
            "\tfinish(tp);\n}\n");
  // Given back before the statement: not held there, no claim; nor without the kernel's pairs.
  Tree u("static void down(struct s *tp)\n{\n\tunsigned long flags;\n\n\tspin_lock_irqsave(&tp->lock, flags);\n"
         "\tspin_unlock_irqrestore(&tp->lock, flags);\n\tmsleep(2);\n\tspin_lock_irqsave(&tp->lock, flags);\n"
         "\tspin_unlock_irqrestore(&tp->lock, flags);\n}\n");
  auto where_u = crash::localize(r, {"drv"}, u.path(), "/autodriver/tree");
  for (const auto& x : crash::hypothesize(r, where_u, u.path(), {}, mutex_pair)) EXPECT_NE(x.kind, "sleep-in-atomic");
  for (const auto& x : crash::hypothesize(r, where, t.path(), {}, {})) EXPECT_NE(x.kind, "sleep-in-atomic");
}

TEST(CrashRepair, AMemberHandedOnThatNothingInitialisesGetsTheKernelsInitialiser) {
  // The kernel's drivers initialise the list heads they hand to qadd() and the work they hand to
  // kick_work() (with the handler that gets the object back); a use of each alone teaches nothing.
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/net");
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(util::write_file(k->path() / ("drivers/net/k" + std::to_string(i) + ".c"),
                                 "struct p { struct list_head l" + std::to_string(i) +
                                     "; struct work_struct w; };\n"
                                     "static void h(struct work_struct *w)\n{\n\tstruct p *q = container_of(w, struct p, w);\n}\n"
                                     "static int probe(struct p *x, struct list_head *n)\n{\n\tINIT_LIST_HEAD(&x->l" +
                                     std::to_string(i) + ");\n\tINIT_WORK(&x->w, h);\n\tqadd(n, &x->l" + std::to_string(i) +
                                     ");\n\tkick_work(&x->w);\n"
                                     "\tcancel_work_sync(&x->w);\n\treturn 0;\n}\n"));
  auto list = crash::member_init(k->path(), "qadd", 1);
  EXPECT_EQ(list.init, "INIT_LIST_HEAD");
  EXPECT_EQ(list.arity, 1);
  EXPECT_TRUE(list.learned());
  auto work = crash::member_init(k->path(), "kick_work", 0);
  EXPECT_EQ(work.init, "INIT_WORK"); // not cancel_work_sync: no "init" or "setup" in its name
  EXPECT_EQ(work.arity, 2);
  EXPECT_TRUE(work.handler);
  EXPECT_FALSE(crash::member_init(k->path(), "qadd", 0).learned()); // `n` is no member
  const std::string drv = "struct adapter { struct list_head pool; struct work_struct mode; int x; };\n"
                          "static void mode_work(struct work_struct *work)\n{\n"
                          "\tstruct adapter *a = container_of(work, struct adapter, mode);\n\n\ta->x = 1;\n}\n"
                          "static int drv_probe(struct pci_dev *pdev)\n{\n\tstruct adapter *a;\n\n"
                          "\ta = kzalloc(sizeof(*a), GFP_KERNEL);\n\tif (!a)\n\t\treturn -ENOMEM;\n"
                          "\tqadd(&pdev->node, &a->pool);\n\treturn 0;\n}\n"
                          "static void set_mode(struct adapter *a)\n{\n\tkick_work(&a->mode);\n}\n"
                          "static struct pci_driver d = { .probe = drv_probe };\n";
  Tree t(drv);
  auto inits = crash::init_oracle(k->path());
  crash::CrashReport r;
  r.kind = crash::CrashKind::bug_on;
  r.headline = "kernel BUG at lib/list_debug.c:29!";
  r.trace = {crash::Frame{"__list_add_valid_or_report", 0x5d, 0xd0, "", true, false, "", 0},
             crash::Frame{"drv_probe", 0x5d, 0xd0, "drv", true, false, "/autodriver/tree/drv.c", 15}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), {}, {}, {}, {}, {}, {}, inits);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "never-initialised");
  EXPECT_EQ(h[0].call, "INIT_LIST_HEAD(&a->pool);");
  EXPECT_EQ(h[0].set_line, 14);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\t\treturn -ENOMEM;\n\tINIT_LIST_HEAD(&a->pool);\n\tqadd(&pdev->node, &a->pool);\n"),
            std::string::npos)
      << reps[0].new_text;
  // The work, with the handler that takes the object back from it.
  r.kind = crash::CrashKind::warning;
  r.headline = "WARNING: CPU: 0 PID: 1 at kernel/workqueue.c:2360 __queue_work+0x3a/0x400";
  r.trace = {crash::Frame{"__queue_work", 0x3a, 0x400, "", true, false, "", 0},
             crash::Frame{"set_mode", 0x1d, 0x40, "drv", true, false, "/autodriver/tree/drv.c", 20}};
  where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  h = crash::hypothesize(r, where, t.path(), {}, {}, {}, {}, {}, {}, inits);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "never-initialised");
  EXPECT_EQ(h[0].call, "INIT_WORK(&a->mode, mode_work);");
  // Two functions take the object back from the member: the handler is chosen at run time, no claim.
  Tree two(drv + "static void other_mode(struct work_struct *work)\n{\n\tstruct adapter *a = container_of(work, struct "
                 "adapter, mode);\n\n\ta->x = 2;\n}\n");
  where = crash::localize(r, {"drv"}, two.path(), "/autodriver/tree");
  for (const auto& x : crash::hypothesize(r, where, two.path(), {}, {}, {}, {}, {}, {}, inits))
    EXPECT_NE(x.kind, "never-initialised");
  // Initialised somewhere in the driver: no claim.
  Tree done(drv.substr(0, drv.find("\tqadd(")) + "\tINIT_LIST_HEAD(&a->pool);\n" + drv.substr(drv.find("\tqadd(")));
  r.kind = crash::CrashKind::bug_on;
  r.trace = {crash::Frame{"__list_add_valid_or_report", 0x5d, 0xd0, "", true, false, "", 0},
             crash::Frame{"drv_probe", 0x5d, 0xd0, "drv", true, false, "/autodriver/tree/drv.c", 16}};
  where = crash::localize(r, {"drv"}, done.path(), "/autodriver/tree");
  for (const auto& x : crash::hypothesize(r, where, done.path(), {}, {}, {}, {}, {}, {}, inits))
    EXPECT_NE(x.kind, "never-initialised");
}

TEST(CrashRepair, MemoryFreedWithAnotherAllocatorsReleaseGetsTheKernelsOne) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/net");
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(util::write_file(k->path() / ("drivers/net/k" + std::to_string(i) + ".c"),
                                 "static int up(struct r *x)\n{\n\tx->info" + std::to_string(i) +
                                     " = bigalloc(64);\n\treturn 0;\n}\nstatic void down(struct r *x)\n{\n\tbigfree(x->info" +
                                     std::to_string(i) + ");\n}\n"));
  auto how = crash::alloc_release(k->path(), "bigalloc");
  EXPECT_EQ(how.release, "bigfree");
  EXPECT_TRUE(how.learned());
  EXPECT_TRUE(how.foreign("kfree"));
  Tree t("static int setup(struct ring *txdr)\n{\n\ttxdr->info = bigalloc(64);\n\treturn txdr->info ? 0 : -ENOMEM;\n}\n"
         "static void teardown(struct ring *ring)\n{\n\tkfree(ring->info);\n\tring->info = NULL;\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::paging_request;
  r.headline = "BUG: unable to handle page fault for address: ffffeb0200018a48";
  r.trace = {crash::Frame{"kfree", 0x72, 0x370, "", true, false, "", 0},
             crash::Frame{"teardown", 0x1d, 0x40, "drv", true, false, "/autodriver/tree/drv.c", 8}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path(), {}, {}, {}, {}, {}, {}, {}, crash::alloc_oracle(k->path()));
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "foreign-release");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\tbigfree(ring->info);\n\tring->info = NULL;\n"), std::string::npos) << reps[0].new_text;
  // The kernel's own release: nothing to say.
  Tree ok("static int setup(struct ring *txdr)\n{\n\ttxdr->info = bigalloc(64);\n\treturn 0;\n}\n"
          "static void teardown(struct ring *ring)\n{\n\tbigfree(ring->info);\n}\n");
  r.trace[0].function = "bigfree";
  where = crash::localize(r, {"drv"}, ok.path(), "/autodriver/tree");
  for (const auto& x : crash::hypothesize(r, where, ok.path(), {}, {}, {}, {}, {}, {}, {}, crash::alloc_oracle(k->path())))
    EXPECT_NE(x.kind, "foreign-release");
}

TEST(CrashRepair, AStackBufferAFormattedWriteOverrunsInAnInlinedCalleeGrows) {
  Tree t("struct pcm_rec {\n\tconst char *suffix;\n};\n"
         "static const struct pcm_rec recs[] = {\n\t{ .suffix = NULL },\n\t{ .suffix = \"MIC2 ADC\" },\n};\n"
         "static int pcm1(const struct pcm_rec *rec, int n)\n{\n\tchar name[16];\n\tchar ok[8];\n\n"
         "\tif (rec->suffix)\n\t\tsprintf(name, \"Intel ICH - %s\", rec->suffix);\n\telse\n\t\tstrcpy(name, \"Intel ICH\");\n"
         "\tsprintf(ok, \"%d\", n & 7);\n\treturn make_pcm(name, ok);\n}\n"
         "static int probe(struct pci_dev *pci)\n{\n\treturn pcm1(&recs[1], 1);\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::panic;
  r.headline = "Kernel panic - not syncing: stack-protector: Kernel stack is corrupted in: probe+0x112c/0x1170 [drv]";
  r.detail = "stack-protector: Kernel stack is corrupted in: probe+0x112c/0x1170 [drv]";
  r.trace = {crash::Frame{"__stack_chk_fail", 0x19, 0x20, "", true, false, "", 0},
             crash::Frame{"probe", 0x112c, 0x1170, "drv", true, false, "/autodriver/tree/drv.c", 23}};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  auto h = crash::hypothesize(r, where, t.path());
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "buffer-size");
  EXPECT_EQ(h[0].function, "pcm1");
  EXPECT_EQ(h[0].variable, "name"); // 21 bytes of "Intel ICH - MIC2 ADC" with its NUL; a number counts one digit
  EXPECT_EQ(h[0].call, "32");
  EXPECT_EQ(std::count_if(h.begin(), h.end(), [](const auto& x) { return x.kind == "buffer-size"; }), 1);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\tchar name[32];\n\tchar ok[8];\n"), std::string::npos) << reps[0].new_text;
}

TEST(CrashLock, ALockTakenWithoutAnArgumentIsOneLockForAllItsCallers) {
  // rtnl_lock() and console_lock() name no lock: the same argument-less release follows them.
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/net");
  std::string c;
  for (int i = 0; i < 9; ++i)
    c += "static int f" + std::to_string(i) + "(struct t *x)\n{\n\tbig_lock();\n\tx->n = jiffies_now();\n\tbig_unlock();\n" +
         (i % 3 ? "\tkick();\n" : "") + "\treturn 0;\n}\n";
  ASSERT_TRUE(util::write_file(k->path() / "drivers/net/x.c", c));
  auto p = crash::scoped_pair(k->path(), "big_lock");
  EXPECT_EQ(p.release, "big_unlock");
  EXPECT_EQ(p.released, 9);
  EXPECT_TRUE(p.scoped());
  EXPECT_FALSE(crash::scoped_pair(k->path(), "jiffies_now").scoped()); // followed by kick() 6 of 9 times
  // Its exits: the early return leaves it held; the release call has no argument.
  auto t = csrc::tokenize("int f(struct t *x)\n{\n\tbig_lock();\n\tif (x->n)\n\t\treturn -EBUSY;\n\tbig_unlock();\n"
                          "\treturn 0;\n}\n");
  auto units = csrc::find_units(t);
  ASSERT_EQ(units.size(), 1u);
  auto held = crash::held_exits(t, units[0], p);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].exit_line, 5);
  EXPECT_EQ(held[0].lock, "");
  EXPECT_EQ(held[0].release_call, "big_unlock()");
  // A hung task blocked in it is hypothesized at that exit and repaired with the bare release.
  Tree tree("static ssize_t rd(struct file *f)\n{\n\tbig_lock();\n\tif (f->f_pos)\n\t\treturn 0;\n"
            "\tf->f_pos = 1;\n\tbig_unlock();\n\treturn 1;\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::hung_task;
  r.headline = "INFO: task cat:153 blocked for more than 15 seconds.";
  r.trace = {crash::Frame{"__mutex_lock.constprop.0", 0x37d, 0x6f0, "", true, false, "", 0},
             crash::Frame{"rd", 0x1d, 0xd0, "drv", true, false, "/autodriver/tree/drv.c", 3}};
  auto where = crash::localize(r, {"drv"}, tree.path(), "/autodriver/tree");
  auto pairs = [&](const std::string& callee) { return crash::scoped_pair(k->path(), callee); };
  auto h = crash::hypothesize(r, where, tree.path(), {}, pairs);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "missing-unlock");
  EXPECT_NE(h[0].statement.find("rd() returns at drv.c:5 with the lock big_lock() takes held"), std::string::npos)
      << h[0].statement;
  auto reps = crash::propose_repairs(h, tree.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_EQ(reps[0].new_text, "static ssize_t rd(struct file *f)\n{\n\tbig_lock();\n\tif (f->f_pos) {\n\t\tbig_unlock();\n"
                              "\t\treturn 0;\n\t}\n\tf->f_pos = 1;\n\tbig_unlock();\n\treturn 1;\n}\n");
}

TEST(CrashReport, AHungTaskOnAMutexWithTheTraceFromTheDmesgDump) {
  auto rs = crash::parse_reports(fixture("console/6.12-hung-task-mutex.txt"));
  ASSERT_FALSE(rs.empty());
  const auto& r = rs.front();
  EXPECT_EQ(r.kind, crash::CrashKind::hung_task);
  EXPECT_EQ(r.title, "INFO: task hung in mll_read");
  EXPECT_EQ(r.task, "cat");
  EXPECT_EQ(r.release, "6.12.118+deb12-amd64");
  bool driver_frame = false;
  for (const auto& f : r.trace) driver_frame = driver_frame || (f.function == "mll_read" && f.module == "misc_lock_leak");
  EXPECT_TRUE(driver_frame);
  for (const auto& x : rs) EXPECT_EQ(x.title, r.title);
}

TEST(CrashReport, LockdepsLocksWithWhereTheyWereTaken) {
  auto r = crash::parse_reports(fixture("console/lockdep-lock-held-returning.txt")).at(0);
  EXPECT_EQ(r.kind, crash::CrashKind::lockdep);
  EXPECT_EQ(r.title, "lock held when returning to user space in mll_read");
  EXPECT_EQ(r.release, "6.12.0-rc7");
  ASSERT_EQ(r.locks.size(), 1u);
  EXPECT_EQ(r.locks[0].lock, "&mll.lock");
  EXPECT_EQ(r.locks[0].at.function, "mll_read");
  EXPECT_EQ(r.locks[0].at.module, "misc_lock_leak");
  EXPECT_FALSE(r.locks[0].acquiring);
  auto d = crash::parse_reports(fixture("console/lockdep-recursive-locking.txt")).at(0);
  EXPECT_EQ(d.title, "possible deadlock in foo_poll");
  ASSERT_EQ(d.locks.size(), 4u);
  EXPECT_TRUE(d.locks[0].acquiring);
  EXPECT_EQ(d.locks[0].at.function, "foo_poll");
  EXPECT_FALSE(d.locks[1].acquiring);
  EXPECT_EQ(d.locks[1].at.function, "foo_rx");
  EXPECT_EQ(d.locks[2].lock, "(wq_completion)events");
}

TEST(CrashRepair, LockdepsLockHeldWhenReturningGetsTheUnlock) {
  Tree t("static ssize_t rd(struct file *f)\n{\n\tstruct s *st = f->private_data;\n\n\tmutex_lock(&st->lock);\n"
         "\tif (st->done)\n\t\treturn 0;\n\tst->done = 1;\n\tmutex_unlock(&st->lock);\n\treturn 1;\n}\n");
  auto r = crash::parse_reports(fixture("console/lockdep-lock-held-returning.txt")).at(0);
  r.locks[0].at = crash::Frame{"rd", 0x3d, 0x120, "drv", true, false, "/autodriver/tree/drv.c", 5};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  ASSERT_FALSE(where.empty());
  EXPECT_EQ(where[0].line, 5);
  auto h = crash::hypothesize(r, where, t.path(), {}, mutex_pair);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "missing-unlock");
  EXPECT_EQ(h[0].line, 7);
  EXPECT_NE(h[0].statement.find("lockdep: lock held when returning to user space"), std::string::npos) << h[0].statement;
}

TEST(CrashReport, AnNmiIntoAHungGuestShowsWhereItSpun) {
  auto r = crash::parse_reports(fixture("console/6.12-nmi-hang-spinlock.txt")).at(0);
  EXPECT_EQ(r.kind, crash::CrashKind::panic);
  EXPECT_TRUE(r.nmi_hang());
  EXPECT_EQ(r.title, "hang (NMI) in cp_get_stats");
  ASSERT_TRUE(r.rip);
  EXPECT_EQ(r.rip->function, "native_queued_spin_lock_slowpath");
  // The frames after the interrupted context's registers are kept.
  const crash::Frame* f = r.first_in("8139cp");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->function, "cp_get_stats");
}

TEST(CrashLock, SwitchCasesConditionalAcquiresAndGotoChains) {
  // A lock taken in one case does not reach another case's return; `if (x) lock()` is not
  // followed; `goto err` whose label jumps on to the unlock releases.
  const std::string a = "int f(struct s *p, int x)\n{\n\tswitch (x) {\n\tcase 1:\n\t\tmutex_lock(&p->m);\n"
                        "\t\tp->n = 1;\n\t\tmutex_unlock(&p->m);\n\t\tbreak;\n\tcase 2:\n\t\treturn 2;\n\t}\n"
                        "\tif (x > 3)\n\t\tmutex_lock(&p->m);\n\treturn 0;\n}\n"
                        "int g(struct s *p)\n{\n\tmutex_lock(&p->m);\n\tif (p->n)\n\t\tgoto err;\n"
                        "out:\n\tmutex_unlock(&p->m);\n\treturn 0;\nerr:\n\tp->n = 0;\n\tgoto out;\n}\n";
  EXPECT_TRUE(held_lines(a, "mutex_lock").empty());
}

TEST(CrashRepair, TheUnlockGoesBeforeWhatTheKernelNeverCallsUnderTheLock) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/a");
  std::string c;
  for (int i = 0; i < 9; ++i)
    c += "static void f" + std::to_string(i) +
         "(struct t *x)\n{\n\tthing_lock(&x->l);\n\tpoke(x);\n\tthing_unlock(&x->l);\n\tsleepy(x);\n}\n";
  ASSERT_TRUE(util::write_file(k->path() / "drivers/a/x.c", c));
  auto p = crash::scoped_pair(k->path(), "thing_lock");
  ASSERT_TRUE(p.scoped());
  EXPECT_TRUE(crash::under_lock(k->path(), p, "sleepy").never_under());
  EXPECT_FALSE(crash::under_lock(k->path(), p, "poke").never_under());
  Tree t("static int cl(struct t *p)\n{\n\tthing_lock(&p->l);\n\tpoke(p);\n\n\tsleepy(p);\n\treturn 0;\n}\n");
  crash::Hypothesis h;
  h.kind = "missing-unlock";
  h.function = "cl";
  h.file = "drv.c";
  h.line = 7;
  h.variable = "&p->l";
  h.set_line = 3;
  h.callee = "thing_unlock";
  h.call = "thing_unlock(&p->l)";
  auto reps = crash::propose_repairs({h}, t.path(), k->path());
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_EQ(reps[0].new_text,
            "static int cl(struct t *p)\n{\n\tthing_lock(&p->l);\n\tpoke(p);\n\n\tthing_unlock(&p->l);\n\tsleepy(p);\n\treturn "
            "0;\n}\n");
  // Without the kernel's source: before the exit.
  auto plain = crash::propose_repairs({h}, t.path(), {});
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_NE(plain[0].new_text.find("\tthing_unlock(&p->l);\n\treturn 0;"), std::string::npos);
}

TEST(CrashLocalize, ADecodedReportOfABuiltInDriverIsPlacedInTheTreeByItsPath) {
  auto r = crash::parse_reports(fixture("console/syzbot-hung-task-decoded.txt")).at(0);
  EXPECT_EQ(r.title, "INFO: task hung in mll_read");
  Tree t("static ssize_t mll_read(void)\n{\n\treturn 0;\n}\n");
  ASSERT_TRUE(util::write_file(t.path() / "misc_lock_leak.c", "x"));
  auto where = crash::localize(r, {}, t.path(), "/autodriver/tree");
  ASSERT_FALSE(where.empty());
  EXPECT_EQ(where[0].function, "mll_read");
  EXPECT_EQ(where[0].file, "misc_lock_leak.c");
  EXPECT_EQ(where[0].line, 30);
  EXPECT_TRUE(where[0].module.empty());
  // Frames whose path names no file of the tree stay the kernel's.
  Tree other("int x;\n");
  EXPECT_TRUE(crash::localize(r, {}, other.path(), "/autodriver/tree").empty());
}

TEST(CrashRepair, AFailedInitThatLeavesARegistrationGetsItsUndo) {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "drivers/a");
  // thing_register(&d) is undone by thing_unregister(&d) in the cleanup after a label; the
  // cleanup its own failure jumps to (err_free) does not count.
  std::string c;
  for (int i = 0; i < 9; ++i)
    c += "static int p" + std::to_string(i) +
         "(struct d *d)\n{\n\tint ret = thing_register(&d->x);\n\tif (ret)\n\t\tgoto err_free;\n\tret = more(d);\n"
         "\tif (ret)\n\t\tgoto err_unreg;\n\treturn 0;\nerr_unreg:\n\tthing_unregister(&d->x);\nerr_free:\n"
         "\tthing_free(&d->x);\n\treturn ret;\n}\n";
  ASSERT_TRUE(util::write_file(k->path() / "drivers/a/x.c", c));
  auto p = crash::undo_pair(k->path(), "thing_register");
  EXPECT_EQ(p.release, "thing_unregister");
  EXPECT_EQ(p.released, 9);
  EXPECT_TRUE(crash::undone(p));
  Tree t("static struct d dev;\nstatic int __init x_init(void)\n{\n\tint ret;\n\n\tret = thing_register(&dev.x);\n"
         "\tif (ret)\n\t\treturn ret;\n\tret = more(&dev);\n\tif (ret)\n\t\treturn ret;\n\treturn 0;\n}\nmodule_init(x_init);\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::paging_request;
  r.headline = "BUG: unable to handle page fault for address: ffffffffc020f028";
  r.registers["CR2"] = "ffffffffc020f028";
  r.rip = crash::Frame{"misc_seq_show", 9, 0x40, "", true, false, "", 0};
  auto where = crash::localize(r, {"drv"}, t.path(), "/autodriver/tree");
  EXPECT_TRUE(where.empty());
  auto h = crash::hypothesize(r, where, t.path(), {}, {}, crash::undo_oracle(k->path()));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].kind, "missing-cleanup");
  EXPECT_EQ(h[0].line, 11);
  EXPECT_EQ(h[0].call, "thing_unregister(&dev.x)");
  crash::rank_by_hypotheses(where, h);
  ASSERT_EQ(where.size(), 1u);
  EXPECT_EQ(where[0].role, "cause");
  auto reps = crash::propose_repairs(h, t.path(), k->path());
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\tif (ret) {\n\t\tthing_unregister(&dev.x);\n\t\treturn ret;\n\t}\n\treturn 0;"),
            std::string::npos)
      << reps[0].new_text;
  // A fault elsewhere than a module's memory: no such claim.
  r.registers["CR2"] = "0000000000000008";
  r.headline = "BUG: unable to handle page fault for address: 0000000000000008";
  EXPECT_TRUE(crash::hypothesize(r, {}, t.path(), {}, {}, crash::undo_oracle(k->path())).empty());
}

TEST(CrashLock, AFunctionCalledWithTheLockHeldHandsItBack) {
  const std::string a = "static int wait_ready(struct s *p, unsigned long *fl)\n{\n\twhile (!ready(p)) {\n"
                        "\t\tspin_unlock_irqrestore(&p->l, *fl);\n\t\tmsleep(1);\n\t\tspin_lock_irqsave(&p->l, *fl);\n"
                        "\t\tif (++p->n > 200)\n\t\t\treturn 0;\n\t}\n\treturn 1;\n}\n";
  EXPECT_TRUE(held_lines(a, "spin_lock_irqsave").empty());
}

TEST(BootCrash, TheSameBugUnderAnotherKernelFunctionIsTheSameCrash) {
  // vhba's unload on 7.3 and, unchanged, on 6.12: the kernels inline differently, so the titles
  // name different kernel functions; both crash under the driver's own vhba_exit.
  auto report = [](const std::string& title, const std::string& inner, const std::string& driver_fn) {
    crash::CrashReport r;
    r.kind = crash::CrashKind::general_protection;
    r.title = title;
    r.rip = crash::Frame{"kfree", 0x69, 0x3c0, ""};
    r.trace = {crash::Frame{inner, 0x16b, 0x210, ""}, crash::Frame{driver_fn, 0x1c, 0xc10, "vhba"}};
    return r;
  };
  loop::BootCrash c;
  c.report = report("general protection fault in device_release_driver_internal", "device_release_driver_internal", "vhba_exit");
  c.modules = {"vhba"};
  EXPECT_TRUE(loop::same_crash(c, {report("general protection fault in platform_remove", "platform_remove", "vhba_exit")}));
  // Another function of the driver, another kind, or no crash: not the same one.
  EXPECT_FALSE(loop::same_crash(c, {report("general protection fault in platform_remove", "platform_remove", "vhba_init")}));
  auto null = report("BUG: kernel NULL pointer dereference in platform_remove", "platform_remove", "vhba_exit");
  null.kind = crash::CrashKind::null_deref;
  EXPECT_FALSE(loop::same_crash(c, {null}));
  // A report that printed no stack names no function: the same crash as one that did.
  EXPECT_TRUE(loop::same_crash_title("INFO: task hung", "INFO: task hung in cp_init_one"));
  EXPECT_TRUE(loop::same_crash_title("INFO: task hung in cp_init_one", "INFO: task hung in cp_init_one"));
  EXPECT_FALSE(loop::same_crash_title("INFO: task hung in cp_init_one", "INFO: task hung in cp_remove_one"));
  EXPECT_FALSE(loop::same_crash_title("INFO: task hung", "INFO: task hung up"));
  EXPECT_TRUE(loop::same_crash_title("Oops in __run_timers", "BUG: unable to handle page fault in __run_timers"));
  EXPECT_FALSE(loop::same_crash_title("Oops in __run_timers", "BUG: unable to handle page fault in call_timer_fn"));
  EXPECT_FALSE(loop::same_crash_title("kernel BUG in f", "BUG: unable to handle page fault in f"));
  EXPECT_FALSE(loop::same_crash(c, {}));
  // The same title is the same crash whatever the frames.
  EXPECT_TRUE(loop::same_crash(c, {report(c.report.title, "x", "y")}));
}

// KFENCE (Debian's 6.12 images have it, off until kfence.sample_interval is set): its report names
// the access, the faulting stack without a "Call Trace:" header, and lower-case track headers.
TEST(CrashReport, KfenceReportsAUseAfterFreeWithItsStacks) {
  auto rs = crash::parse_reports(
      "[   33.87] ==================================================================\n"
      "[   33.87] BUG: KFENCE: use-after-free read in cp_close+0xb3/0x143 [8139cp]\n"
      "[   33.87] \n[   33.87] Use-after-free read at 0xffff8c3f2e2a0000 (in kfence-#79):\n"
      "[   33.87]  cp_close+0xb3/0x143 [8139cp]\n[   33.87]  __dev_close_many+0xa8/0x110\n"
      "[   33.87] \n[   33.87] kfence-#79: 0xffff8c3f2e2a0000-0xffff8c3f2e2a001f, size=32, cache=kmalloc-32\n"
      "[   33.87] \n[   33.87] allocated by task 488 on cpu 2 at 33.871326s:\n[   33.87]  cp_init_one+0xfe/0x738 [8139cp]\n"
      "[   33.87]  local_pci_probe+0x42/0x80\n"
      "[   33.87] \n[   33.87] freed by task 488 on cpu 2 at 33.871358s:\n[   33.87]  cp_remove_one+0xa8/0x143 [8139cp]\n"
      "[   33.87]  pci_device_remove+0x3b/0xa0\n"
      "[   33.87] \n[   33.87] CPU: 2 PID: 488 Comm: rmmod Tainted: G    B   OE          6.12.118+deb12-amd64 #1\n"
      "[   33.87] ==================================================================\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].kind, crash::CrashKind::kasan_use_after_free);
  EXPECT_EQ(rs[0].title, "KFENCE: use-after-free read in cp_close");
  ASSERT_EQ(rs[0].trace.size(), 2u);
  EXPECT_EQ(rs[0].trace[0].function, "cp_close");
  ASSERT_FALSE(rs[0].alloc_stack.empty());
  EXPECT_EQ(rs[0].alloc_stack[0].function, "cp_init_one");
  ASSERT_FALSE(rs[0].free_stack.empty());
  EXPECT_EQ(rs[0].free_stack[0].function, "cp_remove_one");
  auto df = crash::parse_reports("[ 1.0] BUG: KFENCE: invalid free in e_remove+0xdc/0x171 [drv]\n[ 1.0] \n"
                                 "[ 1.0] Invalid free of 0xffff8c3f2e2a4000 (in kfence-#81):\n[ 1.0]  e_remove+0xdc/0x171 [drv]\n"
                                 "[ 1.0] ==================================================================\n");
  ASSERT_EQ(df.size(), 1u);
  EXPECT_EQ(df[0].kind, crash::CrashKind::kasan_double_free);
  EXPECT_EQ(df[0].title, "KFENCE: invalid free in e_remove");
}

// "Modules linked in:" marks a module the kernel is unloading with `-` after its taint letters.
TEST(CrashReport, TheModulesBeingUnloaded) {
  auto rs = crash::parse_reports("[    6.95] BUG: unable to handle page fault for address: ffffc900000550d9\n"
                                 "[    6.96] RIP: 0010:cp_start_xmit+0x30f/0x980 [8139cp]\n"
                                 "[    6.97] Call Trace:\n[    6.97]  <TASK>\n[    6.97]  dev_hard_start_xmit+0x64/0x1d0\n"
                                 "[    6.97]  </TASK>\n"
                                 "[    6.98] Modules linked in: 8139cp(OE-) mii(+) pvpanic_pci pvpanic snd(E)\n"
                                 "[    6.98] CR2: ffffc900000550d9\n[    6.99] ---[ end trace 0000000000000000 ]---\n");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].unloading, std::vector<std::string>{"8139cp"});
  EXPECT_EQ(rs[0].trace.size(), 1u);
  EXPECT_EQ(rs[0].registers["CR2"], "ffffc900000550d9");
}

// The kernel's headers state registration pairs through module_driver(): each driver using its
// bus's macro registers and unregisters so, and counts for the pair.
TEST(CrashTeardown, ThePairsABusMacroStatesCountForTheRegistration) {
  auto m = crash::module_driver_macro(
      "#define module_foo_driver(__foo_driver) \\\n\tmodule_driver(__foo_driver, foo_register_driver, \\\n"
      "\t\t\tfoo_unregister_driver)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->macro, "module_foo_driver");
  EXPECT_EQ(m->setup, "foo_register_driver");
  EXPECT_EQ(m->teardown, "foo_unregister_driver");
  EXPECT_FALSE(crash::module_driver_macro("#define module_driver(__driver, __register, __unregister, ...) x"));
  EXPECT_FALSE(crash::module_driver_macro("#define FOO 1"));
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  ASSERT_TRUE(k);
  std::filesystem::create_directories(k->path() / "include/linux");
  std::filesystem::create_directories(k->path() / "drivers/foo");
  ASSERT_TRUE(util::write_file(k->path() / "include/linux/foo.h",
                               "#define module_foo_driver(__foo_driver) \\\n\tmodule_driver(__foo_driver, foo_register_driver, "
                               "\\\n\t\t\tfoo_unregister_driver)\n"));
  for (int i = 0; i < 9; ++i)
    ASSERT_TRUE(util::write_file(k->path() / "drivers/foo" / ("f" + std::to_string(i) + ".c"),
                                 "static struct foo_driver d = {\n\t.probe = p,\n};\nmodule_foo_driver(d);\n"));
  EXPECT_EQ(crash::macro_uses(k->path(), "module_foo_driver"), 9);
  auto p = crash::teardown_pair(k->path(), "foo_register_driver");
  EXPECT_EQ(p.release, "foo_unregister_driver");
  EXPECT_EQ(p.released, 9);
  EXPECT_TRUE(crash::torn_down(p));
}

// A teardown missing from remove leaves the device registered while the module unloads: one boot
// hits the kernel's BUG in free_netdev(), the next a transmit through the unmapped registers. For
// that cause either crash reproduces the other; for any other cause the title must match.
TEST(CrashRepair, ATeardownLeftOutReproducesByAnyCrashWhileTheModuleUnloads) {
  crash::CrashReport bug;
  bug.kind = crash::CrashKind::bug_on;
  bug.title = "kernel BUG in free_netdev";
  bug.unloading = {"8139cp"};
  crash::CrashReport xmit;
  xmit.kind = crash::CrashKind::paging_request;
  xmit.title = "BUG: unable to handle page fault in cp_start_xmit";
  xmit.unloading = {"8139cp"};
  crash::Hypothesis teardown{"missing-teardown", "", "cp_remove_one", "8139cp.c", 2000, {}};
  crash::Hypothesis order{"use-after-release", "", "cp_remove_one", "8139cp.c", 2000, {}};
  EXPECT_TRUE(loop::reproduced(bug, {teardown}, {xmit}));
  EXPECT_TRUE(loop::reproduced(bug, {order}, {bug}));
  EXPECT_FALSE(loop::reproduced(bug, {order}, {xmit}));
  EXPECT_FALSE(loop::reproduced(bug, {teardown}, {}));
  // A crash outside the unload is another crash.
  crash::CrashReport probe = xmit;
  probe.unloading.clear();
  EXPECT_FALSE(loop::reproduced(bug, {teardown}, {probe}));
}

// Memory sized too small breaks whatever the next check or the next neighbour is: the allocator's
// report one boot, the kernel's BUG in the neighbour's own code the next; no crash, no reproduction.
TEST(CrashRepair, MemorySizedTooSmallReproducesByAnyCrash) {
  crash::CrashReport slab;
  slab.kind = crash::CrashKind::slab;
  slab.title = "BUG: slab Freechain corrupt in vfree";
  crash::CrashReport neighbour;
  neighbour.kind = crash::CrashKind::bug_on;
  neighbour.title = "kernel BUG in balloon_page_dequeue";
  crash::Hypothesis size{"alloc-size", "", "init_vqs", "virtio_balloon.c", 500, {}};
  crash::Hypothesis order{"use-after-release", "", "rm", "virtio_balloon.c", 500, {}};
  EXPECT_TRUE(loop::reproduced(slab, {size}, {neighbour}));
  EXPECT_FALSE(loop::reproduced(slab, {size}, {}));
  EXPECT_FALSE(loop::reproduced(slab, {order}, {neighbour}));
}

// Freed memory read: a WARNING the poisoned value causes one boot, KFENCE's own report the next
// (it samples); for a release out of order, the same driver function in both reproduces it.
TEST(CrashRepair, AReleaseOutOfOrderReproducesByAnyReportInTheSameDriverFunction) {
  crash::CrashReport warn;
  warn.kind = crash::CrashKind::warning;
  warn.title = "WARNING in ida_free";
  warn.rip = crash::Frame{"ida_free", 0xe6, 0x140, "", true, false, "", 0};
  warn.trace = {crash::Frame{"remove_common", 0x60, 0xa0, "virtio_rng", true, false, "", 0}};
  crash::CrashReport kfence;
  kfence.kind = crash::CrashKind::kasan_use_after_free; // KFENCE reports parse as KASAN's kinds
  kfence.title = "KFENCE: use-after-free read in remove_common";
  kfence.rip = crash::Frame{"remove_common", 0x60, 0xa0, "virtio_rng", true, false, "", 0};
  crash::CrashReport elsewhere = kfence;
  elsewhere.rip->function = "virtrng_probe";
  crash::Hypothesis order{"use-after-release", "", "remove_common", "virtio-rng.c", 212, {}};
  crash::Hypothesis lock{"missing-unlock", "", "remove_common", "virtio-rng.c", 212, {}};
  EXPECT_TRUE(loop::reproduced(warn, {order}, {kfence}));
  EXPECT_FALSE(loop::reproduced(warn, {order}, {elsewhere}));
  EXPECT_FALSE(loop::reproduced(warn, {lock}, {kfence}));
  // Another allocator's release warns in whichever of its checks comes first.
  crash::Hypothesis foreign{"foreign-release", "", "remove_common", "virtio-rng.c", 212, {}};
  EXPECT_TRUE(loop::reproduced(warn, {foreign}, {kfence}));
  EXPECT_FALSE(loop::reproduced(warn, {foreign}, {elsewhere}));
}

namespace {

/// A kernel tree whose drivers register a net_device in probe and unregister it first in remove
/// (9 of 12), freeing it last in both remove and probe's error path.
util::Expected<util::TempDir> netdev_kernel() {
  auto k = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-crash-kernel");
  if (!k) return k;
  std::filesystem::create_directories(k->path() / "drivers/n");
  for (int i = 0; i < 12; ++i)
    (void)util::write_file(
        k->path() / ("drivers/n/n" + std::to_string(i) + ".c"),
        "static int n_probe(struct pci_dev *pdev)\n{\n\tstruct net_device *dev = alloc_etherdev(8);\n\tint err;\n\n"
        "\tSET_NETDEV_DEV(dev, &pdev->dev);\n\terr = register_netdev(dev);\n\tif (err)\n\t\tgoto out;\n\treturn 0;\n"
        "out:\n\tfree_netdev(dev);\n\treturn err;\n}\n"
        "static void n_remove(struct pci_dev *pdev)\n{\n\tstruct net_device *ndev = pci_get_drvdata(pdev);\n\n" +
            std::string(i < 9 ? "\tunregister_netdev(ndev);\n" : "") +
            "\tfree_netdev(ndev);\n}\nstatic struct pci_driver n = {\n\t.probe = n_probe,\n\t.remove = n_remove,\n};\n");
  return k;
}

const char* k_netdev_driver =
    "static netdev_tx_t x_xmit(struct sk_buff *skb, struct net_device *dev)\n{\n\tstruct x_priv *p = netdev_priv(dev);\n\n"
    "\twritel(1, p->regs);\n\treturn 0;\n}\n"
    "static int x_probe(struct pci_dev *pdev)\n{\n\tstruct net_device *dev = alloc_etherdev(8);\n\tint rc;\n\n"
    "\trc = register_netdev(dev);\n\tif (rc)\n\t\tgoto err;\n\treturn 0;\nerr:\n\tfree_netdev(dev);\n\treturn rc;\n}\n"
    "static void x_remove(struct pci_dev *pdev)\n{\n\tstruct net_device *dev = pci_get_drvdata(pdev);\n"
    "\tstruct x_priv *p = netdev_priv(dev);\n\n\tiounmap(p->regs);\n\tfree_netdev(dev);\n}\n"
    "static struct pci_driver x = {\n\t.probe = x_probe,\n\t.remove = x_remove,\n};\n";

} // namespace

// A registration of an object (register_netdev(dev)) is learned by the object's type; free_netdev(),
// after which nothing names the object, ends the object itself and is not what ends the
// registration; and a call the teardown makes too (probe's free_netdev() on its error path) begins
// nothing.
TEST(CrashRepair, ADeviceRemoveNeverUnregistersIsUnregisteredFirst) {
  auto k = netdev_kernel();
  ASSERT_TRUE(k);
  auto pair = crash::teardown_pair(k->path(), "register_netdev");
  EXPECT_EQ(pair.release, "unregister_netdev");
  EXPECT_EQ(pair.calls, 12);
  EXPECT_EQ(pair.released, 9);
  EXPECT_FALSE(crash::torn_down(crash::teardown_pair(k->path(), "free_netdev")));
  Tree t(k_netdev_driver);
  // The kernel transmits through the device remove left registered, into unmapped registers.
  crash::CrashReport r;
  r.kind = crash::CrashKind::paging_request;
  r.headline = "BUG: unable to handle page fault for address: ffffc900000550d9";
  r.unloading = {"drv"};
  crash::Location fault{"x_xmit", "drv", "drv.c", 5, "faulting instruction", "fault", true};
  auto h = crash::hypothesize(r, {fault}, t.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_GE(h.size(), 2u);
  EXPECT_EQ(h[0].kind, "missing-teardown");
  EXPECT_EQ(h[0].function, "x_remove");
  EXPECT_EQ(h[0].call, "unregister_netdev(dev)");
  EXPECT_NE(h[0].statement.find("register_netdev() at drv.c:13"), std::string::npos) << h[0].statement;
  auto reps = crash::propose_repairs({h[0]}, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("netdev_priv(dev);\n\n\tunregister_netdev(dev);\n\tiounmap(p->regs);"), std::string::npos)
      << reps[0].new_text;
  // Not while the module stays loaded: a bad pointer, no teardown to add.
  r.unloading.clear();
  auto loaded = crash::hypothesize(r, {fault}, t.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_FALSE(loaded.empty());
  EXPECT_NE(loaded[0].kind, "missing-teardown");
  // The kernel's BUG_ON in free_netdev() called by remove: the object that call is given.
  r.kind = crash::CrashKind::bug_on;
  r.unloading = {"drv"};
  crash::Location in_remove{"x_remove", "drv", "drv.c", 27, "caller", "fault", true};
  auto bug = crash::hypothesize(r, {in_remove}, t.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_FALSE(bug.empty());
  EXPECT_EQ(bug[0].kind, "missing-teardown");
  EXPECT_EQ(bug[0].call, "unregister_netdev(dev)");
  // A WARN in a call remove makes on an object nothing registered (the registers' unmapping of a
  // device still up): what the setup registered of any type.
  r.kind = crash::CrashKind::warning;
  crash::Location unmap{"x_remove", "drv", "drv.c", 26, "caller", "fault", true};
  auto warn = crash::hypothesize(r, {unmap}, t.path(), {}, {}, {}, crash::teardown_oracle(k->path()));
  ASSERT_FALSE(warn.empty());
  EXPECT_EQ(warn[0].kind, "missing-teardown");
  EXPECT_EQ(warn[0].call, "unregister_netdev(dev)");
}

// Teardown reverses setup: exit undoes the first step (its own error path unwinds it under a label
// the second step's failure jumps to) while the second step (a registration the kernel's drivers
// end with bar_unregister()) still stands; the kernel's WARN fires. The later step's undo moves first.
TEST(CrashRepair, ATeardownOutOfTheReverseOrderOfSetupIsReordered) {
  const std::string init = "static int __init d_init(void)\n{\n\tint ret;\n\n\tret = foo_setup(1);\n\tif (ret)\n\t\tgoto out;\n"
                           "\tret = bar_register(&d_driver);\n\tif (ret)\n\t\tgoto err_bar;\n\treturn 0;\nerr_bar:\n"
                           "\tfoo_teardown(1);\nout:\n\treturn ret;\n}\n";
  const std::string tail = "module_init(d_init);\nmodule_exit(d_exit);\n";
  Tree t(init + "static void __exit d_exit(void)\n{\n\tfoo_teardown(1);\n\tbar_unregister(&d_driver);\n}\n" + tail);
  auto pairs = [](const std::string& setup) {
    return setup == "bar_register" ? crash::ScopedPair{setup, "bar_unregister", 10, 10, 0}
                                   : crash::ScopedPair{setup, "", 0, 0, 0};
  };
  crash::CrashReport r;
  r.kind = crash::CrashKind::warning;
  r.headline = "WARNING: CPU: 0 PID: 242 at kernel/cpu.c:2611 __cpuhp_remove_state_cpuslocked+0xfe/0x110";
  r.unloading = {"drv"};
  crash::Location at{"d_exit", "drv", "drv.c", 19, "caller 2 in the call trace", "fault", true};
  auto h = crash::hypothesize(r, {at}, t.path(), {}, {}, {}, pairs);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "teardown-order");
  EXPECT_EQ(h[0].line, 19);
  EXPECT_EQ(h[0].set_line, 20);
  auto reps = crash::propose_repairs({h[0]}, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("{\n\tbar_unregister(&d_driver);\n\tfoo_teardown(1);\n}"), std::string::npos)
      << reps[0].new_text;
  // In the right order: nothing to reorder.
  Tree ok(init + "static void __exit d_exit(void)\n{\n\tbar_unregister(&d_driver);\n\tfoo_teardown(1);\n}\n" + tail);
  crash::Location at2{"d_exit", "drv", "drv.c", 20, "caller 2 in the call trace", "fault", true};
  auto ho = crash::hypothesize(r, {at2}, ok.path(), {}, {}, {}, pairs);
  EXPECT_TRUE(ho.empty() || ho[0].kind != "teardown-order");
}

// One error label's cleanup undoes in reverse order of setup too: a pool made from a cache is
// destroyed before the cache under `error:`; exit destroying the cache first (the allocator warns of
// objects left) has the pool's destruction moved first.
TEST(CrashRepair, OneLabelsCleanupOrdersTheTeardown) {
  const std::string init = "static int __init d_init(void)\n{\n\tcache = cache_make(8);\n\tif (!cache)\n\t\tgoto error;\n"
                           "\tpool = pool_make_from(cache);\n\tif (!pool)\n\t\tgoto error;\n\treturn 0;\nerror:\n"
                           "\tpool_destroy(pool);\n\tcache_destroy(cache);\n\treturn -ENOMEM;\n}\n";
  const std::string tail = "module_init(d_init);\nmodule_exit(d_exit);\n";
  Tree t(init + "static void __exit d_exit(void)\n{\n\tcache_destroy(cache);\n\tpool_destroy(pool);\n}\n" + tail);
  auto none = [](const std::string& setup) { return crash::ScopedPair{setup, "", 0, 0, 0}; };
  crash::CrashReport r;
  r.kind = crash::CrashKind::warning;
  r.headline = "WARNING: CPU: 1 PID: 250 at mm/slab_common.c:545 kmem_cache_destroy+0x150/0x160";
  r.unloading = {"drv"};
  crash::Location at{"d_exit", "drv", "drv.c", 17, "caller 2 in the call trace", "fault", true};
  auto h = crash::hypothesize(r, {at}, t.path(), {}, {}, {}, none);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "teardown-order");
  EXPECT_EQ(h[0].line, 17);
  EXPECT_EQ(h[0].set_line, 18);
  auto reps = crash::propose_repairs({h[0]}, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("{\n\tpool_destroy(pool);\n\tcache_destroy(cache);\n}"), std::string::npos) << reps[0].new_text;
  // SLUB's own check in the same call (a cache destroyed with objects left): the same order.
  r.kind = crash::CrashKind::slab;
  r.headline = "BUG d_cache (Tainted: G B OE): Objects remaining on __kmem_cache_shutdown()";
  auto hs = crash::hypothesize(r, {at}, t.path(), {}, {}, {}, none);
  ASSERT_FALSE(hs.empty());
  EXPECT_EQ(hs[0].kind, "teardown-order");
  r.kind = crash::CrashKind::warning;
  // In the label's order: nothing to reorder.
  Tree ok(init + "static void __exit d_exit(void)\n{\n\tpool_destroy(pool);\n\tcache_destroy(cache);\n}\n" + tail);
  crash::Location at2{"d_exit", "drv", "drv.c", 18, "caller 2 in the call trace", "fault", true};
  auto ho = crash::hypothesize(r, {at2}, ok.path(), {}, {}, {}, none);
  EXPECT_TRUE(ho.empty() || ho[0].kind != "teardown-order");
}

// A lock taken twice on one path (scripts/coccinelle/locks/double_lock.cocci's bug): the second
// acquisition waits for itself; it goes.
TEST(CrashRepair, ALockTakenTwiceLosesTheSecondAcquisition) {
  Tree t("static int d_close(struct net_device *dev)\n{\n\tstruct d_priv *p = netdev_priv(dev);\n\tunsigned long flags;\n\n"
         "\tspin_lock_irqsave(&p->lock, flags);\n\tspin_lock_irqsave(&p->lock, flags);\n\td_stop(p);\n"
         "\tspin_unlock_irqrestore(&p->lock, flags);\n\treturn 0;\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::panic;
  r.detail = "NMI: Not continuing";
  crash::Location at{"d_close", "drv", "drv.c", 7, "caller 7 in the call trace", "fault", true};
  auto h = crash::hypothesize(r, {at}, t.path(), {}, mutex_pair);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-acquire");
  auto reps = crash::propose_repairs({h[0]}, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("flags;\n\n\tspin_lock_irqsave(&p->lock, flags);\n\td_stop(p);"), std::string::npos)
      << reps[0].new_text;
}

// A lock taken with no argument (`rtnl_lock();`) twice: the same repair; given back in between, no claim.
TEST(CrashRepair, ALockWithoutAnArgumentTakenTwice) {
  auto rtnl = [](const std::string& acquire) {
    return acquire == "big_lock" ? crash::ScopedPair{acquire, "big_unlock", 20, 20, 20}
                                 : crash::ScopedPair{acquire, "", 20, 0, 0};
  };
  Tree t("static int d_probe(struct pci_dev *pdev)\n{\n\tint err;\n\n\tbig_lock();\n\tbig_lock();\n"
         "\terr = d_register(pdev);\n\tbig_unlock();\n\treturn err;\n}\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::hung_task;
  crash::Location at{"d_probe", "drv", "drv.c", 6, "caller 3 in the call trace", "fault", true};
  auto h = crash::hypothesize(r, {at}, t.path(), {}, rtnl);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "double-acquire");
  EXPECT_EQ(h[0].statement, "d_probe() takes its lock with big_lock() at drv.c:6 while it holds it since drv.c:5: the second "
                            "acquisition waits for itself");
  auto reps = crash::propose_repairs({h[0]}, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\n\n\tbig_lock();\n\terr = d_register(pdev);"), std::string::npos) << reps[0].new_text;
  Tree g("static int d_probe(struct pci_dev *pdev)\n{\n\tint err;\n\n\tbig_lock();\n\tbig_unlock();\n\tbig_lock();\n"
         "\terr = d_register(pdev);\n\tbig_unlock();\n\treturn err;\n}\n");
  crash::Location at2{"d_probe", "drv", "drv.c", 7, "caller 3 in the call trace", "fault", true};
  auto hg = crash::hypothesize(r, {at2}, g.path(), {}, rtnl);
  EXPECT_TRUE(hg.empty() || hg[0].kind != "double-acquire");
  // A call with no argument that is no lock is no double release.
  Tree n("static int d_probe(struct pci_dev *pdev)\n{\n\tint err;\n\n\td_tick();\n\td_tick();\n\treturn 0;\n}\n");
  crash::Location at3{"d_probe", "drv", "drv.c", 6, "caller 3 in the call trace", "fault", true};
  auto hn = crash::hypothesize(r, {at3}, n.path(), {}, rtnl);
  EXPECT_TRUE(hn.empty() || (hn[0].kind != "double-acquire" && hn[0].kind != "double-release"));
}

// Constant expressions with the file's macros and the kernel's (an oracle here).
TEST(CrashBounds, ConstantExpressionsWithMacros) {
  auto t = csrc::tokenize("(ETH_ALEN / 2) + 1 << 1");
  auto v = crash::evaluate(t, 0, t.size() - 1, [](const std::string& n) -> std::optional<long long> {
    return n == "ETH_ALEN" ? std::optional<long long>(6) : std::nullopt;
  });
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(*v, 8);
  auto junk = csrc::tokenize("3 / 0 + UNKNOWN");
  EXPECT_FALSE(crash::evaluate(junk, 0, junk.size() - 1, {}).has_value());
  auto sfx = csrc::tokenize("0x10UL - 1");
  EXPECT_EQ(crash::evaluate(sfx, 0, sfx.size() - 1, {}), std::optional<long long>(15));
}

// A stack overwritten in a function: its loop that runs one past a local array (the kernel's
// stack protector panics when it returns); the bound stops inside the array again.
TEST(CrashRepair, ALoopPastALocalArrayStopsInsideIt) {
  const std::string c = "#define WORDS (ETH_ALEN / 2)\n"
                        "static int p_probe(struct pci_dev *pdev)\n{\n\t__le16 addr[WORDS];\n\tu8 buf[8], x = 0;\n\tint i;\n\n"
                        "\tfor (i = 0; i <= 3; i++)\n\t\taddr[i] = read_word(i);\n"
                        "\tfor (i = 0; i < 8; i++)\n\t\tbuf[i] = x;\n"
                        "\tfor (i = 0; i < 9; i++) {\n\t\tx += 1;\n\t\tbuf[i] = x;\n\t}\n\treturn 0;\n}\n";
  Tree t(c);
  crash::CrashReport r;
  r.kind = crash::CrashKind::panic;
  r.detail = "stack-protector: Kernel stack is corrupted in: p_probe+0x48d/0x490 [drv]";
  crash::Location at{"p_probe", "drv", "drv.c", 17, "caller", "fault", false};
  auto eth = [](const std::string& n) -> std::optional<long long> {
    return n == "ETH_ALEN" ? std::optional<long long>(6) : std::nullopt;
  };
  auto h = crash::hypothesize(r, {at}, t.path(), {}, {}, {}, {}, eth);
  ASSERT_GE(h.size(), 2u);
  EXPECT_EQ(h[0].kind, "loop-bound");
  EXPECT_EQ(h[0].line, 8);
  EXPECT_EQ(h[0].call, "i < 3");
  EXPECT_EQ(h[1].kind, "loop-bound");
  EXPECT_EQ(h[1].line, 12);
  EXPECT_EQ(h[1].call, "i < 8");
  auto reps = crash::propose_repairs({h[0], h[1]}, t.path(), {});
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_NE(reps[0].new_text.find("\tfor (i = 0; i < 3; i++)\n\t\taddr[i]"), std::string::npos) << reps[0].new_text;
  EXPECT_NE(reps[1].new_text.find("\tfor (i = 0; i < 8; i++) {\n"), std::string::npos) << reps[1].new_text;
  // Without the kernel's ETH_ALEN the first array's size is unknown: no claim about it.
  auto blind = crash::hypothesize(r, {at}, t.path());
  ASSERT_FALSE(blind.empty());
  EXPECT_EQ(blind[0].line, 12);
}

// The managed interfaces come from the kernel's own devres.rst (its list, not the prose above it).
TEST(CrashRelease, TheManagedInterfacesAreTheKernelDocumentsList) {
  const std::string rst = "Devres\n======\n\n  d = devm_kzalloc(dev, sizeof(*d), GFP_KERNEL);\n  kfree(x);\n\n"
                          "6. List of managed interfaces\n-----------------------------\n\nMEM\n  devm_kfree()\n"
                          "  devm_kzalloc()\n\nPCI\n  pcim_enable_device()\t\t: after success, some PCI ops become managed\n";
  auto names = crash::managed_interfaces(rst);
  EXPECT_EQ(names, (std::set<std::string>{"devm_kfree", "devm_kzalloc", "pcim_enable_device"}));
  EXPECT_TRUE(crash::managed_interfaces("no list here: devm_kzalloc()").empty());
}

// A driver that frees what it allocated with a managed interface (devm_free.cocci): the allocator
// refuses the release in remove (a pointer into devres's own node); the release goes.
TEST(CrashRepair, AReleaseOfManagedMemoryGoes) {
  Tree t("static int e_probe(struct pci_dev *pdev)\n{\n\tstruct e_dev *edev;\n\n"
         "\tedev = devm_kzalloc(&pdev->dev, sizeof(*edev), GFP_KERNEL);\n\tif (!edev)\n\t\treturn -ENOMEM;\n"
         "\tpci_set_drvdata(pdev, edev);\n\treturn 0;\n}\n"
         "static void e_remove(struct pci_dev *pdev)\n{\n\tstruct e_dev *edev = pci_get_drvdata(pdev);\n\n"
         "\te_stop(edev);\n\tkfree(edev);\n}\n"
         "static int e_resume(struct pci_dev *pdev)\n{\n\tstruct e_dev *edev = pci_get_drvdata(pdev);\n\tint err;\n\n"
         "\terr = e_start(edev);\n\tif (err)\n\t\tgoto out;\n\treturn 0;\nout:\n\tkfree(edev);\n\treturn err;\n}\n"
         "static void e_other(struct pci_dev *pdev, struct e_buf *b)\n{\n\tkfree(b);\n}\n"
         "static struct pci_driver e = {\n\t.probe = e_probe,\n\t.remove = e_remove,\n};\n");
  crash::CrashReport r;
  r.kind = crash::CrashKind::slab;
  r.headline = "BUG kmalloc-256 (Tainted: G OE): Invalid object pointer 0xffff888005470a28";
  r.detail = "Invalid object pointer X";
  crash::Location at{"e_remove", "drv", "drv.c", 16, "caller", "fault", false, "tail-call"};
  auto managed = [](const std::string& c) { return c == "devm_kzalloc"; };
  auto h = crash::hypothesize(r, {at}, t.path(), {}, {}, {}, {}, {}, managed);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "managed-release");
  EXPECT_EQ(h[0].set_line, 5);
  auto reps = crash::propose_repairs({h[0]}, t.path(), {});
  ASSERT_EQ(reps.size(), 1u);
  EXPECT_NE(reps[0].new_text.find("\te_stop(edev);\n}\n"), std::string::npos) << reps[0].new_text;
  // The error path's release of the same object goes too; a release of another type's object stays.
  EXPECT_NE(reps[0].new_text.find("out:\n\treturn err;"), std::string::npos) << reps[0].new_text;
  EXPECT_NE(reps[0].new_text.find("\tkfree(b);\n"), std::string::npos) << reps[0].new_text;
  // Allocated by hand: the managed-release hypothesis has nothing to say.
  Tree own("static int e_probe(struct pci_dev *pdev)\n{\n\tstruct e_dev *edev;\n\n"
           "\tedev = kzalloc(sizeof(*edev), GFP_KERNEL);\n\tif (!edev)\n\t\treturn -ENOMEM;\n"
           "\tpci_set_drvdata(pdev, edev);\n\treturn 0;\n}\n"
           "static void e_remove(struct pci_dev *pdev)\n{\n\tstruct e_dev *edev = pci_get_drvdata(pdev);\n\n"
           "\te_stop(edev);\n\tkfree(edev);\n}\n");
  auto none = crash::hypothesize(r, {at}, own.path(), {}, {}, {}, {}, {}, managed);
  EXPECT_TRUE(none.empty() || none[0].kind != "managed-release");
}

TEST(CrashReport, LongLinesDoNotExhaustTheStack) {
  const std::string n(1 << 20, 'a');
  auto rs = crash::parse_reports("BUG: KASAN: slab-use-after-free in " + n + "\nBUG: KFENCE: use-after-free read in " + n +
                                 "\nWARNING: CPU: 0 PID: 1 at " + n + "\n" + n + "\n");
  EXPECT_FALSE(rs.empty());
}

// An allocation sized by its own pointer (badty.cocci): SLUB finds the red zone after the object
// overwritten where remove frees it; the allocation is the cause and is sized by what it points to.
// A macro of the driver's header reading a member counts as reading it (release through a call).
TEST(CrashRepair, AnAllocationSizedByItsPointerIsSizedByWhatItPointsTo) {
  const auto driver = [](const std::string& operand) {
    return "static int pr(struct t *a)\n{\n\ta->ring = kcalloc(a->n,\n\t\t\t  sizeof(" + operand +
           "), GFP_KERNEL);\n\tif (!a->ring)\n\t\treturn -ENOMEM;\n\treturn 0;\n}\n"
           "static void rm(struct t *a)\n{\n\tkfree(a->ring);\n}\n";
  };
  Tree t(driver("a->ring"));
  auto r = null_report("rm", 11);
  r.kind = crash::CrashKind::slab;
  r.detail = "Object corrupt";
  auto h = hyps_of(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "alloc-size");
  EXPECT_EQ(h[0].variable, "a->ring");
  EXPECT_EQ(h[0].set_line, 4);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("sizeof(*a->ring), GFP_KERNEL"), std::string::npos) << reps[0].new_text;
  // An allocation sized by what it points to is not the cause; a double free is not an overrun.
  Tree ok(driver("*a->ring"));
  auto h3 = hyps_of(r, ok);
  EXPECT_TRUE(h3.empty() || h3[0].kind != "alloc-size");
  r.detail = "Object already free";
  auto h2 = hyps_of(r, t);
  EXPECT_TRUE(h2.empty() || h2[0].kind != "alloc-size");
  // A size kept in a local, and a chained assignment: the same pointer's size.
  Tree local("static int pr(struct t *a)\n{\n\tint size = sizeof(a->ring);\n\n\ta->ring = kzalloc(size, GFP_KERNEL);\n"
             "\treturn 0;\n}\nstatic void rm(struct t *a)\n{\n\tkfree(a->ring);\n}\n");
  r.rip->line = 10;
  r.detail = "Padding overwritten";
  const auto hl = hyps_of(r, local);
  ASSERT_FALSE(hl.empty());
  EXPECT_EQ(std::make_pair(hl[0].kind, hl[0].set_line), std::make_pair(std::string("alloc-size"), 3));
  Tree chain("static int pr(struct vdev *vdev)\n{\n\tstruct t *vb;\n\n\tvdev->priv = vb = kzalloc(sizeof(vb), GFP_KERNEL);\n"
             "\treturn 0;\n}\n");
  // No driver frame at all (the allocator's WARNING in its own check): the driver's only such site.
  crash::CrashReport w;
  w.kind = crash::CrashKind::warning;
  w.headline = "WARNING: CPU: 0 PID: 1 at mm/slub.c:1300 slab_pad_check+0x1/0x2";
  w.trace = {crash::Frame{"slab_pad_check", 0x1, 0x2, "", true, false, "", 0}};
  auto hc = crash::hypothesize(w, crash::localize(w, {"drv"}, chain.path(), "/autodriver/tree"), chain.path());
  ASSERT_FALSE(hc.empty());
  EXPECT_EQ(hc[0].kind, "alloc-size");
  auto rc = crash::propose_repairs(hc, chain.path(), {});
  ASSERT_FALSE(rc.empty());
  EXPECT_NE(rc[0].new_text.find("vdev->priv = vb = kzalloc(sizeof(*vb), GFP_KERNEL);"), std::string::npos) << rc[0].new_text;
}

// The element type's pointer in the sizeof (`sizeof(struct rx *)`) for memory stored in a
// `struct rx *` (an array of struct rx): sized by the type itself; an array of pointers
// (`struct rx **`) is right as written.
TEST(CrashRepair, AnArrayAllocatedWithThePointerTypeIsSizedByTheElementType) {
  const auto driver = [](const std::string& stars) {
    return "struct nic {\n\tstruct rx " + stars +
           "rxs ____cacheline_aligned;\n};\n"
           "static int up(struct nic *nic, int n)\n{\n\tif (!(nic->rxs = kcalloc(n, sizeof(struct rx *), GFP_KERNEL)))\n"
           "\t\treturn -ENOMEM;\n\treturn 0;\n}\nstatic void fill(struct rx *rx)\n{\n\trx->skb = 0;\n}\n";
  };
  Tree t(driver("*"));
  auto r = null_report("fill", 12);
  r.kind = crash::CrashKind::general_protection;
  r.headline = "Oops: general protection fault, probably for non-canonical address 0x6b6b6b6b6b6b6c3b: 0000 [#1]";
  auto h = hyps_of(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "alloc-size");
  EXPECT_EQ(h[0].variable, "nic->rxs");
  EXPECT_EQ(h[0].set_line, 6);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("kcalloc(n, sizeof(struct rx), GFP_KERNEL)"), std::string::npos) << reps[0].new_text;
  Tree ok(driver("**"));
  auto h2 = hyps_of(r, ok);
  EXPECT_TRUE(h2.empty() || h2[0].kind != "alloc-size");
}

// Remove frees the device (and its private data) inside `if (dev) { ... }` and then reads the
// private data: the release and its use are statements of the nested block, and the release
// moves after the use there.
TEST(CrashRepair, AReleaseBeforeItsUseInsideANestedBlockMovesAfterIt) {
  Tree t("static void rm(struct pci_dev *pdev)\n{\n\tstruct net_device *dev = pci_get_drvdata(pdev);\n\n"
         "\tif (dev) {\n\t\tstruct priv *lp = netdev_priv(dev);\n\n\t\tthing_free(dev);\n"
         "\t\tdma_free(lp->pdev, lp->block);\n\t\tpci_disable_device(pdev);\n\t}\n}\n");
  auto r = null_report("rm", 9);
  r.kind = crash::CrashKind::general_protection;
  auto h = hyps_of_releasing(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].set_line, 8);
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\t\tdma_free(lp->pdev, lp->block);\n\t\tthing_free(dev);\n\t\tpci_disable_device(pdev);"),
            std::string::npos)
      << reps[0].new_text;
}

// A pointer loaded from freed memory (SLUB's poison in the address) faulted in a function handed a
// member by the calls above it (`clean(ad->tx)` <- down <- unregister <- remove): remove freed
// that member before unregistering, and both rings, freed together, move after the call.
TEST(CrashRepair, AMemberHandedDownTheCallsAndFreedBeforeThemMovesWithItsSiblings) {
  Tree t("static void clean(struct ring *ring)\n{\n\tstruct buf *b = ring->bufs;\n\n\tb->dma = 0;\n}\n"
         "static void down(struct ad *ad)\n{\n\tclean(ad->tx);\n}\n"
         "static void rm(struct ad *ad)\n{\n\tthing_free(ad->tx);\n\tthing_free(ad->rx);\n\tunregister_dev(ad->dev);\n"
         "\treset(ad);\n}\n");
  auto r = null_report("clean", 5);
  r.kind = crash::CrashKind::general_protection;
  r.headline = "Oops: general protection fault, probably for non-canonical address 0x6b6b6b6b6b6b6b6b: 0000 [#1]";
  r.trace = {crash::Frame{"down", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 9},
             crash::Frame{"unregister_dev", 0x20, 0x30, "", true, false, "", 0},
             crash::Frame{"rm", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 15}};
  auto h = hyps_of_releasing(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "use-after-release");
  EXPECT_EQ(h[0].function, "rm");
  EXPECT_EQ(h[0].variable, "ad->tx");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_EQ(reps.size(), 2u);
  EXPECT_NE(reps[0].new_text.find("\treset(ad);\n\tthing_free(ad->tx);\n\tthing_free(ad->rx);\n}"), std::string::npos)
      << reps[0].new_text;
  EXPECT_NE(reps[1].new_text.find("\tthing_free(ad->rx);\n\tunregister_dev(ad->dev);\n\treset(ad);\n\tthing_free(ad->tx);\n}"),
            std::string::npos)
      << reps[1].new_text;
  // Not read from freed memory (a NULL): the members handed down are no evidence.
  r.headline = "BUG: kernel NULL pointer dereference, address: 0000000000000008";
  r.kind = crash::CrashKind::null_deref;
  auto hn = hyps_of_releasing(r, t);
  EXPECT_TRUE(hn.empty() || hn[0].kind != "use-after-release");
}

TEST(CrashLocalize, MembersReadThroughTheDriversHeaderMacros) {
  Tree t("#include \"drv.h\"\nstatic void down(struct hw *hw)\n{\n\tu32 v = er32(CTRL);\n}\n");
  ASSERT_TRUE(util::write_file(t.path() / "drv.h", "#define er32(reg) readl(hw->hw_addr + (reg))\n"));
  const auto toks = csrc::tokenize("#include \"drv.h\"\nstatic void down(struct hw *hw)\n{\n\tu32 v = er32(CTRL);\n}\n");
  EXPECT_FALSE(crash::members_read_on(toks, 4).count("hw_addr"));
  EXPECT_TRUE(crash::members_read_on(toks, 4, crash::read_driver(t.path(), ".h")).count("hw_addr"));
}

// A released member path is still used by a later call handed its object (`reset(hw)` writes the
// registers `hw->regs` maps): the release moves after that call too, not just after the call the
// crash went through; a call handed what the object derives from (`free_dev(dev)`) is no such use.
TEST(CrashRepair, AReleasedMemberMovesAfterTheCallsHandedItsObject) {
  Tree t("static void rm(struct dev *dev)\n{\n\tstruct hw *hw = dev_hw(dev);\n\n\tiounmap(hw->regs);\n"
         "\tunregister_dev(dev);\n\treset(hw);\n\tkfree(hw->ring);\n\tfree_dev(dev);\n}\n");
  crash::Hypothesis h{"use-after-release", "", "rm", "drv.c", 6, {}};
  h.variable = "hw->regs";
  h.set_line = 5;
  h.callee = "iounmap";
  auto reps = crash::propose_repairs({h}, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\tunregister_dev(dev);\n\treset(hw);\n\tiounmap(hw->regs);\n\tkfree(hw->ring);\n"),
            std::string::npos)
      << reps[0].new_text;
}

// remove reads its object back with a getter whose setter no function of the driver calls: the
// NULL is "never stored", and the setter goes in probe (the same table, the same parameter type)
// right after the object is allocated and tested, with probe's own parameter.
TEST(CrashRepair, AValueNeverStoredForItsGetterIsStoredWhereItIsMade) {
  const std::string probe = "static int w_probe(struct pci_dev *dev, const struct pci_device_id *id)\n{\n"
                            "\tstruct w_dev *w;\n\n\tw = devm_kzalloc(&dev->dev, sizeof(*w), GFP_KERNEL);\n\tif (!w)\n"
                            "\t\treturn -ENOMEM;\n\tw->n = 1;\n\treturn 0;\n}\n";
  const std::string remove = "static void w_remove(struct pci_dev *pdev)\n{\n\tstruct w_dev *w = dev_get_drvdata(&pdev->dev);\n"
                             "\n\tw_stop(w->n);\n}\n";
  const std::string table = "static struct pci_driver w_driver = {\n\t.probe = w_probe,\n\t.remove = w_remove,\n};\n";
  Tree t(probe + remove + table);
  auto r = null_report("w_remove", 15);
  auto h = hyps_of(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "never-set");
  EXPECT_EQ(h[0].function, "w_probe");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\tif (!w)\n\t\treturn -ENOMEM;\n\tdev_set_drvdata(&dev->dev, w);\n\tw->n = 1;\n"),
            std::string::npos)
      << reps[0].new_text;
  // A function of the table that only reads it back too (`x = pci_get_drvdata(...)`) does not make it.
  Tree reads(remove +
             "static int w_probe(struct pci_dev *dev, const struct pci_device_id *id)\n{\n"
             "\tstruct w_dev *w = pci_get_drvdata(dev);\n\n\treturn w->n;\n}\n" +
             table);
  auto hr = hyps_of(null_report("w_remove", 5), reads);
  ASSERT_FALSE(hr.empty());
  EXPECT_NE(hr[0].kind, "never-set");
  // A driver that stores it (any setter of the family) gets the unchecked-result question instead.
  Tree set(probe + remove + table + "static void w_keep(struct pci_dev *p, struct w_dev *w)\n{\n\tpci_set_drvdata(p, w);\n}\n");
  auto hs = hyps_of(r, set);
  ASSERT_FALSE(hs.empty());
  EXPECT_NE(hs[0].kind, "never-set");
}

// The kernel's BUG_ON() catching the NULL the getter read back (`BUG_ON(!w)`): the same question.
TEST(CrashRepair, AnAssertionThatTheGettersValueIsSetAsksWhetherItIsEverStored) {
  const std::string probe = "static int w_probe(struct pci_dev *dev, const struct pci_device_id *id)\n{\n"
                            "\tstruct w_dev *w;\n\n\tw = alloc_w();\n\tif (!w)\n\t\treturn -ENOMEM;\n\treturn 0;\n}\n";
  const std::string table = "static struct pci_driver w_driver = {\n\t.probe = w_probe,\n\t.remove = w_remove,\n};\n";
  Tree t(probe +
         "static void w_remove(struct pci_dev *pdev)\n{\n\tstruct w_dev *w = pci_get_drvdata(pdev);\n"
         "\tBUG_ON(!w);\n\tw_stop(w);\n}\n" +
         table);
  auto r = null_report("w_remove", 13);
  r.kind = crash::CrashKind::bug_on;
  r.headline = "kernel BUG at /autodriver/tree/drv.c:13!";
  auto h = hyps_of(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "never-set");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\tif (!w)\n\t\treturn -ENOMEM;\n\tpci_set_drvdata(dev, w);\n"), std::string::npos)
      << reps[0].new_text;
  // An assertion on something else: no such question.
  Tree other(probe +
             "static void w_remove(struct pci_dev *pdev)\n{\n\tstruct w_dev *w = pci_get_drvdata(pdev);\n"
             "\tBUG_ON(w->n > 3);\n\tw_stop(w);\n}\n" +
             table);
  auto ho = hyps_of(r, other);
  EXPECT_TRUE(ho.empty() || ho[0].kind != "never-set");
}

// A back-pointer member of the driver's struct that nothing ever assigns (`nic->netdev`), read
// NULL on the crash's path: stored where probe makes the object, from the one value of its type
// made there; a member the driver assigns somewhere is no such question.
TEST(CrashRepair, ABackPointerNeverAssignedIsStoredWhereTheObjectIsMade) {
  const std::string decl = "struct nic {\n\tint n;\n\tstruct net_device *netdev;\n};\n";
  const std::string probe = "static int nprobe(struct pci_dev *pdev, const struct pci_device_id *ent)\n{\n"
                            "\tstruct net_device *netdev;\n\tstruct nic *nic;\n\n"
                            "\tif (!(netdev = alloc_etherdev(sizeof(struct nic))))\n\t\treturn -ENOMEM;\n"
                            "\tnic = netdev_priv(netdev);\n\tnic->n = 1;\n\tphy_init(nic);\n\treturn 0;\n}\n";
  const std::string phy = "static void phy_init(struct nic *nic)\n{\n\tstruct net_device *netdev = nic->netdev;\n\n"
                          "\tnetdev->mtu = 1;\n}\n";
  // The address of a member of what it points to (`&nic->netdev->dev`) is no store of it.
  Tree t(decl + phy + probe + "static void show(struct nic *nic)\n{\n\tuse(&nic->netdev->dev);\n}\n");
  auto r = null_report("phy_init", 9);
  r.trace = {crash::Frame{"nprobe", 0x31, 0x90, "drv", true, false, "/autodriver/tree/drv.c", 21}};
  auto h = hyps_of(r, t);
  ASSERT_FALSE(h.empty());
  EXPECT_EQ(h[0].kind, "never-set");
  EXPECT_EQ(h[0].function, "nprobe");
  EXPECT_EQ(h[0].call, "nic->netdev = netdev;");
  auto reps = crash::propose_repairs(h, t.path(), {});
  ASSERT_FALSE(reps.empty());
  EXPECT_NE(reps[0].new_text.find("\tnic = netdev_priv(netdev);\n\tnic->netdev = netdev;\n\tnic->n = 1;\n"), std::string::npos)
      << reps[0].new_text;
  Tree set(decl + phy + probe + "static void keep(struct nic *nic, struct net_device *d)\n{\n\tnic->netdev = d;\n}\n");
  auto hs = hyps_of(r, set);
  EXPECT_TRUE(hs.empty() || hs[0].kind != "never-set");
}
