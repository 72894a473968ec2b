// gcc / kbuild / modpost output parsing, on real builds of 6.1 drivers against 6.12 headers.

#include "autodriver/gate/diag_refine.hpp"
#include "autodriver/gate/gcc_parser.hpp"
#include "autodriver/util/files.hpp"
#include "fixtures.hpp"

#include <algorithm>

using namespace autodriver;
using core::DiagKind;

namespace {

std::vector<core::Diagnostic> parse(const std::string& name, const std::string& root) {
  gate::ParseOptions o;
  o.tree_root = root;
  return gate::parse_build_output(fixture(name), o);
}

int count(const std::vector<core::Diagnostic>& ds, DiagKind k) {
  return static_cast<int>(std::count_if(ds.begin(), ds.end(), [&](const auto& d) { return d.kind == k; }));
}

const core::Diagnostic* find(const std::vector<core::Diagnostic>& ds, DiagKind k, const std::string& sym) {
  for (const auto& d : ds)
    if (d.kind == k && std::find(d.symbols.begin(), d.symbols.end(), sym) != d.symbols.end()) return &d;
  return nullptr;
}

} // namespace

TEST(GccParser, PpdevClassCreateAndNoLlseek) {
  auto ds = parse("gcc/6.12-char-ppdev.txt", "/tmp/fixture-work/gcc/ppdev");
  int errors =
      static_cast<int>(std::count_if(ds.begin(), ds.end(), [](const auto& d) { return d.severity == core::Severity::error; }));
  EXPECT_EQ(errors, 4);
  const auto* cc = find(ds, DiagKind::too_many_arguments, "class_create");
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(cc->file, "ppdev.c");
  EXPECT_GT(cc->line, 0);
  EXPECT_GT(cc->column, 0);
  EXPECT_EQ(cc->function, "ppdev_init");
  // The note that says where the 6.12 declaration lives, pointing into the kernel headers.
  ASSERT_FALSE(cc->notes.empty());
  EXPECT_NE(cc->notes[0].file.find("include/linux/device/class.h"), std::string::npos);
  EXPECT_NE(cc->raw.find("note: declared here"), std::string::npos);
  EXPECT_NE(find(ds, DiagKind::undeclared_identifier, "no_llseek"), nullptr);
  EXPECT_EQ(count(ds, DiagKind::no_member), 1);
  EXPECT_EQ(count(ds, DiagKind::incompatible_pointer_type), 1);
}

TEST(GccParser, MissingHeaderIsFatal) {
  auto ds = parse("gcc/6.12-hwmon-aquacomputer_d5next.txt", "/tmp/fixture-work/gcc/aquacomputer_d5next");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, DiagKind::missing_header);
  EXPECT_EQ(ds[0].severity, core::Severity::fatal);
  ASSERT_EQ(ds[0].symbols.size(), 1u);
  EXPECT_EQ(ds[0].symbols[0], "asm/unaligned.h");
}

TEST(GccParser, StrlcpyImplicitDeclarationWithFlag) {
  auto ds = parse("gcc/6.12-hwmon-pmbus-max20730.txt", "/tmp/fixture-work/gcc/max20730");
  const auto* d = find(ds, DiagKind::implicit_function_declaration, "strlcpy");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->flag, "-Werror=implicit-function-declaration");
  EXPECT_EQ(d->message.find("[-W"), std::string::npos);
  // .probe_new: the member the 6.12 struct lost.
  EXPECT_NE(find(ds, DiagKind::no_member, "probe_new"), nullptr);
}

