// apidiff: libclang on tiny real header snippets (tests/fixtures/apidiff), kbuild command parsing,
// gcc -> clang flags, and the change classification.

#include "autodriver/apidiff/decls.hpp"
#include "autodriver/apidiff/diff.hpp"
#include "autodriver/apidiff/kbuild_flags.hpp"
#include "autodriver/loop/api_changes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <unistd.h>

using namespace autodriver;
using namespace autodriver::apidiff;
using core::ChangeKind;

namespace {

const std::filesystem::path k_dir = std::filesystem::path(AD_FIXTURES) / "apidiff";

DeclSet parse(const std::string& line) {
  auto set = read_declarations(k_dir / "driver.c", {"-nostdinc", "-I" + (k_dir / line / "include").string(), "-w"}, {});
  EXPECT_TRUE(set.has_value()) << (set ? "" : set.error().message);
  return set ? *set : DeclSet{};
}

const core::ApiChange* find(const std::vector<core::ApiChange>& v, const std::string& symbol, ChangeKind kind,
                            const std::string& member = "") {
  auto it =
      std::find_if(v.begin(), v.end(), [&](const auto& c) { return c.symbol == symbol && c.kind == kind && c.member == member; });
  return it == v.end() ? nullptr : &*it;
}

} // namespace

TEST(Apidiff, ReadsDeclarationsWithLibclang) {
  DeclSet old = parse("6.1");
  EXPECT_TRUE(old.used.count("class_interface"));
  EXPECT_TRUE(old.used.count("probe_new"));
  EXPECT_FALSE(old.used.count("__class_create")); // only in the header, not in the driver

  const Decl* cc = old.find("class_create");
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(cc->kind, DeclKind::macro_function);
  EXPECT_EQ(cc->params, (std::vector<std::string>{"owner", "name"}));
  EXPECT_EQ(cc->header, "linux/device/class.h");

  const Decl* ci = old.find("class_interface");
  ASSERT_NE(ci, nullptr);
  EXPECT_EQ(ci->name, "struct class_interface");
  ASSERT_NE(ci->member("add_dev"), nullptr);
  EXPECT_TRUE(ci->member("add_dev")->callback);
  EXPECT_EQ(ci->member("add_dev")->type, "int (*)(struct device *, struct class_interface *)");
  EXPECT_FALSE(ci->member("node")->callback);

  const Decl* gu = old.find("get_unaligned_le16");
  ASSERT_NE(gu, nullptr);
  EXPECT_EQ(gu->signature(), "u16 get_unaligned_le16(const void *)");
  EXPECT_EQ(gu->header, "asm/unaligned.h");
  EXPECT_EQ(old.find("no_llseek")->kind, DeclKind::macro_object);
  EXPECT_EQ(old.find("u32")->kind, DeclKind::typedef_name); // the header #undefs its temporary macro
  EXPECT_EQ(old.find("my_add"), nullptr);                   // the driver's own declarations are not the kernel's

  DeclSet neu = parse("6.12");
  EXPECT_EQ(neu.find("class_create")->signature(), "struct class * class_create(const char *)");
  EXPECT_GE(neu.parse_errors, 1); // class_create(m, "x"): too many arguments; declarations still come
}

