// Feature switches: the scanner of two-branch `#ifdef M` tests, the feature-switch proposer on a
// real DKMS driver (acpi-call's HAVE_PROC_CREATE, tests/fixtures/feature_switch) and the
// integrity rule that lets exactly such a `#define` through.

#include "autodriver/gate/feature_switch.hpp"
#include "autodriver/gate/integrity.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/files.hpp"
#include "fixtures.hpp"

#include <gtest/gtest.h>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

core::Diagnostic error_at(const std::string& file, int line, const std::string& message) {
  core::Diagnostic d;
  d.file = file;
  d.line = line;
  d.severity = core::Severity::error;
  d.message = message;
  return d;
}

struct Tree {
  util::Expected<util::TempDir> dir = util::TempDir::create(util::scratch_root(), "fswitch-test-");
  fs::path original() const { return dir->path() / "original"; }
  fs::path candidate() const { return dir->path() / "candidate"; }
  Tree() {
    fs::create_directories(original());
    (void)util::write_file(original() / "acpi_call.c", fixture("feature_switch/acpi_call.c"));
    (void)util::write_file(original() / "Makefile", "obj-m := acpi_call.o\n");
    fs::copy(original(), candidate(), fs::copy_options::recursive);
  }
};

std::vector<core::Diagnostic> acpi_errors() {
  return {error_at("acpi_call.c", 412, "implicit declaration of function 'create_proc_entry'; did you mean 'remove_proc_entry'?"),
          error_at("acpi_call.c", 423, "invalid use of undefined type 'struct proc_dir_entry'")};
}

} // namespace

TEST(FeatureSwitchScan, TwoBranchTestsOnly) {
  const std::string text = "#ifndef _X_H\n#define _X_H\n"                                    // 1-2 include guard
                           "#ifdef HAVE_A\nint a;\n#else\nint b;\n#endif\n"                  // 3-7
                           "#if !defined(HAVE_B)\nint c;\n#else\nint d;\n#endif\n"           // 8-12
                           "#ifdef HAVE_C\nint e;\n#endif\n"                                 // 13-15 no #else
                           "#ifdef HAVE_D\nint f;\n#elif X\nint g;\n#else\nint h;\n#endif\n" // 16-22 elif
                           "#ifdef CONFIG_E\nint i;\n#else\nint j;\n#endif\n"                // 23-27 kernel config
                           "#if HAVE_F\nint k;\n#else\nint l;\n#endif\n"                     // 28-32 value test
                           "#endif\n";
  auto tests = gate::switch_tests(text);
  ASSERT_EQ(tests.size(), 4u);
  EXPECT_EQ(tests[0].macro, "HAVE_A");
  EXPECT_EQ(tests[0].depth, 0);
  EXPECT_TRUE(tests[0].first_if_defined);
  EXPECT_EQ(tests[1].macro, "HAVE_B");
  EXPECT_FALSE(tests[1].first_if_defined);
  EXPECT_EQ(tests[2].macro, "HAVE_C");
  EXPECT_FALSE(tests[2].has_else);
  EXPECT_EQ(tests[3].macro, "HAVE_F");
  EXPECT_TRUE(tests[3].value_test);
  auto off = [&](int line) {
    std::vector<std::string> out;
    for (const auto* t : gate::switches_off_at(tests, line)) out.push_back(t->macro);
    return out;
  };
  EXPECT_EQ(off(6), std::vector<std::string>{"HAVE_A"}); // #else of #ifdef HAVE_A
  EXPECT_TRUE(off(4).empty());                           // compiled only when HAVE_A is defined
  EXPECT_EQ(off(9), std::vector<std::string>{"HAVE_B"}); // first branch of !defined(HAVE_B)
  EXPECT_EQ(off(31), std::vector<std::string>{"HAVE_F"});
  EXPECT_TRUE(off(14).empty()); // one-sided, and HAVE_C has no two-branch test: an option, not a switch
  // one-sided fallback code of a macro that also switches two implementations (dpdk's
  // `#ifndef HAVE_PCI_MSI_MASK_IRQ` helpers next to its `#ifdef ... #else` call site)
  auto t2 = gate::switch_tests("#ifndef HAVE_M\nint helper;\n#endif\n#ifdef HAVE_M\nint a;\n#else\nint b;\n#endif\n");
  ASSERT_EQ(gate::switches_off_at(t2, 2).size(), 1u);
  EXPECT_EQ(gate::defined_switch("#define HAVE_A"), "HAVE_A");
  EXPECT_EQ(gate::defined_switch("# define HAVE_A 1 /* why */"), "HAVE_A");
  EXPECT_EQ(gate::defined_switch("#define HAVE_A foo()"), "");
}

