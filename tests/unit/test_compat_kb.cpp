// Compat knowledge base: the `#if LINUX_VERSION_CODE` block extractor on real DKMS snippets
// (tests/fixtures/kb), the KB file round trip and leave-out, the rewrite engine, the compat-kb
// proposer on one real entry, and collapsed-block cases.

#include "autodriver/propose/kb/kb_cases.hpp"
#include "autodriver/propose/kb/kb_extract.hpp"
#include "autodriver/propose/kb/kb_file.hpp"
#include "autodriver/propose/kb/kb_rewrite.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <gtest/gtest.h>

using namespace autodriver;
using namespace autodriver::propose;
namespace fs = std::filesystem;

namespace {

std::string kb_fixture(const std::string& name) {
  auto t = util::read_file(fs::path(AD_FIXTURES) / "kb" / name);
  EXPECT_TRUE(t.has_value()) << name;
  return t ? *t : std::string();
}

std::vector<KbEntry> entries_of(const std::string& name, const std::string& package, ExtractStats& st) {
  return kb_entries_of(kb_fixture(name), {package, "test", name, 0}, st);
}

} // namespace

TEST(KbExtract, ElifChainYieldsOneBlockPerAdjacentPair) {
  ExtractStats st;
  auto blocks = extract_version_blocks(kb_fixture("rapiddisk_blk_alloc_disk.c"), st);
  // #if >= 6.9 / #elif >= 5.14 / #else: two pairs; then #if >= 6.9 / #else.
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].boundary.str(), "6.9.0");
  EXPECT_EQ(normalize_ws(blocks[0].old_code), "disk = rdsk->rdsk_disk = blk_alloc_disk(NUMA_NO_NODE);");
  EXPECT_EQ(normalize_ws(blocks[0].new_code), "disk = rdsk->rdsk_disk = blk_alloc_disk(NULL, NUMA_NO_NODE);");
  EXPECT_EQ(blocks[0].old_since.str(), "5.14.0");
  EXPECT_EQ(blocks[1].boundary.str(), "5.14.0");
  EXPECT_EQ(normalize_ws(blocks[1].old_code), "disk = rdsk->rdsk_disk = alloc_disk(1);");
  EXPECT_EQ(blocks[2].line, 14);
  EXPECT_TRUE(blocks[2].simple);
  EXPECT_EQ(st.conditionals, 3);
}

TEST(KbExtract, DerivesCallArgumentsAndReplacement) {
  ExtractStats st;
  auto es = entries_of("rapiddisk_blk_alloc_disk.c", "rapiddisk-dkms", st);
  ASSERT_GE(es.size(), 2u);
  const KbEntry* args = nullptr;
  const KbEntry* repl = nullptr;
  for (const auto& e : es) {
    if (e.change.kind == "call-args") args = &e;
    if (e.change.kind == "call-replace") repl = &e;
  }
  ASSERT_NE(args, nullptr);
  EXPECT_EQ(args->change.old_form, "blk_alloc_disk($0)");
  EXPECT_EQ(args->change.new_form, "blk_alloc_disk(NULL, $0)");
  EXPECT_EQ(args->boundary, "6.9.0");
  EXPECT_EQ(args->change.symbols.front(), "blk_alloc_disk");
  EXPECT_EQ(args->provenance.package, "rapiddisk-dkms");
  EXPECT_EQ(args->provenance.line, 7);
  ASSERT_NE(repl, nullptr);
  EXPECT_EQ(repl->change.old_form, "alloc_disk($0)");
  EXPECT_EQ(repl->change.new_form, "blk_alloc_disk(NUMA_NO_NODE)");
}