TEST(GccParser, KindCountsMatchTheFixtureReadme) {
  struct Expect {
    const char* file;
    DiagKind kind;
    int n;
  };
  // Counts measured with grep in tests/fixtures/gcc/README.md.
  const Expect expects[] = {
      {"6.12-vhost-vdpa.txt", DiagKind::too_few_arguments, 3},
      {"6.12-vhost-vdpa.txt", DiagKind::too_many_arguments, 3},
      {"6.12-iommu-amd_iommu_v2.txt", DiagKind::unknown_type, 4},
      {"6.12-iommu-amd_iommu_v2.txt", DiagKind::undeclared_identifier, 10},
      {"6.12-platform-x86-acerhdf.txt", DiagKind::implicit_function_declaration, 3},
      {"6.12-platform-x86-acerhdf.txt", DiagKind::no_member, 5},
      {"6.12-platform-x86-acerhdf.txt", DiagKind::incompatible_pointer_type, 6},
      {"6.12-platform-x86-acerhdf.txt", DiagKind::incomplete_type, 2},
      {"6.12-platform-x86-intel_ifs.txt", DiagKind::conflicting_types, 3},
      {"6.12-platform-x86-intel_ifs.txt", DiagKind::missing_header, 1},
      {"6.12-media-rcar_drif.txt", DiagKind::incompatible_pointer_type, 4},
  };
  for (const auto& e : expects) {
    auto ds = parse(std::string("gcc/") + e.file, "");
    int n = 0;
    for (const auto& d : ds)
      if (d.kind == e.kind && d.severity != core::Severity::warning) ++n;
    EXPECT_EQ(n, e.n) << e.file << " " << core::to_string(e.kind);
  }
}

TEST(GccParser, RemoveCallbackTypeChange) {
  auto ds = parse("gcc/6.12-platform-x86-acerhdf.txt", "");
  bool found = false;
  for (const auto& d : ds) {
    if (d.kind != DiagKind::incompatible_pointer_type || d.symbols.size() < 2) continue;
    if (d.symbols[0] == "void (*)(struct platform_device *)" && d.symbols[1] == "int (*)(struct platform_device *)") found = true;
  }
  EXPECT_TRUE(found) << "platform_driver.remove int->void not recognised";
}

TEST(GccParser, ModpostUndefinedSymbols) {
  auto ds = parse("modpost/6.12-modpost_undef.txt", "/tmp/fixture-work/mods/mp6.12/modpost_undef");
  std::vector<std::string> syms;
  for (const auto& d : ds)
    if (d.kind == DiagKind::modpost_undefined_symbol) syms.push_back(d.symbols.at(0));
  EXPECT_EQ(syms, (std::vector<std::string>{"strlcpy", "kallsyms_lookup_name", "sched_setscheduler"}));
  for (const auto& d : ds) {
    if (d.kind == DiagKind::modpost_undefined_symbol) {
      EXPECT_EQ(d.file, "modpost_undef.ko");
    }
  }
}

TEST(GccParser, ModpostGplOnlyIsAnError) {
  auto ds = parse("modpost/6.12-modpost_gpl.txt", "");
  bool found = false;
  for (const auto& d : ds)
    if (d.tool == "modpost" && d.severity == core::Severity::error &&
        std::find(d.symbols.begin(), d.symbols.end(), "device_match_name") != d.symbols.end())
      found = true;
  EXPECT_TRUE(found);
}

TEST(GccParser, ClassifiesSingleMessages) {
  std::vector<std::string> s;
  EXPECT_EQ(gate::classify_message("'struct i2c_driver' has no member named 'probe_new'", s), DiagKind::no_member);
  EXPECT_EQ(s, (std::vector<std::string>{"struct i2c_driver", "probe_new"}));
  s.clear();
  EXPECT_EQ(gate::classify_message("unknown type name 'amd_iommu_invalid_ppr_cb'", s), DiagKind::unknown_type);
  s.clear();
  EXPECT_EQ(gate::classify_message("'return' with a value, in function returning void", s), DiagKind::incompatible_return_type);
  s.clear();
  EXPECT_EQ(gate::classify_message("passing argument 1 of 'kfree' makes pointer from integer without a cast", s),
            DiagKind::int_conversion);
  s.clear();
  EXPECT_EQ(gate::classify_message("something nobody has seen 'x'", s), DiagKind::other);
  EXPECT_EQ(s, (std::vector<std::string>{"x"}));
}

