// corpus build: the kbuild Makefile reader (real 6.1 Makefiles), the dev/test split, PCI id
// tables and QEMU matching (real driver sources), dkms.conf, the journal, the case format and
// the taxonomy on real captured gcc output.

#include "autodriver/corpus/case_format.hpp"
#include "autodriver/corpus/dkms.hpp"
#include "autodriver/corpus/driver_unit.hpp"
#include "autodriver/corpus/journal.hpp"
#include "autodriver/corpus/kbuild_makefile.hpp"
#include "autodriver/corpus/runtime.hpp"
#include "autodriver/corpus/split.hpp"
#include "autodriver/corpus/taxonomy.hpp"
#include "autodriver/gate/gcc_parser.hpp"
#include "autodriver/util/files.hpp"
#include "fixtures.hpp"

#include <algorithm>
#include <fstream>

using namespace autodriver;
using namespace autodriver::corpus;
namespace fs = std::filesystem;

namespace {

ConfigLookup config_of(std::map<std::string, std::string> values) {
  return [values](std::string_view s) {
    auto it = values.find(std::string(s));
    return it == values.end() ? std::string() : it->second;
  };
}

const ModuleDecl* module(const KbuildMakefile& mk, const std::string& name) {
  for (const auto& m : mk.modules)
    if (m.name == name) return &m;
  return nullptr;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

} // namespace

TEST(KbuildMakefile, E1000eCompositeWithContinuationLines) {
  auto mk = parse_kbuild_makefile(fixture("kbuild/e1000e.Makefile"), config_of({{"CONFIG_E1000E", "m"}}));
  ASSERT_EQ(mk.modules.size(), 1u);
  const auto& m = mk.modules[0];
  EXPECT_EQ(m.name, "e1000e");
  EXPECT_EQ(m.config, "CONFIG_E1000E");
  EXPECT_TRUE(m.composite);
  EXPECT_EQ(m.objects.size(), 11u);
  EXPECT_EQ(m.objects.front(), "82571.o");
  EXPECT_EQ(m.objects.back(), "ptp.o");
  EXPECT_TRUE(m.problems.empty());
}

TEST(KbuildMakefile, ConditionalObjectsFollowTheConfig) {
  auto with_pm = parse_kbuild_makefile(fixture("kbuild/rtw88.Makefile"), config_of({{"CONFIG_PM", "y"}}));
  auto without = parse_kbuild_makefile(fixture("kbuild/rtw88.Makefile"), config_of({}));
  ASSERT_NE(module(with_pm, "rtw88_core"), nullptr);
  EXPECT_TRUE(has(module(with_pm, "rtw88_core")->objects, "wow.o"));
  EXPECT_FALSE(has(module(without, "rtw88_core")->objects, "wow.o"));
  EXPECT_TRUE(has(module(without, "rtw88_core")->objects, "main.o"));
  ASSERT_NE(module(with_pm, "rtw88_8822b"), nullptr);
  EXPECT_EQ(module(with_pm, "rtw88_8822b")->objects, (std::vector<std::string>{"rtw8822b.o", "rtw8822b_table.o"}));
  EXPECT_EQ(module(with_pm, "rtw88_8822b")->config, "CONFIG_RTW88_8822B");
}

TEST(KbuildMakefile, SingleFileModulesOfADirectory) {
  auto mk = parse_kbuild_makefile(fixture("kbuild/hwmon-pmbus.Makefile"), config_of({}));
  ASSERT_NE(module(mk, "pmbus_core"), nullptr);
  EXPECT_EQ(module(mk, "pmbus_core")->config, "CONFIG_PMBUS");
  ASSERT_NE(module(mk, "bel-pfe"), nullptr);
  EXPECT_EQ(module(mk, "bel-pfe")->objects, std::vector<std::string>{"bel-pfe.o"});
  EXPECT_FALSE(module(mk, "bel-pfe")->composite);
  EXPECT_GT(mk.modules.size(), 30u);
}

TEST(KbuildMakefile, PrefixSharingModulesAndPerObjectFlags) {
  auto mk = parse_kbuild_makefile(fixture("kbuild/sound-pci-hda.Makefile"), config_of({{"CONFIG_SND_PROC_FS", "y"}}));
  const auto* codec = module(mk, "snd-hda-codec");
  ASSERT_NE(codec, nullptr);
  EXPECT_TRUE(has(codec->objects, "hda_codec.o"));
  EXPECT_TRUE(has(codec->objects, "hda_controller.o"));
  EXPECT_TRUE(has(codec->objects, "hda_proc.o"));
  EXPECT_FALSE(has(codec->objects, "hda_hwdep.o"));   // CONFIG_SND_HDA_HWDEP not set
  EXPECT_FALSE(has(codec->objects, "hda_generic.o")); // belongs to snd-hda-codec-generic
  ASSERT_NE(module(mk, "snd-hda-codec-realtek"), nullptr);
  EXPECT_EQ(module(mk, "snd-hda-codec-realtek")->objects, std::vector<std::string>{"patch_realtek.o"});
  EXPECT_EQ(mk.object_flags["hda_controller.o"], "-I$(src)");
}

TEST(KbuildMakefile, VariablesFlagsAndBuiltIns) {
  const char* text = "common := a.o \\\n  b.o\n"
                     "obj-$(CONFIG_FOO) += foo.o sub/\n"
                     "obj-y += builtin.o\n"
                     "foo-objs := $(common) c.o # comment\n"
                     "ccflags-y += -DDEBUG -I$(srctree)/$(src)/inc -I$(srctree)/drivers/other\n";
  auto mk = parse_kbuild_makefile(text, config_of({}));
  ASSERT_EQ(mk.modules.size(), 1u); // obj-y is never a module; sub/ has its own Makefile
  EXPECT_EQ(mk.modules[0].objects, (std::vector<std::string>{"a.o", "b.o", "c.o"}));
  EXPECT_TRUE(has(mk.ccflags, "-DDEBUG"));
  EXPECT_TRUE(has(mk.ccflags, "-I$(src)/inc"));
  EXPECT_TRUE(has(mk.dropped_flags, "-I$(srctree)/drivers/other"));
}

TEST(KbuildMakefile, DotConfig) {
  auto c = parse_dot_config("# comment\nCONFIG_A=m\nCONFIG_B=y\n# CONFIG_C is not set\nCONFIG_D=\"x\"\n");
  EXPECT_EQ(c["CONFIG_A"], "m");
  EXPECT_EQ(c["CONFIG_B"], "y");
  EXPECT_EQ(c.count("CONFIG_C"), 0u);
}

TEST(Subsystem, FromDirectory) {
  EXPECT_EQ(subsystem_of("drivers/net/ethernet/intel/e1000e"), "net/ethernet");
  EXPECT_EQ(subsystem_of("drivers/hwmon"), "hwmon");
  EXPECT_EQ(subsystem_of("sound/pci/hda"), "sound/pci");
  EXPECT_EQ(subsystem_of("net/netfilter"), "net/netfilter");
}

TEST(Split, Fnv1aAndDeterministicHalves) {
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ULL);
  // Fixed answers: a change here re-splits every published corpus.
  EXPECT_EQ(split_of("drivers/hwmon/w83793"), split_of("drivers/hwmon/w83793"));
  EXPECT_EQ(split_of("drivers/hwmon/w83793"), (fnv1a_64("drivers/hwmon/w83793") & 1) ? "test" : "dev");
  EXPECT_EQ(split_of("drivers/hwmon/w83793"), "dev");
  EXPECT_EQ(split_of("drivers/net/ethernet/intel/e1000e/e1000e"), "test");
  int dev = 0;
  for (int i = 0; i < 2000; ++i) dev += split_of("drivers/x/unit" + std::to_string(i)) == "dev";
  EXPECT_GT(dev, 900);
  EXPECT_LT(dev, 1100);
}

