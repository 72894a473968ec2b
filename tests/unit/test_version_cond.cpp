// The one reader of `#if LINUX_VERSION_CODE ...` conditions and of `#define A B` aliases.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/version_cond.hpp"

#include <gtest/gtest.h>

using namespace autodriver;

TEST(VersionCond, EitherSideParenthesesAndComments) {
  auto c = propose::parse_version_condition(" LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0) /* new API */");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->op, ">=");
  EXPECT_EQ(c->v.code(), (6 << 16) + (4 << 8));
  EXPECT_TRUE(c->new_when_true());
  EXPECT_TRUE(c->eval(propose::KVersion{6, 12, 0}));
  EXPECT_FALSE(c->eval(propose::KVersion{6, 1, 0}));
  // mirrored: KERNEL_VERSION(...) > LINUX_VERSION_CODE is LINUX_VERSION_CODE < V
  c = propose::parse_version_condition("((KERNEL_VERSION(5,10,0) > LINUX_VERSION_CODE)) // old");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->op, "<");
  EXPECT_FALSE(c->new_when_true());
  EXPECT_EQ(c->boundary().str(), "5.10.0");
  c = propose::parse_version_condition("LINUX_VERSION_CODE <= KERNEL_VERSION(4,19,0)");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->boundary().str(), "4.19.1");
  c = propose::parse_version_condition("LINUX_VERSION_CODE == KERNEL_VERSION(4,19,0)");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->ordered());
  // anything but one comparison is not read
  EXPECT_FALSE(propose::parse_version_condition("LINUX_VERSION_CODE >= KERNEL_VERSION(4,19,0) && defined(X)"));
  EXPECT_FALSE(propose::parse_version_condition("(LINUX_VERSION_CODE >= KERNEL_VERSION(4,19,0)) || (RHEL_RELEASE_CODE > 7)"));
  EXPECT_FALSE(propose::parse_version_condition("defined(CONFIG_X)"));
  // A block's boundary is a release: a bare LINUX_VERSION_CODE number is read by the three-valued
  // reader, not as a block; numbers that overflow and broken text are no condition, never a throw.
  EXPECT_FALSE(propose::parse_version_condition("LINUX_VERSION_CODE >= 0x060400"));
  EXPECT_FALSE(propose::parse_version_condition("LINUX_VERSION_CODE >= KERNEL_VERSION(99999999999999999999999,0,0)"));
  // A comment that goes on past the line is a comment, as C reads it.
  EXPECT_TRUE(propose::parse_version_condition("LINUX_VERSION_CODE >= KERNEL_VERSION(6,4,0) /* goes on"));
  EXPECT_FALSE(propose::parse_version_condition("LINUX_VERSION_CODE >= KERNEL_VERSION(6,4)"));
  EXPECT_FALSE(propose::parse_version_condition("(LINUX_VERSION_CODE >= KERNEL_VERSION(6,4,0)) && (1)"));
  EXPECT_FALSE(propose::parse_version_condition(""));
  c = propose::parse_version_condition("LINUX_VERSION_CODE>=KERNEL_VERSION(06,4,0)");
  ASSERT_TRUE(c) << "an octal-looking field is read as C reads it";
  EXPECT_EQ(c->v.str(), "6.4.0");
}

TEST(VersionCond, DeadLinesFollowMirroredConditionsToo) {
  const std::string text = "#if KERNEL_VERSION(5,0,0) > LINUX_VERSION_CODE\nold();\n#else\nnew();\n#endif\n";
  auto dead = propose::version_dead_lines(text, (6 << 16) + (1 << 8));
  ASSERT_EQ(dead.size(), 5u);
  EXPECT_TRUE(dead[1]);
  EXPECT_FALSE(dead[3]);
}

