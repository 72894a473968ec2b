// libFuzzer target: the one C reader (csrc) that proposers and the integrity gate share, on
// arbitrary driver source.
#include "autodriver/csrc/scan.hpp"
#include "autodriver/csrc/tokens.hpp"

#include <cstdint>
#include <string_view>

using namespace autodriver::csrc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view src(reinterpret_cast<const char*>(data), size);
  auto lexed = lex(src);
  for (const auto& c : lexed.comments)
    if (c.begin > c.end || c.end > src.size()) __builtin_trap();
  const auto& toks = lexed.tokens;
  (void)first_branch_mask(toks);
  (void)includes_of(toks);
  for (const auto& u : find_units(toks)) {
    if (u.kind == UnitKind::initializer) (void)designated_members(toks, u);
    if (u.last < toks.size()) (void)find_calls(toks, u.first, u.last);
    if (u.kind == UnitKind::function && u.body < toks.size() && toks[u.body].text == "{")
      for (auto [a, b] : block_statements(toks, u.body))
        if (a > b || b >= toks.size()) __builtin_trap();
  }
  for (std::size_t i = 0; i < toks.size() && i < 64; ++i)
    if (toks[i].text == "(" || toks[i].text == "{" || toks[i].text == "[") (void)matching_close(toks, i);
  if (!toks.empty()) (void)type_key(toks, 0, toks.size() - 1);
  (void)changed_functions(src, src.substr(0, src.size() / 2));
  auto f = scan(src);
  if (f.code.size() != f.raw.size() || f.comment.size() != f.raw.size() || f.preproc.size() != f.raw.size()) __builtin_trap();
  (void)member_assignments(f);
  return 0;
}