// openvpn-dco on 6.12: MODULE_ALIAS_GENL_FAMILY left <linux/genetlink.h>, so its file-scope call
// parses as an old-style declaration and gcc blames the uapi header defining the argument.
TEST(GccParser, FileScopeCallOfMovedMacroBecomesImplicitDeclaration) {
  auto ds = parse("gcc/6.12-dkms-ovpn-dco.txt", "/tmp/fixture-work/gcc/ovpn-dco");
  auto dir = util::TempDir::create(util::scratch_root(), "refine-");
  ASSERT_TRUE(dir.has_value());
  std::filesystem::create_directories(dir->path() / "drivers/net/ovpn-dco");
  std::string main_c;
  for (int i = 1; i < 263; ++i) main_c += "\n";
  main_c += "MODULE_ALIAS_GENL_FAMILY(OVPN_NL_NAME);\n";
  ASSERT_TRUE(util::write_file(dir->path() / "drivers/net/ovpn-dco/main.c", main_c).has_value());
  ASSERT_EQ(count(ds, DiagKind::syntax_error), 1);

  auto refined = ds;
  gate::refine_with_sources(refined, dir->path());
  EXPECT_EQ(count(refined, DiagKind::syntax_error), 0);
  const auto* d = find(refined, DiagKind::implicit_function_declaration, "MODULE_ALIAS_GENL_FAMILY");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->file, "drivers/net/ovpn-dco/main.c");
  EXPECT_EQ(d->line, 263);
  // The undeclared NETIF_F_LLTX inside a function is left as it was.
  EXPECT_NE(find(refined, DiagKind::undeclared_identifier, "NETIF_F_LLTX"), nullptr);

  // The same error at a line that is not a call stays a syntax error.
  std::string other;
  for (int i = 1; i < 263; ++i) other += "\n";
  other += "static const char *name = OVPN_NL_NAME;\n";
  ASSERT_TRUE(util::write_file(dir->path() / "drivers/net/ovpn-dco/main.c", other).has_value());
  auto kept = ds;
  gate::refine_with_sources(kept, dir->path());
  EXPECT_EQ(count(kept, DiagKind::syntax_error), 1);
}

// tp-smapi on 6.12: DEFINE_SEMAPHORE takes two arguments now; called with one it stays
// unexpanded and gcc also says "type defaults to 'int'": that is the macro's arity, not a name
// the target lacks.
TEST(GccParser, MacroCalledWithTooFewArgumentsStaysAnArityError) {
  auto dir = util::TempDir::create(util::scratch_root(), "refine-arity-");
  ASSERT_TRUE(dir.has_value());
  ASSERT_TRUE(util::write_file(dir->path() / "thinkpad_ec.c", "\n\nstatic DEFINE_SEMAPHORE(thinkpad_ec_mutex);\n").has_value());
  auto ds = gate::parse_build_output(
      "/t/thinkpad_ec.c:3:42: error: macro \"DEFINE_SEMAPHORE\" requires 2 arguments, but only 1 given\n"
      "/t/thinkpad_ec.c:3:8: error: type defaults to 'int' in declaration of 'DEFINE_SEMAPHORE' [-Werror=implicit-int]\n",
      gate::ParseOptions{"/t", "gcc"});
  ASSERT_EQ(ds.size(), 2u);
  gate::refine_with_sources(ds, dir->path());
  EXPECT_EQ(count(ds, DiagKind::implicit_function_declaration), 0);
  EXPECT_EQ(count(ds, DiagKind::too_few_arguments), 1);
  // Without the arity error the same line is a call of a name the target does not define.
  ds.erase(ds.begin());
  gate::refine_with_sources(ds, dir->path());
  EXPECT_NE(find(ds, DiagKind::implicit_function_declaration, "DEFINE_SEMAPHORE"), nullptr);
}