TEST(FeatureSwitch, DefinesTheDriversOwnMacroAfterItsPreamble) {
  Tree t;
  propose::PortContext ctx;
  ctx.tree = t.original();
  ctx.original_tree = t.original();
  auto edits = propose::make_feature_switch()->propose(acpi_errors(), ctx);
  ASSERT_EQ(edits.size(), 1u);
  const auto& e = edits[0];
  EXPECT_EQ(e.proposer, "feature-switch");
  EXPECT_EQ(e.change_id, "feature:HAVE_PROC_CREATE");
  ASSERT_EQ(e.text_edits.size(), 1u);
  EXPECT_EQ(e.text_edits[0].file, "acpi_call.c");
  EXPECT_EQ(e.text_edits[0].text, "#define HAVE_PROC_CREATE\n");
  // after `#define MAX_ACPI_ARGS 16` (line 28), where the maintainers' own block was
  EXPECT_EQ(e.text_edits[0].line, 29);
  EXPECT_EQ(e.text_edits[0].remove, 0);
}

TEST(FeatureSwitch, NoSwitchForErrorsOutsideSuchBlocksOrForDebugMacros) {
  Tree t;
  propose::PortContext ctx;
  ctx.tree = t.original();
  // line 150 is plain code; `#ifdef DEBUG` blocks are never switched
  EXPECT_TRUE(propose::make_feature_switch()->propose({error_at("acpi_call.c", 150, "x")}, ctx).empty());
  (void)util::write_file(t.original() / "d.c", "#ifdef DEBUG\nint a;\n#else\nint b;\n#endif\n");
  EXPECT_TRUE(propose::make_feature_switch()->propose({error_at("d.c", 4, "x")}, ctx).empty());
  // a macro the Makefile sets is the build's business
  (void)util::write_file(t.original() / "Makefile", "obj-m := acpi_call.o\nccflags-y += -DHAVE_PROC_CREATE\n");
  EXPECT_TRUE(propose::make_feature_switch()->propose(acpi_errors(), ctx).empty());
}

TEST(FeatureSwitch, IntegrityAcceptsTheSwitchButNotAnUnrelatedDefine) {
  Tree t;
  auto text = *util::read_file(t.candidate() / "acpi_call.c");
  auto at = text.find("#define MAX_ACPI_ARGS 16\n");
  ASSERT_NE(at, std::string::npos);
  at += std::string("#define MAX_ACPI_ARGS 16\n").size();
  (void)util::write_file(t.candidate() / "acpi_call.c", text.substr(0, at) + "#define HAVE_PROC_CREATE\n" + text.substr(at));
  gate::IntegrityInput in;
  in.original = t.original();
  in.candidate = t.candidate();
  in.diagnostics = acpi_errors();
  auto ok = gate::check_integrity(in);
  EXPECT_TRUE(ok.ok) << gate::to_json(ok).dump(1);
  (void)util::write_file(t.candidate() / "acpi_call.c", text.substr(0, at) + "#define HAVE_SOMETHING_ELSE\n" + text.substr(at));
  auto bad = gate::check_integrity(in);
  EXPECT_FALSE(bad.ok);
  // without the diagnostics in its #else branch the switch is not explained either
  (void)util::write_file(t.candidate() / "acpi_call.c", text.substr(0, at) + "#define HAVE_PROC_CREATE\n" + text.substr(at));
  in.diagnostics = {error_at("acpi_call.c", 150, "x")};
  EXPECT_FALSE(gate::check_integrity(in).ok);
}
