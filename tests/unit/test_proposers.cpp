// Proposers on real 6.1 -> 6.12 changes: learned from real kernel file pairs
// (tests/fixtures/learn), applied with spatch to the real 6.1 ppdev.c with its real 6.12 errors.

#include "autodriver/core/kernel.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/gate/gcc_parser.hpp"
#include "autodriver/propose/callback_signature.hpp"
#include "autodriver/propose/inline_removed.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/call_merge.hpp"
#include "autodriver/propose/shared/result_test.hpp"
#include "autodriver/propose/shared/stmt_template.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/shared/token_diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/subprocess.hpp"
#include "fixtures.hpp"
#include "skip.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

struct LearnFixture : ::testing::Test {
  fs::path root = fs::path(AD_FIXTURES) / "learn";
  std::optional<util::TempDir> tmp;
  fs::path tree;
  propose::PortContext ctx;
  std::vector<core::Diagnostic> diags;

  void SetUp() override {
    auto t = util::TempDir::create(util::scratch_root(), "test-proposers-");
    ASSERT_TRUE(t);
    tmp.emplace(std::move(*t));
    tree = tmp->path() / "tree";
    ASSERT_TRUE(util::copy_tree(root / "driver", tree, util::SkipBuildProducts::yes));
    ctx.old_src = root / "old";
    ctx.new_src = root / "new";
    ctx.tree = tree;
    ctx.original_tree = root / "driver";
    ctx.scratch = tmp->path() / "scratch";
    gate::ParseOptions po;
    po.tree_root = "/tmp/fixture-work/gcc/ppdev";
    diags = gate::parse_build_output(fixture("gcc/6.12-char-ppdev.txt"), po);
  }

  static bool have_spatch() { return !util::find_program("spatch").empty(); }
};

/// Writes a file of a synthetic kernel or driver tree, creating its folders.
bool put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  return static_cast<bool>(util::write_file(p, text));
}

/// One error diagnostic with MESSAGE at each of LINES of FILE.
std::vector<core::Diagnostic> errors_at(const std::string& file, const std::string& message, std::initializer_list<int> lines) {
  std::vector<core::Diagnostic> ds;
  for (int line : lines) {
    core::Diagnostic d;
    d.file = file;
    d.line = line;
    d.message = message;
    ds.push_back(d);
  }
  return ds;
}

const propose::Edit* find_edit(const std::vector<propose::Edit>& es, const std::string& change_id) {
  for (const auto& e : es)
    if (e.change_id == change_id && e.rank == 0) return &e;
  return nullptr;
}

/// A kernel pair under `root` whose drivers a.c, b.c and c.c in `folder` changed alike (`body`'s
/// text for each name, the first `from` in it replaced by `to` in the new tree), and an empty
/// driver tree: what learned-rewrite learns from. Nothing when a file cannot be written.
std::optional<propose::PortContext> three_drivers_changed(const fs::path& root, const std::string& folder,
                                                          const std::function<std::string(const std::string&)>& body,
                                                          const std::string& from, const std::string& to) {
  propose::PortContext ctx;
  ctx.old_src = root / "old";
  ctx.new_src = root / "new";
  for (const std::string f : {"a", "b", "c"}) {
    std::string t = body(f);
    if (!put(ctx.old_src / folder / (f + ".c"), t)) return std::nullopt;
    t.replace(t.find(from), from.size(), to);
    if (!put(ctx.new_src / folder / (f + ".c"), t)) return std::nullopt;
  }
  ctx.tree = root / "tree";
  ctx.original_tree = ctx.tree;
  ctx.scratch = root / "s";
  fs::create_directories(ctx.tree);
  return ctx;
}

} // namespace

TEST_F(LearnFixture, LearnsArgumentDropFromKernelCallSites) {
  auto p = propose::make_learned_rewrite();
  auto edits = p->propose(diags, ctx);
  const auto* e = find_edit(edits, "call:class_create");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->label, "arguments-changed");
  EXPECT_EQ(e->support, 3) << "three fixture files changed class_create the same way";
  EXPECT_NE(e->smpl.find("- class_create(E0, E1)"), std::string::npos) << e->smpl;
  EXPECT_NE(e->smpl.find("+ class_create(E1)"), std::string::npos) << e->smpl;
  ASSERT_TRUE(e->call.has_value());
  EXPECT_EQ(e->call->args, (std::vector<std::string>{"$1"}));
  if (!have_spatch()) AD_SKIP("spatch not installed");
  auto r = propose::apply_edit(*e, tree, ctx.scratch);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->changed_files, (std::vector<std::string>{"ppdev.c"}));
  auto text = util::read_file(tree / "ppdev.c");
  EXPECT_NE(text->find("ppdev_class = class_create(CHRDEV);"), std::string::npos);
}

TEST_F(LearnFixture, LearnsInitializerMemberRemoval) {
  auto p = propose::make_learned_rewrite();
  auto edits = p->propose(diags, ctx);
  const auto* e = find_edit(edits, "ident:no_llseek");
  ASSERT_NE(e, nullptr);
  EXPECT_GE(e->support, 3) << "at least the three fixture files dropped it";
  EXPECT_NE(e->smpl.find("-\t.llseek = no_llseek,"), std::string::npos) << e->smpl;
  if (!have_spatch()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(*e, tree, ctx.scratch));
  auto text = util::read_file(tree / "ppdev.c");
  EXPECT_EQ(text->find("no_llseek"), std::string::npos);
  EXPECT_NE(text->find(".unlocked_ioctl"), std::string::npos) << "the rest of the initializer stays";
}

TEST_F(LearnFixture, LeaveOneOutExcludesTheDriversOwnFiles) {
  // Learning with the class_create files left out: no evidence, no rule.
  ctx.leave_out = {"drivers/base", "drivers/dma-buf", "drivers/gnss"};
  auto p = propose::make_learned_rewrite();
  auto edits = p->propose(diags, ctx);
  EXPECT_EQ(find_edit(edits, "call:class_create"), nullptr);
}

TEST_F(LearnFixture, LearnsMemberRenameForI2cProbe) {
  core::Diagnostic d;
  d.kind = core::DiagKind::no_member;
  d.severity = core::Severity::error;
  d.file = "drv.c";
  d.symbols = {"struct i2c_driver", "probe_new"};
  auto p = propose::make_learned_rewrite();
  auto edits = p->propose({d}, ctx);
  const auto* e = find_edit(edits, "member:struct i2c_driver.probe_new");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->title, "struct i2c_driver.probe_new was renamed to .probe");
  EXPECT_EQ(e->support, 3);
}

TEST_F(LearnFixture, HeaderMovedIsLearnedFromIncludes) {
  ASSERT_TRUE(util::write_file(tree / "drv.c", "#include <linux/module.h>\n#include <asm/unaligned.h>\n"));
  core::Diagnostic d;
  d.kind = core::DiagKind::missing_header;
  d.severity = core::Severity::fatal;
  d.file = "drv.c";
  d.line = 2;
  d.symbols = {"asm/unaligned.h"};
  auto p = propose::make_header_fix();
  auto edits = p->propose({d}, ctx);
  const auto* e = find_edit(edits, "header:asm/unaligned.h");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->title, "<asm/unaligned.h> moved to <linux/unaligned.h>");
  ASSERT_TRUE(propose::apply_edit(*e, tree, ctx.scratch));
  EXPECT_EQ(*util::read_file(tree / "drv.c"), "#include <linux/module.h>\n#include <linux/unaligned.h>\n");
}

TEST_F(LearnFixture, FlagDroppedFromOrChains) {
  // 6.8 removed I2C_CLASS_SPD; the kernel's own adapters dropped it from their .class flags.
  core::Diagnostic d;
  d.kind = core::DiagKind::undeclared_identifier;
  d.file = "x.c";
  d.line = 3;
  d.symbols = {"I2C_CLASS_SPD"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "stmt:I2C_CLASS_SPD");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->support, 2);
  EXPECT_NE(e->smpl.find("- E | I2C_CLASS_SPD"), std::string::npos) << e->smpl;
  if (!have_spatch()) AD_SKIP("spatch not installed");
  // jc42's initializer in 6.1 (the flag first).
  ASSERT_TRUE(util::write_file(tree / "x.c", "static struct i2c_driver jc42_driver = {\n\t.class\t\t= I2C_CLASS_SPD | "
                                             "I2C_CLASS_HWMON,\n\t.probe\t\t= jc42_probe,\n};\n")
                  .has_value());
  ASSERT_TRUE(propose::apply_edit(*e, tree, ctx.scratch));
  auto after = util::read_file(tree / "x.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find(".class\t\t= I2C_CLASS_HWMON,"), std::string::npos) << *after;
}

TEST(LearnedRewrite, MemberMovedIntoASubStruct) {
  // 6.11 moved net_device.wol_enabled into net_device.ethtool; the kernel's own phy code (these
  // lines of drivers/net/phy/phy.c and phylink.c) changed inside if conditions, where statement
  // templates do not reach.
  auto tmp = util::TempDir::create(util::scratch_root(), "member-path-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new";
  fs::create_directories(old_src / "drivers/net/phy");
  fs::create_directories(new_src / "drivers/net/phy");
  const std::string phy = "static void phy_state_machine(struct phy_device *phydev)\n{\n\tstruct net_device *netdev = "
                          "phydev->attached_dev;\n\n\tif (netdev->wol_enabled)\n\t\tphy_suspend(phydev);\n}\n";
  const std::string link = "void phylink_ethtool_get_wol(struct phylink *pl, bool mac_wol)\n{\n\tif (mac_wol && "
                           "(!pl->netdev || pl->netdev->wol_enabled)) {\n\t\tpl->wol = 1;\n\t}\n}\n";
  auto moved = [](std::string t) {
    t.replace(t.find("->wol_enabled"), 13, "->ethtool->wol_enabled");
    return t;
  };
  ASSERT_TRUE(util::write_file(old_src / "drivers/net/phy/phy.c", phy).has_value());
  ASSERT_TRUE(util::write_file(new_src / "drivers/net/phy/phy.c", moved(phy)).has_value());
  ASSERT_TRUE(util::write_file(old_src / "drivers/net/phy/phylink.c", link).has_value());
  ASSERT_TRUE(util::write_file(new_src / "drivers/net/phy/phylink.c", moved(link)).has_value());
  propose::PortContext ctx;
  ctx.old_src = old_src;
  ctx.new_src = new_src;
  ctx.tree = tmp->path() / "tree";
  ctx.original_tree = ctx.tree;
  ctx.scratch = tmp->path() / "s";
  fs::create_directories(ctx.tree);
  core::Diagnostic d;
  d.kind = core::DiagKind::no_member;
  d.file = "r8169_main.c";
  d.line = 1507;
  d.symbols = {"struct net_device", "wol_enabled"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const propose::Edit* e = nullptr;
  for (const auto& x : edits)
    if (x.change_id == "stmt:wol_enabled" && x.rank == 0) e = &x;
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->support, 2);
  EXPECT_EQ(e->smpl, "@@\nexpression E0;\n@@\n- E0->wol_enabled\n+ E0->ethtool->wol_enabled\n");
}

TEST(CallbackSignature, IntToVoidRemoveCallback) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-cb-");
  ASSERT_TRUE(tmp);
  // The shape of every 6.1 platform driver's remove callback (acerhdf.c's, abridged).
  std::string src = "static int acerhdf_remove(struct platform_device *device)\n{\n"
                    "\tif (!device)\n\t\treturn -EINVAL;\n\tkfree(device);\n\treturn 0;\n}\n\n"
                    "static struct platform_driver acerhdf_driver = {\n\t.remove = acerhdf_remove,\n};\n";
  ASSERT_TRUE(util::write_file(tmp->path() / "a.c", src));
  core::Diagnostic d;
  d.kind = core::DiagKind::incompatible_pointer_type;
  d.file = "a.c";
  d.line = 10;
  d.symbols = {"void (*)(struct platform_device *)", "int (*)(struct platform_device *)"};
  propose::PortContext ctx;
  ctx.tree = tmp->path();
  auto edits = propose::make_callback_signature()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].label, "callback-type-changed");
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(edits[0], tmp->path(), tmp->path() / "s"));
  auto out = *util::read_file(tmp->path() / "a.c");
  EXPECT_NE(out.find("static void acerhdf_remove("), std::string::npos) << out;
  EXPECT_EQ(out.find("return 0;"), std::string::npos) << out;
  EXPECT_EQ(out.find("return -EINVAL;"), std::string::npos) << out;
  EXPECT_NE(out.find("kfree(device);"), std::string::npos) << out;
}

TEST(CallbackSignature, ParametersRetypedToConst) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-cb-");
  ASSERT_TRUE(tmp);
  // vpoll-dkms 0.1's devnode callback; 6.12's struct class takes const struct device.
  std::string src = "static char *vpoll_devnode(struct device *dev, umode_t *mode)\n{\n\treturn NULL;\n}\n"
                    "static int init(void)\n{\n\tvpoll_class->devnode = vpoll_devnode;\n\treturn 0;\n}\n";
  ASSERT_TRUE(util::write_file(tmp->path() / "vpoll.c", src));
  gate::ParseOptions po;
  auto ds = gate::parse_build_output(
      "vpoll.c:7:31: error: assignment to 'char * (*)(const struct device *, umode_t *)' {aka 'char * (*)(const "
      "struct device *, short unsigned int *)'} from incompatible pointer type 'char * (*)(struct device *, umode_t "
      "*)' {aka 'char * (*)(struct device *, short unsigned int *)'} [-Werror=incompatible-pointer-types]\n",
      po);
  ASSERT_EQ(ds.size(), 1u);
  ASSERT_EQ(ds[0].symbols.size(), 2u);
  propose::PortContext ctx;
  ctx.tree = tmp->path();
  auto edits = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tmp->path(), tmp->path() / "s"));
  auto out = *util::read_file(tmp->path() / "vpoll.c");
  EXPECT_NE(out.find("static char *vpoll_devnode(const struct device *dev, umode_t *mode)"), std::string::npos) << out;
}

TEST(CallbackSignature, MinOfARetypedParameterBecomesMinT) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-cb-");
  ASSERT_TRUE(tmp);
  // synclink_cs's tty write (6.1): 6.12 passes size_t count, and min(count, <int>) no longer compiles.
  std::string src = "static int w(struct tty_struct *tty, const unsigned char *buf, int count)\n{\n"
                    "\tint c = min(count, min(4 - tty->x, 5));\n\treturn max(c, count) + min(c, 2);\n}\n"
                    "static const struct tty_operations ops = {\n\t.write = w,\n};\n";
  ASSERT_TRUE(util::write_file(tmp->path() / "w.c", src));
  gate::ParseOptions po;
  auto ds = gate::parse_build_output(
      "w.c:7:18: error: initialization of 'ssize_t (*)(struct tty_struct *, const u8 *, size_t)' {aka 'long int "
      "(*)(struct tty_struct *, const unsigned char *, long unsigned int)'} from incompatible pointer type 'int "
      "(*)(struct tty_struct *, const unsigned char *, int)' [-Werror=incompatible-pointer-types]\n",
      po);
  ASSERT_EQ(ds.size(), 1u);
  propose::PortContext ctx;
  ctx.tree = tmp->path();
  // Without the rule packs the retype alone is proposed: min_t is stated knowledge (rules/minmax-typed.rule).
  auto bare = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(bare.size(), 1u);
  ASSERT_EQ(bare[0].text_edits.size(), 1u);
  EXPECT_EQ(bare[0].text_edits[0].text.find("min_t"), std::string::npos) << bare[0].text_edits[0].text;
  ctx.rules = &propose::shipped_rules();
  auto edits = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_NE(edits[0].description.find("rules/minmax-typed.rule"), std::string::npos) << edits[0].description;
  ASSERT_TRUE(propose::apply_edit(edits[0], tmp->path(), tmp->path() / "s"));
  auto out = *util::read_file(tmp->path() / "w.c");
  EXPECT_NE(out.find("static ssize_t w(struct tty_struct *tty, const u8 *buf, size_t count)"), std::string::npos) << out;
  EXPECT_NE(out.find("\tint c = min_t(size_t, count, min(4 - tty->x, 5));"), std::string::npos) << out;
  // Only where the parameter itself is an argument.
  EXPECT_NE(out.find("return max_t(size_t, c, count) + min(c, 2);"), std::string::npos) << out;
}

TEST(ApplyTextEdits, CreatesANewFileInsideTheTree) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-te-");
  ASSERT_TRUE(tmp);
  ASSERT_TRUE(util::write_file(tmp->path() / "a.c", "#include <linux/gone.h>\nint a;\n"));
  propose::Edit e;
  e.text_edits.push_back({"gone.h", 1, 0, "#define X 1\n"});
  e.text_edits.push_back({"a.c", 1, 1, "#include \"gone.h\"\n"});
  propose::fill_expectations(e, tmp->path());
  auto r = propose::apply_edit(e, tmp->path(), tmp->path() / "s");
  ASSERT_TRUE(r);
  EXPECT_EQ(*util::read_file(tmp->path() / "gone.h"), "#define X 1\n");
  EXPECT_EQ(*util::read_file(tmp->path() / "a.c"), "#include \"gone.h\"\nint a;\n");
  EXPECT_NE(std::find(r->changed_files.begin(), r->changed_files.end(), "gone.h"), r->changed_files.end());
  // A failing edit takes its new file away again; a path out of the tree is refused.
  propose::Edit bad;
  bad.text_edits.push_back({"more.h", 1, 0, "#define Y 1\n"});
  bad.text_edits.push_back({"a.c", 1, 1, "x\n", "not there\n"});
  EXPECT_FALSE(propose::apply_edit(bad, tmp->path(), tmp->path() / "s"));
  EXPECT_FALSE(fs::exists(tmp->path() / "more.h"));
  propose::Edit out;
  out.text_edits.push_back({"../escape.h", 1, 0, "x\n"});
  EXPECT_FALSE(propose::apply_edit(out, tmp->path(), tmp->path() / "s"));
  EXPECT_FALSE(fs::exists(tmp->path().parent_path() / "escape.h"));
}

TEST(HeaderFix, HeaderGoneWithItsUsersIsCopiedFromTheOldKernel) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-hf-");
  ASSERT_TRUE(tmp);
  fs::path k_old = tmp->path() / "old", k_new = tmp->path() / "new", tree = tmp->path() / "tree";
  // cm4000_cs (6.1): <linux/cm4000_cs.h> includes the uapi half; 6.12 removed both with the driver.
  ASSERT_TRUE(put(k_old / "include/linux/cm4000_cs.h",
                  "/* SPDX-License-Identifier: GPL-2.0 */\n#include <uapi/linux/cm4000_cs.h>\n#define DEVICE_NAME \"cmm\"\n"));
  ASSERT_TRUE(put(k_old / "include/uapi/linux/cm4000_cs.h", "#include <linux/types.h>\n#define MAX_ATR 33\n"));
  ASSERT_TRUE(put(k_old / "drivers/char/pcmcia/cm4000_cs.c", "#include <linux/cm4000_cs.h>\n"));
  ASSERT_TRUE(put(k_new / "include/linux/types.h", "\n"));
  ASSERT_TRUE(put(k_new / "drivers/char/Makefile", "\n"));
  ASSERT_TRUE(put(tree / "cm4000_cs.c", "#include <linux/module.h>\n#include <linux/cm4000_cs.h>\nint x = MAX_ATR;\n"));
  propose::PortContext ctx;
  ctx.old_src = k_old;
  ctx.new_src = k_new;
  ctx.tree = tree;
  ctx.original_tree = tree;
  gate::ParseOptions po;
  auto ds = gate::parse_build_output("cm4000_cs.c:2:10: fatal error: linux/cm4000_cs.h: No such file or directory\n", po);
  ASSERT_EQ(ds.size(), 1u);
  auto edits = propose::make_header_fix()->propose(ds, ctx);
  auto it = std::find_if(edits.begin(), edits.end(),
                         [](const auto& e) { return e.title.find("old kernel's copy") != std::string::npos; });
  ASSERT_NE(it, edits.end());
  ASSERT_TRUE(propose::apply_edit(*it, tree, tmp->path() / "s"));
  EXPECT_NE(util::read_file(tree / "cm4000_cs.c")->find("#include \"cm4000_cs.h\"\n"), std::string::npos);
  auto h = *util::read_file(tree / "cm4000_cs.h");
  EXPECT_TRUE(h.starts_with("/* SPDX-License-Identifier: GPL-2.0 */\n/* Copied from the old kernel's include/linux/cm4000_cs.h"))
      << h;
  EXPECT_NE(h.find("#define MAX_ATR 33"), std::string::npos) << h;       // the vanished uapi half, inlined
  EXPECT_NE(h.find("#include <linux/types.h>"), std::string::npos) << h; // the target still has this one
  // A kernel file that included it and survives (an interface between modules): no copy.
  ASSERT_TRUE(put(k_old / "drivers/char/user.c", "#include <linux/cm4000_cs.h>\n"));
  ASSERT_TRUE(put(k_new / "drivers/char/user.c", "#include <linux/other.h>\n"));
  ASSERT_TRUE(put(tree / "cm4000_cs.c", "#include <linux/module.h>\n#include <linux/cm4000_cs.h>\nint x = MAX_ATR;\n"));
  fs::remove(tree / "cm4000_cs.h");
  auto again = propose::make_header_fix()->propose(ds, ctx);
  EXPECT_TRUE(std::none_of(again.begin(), again.end(),
                           [](const auto& e) { return e.title.find("old kernel's copy") != std::string::npos; }));
}

