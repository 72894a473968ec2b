// libFuzzer target: the C reader every proposer shares, on arbitrary driver source.
#include "autodriver/propose/shared/c_tokens.hpp"

#include <cstdint>
#include <string_view>

using namespace autodriver::propose;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view src(reinterpret_cast<const char*>(data), size);
  auto toks = tokenize(src);
  (void)first_branch_mask(toks);
  (void)includes_of(toks);
  for (const auto& u : find_units(toks)) {
    if (u.kind == UnitKind::initializer) (void)designated_members(toks, u);
    if (u.last < toks.size()) (void)find_calls(toks, u.first, u.last);
  }
  for (std::size_t i = 0; i < toks.size() && i < 64; ++i)
    if (toks[i].text == "(" || toks[i].text == "{" || toks[i].text == "[") (void)matching_close(toks, i);
  if (!toks.empty()) (void)type_key(toks, 0, toks.size() - 1);
  (void)changed_functions(src, src.substr(0, src.size() / 2));
  return 0;
}
