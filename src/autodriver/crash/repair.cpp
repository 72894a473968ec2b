#include "autodriver/crash/repair.hpp"

#include "autodriver/crash/alloc_size.hpp"
#include "autodriver/crash/lock.hpp"
#include "autodriver/crash/release.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

/// The statement starting on `line` that assigns `var`: its token range [first, last] (the ';').
std::optional<std::pair<std::size_t, std::size_t>> statement_at(const std::vector<csrc::Token>& t, int line,
                                                                const std::string& var) {
  if (t.empty()) return std::nullopt;
  if (var.find("->") != std::string::npos || var.find('.') != std::string::npos) {
    // A member path (`priv->ring = ...`): the statement on the line that assigns it.
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i].line != line) continue;
      auto [path, end] = csrc::object_path(t, i);
      if (path != var || end + 1 >= t.size() || t[end + 1].text != "=") continue;
      std::size_t b = i, e = end + 1;
      while (b > 0 && t[b - 1].text != ";" && t[b - 1].text != "{" && t[b - 1].text != "}") --b;
      while (e < t.size() && t[e].text != ";") ++e;
      if (e == t.size()) return std::nullopt;
      return std::make_pair(b, e);
    }
    return std::nullopt;
  }
  for (const auto& a : csrc::assignments_of(t, 0, t.size() - 1, var)) {
    if (t[a.var_tok].line != line || t[a.end_tok].text != ";") continue;
    std::size_t b = a.var_tok;
    while (b > 0 && t[b - 1].text != ";" && t[b - 1].text != "{" && t[b - 1].text != "}") --b;
    return std::make_pair(b, a.end_tok);
  }
  return std::nullopt;
}

/// The `if (...)` statement right after token `after` when its condition tests `var`: its last token.
std::optional<std::size_t> test_after(const std::vector<csrc::Token>& t, std::size_t after, const std::string& var) {
  std::size_t i = after + 1;
  if (i + 1 >= t.size() || t[i].text != "if" || t[i + 1].text != "(") return std::nullopt;
  std::size_t c = csrc::matching_close(t, i + 1);
  if (c == std::string::npos || c + 1 >= t.size()) return std::nullopt;
  bool tests = false;
  for (std::size_t k = i + 2; k < c; ++k) tests = tests || t[k].text == var || csrc::object_path(t, k).first == var;
  if (!tests) return std::nullopt;
  if (t[c + 1].text == "{") {
    std::size_t e = csrc::matching_close(t, c + 1);
    return e == std::string::npos ? std::nullopt : std::optional<std::size_t>(e);
  }
  for (std::size_t e = c + 1; e < t.size(); ++e)
    if (t[e].text == ";") return e;
  return std::nullopt;
}

std::string join_lines(const std::vector<std::string_view>& lines, bool final_newline) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    if (i + 1 < lines.size() || final_newline) out += "\n";
  }
  return out;
}

/// Tokens [first, last] are alone on their lines (no other token shares one of them).
bool alone_on_lines(const std::vector<csrc::Token>& toks, std::size_t first, std::size_t last) {
  for (std::size_t i = 0; i < toks.size(); ++i)
    if (toks[i].line >= toks[first].line && toks[i].line <= toks[last].line && (i < first || i > last)) return false;
  return true;
}

/// `text` without the lines `drop` names (1-based), its final newline kept as it was.
std::string without_lines(const std::string& text, const std::function<bool(int)>& drop) {
  auto lines = util::split_lines(text);
  std::vector<std::string_view> keep;
  for (int l = 1; l <= static_cast<int>(lines.size()); ++l)
    if (!drop(l)) keep.push_back(lines[static_cast<std::size_t>(l) - 1]);
  return join_lines(keep, !text.empty() && text.back() == '\n');
}

/// `text` with its lines [from, to] (1-based) moved to just before line `at`, or just after it with
/// `after`; its final newline kept as it was.
std::string with_lines_moved(const std::string& text, int from, int to, int at, bool after) {
  auto lines = util::split_lines(text);
  std::vector<std::string_view> keep;
  const auto moved = [&] {
    for (int m = from; m <= to; ++m) keep.push_back(lines[static_cast<std::size_t>(m) - 1]);
  };
  for (int l = 1; l <= static_cast<int>(lines.size()); ++l) {
    if (l == at && !after) moved();
    if (l < from || l > to) keep.push_back(lines[static_cast<std::size_t>(l) - 1]);
    if (l == at && after) moved();
  }
  return join_lines(keep, !text.empty() && text.back() == '\n');
}

/// A `goto` or a label in the top-level statements sts[first..last]: moving a statement across
/// them would change which paths run it.
bool jump_or_label_in(const std::vector<csrc::Token>& toks, const std::vector<std::pair<std::size_t, std::size_t>>& sts,
                      std::size_t first, std::size_t last) {
  for (std::size_t k = first; k <= last; ++k)
    for (std::size_t i = sts[k].first; i <= sts[k].second; ++i)
      if (toks[i].text == "goto" ||
          (i == sts[k].first && i + 1 <= sts[k].second && toks[i].kind == csrc::TokKind::ident && toks[i + 1].text == ":"))
        return true;
  return false;
}

/// The statement holding `line` starts on it (its first token is the line's first).
bool line_starts_statement(const std::vector<csrc::Token>& t, int line) {
  for (std::size_t i = 0; i < t.size(); ++i)
    if (t[i].line == line) return i == 0 || t[i - 1].text == ";" || t[i - 1].text == "{" || t[i - 1].text == "}";
  return false;
}