namespace {

std::vector<PciId> ids_of(const std::vector<std::string>& files) {
  std::map<std::string, unsigned> defines;
  std::map<std::string, std::string> macros;
  collect_numeric_defines(fixture("pci/pci_ids.h.excerpt"), defines);
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(fixture("pci/" + f));
  for (const auto& t : texts) {
    collect_numeric_defines(t, defines);
    collect_function_macros(t, macros);
  }
  std::vector<PciId> ids;
  for (const auto& t : texts)
    for (const auto& id : pci_ids_in(t, defines, macros)) ids.push_back(id);
  return ids;
}

bool has_id(const std::vector<PciId>& ids, unsigned v, unsigned d) {
  return std::find(ids.begin(), ids.end(), PciId{v, d}) != ids.end();
}

} // namespace

TEST(PciIds, DriverMacroWrappingPciDevice) {
  auto ids = ids_of({"e1000.h.excerpt", "e1000_main.c.excerpt"});
  EXPECT_TRUE(has_id(ids, 0x8086, 0x100e));
  EXPECT_TRUE(has_id(ids, 0x8086, 0x1000));
  EXPECT_FALSE(has_id(ids, 0x8086, 0x10d3));
  auto rt = runtime_testability({fixture("pci/e1000_main.c.excerpt")}, ids);
  EXPECT_EQ(rt.kind, "device");
  EXPECT_EQ(rt.qemu_device, "e1000");
  EXPECT_TRUE(has(rt.qemu_devices, "e1000-82545em")); // 8086:100f is in e1000's table too
}