TEST(RulePack, SysctlNestedDirectoryTablesBecomeAPath) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-sysctl-");
  ASSERT_TRUE(tmp);
  fs::path k_new = tmp->path() / "new", tree = tmp->path() / "tree";
  fs::create_directories(k_new / "include/linux");
  fs::create_directories(tree);
  // The two lines of 6.12's include/linux/sysctl.h that matter (6.1 still declares register_sysctl_table).
  ASSERT_TRUE(util::write_file(k_new / "include/linux/sysctl.h",
                               "#define register_sysctl(path, table)\t\\\n\tregister_sysctl_sz(path, table, ARRAY_SIZE(table))\n"
                               "void unregister_sysctl_table(struct ctl_table_header * table);\n"));
  // ipmi_poweroff.c of 6.1, its sysctl part.
  std::string src = "static struct ctl_table ipmi_table[] = {\n"
                    "\t{ .procname\t= \"poweroff_powercycle\",\n\t  .mode\t\t= 0644,\n\t  .proc_handler\t= proc_dointvec },\n"
                    "\t{ }\n};\n\n"
                    "static struct ctl_table ipmi_dir_table[] = {\n"
                    "\t{ .procname\t= \"ipmi\",\n\t  .mode\t\t= 0555,\n\t  .child\t= ipmi_table },\n\t{ }\n};\n\n"
                    "static struct ctl_table ipmi_root_table[] = {\n"
                    "\t{ .procname\t= \"dev\",\n\t  .mode\t\t= 0555,\n\t  .child\t= ipmi_dir_table },\n\t{ }\n};\n\n"
                    "static struct ctl_table_header *h;\n\n"
                    "static int init(void)\n{\n\th = register_sysctl_table(ipmi_root_table);\n\treturn h ? 0 : -ENOMEM;\n}\n";
  ASSERT_TRUE(util::write_file(tree / "p.c", src));
  gate::ParseOptions po;
  auto ds = gate::parse_build_output("p.c:25:13: error: implicit declaration of function 'register_sysctl_table'; did you mean "
                                     "'unregister_sysctl_table'? [-Werror=implicit-function-declaration]\n",
                                     po);
  ASSERT_EQ(ds.size(), 1u);
  propose::PortContext ctx;
  ctx.new_src = k_new;
  ctx.tree = tree;
  ctx.original_tree = tree;
  core::Kernel to;
  to.build_dir = k_new;
  ctx.to = &to;
  auto pack = propose::make_rule_pack();
  EXPECT_TRUE(pack->propose(ds, ctx).empty()); // no rules given: nothing
  ctx.rules = &propose::shipped_rules();
  auto edits = pack->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].proposer, "rule-pack");
  EXPECT_NE(edits[0].description.find("rules/sysctl-register-path.rule (Linux 6.6"), std::string::npos) << edits[0].description;
  propose::fill_expectations(edits[0], tree);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, tmp->path() / "s"));
  EXPECT_EQ(*util::read_file(tree / "p.c"),
            "static struct ctl_table ipmi_table[] = {\n"
            "\t{ .procname\t= \"poweroff_powercycle\",\n\t  .mode\t\t= 0644,\n\t  .proc_handler\t= proc_dointvec },\n"
            "};\n\nstatic struct ctl_table_header *h;\n\n"
            "static int init(void)\n{\n\th = register_sysctl(\"dev/ipmi\", ipmi_table);\n\treturn h ? 0 : -ENOMEM;\n}\n");
  // A directory level with two entries is not one path: nothing proposed.
  std::string two = src;
  two.replace(two.find("\t{ }\n};\n\nstatic struct ctl_table ipmi_root_table"), 4,
              "\t{ .procname = \"x\", .mode = 0644, .proc_handler = proc_dointvec },\n\t{ }\n");
  ASSERT_TRUE(util::write_file(tree / "p.c", two));
  EXPECT_TRUE(pack->propose(ds, ctx).empty());
}

TEST(LearnedRewrite, ConstantFamilyRenamedWithItsCompanion) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-fam-");
  ASSERT_TRUE(tmp);
  fs::path k_old = tmp->path() / "old", k_new = tmp->path() / "new", tree = tmp->path() / "tree";
  // Three kernel drivers as Linux 6.10 changed them: INTEL_FAM6_<S> -> INTEL_<S>, and the
  // x86_model they are compared with -> x86_vfm.
  const char* models[] = {"ICELAKE_X", "SKYLAKE_X", "ATOM_GOLDMONT"};
  for (int i = 0; i < 3; ++i) {
    std::string m = models[i];
    auto body = [&](const std::string& field, const std::string& c) {
      return fmt::format("static int f{}(void)\n{{\n\tif (boot_cpu_data.{} == {})\n\t\treturn 1;\n\treturn 0;\n}}\n", i, field,
                         c);
    };
    ASSERT_TRUE(put(k_old / fmt::format("drivers/x/d{}.c", i), body("x86_model", "INTEL_FAM6_" + m)));
    ASSERT_TRUE(put(k_new / fmt::format("drivers/x/d{}.c", i), body("x86_vfm", "INTEL_" + m)));
  }
  ASSERT_TRUE(put(
      k_new / "arch/x86/include/asm/intel-family.h",
      "#define INTEL_ICELAKE_X IFM(6, 0x6A)\n#define INTEL_ICELAKE_D IFM(6, 0x6C)\n#define INTEL_ATOM_AIRMONT IFM(6, 0x4C)\n"));
  // The driver uses members no kernel file used: the family's rule still covers them.
  ASSERT_TRUE(put(tree / "drv.c", "static int g(void)\n{\n\tif (boot_cpu_data.x86_model == INTEL_FAM6_ATOM_AIRMONT)\n"
                                  "\t\treturn 2;\n\tswitch (boot_cpu_data.x86_model) {\n\tcase INTEL_FAM6_ICELAKE_D:\n"
                                  "\t\treturn 1;\n\t}\n\tpr_info(\"%d\", boot_cpu_data.x86_model);\n\treturn 0;\n}\n"));
  core::Kernel to;
  to.build_dir = tmp->path() / "build";
  propose::PortContext ctx;
  ctx.old_src = k_old;
  ctx.new_src = k_new;
  ctx.to = &to;
  ctx.tree = tree;
  ctx.original_tree = tree;
  gate::ParseOptions po;
  auto ds = gate::parse_build_output(
      "drv.c:3:35: error: 'INTEL_FAM6_ATOM_AIRMONT' undeclared (first use in this function); did you mean "
      "'INTEL_ATOM_AIRMONT'?\n",
      po);
  ASSERT_EQ(ds.size(), 1u);
  auto edits = propose::make_learned_rewrite()->propose(ds, ctx);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "family:INTEL_FAM6_"; });
  ASSERT_NE(it, edits.end());
  propose::fill_expectations(*it, tree);
  ASSERT_TRUE(propose::apply_edit(*it, tree, tmp->path() / "s"));
  // The comparison and the switch head read x86_vfm; the print of the model stays as it was.
  EXPECT_EQ(*util::read_file(tree / "drv.c"),
            "static int g(void)\n{\n\tif (boot_cpu_data.x86_vfm == INTEL_ATOM_AIRMONT)\n"
            "\t\treturn 2;\n\tswitch (boot_cpu_data.x86_vfm) {\n\tcase INTEL_ICELAKE_D:\n"
            "\t\treturn 1;\n\t}\n\tpr_info(\"%d\", boot_cpu_data.x86_model);\n\treturn 0;\n}\n");
}

TEST(TargetApi, UnexportedArrayReadThroughTheExportedFunctionThatIndexesIt) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-arr-");
  ASSERT_TRUE(tmp);
  fs::path k_new = tmp->path() / "new", tree = tmp->path() / "tree";
  // 6.12's led-core.c made led_colors static and exports led_get_color_name().
  ASSERT_TRUE(put(k_new / "drivers/leds/led-core.c",
                  "static const char * const led_colors[LED_COLOR_ID_MAX] = {\n\t[LED_COLOR_ID_WHITE] = \"white\",\n};\n\n"
                  "const char *led_get_color_name(u8 color_id)\n{\n\tif (color_id >= ARRAY_SIZE(led_colors))\n"
                  "\t\treturn \"\";\n\n\treturn led_colors[color_id];\n}\nEXPORT_SYMBOL_GPL(led_get_color_name);\n"));
  ASSERT_TRUE(put(k_new / "include/linux/leds.h", "const char *led_get_color_name(u8 color_id);\n"));
  ASSERT_TRUE(put(tree / "mc.c", "extern const char * const led_colors[];\nstatic int show(char *buf, int i)\n{\n"
                                 "\treturn sprintf(buf, \"%s\", led_colors[i + 1]);\n}\n"));
  core::Kernel to;
  to.build_dir = tmp->path() / "build";
  propose::PortContext ctx;
  ctx.new_src = k_new;
  ctx.to = &to;
  ctx.tree = tree;
  ctx.original_tree = tree;
  gate::ParseOptions po;
  po.tree_root = tree.string();
  auto ds = gate::parse_build_output("ERROR: modpost: \"led_colors\" [" + (tree / "mc.ko").string() + "] undefined!\n", po);
  ASSERT_EQ(ds.size(), 1u);
  auto edits = propose::make_target_api()->propose(ds, ctx);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "array:led_colors"; });
  ASSERT_NE(it, edits.end());
  if (util::find_program("spatch").empty()) AD_SKIP("spatch missing");
  ASSERT_TRUE(propose::apply_edit(*it, tree, tmp->path() / "s"));
  EXPECT_NE(util::read_file(tree / "mc.c")->find("sprintf(buf, \"%s\", led_get_color_name(i + 1));"), std::string::npos)
      << *util::read_file(tree / "mc.c");
}

TEST(TargetDecls, PrototypesAndSimilarity) {
  auto p = propose::parse_prototype("struct class * __must_check class_create(const char *name);", "class_create");
  ASSERT_TRUE(p);
  ASSERT_EQ(p->params.size(), 1u);
  EXPECT_EQ(p->params[0].name, "name");
  EXPECT_EQ(p->params[0].type, "const char *");
  auto m = propose::parse_prototype("#define DEFINE_SEMAPHORE(_name, _n)\t\\", "DEFINE_SEMAPHORE");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->is_macro);
  EXPECT_EQ(m->params.size(), 2u);
  EXPECT_GT(propose::name_similarity("strlcpy", "strscpy"), 0.8);
  EXPECT_GT(propose::name_similarity("del_timer_sync", "timer_delete_sync"), 0.6);
  EXPECT_LT(propose::name_similarity("I2C_CLASS_DDC", "I2C_CLASS_HWMON"), 0.85);
  // The opposite action is never a successor, however close the spelling.
  EXPECT_EQ(propose::name_similarity("do_gettimeofday", "do_settimeofday64"), 0.0);
  EXPECT_EQ(propose::name_similarity("foo_unlock", "foo_lock"), 0.0);
  EXPECT_EQ(propose::name_similarity("dma_map_single", "dma_unmap_single"), 0.0);
  EXPECT_TRUE(propose::opposite_names("pci_enable_msix", "pci_disable_msix"));
  EXPECT_FALSE(propose::opposite_names("foo_get_stats", "stats"));
  EXPECT_FALSE(propose::opposite_names("setup_timer", "timer_setup"));
  // Words glued to the rest of the name still have their opposites.
  EXPECT_TRUE(propose::opposite_names("getnstimeofday64", "do_settimeofday64"));
  EXPECT_FALSE(propose::opposite_names("getnstimeofday64", "ktime_get_real_ts64"));
  EXPECT_FALSE(propose::opposite_names("del_timer_sync", "timer_delete_sync"));
  EXPECT_FALSE(propose::opposite_names("pci_enable_msix", "pci_enable_msix_range"));
}

TEST(CallbackSignature, UnusedParameterDropped) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-cb-");
  ASSERT_TRUE(tmp);
  // drivetemp's class_interface callbacks (6.1); 6.12's add_dev/remove_dev lost the interface.
  std::string src = "static int drv_add(struct device *dev, struct class_interface *intf)\n{\n\tput_device(dev);\n"
                    "\treturn 0;\n}\n\nstatic struct class_interface drv_interface = {\n\t.add_dev = drv_add,\n};\n";
  ASSERT_TRUE(util::write_file(tmp->path() / "d.c", src));
  gate::ParseOptions po;
  auto ds = gate::parse_build_output(
      "d.c:8:20: error: initialization of 'int (*)(struct device *)' from incompatible pointer type 'int (*)(struct "
      "device *, struct class_interface *)' [-Werror=incompatible-pointer-types]\n",
      po);
  ASSERT_EQ(ds.size(), 1u);
  propose::PortContext ctx;
  ctx.tree = tmp->path();
  auto edits = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tmp->path(), tmp->path() / "s"));
  auto out = *util::read_file(tmp->path() / "d.c");
  EXPECT_NE(out.find("static int drv_add(struct device *dev)\n{\n\tput_device(dev);"), std::string::npos) << out;

  // A parameter the body uses is not dropped.
  ASSERT_TRUE(
      util::write_file(tmp->path() / "d.c", std::string(src).replace(src.find("put_device(dev)"), 15, "put_device(intf->dev)")));
  EXPECT_TRUE(propose::make_callback_signature()->propose(ds, ctx).empty());

  // A use in a branch the target does not compile is no use (6.12 is not below 6.1).
  std::string guarded = std::string(src).replace(
      src.find("\treturn 0;"), 0, "#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)\n\tput_device(intf->dev);\n#endif\n");
  ASSERT_TRUE(util::write_file(tmp->path() / "d.c", guarded));
  core::Kernel k;
  k.build_dir = tmp->path() / "build";
  fs::create_directories(k.build_dir / "include/generated/uapi/linux");
  ASSERT_TRUE(util::write_file(k.build_dir / "include/generated/uapi/linux/version.h",
                               "#define LINUX_VERSION_CODE 396288\n")); // 6.12.0
  ctx.to = &k;
  ds[0].line += 3;
  edits = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tmp->path(), tmp->path() / "s"));
  out = *util::read_file(tmp->path() / "d.c");
  EXPECT_NE(out.find("static int drv_add(struct device *dev)\n{"), std::string::npos) << out;
  // On 6.0 the branch is compiled: the parameter stays.
  ASSERT_TRUE(util::write_file(tmp->path() / "d.c", guarded));
  ASSERT_TRUE(util::write_file(k.build_dir / "include/generated/uapi/linux/version.h", "#define LINUX_VERSION_CODE 393216\n"));
  EXPECT_TRUE(propose::make_callback_signature()->propose(ds, ctx).empty());
}

TEST(CallbackSignature, ParameterAddedBeforeOneOfItsTypeFollowsTheKernelsNames) {
  // 7.x's tpm_class_ops.send gained bufsiz before the command length: by type alone the old
  // `count` would become bufsiz; the kernel's own implementations name the fourth `count`.
  std::vector<propose::Param> old = {{"struct tpm_chip *", "chip"}, {"u8 *", "buf"}, {"size_t", "count"}};
  auto none = [](const std::string&) { return std::vector<propose::Param>{}; };
  std::vector<std::string> to = {"struct tpm_chip *", "u8 *", "size_t", "size_t"};
  auto plan = propose::plan_param_reshape(old, to, {"chip", "buf", "bufsiz", "count"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params, (std::vector<std::string>{"struct tpm_chip *chip", "u8 *buf", "size_t bufsiz", "size_t count"}));
  EXPECT_EQ(plan->added, std::vector<std::string>{"bufsiz"});
  // Names the kernel does not use for the old parameters: the type alignment (kept prefix).
  plan = propose::plan_param_reshape(old, to, {"chip", "buf", "bufsiz", "len"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params, (std::vector<std::string>{"struct tpm_chip *chip", "u8 *buf", "size_t count", "size_t len"}));
  // A name given to a parameter of another type is not a match.
  plan = propose::plan_param_reshape(old, to, {"chip", "buf", "count", "bufsiz"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params[2], "size_t count");
  // The driver calls it `length`, which the target's implementations do not: where the kernel's own
  // implementations moved the third parameter (6.12 `(chip, buf, len)` -> 7.3 `(chip, buf, bufsiz, len)`).
  std::vector<propose::Param> infineon = {{"struct tpm_chip *", "chip"}, {"u8 *", "buf"}, {"size_t", "length"}};
  plan = propose::plan_param_reshape(infineon, to, {"chip", "buf", "bufsiz", "count"}, none, {0, 1, 3});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params, (std::vector<std::string>{"struct tpm_chip *chip", "u8 *buf", "size_t bufsiz", "size_t length"}));
}

TEST(CallbackSignature, ParameterDroppedBesideOneOfItsTypeFollowsTheKernelsNames) {
  // 5.19 dropped proto.recvmsg's `noblock` (an int beside the int `flags`): by type alone the
  // kept prefix would take `noblock` for `flags` and drop `flags`.
  std::vector<propose::Param> old = {{"struct sock *", "sk"}, {"struct msghdr *", "msg"}, {"size_t", "len"},
                                     {"int", "noblock"},      {"int", "flags"},           {"int *", "addr_len"}};
  auto none = [](const std::string&) { return std::vector<propose::Param>{}; };
  std::vector<std::string> to = {"struct sock *", "struct msghdr *", "size_t", "int", "int *"};
  auto plan = propose::plan_param_reshape(old, to, {"sk", "msg", "len", "flags", "addr_len"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params,
            (std::vector<std::string>{"struct sock *sk", "struct msghdr *msg", "size_t len", "int flags", "int *addr_len"}));
  EXPECT_EQ(plan->unused, std::vector<std::string>{"noblock"});
  // A kept parameter the target made const is written as the target has it.
  auto to_const = to;
  to_const[1] = "const struct msghdr *";
  plan = propose::plan_param_reshape(old, to_const, {"sk", "msg", "len", "flags", "addr_len"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params[1], "const struct msghdr *msg");
  // The driver's own names (`nonblock`, `size`): where the kernel's own implementations kept
  // each position (npos: dropped).
  std::vector<propose::Param> mine = {{"struct sock *", "s"}, {"struct msghdr *", "m"}, {"size_t", "size"}, {"int", "nonblock"},
                                      {"int", "fl"},          {"int *", "alen"}};
  const auto npos = std::string::npos;
  plan = propose::plan_param_reshape(mine, to, {"sk", "msg", "len", "flags", "addr_len"}, none, {0, 1, 2, npos, 3, 4});
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->unused, std::vector<std::string>{"nonblock"});
  EXPECT_EQ(plan->params[3], "int fl");
  // Without either, the type alignment (which drops the later one).
  plan = propose::plan_param_reshape(mine, to, {"sk", "msg", "len", "flags", "addr_len"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->unused, std::vector<std::string>{"fl"});
}

TEST(CallbackSignature, ParametersFoldedIntoStruct) {
  // 6.8 folded ethtool's get_rxfh(dev, indir, key, hfunc) into struct ethtool_rxfh_param.
  std::vector<propose::Param> old = {{"struct net_device *", "netdev"}, {"u32 *", "p"}, {"u8 *", "key"}, {"u8 *", "hfunc"}};
  auto members = [](const std::string& tag) {
    EXPECT_EQ(tag, "ethtool_rxfh_param");
    return std::vector<propose::Param>{
        {"u8", "hfunc"}, {"u32", "indir_size"}, {"u32 *", "indir"}, {"u32", "key_size"}, {"u8 *", "key"}};
  };
  // vmxnet3 calls the table "p": the one u32 * member takes it.
  auto by_type = propose::plan_param_reshape(old, {"struct net_device *", "struct ethtool_rxfh_param *"}, {}, members);
  ASSERT_TRUE(by_type);
  EXPECT_EQ(by_type->prologue.front(), "u32 *p = ethtool_rxfh_param->indir;");
  // A u16 * has no member to bind to: nothing folds, the parameters could only be dropped (if unused).
  old[1].type = "u16 *";
  auto drop = propose::plan_param_reshape(old, {"struct net_device *", "struct ethtool_rxfh_param *"}, {}, members);
  ASSERT_TRUE(drop);
  EXPECT_TRUE(drop->prologue.empty());
  EXPECT_EQ(drop->unused, (std::vector<std::string>{"p", "key", "hfunc"}));
  old[1] = {"u32 *", "indir"};
  auto plan = propose::plan_param_reshape(old, {"struct net_device *", "struct ethtool_rxfh_param *"}, {"dev", "rxfh"}, members);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params, (std::vector<std::string>{"struct net_device *netdev", "struct ethtool_rxfh_param *rxfh"}));
  EXPECT_EQ(plan->prologue,
            (std::vector<std::string>{"u32 *indir = rxfh->indir;", "u8 *key = rxfh->key;", "u8 *hfunc = &rxfh->hfunc;"}));
  // set_rxfh also gained an extack the driver does not use.
  std::vector<propose::Param> set = {
      {"struct net_device *", "netdev"}, {"const u32 *", "indir"}, {"const u8 *", "key"}, {"const u8", "hfunc"}};
  plan = propose::plan_param_reshape(set, {"struct net_device *", "struct ethtool_rxfh_param *", "struct netlink_ext_ack *"}, {},
                                     members);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params.back(), "struct netlink_ext_ack *netlink_ext_ack");
  EXPECT_EQ(plan->prologue.back(), "const u8 hfunc = ethtool_rxfh_param->hfunc;");
  EXPECT_EQ(plan->added, std::vector<std::string>{"netlink_ext_ack"});
}

TEST(ApplyTextEdits, RelocatedAfterOtherEditsMovedLines) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-te-");
  ASSERT_TRUE(tmp);
  ASSERT_TRUE(util::write_file(tmp->path() / "a.c", "int a;\nstatic int f(int x, int y)\n{\n\treturn x;\n}\n"));
  propose::Edit e;
  e.text_edits.push_back({"a.c", 2, 1, "static int f(int x)\n"});
  e.text_edits.push_back({"a.c", 4, 0, "\tint y = 0;\n"}); // after the '{' line
  propose::fill_expectations(e, tmp->path());
  ASSERT_TRUE(e.text_edits[0].expect);
  EXPECT_EQ(*e.text_edits[0].expect, "static int f(int x, int y)\n");
  EXPECT_EQ(*e.text_edits[1].expect, "{\n");
  // Another accepted edit added two lines above: the edit follows its lines.
  ASSERT_TRUE(util::write_file(tmp->path() / "a.c", "int a;\nint b;\nint c;\nstatic int f(int x, int y)\n{\n\treturn x;\n}\n"));
  ASSERT_TRUE(propose::apply_edit(e, tmp->path(), tmp->path() / "s"));
  EXPECT_EQ(*util::read_file(tmp->path() / "a.c"),
            "int a;\nint b;\nint c;\nstatic int f(int x)\n{\n\tint y = 0;\n\treturn x;\n}\n");
  // The lines it replaces are gone: the edit fails instead of damaging other lines.
  EXPECT_FALSE(propose::apply_edit(e, tmp->path(), tmp->path() / "s"));
  // After the edit's own SmPL, a line it already rewrote (spatch retypes prototypes with their
  // definition) counts as done; a line neither form of is there still fails.
  ASSERT_TRUE(util::write_file(tmp->path() / "a.c", "int f(int x);\nint f(int x)\n{\n\treturn x;\n}\n"));
  propose::Edit v;
  v.smpl = "@@\n@@\n- int\n+ void\n f(...) { ... }\n";
  v.text_edits.push_back({"a.c", 1, 1, "void f(int x);\n", "int f(int x);\n"});
  ASSERT_TRUE(propose::apply_edit(v, tmp->path(), tmp->path() / "s"));
  EXPECT_EQ(*util::read_file(tmp->path() / "a.c"), "void f(int x);\nvoid f(int x)\n{\n\treturn x;\n}\n");
  v.text_edits[0] = {"a.c", 1, 1, "long f(int x);\n", "short f(int x);\n"};
  EXPECT_FALSE(propose::apply_edit(v, tmp->path(), tmp->path() / "s"));
}

TEST(CallbackSignature, DroppedParameterComputedLikeTheTargetsOwnImplementations) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-cb-");
  ASSERT_TRUE(tmp);
  // The target's own i2c drivers after 6.3 (abridged from drivers/hwmon/lm75.c and tmp102.c).
  fs::path src = tmp->path() / "src";
  fs::create_directories(src / "drivers/hwmon");
  fs::create_directories(tmp->path() / "tree");
  for (auto [file, fn] : {std::pair{"lm75.c", "lm75_probe"}, std::pair{"tmp102.c", "tmp102_probe"}})
    ASSERT_TRUE(
        util::write_file(src / "drivers/hwmon" / file,
                         fmt::format("static int {0}(struct i2c_client *client)\n{{\n\tstruct device *dev = &client->dev;\n"
                                     "\tconst struct i2c_device_id *id = i2c_client_get_device_id(client);\n\treturn 0;\n}}\n"
                                     "static struct i2c_driver d = {{\n\t.probe = {0},\n}};\n",
                                     fn)));
  fs::path tree = tmp->path() / "tree";
  std::string drv = "static int drv_probe(struct i2c_client *c, const struct i2c_device_id *id)\n{\n"
                    "\treturn id->driver_data;\n}\n\nstatic struct i2c_driver drv = {\n\t.probe = drv_probe,\n};\n";
  ASSERT_TRUE(util::write_file(tree / "drv.c", drv));
  gate::ParseOptions po;
  auto ds = gate::parse_build_output(
      "drv.c:7:18: error: initialization of 'int (*)(struct i2c_client *)' from incompatible pointer type 'int "
      "(*)(struct i2c_client *, const struct i2c_device_id *)' [-Werror=incompatible-pointer-types]\n",
      po);
  ASSERT_EQ(ds.size(), 1u);
  core::Kernel k;
  k.build_dir = tmp->path() / "build";
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.to = &k;
  ctx.new_src = src;
  auto edits = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, tmp->path() / "s"));
  EXPECT_EQ(*util::read_file(tree / "drv.c"),
            "static int drv_probe(struct i2c_client *c)\n{\n"
            "\tconst struct i2c_device_id *id = i2c_client_get_device_id(c);\n"
            "\treturn id->driver_data;\n}\n\nstatic struct i2c_driver drv = {\n\t.probe = drv_probe,\n};\n");

  // With one implementation only, there is no convention to follow: no edit.
  fs::remove(src / "drivers/hwmon/tmp102.c");
  ASSERT_TRUE(util::write_file(tree / "drv.c", drv));
  EXPECT_TRUE(propose::make_callback_signature()->propose(ds, ctx).empty());
}