std::optional<RepairEdit> move_assignment(const Hypothesis& h, const std::string& text) {
  auto toks = csrc::tokenize(text);
  auto st = statement_at(toks, h.set_line, h.variable);
  if (!st || h.line >= h.set_line || !line_starts_statement(toks, h.line)) return std::nullopt;
  std::size_t last = st->second;
  if (auto test = test_after(toks, st->second, h.variable)) last = *test;
  const int from = toks[st->first].line, to = toks[last].line;
  // Whole lines only, and nothing the moved statements read may be assigned between the use and them.
  for (std::size_t k = st->first; k <= last; ++k)
    if (toks[k].kind == csrc::TokKind::ident && toks[k].text != h.variable)
      for (std::size_t j = 0; j + 1 < toks.size(); ++j)
        if (toks[j].line >= h.line && toks[j].line < from && toks[j].text == toks[k].text && toks[j + 1].text == "=" &&
            !(j > 0 && (toks[j - 1].text == "->" || toks[j - 1].text == ".")))
          return std::nullopt;
  for (std::size_t k = 0; k < toks.size(); ++k)
    if ((toks[k].line == from && k < st->first) || (toks[k].line == to && k > last)) return std::nullopt;
  RepairEdit e;
  e.kind = h.kind;
  e.file = h.file;
  e.new_text = with_lines_moved(text, from, to, h.line, false); // the moved lines first
  e.description = fmt::format("{}() used {} at {}:{} before setting it at line {}: the assignment{} moves before that use",
                              h.function, h.variable, h.file, h.line, h.set_line, to > from ? " and its test move" : " moves");
  e.evidence = h.evidence;
  return e;
}

std::optional<RepairEdit> add_test(const Hypothesis& h, const std::string& text, const fs::path& kernel_src) {
  auto toks = csrc::tokenize(text);
  auto st = statement_at(toks, h.set_line, h.variable);
  if (!st || h.callee.empty()) return std::nullopt;
  // The function holding it returns int (an error code), void or a pointer.
  std::string ret;
  for (const auto& u : csrc::find_units(toks))
    if (u.kind == csrc::UnitKind::function && u.first <= st->first && st->second <= u.last) ret = u.type;
  if (ret.empty()) return std::nullopt;
  auto how = failure_handling(kernel_src, h.callee);
  std::string value;
  if (ret.find('*') != std::string::npos) value = how.is_err ? fmt::format("ERR_CAST({})", h.variable) : "NULL";
  else if (std::regex_search(ret, std::regex(R"(\bvoid\b)"))) value = "";
  else if (std::regex_search(ret, std::regex(R"(\bint\b)")) && !how.error.empty())
    value = how.is_err ? fmt::format("PTR_ERR({})", h.variable) : how.error;
  else return std::nullopt;
  const int line = toks[st->second].line;
  for (std::size_t k = st->second + 1; k < toks.size() && toks[k].line == line; ++k) return std::nullopt; // ';' ends its line
  auto lines = util::split_lines(text);
  std::string first(lines[static_cast<std::size_t>(toks[st->first].line) - 1]);
  std::string indent = first.substr(0, first.find_first_not_of(" \t"));
  std::string test = how.is_err ? fmt::format("IS_ERR({})", h.variable) : "!" + h.variable;
  std::vector<std::string> keep;
  for (int l = 1; l <= static_cast<int>(lines.size()); ++l) {
    keep.emplace_back(lines[static_cast<std::size_t>(l) - 1]);
    if (l == line) {
      keep.push_back(indent + "if (" + test + ")");
      keep.push_back(indent + "\treturn" + (value.empty() ? "" : " " + value) + ";");
    }
  }
  std::vector<std::string_view> views(keep.begin(), keep.end());
  RepairEdit e;
  e.kind = h.kind;
  e.file = h.file;
  e.new_text = join_lines(views, !text.empty() && text.back() == '\n');
  e.description =
      fmt::format("{}() used the result of {}() unchecked ({}:{}): it is tested and {} returns {}{}", h.function, h.callee,
                  h.file, h.set_line, h.function, value.empty() ? "early" : value,
                  how.seen ? fmt::format(" (the value the target kernel's drivers return most often after testing {}(); {} "
                                         "tests read)",
                                         h.callee, how.seen)
                           : "");
  e.evidence = h.evidence;
  return e;
}

