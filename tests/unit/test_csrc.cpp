// The one C reader (csrc): the lexer both the proposers' tokens and the integrity gate's line view
// are read from.
#include "autodriver/csrc/scan.hpp"
#include "autodriver/csrc/tokens.hpp"

#include <gtest/gtest.h>

using namespace autodriver;

namespace {

std::vector<std::string> texts(const std::vector<csrc::Token>& toks) {
  std::vector<std::string> out;
  for (const auto& t : toks) out.push_back(t.text);
  return out;
}

} // namespace

TEST(CsrcLex, CommentsInsideDirectivesAreCommentsAndLiteralsAreNot) {
  std::string src = "#define URL \"http://x\" /* a */ // b\nint x; // c\n#error don't /* d */\n";
  auto lexed = csrc::lex(src);
  ASSERT_EQ(lexed.tokens.size(), 5u);
  EXPECT_EQ(lexed.tokens[0].kind, csrc::TokKind::pp_line);
  EXPECT_EQ(lexed.tokens[0].text, "#define URL \"http://x\" /* a */ // b");
  EXPECT_EQ(lexed.tokens[4].kind, csrc::TokKind::pp_line);
  EXPECT_EQ(lexed.tokens[4].line, 3);
  std::vector<std::string> comments;
  for (const auto& c : lexed.comments) comments.push_back(src.substr(c.begin, c.end - c.begin));
  // As cpp lexes it: the unterminated ' of "don't" runs to the end of the line, /* d */ with it.
  EXPECT_EQ(comments, (std::vector<std::string>{"/* a */", "// b", "// c"}));
}

TEST(CsrcLex, DirectiveContinuesOverBackslashWithTrailingBlanks) {
  auto toks = csrc::tokenize("#define A(x) \\  \n\tdo { } while (0)\nint y;\n");
  ASSERT_FALSE(toks.empty());
  EXPECT_EQ(toks[0].kind, csrc::TokKind::pp_line);
  EXPECT_NE(toks[0].text.find("while (0)"), std::string::npos);
  EXPECT_EQ(texts(std::vector<csrc::Token>(toks.begin() + 1, toks.end())), (std::vector<std::string>{"int", "y", ";"}));
  EXPECT_EQ(toks[1].line, 3);
}

TEST(CsrcLex, LineNumbersCountSplicedLiteralsAndMultiLineComments) {
  auto toks = csrc::tokenize("char *s = \"a\\\nb\";\n/* one\ntwo */ int z;\n");
  ASSERT_GE(toks.size(), 7u);
  EXPECT_EQ(toks[4].kind, csrc::TokKind::string);
  EXPECT_EQ(toks[4].text, "\"a\\\nb\"");
  EXPECT_EQ(toks[6].text, "int");
  EXPECT_EQ(toks[6].line, 4);
}

TEST(CsrcLex, DirectiveAfterAMultiLineCommentStartsAtLineStart) {
  auto toks = csrc::tokenize("int a; /* x\n */ #define B 1\n");
  ASSERT_EQ(toks.size(), 4u);
  EXPECT_EQ(toks[3].kind, csrc::TokKind::pp_line);
  EXPECT_EQ(toks[3].line, 2);
}

TEST(CsrcScan, LineViewIsReadFromTheLexer) {
  auto f = csrc::scan("#if A /* on */\nint f(void) { // one\n#else\nint f(int a) {\n#endif\n"
                      "  return \"}\"[0]; }\nint g;\n");
  ASSERT_EQ(f.line_count(), 8);
  EXPECT_TRUE(f.is_preproc(1));
  EXPECT_EQ(f.comment_line(1), " on ");
  EXPECT_EQ(f.comment_line(2), " one");
  EXPECT_EQ(f.code_line(1), "#if A         ");
  EXPECT_EQ(f.code_line(6), "  return \" \"[0]; }");
  EXPECT_FALSE(f.is_preproc(4));
  // The #else branch's '{' repeats the first branch's: f and g are two items, f balanced.
  ASSERT_TRUE(f.balanced);
  ASSERT_EQ(f.items.size(), 2u);
  EXPECT_EQ(f.items[0].name, "f");
  EXPECT_EQ(f.items[1].name, "g");
}

TEST(CsrcScan, AFunctionNamedWithLeadingUnderscoresIsNamed) {
  // `__acquires(x)` beside a name is an attribute; alone, `__ei_close` is the function's own name.
  auto f = csrc::scan("static int __ei_close(struct net_device *dev)\n{\n\treturn 0;\n}\n"
                      "static void g(struct s *p) __acquires(p->lock)\n{\n}\n");
  ASSERT_EQ(f.items.size(), 2u);
  EXPECT_EQ(f.items[0].name, "__ei_close");
  EXPECT_EQ(f.items[1].name, "g");
  EXPECT_EQ(f.item_at(3)->name, "__ei_close");
}

TEST(CsrcScan, UnterminatedCommentAndJunkNeverThrow) {
  auto f = csrc::scan(std::string("#define X /* open\nint \xff\x00 y;\n\"", 28));
  EXPECT_EQ(f.line_count(), 3);
  EXPECT_TRUE(f.is_preproc(1));
  EXPECT_FALSE(f.has_code(2)); // still inside the comment
}

TEST(CsrcStatements, TheStatementsOfABlock) {
  const std::string src =
      "void f(int a)\n{\n\tint x = 1;\n\tif (a) {\n\t\tx = 2;\n\t} else\n\t\tx = 3;\n"
      "#ifdef Y\n\tdo { x++; } while (x < 5);\n#endif\nout:\n\tstruct s v = { .a = 1 };\n\tfor (;;) g();\n}\n";
  auto t = csrc::tokenize(src);
  std::size_t open = 0;
  while (t[open].text != "{") ++open;
  auto sts = csrc::block_statements(t, open);
  std::vector<std::pair<int, int>> lines;
  for (auto [a, b] : sts) lines.emplace_back(t[a].line, t[b].line);
  EXPECT_EQ(lines, (std::vector<std::pair<int, int>>{{3, 3}, {4, 7}, {9, 9}, {11, 11}, {12, 12}, {13, 13}}));
  EXPECT_EQ(t[sts[3].first].text, "out");
  // An unbalanced block has none.
  auto u = csrc::tokenize("void f(void)\n{\n\tif (x) {\n");
  std::size_t o = 0;
  while (u[o].text != "{") ++o;
  EXPECT_TRUE(csrc::block_statements(u, o).empty());
}

TEST(Csrc, AMacroDefinitionsNameParametersAndBody) {
  auto f = csrc::macro_definition("#  define p_free3(x, y)\tkzfree(x) /* y */");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->name, "p_free3");
  EXPECT_EQ(f->params, (std::set<std::string>{"x", "y"}));
  EXPECT_EQ(std::string("#  define p_free3(x, y)\tkzfree(x) /* y */").substr(f->body_offset), "\tkzfree(x) /* y */");
  auto o = csrc::macro_definition("#define p_kzfree kzfree");
  ASSERT_TRUE(o);
  EXPECT_EQ(o->name, "p_kzfree");
  EXPECT_TRUE(o->params.empty());
  EXPECT_EQ(std::string("#define p_kzfree kzfree").substr(o->body_offset), " kzfree");
  EXPECT_FALSE(csrc::macro_definition("#ifdef kzfree"));
  EXPECT_FALSE(csrc::macro_definition("#define f(x kzfree"));
  EXPECT_FALSE(csrc::macro_definition("int x;"));
}