TEST(CallbackSignature, DroppedParameterReplacedAsTheKernelsOwnImplementationsReplacedIt) {
  // 5.19 dropped proto.recvmsg's `noblock`; the kernel's implementations now write
  // `flags & MSG_DONTWAIT` where they used it, and a use passed on to a call that lost the
  // parameter too went with it (abridged from net/mptcp/protocol.c and net/sctp/socket.c).
  auto tmp = util::TempDir::create(util::scratch_root(), "test-cb-");
  ASSERT_TRUE(tmp);
  fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  for (const auto& d : {old_src / "net/ipv4", new_src / "net/ipv4", tree}) fs::create_directories(d);
  for (auto [file, fn, name] : {std::tuple{"udp.c", "udp_recvmsg", "noblock"}, std::tuple{"raw.c", "raw_recvmsg", "nonblock"}}) {
    const std::string table = fmt::format("struct proto p_{0} = {{\n\t.recvmsg = {0},\n}};\n", fn);
    ASSERT_TRUE(util::write_file(old_src / "net/ipv4" / file,
                                 fmt::format("int {0}(struct sock *sk, struct msghdr *msg, size_t len, int {1}, int flags, "
                                             "int *addr_len)\n{{\n\tlong t = sock_rcvtimeo(sk, {1});\n"
                                             "\tskb_recv_datagram(sk, flags, {1}, &t);\n\treturn t + len;\n}}\n",
                                             fn, name) +
                                     table));
    ASSERT_TRUE(
        util::write_file(new_src / "net/ipv4" / file,
                         fmt::format("int {0}(struct sock *sk, struct msghdr *msg, size_t len, int flags, int *addr_len)\n"
                                     "{{\n\tlong t = sock_rcvtimeo(sk, flags & MSG_DONTWAIT);\n"
                                     "\tskb_recv_datagram(sk, flags, &t);\n\treturn t + len;\n}}\n",
                                     fn) +
                             table));
  }
  const std::string drv = "static int drv_recvmsg(struct sock *sk, struct msghdr *msg, size_t len, int noblock, int flags,\n"
                          "\t\t       int *addr_len)\n{\n\treturn drv_wait(sk, noblock);\n}\n\n"
                          "void drv_init(void)\n{\n\tdrv_prot.recvmsg = drv_recvmsg;\n}\n";
  ASSERT_TRUE(util::write_file(tree / "drv.c", drv));
  gate::ParseOptions po;
  auto ds = gate::parse_build_output(
      "drv.c:9:26: error: assignment to 'int (*)(struct sock *, struct msghdr *, size_t,  int,  int *)' from incompatible "
      "pointer type 'int (*)(struct sock *, struct msghdr *, size_t,  int,  int,  int *)' [-Werror=incompatible-pointer-types]\n",
      po);
  ASSERT_EQ(ds.size(), 1u);
  core::Kernel from, to;
  from.build_dir = tmp->path() / "b-old";
  to.build_dir = tmp->path() / "b-new";
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.from = &from;
  ctx.to = &to;
  ctx.old_src = old_src;
  ctx.new_src = new_src;
  auto edits = propose::make_callback_signature()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, tmp->path() / "s"));
  auto out = *util::read_file(tree / "drv.c");
  EXPECT_NE(out.find("static int drv_recvmsg(struct sock *sk, struct msghdr *msg, size_t len, int flags, int *addr_len)\n{\n"
                     "\tint noblock = flags & MSG_DONTWAIT;\n\treturn drv_wait(sk, noblock);"),
            std::string::npos)
      << out;

  // One implementation that did so is not a convention.
  fs::remove(new_src / "net/ipv4/raw.c");
  ASSERT_TRUE(util::write_file(tree / "drv.c", drv));
  EXPECT_TRUE(propose::make_callback_signature()->propose(ds, ctx).empty());
}

namespace {
std::vector<std::string> tok_texts(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& t : csrc::tokenize(s)) out.push_back(t.text);
  return out;
}

/// A port of the driver tree `tree` to the kernel source `src` (its own build dir in these
/// fixtures), without an old kernel.
struct TargetOnly {
  core::Kernel to;
  propose::PortContext ctx;
  TargetOnly(const fs::path& src, const fs::path& tree, const fs::path& scratch) {
    to.build_dir = src;
    ctx.to = &to;
    ctx.new_src = src;
    ctx.tree = tree;
    ctx.original_tree = tree;
    ctx.scratch = scratch;
  }
  TargetOnly(const TargetOnly&) = delete;
  TargetOnly& operator=(const TargetOnly&) = delete;
};
/// The same with the old kernel's source too (what --from gives a port).
struct FromTo : TargetOnly {
  core::Kernel from;
  FromTo(const fs::path& old_src, const fs::path& new_src, const fs::path& tree, const fs::path& scratch)
      : TargetOnly(new_src, tree, scratch) {
    from.build_dir = old_src;
    ctx.from = &from;
    ctx.old_src = old_src;
  }
};
} // namespace

TEST(StmtTemplate, AntiUnifiesTheKernelsOwnRewrites) {
  // 6.3's vm_flags accessors (drivers/gpu/drm/i915/gem/i915_gem_mman.c and others).
  auto t = propose::anti_unify(tok_texts("vma->vm_flags |= VM_IO | VM_DONTEXPAND;"),
                               tok_texts("vm_flags_set(vma, VM_IO | VM_DONTEXPAND);"), "vm_flags");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->key(), "$0 -> vm_flags |= $1 ; => vm_flags_set ( $0 , $1 ) ;");
  EXPECT_EQ(propose::template_smpl(*t), "@@\nexpression E0, E1;\n@@\n- E0->vm_flags |= E1;\n+ vm_flags_set(E0, E1);\n");
  // 6.6's ctime accessors: the same operand twice is one hole.
  t = propose::anti_unify(tok_texts("inode->i_ctime = current_time(inode);"), tok_texts("inode_set_ctime_current(inode);"),
                          "i_ctime");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->key(), "$0 -> i_ctime = current_time ( $0 ) ; => inode_set_ctime_current ( $0 ) ;");
  // A read narrows to the expression, so it applies wherever the member is read.
  t = propose::anti_unify(tok_texts("ts = inode->i_ctime;"), tok_texts("ts = inode_get_ctime(inode);"), "i_ctime");
  ASSERT_TRUE(t);
  auto e = propose::narrow_to_expression(*t, "i_ctime");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->key(), "$1 -> i_ctime => inode_get_ctime ( $1 )");
  EXPECT_EQ(propose::template_smpl(*e), "@@\nexpression E1;\n@@\n- E1->i_ctime\n+ inode_get_ctime(E1)\n");
  // A deleted call keeps its arguments as holes.
  t = propose::anti_unify(tok_texts("pci_disable_pcie_error_reporting(pdev);"), {}, "pci_disable_pcie_error_reporting");
  ASSERT_TRUE(t);
  EXPECT_EQ(propose::template_smpl(*t), "@@\nexpression E0;\n@@\n- pci_disable_pcie_error_reporting(E0);\n");
  // ... but its constant arguments stay: dropping "f(x, NULL)" says nothing about "f(x, page)".
  t = propose::anti_unify(tok_texts("__skb_frag_set_page(frag, NULL);"), {}, "__skb_frag_set_page");
  ASSERT_TRUE(t);
  EXPECT_EQ(propose::template_smpl(*t), "@@\nexpression E0;\n@@\n- __skb_frag_set_page(E0, NULL);\n");
  // Control flow is not a statement template.
  EXPECT_FALSE(propose::anti_unify(tok_texts("if (x) y->f = 1;"), tok_texts("g(y);"), "f"));
}

TEST(StmtTemplate, FlagVariantsFollowTheFlagIntoOrChains) {
  // 6.12's NETIF_F_LLTX -> dev->lltx (drivers/net/amt.c and 14 more in the kernel's own diff).
  auto t = propose::anti_unify(tok_texts("dev->features |= NETIF_F_LLTX;"), tok_texts("dev->lltx = true;"), "NETIF_F_LLTX");
  ASSERT_TRUE(t);
  std::string smpl = propose::flag_variants_smpl(*t, "NETIF_F_LLTX");
  ASSERT_FALSE(smpl.empty());
  EXPECT_TRUE(propose::flag_variants_smpl(*t, "NETIF_F_SG").empty());
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  // The three shapes, as 6.1's tun.c, pasemi_mac.c and openvpn-dco write them.
  const std::string before = R"(static void a(struct net_device *dev)
{
	dev->features = dev->hw_features | NETIF_F_LLTX;
	dev->vlan_features = dev->features;
}

static void b(struct net_device *dev)
{
	dev->features = NETIF_F_IP_CSUM | NETIF_F_LLTX | NETIF_F_SG |
			NETIF_F_HIGHDMA | NETIF_F_GSO;
}

static void c(struct net_device *dev)
{
	netdev_features_t feat = NETIF_F_SG | NETIF_F_LLTX |
				 NETIF_F_HW_CSUM;

	dev->mtu = 1500;
	dev->features |= feat;
	dev->hw_features |= feat;
}

static void d(struct net_device *dev)
{
	dev->features |= NETIF_F_HW_CSUM | NETIF_F_LLTX;
}
)";
  auto tmp = util::TempDir::create(util::scratch_root(), "flags-");
  ASSERT_TRUE(tmp.has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "x.c", before).has_value());
  propose::Edit e;
  e.proposer = "learned-rewrite";
  e.smpl = smpl + "\n" + propose::template_smpl(*t);
  ASSERT_TRUE(propose::apply_edit(e, tmp->path(), tmp->path() / "s"));
  auto after = util::read_file(tmp->path() / "x.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->find("NETIF_F_LLTX"), std::string::npos) << *after;
  EXPECT_NE(after->find("dev->features = dev->hw_features;\n\tdev->lltx = true;\n\tdev->vlan_features"), std::string::npos)
      << *after;
  EXPECT_NE(after->find("NETIF_F_GSO;\n\tdev->lltx = true;"), std::string::npos) << *after;
  EXPECT_NE(after->find("dev->features |= feat;\n\tdev->lltx = true;\n\tdev->hw_features |= feat;"), std::string::npos) << *after;
  EXPECT_NE(after->find("dev->features |= NETIF_F_HW_CSUM;\n\tdev->lltx = true;"), std::string::npos) << *after;
}

TEST(InlineRemoved, CallBecomesTheOldHeadersBody) {
  // 6.12 moved fd_is_open() from <linux/fdtable.h> into fs/file.c (falcosecurity-scap calls it).
  const fs::path root = fs::path(AD_FIXTURES) / "inline";
  auto tmp = util::TempDir::create(util::scratch_root(), "inline-");
  ASSERT_TRUE(tmp.has_value());
  ASSERT_TRUE(util::copy_tree(root / "driver", tmp->path() / "tree", util::SkipBuildProducts::yes));
  TargetOnly port(root / "new", tmp->path() / "tree", tmp->path() / "s");
  auto& ctx = port.ctx;
  ctx.old_src = root / "old";
  ctx.original_tree = root / "driver";
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "drop.c";
  d.line = 15;
  d.symbols = {"fd_is_open"};
  auto edits = propose::make_inline_removed()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].smpl, "@@\nexpression E0, E1;\n@@\n- fd_is_open(E0, E1)\n+ test_bit(E0, E1->open_fds)\n");
  EXPECT_EQ(edits[0].evidence, (std::vector<std::string>{"include/linux/fdtable.h:40"}));
  // A name the target still declares is header-fix's job, not a copy of its body.
  d.symbols = {"close_on_exec"};
  EXPECT_TRUE(propose::make_inline_removed()->propose({d}, ctx).empty());
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(edits[0], ctx.tree, ctx.scratch));
  auto after = util::read_file(ctx.tree / "drop.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("!test_bit(close_fd, fdt->open_fds)"), std::string::npos) << *after;
}

TEST(InlineRemoved, ABodysOwnEnclosingParenthesesAreNotCopied) {
  // `#define OLD_SET(d, v) ( (d)->field = (v) )`: the call's place decides whether the
  // expression needs parentheses (a statement does not), not the macro's own safety parentheses.
  const fs::path root = fs::path(AD_FIXTURES) / "inline";
  auto tmp = util::TempDir::create(util::scratch_root(), "inline-");
  ASSERT_TRUE(tmp.has_value());
  ASSERT_TRUE(util::copy_tree(root / "driver", tmp->path() / "tree", util::SkipBuildProducts::yes));
  TargetOnly port(root / "new", tmp->path() / "tree", tmp->path() / "s");
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "drop.c";
  d.line = 15;
  d.symbols = {"OLD_SET"};
  auto p = propose::make_inline_from_definitions(
      "rule-pack", {{"rules/x.rule", "#define OLD_SET(d, v)\t( (d)->field = (v) )\n#define OLD_TWICE(a, b) ((a) + (b))\n"}});
  auto edits = p->propose({d}, port.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].smpl, "@@\nexpression E0, E1;\n@@\n- OLD_SET(E0, E1)\n+ ((E0)->field =(E1))\n");
  d.symbols = {"OLD_TWICE"};
  edits = p->propose({d}, port.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].smpl, "@@\nexpression E0, E1;\n@@\n- OLD_TWICE(E0, E1)\n+ ((E0) +(E1))\n");
}

TEST(CTokens, FirstBranchMaskKeepsBraceNesting) {
  // Both branches open a block (as in falcosecurity-scap's main.c): counting every brace would
  // leave the next function one level deep.
  auto toks = csrc::tokenize("void a(void)\n{\n#if X\n\tif (p) {\n#else\n\tif (q) {\n#endif\n\t}\n}\n"
                             "static char *b(struct device *dev)\n{\n\treturn 0;\n}\n");
  auto mask = csrc::first_branch_mask(toks);
  int depth = 0, naive = 0;
  std::size_t b = 0;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].text == "b") {
      b = i;
      break;
    }
    if (toks[i].text == "{") ++naive, depth += mask[i];
    if (toks[i].text == "}") --naive, depth -= mask[i];
  }
  ASSERT_GT(b, 0u);
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(naive, 1);
}

TEST(Apply, SpatchReadsOnlyFilesNamingWhatARuleRemoves) {
  auto tmp = util::TempDir::create(util::scratch_root(), "smplfiles-");
  ASSERT_TRUE(tmp.has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "a.c", "void a(void) { foo(1); }\n").has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "b.c", "void b(void) { bar(2); }\n").has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "c.c", "int foobar; /* foo_x */\n").has_value());
  const std::vector<std::string> all = {"a.c", "b.c", "c.c"};
  using V = std::vector<std::string>;
  EXPECT_EQ(propose::files_for_smpl("@@\nexpression E;\n@@\n- foo(E)\n+ baz(E)\n", tmp->path(), all), V{"a.c"})
      << "c.c names foobar and foo_x, not foo";
  EXPECT_EQ(propose::files_for_smpl("@@\nexpression E;\n@@\n- foo(E)\n+ baz(E)\n\n@r@\nexpression E;\n@@\n- bar(E)\n",
                                    tmp->path(), all),
            (V{"a.c", "b.c"}));
  // A rule that removes only metavariables (or NULL, which an isomorphism matches as `!x`) may
  // match anywhere; so may a script rule.
  EXPECT_EQ(propose::files_for_smpl("@@\nidentifier f;\nexpression E;\n@@\n- f(E)\n", tmp->path(), all), all);
  EXPECT_EQ(propose::files_for_smpl("@@\nexpression E;\n@@\n- E == NULL\n+ !E\n", tmp->path(), all), all);
  EXPECT_EQ(propose::files_for_smpl("@script:python@\n@@\nprint(1)\n@@\nexpression E;\n@@\n- foo(E)\n", tmp->path(), all), all);
  EXPECT_TRUE(propose::files_for_smpl("@@\nexpression E;\n@@\n- qux(E)\n", tmp->path(), all).empty());
  // Every identifier of a removed line is in the code it matches: a.c has foo without bar, b.c
  // bar without foo; either line of a disjunction may match.
  EXPECT_TRUE(propose::files_for_smpl("@@\nexpression E;\n@@\n- foo(E, bar)\n", tmp->path(), all).empty());
  EXPECT_EQ(propose::files_for_smpl("@@\nexpression E;\n@@\n(\n- foo(E)\n|\n- bar(E)\n)\n", tmp->path(), all), (V{"a.c", "b.c"}));
}

namespace {

/// `src` as a driver file after the merge rule's SmPL ran on it; nullopt when it could not be
/// written, applied or read back.
std::optional<std::string> after_merge(const propose::MergeRule& r, const std::string& src) {
  auto tmp = util::TempDir::create(util::scratch_root(), "merge-");
  if (!tmp || !util::write_file(tmp->path() / "x.c", src)) return std::nullopt;
  propose::Edit e;
  e.smpl = propose::merge_smpl(r);
  if (!propose::apply_edit(e, tmp->path(), tmp->path() / "s")) return std::nullopt;
  auto after = util::read_file(tmp->path() / "x.c");
  if (!after) return std::nullopt;
  return *after;
}

} // namespace

