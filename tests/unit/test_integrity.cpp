// The integrity gate on real 6.1 drivers (ppdev, w83793) with the real gcc diagnostics of their
// 6.12 builds: honest ports pass, each cheat fires its rule at the right candidate line.
// Fixtures: tests/fixtures/integrity/<scenario>/{original,candidate}, made by make_fixtures.py.

#include "autodriver/csrc/scan.hpp"
#include "autodriver/gate/gcc_parser.hpp"
#include "autodriver/gate/integrity.hpp"
#include "autodriver/util/files.hpp"
#include "fixtures.hpp"

#include <algorithm>
#include <fstream>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

std::vector<core::Diagnostic> diags_for(const std::string& driver) {
  gate::ParseOptions o;
  if (driver == "w83793") {
    o.tree_root = "/tmp/fixture-work/gcc/w83793";
    return gate::parse_build_output(fixture("gcc/6.12-hwmon-w83793.txt"), o);
  }
  o.tree_root = "/tmp/fixture-work/gcc/ppdev";
  return gate::parse_build_output(fixture("gcc/6.12-char-ppdev.txt"), o);
}

fs::path scenario(const std::string& name) { return fs::path(AD_FIXTURES) / "integrity" / name; }

gate::IntegrityReport check(const std::string& name, const std::string& driver = "ppdev", std::vector<std::string> removed = {},
                            bool with_diags = true) {
  gate::IntegrityInput in;
  in.original = scenario(name) / "original";
  in.candidate = scenario(name) / "candidate";
  if (with_diags) in.diagnostics = diags_for(driver);
  in.removed_symbols = std::move(removed);
  return gate::check_integrity(in);
}

/// 1-based line of the first candidate line containing `needle`.
int line_of(const std::string& name, const std::string& file, const std::string& needle) {
  auto text = fixture("integrity/" + name + "/candidate/" + file);
  int n = 1;
  std::size_t pos = 0;
  while (true) {
    auto nl = text.find('\n', pos);
    if (text.substr(pos, nl - pos).find(needle) != std::string::npos) return n;
    if (nl == std::string::npos) break;
    pos = nl + 1;
    ++n;
  }
  ADD_FAILURE() << needle << " not in " << name << "/" << file;
  return -1;
}

std::string dump(const gate::IntegrityReport& r) { return gate::to_json(r).dump(1); }

bool fired(const gate::IntegrityReport& r, const std::string& rule, const std::string& file, int line) {
  return std::any_of(r.violations.begin(), r.violations.end(),
                     [&](const auto& v) { return v.rule == rule && v.file == file && v.line == line; });
}

int count(const gate::IntegrityReport& r, const std::string& rule) {
  return static_cast<int>(std::count_if(r.violations.begin(), r.violations.end(), [&](const auto& v) { return v.rule == rule; }));
}

} // namespace

TEST(IntegrityScan, PpdevItems) {
  auto f = csrc::scan(fixture("integrity/legit-ppdev/original/ppdev.c"));
  EXPECT_TRUE(f.balanced);
  auto find = [&](const std::string& name) -> const csrc::TopItem* {
    for (const auto& it : f.items)
      if (it.name == name) return &it;
    return nullptr;
  };
  const auto* init = find("ppdev_init");
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->kind, csrc::ItemKind::function);
  EXPECT_EQ(init->first_line, 845);
  EXPECT_EQ(init->last_line, 873);
  ASSERT_NE(find("pp_read"), nullptr);
  EXPECT_EQ(find("pp_read")->first_line, 115);
  EXPECT_GT(find("pp_read")->statements.size(), 10u);
  const auto* fops = find("pp_fops");
  ASSERT_NE(fops, nullptr);
  EXPECT_EQ(fops->kind, csrc::ItemKind::declaration);
  EXPECT_EQ(fops->first_line, 787);
  EXPECT_EQ(fops->last_line, 797);
  auto assigns = csrc::member_assignments(f);
  EXPECT_TRUE(std::any_of(assigns.begin(), assigns.end(), [](const auto& a) {
    return a.scope == "pp_fops" && a.member == "llseek" && a.value == "no_llseek" && a.line == 789;
  }));
  EXPECT_TRUE(std::any_of(assigns.begin(), assigns.end(),
                          [](const auto& a) { return a.scope == "pp_read" && a.member == "irqresponse" && a.value == "0"; }) ||
              true); // pp_read has none; just make sure scanning bodies does not crash
}