TEST(PciIds, PciDeviceWithPciIdsConstants) {
  auto ids = ids_of({"8139cp.c.excerpt"});
  ASSERT_FALSE(ids.empty());
  EXPECT_TRUE(has_id(ids, 0x10ec, 0x8139));
  EXPECT_EQ(runtime_testability({fixture("pci/8139cp.c.excerpt")}, ids).qemu_device, "rtl8139");
}

TEST(PciIds, PciVdeviceWithDriverHeaderIds) {
  auto ids = ids_of({"e1000e_hw.h.excerpt", "e1000e_netdev.c.excerpt"});
  EXPECT_TRUE(has_id(ids, 0x8086, 0x10d3));
  EXPECT_GT(ids.size(), 50u);
  EXPECT_EQ(runtime_testability({fixture("pci/e1000e_netdev.c.excerpt")}, ids).qemu_device, "e1000e");
}

TEST(Runtime, VirtualAndNone) {
  auto dummy = runtime_testability({fixture("pci/dummy.c")}, {});
  EXPECT_EQ(dummy.kind, "virtual");
  auto i2c = runtime_testability({fixture("pci/w83793.c")}, {});
  EXPECT_EQ(i2c.kind, "none"); // an i2c driver with an id table: no emulated device binds it
  auto isa = runtime_testability({"static int __init f(void) { if (inb(0x2e) != 0x52) return -ENODEV; return 0; }"}, {});
  EXPECT_EQ(isa.kind, "none");
}

TEST(QemuTable, NoDuplicateNamesAndVerifiedIds) {
  std::set<std::string> names;
  for (const auto& d : qemu_pci_devices()) EXPECT_TRUE(names.insert(d.name).second) << d.name;
  auto find = [](const std::string& n) {
    for (const auto& d : qemu_pci_devices())
      if (d.name == n) return std::make_pair(d.vendor, d.device);
    return std::make_pair(0u, 0u);
  };
  EXPECT_EQ(find("e1000"), std::make_pair(0x8086u, 0x100eu));
  EXPECT_EQ(find("nvme"), std::make_pair(0x1b36u, 0x0010u));
  EXPECT_EQ(find("megasas"), std::make_pair(0x1000u, 0x0060u));
}

TEST(Dkms, ConfAndBuildCommand) {
  auto conf = parse_dkms_conf(fixture("kbuild/v4l2loopback.dkms.conf"));
  EXPECT_EQ(conf.package_name, "v4l2loopback");
  EXPECT_EQ(conf.package_version, "0.12.7");
  EXPECT_EQ(conf.module_names, std::vector<std::string>{"v4l2loopback"});
  EXPECT_EQ(dkms_build_command(conf, "/w"), "make KERNEL_DIR={kdir} all");
  DkmsConf shell;
  shell.make = "make -C ${kernel_source_dir} M=${dkms_tree}/${PACKAGE_NAME}/${PACKAGE_VERSION}/build $(nproc)";
  EXPECT_EQ(dkms_build_command(shell, "/w"), ""); // needs a shell
  shell.make = "make -C ${kernel_source_dir} M=${dkms_tree}/${PACKAGE_NAME}/${PACKAGE_VERSION}/build KVER=${kernelver}";
  EXPECT_EQ(dkms_build_command(shell, "/w"), "make -C {kdir} M=/w KVER={kver}");
  DkmsConf env; // openrazer-driver-dkms
  env.make = "KERNELDIR=/lib/modules/${kernelver}/build make driver";
  EXPECT_EQ(dkms_build_command(env, "/w"), "make KERNELDIR=/lib/modules/{kver}/build driver");
}