TEST(KbExtract, CompatDefineBecomesRenameAndIncludesAreKept) {
  ExtractStats st;
  auto es = entries_of("xtables_compat_random.h", "xtables-addons-dkms", st);
  ASSERT_EQ(es.size(), 1u);
  EXPECT_EQ(es[0].change.kind, "ident-rename");
  EXPECT_EQ(es[0].change.old_form, "prandom_u32_max");
  EXPECT_EQ(es[0].change.new_form, "get_random_u32_below");
  EXPECT_EQ(es[0].boundary, "6.2.0");

  ExtractStats st2;
  auto inc = entries_of("ovpn_dco_gso.h", "openvpn-dco-dkms", st2);
  // `#include_next` is a compat-header trick, not an include to propose: counted, not kept.
  EXPECT_TRUE(inc.empty());
  EXPECT_EQ(st2.blocks, 1);
  EXPECT_EQ(st2.unclassified, 1);
}

TEST(KbExtract, MemberRenameAndSkips) {
  ExtractStats st;
  auto es = entries_of("apfs_file_read_folio.c", "apfs-dkms", st);
  ASSERT_EQ(es.size(), 1u);
  EXPECT_EQ(es[0].change.kind, "member-rename");
  EXPECT_EQ(es[0].change.old_form, "readpage");
  EXPECT_EQ(es[0].change.new_form, "read_folio");

  ExtractStats s2;
  auto blocks = extract_version_blocks("#if LINUX_VERSION_CODE >= KERNEL_VERSION(6,2,0) && defined(X)\nx();\n#endif\n"
                                       "#if KERNEL_VERSION(6,2,0) <= LINUX_VERSION_CODE\n#ifdef Y\ny();\n#endif\n#endif\n"
                                       "#if (LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0))\nf(a, b);\n#else\nf(b);\n#endif\n",
                                       s2);
  EXPECT_EQ(s2.complex, 1);
  EXPECT_EQ(s2.nested, 1);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0].boundary.str(), "6.4.0");
  EXPECT_EQ(normalize_ws(blocks[0].old_code), "f(a, b);");
  auto ch = derive_changes(blocks[0], s2);
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].old_form, "f($0, $1)");
  EXPECT_EQ(ch[0].new_form, "f($1)");
}

TEST(KbFile, RoundTripLeaveOutAndNewerSchema) {
  ExtractStats st;
  Kb kb;
  for (auto& e : entries_of("rapiddisk_blk_alloc_disk.c", "rapiddisk-dkms", st)) kb.entries.push_back(e);
  for (auto& e : entries_of("apfs_file_read_folio.c", "apfs-dkms", st)) kb.entries.push_back(e);
  kb.sources = {"rapiddisk-dkms", "apfs-dkms"};
  kb.stats = st;
  auto dir = util::TempDir::create(util::scratch_root(), "kb-test-");
  ASSERT_TRUE(dir.has_value());
  fs::path p = dir->path() / "kb.json";
  ASSERT_TRUE(save_kb(kb, p).has_value());
  auto back = load_kb(p);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ASSERT_EQ(back->entries.size(), kb.entries.size());
  for (std::size_t i = 0; i < kb.entries.size(); ++i) {
    EXPECT_EQ(back->entries[i].id, kb.entries[i].id);
    EXPECT_EQ(back->entries[i].change.new_form, kb.entries[i].change.new_form);
    EXPECT_EQ(back->entries[i].provenance.file, kb.entries[i].provenance.file);
  }
  EXPECT_EQ(back->stats.blocks, st.blocks);

  auto left = without_packages(*back, {"rapiddisk-dkms"});
  ASSERT_EQ(left.entries.size(), 1u);
  EXPECT_EQ(left.entries[0].provenance.package, "apfs-dkms");
  EXPECT_EQ(left.sources, std::vector<std::string>{"apfs-dkms"});

  auto j = to_json(kb);
  j["schema_version"] = k_kb_schema_version + 1;
  auto newer = kb_from_json(j);
  ASSERT_FALSE(newer.has_value());
  EXPECT_NE(newer.error().message.find("newer"), std::string::npos);
  j["schema_version"] = k_kb_schema_version;
  j["entries"][0].erase("old");
  EXPECT_FALSE(kb_from_json(j).has_value());
}

