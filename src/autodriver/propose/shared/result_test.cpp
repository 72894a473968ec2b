#include "autodriver/propose/shared/result_test.hpp"

#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"

#include <fmt/format.h>

namespace autodriver::propose {

using csrc::Token;
using csrc::TokKind;

namespace {

bool is(const std::vector<Token>& t, std::size_t i, std::string_view s) {
  return i < t.size() && t[i].kind != TokKind::string && t[i].kind != TokKind::chr && t[i].text == s;
}

std::string joined(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  std::vector<std::string> ws;
  for (std::size_t k = b; k < e; ++k) ws.push_back(t[k].text);
  return join_c_tokens(ws);
}

/// The expressions `... = A = B = name(` assigns, read backwards from the `=` before the call.
std::vector<std::string> assigned(const std::vector<Token>& t, std::size_t eq) {
  std::vector<std::string> out;
  for (;;) {
    std::size_t b = eq;
    while (b > 0) {
      const auto& p = t[b - 1];
      if (p.kind == TokKind::pp_line || is(t, b - 1, ";") || is(t, b - 1, "{") || is(t, b - 1, "}") || is(t, b - 1, "=") ||
          is(t, b - 1, ","))
        break;
      --b;
    }
    if (b == eq) break;
    out.push_back(joined(t, b, eq));
    if (b == 0 || !is(t, b - 1, "=")) break;
    eq = b - 1;
  }
  return out;
}

} // namespace

std::vector<ResultCheck> result_checks(const std::vector<Token>& t, const std::string& name) {
  std::vector<ResultCheck> out;
  if (t.empty()) return out;
  for (const auto& c : csrc::find_calls(t, 0, t.size() - 1)) {
    if (c.callee != name || c.name_tok == 0 || !is(t, c.name_tok - 1, "=")) continue;
    auto vars = assigned(t, c.name_tok - 1);
    std::size_t k = c.close_tok + 1;
    if (vars.empty() || !is(t, k, ";") || !is(t, k + 1, "if") || !is(t, k + 2, "(")) continue;
    std::size_t b = k + 3, e = csrc::matching_close(t, k + 2); // the condition is [b, e)
    if (e == std::string::npos) continue;
    if ((is(t, b, "unlikely") || is(t, b, "likely")) && is(t, b + 1, "(") && csrc::matching_close(t, b + 1) == e - 1) b += 2, --e;
    if (b >= e || t[b].line != t[e - 1].line) continue;
    std::string cond = joined(t, b, e);
    for (const auto& v : vars) {
      ResultTest test;
      if (cond == "IS_ERR(" + v + ")") test = ResultTest::is_err;
      else if (cond == "!" + v || cond == "!(" + v + ")" || cond == v + " == NULL" || cond == "NULL == " + v)
        test = ResultTest::null;
      else continue;
      out.push_back({test, v, t[b].line, t[b].begin, t[e - 1].end});
      break;
    }
  }
  return out;
}

std::string result_test_text(ResultTest t, const std::string& var) {
  return t == ResultTest::is_err ? "IS_ERR(" + var + ")" : "!" + var;
}

std::optional<Edit> result_follow_up(TargetIndex& idx, const std::filesystem::path& tree, const std::string& driver_name,
                                     const std::string& target_name, const std::string& change_id) {
  struct Found {
    std::string rel, text;
    std::vector<ResultCheck> checks;
  };
  std::vector<Found> found;
  for (auto& [rel, text] : sources_mentioning(tree, driver_name)) {
    if (!rel.ends_with(".c")) continue;
    auto checks = result_checks(csrc::tokenize(text), driver_name);
    if (!checks.empty()) found.push_back({std::move(rel), std::move(text), std::move(checks)});
  }
  if (found.empty()) return std::nullopt;
  auto counts = idx.result_tests(target_name);
  const int total = counts.is_err + counts.null;
  if (total < 3) return std::nullopt;
  ResultTest want;
  if (counts.null * 10 <= total) want = ResultTest::is_err;
  else if (counts.is_err * 10 <= total) want = ResultTest::null;
  else return std::nullopt;
  Edit r;
  for (const auto& f : found)
    for (const auto& c : f.checks) {
      if (c.test == want) continue;
      std::size_t bol = f.text.rfind('\n', c.begin);
      bol = bol == std::string::npos ? 0 : bol + 1;
      std::size_t eol = f.text.find('\n', c.end);
      eol = eol == std::string::npos ? f.text.size() : eol;
      std::string line = f.text.substr(bol, c.begin - bol) + result_test_text(want, c.var) + f.text.substr(c.end, eol - c.end);
      r.text_edits.push_back({f.rel, c.line, 1, line + "\n", std::nullopt});
    }
  if (r.text_edits.empty()) return std::nullopt;
  r.proposer = "target-api";
  r.change_id = "result:" + target_name;
  r.label = "result-test-changed";
  r.title = fmt::format("{}()'s result tested as the target's callers test it", target_name);
  r.description = fmt::format("{} changed in the target. The target's callers test its result with {} ({} of {} tests), so "
                              "the driver's tests follow.",
                              driver_name == target_name ? driver_name : driver_name + " -> " + target_name,
                              want == ResultTest::is_err ? "IS_ERR()" : "a NULL check",
                              want == ResultTest::is_err ? counts.is_err : counts.null, total);
  r.symbols = {target_name};
  r.support = 1;
  r.rank = 0;
  r.follows = change_id;
  return r;
}

} // namespace autodriver::propose