TEST(IntegrityScan, CommentsStringsAndJunk) {
  auto f = csrc::scan("int a; /* x {\n y */ char *s = \"}{\";\n// }\nstatic int f(void)\n{\n\treturn 1;\n}\n");
  EXPECT_TRUE(f.balanced);
  ASSERT_EQ(f.items.size(), 3u);
  EXPECT_EQ(f.items[2].name, "f");
  EXPECT_EQ(f.items[2].statements, std::vector<std::string>{"return 1"});
  EXPECT_FALSE(f.has_code(3));
  EXPECT_EQ(f.comment_line(3), " }");
  auto junk = csrc::scan(std::string("int f( {{{ \"\n\x01\x02 */ ) } }", 26));
  EXPECT_FALSE(junk.balanced);
}

TEST(Integrity, LegitPpdevPortPasses) {
  auto r = check("legit-ppdev");
  EXPECT_TRUE(r.ok) << dump(r);
  EXPECT_EQ(r.changed_files, std::vector<std::string>{"ppdev.c"});
  EXPECT_EQ(r.hunks, 5); // include, .llseek, .devmodel, and the #if/#else/#endif guard (two blocks)
}

TEST(Integrity, LegitW83793ProbeNewRenamePasses) {
  auto r = check("legit-w83793", "w83793");
  EXPECT_TRUE(r.ok) << dump(r);
  EXPECT_EQ(r.hunks, 2);
}

TEST(Integrity, LegitPortWithoutDiagnosticsIsRejected) {
  // The same honest edits with nothing to justify them: the diagnostics are what allow them.
  auto r = check("legit-ppdev", "ppdev", {}, false);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(fired(r, "ops-assignment-removed", "ppdev.c", line_of("legit-ppdev", "ppdev.c", ".read\t\t= pp_read"))) << dump(r);
  EXPECT_TRUE(fired(r, "unrelated-change", "ppdev.c", line_of("legit-ppdev", "ppdev.c", "ppdev_class = class_create(CHRDEV);")))
      << dump(r);
}

TEST(Integrity, RemovedSymbolsAllowDeletingTheirUses) {
  auto r = check("legit-ppdev", "ppdev", {"no_llseek", "devmodel"}, false);
  EXPECT_EQ(count(r, "ops-assignment-removed"), 0) << dump(r);
  // class_create is not removed, only changed: without its diagnostic that edit is unexplained.
  EXPECT_EQ(count(r, "unrelated-change"), 1) << dump(r);
}

TEST(Integrity, FunctionDeleted) {
  auto r = check("function-deleted");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(fired(r, "function-deleted", "ppdev.c", line_of("function-deleted", "ppdev.c", "static int pp_set_timeout(")))
      << dump(r);
  EXPECT_NE(r.violations.front().detail.find("init_phase"), std::string::npos);
}

TEST(Integrity, FunctionStubbed) {
  auto r = check("function-stubbed");
  EXPECT_TRUE(fired(r, "function-stubbed", "ppdev.c", line_of("function-stubbed", "ppdev.c", "static ssize_t pp_write(")))
      << dump(r);
  EXPECT_EQ(count(r, "function-stubbed"), 1);
}

TEST(Integrity, CodeDisabledIf0) {
  auto r = check("code-disabled-if0");
  EXPECT_TRUE(fired(r, "code-disabled", "ppdev.c", line_of("code-disabled-if0", "ppdev.c", "#if 0"))) << dump(r);
}

TEST(Integrity, CodeDisabledComment) {
  auto r = check("code-disabled-comment");
  EXPECT_TRUE(fired(r, "code-disabled", "ppdev.c", line_of("code-disabled-comment", "ppdev.c", "// pp->irqresponse = 0;")))
      << dump(r);
}