TEST(GccParser, ObjtoolErrorsAreDiagnostics) {
  // objtool runs on each object after it is built; its refusal carries no source line, and a
  // build that failed only there must not read as "0 error(s)".
  const std::string out =
      "  LD [M]  lime.o\n"
      "lime.o: error: objtool: init_module(): Magic init_module() function name is deprecated, use module_init(fn) "
      "instead\n"
      "drv.o: warning: objtool: drv_read+0x2f: call to copy_from_user() with UACCESS enabled\n";
  auto ds = gate::parse_build_output(out, {});
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].tool, "objtool");
  EXPECT_EQ(ds[0].file, "lime.o");
  EXPECT_EQ(ds[0].severity, core::Severity::error);
  EXPECT_EQ(ds[0].function, "init_module");
  EXPECT_EQ(ds[0].message.rfind("init_module(): Magic", 0), 0u) << ds[0].message;
  EXPECT_EQ(ds[1].severity, core::Severity::warning);
}

TEST(GccParser, AssemblerErrorsBelongToTheObjectBeingCompiled) {
  // EXPORT_SYMBOL_NS_GPL(f, PMBUS) against 7.x: the compiler passes it, the assembler does not.
  const std::string out = "  CC [M]  /autodriver/tree/pmbus_core.o\n"
                          "/tmp/ccXSV0li.s: Assembler messages:\n"
                          "/tmp/ccXSV0li.s:7: Error: junk at end of line, first unrecognized character is `P'\n"
                          "/tmp/ccXSV0li.s:8: Error: junk at end of line, first unrecognized character is `P'\n";
  gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  auto ds = gate::parse_build_output(out, o);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].tool, "as");
  EXPECT_EQ(ds[0].file, "pmbus_core.c");
  EXPECT_EQ(ds[0].severity, core::Severity::error);
  EXPECT_EQ(ds[0].message, ds[1].message) << "one error, however many lines";
}

TEST(GccParser, AMissingFileTheMakefileNamesIsAnError) {
  // A vendor Makefile compiling a sibling folder the copy did not include: make's refusal is
  // the build's one error, not "0 error(s)".
  const std::string out = "make[2]: *** No rule to make target '/autodriver/tree/../common/hal/hal.o', needed by "
                          "'/autodriver/tree/drv.o'.  Stop.\n"
                          "make[1]: *** [Makefile:1234: /autodriver/tree] Error 2\n";
  gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  auto ds = gate::parse_build_output(out, o);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].tool, "make");
  EXPECT_EQ(ds[0].severity, core::Severity::error);
  EXPECT_EQ(ds[0].file, "../common/hal/hal.o");
  EXPECT_NE(ds[0].message.find("which is not there"), std::string::npos) << ds[0].message;
  EXPECT_NE(ds[0].message.find("drv.o"), std::string::npos) << ds[0].message;
  EXPECT_NE(ds[0].message.find("--root"), std::string::npos) << ds[0].message;
}

TEST(Diagnostic, FromJsonOfAnyShapeNeverThrows) {
  // A run store written by an older version (RunStore::steps reads it): wrong types fall back to defaults.
  for (const char* text : {R"({"line": "x", "notes": [1, {"line": "a", "file": 3}], "symbols": "s", "tool": null})",
                           R"([1, 2, 3])", R"("just a string")", R"({"severity": 5, "kind": ["other"]})"}) {
    auto j = nlohmann::json::parse(text);
    core::Diagnostic d;
    EXPECT_NO_THROW(d = core::diagnostic_from_json(j)) << text;
    EXPECT_EQ(d.line, 0) << text;
  }
  auto d = core::diagnostic_from_json(nlohmann::json::parse(R"({"line": "x", "file": "a.c", "tool": null})"));
  EXPECT_EQ(d.file, "a.c");
  EXPECT_EQ(d.tool, "gcc");
}

