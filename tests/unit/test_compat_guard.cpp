// --compat guards: compat_merge wraps each changed hunk, and kb_guards picks the boundary the
// compat KB gives for the hunk's changed identifiers only when it lies between the two kernels.

#include "autodriver/loop/compat.hpp"

#include <gtest/gtest.h>

using namespace autodriver;
using namespace autodriver::loop;

namespace {

propose::KbEntry entry(std::string id, std::string boundary, std::string kind, std::string old_form, std::string new_form,
                       std::vector<std::string> symbols, std::string package) {
  propose::KbEntry e;
  e.id = std::move(id);
  e.boundary = std::move(boundary);
  e.change = {std::move(kind), std::move(old_form), std::move(new_form), std::move(symbols)};
  e.provenance = {std::move(package), "test", "x.c", 1};
  return e;
}

constexpr long k_6_1_192 = (6 << 16) + (1 << 8) + 192;
constexpr long k_6_12_117 = (6 << 16) + (12 << 8) + 117;

const std::string k_original = "#include <linux/module.h>\n"
                               "static int f(void)\n{\n"
                               "\tcls = class_create(THIS_MODULE, \"vpoll\");\n"
                               "\treturn 0;\n}\n";
const std::string k_ported = "#include <linux/module.h>\n"
                             "static int f(void)\n{\n"
                             "\tcls = class_create(\"vpoll\");\n"
                             "\treturn 0;\n}\n";

} // namespace

TEST(CompatGuard, KbBoundaryBetweenTheKernelsIsUsed) {
  propose::Kb kb;
  kb.entries.push_back(
      entry("kb-1", "6.4.0", "call-args", "class_create($0, $1)", "class_create($1)", {"class_create"}, "vpoll-dkms"));
  kb.entries.push_back(
      entry("kb-2", "6.4.0", "call-args", "class_create($0, $1)", "class_create($1)", {"class_create"}, "evdi-dkms"));
  std::vector<Guard> guards;
  auto merged = compat_merge(k_original, k_ported, kb_guards(kb, k_6_1_192, k_6_12_117, "6.12.0"), &guards);
  EXPECT_NE(merged.find("#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)\n\tcls = class_create(\"vpoll\");\n#else\n"
                        "\tcls = class_create(THIS_MODULE, \"vpoll\");\n#endif\n"),
            std::string::npos)
      << merged;
  EXPECT_NE(merged.find("#include <linux/version.h>\n#include <linux/module.h>\n"), std::string::npos) << merged;
  ASSERT_EQ(guards.size(), 1u);
  EXPECT_EQ(guards[0].choice.version, "6.4.0");
  EXPECT_EQ(guards[0].choice.source.rfind("kb:kb-", 0), 0u) << guards[0].choice.source;
  // The guard's line is where the #if really is in the merged text (after the inserted include).
  auto lines = 0, at = 0;
  for (std::size_t i = 0; i < merged.size() && !at; ++i)
    if (i == 0 || merged[i - 1] == '\n') {
      ++lines;
      if (merged.compare(i, 3, "#if") == 0) at = lines;
    }
  EXPECT_EQ(guards[0].line, at);
}

TEST(CompatGuard, BoundaryTheOldKernelAlreadyHasFallsBackToTheTarget) {
  // A boundary at or below the old kernel (a 6.1 backport) would make the old kernel take the
  // new branch: the target's version is used instead; so is one beyond the target.
  propose::Kb kb;
  kb.entries.push_back(entry("kb-1", "6.1.90", "call-args", "class_create($0, $1)", "class_create($1)", {"class_create"}, "a"));
  kb.entries.push_back(entry("kb-2", "6.13.0", "call-args", "class_create($0, $1)", "class_create($1)", {"class_create"}, "b"));
  std::vector<Guard> guards;
  auto merged = compat_merge(k_original, k_ported, kb_guards(kb, k_6_1_192, k_6_12_117, "6.12.0"), &guards);
  ASSERT_EQ(guards.size(), 1u);
  EXPECT_EQ(guards[0].choice.version, "6.12.0");
  EXPECT_EQ(guards[0].choice.source, "target");
  EXPECT_NE(merged.find("#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 0)"), std::string::npos);
}

TEST(CompatGuard, UnrelatedEntriesDoNotVote) {
  propose::Kb kb;
  kb.entries.push_back(entry("kb-1", "6.6.0", "call-rename", "strlcpy", "strscpy", {"strlcpy", "strscpy"}, "a"));
  auto merged = compat_merge(k_original, k_ported, kb_guards(kb, 0, k_6_12_117, "6.12.0"));
  EXPECT_NE(merged.find("KERNEL_VERSION(6, 12, 0)"), std::string::npos);
  EXPECT_EQ(compat_merge(k_original, k_original, "6.12.0"), k_original);
}
