// Sparse findings told apart from gcc's, on real C=2 builds of 6.1 drivers.

#include "autodriver/gate/gcc_parser.hpp"
#include "autodriver/gate/sparse_parser.hpp"
#include "fixtures.hpp"

using namespace autodriver;

TEST(Sparse, SubtractsGccAndBaseline) {
  core::Diagnostic gcc_warn;
  gcc_warn.file = "a.c";
  gcc_warn.line = 3;
  gcc_warn.column = 1;
  gcc_warn.message = "unused variable 'x'";
  core::Diagnostic sp = gcc_warn;
  sp.line = 10;
  sp.message = "symbol 'foo' was not declared. Should it be static?";
  auto only = gate::sparse_only({gcc_warn, sp}, {gcc_warn});
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].tool, "sparse");
  EXPECT_EQ(only[0].kind, core::DiagKind::sparse);
  core::Diagnostic moved = only[0];
  moved.line = 42; // an edit moved it: still the baseline's finding
  EXPECT_TRUE(gate::new_findings({moved}, only).empty());
  core::Diagnostic fresh = moved;
  fresh.message = "incorrect type in assignment (different address spaces)";
  EXPECT_EQ(gate::new_findings({moved, fresh}, only).size(), 1u);
}

TEST(Sparse, RealViaVelocityFindings) {
  gate::ParseOptions o;
  auto c2 = gate::parse_build_output(fixture("sparse/6.1-via-velocity-C2.txt"), o);
  auto plain = gate::parse_build_output(fixture("sparse/6.1-via-velocity-plain.txt"), o);
  auto only = gate::sparse_only(c2, plain);
  int warnings = 0;
  bool address_space = false;
  for (const auto& d : only) {
    warnings += d.severity == core::Severity::warning;
    if (d.message.find("different address spaces") != std::string::npos) address_space = true;
  }
  EXPECT_EQ(warnings, 16);
  EXPECT_TRUE(address_space);
}

TEST(Sparse, MixedOutputKeepsOnlySparseLines) {
  gate::ParseOptions o;
  auto all = gate::parse_build_output(fixture("sparse/6.12-testmod-gcc-sparse-modpost-mixed.txt"), o);
  // The plain build's lines are gcc's -Wmissing-prototypes warnings; the sparse ones say "static".
  std::vector<core::Diagnostic> gcc;
  for (const auto& d : all)
    if (d.message.find("no previous prototype") != std::string::npos) gcc.push_back(d);
  ASSERT_FALSE(gcc.empty());
  auto only = gate::sparse_only(all, gcc);
  ASSERT_FALSE(only.empty());
  for (const auto& d : only) EXPECT_NE(d.message.find("Should it be static"), std::string::npos) << d.message;
}