TEST(CallMerge, ThreeFragCallsBecomeOne) {
  const fs::path root = fs::path(AD_FIXTURES) / "merge";
  propose::SiteIndex idx(root / "old", root / "new", {}, {});
  auto merges = propose::learn_merges(idx, "__skb_frag_set_page");
  ASSERT_FALSE(merges.empty());
  const auto& r = merges[0].rule;
  EXPECT_EQ(r.callee, "skb_frag_fill_page_desc");
  ASSERT_EQ(r.calls.size(), 3u);
  EXPECT_EQ(r.calls[0].first, "__skb_frag_set_page");
  EXPECT_EQ(r.args, (std::vector<std::string>{"$0.1", "$1.1", "$2.1"}));
  // Nothing to learn for a function the kernel never merged.
  EXPECT_TRUE(propose::learn_merges(idx, "skb_frag_page").empty());
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  // 6.1's vmxnet3_append_frag(), in another order than aq_ring.c's.
  auto after = after_merge(r, R"(static void
vmxnet3_append_frag(struct sk_buff *skb, struct Vmxnet3_RxCompDesc *rcd,
		    struct vmxnet3_rx_buf_info *rbi)
{
	skb_frag_t *frag = skb_shinfo(skb)->frags + skb_shinfo(skb)->nr_frags;

	__skb_frag_set_page(frag, rbi->page);
	skb_frag_off_set(frag, 0);
	skb_frag_size_set(frag, rcd->len);
	skb->data_len += rcd->len;
}
)");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("\tskb_frag_fill_page_desc(frag, rbi->page, 0, rcd->len);\n\tskb->data_len"), std::string::npos)
      << *after;
  EXPECT_EQ(after->find("skb_frag_off_set"), std::string::npos) << *after;
}

TEST(CallMerge, AssignmentMergesWithTheCall) {
  // hrtimer_init(&t, c, m); t.function = f;  ->  hrtimer_setup(&t, f, c, m);  (and through a pointer)
  const fs::path root = fs::path(AD_FIXTURES) / "merge_assign";
  propose::SiteIndex idx(root / "old", root / "new", {}, {});
  auto merges = propose::learn_merges(idx, "hrtimer_init");
  ASSERT_EQ(merges.size(), 1u) << "both forms are one rule";
  const auto& r = merges[0].rule;
  EXPECT_EQ(merges[0].count, 2);
  EXPECT_EQ(r.callee, "hrtimer_setup");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].first, "=.function");
  EXPECT_EQ(r.args, (std::vector<std::string>{"$1.1", "$0.1", "$0.2"}));
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  auto after = after_merge(r, R"(static struct hrtimer ticktock;
static int d_init(struct d *p)
{
	hrtimer_init(&ticktock, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	ticktock.function = d_fire;
	hrtimer_init(&p->t, CLOCK_REALTIME, HRTIMER_MODE_ABS);
	p->t.function = d_other;
	return 0;
}
)");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("hrtimer_setup(&ticktock, d_fire, CLOCK_MONOTONIC, HRTIMER_MODE_REL);"), std::string::npos) << *after;
  EXPECT_NE(after->find("hrtimer_setup(&p->t, d_other, CLOCK_REALTIME, HRTIMER_MODE_ABS);"), std::string::npos) << *after;
  EXPECT_EQ(after->find(".function"), std::string::npos) << *after;
}

TEST(CTokens, ChangedFunctions) {
  const std::string before = "static int n;\nstatic int a(void)\n{\n\treturn 1;\n}\nstatic int b(void)\n{\n\treturn 2;\n}\n";
  std::string after = before;
  after.replace(after.find("return 2"), 8, "return 3");
  EXPECT_EQ(csrc::changed_functions(before, after), (std::set<std::string>{"b"}));
  std::string top = before;
  top.replace(top.find("static int n;"), 13, "static long n;");
  EXPECT_EQ(csrc::changed_functions(before, top), (std::set<std::string>{""}));
  EXPECT_EQ(csrc::changed_functions(before, "/* comment */\n" + before), (std::set<std::string>{""}));
}

TEST(TargetApi, MemberReplacedInPlaceByATypedPointer) {
  // 7.3 replaced ipmi_smi_msg's `void *user_data` by `struct ipmi_recv_msg *recv_msg` in its place:
  // no similar name, but the only member removed and the only one added, between the same members.
  auto tmp = util::TempDir::create(util::scratch_root(), "member-place-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  for (const auto& d : {old_src / "include/linux", new_src / "include/linux", tree}) fs::create_directories(d);
  ASSERT_TRUE(util::write_file(old_src / "include/linux/ipmi_smi.h",
                               "struct ipmi_smi_msg {\n\tlong msgid;\n\tvoid *user_data;\n\tint data_size;\n};\n")
                  .has_value());
  ASSERT_TRUE(
      util::write_file(tree / "x.c", "void f(struct ipmi_smi_msg *m, struct ipmi_recv_msg *r)\n{\n\tm->user_data = r;\n}\n")
          .has_value());
  FromTo port(old_src, new_src, tree, tmp->path() / "s");
  const auto& ctx = port.ctx;
  core::Diagnostic d;
  d.kind = core::DiagKind::no_member;
  d.file = "x.c";
  d.line = 3;
  d.symbols = {"struct ipmi_smi_msg", "user_data"};
  auto titles_with = [&](const std::string& new_struct) {
    EXPECT_TRUE(util::write_file(new_src / "include/linux/ipmi_smi.h", new_struct).has_value());
    std::vector<std::string> titles;
    for (const auto& e : propose::make_target_api()->propose({d}, ctx)) titles.push_back(e.title);
    return titles;
  };
  auto titles = titles_with("struct ipmi_smi_msg {\n\tlong msgid;\n\tstruct ipmi_recv_msg *recv_msg;\n\tint data_size;\n};\n");
  ASSERT_FALSE(titles.empty());
  EXPECT_EQ(titles[0], "struct ipmi_smi_msg.user_data was renamed to .recv_msg");
  // Not a pointer where the old member was one, or a second member added: no such successor.
  for (const auto* other : {"struct ipmi_smi_msg {\n\tlong msgid;\n\tint recv_count;\n\tint data_size;\n};\n",
                            "struct ipmi_smi_msg {\n\tlong msgid;\n\tstruct ipmi_recv_msg *recv_msg;\n\tint data_size;\n"
                            "\tint flags;\n};\n"})
    for (const auto& t : titles_with(other)) EXPECT_EQ(t.find("renamed to .rec"), std::string::npos) << t;
}

TEST(TargetApi, MemberSuccessorKeepsTheOldType) {
  // 6.12 dropped block_device.bd_inode; bd_holder is as similar a name, but a void *.
  auto tmp = util::TempDir::create(util::scratch_root(), "member-type-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  for (const auto& d : {old_src / "include/linux", new_src / "include/linux", tree}) fs::create_directories(d);
  ASSERT_TRUE(util::write_file(old_src / "include/linux/blk_types.h",
                               "struct block_device {\n\tsector_t bd_start_sect;\n\tstruct inode *bd_inode;\n"
                               "\tvoid *bd_holder;\n};\n")
                  .has_value());
  ASSERT_TRUE(util::write_file(new_src / "include/linux/blk_types.h",
                               "struct block_device {\n\tsector_t bd_start_sect;\n\tvoid *bd_holder;\n"
                               "\tstruct inode *bd_inodes;\n};\n")
                  .has_value());
  ASSERT_TRUE(util::write_file(tree / "x.c", "sector_t size(struct block_device *b)\n{\n\treturn i_size_read(b->bd_inode);\n}\n")
                  .has_value());
  FromTo port(old_src, new_src, tree, tmp->path() / "s");
  const auto& ctx = port.ctx;
  core::Diagnostic d;
  d.kind = core::DiagKind::no_member;
  d.file = "x.c";
  d.line = 3;
  d.symbols = {"struct block_device", "bd_inode"};
  std::vector<std::string> titles;
  for (const auto& e : propose::make_target_api()->propose({d}, ctx)) titles.push_back(e.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"struct block_device.bd_inode was renamed to .bd_inodes"}));
}

TEST(TargetApi, ObsoleteAnnotationDropped) {
  // dpdk-kmods' igb_uio.c as its maintainers wrote it for kernels before 3.8.
  auto tmp = util::TempDir::create(util::scratch_root(), "annotation-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path src = tmp->path() / "linux", tree = tmp->path() / "tree";
  fs::create_directories(src / "include/linux");
  fs::create_directories(tree);
  ASSERT_TRUE(util::write_file(src / "include/linux/init.h", "#define __init __section(\".init.text\")\n").has_value());
  ASSERT_TRUE(util::write_file(tree / "igb_uio.c", "static int __devinit\nigbuio_pci_probe(struct pci_dev *dev, const "
                                                   "struct pci_device_id *id)\n{\n\treturn 0;\n}\n"
                                                   "static int __init igbuio_pci_init_module(void)\n{\n\treturn 0;\n}\n")
                  .has_value());
  TargetOnly port(src, tree, tmp->path() / "s");
  const auto& ctx = port.ctx;
  core::Diagnostic d;
  d.kind = core::DiagKind::syntax_error;
  d.file = "igb_uio.c";
  d.line = 2;
  d.message = "expected '=', ',', ';', 'asm' or '__attribute__' before 'igbuio_pci_probe'";
  auto edits = propose::make_target_api()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "igb_uio.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(after->starts_with("static int\nigbuio_pci_probe(")) << *after;
  // An annotation the target defines is not the problem.
  d.line = 6;
  d.message = "expected '=', ',', ';', 'asm' or '__attribute__' before 'igbuio_pci_init_module'";
  auto none = propose::make_target_api()->propose({d}, ctx);
  EXPECT_TRUE(none.empty()) << none[0].title;
}

TEST(RulePack, OldDefinitionsWithoutAnOldKernel) {
  // No --from: pci_free_consistent() and PCI_DMA_TODEVICE come from the kernel's own last
  // pci-dma-compat.h (rules/pci-dma-compat.rule), as xtrx-dkms used them before 5.18.
  const fs::path root = fs::path(AD_FIXTURES) / "inline";
  auto tmp = util::TempDir::create(util::scratch_root(), "legacy-");
  ASSERT_TRUE(tmp.has_value());
  fs::create_directories(tmp->path() / "tree");
  ASSERT_TRUE(util::write_file(tmp->path() / "tree/x.c", "static void rel(struct xtrx_dev *d, struct buf *b, unsigned len)\n{\n"
                                                         "\tpci_free_consistent(d->pdev, len, b->virt, b->phys);\n"
                                                         "\tpci_unmap_single(d->pdev, b->phys, len, PCI_DMA_TODEVICE);\n}\n")
                  .has_value());
  TargetOnly port(root / "new", tmp->path() / "tree", tmp->path() / "s");
  auto& ctx = port.ctx;
  auto diag = [](core::DiagKind k, const std::string& sym) {
    core::Diagnostic d;
    d.kind = k;
    d.file = "x.c";
    d.line = 3;
    d.symbols = {sym};
    return d;
  };
  const std::vector<core::Diagnostic> ds = {diag(core::DiagKind::implicit_function_declaration, "pci_free_consistent"),
                                            diag(core::DiagKind::undeclared_identifier, "PCI_DMA_TODEVICE")};
  // inline-removed reads old kernels' headers only; rule-pack without rules has nothing.
  EXPECT_TRUE(propose::make_inline_removed()->propose(ds, ctx).empty());
  EXPECT_TRUE(propose::make_rule_pack()->propose(ds, ctx).empty());
  ctx.rules = &propose::shipped_rules();
  auto edits = propose::make_rule_pack()->propose(ds, ctx);
  // Each wrapper, and both together: one legacy header's compat layer went at once.
  ASSERT_EQ(edits.size(), 3u);
  for (const auto& e : edits) {
    EXPECT_EQ(e.proposer, "rule-pack");
    EXPECT_NE(e.description.find("Rule: rules/pci-dma-compat.rule (Linux 5.18; include/linux/pci-dma-compat.h"),
              std::string::npos)
        << e.description;
  }
  EXPECT_TRUE(edits[2].change_id.starts_with("inline-header:")) << edits[2].change_id;
  edits.pop_back();
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  for (const auto& e : edits) ASSERT_TRUE(propose::apply_edit(e, ctx.tree, ctx.scratch)) << e.title;
  auto after = util::read_file(ctx.tree / "x.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("dma_free_coherent(&d->pdev->dev, len, b->virt, b->phys);"), std::string::npos) << *after;
  EXPECT_NE(after->find("DMA_TO_DEVICE);"), std::string::npos) << *after;
  EXPECT_EQ(after->find("PCI_DMA_TODEVICE"), std::string::npos) << *after;
}

TEST(OpsSwap, FileOperationsTableBecomesProcOps) {
  // bbswitch-dkms before 5.6 passed a struct file_operations to proc_create(); 6.1's proc_ops
  // (its definition below is the kernel's) prefixes every member with proc_ and has no owner.
  auto tmp = util::TempDir::create(util::scratch_root(), "ops-swap-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path src = tmp->path() / "linux", tree = tmp->path() / "tree";
  fs::create_directories(src / "include/linux");
  fs::create_directories(tree);
  ASSERT_TRUE(util::write_file(src / "include/linux/proc_fs.h", R"(struct proc_ops {
	unsigned int proc_flags;
	int	(*proc_open)(struct inode *, struct file *);
	ssize_t	(*proc_read)(struct file *, char __user *, size_t, loff_t *);
	ssize_t (*proc_read_iter)(struct kiocb *, struct iov_iter *);
	ssize_t	(*proc_write)(struct file *, const char __user *, size_t, loff_t *);
	loff_t	(*proc_lseek)(struct file *, loff_t, int);
	int	(*proc_release)(struct inode *, struct file *);
	__poll_t (*proc_poll)(struct file *, struct poll_table_struct *);
	long	(*proc_ioctl)(struct file *, unsigned int, unsigned long);
	int	(*proc_mmap)(struct file *, struct vm_area_struct *);
} __randomize_layout;
)")
                  .has_value());
  ASSERT_TRUE(util::write_file(tree / "bbswitch.c", R"(static struct file_operations bbswitch_fops = {
    .owner  = THIS_MODULE,
    .open   = bbswitch_proc_open,
    .read   = seq_read,
    .llseek = seq_lseek,
    .release= single_release
};

static int __init bbswitch_init(void)
{
    acpi_entry = proc_create("bbswitch", 0664, acpi_root_dir, &bbswitch_fops);
    return 0;
}
)")
                  .has_value());
  TargetOnly port(src, tree, tmp->path() / "s");
  const auto& ctx = port.ctx;
  core::Diagnostic d;
  d.kind = core::DiagKind::incompatible_pointer_type;
  d.file = "bbswitch.c";
  d.line = 11;
  d.message = "passing argument 4 of 'proc_create' from incompatible pointer type";
  d.symbols = {"proc_create"};
  d.notes.push_back({"/usr/src/linux-headers-6.1.0-57-common/include/linux/proc_fs.h", 114, 122,
                     "expected 'const struct proc_ops *' but argument is of type 'struct file_operations *'"});
  auto edits = propose::make_ops_swap()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "bbswitch.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(after->starts_with(R"(static struct proc_ops bbswitch_fops = {
    .proc_open   = bbswitch_proc_open,
    .proc_read   = seq_read,
    .proc_lseek = seq_lseek,
    .proc_release= single_release
};
)")) << *after;
}

TEST(CTokens, CallInsideAnElseBranchClosesThere) {
  // falcosecurity-scap's main.c: the call sits in the #else branch of a version check.
  auto toks = csrc::tokenize("if (close_fd < 0 ||\n#if A\n    !FD_ISSET(close_fd, fdt->open_fds)\n#else\n"
                             "    !fd_is_open(close_fd, fdt)\n#endif\n    ) {\n\tdrop = true;\n}\n");
  auto calls = csrc::find_calls(toks, 0, toks.size() - 1);
  auto it = std::find_if(calls.begin(), calls.end(), [](const auto& c) { return c.callee == "fd_is_open"; });
  ASSERT_NE(it, calls.end());
  EXPECT_EQ(it->args, (std::vector<std::string>{"close_fd", "fdt"}));
  EXPECT_EQ(toks[it->close_tok].line, 5);
}

TEST(ApplyEdit, OldKernelBranchesKeepTheirOldApi) {
  // xtrx-dkms: one call to port, and the same call in the < 5.18 branch of a compat block, which
  // must stay as the maintainers wrote it (it is what old kernels build).
  const std::string text = "static void a(struct xtrx_dev *d)\n{\n"
                           "\tpci_free_consistent(d->pdev, d->len, d->virt, d->phys);\n}\n\n"
                           "static void b(struct xtrx_dev *d)\n{\n"
                           "#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 18, 0)\n"
                           "\tpci_free_consistent(d->pdev, d->len, d->virt, d->phys);\n"
                           "#else\n"
                           "\tdma_free_coherent(&d->pdev->dev, d->len, d->virt, d->phys);\n"
                           "#endif\n}\n";
  const long v61 = (6 << 16) + (1 << 8) + 192;
  auto dead = propose::version_dead_lines(text, v61);
  ASSERT_EQ(dead.size(), 13u);
  EXPECT_FALSE(dead[2]);
  EXPECT_TRUE(dead[8]);
  EXPECT_FALSE(dead[10]);
  EXPECT_FALSE(propose::version_dead_lines(text, (5 << 16) + (10 << 8))[8]);
  auto tmp = util::TempDir::create(util::scratch_root(), "dead-branch-");
  ASSERT_TRUE(tmp.has_value());
  ASSERT_TRUE(util::write_file(tmp->path() / "xtrx.c", text).has_value());
  propose::Edit e;
  e.call = propose::CallRewrite{"pci_free_consistent", 4, "dma_free_coherent", {"& $0 -> dev", "$1", "$2", "$3"}};
  auto r = propose::apply_edit(e, tmp->path(), tmp->path() / "s", {v61});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->changed_files, (std::vector<std::string>{"xtrx.c"}));
  auto after = util::read_file(tmp->path() / "xtrx.c");
  ASSERT_TRUE(after.has_value());
  std::string want = text;
  want.replace(want.find("pci_free_consistent(d->pdev,"), 28, "dma_free_coherent(& d->pdev -> dev,");
  EXPECT_EQ(*after, want);
}

TEST(StmtTemplate, EnclosingStatementStopsAtControlHeaders) {
  auto toks = csrc::tokenize("{ if (a) dev->features |= NETIF_F_LLTX; x = (int)y; }");
  std::size_t lltx = 0, y = 0;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].text == "NETIF_F_LLTX") lltx = i;
    if (toks[i].text == "y") y = i;
  }
  auto s = propose::enclosing_statements(toks, lltx, lltx, 1, toks.size() - 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(toks[s->first].text, "dev");
  EXPECT_EQ(toks[s->second].text, ";");
  s = propose::enclosing_statements(toks, y, y, 1, toks.size() - 1);
  ASSERT_TRUE(s);
  EXPECT_EQ(toks[s->first].text, "x"); // the cast's parentheses are skipped, not a boundary
}

namespace {
/// A scratch target kernel tree (`src`, with the given headers) and driver tree (`tree`, with the
/// given files) for one proposer test.
struct MiniPort {
  util::Expected<util::TempDir> tmp;
  fs::path src, tree;
  MiniPort(const char* prefix, const std::vector<std::pair<std::string, std::string>>& headers,
           const std::vector<std::pair<std::string, std::string>>& files)
      : tmp(util::TempDir::create(util::scratch_root(), prefix)) {
    src = tmp->path() / "src";
    tree = tmp->path() / "tree";
    fs::create_directories(src / "include/linux");
    fs::create_directories(tree);
    for (const auto& [rel, text] : headers) {
      fs::create_directories((src / rel).parent_path());
      EXPECT_TRUE(util::write_file(src / rel, text));
    }
    for (const auto& [rel, text] : files) EXPECT_TRUE(util::write_file(tree / rel, text));
  }
};
} // namespace

TEST(TargetApi, AliasOfAnOldKernelsNameIsRemoved) {
  // rtpengine-kernel-dkms maps the 2.6.35 name onto the old one for older kernels:
  // `#define xt_action_param xt_target_param`; on a kernel without xt_target_param gcc names the
  // old struct where the driver wrote the new one.
  MiniPort m("alias-",
             {{"include/linux/netfilter/x_tables.h", "struct xt_action_param {\n\tconst void *targinfo;\n\tint hotdrop;\n};\n"}},
             {{"xt_X.c", "#include <linux/netfilter/x_tables.h>\n"
                         "#define xt_action_param xt_target_param\n"
                         "#define my_flag other_flag\n"
                         "static unsigned int target(struct sk_buff *skb, const struct xt_action_param *par)\n"
                         "{\n\treturn par->targinfo ? 1 : 0;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  auto& tmp = m.tmp;
  const fs::path &src = m.src, &tree = m.tree;
  TargetOnly port(src, tree, tmp->path() / "s");
  core::Diagnostic d;
  d.kind = core::DiagKind::incomplete_type;
  d.file = "xt_X.c";
  d.line = 4;
  d.message = "invalid use of undefined type 'const struct xt_target_param'";
  d.symbols = {"struct xt_target_param"};
  auto edits = propose::make_target_api()->propose({d}, port.ctx);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "shim:xt_action_param"; });
  ASSERT_NE(it, edits.end());
  ASSERT_EQ(it->text_edits.size(), 1u);
  EXPECT_EQ(it->text_edits[0].line, 2);
  EXPECT_EQ(it->text_edits[0].remove, 1);
  EXPECT_EQ(it->text_edits[0].text, "");
  // gcc naming a name the driver does not alias, or an alias of a name the target lacks: nothing
  d.message = "invalid use of undefined type 'const struct other_flag'";
  d.symbols = {"struct other_flag"};
  edits = propose::make_target_api()->propose({d}, port.ctx);
  EXPECT_TRUE(std::none_of(edits.begin(), edits.end(), [](const auto& e) { return e.change_id.starts_with("shim:"); }));
}

// Two files carrying the same compat helper the target now defines: one change removes both (one
// alone leaves the other's "redefinition", and a change is tried once).
TEST(TargetApi, TheSameShimInTwoFilesGoesInOneChange) {
  const std::string helper = "static inline void xor_cpy(u8 *d, const u8 *a, unsigned int n)\n{\n\tmemcpy(d, a, n);\n}\n";
  MiniPort m("shim2-", {{"include/crypto/algapi.h", "static inline void xor_cpy(u8 *d, const u8 *a, unsigned int n) {}\n"}},
             {{"a.c", "#include <crypto/algapi.h>\n" + helper}, {"b.c", "#include <crypto/algapi.h>\nint x;\n" + helper}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  std::vector<core::Diagnostic> ds(2);
  for (int i = 0; i < 2; ++i) {
    ds[i].kind = core::DiagKind::other;
    ds[i].file = i ? "b.c" : "a.c";
    ds[i].line = i ? 3 : 2;
    ds[i].message = "redefinition of 'xor_cpy'";
    ds[i].symbols = {"xor_cpy"};
    core::DiagNote n;
    n.file = (m.src / "include/crypto/algapi.h").string();
    n.line = 1;
    n.message = "previous definition of 'xor_cpy' with type 'void(u8 *, const u8 *, unsigned int)'";
    ds[i].notes = {n};
  }
  auto edits = propose::make_target_api()->propose(ds, port.ctx);
  ASSERT_EQ(std::count_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "shim:xor_cpy"; }), 1);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "shim:xor_cpy"; });
  ASSERT_EQ(it->text_edits.size(), 2u);
  EXPECT_EQ(it->text_edits[0].file, "a.c");
  EXPECT_EQ(it->text_edits[0].line, 2);
  EXPECT_EQ(it->text_edits[0].remove, 4);
  EXPECT_EQ(it->text_edits[1].file, "b.c");
  EXPECT_EQ(it->text_edits[1].line, 3);
}