TEST(KbFile, EveryVersionOfAHistoryTeachesAChangeOncePerFile) {
  // A block its maintainers dropped later (the newest text has none) is still learned, from the
  // first version that has it; repeating versions add nothing.
  std::string with_block = kb_fixture("rapiddisk_blk_alloc_disk.c");
  ExtractStats st;
  auto direct = kb_entries_of(with_block, {"rapiddisk", "v", "drv.c", 0}, st);
  ASSERT_FALSE(direct.empty());
  KbSource src{"rapiddisk", "git tip", "/nonexistent", {}};
  src.texts = [&](const KbTextVisitor& visit) {
    visit("drv.c", "git 111", with_block);
    visit("drv.c", "git 222", with_block + "\n/* a later edit elsewhere */\n");
    visit("drv.c", "git 333", "int only_the_new_api(void);\n");
    visit("copy/drv.c", "git 333", with_block);
    visit("README", "git 333", with_block);
  };
  Kb kb = build_kb({src});
  EXPECT_EQ(kb.sources, std::vector<std::string>{"rapiddisk"});
  ASSERT_EQ(kb.entries.size(), 2 * direct.size());
  for (const auto& e : kb.entries) {
    EXPECT_EQ(e.provenance.package, "rapiddisk");
    EXPECT_EQ(e.provenance.version, e.provenance.file == "drv.c" ? "git 111" : "git 333");
  }
  EXPECT_EQ(kb.stats.entries, static_cast<int>(kb.entries.size()));
}

TEST(KbRewrite, KeepsTheDriversArgumentsAndLayout) {
  KbChange c{"call-args", "blk_alloc_disk($0)", "blk_alloc_disk(NULL, $0)", {"blk_alloc_disk"}};
  auto r = rewrite_text("\tmy->disk = blk_alloc_disk(dev_to_node(&pdev->dev)); /* blk_alloc_disk(x) */\n", c);
  EXPECT_EQ(r.sites, 1);
  EXPECT_EQ(r.text, "\tmy->disk = blk_alloc_disk(NULL, dev_to_node(&pdev->dev)); /* blk_alloc_disk(x) */\n");

  KbChange m{"member-rename", "readpage", "read_folio", {"readpage", "read_folio"}};
  auto rm = rewrite_text("static int readpage(void);\n.readpage = my_readpage,\nif (ops->readpage)\n", m);
  EXPECT_EQ(rm.sites, 2);
  EXPECT_EQ(rm.text, "static int readpage(void);\n.read_folio = my_readpage,\nif (ops->read_folio)\n");

  KbChange d{"delete", ". llseek = no_llseek ,", "", {"no_llseek"}};
  auto rd = rewrite_text("static const struct file_operations f = {\n\t.owner = THIS_MODULE,\n\t.llseek\t= no_llseek,\n};\n", d);
  EXPECT_EQ(rd.text, "static const struct file_operations f = {\n\t.owner = THIS_MODULE,\n};\n");
}

TEST(CompatKbProposer, ProposesTheMaintainersNewFormAndHonoursLeaveOut) {
  ExtractStats st;
  Kb kb;
  kb.entries = entries_of("rapiddisk_blk_alloc_disk.c", "rapiddisk-dkms", st);
  kb.sources = {"rapiddisk-dkms"};
  auto dir = util::TempDir::create(util::scratch_root(), "kb-prop-");
  ASSERT_TRUE(dir.has_value());
  fs::path tree = dir->path() / "tree";
  fs::create_directories(tree);
  ASSERT_TRUE(
      util::write_file(tree / "ramdisk.c", "static int add(void)\n{\n\tdisk = blk_alloc_disk(NUMA_NO_NODE);\n\treturn 0;\n}\n")
          .has_value());
  ASSERT_TRUE(save_kb(kb, dir->path() / "kb.json").has_value());

  core::Diagnostic d;
  d.file = "ramdisk.c";
  d.line = 3;
  d.kind = core::DiagKind::too_few_arguments;
  d.symbols = {"blk_alloc_disk"};
  d.message = "too few arguments to function 'blk_alloc_disk'";
  PortContext ctx;
  ctx.tree = tree;
  ctx.kb_path = dir->path() / "kb.json";
  auto p = make_compat_kb();
  auto edits = p->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].proposer, "compat-kb");
  EXPECT_EQ(edits[0].change_id, "kb:blk_alloc_disk");
  EXPECT_EQ(edits[0].label, "arguments-changed");
  ASSERT_EQ(edits[0].text_edits.size(), 1u);
  EXPECT_EQ(edits[0].text_edits[0].line, 3);
  EXPECT_EQ(edits[0].text_edits[0].remove, 1);
  EXPECT_EQ(edits[0].text_edits[0].text, "\tdisk = blk_alloc_disk(NULL, NUMA_NO_NODE);\n");
  ASSERT_FALSE(edits[0].evidence.empty());
  EXPECT_NE(edits[0].evidence[0].find("rapiddisk-dkms"), std::string::npos);

  ctx.kb_leave_out = {"rapiddisk-dkms"};
  auto none = make_compat_kb()->propose({d}, ctx);
  EXPECT_TRUE(none.empty());
}