TEST(GccParser, ABuildInASubfolderNamesFilesRelativeToTheTree) {
  // A driver under a root (gate/build_root.hpp) built with M=<tree>/drivers/tick: 7.x kbuild names
  // files relative to M=, 6.x absolute; kernel headers keep their absolute paths.
  const std::string out = "../../common/timer_helpers.c:6:9: error: implicit declaration of function 'del_timer_sync' "
                          "[-Wimplicit-function-declaration]\n"
                          "/autodriver/tree/drivers/tick/../../common/inc/h.h:2:1: error: unknown type name 'foo'\n"
                          "main.c:3:1: warning: unused variable 'x' [-Wunused-variable]\n"
                          "/usr/src/linux/include/linux/timer.h:10:5: note: declared here\n";
  gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  o.subdir = "drivers/tick";
  auto ds = gate::parse_build_output(out, o);
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds[0].file, "common/timer_helpers.c");
  EXPECT_EQ(ds[1].file, "common/inc/h.h");
  EXPECT_EQ(ds[2].file, "drivers/tick/main.c");
  ASSERT_EQ(ds[2].notes.size(), 1u);
  EXPECT_EQ(ds[2].notes[0].file, "/usr/src/linux/include/linux/timer.h");
}

// A Makefile passing `M=$(PWD)/` on makes gcc print "/tree//x.c": the file is still the tree's x.c.
TEST(GccParser, ADoubledSlashInTheTreePathIsTheSameFile) {
  gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  auto ds = gate::parse_build_output("/autodriver/tree//kvmfr.c:429:22: error: 'MEMORY_DEVICE_DEVDAX' undeclared (first use in "
                                     "this function)\n",
                                     o);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].file, "kvmfr.c");
  EXPECT_EQ(ds[0].line, 429);
}

// A header a sub-folder includes by a relative path ("../../main.h") is one file of the tree,
// whichever folder included it; a path that leaves the tree keeps its "..".
TEST(GccParser, AHeaderReachedThroughDotDotIsTheTreesFile) {
  gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  auto ds = gate::parse_build_output(
      "/autodriver/tree/src/modules/timer/../../main.h:88:5: error: implicit declaration of function 'kzfree'\n"
      "/autodriver/tree/src/modules/kmod/../../main.h:88:5: error: implicit declaration of function 'kzfree'\n"
      "/autodriver/tree/../common/hal.c:3:1: error: unknown type name 'u9'\n",
      o);
  ASSERT_EQ(ds.size(), 3u);
  EXPECT_EQ(ds[0].file, "src/main.h");
  EXPECT_EQ(ds[1].file, "src/main.h");
  EXPECT_EQ(ds[2].file, "../common/hal.c");
}

// falcosecurity's Makefile prints each feature probe's output with $(info $(shell ...)): one line,
// "[configure-kmod] make: Entering directory ... test.c:23:30: error: ...". The probe's errors
// are expected and name no file of the build: not diagnostics.
TEST(GccParser, TextBeforeTheLocationIsNoDiagnostic) {
  gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  auto ds = gate::parse_build_output("[configure-kmod] make: Entering directory '/autodriver/tree/configure/X' "
                                     "/autodriver/tree/configure/X/test.c:23:30: error: 'class_create' undeclared\n"
                                     "/autodriver/tree/main.c:163:1: error: unknown type name 'cputime_t'\n",
                                     o);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].file, "main.c");
  EXPECT_EQ(ds[0].line, 163);
}

TEST(GccParser, LongLinesDoNotExhaustTheStack) {
  // Compiler output is untrusted: a Makefile can print one line of megabytes.
  const std::string n(1 << 20, 'a');
  std::string out = "d.c:1:2: error: " + n + "\n" + n + ": In function 'f':\n" + n + "\nIn file included from " + n + ":\n" + n +
                    ".c:1:2: error: x\n";
  auto ds = gate::parse_build_output(out, {});
  EXPECT_LE(ds.size(), 2u);
}