TEST(RulePack, InitCompletionBecomesReinitCompletion) {
  // A driver written before 3.13 resets a completion with INIT_COMPLETION (rules/completion-reinit.rule).
  auto tmp = util::TempDir::create(util::scratch_root(), "completion-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path src = tmp->path() / "linux", tree = tmp->path() / "tree";
  fs::create_directories(src / "include/linux");
  fs::create_directories(tree);
  ASSERT_TRUE(util::write_file(src / "include/linux/completion.h", "struct completion {\n\tunsigned int done;\n};\n"
                                                                   "static inline void reinit_completion(struct completion *x)\n"
                                                                   "{\n\tx->done = 0;\n}\n")
                  .has_value());
  ASSERT_TRUE(util::write_file(tree / "x.c", "struct x_dev {\n\tstruct completion done;\n};\n"
                                             "static void x_reset(struct x_dev *d)\n{\n\tINIT_COMPLETION(d->done);\n}\n")
                  .has_value());
  TargetOnly port(src, tree, tmp->path() / "s");
  auto& ctx = port.ctx;
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "x.c";
  d.line = 6;
  d.symbols = {"INIT_COMPLETION"};
  EXPECT_TRUE(propose::make_rule_pack()->propose({d}, ctx).empty());
  ctx.rules = &propose::shipped_rules();
  auto edits = propose::make_rule_pack()->propose({d}, ctx);
  ASSERT_FALSE(edits.empty());
  EXPECT_NE(edits[0].description.find("rules/completion-reinit.rule (Linux 3.13"), std::string::npos) << edits[0].description;
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(edits[0], ctx.tree, ctx.scratch)) << edits[0].title;
  auto after = util::read_file(tree / "x.c");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->find("\treinit_completion(&"), std::string::npos) << *after;
  EXPECT_EQ(after->find("INIT_COMPLETION"), std::string::npos) << *after;
}

TEST(RulePack, SetFsSaveSwitchRestoreLinesGo) {
  // lime-forensics' disk.c pattern; lines in a branch the target's version rules out stay.
  MiniPort m("removed-", {{"include/linux/fs.h", "ssize_t kernel_write(struct file *, const void *, size_t, loff_t *);\n"}}, {});
  ASSERT_TRUE(m.tmp.has_value());
  auto& tmp = m.tmp;
  const fs::path &src = m.src, &tree = m.tree;
  const std::string text = "int setup(char *path)\n{\n"
                           "    mm_segment_t fs;\n"                     // 3
                           "    fs = get_fs();\n"                       // 4
                           "    set_fs(KERNEL_DS);\n"                   // 5
                           "    f = filp_open(path, O_WRONLY, 0444);\n" // 6
                           "#if LINUX_VERSION_CODE < KERNEL_VERSION(2,6,8)\n"
                           "    set_fs(fs);\n" // 8: dead on the target
                           "#endif\n"
                           "    set_fs(fs);\n" // 10
                           "    return 0;\n}\n";
  ASSERT_TRUE(util::write_file(tree / "disk.c", text));
  TargetOnly port(src, tree, tmp->path() / "s");
  core::Kernel k;
  k.build_dir = tmp->path() / "build";
  fs::create_directories(k.build_dir / "include/generated/uapi/linux");
  ASSERT_TRUE(util::write_file(k.build_dir / "include/generated/uapi/linux/version.h", "#define LINUX_VERSION_CODE 393664\n"));
  port.ctx.to = &k;
  core::Diagnostic d;
  d.kind = core::DiagKind::unknown_type;
  d.file = "disk.c";
  d.line = 3;
  d.message = "unknown type name 'mm_segment_t'";
  d.symbols = {"mm_segment_t"};
  port.ctx.rules = &propose::shipped_rules();
  auto edits = propose::make_rule_pack()->propose({d}, port.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].evidence, std::vector<std::string>{"rules/set-fs-removal.rule"});
  std::vector<int> lines;
  for (const auto& t : edits[0].text_edits) lines.push_back(t.line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<int>{3, 4, 5, 10}));
  EXPECT_NE(std::find(edits[0].symbols.begin(), edits[0].symbols.end(), "set_fs"), edits[0].symbols.end());
  // nothing for a diagnostic about something else
  d.message = "unknown type name 'foo_t'";
  d.symbols = {"foo_t"};
  d.line = 6;
  EXPECT_TRUE(propose::make_rule_pack()->propose({d}, port.ctx).empty());
}