TEST(KbCases, CollapseAndCompareOnTokens) {
  std::string text = kb_fixture("apfs_file_read_folio.c");
  ExtractStats st;
  auto blocks = extract_version_blocks(text, st);
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_TRUE(block_spans(blocks[0], {5, 18, 0}, {6, 1, 0}));
  EXPECT_FALSE(block_spans(blocks[0], {6, 1, 0}, {6, 12, 0}));
  auto f = collapse_blocks(text, {blocks[0]});
  EXPECT_EQ(f.old_text.find("#if"), std::string::npos);
  EXPECT_NE(f.old_text.find("a_ops->readpage)"), std::string::npos);
  EXPECT_NE(f.expected_text.find("a_ops->read_folio)"), std::string::npos);
  // Whitespace and comments do not count; a different token does.
  std::string ported = f.old_text;
  ported.replace(ported.find("readpage"), 8, "read_folio /* new */ ");
  ASSERT_EQ(f.context.size(), 1u);
  EXPECT_TRUE(matches_in_context(ported, f.context[0], blocks[0].new_code));
  EXPECT_FALSE(matches_in_context(f.old_text, f.context[0], blocks[0].new_code));
  // A case of schema 1 holds the whole text around its block; kb compare still reads it.
  auto lines = util::split_lines(text);
  CollapsedCase c;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int n = static_cast<int>(i) + 1;
    if (n < blocks[0].line) c.before += std::string(lines[i]) + "\n";
    if (n > blocks[0].end_line) c.after += std::string(lines[i]) + "\n";
  }
  EXPECT_TRUE(matches_new_branch(ported, c, blocks[0].new_code));
  EXPECT_FALSE(matches_new_branch(f.old_text, c, blocks[0].new_code));
}