/// The release at `h.set_line` moves after the last statement of its function that still reads
/// the released object (or a pointer derived from it); whole lines only, top-level statements only.
/// With `to_end`, after the function's last top-level statement before its final `return`
/// instead: where the kernel's drivers release the object after everything else (free_netdev()),
/// a pointer into it the source does not show (`vi = netdev_priv(dev)` stored elsewhere) is
/// still used by the statements between. With `siblings`, the releases beside it that make the same
/// call on other members of the same object (`kfree(a->tx_ring); kfree(a->rx_ring);`: one step
/// undone by two lines) move with it, and nothing is offered when there are none.
std::optional<RepairEdit> move_release(const Hypothesis& h, const std::string& text, bool to_end = false, bool siblings = false) {
  auto toks = csrc::tokenize(text);
  for (const auto& u : csrc::find_units(toks)) {
    if (u.kind != csrc::UnitKind::function || toks[u.first].line > h.set_line || toks[u.last].line < h.set_line) continue;
    auto sts = csrc::block_statements(toks, block_holding(toks, u, h.set_line));
    std::size_t rel = sts.size();
    for (std::size_t k = 0; k < sts.size(); ++k)
      if (toks[sts[k].first].line == h.set_line) rel = k;
    if (rel == sts.size()) return std::nullopt;
    auto call = call_statement(toks, sts[rel].first, sts[rel].second);
    if (!call || call->var != h.variable) return std::nullopt;
    auto names = derived_names(toks, u, call->var);
    // A released member (`iounmap(hw->hw_addr)`) is also used by a call handed its object
    // (`e1000_phy_hw_reset(hw)` writes the registers through it).
    const std::string member = csrc::last_member(call->var);
    const std::string base =
        member.empty() || member == call->var
            ? ""
            : call->var.substr(0, call->var.size() - member.size() - (call->var.ends_with("->" + member) ? 2 : 1));
    const auto hands_base = [&](std::size_t k) {
      if (base.empty()) return false;
      for (const auto& c : csrc::find_calls(toks, sts[k].first, sts[k].second))
        for (std::size_t n = 0; n < c.arg_toks.size(); ++n)
          if (argument_path(toks, c, n) == base) return true;
      return false;
    };
    // The block of releases moved: the one found, and with `siblings` the same call on other members
    // of the same object right before and after it.
    std::size_t lo = rel, hi = rel;
    const auto sibling = [&](std::size_t k) {
      auto c = call_statement(toks, sts[k].first, sts[k].second);
      if (!c || c->callee != call->callee || base.empty()) return false;
      const std::string m = csrc::last_member(c->var);
      return !m.empty() && m != member && c->var == call->var.substr(0, call->var.size() - member.size()) + m;
    };
    if (siblings) {
      while (lo > 0 && sibling(lo - 1)) --lo;
      while (hi + 1 < sts.size() && sibling(hi + 1)) ++hi;
      if (lo == hi) return std::nullopt;
      for (std::size_t k = lo; k <= hi; ++k)
        if (auto c = call_statement(toks, sts[k].first, sts[k].second)) names.merge(derived_names(toks, u, c->var));
    }
    std::size_t last_use = hi;
    for (std::size_t k = hi + 1; k < sts.size(); ++k)
      if (to_end
              ? toks[sts[k].first].text != "return"
              : reads_any(toks, sts[k].first, sts[k].second, names) || hands_base(k) ||
                    (toks[sts[k].first].line <= h.line && h.line <= toks[sts[k].second].line)) // the use, or the call reaching it
        last_use = k;
    if (last_use == hi || toks[sts[last_use].first].text == "return") return std::nullopt;
    // A label or a jump between them would change which paths release.
    if (jump_or_label_in(toks, sts, lo + 1, last_use)) return std::nullopt;
    const int from = toks[sts[lo].first].line, to = toks[sts[hi].second].line, after = toks[sts[last_use].second].line;
    // Whole lines: nothing else on the releases' lines or after the last use on its line.
    if (!alone_on_lines(toks, sts[lo].first, sts[hi].second)) return std::nullopt;
    if (const std::size_t next = sts[last_use].second + 1; next < toks.size() && toks[next].line == after) return std::nullopt;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = with_lines_moved(text, from, to, after, true);
    e.description =
        to_end ? fmt::format("{}() released {} with {}() at {}:{} before using it: the release moves last in the function "
                             "(line {}), where the kernel's drivers call {}()",
                             h.function, h.variable, h.callee, h.file, from, after, h.callee)
               : fmt::format("{}() released {} with {}() at {}:{} before using it: the release moves after the last "
                             "statement that uses it (line {})",
                             h.function, h.variable, h.callee, h.file, from, after);
    if (hi > lo)
      e.description += fmt::format(", with the {} other {}() calls beside it on members of the same object (lines {}-{})",
                                   hi - lo, h.callee, from, to);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// The statement at `h.set_line` moves before the one at `h.line` (teardown-order: the later
/// setup step undone first); whole lines, top-level statements, no label or jump between.
std::optional<RepairEdit> move_before(const Hypothesis& h, const std::string& text) {
  auto toks = csrc::tokenize(text);
  for (const auto& u : csrc::find_units(toks)) {
    if (u.kind != csrc::UnitKind::function || toks[u.first].line > h.line || toks[u.last].line < h.line) continue;
    auto sts = csrc::block_statements(toks, u.body);
    std::size_t first = sts.size(), later = sts.size();
    for (std::size_t k = 0; k < sts.size(); ++k) {
      if (toks[sts[k].first].line == h.line) first = k;
      if (toks[sts[k].first].line == h.set_line) later = k;
    }
    if (first == sts.size() || later == sts.size() || later <= first) return std::nullopt;
    if (jump_or_label_in(toks, sts, first, later)) return std::nullopt;
    if (!alone_on_lines(toks, sts[later].first, sts[later].second) || !alone_on_lines(toks, sts[first].first, sts[first].second))
      return std::nullopt;
    const int from = toks[sts[later].first].line, to = toks[sts[later].second].line, before = toks[sts[first].first].line;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = with_lines_moved(text, from, to, before, false);
    e.description = fmt::format("{}() undid a setup step at {}:{} before {}() undid a later one: {}() moves before it",
                                h.function, h.file, before, h.callee, h.callee);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// The second of two identical call statements (the one the crash points at) goes.
std::optional<RepairEdit> drop_repeat(const Hypothesis& h, const std::string& text) {
  auto toks = csrc::tokenize(text);
  for (const auto& u : csrc::find_units(toks)) {
    if (u.kind != csrc::UnitKind::function || toks[u.first].line > h.line || toks[u.last].line < h.line) continue;
    auto rc = repeated_call(toks, u, h.line);
    if (!rc || rc->call.callee != h.callee || rc->call.var != h.variable) return std::nullopt;
    const int from = toks[rc->call.first].line, to = toks[rc->call.last].line;
    if (!alone_on_lines(toks, rc->call.first, rc->call.last)) return std::nullopt;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = without_lines(text, [&](int l) { return l >= from && l <= to; });
    e.description = fmt::format("{}() called {}({}) a second time at {}:{} (first at line {}): the second call goes", h.function,
                                h.callee, h.variable, h.file, from, rc->first_line);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// The object path whose last member is toks[i] (`adapter->` of `adapter->tx_ring`), "" when the
/// member is not reached through `->`/`.` from an identifier.
std::string member_base(const std::vector<csrc::Token>& toks, std::size_t i) {
  if (i < 2 || (toks[i - 1].text != "->" && toks[i - 1].text != ".") || toks[i - 2].kind != csrc::TokKind::ident) return "";
  return csrc::path_ending_at(toks, i - 2) + toks[i - 1].text;
}

/// A copy-pasted release (`kfree(a->x); kfree(a->x);` where the second meant `a->y`): deleting the
/// second call ends the crash and keeps the leak. The member the copied line should have named:
/// the one other member of the same object set from the same allocation call as x (`a->y =
/// kcalloc(...)` beside `a->x = kcalloc(...)`) that the function releasing x twice never releases;
/// else the one member the file sets from any call and never passes to the release. The second
/// call then releases it. nullopt when neither names exactly one.
std::optional<RepairEdit> retarget_repeat(const Hypothesis& h, const std::string& text) {
  if (h.variable.find_first_of(".-") == std::string::npos) return std::nullopt; // a member path only
  const std::string member = csrc::last_member(h.variable);
  if (member.empty()) return std::nullopt;
  const std::string base = h.variable.substr(0, h.variable.size() - member.size());
  auto toks = csrc::tokenize(text);
  const auto units = csrc::find_units(toks);
  const csrc::Unit* here = nullptr;
  for (const auto& u : units)
    if (u.kind == csrc::UnitKind::function && toks[u.first].line <= h.line && toks[u.last].line >= h.line) here = &u;
  if (!here) return std::nullopt;
  std::map<std::string, int> first_set;              // member -> line it is first set from a call
  std::map<std::string, std::set<std::string>> from; // member of `base` -> the calls it is set from
  for (std::size_t i = 1; i + 3 < toks.size(); ++i) {
    if (toks[i].kind != csrc::TokKind::ident || (toks[i - 1].text != "->" && toks[i - 1].text != ".")) continue;
    // `->y = f(` : y holds what a call returned.
    if (toks[i + 1].text == "=" && toks[i + 2].kind == csrc::TokKind::ident && toks[i + 3].text == "(") {
      first_set.emplace(toks[i].text, toks[i].line);
      if (member_base(toks, i) == base) from[toks[i].text].insert(toks[i + 2].text);
    }
  }
  std::set<std::string> released, released_here;
  for (const auto& u : units) {
    if (u.kind != csrc::UnitKind::function) continue;
    for (const auto& c : csrc::find_calls(toks, u.body, u.last))
      if (c.callee == h.callee && !c.arg_toks.empty()) {
        const auto [a, b] = c.arg_toks[0];
        if (b <= a || (toks[b - 1].text != "->" && toks[b - 1].text != ".")) continue;
        released.insert(toks[b].text);
        if (&u == here) released_here.insert(toks[b].text);
      }
  }
  std::vector<std::string> leaked;
  for (const auto& [m, calls] : from) {
    bool same_call = false;
    for (const auto& c : calls) same_call = same_call || from[member].count(c);
    if (m != member && same_call && !released_here.count(m)) leaked.push_back(m);
  }
  if (leaked.size() != 1) {
    leaked.clear();
    for (const auto& [m, line] : first_set)
      if (m != member && !released.count(m)) leaked.push_back(m);
  }
  if (leaked.size() != 1) return std::nullopt;
  auto rc = repeated_call(toks, *here, h.line);
  if (!rc || rc->call.callee != h.callee || rc->call.var != h.variable) return std::nullopt;
  // The member token of the second call's first argument.
  std::size_t at = rc->call.first + 2;
  while (at < rc->call.last && toks[at].text != member) ++at;
  if (at >= rc->call.last) return std::nullopt;
  RepairEdit e;
  e.kind = h.kind;
  e.file = h.file;
  e.new_text = text.substr(0, toks[at].begin) + leaked[0] + text.substr(toks[at].end);
  e.description = fmt::format("{}() called {}({}) a second time at {}:{} (first at line {}), and never releases {}{}, which "
                              "the driver sets from a call at line {}: the second call releases {}{} (a copied line that "
                              "kept the wrong member)",
                              h.function, h.callee, h.variable, h.file, rc->again_line, rc->first_line, base, leaked[0],
                              first_set[leaked[0]], base, leaked[0]);
  e.evidence = h.evidence;
  return e;
}

/// An allocation sized by its own pointer (`p = kcalloc(n, sizeof(p), ...)`) sized by what it
/// points to instead (`sizeof(*p)`). nullopt when the statement at the hypothesis's line is not one.
std::optional<RepairEdit> size_by_target(const Hypothesis& h, const std::string& text) {
  DriverFile f{h.file, csrc::tokenize(text), {}};
  f.units = csrc::find_units(f.toks);
  for (const auto& a : pointer_sized_allocs({f})) {
    if (a.line != h.set_line || a.target != h.variable) continue;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    if (a.star_at != std::string::npos) {
      // sizeof(T *) -> sizeof(T): the star and the blanks before it go.
      std::size_t from = a.star_at;
      while (from > a.size_at && (text[from - 1] == ' ' || text[from - 1] == '\t')) --from;
      e.new_text = text.substr(0, from) + text.substr(a.star_at + 1);
      e.description = fmt::format("{}() allocated {} with sizeof({}), the size of a pointer: its elements are sized by what "
                                  "it points to at {}:{}",
                                  h.function, h.variable, a.type, h.file, h.set_line);
    } else {
      e.new_text = text.substr(0, a.size_at) + "*" + text.substr(a.size_at);
      e.description = fmt::format("{}() allocated {} with sizeof({}), the size of a pointer: it is sized by what it points "
                                  "to (sizeof(*{})) at {}:{}",
                                  h.function, h.variable, h.variable, h.variable, h.file, h.set_line);
    }
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// The setter the driver never called (never-set) after the statement ending on `set_line`, with
/// the indentation of the value's assignment (`line`).
std::optional<RepairEdit> add_setter(const Hypothesis& h, const std::string& text) {
  const auto lines = util::split_lines(text);
  if (h.call.empty() || h.line <= 0 || h.set_line < h.line || static_cast<std::size_t>(h.set_line) > lines.size())
    return std::nullopt;
  const std::string_view made = lines[static_cast<std::size_t>(h.line) - 1];
  const std::string indent(made.substr(0, made.find_first_not_of(" \t")));
  std::vector<std::string_view> out(lines.begin(), lines.end());
  const std::string added = indent + h.call;
  out.insert(out.begin() + h.set_line, added);
  RepairEdit e;
  e.kind = h.kind;
  e.file = h.file;
  e.new_text = join_lines(out, text.ends_with('\n'));
  if (h.kind == "never-initialised")
    e.description = fmt::format("{}() makes the object and nothing initialises {}: {} goes after {}:{}", h.function, h.variable,
                                h.call, h.file, h.set_line);
  else
    e.description = h.callee.empty() ? fmt::format("{}() makes the object and nothing ever stores {}: {} goes after {}:{}",
                                                   h.function, h.variable, h.call, h.file, h.set_line)
                                     : fmt::format("{}() makes {} and nothing stores it for {}: {} goes after {}:{}", h.function,
                                                   h.variable, h.callee, h.call, h.file, h.set_line);
  e.evidence = h.evidence;
  return e;
}

/// The leading blanks of the line holding byte `at`.
std::string indent_at(const std::string& text, std::size_t at) {
  std::size_t b = text.rfind('\n', at == 0 ? 0 : at - 1);
  b = b == std::string::npos ? 0 : b + 1;
  std::size_t e = b;
  while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) ++e;
  return text.substr(b, e - b);
}

/// Where the release goes in `fn` for the exit at token `exit`: before the first statement
/// between the acquire and the exit (in the exit's block) that calls what the target kernel's
/// drivers never call with such a lock held (free_irq() after spin_lock_irqsave()); else before the
/// exit itself. The token to insert before, and the learned evidence (empty for the exit).
std::pair<std::size_t, std::string> release_point(const std::vector<csrc::Token>& toks, const csrc::Unit& fn, std::size_t exit,
                                                  const Hypothesis& h, const fs::path& kernel_src) {
  std::pair<std::size_t, std::string> at{exit, ""};
  if (kernel_src.empty() || exit == fn.last) return at;
  // The acquire on its line, and the pair it belongs to.
  std::optional<ScopedPair> pair;
  for (const auto& c : csrc::find_calls(toks, fn.body, fn.last))
    if (toks[c.name_tok].line == h.set_line && same_lock(lock_arg(c), h.variable)) {
      auto p = scoped_pair(kernel_src, c.callee);
      if (p.scoped() && p.release == h.callee) pair = p;
    }
  if (!pair) return at;
  std::size_t open = fn.body;
  for (std::size_t k = exit; k-- > fn.body;)
    if (toks[k].text == "{" && csrc::matching_close(toks, k) > exit) {
      open = k;
      break;
    }
  for (const auto& [first, last] : csrc::block_statements(toks, open)) {
    if (toks[first].line <= h.set_line || first >= exit) continue;
    for (const auto& c : csrc::find_calls(toks, first, last)) {
      auto u = under_lock(kernel_src, *pair, c.callee);
      if (!u.never_under()) continue;
      return {first, fmt::format("the target kernel's drivers call {}() with a {}() lock held in {} of {} calls", c.callee,
                                 pair->acquire, u.under, u.calls)};
    }
  }
  return at;
}

/// Missing unlock: the release the function makes on its other exits goes before the exit that
/// leaves the lock held, or before an earlier statement the kernel never runs under such a lock;
/// an unbraced `if (...) return x;` gets braces (kernel style).
std::optional<RepairEdit> add_release(const Hypothesis& h, const std::string& text, const fs::path& kernel_src) {
  if (h.call.empty()) return std::nullopt;
  auto toks = csrc::tokenize(text);
  for (const auto& u : csrc::find_units(toks)) {
    if (u.kind != csrc::UnitKind::function || u.name != h.function) continue;
    std::size_t exit = std::string::npos;
    for (std::size_t i = u.body; i <= u.last && i < toks.size(); ++i)
      if (toks[i].line == h.line && (toks[i].text == "return" || toks[i].text == "goto" || i == u.last)) {
        exit = i;
        break;
      }
    if (exit == std::string::npos) return std::nullopt;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.evidence = h.evidence;
    auto [before, why] = release_point(toks, u, exit, h, kernel_src);
    if (!why.empty()) e.evidence.push_back(why);
    const std::size_t at = toks[before].begin;
    const std::size_t control = before == u.last ? std::string::npos : unbraced_control(toks, before);
    if (control == std::string::npos) {
      std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
      line_start = line_start == std::string::npos ? 0 : line_start + 1;
      std::string ind = indent_at(text, at);
      // Only blanks before it on its line: a line of its own above it; else before it on the line.
      bool own_line = text.find_first_not_of(" \t", line_start) == at;
      if (before == u.last) ind += "\t";
      e.new_text = own_line ? text.substr(0, line_start) + ind + h.call + ";\n" + text.substr(line_start)
                            : text.substr(0, at) + h.call + "; " + text.substr(at);
    } else {
      std::size_t semi = before;
      while (semi < u.last && toks[semi].text != ";") ++semi;
      const std::string outer = indent_at(text, toks[control].begin);
      const std::string inner = outer + "\t";
      e.new_text = text.substr(0, toks[control].end) + " {\n" + inner + h.call + ";\n" + inner +
                   text.substr(at, toks[semi].end - at) + "\n" + outer + "}" + text.substr(toks[semi].end);
    }
    const std::string where = before == exit
                                  ? (exit == u.last ? std::string("the end of the function") : "the " + toks[exit].text)
                                  : fmt::format("line {} ({})", toks[before].line, why);
    e.description = h.kind == "missing-cleanup"
                        ? fmt::format("{}() failed at {}:{} without undoing line {}: {} added before {}", h.function, h.file,
                                      h.line, h.set_line, h.call, where)
                        : fmt::format("{}() left {} held at {}:{} (taken at line {}): {} added before {}", h.function,
                                      h.variable.empty() ? "a lock" : h.variable, h.file, h.line, h.set_line, h.call, where);
    return e;
  }
  return std::nullopt;
}

} // namespace

FailureHandling failure_handling(const fs::path& kernel_src, const std::string& callee) {
  FailureHandling out;
  static const std::regex k_name(R"(^[A-Za-z_]\w*$)");
  if (kernel_src.empty() || !std::regex_match(callee, k_name)) return out;
  // The kernel's drivers that call it; in each, an assignment of its result and the test and
  // return on the three lines after it.
  auto files = kernel::c_files_naming(kernel_src, callee, kernel::k_driver_dirs, std::chrono::seconds(120));
  if (files.size() > 3000) files.resize(3000);
  const std::regex assign("(\\w+)\\s*=\\s*(?:\\([^)]*\\)\\s*)?" + callee + "\\s*\\(");
  const std::regex ret(R"(return\s+(-E[A-Z0-9]+)\s*;)");
  std::map<std::string, int> errors;
  int is_err = 0, null_tests = 0;
  // The tests of one variable name, compiled once per name (drivers reuse a few: ret, priv, dev).
  struct Tests {
    std::regex is_err, null;
  };
  std::map<std::string, Tests> tests_of;
  auto tests_for = [&](const std::string& x) -> const Tests& {
    auto it = tests_of.find(x);
    if (it == tests_of.end())
      it = tests_of
               .emplace(x, Tests{std::regex("if\\s*\\(\\s*IS_ERR(_OR_NULL)?\\s*\\(\\s*" + x + "\\s*\\)"),
                                 std::regex("if\\s*\\(\\s*(!\\s*" + x + "\\b|" + x + "\\s*==\\s*NULL)")})
               .first;
    return it->second;
  };
  for (const auto& rel : files) {
    auto text = util::read_file(kernel_src / rel);
    if (!text) continue;
    auto lines = util::split_lines(*text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].find(callee) == std::string_view::npos) continue;
      std::smatch m;
      std::string l(lines[i]);
      if (!std::regex_search(l, m, assign)) continue;
      const std::string x = m[1].str();
      int tested = 0;
      for (std::size_t j = i + 1; j < lines.size() && j <= i + 3; ++j) {
        std::string t(lines[j]);
        if (t.find(x) == std::string::npos && !tested) continue;
        if (!tested) {
          const Tests& re = tests_for(x);
          if (std::regex_search(t, re.is_err)) tested = 2;
          else if (std::regex_search(t, re.null)) tested = 1;
          if (!tested) break;
          (tested == 2 ? is_err : null_tests)++;
        }
        std::smatch r;
        if (std::regex_search(t, r, ret)) {
          ++errors[r[1].str()];
          break;
        }
      }
    }
  }
  out.is_err = is_err > null_tests;
  out.seen = is_err + null_tests;
  int best = 0;
  for (const auto& [e, n] : errors)
    if (n > best) best = n, out.error = e;
  return out;
}

/// Missing teardown: the call the kernel's drivers make (h.call, with the teardown function's own
/// names) goes first in the teardown function, after its declarations (line h.line).
std::optional<RepairEdit> add_teardown(const Hypothesis& h, const std::string& text) {
  if (h.call.empty() || h.line <= 0) return std::nullopt;
  auto lines = util::split_lines(text);
  if (static_cast<std::size_t>(h.line) > lines.size()) return std::nullopt;
  // The indentation of the statement it goes before (or of the last declaration before it).
  std::string like(lines[static_cast<std::size_t>(h.line) - 1]);
  if (like.find_first_not_of(" \t") == std::string::npos || util::trim(like) == "}")
    like = std::string(lines[static_cast<std::size_t>(h.line) - 2]);
  std::string indent = like.substr(0, like.find_first_not_of(" \t"));
  if (util::trim(like) == "{" || util::trim(like) == "}") indent += "\t"; // an empty body
  std::vector<std::string> keep;
  for (int l = 1; l <= static_cast<int>(lines.size()); ++l) {
    if (l == h.line) keep.push_back(indent + h.call + ";");
    keep.emplace_back(lines[static_cast<std::size_t>(l) - 1]);
  }
  std::vector<std::string_view> views(keep.begin(), keep.end());
  RepairEdit e;
  e.kind = h.kind;
  e.file = h.file;
  e.new_text = join_lines(views, !text.empty() && text.back() == '\n');
  e.description = fmt::format("{}() did not end what line {} began: {} goes first in it (as the kernel's drivers tear it down)",
                              h.function, h.set_line, h.call);
  e.evidence = h.evidence;
  return e;
}

/// managed-release: the release at h.line of an object the driver core frees itself goes, and so
/// does every other release of that object by the same call in the file (probe's error path freeing
/// it too: devm_free.cocci's bug again), matched as managed_release matched it: a member path by its
/// last member, a variable by its declared type. A release right after a label that ends its block
/// stays (the label needs a statement).
std::optional<RepairEdit> drop_managed_release(const Hypothesis& h, const std::string& text) {
  auto toks = csrc::tokenize(text);
  const auto units = csrc::find_units(toks);
  const bool member = h.variable.find_first_of(".-") != std::string::npos;
  std::string key;
  for (const auto& u : units)
    if (u.kind == csrc::UnitKind::function && toks[u.first].line <= h.line && h.line <= toks[u.last].line)
      key = member ? csrc::last_member(h.variable) : csrc::declared_type(toks, u, h.variable);
  if (key.empty()) return std::nullopt;
  std::set<int> dropped; // every line of the statements that go
  std::vector<std::pair<int, std::string>> also;
  bool at_line = false;
  for (const auto& u : units) {
    if (u.kind != csrc::UnitKind::function) continue;
    for (std::size_t i = u.body + 1; i + 1 < u.last; ++i) {
      const auto& prev = toks[i - 1].text;
      if (toks[i].text != h.callee || toks[i + 1].text != "(" || (prev != ";" && prev != "{" && prev != "}" && prev != ":"))
        continue;
      const std::size_t close = csrc::matching_close(toks, i + 1);
      if (close == std::string::npos || close + 2 >= u.last + 1 || toks[close + 1].text != ";") continue;
      auto c = call_statement(toks, i, close + 1);
      if (!c) continue;
      const bool c_member = c->var.find_first_of(".-") != std::string::npos;
      const bool same =
          member ? c_member && csrc::last_member(c->var) == key : !c_member && csrc::declared_type(toks, u, c->var) == key;
      if (!same || (prev == ":" && toks[close + 2].text == "}")) continue;
      const int first = toks[i].line, last = toks[close + 1].line;
      if (!alone_on_lines(toks, i, close + 1)) continue;
      for (int l = first; l <= last; ++l) dropped.insert(l);
      at_line = at_line || first == h.line;
      if (first != h.line) also.emplace_back(first, u.name);
    }
  }
  if (!at_line) return std::nullopt;
  RepairEdit e;
  e.kind = h.kind;
  e.file = h.file;
  e.new_text = without_lines(text, [&](int l) { return dropped.count(l) > 0; });
  e.description = fmt::format("the driver no longer releases {} itself ({}() at {}:{}{}): the driver core releases what line "
                              "{} allocated when the driver unbinds",
                              h.variable, h.callee, h.file, h.line,
                              dropped.size() > 1 ? fmt::format(" and {} more line(s)", dropped.size() - 1) : "", h.set_line);
  e.evidence = h.evidence;
  e.also = std::move(also);
  return e;
}

/// loop-bound: the loop's condition at h.line (`i <= 3`) becomes h.call (`i < 3`).
std::optional<RepairEdit> bound_loop(const Hypothesis& h, const std::string& text) {
  auto t = csrc::tokenize(text);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].line != h.line || t[i].text != "for" || t[i + 1].text != "(") continue;
    const std::size_t close = csrc::matching_close(t, i + 1);
    std::size_t semi = i + 2;
    while (semi < close && t[semi].text != ";") ++semi;
    std::size_t semi2 = semi + 1;
    while (semi2 < close && t[semi2].text != ";") ++semi2;
    if (close == std::string::npos || semi2 >= close || semi + 1 >= semi2 || t[semi + 1].text != h.callee) return std::nullopt;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = text.substr(0, t[semi + 1].begin) + h.call + text.substr(t[semi2 - 1].end);
    e.description = fmt::format("the loop at {}:{} stops inside {}: {}", h.file, h.line, h.variable, h.call);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// sleep-in-atomic: the statement at h.line (a call of h.callee, which sleeps) moves to just after
/// the statement giving back the lock it was called under (h.call), both statements of one block
/// with no label or jump between. Not when the target kernel's own drivers do call h.callee with
/// such a lock held (then holding it is no fault of the statement).
std::optional<RepairEdit> move_after_release(const Hypothesis& h, const std::string& text, const fs::path& kernel_src) {
  const std::string release(util::trim(h.call.substr(0, h.call.find('('))));
  const auto same_lock_text = [&](const csrc::Call& c) {
    std::string a = lock_arg(c), b = h.variable;
    std::erase(a, ' ');
    std::erase(b, ' ');
    return a == b;
  };
  auto toks = csrc::tokenize(text);
  for (const auto& u : csrc::find_units(toks)) {
    if (u.kind != csrc::UnitKind::function || toks[u.first].line > h.line || toks[u.last].line < h.line) continue;
    if (!kernel_src.empty())
      for (const auto& c : csrc::find_calls(toks, u.body, u.last))
        if (toks[c.name_tok].line == h.set_line && same_lock_text(c)) {
          auto under = under_lock(kernel_src, scoped_pair(kernel_src, c.callee), h.callee);
          if (under.calls >= 8 && under.under * 50 > under.calls) return std::nullopt;
          break;
        }
    auto sts = csrc::block_statements(toks, block_holding(toks, u, h.line));
    std::size_t sleep = sts.size(), back = sts.size();
    for (std::size_t k = 0; k < sts.size(); ++k) {
      if (toks[sts[k].first].line == h.line && sleep == sts.size()) sleep = k;
      if (sleep < sts.size() && k > sleep && back == sts.size())
        for (const auto& c : csrc::find_calls(toks, sts[k].first, sts[k].second))
          if (c.callee == release && same_lock_text(c)) back = k;
    }
    if (sleep == sts.size() || back == sts.size() || jump_or_label_in(toks, sts, sleep, back)) return std::nullopt;
    if (!alone_on_lines(toks, sts[sleep].first, sts[sleep].second)) return std::nullopt;
    const int from = toks[sts[sleep].first].line, to = toks[sts[sleep].second].line, after = toks[sts[back].second].line;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = with_lines_moved(text, from, to, after, true);
    e.description = fmt::format("{}() called {}(), which sleeps, at {}:{} while holding {}: the call moves after {}() gives "
                                "the lock back (line {})",
                                h.function, h.callee, h.file, from, h.variable, release, after);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// foreign-release: the call of h.callee on h.line releasing member h.variable becomes h.call,
/// the release the kernel's drivers use for the allocator the driver took it from.
std::optional<RepairEdit> release_as_allocated(const Hypothesis& h, const std::string& text) {
  auto toks = csrc::tokenize(text);
  for (const auto& c : csrc::find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1)) {
    if (toks[c.name_tok].line != h.line || c.callee != h.callee) continue;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = text.substr(0, toks[c.name_tok].begin) + h.call + text.substr(toks[c.name_tok].end);
    e.description = fmt::format("{}() released {} with {}() at {}:{}: the memory came from an allocator whose memory the "
                                "kernel's drivers give back with {}()",
                                h.function, h.variable, h.callee, h.file, h.line, h.call);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

/// buffer-size: the declared size of array h.variable on h.line becomes h.call, enough for the
/// longest write into it.
std::optional<RepairEdit> resize_array(const Hypothesis& h, const std::string& text) {
  auto toks = csrc::tokenize(text);
  for (std::size_t i = 0; i + 2 < toks.size(); ++i) {
    if (toks[i].line != h.line || toks[i].text != h.variable || toks[i + 1].text != "[") continue;
    const std::size_t close = csrc::matching_close(toks, i + 1);
    if (close == std::string::npos || close < i + 3) return std::nullopt;
    RepairEdit e;
    e.kind = h.kind;
    e.file = h.file;
    e.new_text = text.substr(0, toks[i + 2].begin) + h.call + text.substr(toks[close - 1].end);
    e.description = fmt::format("{}() declared {} too small for what {}() writes into it at line {}: it gets {} bytes",
                                h.function, h.variable, h.callee, h.set_line, h.call);
    e.evidence = h.evidence;
    return e;
  }
  return std::nullopt;
}

std::vector<RepairEdit> propose_repairs(const std::vector<Hypothesis>& hyps, const fs::path& tree, const fs::path& kernel_src) {
  std::vector<RepairEdit> out;
  for (const auto& h : hyps) {
    // A lock taken without an argument has no variable (missing-unlock, double-acquire); every other class names one.
    if (h.file.empty() || h.set_line <= 0 || (h.variable.empty() && h.kind != "missing-unlock" && h.kind != "double-acquire"))
      continue;
    auto text = util::read_file(tree / h.file);
    if (!text) continue;
    std::optional<RepairEdit> e;
    if (h.kind == "use-before-set") e = move_assignment(h, *text);
    else if (h.kind == "use-after-release") {
      // The releases of one step together first (two rings freed by two lines), then the one alone.
      if (auto block = move_release(h, *text, false, true); block && block->new_text != *text) out.push_back(std::move(*block));
      e = move_release(h, *text);
      // Released last by the kernel's drivers: also last in the function (when that is elsewhere).
      if (!kernel_src.empty() && release_evidence(kernel_src, h.callee).released_last())
        if (auto last = move_release(h, *text, true); last && last->new_text != *text && (!e || last->new_text != e->new_text)) {
          if (e && e->new_text != *text) out.push_back(std::move(*e));
          e = std::move(last);
        }
    } else if (h.kind == "double-acquire") e = drop_repeat(h, *text);
    else if (h.kind == "double-release") {
      // The member the copied line should have named first; dropping the second call after it.
      if (auto r = retarget_repeat(h, *text); r && r->new_text != *text) out.push_back(std::move(*r));
      e = drop_repeat(h, *text);
    } else if (h.kind == "missing-unlock" || h.kind == "missing-cleanup") e = add_release(h, *text, kernel_src);
    else if (h.kind == "unchecked-result") e = add_test(h, *text, kernel_src);
    else if (h.kind == "missing-teardown") e = add_teardown(h, *text);
    else if (h.kind == "loop-bound") e = bound_loop(h, *text);
    else if (h.kind == "managed-release") e = drop_managed_release(h, *text);
    else if (h.kind == "teardown-order") e = move_before(h, *text);
    else if (h.kind == "alloc-size") e = size_by_target(h, *text);
    else if (h.kind == "never-set" || h.kind == "never-initialised") e = add_setter(h, *text);
    else if (h.kind == "sleep-in-atomic") e = move_after_release(h, *text, kernel_src);
    else if (h.kind == "foreign-release") e = release_as_allocated(h, *text);
    else if (h.kind == "buffer-size") e = resize_array(h, *text);
    if (e && e->new_text != *text) out.push_back(std::move(*e));
  }
  return out;
}

} // namespace autodriver::crash