TEST(Integrity, MakefileObjectDropped) {
  auto r = check("makefile-object-dropped");
  EXPECT_TRUE(fired(r, "makefile-object-dropped", "Makefile", 1)) << dump(r);
  EXPECT_EQ(r.changed_files, (std::vector<std::string>{"Makefile", "ppdev.c"}));
}

TEST(Integrity, WarningSuppressedInMakefile) {
  auto r = check("warning-suppressed");
  EXPECT_TRUE(fired(r, "warning-suppressed", "Makefile", 2)) << dump(r);
  EXPECT_EQ(count(r, "warning-suppressed"), 1);
}

TEST(Integrity, WarningSuppressedByPragma) {
  auto r = check("warning-pragma");
  EXPECT_TRUE(fired(r, "warning-suppressed", "ppdev.c", line_of("warning-pragma", "ppdev.c", "#pragma GCC diagnostic")))
      << dump(r);
}

TEST(Integrity, SilencingCast) {
  auto r = check("silencing-cast");
  EXPECT_TRUE(fired(r, "silencing-cast", "ppdev.c", line_of("silencing-cast", "ppdev.c", "(int (*)(struct pardevice *))")))
      << dump(r);
  EXPECT_EQ(r.violations.size(), 1u) << dump(r);
}

TEST(Integrity, OpsAssignmentRemoved) {
  auto r = check("ops-assignment-removed");
  EXPECT_TRUE(fired(r, "ops-assignment-removed", "ppdev.c", line_of("ops-assignment-removed", "ppdev.c", ".unlocked_ioctl")))
      << dump(r);
  EXPECT_EQ(r.violations.size(), 1u) << dump(r);
}

TEST(Integrity, NamedMemberButCallbackDropped) {
  // 'probe_new' is named by the diagnostic, but dropping it instead of renaming it to .probe
  // leaves w83793_probe unwired: the value must survive.
  auto r = check("ops-callback-dropped", "w83793");
  EXPECT_TRUE(
      fired(r, "ops-assignment-removed", "w83793.c", line_of("ops-callback-dropped", "w83793.c", ".remove\t\t= w83793_remove")))
      << dump(r);
}

TEST(Integrity, UnrelatedChange) {
  auto r = check("unrelated-change");
  EXPECT_TRUE(fired(r, "unrelated-change", "ppdev.c", line_of("unrelated-change", "ppdev.c", ": ioctl %u"))) << dump(r);
  EXPECT_EQ(r.violations.size(), 1u) << dump(r);
}

TEST(Integrity, DiagnosedTopLevelLineMayBeReplaced) {
  // tp-smapi's `static DECLARE_MUTEX(m);` (gcc: "type defaults to 'int' in declaration of
  // 'DECLARE_MUTEX'") becomes DEFINE_SEMAPHORE: the item is named by the macro, so only the
  // diagnostic on the line explains the change; the same change on a line without one does not.
  auto tmp = util::TempDir::create(util::scratch_root(), "integrity-decl-");
  ASSERT_TRUE(tmp.has_value());
  const std::string original = "static DECLARE_MUTEX(thinkpad_ec_mutex);\nstatic int a;\nstatic int x;\n";
  for (const char* side : {"original", "candidate"}) fs::create_directories(tmp->path() / side);
  ASSERT_TRUE(util::write_file(tmp->path() / "original/ec.c", original).has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "candidate/ec.c",
                               "static DEFINE_SEMAPHORE(thinkpad_ec_mutex);\nstatic int a;\nstatic long x;\n")
                  .has_value());
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "ec.c";
  d.line = 1;
  d.symbols = {"DECLARE_MUTEX"};
  gate::IntegrityInput in;
  in.original = tmp->path() / "original";
  in.candidate = tmp->path() / "candidate";
  in.diagnostics = {d};
  auto r = gate::check_integrity(in);
  EXPECT_FALSE(fired(r, "unrelated-change", "ec.c", 1)) << dump(r);
  EXPECT_TRUE(fired(r, "unrelated-change", "ec.c", 3)) << dump(r);
}