TEST(KbCases, OlderThanTargetPicksTheBranchTheTargetCompilesAndTheOneBelowIt) {
  std::string text = kb_fixture("rapiddisk_blk_alloc_disk.c");
  ExtractStats st;
  auto blocks = extract_version_blocks(text, st);
  ASSERT_EQ(blocks.size(), 3u);
  // #if >= 6.9 / #elif >= 5.14 / #else: the 5.14 branch is valid for [5.14, 6.9) only.
  EXPECT_EQ(blocks[0].new_until, KVersion{});
  EXPECT_EQ(blocks[1].new_until.str(), "6.9.0");
  const KVersion k61{6, 1, 192}, k612{6, 12, 117};
  // 6.1 compiles `blk_alloc_disk(NUMA_NO_NODE)`; the change it had to make is 5.14's, from alloc_disk(1).
  EXPECT_FALSE(block_changed_by(blocks[0], k61));
  EXPECT_TRUE(block_changed_by(blocks[1], k61));
  EXPECT_FALSE(block_changed_by(blocks[2], k61));
  // 6.12 compiles the 6.9 branch: the 5.14 pair is history for it, not its change.
  EXPECT_TRUE(block_changed_by(blocks[0], k612));
  EXPECT_FALSE(block_changed_by(blocks[1], k612));
  EXPECT_TRUE(block_changed_by(blocks[2], k612));
  // The (from, to] mode: 6.12 does not compile the 5.14 branch, so that pair does not span 5.10 -> 6.12.
  EXPECT_FALSE(block_spans(blocks[1], {5, 10, 0}, k612));
  EXPECT_TRUE(block_spans(blocks[1], {5, 10, 0}, k61));
  auto c = collapse_blocks(text, {blocks[1]});
  EXPECT_EQ(c.old_text.find("KERNEL_VERSION(5,14,0)"), std::string::npos);
  EXPECT_NE(c.old_text.find("if (IS_ERR(disk))"), std::string::npos) << "the next block stays";
  EXPECT_NE(c.old_text.find("rdsk->rdsk_disk = alloc_disk(1);"), std::string::npos);
  EXPECT_EQ(c.old_text.find("blk_alloc_disk(NUMA_NO_NODE)"), std::string::npos);
  EXPECT_NE(c.expected_text.find("rdsk->rdsk_disk = blk_alloc_disk(NUMA_NO_NODE);"), std::string::npos);
  // A plain #if/#else block (apfs readpage -> read_folio, 5.19) is 6.1's change too.
  auto apfs = kb_fixture("apfs_file_read_folio.c");
  auto ab = extract_version_blocks(apfs, st);
  ASSERT_EQ(ab.size(), 1u);
  EXPECT_TRUE(block_changed_by(ab[0], k61));
  EXPECT_FALSE(block_changed_by(ab[0], {5, 18, 0}));
}

TEST(KbCases, EveryBlockOfOneBoundaryCollapsesTogetherAndEachIsComparedInItsContext) {
  std::string text = kb_fixture("rapiddisk_blk_alloc_disk.c");
  ExtractStats st;
  auto blocks = extract_version_blocks(text, st);
  ASSERT_EQ(blocks.size(), 3u);
  // 6.9 changed both the allocation and its check: one port, two blocks.
  ASSERT_EQ(blocks[0].boundary, blocks[2].boundary);
  auto f = collapse_blocks(text, {blocks[2], blocks[0]});
  EXPECT_EQ(f.old_text.find("KERNEL_VERSION(6,9,0)"), std::string::npos);
  EXPECT_NE(f.old_text.find("blk_alloc_disk(NUMA_NO_NODE);"), std::string::npos);
  EXPECT_NE(f.old_text.find("if (!disk)"), std::string::npos);
  EXPECT_NE(f.expected_text.find("blk_alloc_disk(NULL, NUMA_NO_NODE);"), std::string::npos);
  EXPECT_NE(f.expected_text.find("if (IS_ERR(disk))"), std::string::npos);
  ASSERT_EQ(f.context.size(), 2u);
  // The context of each block is the expected text around it: the other block's new branch.
  EXPECT_EQ(f.context[0].before.back(), ";");
  EXPECT_TRUE(matches_in_context(f.expected_text, f.context[0], blocks[2].new_code));
  EXPECT_TRUE(matches_in_context(f.expected_text, f.context[1], blocks[0].new_code));
  // Half a port is not the port.
  std::string half = f.old_text;
  half.replace(half.find("if (!disk)"), 10, "if (IS_ERR(disk))");
  EXPECT_FALSE(matches_in_context(half, f.context[1], blocks[0].new_code));
  EXPECT_FALSE(matches_in_context(f.old_text, f.context[0], blocks[2].new_code));
  // Two pairs of one #elif chain overlap: the later-listed one is left as it is.
  auto o = collapse_blocks(text, {blocks[0], blocks[1]});
  EXPECT_TRUE(o.context[1].before.empty() && o.context[1].after.empty());
  EXPECT_FALSE(o.context[0].before.empty());
  EXPECT_NE(o.old_text.find("= blk_alloc_disk(NUMA_NO_NODE);"), std::string::npos) << "the first pair's old branch, once";
  EXPECT_EQ(o.old_text.find("alloc_disk(1)"), std::string::npos);
}