TEST(Apidiff, ClassifiesRealChanges) {
  DeclSet old = parse("6.1"), neu = parse("6.12");
  auto changes = diff_declarations(old, neu, old.used);
  const auto* add = find(changes, "struct class_interface", ChangeKind::callback_type_changed, "add_dev");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->to, "int (*)(struct device *)");
  EXPECT_NE(find(changes, "struct class_interface", ChangeKind::member_retyped, "class"), nullptr);
  EXPECT_NE(find(changes, "struct i2c_driver", ChangeKind::member_removed, "probe_new"), nullptr);
  const auto* cc = find(changes, "class_create", ChangeKind::args_removed);
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(cc->from, "#define class_create(owner, name)");
  EXPECT_NE(find(changes, "no_llseek", ChangeKind::removed), nullptr);
  const auto* mv = find(changes, "get_unaligned_le16", ChangeKind::moved_header);
  ASSERT_NE(mv, nullptr);
  EXPECT_EQ(mv->header_to, "linux/unaligned.h");
  // Unchanged names are not reported, nor a move the old header still covers.
  EXPECT_TRUE(neu.reaches("linux/mutex.h", "linux/mutex_types.h"));
  EXPECT_EQ(find(changes, "struct mutex", ChangeKind::moved_header), nullptr);
  EXPECT_EQ(find(changes, "u32", ChangeKind::kind_changed), nullptr);
  EXPECT_EQ(find(changes, "class_interface_register", ChangeKind::moved_header), nullptr);
  EXPECT_EQ(find(changes, "struct i2c_driver", ChangeKind::callback_type_changed, "remove"), nullptr);
}

TEST(Apidiff, RenameNeedsSimilarNameAndSameArity) {
  auto fn = [](std::string name, std::size_t nparams) {
    Decl d;
    d.name = std::move(name);
    d.kind = DeclKind::function;
    d.result = "int";
    d.params.assign(nparams, "int");
    return d;
  };
  DeclSet from, to;
  from.decls["del_timer_sync"] = fn("del_timer_sync", 1);
  from.decls["strlcpy"] = fn("strlcpy", 3);
  to.decls["strscpy"] = fn("strscpy", 3);
  to.decls["strscpy_pad"] = fn("strscpy_pad", 3);
  to.decls["timer_delete_sync"] = fn("timer_delete_sync", 1);
  auto changes = diff_declarations(from, to, {"strlcpy", "del_timer_sync"});
  const auto* r = find(changes, "strlcpy", ChangeKind::renamed);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->new_name, "strscpy");
  // Too different a name: removed, not a guess.
  EXPECT_NE(find(changes, "del_timer_sync", ChangeKind::removed), nullptr);
  EXPECT_GT(name_similarity("strlcpy", "strscpy"), k_rename_similarity);
  EXPECT_DOUBLE_EQ(name_similarity("abc", "abc"), 1.0);
}