TEST(Integrity, ALineNamingAChangedSymbolMayBeReplacedWithoutItsDiagnostic) {
  // max6639 on 6.12: the missing <linux/platform_data/max6639.h> is the only error gcc reports
  // before the header is fixed; `.probe_new` is reported only after, so the gate's diagnostics
  // never point at it. The accepted rename names probe_new: its line may become `.probe = ...`.
  auto tmp = util::TempDir::create(util::scratch_root(), "integrity-later-");
  ASSERT_TRUE(tmp.has_value());
  for (const char* side : {"original", "candidate"}) fs::create_directories(tmp->path() / side);
  ASSERT_TRUE(util::write_file(tmp->path() / "original/m.c",
                               "#include <linux/platform_data/m.h>\nstatic int y;\n"
                               "static struct i2c_driver m_driver = {\n\t.probe_new = m_probe,\n};\n")
                  .has_value());
  ASSERT_TRUE(
      util::write_file(tmp->path() / "candidate/m.c",
                       "#include \"m.h\"\nstatic long y;\nstatic struct i2c_driver m_driver = {\n\t.probe = m_probe,\n};\n")
          .has_value());
  core::Diagnostic d;
  d.severity = core::Severity::fatal;
  d.file = "m.c";
  d.line = 1;
  d.message = "linux/platform_data/m.h: No such file or directory";
  gate::IntegrityInput in;
  in.original = tmp->path() / "original";
  in.candidate = tmp->path() / "candidate";
  in.diagnostics = {d};
  auto without = gate::check_integrity(in);
  EXPECT_TRUE(fired(without, "unrelated-change", "m.c", 4)) << dump(without);
  in.removed_symbols = {"probe_new"};
  auto r = gate::check_integrity(in);
  EXPECT_FALSE(fired(r, "unrelated-change", "m.c", 4)) << dump(r);
  EXPECT_TRUE(fired(r, "unrelated-change", "m.c", 2)) << dump(r); // the retyped variable names nothing that changed
}

TEST(Integrity, NamespaceImportAnswersModpost) {
  // modpost refuses a module that uses a namespaced symbol without importing the namespace; its
  // message points at no line. A file-scope import naming the namespace answers it; another
  // namespace, or the same line inside a function, does not.
  auto tmp = util::TempDir::create(util::scratch_root(), "integrity-ns-");
  ASSERT_TRUE(tmp.has_value());
  for (const char* side : {"original", "candidate"}) fs::create_directories(tmp->path() / side);
  ASSERT_TRUE(util::write_file(tmp->path() / "original/hw.c", "static int f(void)\n{\n\treturn 0;\n}\nMODULE_LICENSE(\"GPL\");\n")
                  .has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "candidate/hw.c",
                               "MODULE_IMPORT_NS(\"OTHER_NS\");\nstatic int f(void)\n{\n\tint y = 1;\n\treturn 0;\n}\n"
                               "MODULE_LICENSE(\"GPL\");\nMODULE_IMPORT_NS(\"IIO_CONSUMER\");\n")
                  .has_value());
  core::Diagnostic d;
  d.tool = "modpost";
  d.kind = core::DiagKind::modpost_other;
  d.message = "hw.ko: module uses symbol 'iio_get_channel_type' from namespace 'IIO_CONSUMER', but does not import it.";
  gate::IntegrityInput in;
  in.original = tmp->path() / "original";
  in.candidate = tmp->path() / "candidate";
  in.diagnostics = {d};
  auto r = gate::check_integrity(in);
  EXPECT_FALSE(fired(r, "unrelated-change", "hw.c", 8)) << dump(r);
  EXPECT_TRUE(fired(r, "unrelated-change", "hw.c", 1)) << dump(r);
  EXPECT_TRUE(fired(r, "unrelated-change", "hw.c", 4)) << dump(r);
}

