// loop::trial_objects: which kbuild single objects judge a trial (issue 16).

#include "autodriver/loop/trial.hpp"
#include "autodriver/loop/trial_objects.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

core::Diagnostic error_in(const std::string& file, const std::string& raw = {}) {
  core::Diagnostic d;
  d.file = file;
  d.line = 3;
  d.message = "implicit declaration of function 'from_timer'";
  d.raw = raw;
  return d;
}

std::string included_from(const std::string& unit) {
  return "In file included from ././include/drv_types.h:27,\n                 from " + unit +
         ":2:\n././include/osdep.h:3:9: error: implicit declaration of function 'from_timer'\n";
}

struct TrialObjectsTest : ::testing::Test {
  std::optional<util::TempDir> tmp;
  fs::path work;
  void SetUp() override {
    auto t = util::TempDir::create(util::scratch_root(), "test-trial-objects-");
    ASSERT_TRUE(t);
    tmp.emplace(std::move(*t));
    work = tmp->path() / "tree";
    put("include/osdep.h", "static inline void f(void) { from_timer(); }\n");
    put("include/drv_types.h", "#include <osdep.h>\n");
    for (const char* u : {"core/a.c", "core/b.c", "core/c.c", "hal/d.c", "hal/e.c", "hal/f.c", "os/g.c"})
      put(u, "#include <linux/kernel.h>\n#include \"../include/drv_types.h\"\nint x;\n");
    put("core/alone.c", "int y;\n");
    put("six.mod.c", "#include <osdep.h>\n");
  }
  void put(const std::string& rel, const std::string& text) {
    fs::create_directories((work / rel).parent_path());
    ASSERT_TRUE(util::write_file(work / rel, text));
  }
};

} // namespace

TEST_F(TrialObjectsTest, AHeaderIsJudgedByTheFilesWithOwnErrorsAndTwoThatReportIt) {
  std::vector<core::Diagnostic> errors;
  for (const char* u : {"core/a.c", "core/b.c", "core/c.c", "hal/d.c", "hal/e.c", "hal/f.c", "os/g.c"})
    errors.push_back(error_in("././include/osdep.h", included_from(u)));
  errors.push_back(error_in("hal/e.c"));
  auto t = loop::trial_objects({"include/osdep.h"}, errors, work);
  EXPECT_TRUE(t.sampled);
  EXPECT_EQ(t.objects, (std::vector<std::string>{"core/a.o", "core/b.o", "hal/e.o"}));
  // A C file with an error of its own among the changed: its object, no sample.
  t = loop::trial_objects({"hal/e.c"}, errors, work);
  EXPECT_FALSE(t.sampled);
  EXPECT_EQ(t.objects, (std::vector<std::string>{"hal/e.o"}));
}

TEST_F(TrialObjectsTest, TheWholeModuleDecidesWhenTheSampleWouldNotSaveMuch) {
  // Two users only: a sample of two is all of them.
  put("include/small.h", "int z;\n");
  put("core/a.c", "#include \"../include/small.h\"\n");
  put("core/b.c", "#include \"../include/small.h\"\n");
  std::vector<core::Diagnostic> errors{error_in("include/small.h", included_from("core/a.c")),
                                       error_in("include/small.h", included_from("core/b.c"))};
  EXPECT_TRUE(loop::trial_objects({"include/small.h"}, errors, work).objects.empty());
  // A link or modpost error: the cause may lie anywhere.
  auto link = error_in("hal/e.c");
  link.tool = "modpost";
  EXPECT_TRUE(loop::trial_objects({"hal/e.c"}, {link, error_in("hal/d.c")}, work).objects.empty());
  // A C file another file includes is compiled there too.
  put("hal/d.c", "#include \"e.c\"\n");
  EXPECT_TRUE(loop::trial_objects({"hal/e.c"}, {error_in("hal/e.c"), error_in("os/g.c")}, work).objects.empty());
  // Every file with errors changed, no header: a full build compiles just those anyway.
  EXPECT_TRUE(loop::trial_objects({"os/g.c"}, {error_in("os/g.c")}, work).objects.empty());
}

