// Rule packs: the format, its errors, user folders, version scoping, the proposer.

#include "autodriver/core/kernel.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

const std::string k_header = "kind: smpl\nkernel: 6.8\nsource: include/linux/x.h\nkernel-definition: no\nsymbols: old_call\n";

std::string error_of(const std::string& text) {
  auto r = propose::parse_rule(text, "mine/x.rule");
  return r ? std::string() : r.error().message;
}

} // namespace

TEST(Rules, ShippedRulesParseAndStateTheirProvenance) {
  const auto& rules = propose::shipped_rules();
  ASSERT_FALSE(rules.empty());
  for (const auto& r : rules) {
    EXPECT_TRUE(r.file.starts_with("rules/") && r.file.ends_with(".rule")) << r.file;
    EXPECT_FALSE(r.kernel.empty()) << r.file;
    EXPECT_FALSE(r.source.empty()) << r.file;
    EXPECT_NE(std::find(propose::rule_kinds().begin(), propose::rule_kinds().end(), r.kind), propose::rule_kinds().end());
  }
  auto pci = std::find_if(rules.begin(), rules.end(), [](const auto& r) { return r.name == "pci-dma-compat"; });
  ASSERT_NE(pci, rules.end());
  EXPECT_TRUE(pci->kernel_definition);
  EXPECT_NE(pci->body.find("pci_free_consistent"), std::string::npos);
  EXPECT_EQ(pci->provenance().find("stated by hand"), std::string::npos);
  auto grabber = std::find_if(rules.begin(), rules.end(), [](const auto& r) { return r.name == "v4l2-vfl-type-grabber"; });
  ASSERT_NE(grabber, rules.end());
  EXPECT_FALSE(grabber->kernel_definition); // the kernel never defined that alias: the rule says so
  EXPECT_NE(grabber->provenance().find("stated by hand, not a kernel definition"), std::string::npos);
}

TEST(Rules, BadFilesAreNamedWithWhatIsWrong) {
  EXPECT_EQ(error_of(k_header + "---\n@@\n@@\n- old_call()\n+ new_call()\n"), "");
  EXPECT_NE(error_of(k_header + "@@\n").find("mine/x.rule:6: expected `key: value`"), std::string::npos)
      << error_of(k_header + "@@\n");
  EXPECT_NE(error_of(k_header).find("no `---` line"), std::string::npos);
  EXPECT_NE(
      error_of("kind: nonsense\nkernel: 1.0\nsource: s\nkernel-definition: no\n---\nx\n").find("kind `nonsense` is not one of"),
      std::string::npos);
  // provenance is required
  EXPECT_NE(error_of("kind: smpl\nkernel: 6.8\nkernel-definition: no\nsymbols: a\n---\nx\n").find("`source:` is missing"),
            std::string::npos);
  EXPECT_NE(error_of("kind: smpl\nkernel: 6.8\nsource: s\nkernel-definition: maybe\n---\nx\n").find("expected yes or no"),
            std::string::npos);
  EXPECT_NE(error_of(k_header + "colour: red\n---\nx\n").find("unknown key `colour`"), std::string::npos);
  EXPECT_NE(error_of(k_header + "kind: smpl\n---\nx\n").find("given twice"), std::string::npos);
  EXPECT_NE(error_of(k_header + "---\n\n").find("needs a body"), std::string::npos);
  EXPECT_NE(error_of(k_header + "target-from: six\n---\nx\n").find("not a kernel version"), std::string::npos);
  EXPECT_NE(
      error_of("kind: remove-statements\nkernel: 5.10\nsource: s\nkernel-definition: no\nsymbols: a\n---\n^ok$\n(unclosed\n")
          .find("mine/x.rule:8: not a regular expression"),
      std::string::npos);
  EXPECT_NE(error_of("kind: typed-variant\nkernel: any\nsource: s\nkernel-definition: no\n---\nmin = min_t\n")
                .find("`NAME -> TYPED_NAME`"),
            std::string::npos);
}

TEST(Rules, UserFoldersAddAndReplaceShippedRules) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-rules-");
  ASSERT_TRUE(tmp);
  ASSERT_TRUE(util::write_file(tmp->path() / "mine.rule", k_header + "---\n@@\n@@\n- old_call()\n+ new_call()\n"));
  ASSERT_TRUE(util::write_file(tmp->path() / "pci-dma-compat.rule",
                               "kind: old-definitions\nkernel: 5.18\nsource: my notes\nkernel-definition: no\n---\n"
                               "#define PCI_DMA_NONE DMA_NONE\n"));
  ASSERT_TRUE(util::write_file(tmp->path() / "README", "not a rule\n"));
  auto all = propose::load_rules(true, {tmp->path()});
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->size(), propose::shipped_rules().size() + 1);
  auto pci = std::find_if(all->begin(), all->end(), [](const auto& r) { return r.name == "pci-dma-compat"; });
  ASSERT_NE(pci, all->end());
  EXPECT_EQ(pci->source, "my notes");
  auto mine_only = propose::load_rules(false, {tmp->path()});
  ASSERT_TRUE(mine_only);
  EXPECT_EQ(mine_only->size(), 2u);
  EXPECT_EQ(propose::load_rules(false, {})->size(), 0u);
  // One bad file fails the whole load, naming it.
  ASSERT_TRUE(util::write_file(tmp->path() / "bad.rule", "kind: smpl\n"));
  auto bad = propose::load_rules(true, {tmp->path()});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.rule"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(propose::load_rules(true, {tmp->path() / "missing"}));
}