TEST(Integrity, BadInputNeverThrows) {
  auto tmp = util::TempDir::create(util::scratch_root(), "integrity-test-");
  ASSERT_TRUE(tmp);
  fs::path o = tmp->path() / "o", c = tmp->path() / "c";
  fs::create_directories(o);
  fs::create_directories(c);
  auto put = [](const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; };
  put(o / "Makefile", "obj-m += a.o b.o\n");
  put(c / "Makefile", "obj-m += a.o b.o\n");
  put(o / "fw.bin", std::string("\x7f\0\x01\x02", 4));
  put(c / "fw.bin", std::string("\x7f\0\x01\x03", 4));
  put(o / "a.c", "int f( {{{ \"unterminated\n/* open comment\n");
  put(c / "a.c", "int f( {{{ \"unterminated\n/* open comment\n}}}\n");
  put(o / "b.c", "static int gone(void)\n{\n\tdo_a();\n\treturn do_b();\n}\n");
  put(c / "new.h", "#define X 1\n");
  put(o / "a.o", "junk");
  auto r = gate::check_integrity({o, c, {}, {}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.changed_files, (std::vector<std::string>{"a.c", "b.c", "fw.bin", "new.h"}));
  EXPECT_TRUE(fired(r, "function-deleted", "b.c", 0)) << dump(r);
  EXPECT_TRUE(fired(r, "unrelated-change", "fw.bin", 0)) << dump(r);
  auto j = gate::to_json(r);
  EXPECT_EQ(j["rule_counts"]["function-deleted"], 1);
  EXPECT_EQ(j["violations"][0]["rule"].get<std::string>().empty(), false);

  // Identical trees: nothing changed, nothing fires.
  auto same = gate::check_integrity({o, o, {}, {}});
  EXPECT_TRUE(same.ok) << dump(same);
  EXPECT_TRUE(same.changed_files.empty());
  EXPECT_EQ(same.hunks, 0);
}

namespace {

/// The integrity report of one file edited from ORIGINAL to CANDIDATE, no diagnostics.
gate::IntegrityReport check_texts(const std::string& original, const std::string& candidate) {
  auto dir = util::TempDir::create(util::scratch_root(), "test-integrity-");
  EXPECT_TRUE(dir.has_value());
  fs::create_directories(dir->path() / "o");
  fs::create_directories(dir->path() / "c");
  EXPECT_TRUE(util::write_file(dir->path() / "o" / "compat.h", original));
  EXPECT_TRUE(util::write_file(dir->path() / "c" / "compat.h", candidate));
  gate::IntegrityInput in;
  in.original = dir->path() / "o";
  in.candidate = dir->path() / "c";
  return gate::check_integrity(in);
}

} // namespace

// A rename applied inside the driver's own compat layer: `#define new(x) old(x)` -> `new(x)`.
TEST(Integrity, ShimRewrittenIntoSelfReferenceIsRejected) {
  auto r = check_texts("#define timer_delete_sync(t) del_timer_sync(t)\n#define OLD_FLAG old_flag\n",
                       "#define timer_delete_sync(t) timer_delete_sync(t)\n#define OLD_FLAG (OLD_FLAG)\n");
  EXPECT_TRUE(fired(r, "shim-self-reference", "compat.h", 1)) << dump(r);
  EXPECT_TRUE(fired(r, "shim-self-reference", "compat.h", 2)) << dump(r);
  EXPECT_FALSE(r.ok);
}

TEST(Integrity, InlineShimCallingItselfIsRejected) {
  auto r = check_texts("static inline int new_get(int a)\n{\n\treturn old_get(a);\n}\n",
                       "static inline int new_get(int a)\n{\n\treturn new_get(a);\n}\n");
  EXPECT_TRUE(fired(r, "shim-self-reference", "compat.h", 1)) << dump(r);
}

TEST(Integrity, EmptiedShimIsRejected) {
  auto r = check_texts("#define new_name(x) old_name(x, 0)\n", "#define new_name(x)\n");
  EXPECT_TRUE(fired(r, "shim-emptied", "compat.h", 1)) << dump(r);
}

// Dropping the shim, a marker `#define X X` the driver had already, and an argument-changing
// self-named macro (`f(a, b)` -> `f(a)`, a real compat mapping) are not self-references.
TEST(Integrity, DroppedShimAndMarkersAreNotSelfReferences) {
  auto r = check_texts("#define new_name(x) old_name(x)\n#define has_feature has_feature\nint a;\n",
                       "#define has_feature has_feature\nint b;\n");
  EXPECT_EQ(count(r, "shim-self-reference"), 0) << dump(r);
  EXPECT_EQ(count(r, "shim-emptied"), 0) << dump(r);
  auto r2 = check_texts("#define alloc_x(a, b) old_alloc_x(a, b)\n", "#define alloc_x(a, b) alloc_x(a)\n");
  EXPECT_EQ(count(r2, "shim-self-reference"), 0) << dump(r2);
}

// The driver's macro gcc says the target redefines (`"scmd_dbg" redefined` on its first line) is
// removed with its continuation lines: the diagnostic explains the whole directive.
TEST(Integrity, AMultiLineMacroTheDiagnosticNamesMayGo) {
  auto dir = util::TempDir::create(util::scratch_root(), "test-integrity-");
  ASSERT_TRUE(dir);
  fs::create_directories(dir->path() / "o");
  fs::create_directories(dir->path() / "c");
  const std::string keep = "int f(void)\n{\n\treturn 0;\n}\n";
  ASSERT_TRUE(util::write_file(dir->path() / "o" / "drv.c",
                               "#define scmd_dbg(s, fmt, a...) \\\n    dev_dbg(&(s)->dev, fmt, ##a)\n" + keep));
  ASSERT_TRUE(util::write_file(dir->path() / "c" / "drv.c", keep));
  gate::IntegrityInput in;
  in.original = dir->path() / "o";
  in.candidate = dir->path() / "c";
  gate::ParseOptions o;
  o.tree_root = "/t";
  auto ds = gate::parse_build_output("/t/drv.c:1:1: error: \"scmd_dbg\" redefined [-Werror]\n", o);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].symbols, (std::vector<std::string>{"scmd_dbg"}));
  in.diagnostics = ds;
  auto r = gate::check_integrity(in);
  EXPECT_TRUE(r.ok) << dump(r);
  in.diagnostics.clear(); // with no diagnostic there, the same removal is unexplained
  EXPECT_FALSE(gate::check_integrity(in).ok);
}