TEST(VersionCond, CombinedConditionsInThreeValues) {
  const long v61 = (6 << 16) + (1 << 8), v510 = (5 << 16) + (10 << 8);
  const std::string rhel = "(LINUX_VERSION_CODE >= KERNEL_VERSION(5,19,0) || (RHEL_RELEASE_CODE >= RHEL_RELEASE_VERSION(9, 0)))";
  EXPECT_EQ(propose::version_condition_value(rhel, v61), std::optional<bool>(true));
  EXPECT_EQ(propose::version_condition_value(rhel, v510), std::nullopt); // the RHEL side decides
  const std::string both = "LINUX_VERSION_CODE >= KERNEL_VERSION(5,4,0) && LINUX_VERSION_CODE < KERNEL_VERSION(6,0,0)";
  EXPECT_EQ(propose::version_condition_value(both, v510), std::optional<bool>(true));
  EXPECT_EQ(propose::version_condition_value(both, v61), std::optional<bool>(false));
  EXPECT_EQ(propose::version_condition_value("defined(CONFIG_X) && LINUX_VERSION_CODE < KERNEL_VERSION(6,0,0)", v61),
            std::optional<bool>(false));
  EXPECT_EQ(propose::version_condition_value("defined(CONFIG_X) && LINUX_VERSION_CODE < KERNEL_VERSION(6,0,0)", v510),
            std::nullopt);
  EXPECT_EQ(propose::version_condition_value("!(LINUX_VERSION_CODE < KERNEL_VERSION(6,0,0)) /* c */", v61),
            std::optional<bool>(true));
  EXPECT_EQ(propose::version_condition_value("LINUX_VERSION_CODE >= 0x060000", v61), std::optional<bool>(true));
  EXPECT_EQ(propose::version_condition_value("KERNEL_VERSION(6,2,0) <= LINUX_VERSION_CODE", v61), std::optional<bool>(false));
  // Anything else is not guessed: arithmetic, other macros, broken text.
  EXPECT_EQ(propose::version_condition_value("LINUX_VERSION_CODE + 1 >= KERNEL_VERSION(6,0,0)", v61), std::nullopt);
  EXPECT_EQ(propose::version_condition_value("MY_VERSION >= 3", v61), std::nullopt);
  EXPECT_EQ(propose::version_condition_value("(LINUX_VERSION_CODE >= KERNEL_VERSION(6,0,0)", v61), std::nullopt);
  EXPECT_EQ(propose::version_condition_value("", v61), std::nullopt);
  // The dead lines follow: the #else of the RHEL condition is not compiled on 6.1.
  auto dead = propose::version_dead_lines("#if " + rhel + "\nnew();\n#else\nold();\n#endif\n", v61);
  ASSERT_EQ(dead.size(), 5u);
  EXPECT_FALSE(dead[1]);
  EXPECT_TRUE(dead[3]);
}

TEST(DefineAlias, OneIdentifierOntoAnother) {
  auto a = csrc::define_alias("#define PCI_DMA_TODEVICE\tDMA_TO_DEVICE /* alias */");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->first, "PCI_DMA_TODEVICE");
  EXPECT_EQ(a->second, "DMA_TO_DEVICE");
  EXPECT_TRUE(csrc::define_alias("  #  define a b"));
  EXPECT_FALSE(csrc::define_alias("#define A(x) B"));
  EXPECT_FALSE(csrc::define_alias("#define A 1"));
  EXPECT_FALSE(csrc::define_alias("#define A B C"));
}

TEST(VersionCond, HugeDirectivesDoNotExhaustTheStack) {
  // Driver sources are untrusted: a directive of a megabyte (a generated condition, a comment
  // after #endif), on one line or continued.
  const std::string n(1 << 20, '1');
  const std::string text = "#if LINUX_VERSION_CODE < KERNEL_VERSION(5,0,0)\nold();\n#endif /* " + n +
                           " */\n#if defined(A) || \\\n" + n + "\nx();\n#endif\n";
  auto dead = propose::version_dead_lines(text, (6 << 16) + (1 << 8));
  ASSERT_EQ(dead.size(), 7u);
  EXPECT_TRUE(dead[1]);
  EXPECT_FALSE(dead[5]);
  propose::ExtractStats st;
  propose::extract_version_blocks(text, st);
  EXPECT_EQ(st.conditionals, 1);
}

TEST(VersionCond, OneReaderOfKernelVersionNumbers) {
  auto r = core::release_numbers("6.12.117+deb12-amd64");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->count, 3);
  EXPECT_EQ(r->line(), "6.12");
  EXPECT_EQ(r->code(), (6 << 16) + (12 << 8) + 117);
  EXPECT_EQ(r->used, 8u);
  EXPECT_EQ(core::release_numbers("5.10.300")->code(), (5 << 16) + (10 << 8) + 255) << "patch capped as KERNEL_VERSION caps it";
  r = core::release_numbers("6.4");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->count, 2);
  EXPECT_EQ(r->used, 3u);
  r = core::release_numbers("6.");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->count, 1);
  EXPECT_EQ(r->used, 1u);
  EXPECT_FALSE(core::release_numbers("v6.1"));
  EXPECT_FALSE(core::release_numbers(""));
  EXPECT_FALSE(core::release_numbers("99999999999.1")) << "absurd numbers are no version, never an overflow";
  // Its users agree: the compat KB's versions, a kernel's code, a rule file's scope.
  EXPECT_EQ(propose::parse_kversion("6.12.117+deb12-amd64").str(), "6.12.117");
  EXPECT_EQ(propose::parse_kversion("junk").str(), "0.0.0");
  core::Kernel k;
  k.release = "6.1.0-57-amd64";
  EXPECT_EQ(k.version_code(), (6 << 16) + (1 << 8));
  k.release = "host";
  EXPECT_EQ(k.version_code(), 0);
}