TEST(TrialObjects, ReportingUnitIsTheOutermostFileOfTheIncludeChain) {
  core::Diagnostic d = error_in("././include/osdep.h", "In file included from ././include/osdep_service.h:57,\n"
                                                       "                 from /autodriver/tree/hal/phydm/../phydm_types.h:257,\n"
                                                       "                 from /autodriver/tree/hal/phydm/x.c:28:\n"
                                                       "././include/osdep.h:3:9: error: boom\n");
  EXPECT_EQ(loop::reporting_unit(d, "/autodriver/tree"), "hal/phydm/x.c");
  EXPECT_EQ(loop::reporting_unit(error_in("./core/a.c"), "/autodriver/tree"), "core/a.c");
  EXPECT_EQ(loop::tree_relative("././include/osdep.h", ""), "include/osdep.h");
}

TEST_F(TrialObjectsTest, AHeaderNoErringFileIncludesIsJudgedByTheErringFiles) {
  // Seven files include osdep.h; the one error is in core/alone.c, which does not: the edit cannot
  // fix it, and judging it must not rebuild the seven.
  auto t = loop::trial_objects({"include/osdep.h"}, {error_in("core/alone.c")}, work);
  EXPECT_TRUE(t.sampled);
  EXPECT_EQ(t.objects, (std::vector<std::string>{"core/alone.o"}));
}

TEST_F(TrialObjectsTest, AUnitTheAssemblerRejectedIsCompiled) {
  // pmbus_core.c on 7.3: gcc passes EXPORT_SYMBOL_NS_GPL(f, PMBUS), the assembler does not; no
  // .pmbus_core.o.cmd is left, and a rule that rewrites the macro must still read the file.
  core::Diagnostic d = error_in("os/g.c");
  d.tool = "as";
  d.line = 0;
  d.message = "junk at end of line, first unrecognized character is `P'";
  EXPECT_EQ(loop::compiled_units(work, {d}), (std::set<std::string>{"os/g.c"}));
  d.tool = "modpost";
  EXPECT_TRUE(loop::compiled_units(work, {d}).empty());
}

namespace {

/// A build that reports "'OLD' undeclared" in every C file it compiles while include/osdep.h
/// still says OLD, and in core/a.c and core/b.c only (the others do not use it).
class OldNameBuilder : public loop::Builder {
public:
  int full_builds = 0;
  util::Expected<loop::BuildState> build(const core::Kernel&, const fs::path& tree, const loop::BuildLimit&,
                                         const std::vector<std::string>& objects) override {
    if (objects.empty()) ++full_builds;
    auto header = util::read_file(tree / "include/osdep.h");
    std::vector<core::Diagnostic> diags;
    for (const char* u : {"core/a.c", "core/b.c"}) {
      std::string obj = fs::path(u).replace_extension(".o").string();
      if (!objects.empty() && std::find(objects.begin(), objects.end(), obj) == objects.end()) continue;
      if (header && header->find("OLD") != std::string::npos) {
        auto d = error_in(u);
        d.tool = "gcc";
        d.severity = core::Severity::error;
        d.message = "'OLD' undeclared (first use in this function)";
        diags.push_back(d);
      }
    }
    return loop::state_of(diags, diags.empty());
  }
  bool single_objects() const override { return true; }
};

} // namespace

// evdi on 5.10: the fix is in a header (its prototype), the errors in two of the C files that
// include it. The trial compiles those two alone; their old errors must not be carried over
// beside the new (none), or a header fix never looks like progress.
TEST_F(TrialObjectsTest, AHeaderFixClearsTheErrorsOfTheFilesItRecompiled) {
  put("include/osdep.h", "int OLD;\n");
  OldNameBuilder builder;
  core::Kernel k;
  auto cur = builder.build(k, work, loop::BuildLimit{}, {});
  ASSERT_TRUE(cur);
  ASSERT_EQ(cur->errors.size(), 2u);
  propose::Edit e;
  e.change_id = "proto:x";
  e.text_edits.push_back({"include/osdep.h", 1, 1, "int NEW;\n", std::nullopt});
  propose::ApplyOptions options;
  const fs::path scratch = tmp->path() / "scratch";
  fs::create_directories(scratch);
  loop::TrialSetup setup{work, scratch, k, builder, options, {}};
  auto t = loop::try_edits({&e}, setup, loop::BuildLimit{}, *cur);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->state.errors.empty());
  EXPECT_TRUE(t->state.ok); // no error left after the two objects: the whole module was built
  EXPECT_EQ(builder.full_builds, 2);
}