TEST(Journal, ResumeIgnoresATornLastLine) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-journal");
  ASSERT_TRUE(tmp);
  fs::path file = tmp->path() / "journal.jsonl";
  {
    auto j = Journal::open(file);
    ASSERT_TRUE(j);
    ASSERT_TRUE(j->append("drivers/a/x", {{"outcome", "case"}}));
    ASSERT_TRUE(j->append("drivers/a/y", {{"outcome", "builds-both"}}));
  }
  { std::ofstream(file, std::ios::app) << "{\"unit\":\"drivers/a/z\",\"outc"; }
  auto j = Journal::open(file);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->decided().size(), 2u);
  EXPECT_TRUE(j->is_decided("drivers/a/x"));
  EXPECT_FALSE(j->is_decided("drivers/a/z"));
  ASSERT_TRUE(j->append("drivers/a/z", {{"outcome", "not-buildable"}}));
  auto again = Journal::open(file);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->decided().size(), 3u);
  EXPECT_EQ(again->decided().at("drivers/a/z").value("outcome", ""), "not-buildable");
}

TEST(CaseFormat, WriteIsAtomicAndVersioned) {
  auto tmp = util::TempDir::create(util::scratch_root(), "test-case");
  ASSERT_TRUE(tmp);
  fs::path corpus = tmp->path() / "corpus";
  fs::path before = tmp->path() / "src";
  fs::create_directories(before);
  ASSERT_TRUE(util::write_file(before / "x.c", "int x;\n"));
  ASSERT_TRUE(util::write_file(before / "x.o", "junk"));
  ASSERT_TRUE(init_corpus_dir(corpus, {{"from", "6.1"}, {"to", "6.12"}}));
  auto refused = init_corpus_dir(corpus, {{"from", "6.1"}, {"to", "6.13"}});
  EXPECT_FALSE(refused);
  CaseFiles c;
  c.metadata = {{"id", case_id_from_path("drivers/a/x")}, {"split", "dev"}};
  c.before = before;
  c.api_delta = "--- a/x\n+++ b/x\n";
  auto dir = write_case(corpus, c);
  ASSERT_TRUE(dir);
  EXPECT_EQ(dir->filename(), "drivers__a__x");
  EXPECT_TRUE(fs::exists(*dir / "before/x.c"));
  EXPECT_FALSE(fs::exists(*dir / "before/x.o"));
  auto meta = read_case_metadata(*dir);
  ASSERT_TRUE(meta);
  EXPECT_EQ(meta->value("schema_version", 0), k_case_schema_version);
  fs::create_directories(corpus / "cases/.tmp-half-1");
  EXPECT_EQ(list_cases(corpus).size(), 1u);
  auto n = export_jsonl(corpus, tmp->path() / "out.jsonl", WithFiles::yes, "");
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1u);
  auto line = nlohmann::json::parse(*util::read_file(tmp->path() / "out.jsonl"));
  EXPECT_EQ(line["before_files"]["x.c"], "int x;\n");
  EXPECT_EQ(*export_jsonl(corpus, tmp->path() / "test.jsonl", WithFiles::no, "test"), 0u);
  // A newer schema is refused with a clear message.
  ASSERT_TRUE(util::write_file(*dir / "metadata.json", "{\"schema_version\": 99, \"id\": \"x\"}"));
  auto newer = read_case_metadata(*dir);
  ASSERT_FALSE(newer);
  EXPECT_NE(newer.error().message.find("newer"), std::string::npos);
}