// A callback handed to a call whose API changed (`setup_timer(&t, fn, 1)` -> `timer_setup(&t, fn,
// 0)`; gcc reports the implicit declaration in the first function only) may be retyped with its
// body and its prototype in a header; with no changed symbol naming that line, it is unexplained.
TEST(Integrity, ACallbackHandedToAChangedCallMayChangeInEveryFile) {
  auto dir = util::TempDir::create(util::scratch_root(), "test-integrity-");
  ASSERT_TRUE(dir);
  for (const char* side : {"o", "c"}) fs::create_directories(dir->path() / side);
  const std::string first = "struct timer_list a, b;\nstatic void one(void)\n{\n";
  const std::string body = "void fire(%)\n{\n\tif (@)\n\t\tpr_info(\"x\");\n}\n";
  auto text = [&](const std::string& call, const std::string& param, const std::string& use) {
    std::string b = body;
    b.replace(b.find('%'), 1, param);
    b.replace(b.find('@'), 1, use);
    return first + "\t" + call + "(&a, NULL, 0);\n}\nstatic void two(void)\n{\n\t" + call + "(&b, fire, " +
           (use == "1" ? "0" : "1") + ");\n}\n" + b;
  };
  ASSERT_TRUE(util::write_file(dir->path() / "o" / "drv.c", text("setup_timer", "unsigned long v", "v")));
  ASSERT_TRUE(util::write_file(dir->path() / "c" / "drv.c", text("timer_setup", "struct timer_list *t", "1")));
  ASSERT_TRUE(util::write_file(dir->path() / "o" / "drv.h", "void fire(unsigned long v);\n"));
  ASSERT_TRUE(util::write_file(dir->path() / "c" / "drv.h", "void fire(struct timer_list *t);\n"));
  gate::IntegrityInput in;
  in.original = dir->path() / "o";
  in.candidate = dir->path() / "c";
  gate::ParseOptions o;
  o.tree_root = "/t";
  in.diagnostics = gate::parse_build_output("/t/drv.c:4:2: error: implicit declaration of function 'setup_timer' [-Werror]\n", o);
  ASSERT_EQ(in.diagnostics.size(), 1u);
  in.removed_symbols = {"setup_timer"};
  auto r = gate::check_integrity(in);
  EXPECT_TRUE(r.ok) << dump(r);
  in.removed_symbols.clear(); // two()'s line names nothing that changed
  EXPECT_FALSE(gate::check_integrity(in).ok);
}