TEST(Rules, VersionScopeChoosesTheDefinitionForTheTarget) {
  EXPECT_EQ(propose::version_code_of("6.4"), (6 << 16) + (4 << 8));
  EXPECT_EQ(propose::version_code_of("2.6.37"), (2 << 16) + (6 << 8) + 37);
  EXPECT_EQ(propose::version_code_of("six"), -1);
  EXPECT_EQ(propose::version_code_of(" 6.4 "), (6 << 16) + (4 << 8));
  EXPECT_EQ(propose::version_code_of("6"), -1);
  EXPECT_EQ(propose::version_code_of("6.4-rc1"), -1);
  EXPECT_EQ(propose::version_code_of("6.99999999999999999999"), -1) << "a rule file's absurd number is no version (it threw)";
  const auto& rules = propose::shipped_rules();
  auto old = std::find_if(rules.begin(), rules.end(), [](const auto& r) { return r.name == "semaphore-mutex-helpers"; });
  auto now = std::find_if(rules.begin(), rules.end(), [](const auto& r) { return r.name == "semaphore-mutex-helpers-6.4"; });
  ASSERT_NE(old, rules.end());
  ASSERT_NE(now, rules.end());
  const long v61 = propose::version_code_of("6.1.158"), v612 = propose::version_code_of("6.12.57");
  EXPECT_TRUE(propose::applies_to(*old, v61));
  EXPECT_FALSE(propose::applies_to(*now, v61));
  EXPECT_FALSE(propose::applies_to(*old, v612));
  EXPECT_TRUE(propose::applies_to(*now, v612));
  EXPECT_NE(now->body.find("DEFINE_SEMAPHORE(name, 1)"), std::string::npos);
  EXPECT_FALSE(propose::applies_to(*now, 0)); // unknown target version: no scoped rule
}

TEST(Rules, SmplRuleIsProposedWhenADiagnosticNamesItAndTheTargetLacksIt) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-rules-");
  ASSERT_TRUE(tmp);
  fs::path src = tmp->path() / "src", tree = tmp->path() / "tree";
  fs::create_directories(src / "include/linux");
  fs::create_directories(tree);
  ASSERT_TRUE(util::write_file(src / "include/linux/x.h", "int new_call(void);\n"));
  auto r = propose::parse_rule(
      k_header + "target-lacks: old_call\nwhy: old_call() became new_call() in 6.8\n---\n@@\n@@\n- old_call()\n+ new_call()\n",
      "mine/old-call.rule");
  ASSERT_TRUE(r) << r.error().message;
  std::vector<propose::Rule> rules = {*r};
  core::Kernel to;
  to.build_dir = src;
  propose::PortContext ctx;
  ctx.to = &to;
  ctx.new_src = src;
  ctx.tree = tree;
  ctx.rules = &rules;
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "a.c";
  d.line = 1;
  d.message = "implicit declaration of function 'old_call'";
  d.symbols = {"old_call"};
  auto pack = propose::make_rule_pack();
  auto edits = pack->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].proposer, "rule-pack");
  EXPECT_EQ(edits[0].change_id, "rule:old-call");
  EXPECT_EQ(edits[0].title, "old_call() became new_call() in 6.8");
  EXPECT_NE(edits[0].smpl.find("+ new_call()"), std::string::npos);
  EXPECT_NE(edits[0].description.find("mine/old-call.rule (Linux 6.8; include/linux/x.h; stated by hand"), std::string::npos)
      << edits[0].description;
  // Another diagnostic: nothing. A target that still declares old_call: nothing.
  d.symbols = {"other"};
  d.message = "implicit declaration of function 'other'";
  EXPECT_TRUE(pack->propose({d}, ctx).empty());
  d.symbols = {"old_call"};
  d.message = "implicit declaration of function 'old_call'";
  fs::path still = tmp->path() / "still"; // (a kernel tree's index is cached by its path)
  fs::create_directories(still / "include/linux");
  ASSERT_TRUE(util::write_file(still / "include/linux/x.h", "int new_call(void);\nint old_call(void);\n"));
  to.build_dir = still;
  ctx.new_src = still;
  EXPECT_TRUE(pack->propose({d}, ctx).empty());
}