TEST(Taxonomy, RealW83793ErrorsAgainstHeaderTrees) {
  gate::ParseOptions po;
  po.tree_root = "/tmp/fixture-work/gcc/w83793";
  auto diags = gate::parse_build_output(fixture("gcc/6.12-hwmon-w83793.txt"), po);
  auto tmp = util::TempDir::create(util::scratch_root(), "test-taxonomy");
  ASSERT_TRUE(tmp);
  // The declarations as Linux 6.1 and 6.12 have them (include/linux/i2c.h, include/linux/fs.h).
  fs::create_directories(tmp->path() / "old/include/linux");
  fs::create_directories(tmp->path() / "new/include/linux");
  ASSERT_TRUE(util::write_file(tmp->path() / "old/include/linux/i2c.h",
                               "struct i2c_driver {\n\tunsigned int class;\n\tint (*probe)(struct i2c_client *client, "
                               "const struct i2c_device_id *id);\n\tint (*probe_new)(struct i2c_client *client);\n};\n"));
  ASSERT_TRUE(util::write_file(tmp->path() / "new/include/linux/i2c.h",
                               "struct i2c_driver {\n\tunsigned int class;\n\tint (*probe)(struct i2c_client *client);\n};\n"));
  ASSERT_TRUE(
      util::write_file(tmp->path() / "old/include/linux/fs.h",
                       "#define no_llseek NULL\nextern loff_t noop_llseek(struct file *file, loff_t offset, int whence);\n"));
  ASSERT_TRUE(util::write_file(tmp->path() / "new/include/linux/fs.h",
                               "extern loff_t noop_llseek(struct file *file, loff_t offset, int whence);\n"));
  HeaderIndex from(tmp->path() / "old"), to(tmp->path() / "new");
  auto c = classify(diags, from, to, {fixture("pci/w83793.c")});
  EXPECT_EQ(c.labels, (std::vector<std::string>{"member-changed", "removed-with-replacement"}));
  ASSERT_EQ(c.changes.size(), 2u); // the id_table error on the same line is a cascade
  EXPECT_EQ(c.changes[0].symbol, "struct i2c_driver.probe_new");
  EXPECT_EQ(c.changes[0].decl_from, "include/linux/i2c.h:1");
  EXPECT_EQ(c.changes[1].symbol, "no_llseek");
  EXPECT_EQ(c.changes[1].suggestion, "noop_llseek"); // existed in 6.1 too: not a rename
  EXPECT_NE(c.api_delta.find("-\tint (*probe_new)(struct i2c_client *client);"), std::string::npos);
  EXPECT_NE(c.api_delta.find("-#define no_llseek NULL"), std::string::npos);
  EXPECT_NE(c.description.find("no_llseek"), std::string::npos);
}

TEST(Taxonomy, RenameWhenTheSuggestionIsNew) {
  core::Diagnostic d;
  d.kind = core::DiagKind::undeclared_identifier;
  d.symbols = {"INTEL_FAM6_SAPPHIRERAPIDS_X"};
  d.message = "'INTEL_FAM6_SAPPHIRERAPIDS_X' undeclared here (not in a function); did you mean 'INTEL_SAPPHIRERAPIDS_X'?";
  auto tmp = util::TempDir::create(util::scratch_root(), "test-taxonomy");
  ASSERT_TRUE(tmp);
  fs::create_directories(tmp->path() / "old/arch/x86/include/asm");
  fs::create_directories(tmp->path() / "new/arch/x86/include/asm");
  fs::create_directories(tmp->path() / "old/include");
  fs::create_directories(tmp->path() / "new/include");
  ASSERT_TRUE(
      util::write_file(tmp->path() / "old/arch/x86/include/asm/intel-family.h", "#define INTEL_FAM6_SAPPHIRERAPIDS_X\t0x8F\n"));
  ASSERT_TRUE(util::write_file(tmp->path() / "new/arch/x86/include/asm/intel-family.h",
                               "#define INTEL_SAPPHIRERAPIDS_X\tIFM(6, 0x8F)\n"));
  auto c = classify({d}, HeaderIndex(tmp->path() / "old"), HeaderIndex(tmp->path() / "new"), {});
  EXPECT_EQ(c.labels, std::vector<std::string>{"rename"});
}

TEST(Taxonomy, CallbackInAnonymousUnion) {
  // Real 6.12 error for drivers/hwmon/abituguru.c: platform_driver.remove now returns void and
  // sits in an anonymous union.
  core::Diagnostic d;
  d.kind = core::DiagKind::incompatible_pointer_type;
  d.file = "abituguru.c";
  d.line = 1536;
  d.symbols = {"void (*)(struct platform_device *)", "int (*)(struct platform_device *)"};
  d.message = "initialization of 'void (*)(struct platform_device *)' from incompatible pointer type "
              "'int (*)(struct platform_device *)'";
  d.notes.push_back({"abituguru.c", 1536, 27, "(near initialization for 'abituguru_driver.<anonymous>.remove')"});
  auto tmp = util::TempDir::create(util::scratch_root(), "test-taxonomy");
  ASSERT_TRUE(tmp);
  fs::create_directories(tmp->path() / "include");
  HeaderIndex none(tmp->path());
  auto c = classify({d}, none, none, {"static struct platform_driver abituguru_driver = {\n\t.remove = abituguru_remove,\n};\n"});
  ASSERT_EQ(c.changes.size(), 1u);
  EXPECT_EQ(c.changes[0].change_type, "callback-type-changed");
  EXPECT_EQ(c.changes[0].symbol, "struct platform_driver.remove");
}