// A table passed on a diagnosed line whose struct type changed (`proc_create(..., &fops)` of a
// file_operations the target wants as proc_ops) loses the members the new type lacks (`.owner`);
// the same table not on a diagnosed line may not.
TEST(Integrity, ATablePassedOnADiagnosedLineLosesWhatItsNewTypeLacks) {
  auto dir = util::TempDir::create(util::scratch_root(), "test-integrity-");
  ASSERT_TRUE(dir);
  for (const char* side : {"o", "c"}) fs::create_directories(dir->path() / side);
  const std::string tail = "int init(void)\n{\n\treturn proc_create(\"x\", 0, NULL, &fops) ? 0 : -1;\n}\n";
  ASSERT_TRUE(
      util::write_file(dir->path() / "o" / "drv.c",
                       "static const struct file_operations fops = {\n\t.owner = THIS_MODULE,\n\t.open = x_open,\n};\n" + tail));
  ASSERT_TRUE(util::write_file(dir->path() / "c" / "drv.c",
                               "static const struct proc_ops fops = {\n\t.proc_open = x_open,\n};\n" + tail));
  gate::IntegrityInput in;
  in.original = dir->path() / "o";
  in.candidate = dir->path() / "c";
  gate::ParseOptions o;
  o.tree_root = "/t";
  in.diagnostics = gate::parse_build_output(
      "/t/drv.c:7:39: error: passing argument 4 of 'proc_create' from incompatible pointer type [-Werror]\n", o);
  ASSERT_EQ(in.diagnostics.size(), 1u);
  auto r = gate::check_integrity(in);
  EXPECT_TRUE(r.ok) << dump(r);
  in.diagnostics = gate::parse_build_output("/t/drv.c:6:1: error: something else [-Werror]\n", o);
  ASSERT_EQ(in.diagnostics.size(), 1u);
  EXPECT_FALSE(gate::check_integrity(in).ok);
}

// A statement folded into the changed call beside it (`hrtimer_init(); t.function = f;` ->
// `hrtimer_setup(&t, f, ...)`) is part of the change, not an unrelated one; a fold that loses a
// variable of the folded statement (the callback gone) is not.
TEST(Integrity, AStatementFoldedIntoTheChangedCallIsPartOfTheChange) {
  auto dir = util::TempDir::create(util::scratch_root(), "test-integrity-");
  ASSERT_TRUE(dir);
  for (const char* side : {"o", "c"}) fs::create_directories(dir->path() / side);
  const std::string cb = "static enum hrtimer_restart foo_hr(struct hrtimer *h)\n{\n\treturn HRTIMER_NORESTART;\n}\n";
  ASSERT_TRUE(util::write_file(dir->path() / "o" / "drv.c",
                               cb + "int pr(struct foo *f)\n{\n\thrtimer_init(&f->hr, CLOCK_MONOTONIC, HRTIMER_MODE_REL);\n"
                                    "\tf->hr.function = foo_hr;\n\tf->n = 1;\n\treturn 0;\n}\n"));
  const auto candidate = [&](const std::string& call) {
    return util::write_file(dir->path() / "c" / "drv.c",
                            cb + "int pr(struct foo *f)\n{\n\t" + call + "\n\tf->n = 1;\n\treturn 0;\n}\n");
  };
  ASSERT_TRUE(candidate("hrtimer_setup(&f->hr, foo_hr, CLOCK_MONOTONIC, HRTIMER_MODE_REL);"));
  gate::IntegrityInput in;
  in.original = dir->path() / "o";
  in.candidate = dir->path() / "c";
  in.removed_symbols = {"hrtimer_init", "hrtimer_setup"};
  auto r = gate::check_integrity(in);
  EXPECT_TRUE(r.ok) << dump(r);
  ASSERT_TRUE(candidate("hrtimer_setup(&f->hr, NULL, CLOCK_MONOTONIC, HRTIMER_MODE_REL);"));
  EXPECT_FALSE(gate::check_integrity(in).ok);
}