TEST(TargetApi, FunctionPointerDeclarationAndDefinitionAreSynced) {
  // nat-rtsp-dkms: the header's `extern` hook gained `unsigned int protoff` (3.7), the .c
  // definition did not. Both directions are proposed, each copying the other's text.
  MiniPort m("fpsync-", {},
             {{"hook.h", "extern unsigned int (*nat_hook)(struct sk_buff *skb,\n"
                         "#if LINUX_VERSION_CODE >= KERNEL_VERSION(3,7,0)\n"
                         "\t\tunsigned int protoff,\n"
                         "#endif\n"
                         "\t\tunsigned int matchoff);\n"},
              {"hook.c", "#include \"hook.h\"\n"
                         "unsigned int (*nat_hook)(struct sk_buff *skb,\n"
                         "\t\tunsigned int matchoff);\n"
                         "EXPORT_SYMBOL_GPL(nat_hook);\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  auto& tmp = m.tmp;
  const fs::path &src = m.src, &tree = m.tree;
  TargetOnly port(src, tree, tmp->path() / "s");
  core::Diagnostic d;
  d.kind = core::DiagKind::conflicting_types;
  d.file = "hook.c";
  d.line = 2;
  d.message = "conflicting types for 'nat_hook'; have 'unsigned int (*)(struct sk_buff *, unsigned int)'";
  d.symbols = {"nat_hook"};
  d.notes.push_back(
      {"hook.h", 1, 28,
       "previous declaration of 'nat_hook' with type 'unsigned int (*)(struct sk_buff *, unsigned int,  unsigned int)'"});
  auto edits = propose::make_target_api()->propose({d}, port.ctx);
  std::vector<const propose::Edit*> sync;
  for (const auto& e : edits)
    if (e.change_id == "proto:nat_hook") sync.push_back(&e);
  ASSERT_EQ(sync.size(), 2u);
  ASSERT_EQ(sync[0]->text_edits.size(), 1u);
  EXPECT_EQ(sync[0]->text_edits[0].file, "hook.c");
  EXPECT_EQ(sync[0]->text_edits[0].line, 2);
  EXPECT_EQ(sync[0]->text_edits[0].remove, 2);
  EXPECT_EQ(sync[0]->text_edits[0].text,
            "unsigned int (*nat_hook)(struct sk_buff *skb,\n#if LINUX_VERSION_CODE >= KERNEL_VERSION(3,7,0)\n"
            "\t\tunsigned int protoff,\n#endif\n\t\tunsigned int matchoff);\n");
  ASSERT_EQ(sync[1]->text_edits.size(), 1u);
  EXPECT_EQ(sync[1]->text_edits[0].file, "hook.h");
  EXPECT_EQ(sync[1]->text_edits[0].remove, 5);
  EXPECT_EQ(sync[1]->text_edits[0].text, "extern unsigned int (*nat_hook)(struct sk_buff *skb,\n\t\tunsigned int matchoff);\n");
  EXPECT_GT(sync[1]->rank, sync[0]->rank);
}

TEST(TargetApi, PrototypeAndDefinitionSyncedFromTheSourceWhenGccDoesNotPrintTheType) {
  // gcc 10 (the 5.10 line's compiler) says only "conflicting types for 'f'": the definition's
  // signature is read from its line. The prototype follows the definition (rank 1), or the
  // definition's return type follows the prototype (rank 2); the build tells which.
  MiniPort m("protosync-", {},
             {{"drv.h", "struct vm_fault;\nint drv_fault(struct vm_fault *vmf);\n"},
              {"drv.c", "#include \"drv.h\"\n"
                        "#if KERNEL_VERSION(4, 17, 0) <= LINUX_VERSION_CODE\n"
                        "static inline vm_fault_t drv_fault(struct vm_fault *vmf)\n"
                        "{\n"
                        "#else\n"
                        "int drv_fault(struct vm_fault *vmf)\n"
                        "{\n"
                        "#endif\n"
                        "\treturn 0;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  core::Diagnostic d;
  d.kind = core::DiagKind::conflicting_types;
  d.file = "drv.c";
  d.line = 3;
  d.message = "conflicting types for 'drv_fault'";
  d.symbols = {"drv_fault"};
  d.notes.push_back({"drv.h", 2, 5, "previous declaration of 'drv_fault' was here"});
  auto edits = propose::make_target_api()->propose({d}, port.ctx);
  std::vector<const propose::Edit*> sync;
  for (const auto& e : edits)
    if (e.change_id == "proto:drv_fault") sync.push_back(&e);
  std::sort(sync.begin(), sync.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  ASSERT_EQ(sync.size(), 2u);
  ASSERT_EQ(sync[0]->text_edits.size(), 1u);
  EXPECT_EQ(sync[0]->text_edits[0].file, "drv.h");
  EXPECT_EQ(sync[0]->text_edits[0].line, 2);
  EXPECT_EQ(sync[0]->text_edits[0].text, "vm_fault_t drv_fault(struct vm_fault *vmf);\n");
  ASSERT_EQ(sync[1]->text_edits.size(), 1u);
  EXPECT_EQ(sync[1]->text_edits[0].file, "drv.c");
  EXPECT_EQ(sync[1]->text_edits[0].line, 3);
  EXPECT_EQ(sync[1]->text_edits[0].remove, 1);
  EXPECT_EQ(sync[1]->text_edits[0].text, "static inline int drv_fault(struct vm_fault *vmf)\n");
}

namespace {
core::Diagnostic diag_at(core::DiagKind kind, const char* file, int line, std::vector<std::string> symbols) {
  core::Diagnostic d;
  d.kind = kind;
  d.file = file;
  d.line = line;
  d.symbols = std::move(symbols);
  return d;
}
bool has_change(const std::vector<propose::Edit>& edits, const std::string& id) {
  return std::any_of(edits.begin(), edits.end(), [&](const auto& e) { return e.change_id == id; });
}
} // namespace

TEST(TargetApi, TypeDefinitionsTheKernelNowHasGo) {
  // 7.x moved drivers/char/tpm/tpm.h's TPM 1.2 types into <linux/tpm_command.h>: a driver's own
  // copy of the private header now redefines them. Its struct, its enum and its typedef'd union
  // go (whole statements); a struct that also defines a variable stays.
  MiniPort m("typeshim-", {{"include/linux/tpm_command.h", "struct timeout_t { int a; };\n"}},
             {{"tpm.h", "#include <linux/tpm_command.h>\n"
                        "struct timeout_t {\n\tint a;\n};\n"
                        "enum tpm_cap {\n\tTPM_CAP_FLAG = 4,\n\tTPM_CAP_PROP = 5,\n};\n"
                        "typedef union {\n\tstruct timeout_t t;\n} cap_t;\n"
                        "struct used_t {\n\tint b;\n} used_var;\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto diag = [&](int line, const std::string& msg) {
    auto quote = msg.find('\'');
    auto d = diag_at(core::DiagKind::other, "tpm.h", line, {msg.substr(quote + 1, msg.find('\'', quote + 1) - quote - 1)});
    d.message = msg;
    core::DiagNote n;
    n.file = (m.src / "include/linux/tpm_command.h").string();
    n.line = 1;
    n.message = "originally defined here";
    d.notes.push_back(n);
    return d;
  };
  auto edits = propose::make_target_api()->propose(
      {diag(2, "redefinition of 'struct timeout_t'"), diag(6, "redeclaration of enumerator 'TPM_CAP_FLAG'"),
       diag(7, "redeclaration of enumerator 'TPM_CAP_PROP'"), diag(11, "conflicting types for 'cap_t'; have 'union <anonymous>'"),
       diag(12, "redefinition of 'struct used_t'")},
      port.ctx);
  auto span = [&](const std::string& id) -> std::pair<int, int> {
    auto it = std::find_if(edits.begin(), edits.end(), [&](const auto& e) { return e.change_id == id; });
    if (it == edits.end() || it->text_edits.size() != 1) return {0, 0};
    return {it->text_edits[0].line, it->text_edits[0].remove};
  };
  EXPECT_EQ(span("shim:struct timeout_t"), std::make_pair(2, 3));
  EXPECT_EQ(span("shim:enum at tpm.h:5"), std::make_pair(5, 4)); // once for both enumerators
  EXPECT_EQ(span("shim:cap_t"), std::make_pair(9, 3));
  EXPECT_EQ(span("shim:struct used_t"), std::make_pair(0, 0));
  EXPECT_EQ(std::count_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id.starts_with("shim:enum"); }), 1);
  // Without a kernel note (the earlier definition is the driver's own): nothing.
  auto d = diag(2, "redefinition of 'struct timeout_t'");
  d.notes[0].file = "tpm_other.h";
  edits = propose::make_target_api()->propose({d}, port.ctx);
  EXPECT_TRUE(std::none_of(edits.begin(), edits.end(), [](const auto& e) { return e.change_id.starts_with("shim:struct"); }));
}

TEST(TargetApi, NameTheDriverDeclaresIsNeverRenamed) {
  // `static DEFINE_SEMAPHORE(pr_sem);` fails on a target whose macro takes two arguments; gcc
  // then calls pr_sem undeclared, which is not a reason to use the kernel's pr_sem_lock instead.
  MiniPort m("declares-",
             {{"include/linux/sem.h", "#define pr_sem_lock (global_lock)\n"}, {"drivers/a.c", "int y = pr_sem_lock;\n"}},
             {{"d.c", "static DEFINE_SEMAPHORE(pr_sem);\nstatic void f(void)\n{\n\tdown(&pr_sem);\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto d = diag_at(core::DiagKind::undeclared_identifier, "d.c", 4, {"pr_sem"});
  EXPECT_FALSE(has_change(propose::make_target_api()->propose({d}, port.ctx), "ident:pr_sem"));
  // The same use without the driver's declaration is a vanished kernel name: renamed.
  ASSERT_TRUE(util::write_file(m.tree / "d.c", "static void f(void)\n{\n\tdown(&pr_sem);\n}\n"));
  d.line = 3;
  EXPECT_TRUE(has_change(propose::make_target_api()->propose({d}, port.ctx), "ident:pr_sem"));
}

// The driver's own alias says what an old name means (`#define pci_cfg_access_lock
// pci_block_user_cfg_access`): a similar target name of the opposite meaning is never its successor.
TEST(TargetApi, ASuccessorTheDriversAliasContradictsIsNotOffered) {
  MiniPort m("alias-",
             {{"include/linux/pci.h", "void pci_cfg_access_lock(struct pci_dev *dev);\n"
                                      "void pci_cfg_access_unlock(struct pci_dev *dev);\n"},
              {"drivers/a.c", "void a(struct pci_dev *d)\n{\n\tpci_cfg_access_lock(d);\n\tpci_cfg_access_unlock(d);\n}\n"}},
             {{"d.c", "#define pci_cfg_access_lock pci_block_user_cfg_access\n"
                      "void f(struct pci_dev *p)\n{\n\tpci_block_user_cfg_access(p);\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto d = diag_at(core::DiagKind::implicit_function_declaration, "d.c", 4, {"pci_block_user_cfg_access"});
  auto renamed_to = [&](const std::string& to) {
    for (const auto& e : propose::make_target_api()->propose({d}, port.ctx))
      for (const auto& [from, n] : e.renames)
        if (from == "pci_block_user_cfg_access" && n == to) return true;
    return false;
  };
  EXPECT_FALSE(renamed_to("pci_cfg_access_unlock"));
  // Without the alias nothing says which one it was: the spelling offers both.
  ASSERT_TRUE(util::write_file(m.tree / "d.c", "void f(struct pci_dev *p)\n{\n\tpci_block_user_cfg_access(p);\n}\n"));
  d.line = 3;
  EXPECT_TRUE(renamed_to("pci_cfg_access_unlock"));
}

TEST(TargetApi, DocumentationNamesTheReplacementOfAnOldInterface) {
  // The shape of Documentation/core-api/timekeeping.rst's "Deprecated time interfaces".
  const std::string doc = "Deprecated time interfaces\n--------------------------\n\n"
                          "Older kernels used some other interfaces:\n\n"
                          ".. c:function:: void do_gettimeofday( struct timeval * )\n"
                          "\t\tvoid getnstimeofday64( struct timespec64 * )\n\n"
                          "\tktime_get_real_ts64() is a direct replacement, but consider using\n"
                          "\tmonotonic time (ktime_get_ts64()) and/or a ktime_t based interface\n"
                          "\t(ktime_get()/ktime_get_real()).\n\n"
                          ".. c:function:: struct timespec64 getrawmonotonic64( void )\n"
                          "\t\tstruct timespec64 get_monotonic_boottime64( void )\n\n"
                          "\tThese are replaced by ktime_get_raw()/ktime_get_raw_ts64(),\n"
                          "\tas well as ktime_get_boottime()/ktime_get_boottime_ts64().\n\n"
                          "Another paragraph names old_thing() without saying what replaced it.\n";
  MiniPort m("docrep-",
             {{"Documentation/core-api/timekeeping.rst", doc},
              {"include/linux/timekeeping.h",
               "void ktime_get_real_ts64(struct timespec64 *ts);\nvoid ktime_get_ts64(struct timespec64 *ts);\n"
               "ktime_t ktime_get(void);\nktime_t ktime_get_real(void);\nktime_t ktime_get_raw(void);\n"
               "void ktime_get_raw_ts64(struct timespec64 *ts);\nktime_t ktime_get_boottime(void);\n"
               "void ktime_get_boottime_ts64(struct timespec64 *ts);\n"
               "int do_settimeofday64(const struct timespec64 *ts);\n"},
              {"drivers/a.c", "void a(void)\n{\n\tstruct timespec64 t;\n\tktime_get_real_ts64(&t);\n\tktime_get_ts64(&t);\n"
                              "\tktime_get_raw_ts64(&t);\n\tktime_get_boottime_ts64(&t);\n\tdo_settimeofday64(&t);\n}\n"}},
             {{"d.c", "void f(void)\n{\n\tstruct timespec64 t;\n\tgetnstimeofday64(&t);\n"
                      "\tget_monotonic_boottime64(&t);\n\told_thing();\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto first_rename = [&](int line, const std::string& name) {
    auto edits = propose::make_target_api()->propose(
        {diag_at(core::DiagKind::implicit_function_declaration, "d.c", line, {name})}, port.ctx);
    std::vector<propose::Edit> mine;
    for (const auto& e : edits)
      if (e.change_id == "ident:" + name && e.renames.size() == 1) mine.push_back(e);
    std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
    return mine;
  };
  // The direct replacement the text names first, not a name spelled alike (a setter for a getter).
  auto get = first_rename(4, "getnstimeofday64");
  ASSERT_FALSE(get.empty());
  EXPECT_EQ(get[0].renames[0].second, "ktime_get_real_ts64");
  EXPECT_EQ(get[0].evidence, std::vector<std::string>{"Documentation/core-api/timekeeping.rst:7"});
  for (const auto& e : get) EXPECT_NE(e.renames[0].second, "do_settimeofday64");
  for (const auto& e : get) EXPECT_NE(e.renames[0].second, "ktime_get"); // takes no argument
  // Among the replacements one paragraph lists, the one whose own word the old name holds.
  auto boot = first_rename(5, "get_monotonic_boottime64");
  ASSERT_FALSE(boot.empty());
  EXPECT_EQ(boot[0].renames[0].second, "ktime_get_boottime_ts64");
  // A paragraph that names a function without speaking of a replacement is no evidence.
  propose::TargetIndex idx(m.src, m.src);
  EXPECT_FALSE(idx.documented_replacement("old_thing").has_value());
}

TEST(TargetApi, PortingNotesSayWhatBecameOfAName) {
  const std::string notes = "**mandatory**\n\n"
                            "iov_iter_copy_from_user_atomic() is gone; use copy_page_from_iter_atomic().\n"
                            "The difference is that it advances the iterator.\n\n---\n\n**mandatory**\n\n"
                            "no_llseek is gone; don't set .llseek to that - just leave it NULL instead.\n"
                            "Checks for ESPIPE should look at FMODE_LSEEK.\n\n"
                            "->readdir() is gone now; switch to ->iterate_shared()\n";
  MiniPort m("notes-",
             {{"Documentation/filesystems/porting.rst", notes},
              {"include/linux/fs.h", "loff_t noop_llseek(struct file *, loff_t, int);\n"
                                     "size_t copy_page_from_iter_atomic(struct page *, size_t, size_t, struct iov_iter *);\n"},
              {"drivers/a.c", "static const struct file_operations f = { .llseek = noop_llseek, };\n"}},
             {{"d.c", "static const struct file_operations a = {\n"
                      "\t.owner = THIS_MODULE,\n"
                      "\t.llseek = no_llseek\n"
                      "};\n"
                      "static const struct file_operations b = { .owner = THIS_MODULE, .llseek = no_llseek };\n"
                      "static size_t c(struct page *p, struct iov_iter *i)\n{\n"
                      "\treturn iov_iter_copy_from_user_atomic(p, i, 0, 1);\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits = propose::make_target_api()->propose(
      {diag_at(core::DiagKind::undeclared_identifier, "d.c", 3, {"no_llseek"}),
       diag_at(core::DiagKind::implicit_function_declaration, "d.c", 8, {"iov_iter_copy_from_user_atomic"})},
      port.ctx);
  std::vector<propose::Edit> llseek, iov;
  for (const auto& e : edits) {
    if (e.change_id == "ident:no_llseek") llseek.push_back(e);
    if (e.change_id == "ident:iov_iter_copy_from_user_atomic") iov.push_back(e);
  }
  // The note, not the similar noop_llseek: the table entries go, the rest of the lines stays.
  ASSERT_EQ(llseek.size(), 1u);
  ASSERT_EQ(llseek[0].text_edits.size(), 2u);
  EXPECT_EQ(llseek[0].text_edits[0].line, 3);
  EXPECT_EQ(llseek[0].text_edits[0].text, "");
  EXPECT_EQ(llseek[0].text_edits[1].line, 5);
  EXPECT_EQ(llseek[0].text_edits[1].text, "static const struct file_operations b = { .owner = THIS_MODULE };\n");
  EXPECT_EQ(llseek[0].evidence, std::vector<std::string>{"Documentation/filesystems/porting.rst:10"});
  ASSERT_EQ(iov.size(), 1u);
  ASSERT_EQ(iov[0].renames.size(), 1u);
  EXPECT_EQ(iov[0].renames[0].second, "copy_page_from_iter_atomic");
  // An ops member's note ("->readdir() is gone") is no name of its own.
  propose::TargetIndex idx(m.src, m.src);
  EXPECT_EQ(idx.porting_notes().count("readdir"), 0u);
  EXPECT_EQ(idx.porting_notes().size(), 2u);
  // A use that is no table entry or flag term is not half dropped: no edit.
  ASSERT_TRUE(util::write_file(m.tree / "d.c", "static int z(struct file *f)\n{\n\treturn f->f_op->llseek == no_llseek;\n}\n"));
  edits =
      propose::make_target_api()->propose({diag_at(core::DiagKind::undeclared_identifier, "d.c", 3, {"no_llseek"})}, port.ctx);
  EXPECT_FALSE(has_change(edits, "ident:no_llseek"));
}

TEST(TargetApi, MemberGoneBehindAccessorsIsAccessedThroughThem) {
  // 6.6-6.7's inode timestamps and 6.3's read-only vm_flags, as the target declares them.
  MiniPort m("accessors-",
             {{"include/linux/fs.h",
               "struct inode {\n\tlong i_mtime_sec;\n\tlong i_mtime_nsec;\n};\n"
               "static inline struct timespec64 inode_get_mtime(const struct inode *inode)\n{\n}\n"
               "static inline time64_t inode_get_mtime_sec(const struct inode *inode)\n{\n}\n"
               "static inline struct timespec64 inode_set_mtime_to_ts(struct inode *inode,\n"
               "\t\t\t\t\t\t      struct timespec64 ts)\n{\n}\n"
               "static inline struct timespec64 inode_set_mtime(struct inode *inode, time64_t sec, long nsec)\n{\n}\n"},
              {"include/linux/mm.h",
               "struct vm_area_struct {\n\tconst vm_flags_t vm_flags;\n};\n"
               "static inline void vm_flags_init(struct vm_area_struct *vma, vm_flags_t flags)\n{\n}\n"
               "static inline void vm_flags_reset(struct vm_area_struct *vma, vm_flags_t flags)\n{\n}\n"
               "static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)\n{\n}\n"
               "static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)\n{\n}\n"
               "static inline void vm_flags_mod(struct vm_area_struct *vma, vm_flags_t set, vm_flags_t clear)\n{\n}\n"}},
             {{"d.c", "static void t(struct inode *inode, struct vm_area_struct *vma)\n{\n"
                      "\tinode->i_mtime = current_time(inode);\n\tvma->vm_flags |= VM_IO;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits = propose::make_target_api()->propose({diag_at(core::DiagKind::no_member, "d.c", 3, {"struct inode", "i_mtime"}),
                                                    diag_at(core::DiagKind::read_only_member, "d.c", 4, {"vm_flags"})},
                                                   port.ctx);
  auto find = [&](const std::string& id) {
    auto it = std::find_if(edits.begin(), edits.end(), [&](const auto& e) { return e.change_id == id && e.rank == 1; });
    return it == edits.end() ? std::string() : it->smpl;
  };
  std::string inode = find("member:struct inode.i_mtime");
  EXPECT_NE(inode.find("- p->i_mtime = E\n+ inode_set_mtime_to_ts(p, E)\n"), std::string::npos) << inode;
  EXPECT_NE(inode.find("- p->i_mtime\n+ inode_get_mtime(p)\n"), std::string::npos) << inode;
  EXPECT_NE(inode.find("- s.i_mtime = E\n+ inode_set_mtime_to_ts(&s, E)\n"), std::string::npos) << inode;
  EXPECT_EQ(inode.find("inode_get_mtime_sec"), std::string::npos);
  // A bit mask (set and clear both exist): set ORs bits in, clear takes them out, = resets;
  // reads of a read-only member stay.
  std::string vma = find("member:struct vm_area_struct.vm_flags");
  EXPECT_NE(vma.find("- p->vm_flags |= E\n+ vm_flags_set(p, E)\n"), std::string::npos) << vma;
  EXPECT_NE(vma.find("- p->vm_flags &= ~E\n+ vm_flags_clear(p, E)\n"), std::string::npos) << vma;
  EXPECT_NE(vma.find("- p->vm_flags = E\n+ vm_flags_reset(p, E)\n"), std::string::npos) << vma;
  EXPECT_EQ(vma.find("- p->vm_flags\n+"), std::string::npos) << vma;
}

TEST(TargetApi, MemberMovedIntoAPointedToStruct) {
  // 6.11 moved net_device.wol_enabled into the struct net_device.ethtool points to; phy_device
  // has one too, but the target's own drivers write ->ethtool->wol_enabled.
  MiniPort m("moved-",
             {{"include/linux/netdevice.h", "struct net_device {\n\tint mtu;\n\tstruct ethtool_netdev_state *ethtool;\n"
                                            "\tstruct phy_device *phydev;\n};\n"},
              {"include/linux/ethtool.h", "struct ethtool_netdev_state {\n\tunsigned wol_enabled:1;\n};\n"},
              {"include/linux/phy.h", "struct phy_device {\n\tunsigned wol_enabled:1;\n};\n"},
              {"drivers/a.c", "void a(struct net_device *d) { d->ethtool->wol_enabled = 1; }\n"},
              {"drivers/b.c", "void b(struct net_device *d) { d->ethtool->wol_enabled = 0; }\n"},
              {"drivers/c.c", "void c(struct phy_device *p, struct net_device *d) { d->phydev->wol_enabled = 1; }\n"}},
             {{"d.c", "static void f(struct net_device *dev)\n{\n\tdev->wol_enabled = 1;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits = propose::make_target_api()->propose(
      {diag_at(core::DiagKind::no_member, "d.c", 3, {"struct net_device", "wol_enabled"})}, port.ctx);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.rank == 1; });
  ASSERT_NE(it, edits.end());
  EXPECT_NE(it->smpl.find("- p->wol_enabled\n+ p->ethtool->wol_enabled\n"), std::string::npos) << it->smpl;
  // As often under one member as under the other: no guess.
  ASSERT_TRUE(util::write_file(m.src / "drivers/b.c", "void b(struct net_device *d) { d->phydev->wol_enabled = 0; }\n"));
  ASSERT_TRUE(util::write_file(m.src / "drivers/c.c", "int c;\n"));
  edits = propose::make_target_api()->propose(
      {diag_at(core::DiagKind::no_member, "d.c", 3, {"struct net_device", "wol_enabled"})}, port.ctx);
  EXPECT_TRUE(
      std::none_of(edits.begin(), edits.end(), [](const auto& e) { return e.title.find("moved to") != std::string::npos; }));
}

TEST(TargetApi, MemberMovedIntoAnEmbeddedStructDroppingAPrefixWord) {
  // 6.7: cpuinfo_x86.cpu_core_id -> cpuinfo_x86.topo.core_id; uses spatch cannot type
  // (`cpu_data(cpu).cpu_core_id`, a per-cpu macro) are matched by the untyped rule.
  MiniPort m("embedded-",
             {{"arch/x86/include/asm/processor.h", "struct cpuinfo_topology {\n\tu32 core_id;\n};\n"
                                                   "struct cpuinfo_x86 {\n\t__u8 x86;\n\tstruct cpuinfo_topology topo;\n};\n"}},
             {{"d.c", "static int f(int cpu)\n{\n\treturn cpu_data(cpu).cpu_core_id;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits = propose::make_target_api()->propose(
      {diag_at(core::DiagKind::no_member, "d.c", 3, {"struct cpuinfo_x86", "cpu_core_id"})}, port.ctx);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.title.find("moved to") != std::string::npos; });
  ASSERT_NE(it, edits.end());
  EXPECT_EQ(it->title, "struct cpuinfo_x86.cpu_core_id moved to .topo.core_id");
  // The typed rewrite alone first: an untyped `E.m` would also take `x.topo.core_id`'s inner
  // path and every other struct's member of that name.
  EXPECT_EQ(it->smpl.find("expression E"), std::string::npos) << it->smpl;
  auto untyped =
      std::find_if(edits.begin(), edits.end(), [&](const auto& e) { return e.change_id == it->change_id && e.rank > it->rank; });
  ASSERT_NE(untyped, edits.end());
  EXPECT_NE(untyped->smpl.find("- E.cpu_core_id\n+ E.topo.core_id\n"), std::string::npos) << untyped->smpl;
}

TEST(CTokens, TypeKeyOrdersIntegerKeywords) {
  // gcc prints `unsigned long` as `long unsigned int`; the source says what its author wrote.
  EXPECT_EQ(csrc::type_key("long unsigned int"), csrc::type_key("unsigned long"));
  EXPECT_EQ(csrc::type_key("unsigned"), csrc::type_key("unsigned int"));
  EXPECT_EQ(csrc::type_key("long long int *"), csrc::type_key("long long *"));
  EXPECT_EQ(csrc::type_key("const char *"), csrc::type_key("char *"));
  EXPECT_NE(csrc::type_key("unsigned long"), csrc::type_key("long"));
  EXPECT_NE(csrc::type_key("unsigned long"), csrc::type_key("unsigned long long"));
  EXPECT_NE(csrc::type_key("short"), csrc::type_key("int"));
  EXPECT_EQ(csrc::type_key("struct dm_io_region *"), "structdm_io_region*");
}

TEST(CallbackSignature, AddedParameterKeepsTheDriversSpellingAndItsDirectCallsPassZero) {
  // 7.x's io_notify_fn gained `unsigned long unsup` before the context (dm-io); gcc names the
  // types `long unsigned int`.
  std::vector<propose::Param> old = {{"unsigned long", "error"}, {"void *", "context"}};
  auto none = [](const std::string&) { return std::vector<propose::Param>{}; };
  std::vector<std::string> to = {"long unsigned int", "long unsigned int", "void *"};
  auto plan = propose::plan_param_reshape(old, to, {"error", "unsup", "context"}, none);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->params, (std::vector<std::string>{"unsigned long error", "long unsigned int unsup", "void *context"}));
  const std::string text = "static void endio(unsigned long error, long unsigned int unsup, void *context)\n{\n"
                           "\tcomplete(context);\n}\n\nstatic void go(struct wb *wb)\n{\n"
                           "\tif (submit(wb, endio))\n\t\tendio(1, wb);\n\tendio(f(a, b),\n\t      wb);\n}\n";
  auto out = propose::pass_added_arguments(text, "endio", {0, 2}, to);
  ASSERT_TRUE(out);
  EXPECT_NE(out->find("\t\tendio(1, 0, wb);"), std::string::npos) << *out;
  EXPECT_NE(out->find("\tendio(f(a, b), 0,\n\t      wb);"), std::string::npos) << *out;
  EXPECT_NE(out->find("submit(wb, endio)"), std::string::npos) << "a reference is not a call";
  EXPECT_NE(out->find("static void endio(unsigned long error, long unsigned int unsup, void *context)"), std::string::npos)
      << "the definition is not a call";
  // A pointer gets NULL, first position included; a struct by value has no neutral value.
  out = propose::pass_added_arguments("void g(void)\n{\n\th(3);\n}\n", "h", {1}, {"struct device *", "int"});
  ASSERT_TRUE(out);
  EXPECT_NE(out->find("h(NULL, 3);"), std::string::npos) << *out;
  EXPECT_FALSE(propose::pass_added_arguments("void g(void)\n{\n\th(3);\n}\n", "h", {1}, {"struct range", "int"}));
  // A call with another arity than the old one: no plan for it.
  EXPECT_FALSE(propose::pass_added_arguments("void g(void)\n{\n\th(3, 4);\n}\n", "h", {1}, {"int *", "int"}));
}

TEST(LearnedRewrite, AnAddedLiteralIsNotACopyOfAnEqualOldArgument) {
  // 7.x's dm_io() gained `unsigned long *sync_unsup_bits` after `sync_error_bits`; the kernel's
  // callers pass NULL for both. The new NULL is a literal, not a copy of the old fourth argument.
  auto tmp = util::TempDir::create(util::scratch_root(), "literal-arg-");
  ASSERT_TRUE(tmp.has_value());
  auto kernels = three_drivers_changed(
      tmp->path(), "drivers/md",
      [](const std::string& f) {
        return fmt::format("static int {0}_read(struct {0} *x)\n{{\n\treturn dm_io(&x->req, 1, &x->loc, NULL, "
                           "IOPRIO_DEFAULT);\n}}\n",
                           f);
      },
      "NULL,", "NULL, NULL,");
  ASSERT_TRUE(kernels.has_value());
  propose::PortContext& ctx = *kernels;
  core::Diagnostic d;
  d.kind = core::DiagKind::too_few_arguments;
  d.file = "target.c";
  d.line = 35;
  d.message = "too few arguments to function 'dm_io'";
  d.symbols = {"dm_io"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "call:dm_io");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->call.has_value());
  EXPECT_EQ(e->call->args, (std::vector<std::string>{"$0", "$1", "$2", "$3", "NULL", "$4"}));
}

TEST(TargetApi, NamespaceImportFromEitherModpostWording) {
  // modpost up to 6.12 and since 6.13 word the refusal differently; both import the namespace,
  // written as the target's own modules write MODULE_IMPORT_NS (a string literal since 6.13).
  auto tmp = util::TempDir::create(util::scratch_root(), "import-ns-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path src = tmp->path() / "linux", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(src / "include/linux/module.h", "#define MODULE_IMPORT_NS(ns) MODULE_INFO(import_ns, ns)\n"));
  ASSERT_TRUE(put(src / "drivers/iio/a.c", "MODULE_LICENSE(\"GPL\");\nMODULE_IMPORT_NS(\"IIO\");\n"));
  ASSERT_TRUE(put(src / "drivers/iio/b.c", "MODULE_LICENSE(\"GPL\");\nMODULE_IMPORT_NS(\"IIO_BACKEND\");\n"));
  ASSERT_TRUE(put(tree / "iio_hwmon.c", "static int x;\nMODULE_LICENSE(\"GPL\");\n"));
  TargetOnly port(src, tree, tmp->path() / "s");
  for (const std::string msg :
       {"iio_hwmon.ko: module uses symbol 'iio_get_channel_type' from namespace 'IIO_CONSUMER', but does not import it.",
        "module iio_hwmon uses symbol iio_get_channel_type from namespace IIO_CONSUMER, but does not import it."}) {
    core::Diagnostic d;
    d.tool = "modpost";
    d.kind = core::DiagKind::modpost_other;
    d.message = msg;
    auto edits = propose::make_target_api()->propose({d}, port.ctx);
    const auto* e = find_edit(edits, "import-ns:IIO_CONSUMER");
    if (!e)
      for (const auto& x : edits)
        if (x.change_id == "import-ns:IIO_CONSUMER") e = &x;
    ASSERT_NE(e, nullptr) << msg;
    ASSERT_EQ(e->text_edits.size(), 1u);
    EXPECT_EQ(e->text_edits[0].file, "iio_hwmon.c");
    EXPECT_EQ(e->text_edits[0].line, 3);
    EXPECT_EQ(e->text_edits[0].text, "MODULE_IMPORT_NS(\"IIO_CONSUMER\");\n");
  }
}

TEST(LearnedRewrite, FileScopeMacroTakesAStringLiteral) {
  // 6.13 made MODULE_IMPORT_NS() take a string; the kernel's own modules changed at file scope,
  // and gcc's message names only the namespace ('PMBUS' undeclared), the macro in a note.
  auto tmp = util::TempDir::create(util::scratch_root(), "stringified-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new";
  for (const char* f : {"a", "b", "c"}) {
    std::string ns = std::string(f) == "a" ? "I2C_X" : std::string(f) == "b" ? "SPI_Y" : "HWMON_Z";
    std::string t = fmt::format("static int {0}_probe(void)\n{{\n\treturn 0;\n}}\nMODULE_LICENSE(\"GPL\");\n"
                                "MODULE_IMPORT_NS({1});\n",
                                f, ns);
    ASSERT_TRUE(put(old_src / "drivers/hwmon" / (std::string(f) + ".c"), t));
    t.replace(t.find("NS(") + 3, ns.size(), "\"" + ns + "\"");
    ASSERT_TRUE(put(new_src / "drivers/hwmon" / (std::string(f) + ".c"), t));
  }
  propose::PortContext ctx;
  ctx.old_src = old_src;
  ctx.new_src = new_src;
  ctx.tree = tmp->path() / "tree";
  ctx.original_tree = ctx.tree;
  ctx.scratch = tmp->path() / "s";
  ASSERT_TRUE(put(ctx.tree / "pmbus.c", "MODULE_LICENSE(\"GPL\");\nMODULE_IMPORT_NS(PMBUS);\n"));
  core::Diagnostic d;
  d.kind = core::DiagKind::undeclared_identifier;
  d.file = "pmbus.c";
  d.line = 2;
  d.message = "'PMBUS' undeclared here (not in a function)";
  d.symbols = {"PMBUS"};
  d.notes.push_back({"/usr/src/linux-headers/include/linux/module.h", 302, 33, "in expansion of macro 'MODULE_INFO'"});
  d.notes.push_back({"pmbus.c", 2, 1, "in expansion of macro 'MODULE_IMPORT_NS'"});
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "call:MODULE_IMPORT_NS");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->support, 3);
  EXPECT_TRUE(e->smpl.empty()) << "SmPL cannot stringify: " << e->smpl;
  ASSERT_TRUE(propose::apply_edit(*e, ctx.tree, ctx.scratch));
  auto after = util::read_file(ctx.tree / "pmbus.c");
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, "MODULE_LICENSE(\"GPL\");\nMODULE_IMPORT_NS(\"PMBUS\");\n");
}

TEST(VoidResult, UsesOfAValueTheKernelNoLongerReturnsBecomeZero) {
  // 6.14 made ipmi_destroy_user() void: it cannot fail. `rv = f(x);` and `return f(x);` keep the
  // call and use 0; the body of an unbraced if is left alone (a second statement would escape it).
  auto tmp = util::TempDir::create(util::scratch_root(), "void-result-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(old_src / "include/linux/ipmi.h", "int ipmi_destroy_user(struct ipmi_user *user);\n"));
  ASSERT_TRUE(put(new_src / "include/linux/ipmi.h", "void ipmi_destroy_user(struct ipmi_user *user);\n"));
  const std::string driver = "static void f(struct ipmi_user *u)\n{\n\tint rv;\n\n"
                             "\trv = ipmi_destroy_user(u);\n\tif (rv)\n\t\tpr_warn(\"x\");\n"
                             "\tif (u)\n\t\trv = ipmi_destroy_user(u);\n}\n\n"
                             "static int g(struct ipmi_user *u)\n{\n\treturn ipmi_destroy_user(u);\n}\n";
  ASSERT_TRUE(put(tree / "wd.c", driver));
  core::Kernel from, to;
  from.build_dir = old_src;
  to.build_dir = new_src;
  propose::PortContext ctx;
  ctx.from = &from;
  ctx.to = &to;
  ctx.old_src = old_src;
  ctx.new_src = new_src;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  auto ds = errors_at("wd.c", "void value not ignored as it ought to be", {5, 9, 14});
  auto edits = propose::make_void_result()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].change_id, "void-result:ipmi_destroy_user");
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "wd.c");
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("\tipmi_destroy_user(u);\n\trv = 0;\n\tif (rv)\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("\tif (u)\n\t\trv = ipmi_destroy_user(u);\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("{\n\tipmi_destroy_user(u);\n\treturn 0;\n}\n"), std::string::npos) << *after;
  // A function the old kernel already declared void is not this change.
  ASSERT_TRUE(put(old_src / "include/linux/ipmi.h", "void ipmi_destroy_user(struct ipmi_user *user);\n"));
  ASSERT_TRUE(put(tree / "wd.c", driver));
  EXPECT_TRUE(propose::make_void_result()->propose(ds, ctx).empty());
}

TEST(VoidResult, AFailureTestOfAValueTheKernelNoLongerReturnsBecomesTheCallAlone) {
  // debugfs_create_u32() returns void since 5.5; a 4.x driver tests its dentry. With no older
  // kernel at hand the driver's own use of the value is the evidence; the failure branch goes.
  auto tmp = util::TempDir::create(util::scratch_root(), "void-test-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(new_src / "include/linux/debugfs.h",
                  "void debugfs_create_u32(const char *name, umode_t mode, struct dentry *parent, u32 *value);\n"));
  ASSERT_TRUE(put(tree / "d.c", "static void f(struct x *x)\n{\n\tif (!debugfs_create_u32(\"a\", 0444, x->dir, &x->a))\n"
                                "\t\tpr_warn(\"no debugfs\\n\");\n\tif (!debugfs_create_u32(\"b\", 0444, x->dir, &x->b)) {\n"
                                "\t\tx->ok = 0;\n\t}\n}\n"));
  core::Kernel to;
  to.build_dir = new_src;
  propose::PortContext ctx;
  ctx.to = &to;
  ctx.new_src = new_src;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  auto ds = errors_at("d.c", "invalid use of void expression", {3, 5});
  auto edits = propose::make_void_result()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  // The failure branch that prints goes; the one that handles no failure (no error, no jump) stays an error.
  EXPECT_EQ(*util::read_file(tree / "d.c"), "static void f(struct x *x)\n{\n\tdebugfs_create_u32(\"a\", 0444, x->dir, &x->a);\n"
                                            "\tif (!debugfs_create_u32(\"b\", 0444, x->dir, &x->b)) {\n\t\tx->ok = 0;\n\t}\n}\n");
}

TEST(CallbackSignature, VoidCallbackNowReturnsAValueAndOwnDefinitionsFollowTheKernelsPrototype) {
  auto tmp = util::TempDir::create(util::scratch_root(), "ret-follow-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(old_src / "include/linux/watchdog.h",
                  "int watchdog_init_timeout(struct watchdog_device *wdd, unsigned int t, struct device *dev);\n"
                  "int ipmi_destroy_user(struct ipmi_user *user);\n"));
  ASSERT_TRUE(put(new_src / "include/linux/watchdog.h",
                  "int watchdog_init_timeout(struct watchdog_device *wdd, unsigned int t, const struct device *dev);\n"
                  "void ipmi_destroy_user(struct ipmi_user *user);\n"));
  ASSERT_TRUE(put(tree / "core.c",
                  "static void sender(void *info, struct msg *m)\n{\n\tif (!m)\n\t\treturn;\n\tsend(m);\n}\n\n"
                  "static const struct handlers h = {\n\t.sender = sender,\n};\n\n"
                  "int watchdog_init_timeout(struct watchdog_device *wdd, unsigned int t, struct device *dev)\n{\n"
                  "\treturn 0;\n}\n\n"
                  "int ipmi_destroy_user(struct ipmi_user *user)\n{\n\tif (!user)\n\t\treturn -EINVAL;\n"
                  "\tkfree(user);\n\treturn 0;\n}\n"));
  core::Kernel from, to;
  from.build_dir = old_src;
  to.build_dir = new_src;
  propose::PortContext ctx;
  ctx.from = &from;
  ctx.to = &to;
  ctx.old_src = old_src;
  ctx.new_src = new_src;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  const std::string header = (new_src / "include/linux/watchdog.h").string();
  core::Diagnostic cb;
  cb.kind = core::DiagKind::incompatible_pointer_type;
  cb.file = "core.c";
  cb.line = 9;
  cb.symbols = {"int (*)(void *, struct msg *)", "void (*)(void *, struct msg *)"};
  core::Diagnostic wd;
  wd.kind = core::DiagKind::conflicting_types;
  wd.file = "core.c";
  wd.line = 12;
  wd.symbols = {"watchdog_init_timeout"};
  wd.message = "conflicting types for 'watchdog_init_timeout'; have 'int(struct watchdog_device *, unsigned int,  "
               "struct device *)'";
  wd.notes.push_back({header, 1, 5,
                      "previous declaration of 'watchdog_init_timeout' with type 'int(struct "
                      "watchdog_device *, unsigned int,  const struct device *)'"});
  core::Diagnostic ip = wd;
  ip.line = 17;
  ip.symbols = {"ipmi_destroy_user"};
  ip.message = "conflicting types for 'ipmi_destroy_user'; have 'int(struct ipmi_user *)'";
  ip.notes = {{header, 2, 6, "previous declaration of 'ipmi_destroy_user' with type 'void(struct ipmi_user *)'"}};
  auto edits = propose::make_callback_signature()->propose({cb, wd, ip}, ctx);
  for (const char* id : {"callback:sender", "definition:watchdog_init_timeout", "definition:ipmi_destroy_user"}) {
    const auto* e = find_edit(edits, id);
    ASSERT_NE(e, nullptr) << id;
    ASSERT_TRUE(propose::apply_edit(*e, tree, ctx.scratch)) << id;
  }
  auto after = util::read_file(tree / "core.c");
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("static int sender(void *info, struct msg *m)\n{\n\tif (!m)\n\t\treturn 0;\n\tsend(m);\n"
                        "\treturn 0;\n}\n"),
            std::string::npos)
      << *after;
  EXPECT_NE(after->find("int watchdog_init_timeout(struct watchdog_device *wdd, unsigned int t, const struct device "
                        "*dev)\n"),
            std::string::npos)
      << *after;
  EXPECT_NE(after->find("void ipmi_destroy_user(struct ipmi_user *user)\n{\n\tif (!user)\n\t\treturn;\n"
                        "\tkfree(user);\n}\n"),
            std::string::npos)
      << *after;
  // Without the old kernel declaring it, a definition that clashes with a kernel name is not the
  // kernel's API: no edit.
  ASSERT_TRUE(put(old_src / "include/linux/watchdog.h", "\n"));
  propose::PortContext c2 = ctx;
  EXPECT_EQ(find_edit(propose::make_callback_signature()->propose({ip}, c2), "definition:ipmi_destroy_user"), nullptr);
}

TEST(CallbackSignature, ReturnRetypedPastBracesOfBothVersionBranches) {
  // vhba: an `#if LINUX_VERSION_CODE` block opening a brace in each branch before the callback;
  // 7.x's queuecommand returns enum scsi_qc_status.
  auto tmp = util::TempDir::create(util::scratch_root(), "ret-branches-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path tree = tmp->path() / "tree";
  ASSERT_TRUE(put(tree / "vhba.c",
                  "static void f(int x)\n{\n#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 15, 0)\n\tif (x) {\n#else\n"
                  "\tif (!x) {\n#endif\n\t\tg();\n\t}\n}\n\n"
                  "static int vhba_queuecommand (struct Scsi_Host *shost, struct scsi_cmnd *cmd)\n{\n\treturn 0;\n}\n\n"
                  "static struct scsi_host_template t = {\n\t.queuecommand = vhba_queuecommand,\n};\n"));
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  core::Diagnostic d;
  d.kind = core::DiagKind::incompatible_pointer_type;
  d.file = "vhba.c";
  d.line = 18;
  d.symbols = {"enum scsi_qc_status (*)(struct Scsi_Host *, struct scsi_cmnd *)",
               "int (*)(struct Scsi_Host *, struct scsi_cmnd *)"};
  auto edits = propose::make_callback_signature()->propose({d}, ctx);
  const auto* e = find_edit(edits, "callback:vhba_queuecommand");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(propose::apply_edit(*e, tree, ctx.scratch));
  auto after = util::read_file(tree / "vhba.c");
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("static enum scsi_qc_status vhba_queuecommand (struct Scsi_Host"), std::string::npos) << *after;
}

TEST(CallbackSignature, FunctionsPassedAsAnArgumentFollowTheTypedef) {
  // rapiddisk passes two completion functions to its own dm_io wrapper, whose parameter is the
  // kernel's io_notify_fn; 7.x's typedef gained `unsigned long unsup`. gcc's message is the same
  // for both places: one edit for both functions, parameters named as the typedef names them.
  auto tmp = util::TempDir::create(util::scratch_root(), "passed-cb-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(new_src / "include/linux/dm-io.h",
                  "typedef void (*io_notify_fn)(unsigned long error, unsigned long unsup, void *context);\n"));
  ASSERT_TRUE(put(tree / "cache.c",
                  "static void a_cb(unsigned long, void *);\n"
                  "int submit(int n, io_notify_fn fn, void *ctx);\n"
                  "static void a_cb(unsigned long error, void *context)\n{\n\tdone(context);\n}\n"
                  "static void b_cb(unsigned long error, void *context)\n{\n\tdone(context);\n}\n"
                  "static void go(void *job)\n{\n\tsubmit(1, a_cb, job);\n\tsubmit(2,\n\t       b_cb, job);\n}\n"));
  core::Kernel to;
  to.build_dir = new_src;
  propose::PortContext ctx;
  ctx.to = &to;
  ctx.new_src = new_src;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  auto diag = [](int line) {
    core::Diagnostic d;
    d.kind = core::DiagKind::incompatible_pointer_type;
    d.file = "cache.c";
    d.line = line;
    d.message = "passing argument 2 of 'submit' from incompatible pointer type";
    d.symbols = {"submit"};
    d.notes.push_back({"cache.c", 2, 20,
                       "expected 'io_notify_fn' {aka 'void (*)(long unsigned int,  long unsigned int,  void *)'} but "
                       "argument is of type 'void (*)(long unsigned int,  void *)'"});
    return d;
  };
  auto edits = propose::make_callback_signature()->propose({diag(13), diag(15)}, ctx);
  const auto* e = find_edit(edits, "callback:a_cb+b_cb");
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(propose::apply_edit(*e, tree, ctx.scratch));
  auto after = util::read_file(tree / "cache.c");
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("static void a_cb(unsigned long error, long unsigned int unsup, void *context);\n"), std::string::npos)
      << *after;
  EXPECT_NE(after->find("static void a_cb(unsigned long error, long unsigned int unsup, void *context)\n{"), std::string::npos)
      << *after;
  EXPECT_NE(after->find("static void b_cb(unsigned long error, long unsigned int unsup, void *context)\n{"), std::string::npos)
      << *after;
}

TEST(EntryPoints, MagicNamesRegisteredWithTheMacrosTheTargetDefinesThemWith) {
  auto tmp = util::TempDir::create(util::scratch_root(), "entry-points-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(new_src / "include/linux/module.h",
                  "#define module_init(initfn)\t\t\t\t\t\\\n\tstatic inline initcall_t __inittest(void)\t\\\n"
                  "\t{ return initfn; }\t\t\t\t\t\\\n\tint init_module(void) __copy(initfn)\t\t\t\\\n"
                  "\t\t__attribute__((alias(#initfn)));\n\n"
                  "#define module_exit(exitfn)\t\t\t\t\t\\\n\tvoid cleanup_module(void) __copy(exitfn)\t\t\\\n"
                  "\t\t__attribute__((alias(#exitfn)));\n"));
  ASSERT_TRUE(put(tree / "main.c", "int init_module (void)\n{\n\treturn 0;\n}\n\nvoid cleanup_module(void) {\n}\n\n"
                                   "MODULE_LICENSE(\"GPL\");\n"));
  core::Kernel to;
  to.build_dir = new_src;
  propose::PortContext ctx;
  ctx.to = &to;
  ctx.new_src = new_src;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  core::Diagnostic d;
  d.tool = "objtool";
  d.file = "lime.o";
  d.function = "init_module";
  d.message = "init_module(): Magic init_module() function name is deprecated, use module_init(fn) instead";
  auto edits = propose::make_entry_points()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "main.c");
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, "int lime_init_module (void)\n{\n\treturn 0;\n}\nmodule_init(lime_init_module);\n\n"
                    "void lime_cleanup_module(void) {\n}\nmodule_exit(lime_cleanup_module);\n\nMODULE_LICENSE(\"GPL\");\n");
}

TEST(ArgumentCast, ACastToTheParametersOldTypeFollowsItsNewType) {
  // 7.x's kernel_bind() takes struct sockaddr_unsized *; lime casts to struct sockaddr *.
  auto tmp = util::TempDir::create(util::scratch_root(), "argument-cast-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path tree = tmp->path() / "tree";
  ASSERT_TRUE(put(tree / "tcp.c", "int f(void)\n{\n\tr = kernel_bind(control,(struct sockaddr*) &saddr,sizeof(saddr));\n"
                                  "\tr = kernel_bind(control, addr, sizeof(saddr));\n}\n"));
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  auto diag = [](int line) {
    core::Diagnostic d;
    d.kind = core::DiagKind::incompatible_pointer_type;
    d.file = "tcp.c";
    d.line = line;
    d.message = "passing argument 2 of 'kernel_bind' from incompatible pointer type";
    d.notes.push_back({"/usr/src/linux-headers/include/linux/net.h", 397, 63,
                       "expected 'struct sockaddr_unsized *' but argument is of type 'struct sockaddr *'"});
    return d;
  };
  auto edits = propose::make_argument_cast()->propose({diag(3), diag(4)}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "tcp.c");
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("kernel_bind(control,(struct sockaddr_unsized *) &saddr,sizeof(saddr));"), std::string::npos) << *after;
  EXPECT_NE(after->find("kernel_bind(control, addr, sizeof(saddr));"), std::string::npos) << "no cast, no edit";
}

TEST(ArgumentCast, AnArrayAMemberNowWantsConstGainsTheQualifiers) {
  // 6.15: attribute_group.bin_attrs is `const struct bin_attribute *const *`.
  auto tmp = util::TempDir::create(util::scratch_root(), "qualified-array-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path tree = tmp->path() / "tree";
  ASSERT_TRUE(put(tree / "core.c",
                  "static struct bin_attribute *c2port_bin_attrs[] = {\n\t&bin_attr_flash_data,\n\tNULL,\n};\n\n"
                  "static const struct attribute_group c2port_group = {\n\t.bin_attrs = c2port_bin_attrs,\n};\n"));
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  core::Diagnostic d;
  d.kind = core::DiagKind::incompatible_pointer_type;
  d.file = "core.c";
  d.line = 7;
  d.symbols = {"const struct bin_attribute * const*", "struct bin_attribute **"};
  auto edits = propose::make_argument_cast()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "core.c");
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->starts_with("static const struct bin_attribute *const c2port_bin_attrs[] = {\n")) << *after;
  // Another type altogether is not a matter of qualifiers.
  d.symbols = {"const struct attribute * const*", "struct bin_attribute **"};
  EXPECT_TRUE(propose::make_argument_cast()->propose({d}, ctx).empty());
}

TEST(CallbackSignature, MacroWiredCallbackOnAContinuationLineFoundByGccsColumn) {
  // `static BIN_ATTR(flash_data, 0644, read_fn,\n\t\twrite_fn, 0);`: gcc reports the .write
  // initializer at line 2, display column 17 (two tabs); both callbacks end in `_flash_data`.
  auto tmp = util::TempDir::create(util::scratch_root(), "macro-wired-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path tree = tmp->path() / "tree";
  const std::string fn = "(struct file *filp, struct kobject *kobj,\n\t\tstruct bin_attribute *attr, char *buffer, loff_t "
                         "offset, size_t count)\n{\n\treturn 0;\n}\n";
  ASSERT_TRUE(put(tree / "core.c", "static BIN_ATTR(flash_data, 0644, c2port_read_flash_data,\n\t\tc2port_write_flash_data, 0);\n"
                                   "static ssize_t c2port_read_flash_data" +
                                       fn + "static ssize_t c2port_write_flash_data" + fn));
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  core::Diagnostic d;
  d.kind = core::DiagKind::incompatible_pointer_type;
  d.file = "core.c";
  d.line = 2;
  d.column = 17;
  d.symbols = {"ssize_t (*)(struct file *, struct kobject *, const struct bin_attribute *, char *, loff_t,  size_t)",
               "ssize_t (*)(struct file *, struct kobject *, struct bin_attribute *, char *, loff_t,  size_t)"};
  core::Diagnostic r = d;
  r.line = 1;
  r.column = 35;
  auto edits = propose::make_callback_signature()->propose({r, d}, ctx);
  EXPECT_NE(find_edit(edits, "callback:c2port_read_flash_data"), nullptr);
  EXPECT_NE(find_edit(edits, "callback:c2port_write_flash_data"), nullptr);
}

TEST(KbuildVars, AVariableTheTargetsKbuildDroppedTakesTheNameTheOldOneForwardedItTo) {
  auto tmp = util::TempDir::create(util::scratch_root(), "kbuild-vars-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path old_src = tmp->path() / "old", new_src = tmp->path() / "new", tree = tmp->path() / "tree";
  ASSERT_TRUE(put(old_src / "scripts/Makefile.lib", "asflags-y  += $(EXTRA_AFLAGS)\nccflags-y  += $(EXTRA_CFLAGS)\n"
                                                    "cppflags-y += $(EXTRA_CPPFLAGS)\n"));
  ASSERT_TRUE(put(old_src / "scripts/Makefile.build", "EXTRA_CFLAGS   :=\nEXTRA_AFLAGS   :=\n"));
  ASSERT_TRUE(put(new_src / "scripts/Makefile.lib", "# EXTRA_AFLAGS is still documented here\nccflags-y += -DX\n"));
  ASSERT_TRUE(put(new_src / "scripts/Makefile.build", "obj := $(src)\n"));
  ASSERT_TRUE(put(tree / "Makefile", "EXTRA_CFLAGS+=\t-DVERSION=\"\\\"1\\\"\"\nMY_EXTRA_CFLAGS := x\nobj-m += a.o\n"
                                     "EXTRA_AFLAGS += -Dy\n"));
  propose::PortContext ctx;
  ctx.old_src = old_src;
  ctx.new_src = new_src;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  core::Diagnostic d;
  d.file = "a.c";
  d.line = 3;
  d.message = "'VERSION' undeclared (first use in this function)";
  auto edits = propose::make_kbuild_vars()->propose({d}, ctx);
  ASSERT_EQ(edits.size(), 1u);
  ASSERT_TRUE(propose::apply_edit(edits[0], tree, ctx.scratch));
  auto after = util::read_file(tree / "Makefile");
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, "ccflags-y+=\t-DVERSION=\"\\\"1\\\"\"\nMY_EXTRA_CFLAGS := x\nobj-m += a.o\nEXTRA_AFLAGS += -Dy\n")
      << "EXTRA_AFLAGS is still named by the target's kbuild; MY_EXTRA_CFLAGS is another variable";
}

TEST(InlineRemoved, RegistryNumberIsDefinedByTheDriverFlagsAreNot) {
  // 7.x dropped MWAVE_MINOR from <linux/miscdevice.h>, a registry of minor numbers; a bit of a
  // flag family is never copied (the kernel may have given the bit another meaning).
  MiniPort m("registry-", {{"include/linux/miscdevice.h", "#define MISC_DYNAMIC_MINOR 255\n"}},
             {{"drv.c", "#include <linux/miscdevice.h>\n#include <linux/interrupt.h>\n\n"
                        "static int minor = MWAVE_MINOR;\nstatic int flags = IRQF_OLD;\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  const fs::path old_src = m.tmp->path() / "old";
  ASSERT_TRUE(put(old_src / "include/linux/miscdevice.h",
                  "#define PSMOUSE_MINOR\t\t1\n#define MS_BUSMOUSE_MINOR\t2\t/* unused */\n#define ATIXL_BUSMOUSE_MINOR\t3\n"
                  "#define ATARIMOUSE_MINOR\t5\n#define SUN_MOUSE_MINOR\t\t6\n#define MWAVE_MINOR\t\t219\t/* ACP/Mwave Modem */\n"
                  "#define MISC_DYNAMIC_MINOR\t255\n"));
  ASSERT_TRUE(put(old_src / "include/linux/interrupt.h",
                  "#define IRQF_SHARED\t\t0x00000080\n#define IRQF_PROBE_SHARED\t0x00000100\n#define IRQF_TIMER\t\t0x00000200\n"
                  "#define IRQF_PERCPU\t\t0x00000400\n#define IRQF_NOBALANCING\t0x00000800\n#define IRQF_OLD\t\t0x00000020\n"));
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  port.ctx.old_src = old_src;
  std::vector<core::Diagnostic> ds(2);
  ds[0].kind = ds[1].kind = core::DiagKind::undeclared_identifier;
  ds[0].severity = ds[1].severity = core::Severity::error;
  ds[0].file = ds[1].file = "drv.c";
  ds[0].line = 4;
  ds[0].symbols = {"MWAVE_MINOR"};
  ds[1].line = 5;
  ds[1].symbols = {"IRQF_OLD"};
  auto edits = propose::make_inline_removed()->propose(ds, port.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].change_id, "inline:MWAVE_MINOR");
  ASSERT_EQ(edits[0].text_edits.size(), 1u);
  EXPECT_EQ(edits[0].text_edits[0].line, 3);
  EXPECT_EQ(edits[0].text_edits[0].text, "#define MWAVE_MINOR 219\n");
}

TEST(LearnedRewrite, DroppedArgumentKeepsTheFormTheKernelDropped) {
  // 7.x removed strncpy(); the kernel's own sites that dropped the length had it as
  // sizeof(dst): that rule must not drop a length the driver wrote otherwise.
  auto tmp = util::TempDir::create(util::scratch_root(), "dropped-arg-");
  ASSERT_TRUE(tmp.has_value());
  auto kernels = three_drivers_changed(
      tmp->path(), "drivers/misc",
      [](const std::string& f) {
        return fmt::format("static void {0}_name(struct {0} *x, const char *s)\n{{\n\tstrncpy(x->name, s, "
                           "sizeof(x->name));\n}}\n",
                           f);
      },
      "strncpy(x->name, s, sizeof(x->name))", "strscpy(x->name, s)");
  ASSERT_TRUE(kernels.has_value());
  propose::PortContext& ctx = *kernels;
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "drv.c";
  d.line = 3;
  d.message = "implicit declaration of function 'strncpy'";
  d.symbols = {"strncpy"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "call:strncpy");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->call.has_value()); // a token rewrite could not check the form
  EXPECT_NE(e->smpl.find("- strncpy(E0, E1, sizeof(E0))\n+ strscpy(E0, E1)"), std::string::npos) << e->smpl;
  EXPECT_NE(e->description.find("`sizeof(arg0)`"), std::string::npos) << e->description;
  if (!util::find_program("spatch").empty()) {
    ASSERT_TRUE(put(ctx.tree / "drv.c", "void f(char *s)\n{\n\tchar a[16], b[16];\n\tstrncpy(a, s, sizeof(a));\n"
                                        "\tstrncpy(b, s, 8);\n}\n"));
    ASSERT_TRUE(propose::apply_edit(*e, ctx.tree, ctx.scratch));
    auto after = util::read_file(ctx.tree / "drv.c");
    ASSERT_TRUE(after.has_value());
    EXPECT_NE(after->find("strscpy(a, s);"), std::string::npos) << *after;
    EXPECT_NE(after->find("strncpy(b, s, 8);"), std::string::npos) << *after;
  }
}

TEST(LearnedRewrite, ADroppedConstantStaysThatConstant) {
  // ida_simple_get(ida, 0, 0, gfp) became ida_alloc(ida, gfp) at every kernel site: the rule holds
  // where the driver passes 0 and 0 too, not where it passes a limit ida_alloc() would lose.
  auto tmp = util::TempDir::create(util::scratch_root(), "dropped-const-");
  ASSERT_TRUE(tmp.has_value());
  auto kernels = three_drivers_changed(
      tmp->path(), "drivers/misc",
      [](const std::string& f) {
        return fmt::format("static int {0}_id(struct {0} *x)\n{{\n\treturn ida_simple_get(&x->ida, 0, 0, GFP_KERNEL);\n}}\n", f);
      },
      "ida_simple_get(&x->ida, 0, 0, GFP_KERNEL)", "ida_alloc(&x->ida, GFP_KERNEL)");
  ASSERT_TRUE(kernels.has_value());
  propose::PortContext& ctx = *kernels;
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "drv.c";
  d.line = 3;
  d.message = "implicit declaration of function 'ida_simple_get'";
  d.symbols = {"ida_simple_get"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "call:ida_simple_get");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->call.has_value());
  EXPECT_NE(e->smpl.find("- ida_simple_get(E0, 0, 0, E3)\n+ ida_alloc(E0, E3)"), std::string::npos) << e->smpl;
  if (!util::find_program("spatch").empty()) {
    ASSERT_TRUE(put(ctx.tree / "drv.c", "static DEFINE_IDA(a);\nint f(void)\n{\n\treturn ida_simple_get(&a, 0, 0, GFP_KERNEL) + "
                                        "ida_simple_get(&a, 0, 16, GFP_KERNEL);\n}\n"));
    ASSERT_TRUE(propose::apply_edit(*e, ctx.tree, ctx.scratch));
    auto after = util::read_file(ctx.tree / "drv.c");
    ASSERT_TRUE(after.has_value());
    EXPECT_NE(after->find("ida_alloc(&a, GFP_KERNEL)"), std::string::npos) << *after;
    EXPECT_NE(after->find("ida_simple_get(&a, 0, 16, GFP_KERNEL)"), std::string::npos) << *after;
  }
}

TEST(LearnedRewrite, ANewArgumentMadeOfTheDroppedOnesPartsHoldsOnlyForThatArgument) {
  // single_open(f, s, OLD_DATA(inode)) -> single_open(f, s, new_data(inode)) at every kernel site:
  // `inode` is the sites' own variable; the rule may not write it where the driver passed
  // something else.
  auto tmp = util::TempDir::create(util::scratch_root(), "dropped-parts-");
  ASSERT_TRUE(tmp.has_value());
  auto kernels = three_drivers_changed(
      tmp->path(), "drivers/misc",
      [](const std::string& f) {
        return fmt::format(
            "static int {0}_open(struct inode *inode, struct file *file)\n{{\n\treturn single_open(file, {0}_show, "
            "OLD_DATA(inode));\n}}\n",
            f);
      },
      "OLD_DATA(inode)", "new_data(inode)");
  ASSERT_TRUE(kernels.has_value());
  propose::PortContext& ctx = *kernels;
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "drv.c";
  d.line = 3;
  d.message = "implicit declaration of function 'single_open'";
  d.symbols = {"single_open"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "call:single_open");
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->call.has_value());
  EXPECT_EQ(e->smpl.find("- single_open(E0, E1, E2)"), std::string::npos) << e->smpl;
  EXPECT_NE(e->smpl.find("- single_open(E0, E1, OLD_DATA(inode))\n+ single_open(E0, E1, new_data(inode))"), std::string::npos)
      << e->smpl;
}

TEST(LearnedRewrite, ADroppedArgumentWithABarInItsTextKeepsItsRule) {
  // The rule's key separates dropped arguments by `|`: a dropped `GFP_KERNEL | __GFP_REPEAT` once
  // cut the key apart (an internal error on every port that learned it).
  auto tmp = util::TempDir::create(util::scratch_root(), "dropped-bar-");
  ASSERT_TRUE(tmp.has_value());
  auto kernels = three_drivers_changed(
      tmp->path(), "drivers/misc",
      [](const std::string& f) {
        return fmt::format("static void *{0}_buf(struct {0} *x)\n{{\n\treturn old_alloc(x, GFP_KERNEL | __GFP_REPEAT);\n}}\n", f);
      },
      "old_alloc(x, GFP_KERNEL | __GFP_REPEAT)", "new_alloc(x, GFP_KERNEL)");
  ASSERT_TRUE(kernels.has_value());
  propose::PortContext& ctx = *kernels;
  core::Diagnostic d;
  d.kind = core::DiagKind::implicit_function_declaration;
  d.file = "drv.c";
  d.line = 3;
  d.message = "implicit declaration of function 'old_alloc'";
  d.symbols = {"old_alloc"};
  auto edits = propose::make_learned_rewrite()->propose({d}, ctx);
  const auto* e = find_edit(edits, "call:old_alloc");
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->smpl.find("- old_alloc(E0, GFP_KERNEL | __GFP_REPEAT)\n+ new_alloc(E0, GFP_KERNEL)"), std::string::npos)
      << e->smpl;
}

TEST(ReturnFit, ReturnsOfAVoidFunctionLoseTheirValues) {
  // A remove callback whose prototype is already void (6.11's platform_driver.remove, taken from
  // one #if branch) while its returns still carry the old int results.
  auto tmp = util::TempDir::create(util::scratch_root(), "return-fit-");
  ASSERT_TRUE(tmp.has_value());
  const fs::path tree = tmp->path() / "tree";
  const std::string driver =
      "static void foo_remove(struct platform_device *pdev)\n{\n"
      "\tstruct foo *f = platform_get_drvdata(pdev);\n"
      "\tif (!f)\n\t\treturn -ENODEV;\n"                                       // 5: unbraced, no effect
      "\tif (f->busy)\n\t\treturn foo_stop(f);\n"                              // 7: unbraced, a call
      "\tif (f->irq) {\n\t\treturn foo_irq_off(f);\n\t}\n"                     // 9: braced, a call
      "\tfoo_free(f);\n\treturn 0;\n}\n\n"                                     // 12: last, constant
      "static void bar(int x)\n{\n\tbar_log(x);\n\treturn bar_done(x);\n}\n\n" // 18: last, a call
      "#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 11, 0)\nstatic int baz_remove(struct platform_device *p)\n"
      "#else\nstatic void baz_remove(struct platform_device *p)\n#endif\n"
      "{\n\tbaz_stop(p);\n\treturn 0;\n}\n"; // 28: the prototype in two branches
  ASSERT_TRUE(put(tree / "foo.c", driver));
  propose::PortContext ctx;
  ctx.tree = tree;
  ctx.original_tree = tree;
  ctx.scratch = tmp->path() / "s";
  auto ds = errors_at("foo.c", "'return' with a value, in function returning void", {5, 7, 9, 12, 18, 28});
  auto edits = propose::make_return_fit()->propose(ds, ctx);
  ASSERT_EQ(edits.size(), 3u);
  for (const auto& e : edits) ASSERT_TRUE(propose::apply_edit(e, tree, ctx.scratch)) << e.title;
  auto after = util::read_file(tree / "foo.c");
  ASSERT_TRUE(after);
  EXPECT_NE(after->find("\tif (!f)\n\t\treturn;\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("\tif (f->busy)\n\t\t{ foo_stop(f); return; }\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("\tif (f->irq) {\n\t\tfoo_irq_off(f);\n\t\treturn;\n\t}\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("\tfoo_free(f);\n}\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("\tbar_log(x);\n\tbar_done(x);\n}\n"), std::string::npos) << *after;
  EXPECT_NE(after->find("#endif\n{\n\tbaz_stop(p);\n}\n"), std::string::npos) << *after;
}

TEST(TokenDiff, ALongBodyChangedInOnePlaceIsDiffedThere) {
  std::string common;
  for (int i = 0; i < 3000; ++i) common += fmt::format("x{} = {};\n", i, i); // 12,000 tokens: past the cap
  auto a = csrc::tokenize(common + "t = f(sk, nonblock);\n" + common);
  auto b = csrc::tokenize(common + "t = f(sk, flags & MSG_DONTWAIT);\n" + common);
  auto hunks = propose::diff_tokens(a, 0, a.size() - 1, b, 0, b.size() - 1);
  ASSERT_EQ(hunks.size(), 1u);
  EXPECT_EQ(hunks[0].a_count, 1u);
  EXPECT_EQ(a[hunks[0].a_first].text, "nonblock");
  EXPECT_EQ(hunks[0].b_count, 3u);
  EXPECT_EQ(b[hunks[0].b_first].text, "flags");
  // Equal: no hunk; one side only longer: one insertion.
  EXPECT_TRUE(propose::diff_tokens(a, 0, a.size() - 1, a, 0, a.size() - 1).empty());
  auto c = csrc::tokenize("a ; b ;"), d = csrc::tokenize("a ; x ; b ;");
  hunks = propose::diff_tokens(c, 0, c.size() - 1, d, 0, d.size() - 1);
  ASSERT_EQ(hunks.size(), 1u);
  EXPECT_EQ(hunks[0].a_count, 0u);
  EXPECT_EQ(hunks[0].b_count, 2u);
  // The changed middle itself past the cap: not diffed.
  auto e = csrc::tokenize("a " + common + " z"), f = csrc::tokenize("b " + common + " y");
  EXPECT_TRUE(propose::diff_tokens(e, 0, e.size() - 1, f, 0, f.size() - 1).empty());
}

TEST(TargetApi, ConstantSettingOfAMemberWithNoSuccessorGoes) {
  // v4l2_buffer lost .input (a field drivers set to 0 in their querybuf): nothing similar took
  // its place, so the setting goes; a read of it stays (and stays an error).
  MiniPort m("lost-", {{"include/uapi/linux/videodev2.h", "struct v4l2_buffer {\n\t__u32 index;\n\t__u32 reserved2;\n};\n"}},
             {{"d.c", "static int q(struct v4l2_buffer *b, struct v4l2_buffer c)\n{\n\tb->index = 1;\n\tb->input = 0;\n"
                      "\tc.input = NULL;\n\treturn b->input;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits = propose::make_target_api()->propose(
      {diag_at(core::DiagKind::no_member, "d.c", 4, {"struct v4l2_buffer", "input"})}, port.ctx);
  auto it = std::find_if(edits.begin(), edits.end(),
                         [](const auto& e) { return e.title.find("lost the member") != std::string::npos; });
  ASSERT_NE(it, edits.end());
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(*it, m.tree, port.ctx.scratch));
  EXPECT_EQ(*util::read_file(m.tree / "d.c"),
            "static int q(struct v4l2_buffer *b, struct v4l2_buffer c)\n{\n\tb->index = 1;\n\treturn b->input;\n}\n");
}

TEST(TargetApi, ConstantSettingOnTheDiagnosedLineGoesWhereSmplCannotTypeTheObject) {
  // shash_desc lost .flags (5.1); the driver's object is declared by a macro, so SmPL's typed
  // metavariable does not match it: the line gcc named is dropped instead (the next alternative).
  MiniPort m("lostline-", {{"include/crypto/hash.h", "struct shash_desc {\n\tstruct crypto_shash *tfm;\n\tvoid *__ctx[];\n};\n"}},
             {{"d.c", "static int q(struct crypto_shash *t)\n{\n\tSHASH_DESC_ON_STACK(desc, t);\n\tdesc->tfm = t;\n"
                      "\tdesc->flags = CRYPTO_TFM_REQ_MAY_SLEEP;\n\treturn desc->flags & 1;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto line_edit = [&](int line) {
    for (const auto& e : propose::make_target_api()->propose(
             {diag_at(core::DiagKind::no_member, "d.c", line, {"struct shash_desc", "flags"})}, port.ctx))
      if (e.title.find("lost the member") != std::string::npos && !e.text_edits.empty()) return std::optional<propose::Edit>(e);
    return std::optional<propose::Edit>();
  };
  auto e = line_edit(5);
  ASSERT_TRUE(e.has_value());
  ASSERT_TRUE(propose::apply_edit(*e, m.tree, port.ctx.scratch));
  EXPECT_EQ(*util::read_file(m.tree / "d.c"), "static int q(struct crypto_shash *t)\n{\n\tSHASH_DESC_ON_STACK(desc, t);\n"
                                              "\tdesc->tfm = t;\n\treturn desc->flags & 1;\n}\n");
  // A read is no setting: nothing for that line.
  EXPECT_FALSE(line_edit(5).has_value());
}

TEST(TargetApi, AnAddedAllocationFlagsArgumentPassesTheCallersOwn) {
  // A function that gained a gfp_t: a call inside a function given allocation flags passes
  // those (its caller knows the context: atomic or not); elsewhere the default.
  MiniPort m("gfp-", {{"include/linux/pool.h", "void *pool_get(struct pool *p, gfp_t gfp);\n"}},
             {{"d.c", "static void *a(struct pool *p, gfp_t flags)\n{\n\treturn pool_get(p);\n}\n\n"
                      "static void *b(struct pool *p)\n{\n\treturn pool_get(p);\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits =
      propose::make_target_api()->propose({diag_at(core::DiagKind::too_few_arguments, "d.c", 8, {"pool_get"})}, port.ctx);
  auto it = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "call:pool_get"; });
  ASSERT_NE(it, edits.end());
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(*it, m.tree, port.ctx.scratch));
  EXPECT_EQ(*util::read_file(m.tree / "d.c"),
            "static void *a(struct pool *p, gfp_t flags)\n{\n\treturn pool_get(p, flags);\n}\n\n"
            "static void *b(struct pool *p)\n{\n\treturn pool_get(p, GFP_KERNEL);\n}\n");
}

TEST(TargetApi, ResultTestsAreReadInEveryFormTheyAreWritten) {
  auto toks = csrc::tokenize("void f(void)\n{\n\ta = p->q = get(1);\n\tif (unlikely(!a))\n\t\treturn;\n"
                             "\tb = get(2);\n\tif (IS_ERR(b))\n\t\treturn;\n"
                             "\tc = get(3);\n\tif (NULL == c) return;\n"
                             "\td = get(4);\n\tif (!d || e)\n\t\treturn;\n"
                             "\tg = get(5);\n\tif (!g &&\n\t    h)\n\t\treturn;\n"
                             "\tuse(get(6));\n\tk = other(7);\n\tif (!k) return;\n}\n");
  auto checks = propose::result_checks(toks, "get");
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].test, propose::ResultTest::null);
  EXPECT_EQ(checks[0].var, "a");
  EXPECT_EQ(checks[0].line, 4);
  EXPECT_EQ(checks[1].test, propose::ResultTest::is_err);
  EXPECT_EQ(checks[1].var, "b");
  EXPECT_EQ(checks[2].test, propose::ResultTest::null);
  EXPECT_EQ(checks[2].var, "c");
  EXPECT_EQ(propose::result_test_text(propose::ResultTest::is_err, "p->q"), "IS_ERR(p->q)");
}

TEST(TargetApi, AReplacedCallHasItsResultTestedAsTheTargetsCallersTestTheReplacement) {
  // alloc_tty_driver() (NULL on failure) was replaced by tty_alloc_driver() (an ERR_PTR): the
  // driver's test of the old call's result follows the new one's callers, as a follow-up.
  const std::string caller = "int init(void)\n{\n\tstruct tty_driver *d;\n\n\td = tty_alloc_driver(1, 0);\n"
                             "\tif (IS_ERR(d))\n\t\treturn PTR_ERR(d);\n\treturn 0;\n}\n";
  MiniPort m(
      "restest2-",
      {{"include/linux/tty_driver.h", "struct tty_driver *tty_alloc_driver(unsigned int lines, unsigned long flags);\n"},
       {"drivers/tty/a.c", caller},
       {"drivers/tty/b.c", caller},
       {"drivers/tty/c.c", caller}},
      {{"d.c", "static int init(void)\n{\n\tdrv = alloc_tty_driver(2);\n\tif (!drv)\n\t\treturn -ENOMEM;\n\treturn 0;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  propose::TargetIndex idx(m.src, m.src);
  auto r = propose::result_follow_up(idx, m.tree, "alloc_tty_driver", "tty_alloc_driver", "call:alloc_tty_driver");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->follows, "call:alloc_tty_driver");
  EXPECT_EQ(r->change_id, "result:tty_alloc_driver");
  ASSERT_EQ(r->text_edits.size(), 1u);
  EXPECT_EQ(r->text_edits[0].line, 4);
  EXPECT_EQ(r->text_edits[0].text, "\tif (IS_ERR(drv))\n");
  // A replacement the target's callers do not test: nothing to follow.
  EXPECT_FALSE(propose::result_follow_up(idx, m.tree, "alloc_tty_driver", "no_such_callers", "x").has_value());
}

TEST(TargetApi, ACallWhoseArgumentsChangedHasItsResultTestedAsTheTargetsCallersTestIt) {
  // blk_alloc_disk (6.9) gained an argument and returns an ERR_PTR on failure instead of NULL:
  // the target's own callers test IS_ERR(), so the driver's `!disk` follows, in the same edit.
  const std::string caller = "int probe(void)\n{\n\tstruct gendisk *d;\n\n\td = blk_alloc_disk(NULL, NUMA_NO_NODE);\n"
                             "\tif (IS_ERR(d))\n\t\treturn PTR_ERR(d);\n\treturn 0;\n}\n";
  MiniPort m(
      "restest-",
      {{"include/linux/blkdev.h", "struct gendisk *blk_alloc_disk(struct queue_limits *lim, int node);\n"},
       {"drivers/block/a.c", caller},
       {"drivers/block/b.c", caller},
       {"drivers/block/c.c", caller}},
      {{"d.c", "static int add(struct x *x, int node)\n{\n\tstruct gendisk *disk;\n\n\tdisk = x->disk = blk_alloc_disk(node);\n"
               "\tif (unlikely(!disk))\n\t\treturn -ENOMEM;\n\treturn 0;\n}\n"}});
  ASSERT_TRUE(m.tmp.has_value());
  TargetOnly port(m.src, m.tree, m.tmp->path() / "s");
  auto edits =
      propose::make_target_api()->propose({diag_at(core::DiagKind::too_few_arguments, "d.c", 5, {"blk_alloc_disk"})}, port.ctx);
  auto call = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "call:blk_alloc_disk"; });
  auto test = std::find_if(edits.begin(), edits.end(), [](const auto& e) { return e.change_id == "result:blk_alloc_disk"; });
  ASSERT_NE(call, edits.end());
  ASSERT_NE(test, edits.end()) << "a change of its own, kept only with the call's rewrite";
  ASSERT_EQ(test->text_edits.size(), 1u);
  EXPECT_EQ(test->text_edits[0].line, 6);
  EXPECT_EQ(test->text_edits[0].text, "\tif (unlikely(IS_ERR(disk)))\n");
  EXPECT_NE(test->description.find("3 of 3"), std::string::npos) << test->description;
  if (util::find_program("spatch").empty()) AD_SKIP("spatch not installed");
  ASSERT_TRUE(propose::apply_edit(*call, m.tree, port.ctx.scratch));
  ASSERT_TRUE(propose::apply_edit(*test, m.tree, port.ctx.scratch));
  EXPECT_EQ(*util::read_file(m.tree / "d.c"), "static int add(struct x *x, int node)\n{\n\tstruct gendisk *disk;\n\n"
                                              "\tdisk = x->disk = blk_alloc_disk(NULL, node);\n"
                                              "\tif (unlikely(IS_ERR(disk)))\n\t\treturn -ENOMEM;\n\treturn 0;\n}\n");
}