TEST(Apidiff, ParsesKbuildVerboseOutputAndCmdFiles) {
  std::string out =
      "# CC [M]  /tmp/t/sht4x.o\n"
      "  x86_64-linux-gnu-gcc-12 -Wp,-MMD,/tmp/t/.sht4x.o.d -nostdinc -I./arch/x86/include/generated "
      "-I/usr/src/h/include -include /usr/src/h/include/linux/kconfig.h -D__KERNEL__ -std=gnu11 "
      "-mindirect-branch=thunk-extern -fconserve-stack -mrecord-mcount -fzero-call-used-regs=used-gpr "
      "-ftrivial-auto-var-init=zero -fno-allow-store-data-races -Wno-sign-compare -O2 -DMODULE "
      "-DKBUILD_MODNAME='\"sht4x\"' -c -o /tmp/t/sht4x.o /tmp/t/sht4x.c   ; ./tools/objtool/objtool --module /tmp/t/sht4x.o\n"
      "/tmp/t/sht4x.c:295:27: error: initialization of 'int (*)(struct i2c_client *)' from incompatible pointer type\n";
  auto cmds = parse_verbose_build(out);
  ASSERT_EQ(cmds.size(), 1u);
  const auto& argv = cmds.at("/tmp/t/sht4x.c");
  EXPECT_EQ(argv.front(), "x86_64-linux-gnu-gcc-12");
  auto args = to_clang_args(argv, "/usr/src/k");
  auto has = [&](const std::string& a) { return std::find(args.begin(), args.end(), a) != args.end(); };
  EXPECT_TRUE(has("-I/usr/src/k/arch/x86/include/generated"));
  EXPECT_TRUE(has("-nostdinc"));
  EXPECT_TRUE(has("-DKBUILD_MODNAME=\"sht4x\""));
  EXPECT_TRUE(has("/usr/src/h/include/linux/kconfig.h"));
  EXPECT_TRUE(has("-std=gnu11"));
  for (const auto& a : args) {
    EXPECT_FALSE(a.starts_with("-W")) << a;
    EXPECT_FALSE(a.starts_with("-mindirect-branch") || a == "-fconserve-stack" || a == "-mrecord-mcount" ||
                 a.starts_with("-fzero-call-used-regs") || a.starts_with("-ftrivial-auto-var-init") ||
                 a == "-fno-allow-store-data-races" || a == "-c" || a.ends_with(".c") || a.ends_with(".o"))
        << a;
  }
  // 6.x kbuild's saved command for an object that compiled.
  auto dir = std::filesystem::temp_directory_path() / ("ad-apidiff-cmd-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sub");
  {
    std::ofstream f(dir / "sub" / ".x.o.cmd");
    f << "savedcmd_/tmp/t/sub/x.o := gcc-12 -Wp,-MMD,/tmp/t/sub/.x.o.d -nostdinc -I./include -DMODULE -c -o "
         "/tmp/t/sub/x.o /tmp/t/sub/x.c ; ./tools/objtool/objtool --module /tmp/t/sub/x.o\n\nsource_/tmp/t/sub/x.o := "
         "/tmp/t/sub/x.c\n";
  }
  auto saved = read_cmd_files(dir);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved.begin()->first, "/tmp/t/sub/x.c");
  EXPECT_EQ(saved.begin()->second.back(), "/tmp/t/sub/x.c");

  EXPECT_EQ(header_key("/usr/src/linux-headers-6.12.117+deb12-common/include/linux/i2c.h"), "linux/i2c.h");
  EXPECT_EQ(header_key("/usr/src/h/arch/x86/include/generated/asm/rwonce.h"), "asm/rwonce.h");
  EXPECT_EQ(normalize_type("struct (unnamed struct at /usr/src/x.h:12:3) *"), "struct (unnamed struct) *");
}

TEST(Apidiff, NamesTheChangeBehindADiagnostic) {
  core::ApiChange probe;
  probe.symbol = "struct i2c_driver";
  probe.member = "probe";
  probe.kind = ChangeKind::callback_type_changed;
  probe.from = "int (*)(struct i2c_client *, const struct i2c_device_id *)";
  probe.to = "int (*)(struct i2c_client *)";
  core::ApiChange cc;
  cc.symbol = "class_create";
  cc.kind = ChangeKind::args_removed;
  core::ApiChange mv;
  mv.symbol = "get_unaligned_le16";
  mv.kind = ChangeKind::moved_header;
  mv.header_from = "asm/unaligned.h";

  core::Diagnostic init; // sht4x.c:295 on 6.12, as gcc_parser reads it
  init.kind = core::DiagKind::incompatible_pointer_type;
  init.symbols = {"int (*)(struct i2c_client *)", "int (*)(struct i2c_client *, const struct i2c_device_id *)"};
  core::Diagnostic args;
  args.kind = core::DiagKind::too_many_arguments;
  args.symbols = {"class_create"};
  core::Diagnostic header;
  header.kind = core::DiagKind::missing_header;
  header.symbols = {"asm/unaligned.h"};

  EXPECT_TRUE(loop::change_explains(probe, init));
  EXPECT_FALSE(loop::change_explains(probe, args));
  EXPECT_TRUE(loop::change_explains(cc, args));
  EXPECT_FALSE(loop::change_explains(cc, init));
  EXPECT_TRUE(loop::change_explains(mv, header));
  auto j = loop::changes_for_diagnostics({probe, cc, mv}, {init, args, header});
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["changes"][0]["symbol"], "class_create");
  EXPECT_EQ(j[1]["changes"].size(), 1u);
}
