#include "autodriver/crash/lock.hpp"

#include "autodriver/crash/driver_files.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/memo.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

const std::set<std::string> k_not_calls = {"if", "while", "for", "switch", "return", "sizeof", "typeof", "__typeof__"};

/// What the kernel's calls of an acquire say: per call, which calls follow it with the same first
/// argument, and for calls without an argument which argument-less calls come before it.
struct Followers {
  int calls = 0;
  int argless = 0;                        ///< calls without an argument
  std::map<std::string, int> followed;    ///< callee -> calls of the acquire it follows
  std::map<std::string, int> same;        ///< ... with all of the acquire's arguments
  std::map<std::string, int> preceded_by; ///< argument-less callee -> argument-less acquires it comes before
};

void count_followers(const std::vector<csrc::Token>& t, const csrc::Unit& u, const std::string& acquire, Followers& f) {
  auto cs = csrc::find_calls(t, u.body, u.last);
  for (std::size_t a = 0; a < cs.size(); ++a) {
    if (cs[a].callee != acquire || cs[a].close_tok == std::string::npos) continue;
    ++f.calls;
    std::set<std::string> seen, seen_same;
    for (std::size_t b = a + 1; b < cs.size(); ++b) {
      const auto& c = cs[b];
      if (c.name_tok <= cs[a].close_tok || c.callee == acquire || lock_arg(c) != lock_arg(cs[a])) continue;
      if (k_not_calls.count(c.callee)) continue;
      if (seen.insert(c.callee).second) ++f.followed[c.callee];
      if (c.args == cs[a].args && seen_same.insert(c.callee).second) ++f.same[c.callee];
    }
    if (!cs[a].args.empty()) continue;
    ++f.argless;
    std::set<std::string> before;
    for (std::size_t b = 0; b < a; ++b)
      if (cs[b].args.empty() && cs[b].callee != acquire && !k_not_calls.count(cs[b].callee) && before.insert(cs[b].callee).second)
        ++f.preceded_by[cs[b].callee];
  }
}

/// The '{' of the innermost block holding token `pos` (not before `body`).
std::size_t innermost_open(const std::vector<csrc::Token>& t, std::size_t body, std::size_t pos) {
  int depth = 0;
  for (std::size_t k = pos; k-- > body;) {
    if (t[k].later_branch) continue;
    if (t[k].text == "}") ++depth;
    else if (t[k].text == "{" && depth-- == 0) return k;
  }
  return body;
}

/// The ';' ending the statement that starts at `first` (a braced block: its '}'; `if`/`else`
/// chains followed), bounded by `last`.
std::size_t statement_end(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last) {
  if (first >= last) return last;
  if (t[first].text == "{") {
    std::size_t c = csrc::matching_close(t, first);
    return c == std::string::npos ? last : c;
  }
  if (t[first].text == "if" || t[first].text == "while" || t[first].text == "for" || t[first].text == "switch") {
    if (first + 1 >= last || t[first + 1].text != "(") return last;
    std::size_t c = csrc::matching_close(t, first + 1);
    if (c == std::string::npos || c + 1 >= last) return last;
    std::size_t end = statement_end(t, c + 1, last);
    if (t[first].text == "if" && end + 1 < last && t[end + 1].text == "else") end = statement_end(t, end + 2, last);
    return end;
  }
  int depth = 0;
  for (std::size_t k = first; k < last; ++k) {
    const auto& s = t[k].text;
    if (s == "(" || s == "[" || s == "{") ++depth;
    else if (s == ")" || s == "]" || s == "}") --depth;
    else if (s == ";" && depth <= 0) return k;
  }
  return last;
}

/// The '(' matching the ')' at `close`, or npos.
std::size_t matching_open(const std::vector<csrc::Token>& t, std::size_t close, std::size_t floor) {
  int depth = 0;
  for (std::size_t k = close + 1; k-- > floor;) {
    if (t[k].text == ")") ++depth;
    else if (t[k].text == "(" && --depth == 0) return k;
  }
  return std::string::npos;
}

/// Token range of the branch on which the acquire at `name` failed: the body of
/// `if (acquire(...))`, or of the `if (v ...)` right after `v = acquire(...);`. Empty: {1, 0}.
std::pair<std::size_t, std::size_t> failure_branch(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const csrc::Call& a) {
  const std::pair<std::size_t, std::size_t> none{1, 0};
  auto then_of = [&](std::size_t open) -> std::pair<std::size_t, std::size_t> {
    std::size_t c = csrc::matching_close(t, open);
    if (c == std::string::npos || c + 1 >= fn.last) return none;
    std::size_t end = statement_end(t, c + 1, fn.last);
    return {c + 1, end};
  };
  int depth = 0;
  for (std::size_t k = a.name_tok; k-- > fn.body;) {
    const auto& s = t[k].text;
    if (s == ";" || s == "{" || s == "}") break;
    if (s == ")") ++depth;
    else if (s == "(" && depth-- == 0) {
      if (k > 0 && t[k - 1].text == "if") return then_of(k);
      break;
    }
  }
  // `v = acquire(...); if (v) return v;`
  if (a.name_tok < 2 || t[a.name_tok - 1].text != "=" || t[a.name_tok - 2].kind != csrc::TokKind::ident) return none;
  const std::string v = t[a.name_tok - 2].text;
  std::size_t semi = a.close_tok + 1;
  if (semi + 2 >= fn.last || t[semi].text != ";" || t[semi + 1].text != "if" || t[semi + 2].text != "(") return none;
  std::size_t c = csrc::matching_close(t, semi + 2);
  if (c == std::string::npos) return none;
  for (std::size_t k = semi + 3; k < c; ++k)
    if (t[k].text == v) return then_of(semi + 2);
  return none;
}

/// Between `from` and `to` at the depth of `from`'s block: a `case` / `default` label (another
/// way into the code after `from`).
bool case_between(const std::vector<csrc::Token>& t, std::size_t from, std::size_t to) {
  int depth = 0;
  for (std::size_t k = from; k < to; ++k) {
    if (t[k].text == "{") ++depth;
    else if (t[k].text == "}") --depth;
    else if (depth == 0 && (t[k].text == "case" || t[k].text == "default")) return true;
  }
  return false;
}

bool is_release_of(const csrc::Call& c, const ScopedPair& pair, const std::string& lock) {
  return c.callee == pair.release && same_lock(lock_arg(c), lock);
}

/// A release of `lock` after token `from` and before `exit` that every path from `from` to `exit` passes.
bool released_on_path(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::vector<csrc::Call>& cs,
                      const ScopedPair& pair, const std::string& lock, std::size_t from, std::size_t exit) {
  for (const auto& r : cs) {
    if (r.name_tok <= from || r.name_tok >= exit || !is_release_of(r, pair, lock)) continue;
    if (unbraced_control(t, r.name_tok) != std::string::npos) continue;
    std::size_t open = innermost_open(t, fn.body, r.name_tok);
    std::size_t close = csrc::matching_close(t, open);
    if (close == std::string::npos || close < exit) continue;
    if (case_between(t, r.name_tok, exit)) continue;
    return true;
  }
  return false;
}

/// `goto label;` reaches a release of `lock` before the code after the label returns (following
/// the unconditional gotos it meets: `out_err: kfree(x); goto out_unlock;`). nullopt: no such
/// label after `after` (a retry loop's jump back, or none).
std::optional<bool> label_releases(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::vector<csrc::Call>& cs,
                                   const ScopedPair& pair, const std::string& lock, const std::string& label, std::size_t after,
                                   std::set<std::string>& visited) {
  if (!visited.insert(label).second) return false;
  for (std::size_t k = after; k + 1 < fn.last; ++k) {
    if (t[k].text != label || t[k + 1].text != ":") continue;
    const auto& p = t[k - 1].text;
    if (p != ";" && p != "{" && p != "}" && p != ":") continue;
    int depth = 0;
    for (std::size_t i = k + 2; i < fn.last; ++i) {
      if (t[i].text == "{") ++depth;
      else if (t[i].text == "}") depth = std::max(0, depth - 1);
      else if (t[i].text == "return") break;
      else if (t[i].text == "goto" && depth == 0 && i + 1 < fn.last && unbraced_control(t, i) == std::string::npos)
        return label_releases(t, fn, cs, pair, lock, t[i + 1].text, after, visited).value_or(false);
      for (const auto& r : cs)
        if (r.name_tok == i && is_release_of(r, pair, lock)) return true;
    }
    return false;
  }
  return std::nullopt;
}

std::string arg_text(const std::vector<csrc::Token>& t, std::pair<std::size_t, std::size_t> range) {
  std::vector<std::string> parts;
  for (std::size_t k = range.first; k <= range.second && k < t.size(); ++k) parts.push_back(t[k].text);
  return csrc::c_text(parts);
}

} // namespace

ScopedPair scoped_pair(const fs::path& kernel_src, const std::string& acquire) {
  static util::Memo<ScopedPair> known;
  return known.get(kernel_src.string() + "|" + acquire, [&] {
    ScopedPair p;
    p.acquire = acquire;
    if (k_not_calls.count(acquire)) return p;
    Followers f;
    for_each_kernel_function(kernel_src, acquire, [&](const auto& t, const auto& u) { count_followers(t, u, acquire, f); });
    p.calls = f.calls;
    for (const auto& [callee, n] : f.followed)
      if (n > p.released) {
        p.release = callee;
        p.released = n;
      }
    if (!p.release.empty()) p.same_args = f.same[p.release];
    // Without an argument any call made while a lock is held is followed by its release: such a
    // call is an acquire only when it is not mostly made inside another acquire's region (a call
    // before it, given back by the same release).
    static thread_local int depth = 0;
    if (p.scoped() && 2 * f.argless > f.calls && depth < 2)
      for (const auto& [before, n] : f.preceded_by) {
        if (2 * n < f.argless) continue;
        ++depth;
        const auto outer = scoped_pair(kernel_src, before);
        --depth;
        if (outer.scoped() && outer.release == p.release) {
          p.release.clear();
          p.released = p.same_args = 0;
          break;
        }
      }
    return p;
  });
}

UnderLock under_lock(const fs::path& kernel_src, const ScopedPair& pair, const std::string& callee) {
  static util::Memo<UnderLock> known;
  return known.get(kernel_src.string() + "|" + pair.acquire + "|" + pair.release + "|" + callee, [&] {
    UnderLock out;
    out.callee = callee;
    if (!pair.scoped()) return out;
    for_each_kernel_function(
        kernel_src, callee,
        [&](const auto& t, const auto& u) {
          auto cs = csrc::find_calls(t, u.body, u.last);
          bool takes = false;
          for (const auto& c : cs) takes = takes || c.callee == pair.acquire;
          if (!takes) return;
          std::vector<std::string> held; // the locks held at this point, in textual order
          for (const auto& c : cs) {
            if (c.callee == pair.acquire) held.push_back(lock_arg(c));
            else if (c.callee == pair.release) std::erase(held, lock_arg(c));
            else if (c.callee == callee) {
              ++out.calls;
              if (!held.empty()) ++out.under;
            }
          }
        },
        pair.acquire);
    return out;
  });
}

/// A label `name:` at statement start between tokens (from, to).
static bool label_between(const std::vector<csrc::Token>& t, std::size_t from, std::size_t to) {
  for (std::size_t k = from + 1; k + 1 < to; ++k)
    if (t[k].kind == csrc::TokKind::ident && t[k + 1].text == ":" && t[k].text != "default" && t[k].text != "case" &&
        (t[k - 1].text == ";" || t[k - 1].text == "{" || t[k - 1].text == "}"))
      return true;
  return false;
}

ScopedPair undo_pair(const fs::path& kernel_src, const std::string& acquire) {
  static util::Memo<ScopedPair> known;
  return known.get(kernel_src.string() + "|" + acquire, [&] {
    ScopedPair p;
    p.acquire = acquire;
    if (k_not_calls.count(acquire)) return p;
    std::map<std::string, int> undone_by, same;
    for_each_kernel_function(kernel_src, acquire, [&](const auto& t, const auto& u) {
      auto cs = csrc::find_calls(t, u.body, u.last);
      for (std::size_t a = 0; a < cs.size(); ++a) {
        if (cs[a].callee != acquire || cs[a].args.empty() || cs[a].close_tok == std::string::npos) continue;
        // The cleanup the acquire's own failure jumps to comes after its undo (labels unwind in
        // reverse): only the code between a label and that one undoes it.
        std::size_t until = u.last;
        auto [fail_first, fail_last] = failure_branch(t, u, cs[a]);
        for (std::size_t k = fail_first; k <= fail_last && k + 1 < u.last; ++k)
          if (t[k].text == "goto")
            for (std::size_t l = cs[a].close_tok; l + 1 < u.last; ++l)
              if (t[l].text == t[k + 1].text && t[l + 1].text == ":" && l > fail_last) {
                until = l;
                break;
              }
        if (!label_between(t, cs[a].close_tok, until)) continue; // no cleanup code after it
        ++p.calls;
        std::set<std::string> seen;
        for (std::size_t b = a + 1; b < cs.size(); ++b) {
          const auto& c = cs[b];
          if (c.name_tok <= cs[a].close_tok || c.name_tok >= until || c.callee == acquire || c.args.empty() ||
              c.args[0] != cs[a].args[0] || k_not_calls.count(c.callee) || !label_between(t, cs[a].close_tok, c.name_tok))
            continue;
          if (seen.insert(c.callee).second) {
            ++undone_by[c.callee];
            if (c.args == cs[a].args) ++same[c.callee];
          }
        }
      }
    });
    for (const auto& [callee, n] : undone_by)
      if (n > p.released) {
        p.release = callee;
        p.released = n;
      }
    if (!p.release.empty()) p.same_args = same[p.release];
    return p;
  });
}

PairOracle undo_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& acquire) { return undo_pair(kernel_src, acquire); };
}

PairOracle pair_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& acquire) { return scoped_pair(kernel_src, acquire); };
}

std::string lock_arg(const csrc::Call& c) { return c.args.empty() ? std::string() : c.args[0]; }

bool same_lock(const std::string& a, const std::string& b) {
  auto squeeze = [](const std::string& s) {
    std::string out;
    for (char c : s)
      if (c != ' ') out += c;
    return out;
  };
  const std::string x = squeeze(a), y = squeeze(b);
  if (x == y) return true;
  // `&priv->lock` and `&p->lock`: the member path after a pointer base.
  static const std::regex k_member(R"(^&?[A-Za-z_]\w*(->.+)$)");
  std::smatch mx, my;
  return std::regex_match(x, mx, k_member) && std::regex_match(y, my, k_member) && mx[1] == my[1];
}

std::size_t unbraced_control(const std::vector<csrc::Token>& t, std::size_t first) {
  if (first == 0 || first >= t.size()) return std::string::npos;
  const auto& p = t[first - 1].text;
  if (p == "else" || p == "do") return first - 1;
  if (p != ")") return std::string::npos;
  std::size_t open = matching_open(t, first - 1, 0);
  if (open == std::string::npos || open == 0) return std::string::npos;
  const auto& kw = t[open - 1].text;
  return kw == "if" || kw == "while" || kw == "for" ? first - 1 : std::string::npos;
}

std::vector<HeldExit> held_exits(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const ScopedPair& pair,
                                 bool errors_only) {
  std::vector<HeldExit> out;
  if (pair.release.empty() || fn.kind != csrc::UnitKind::function || fn.last >= t.size()) return out;
  auto cs = csrc::find_calls(t, fn.body, fn.last);
  auto sts = csrc::block_statements(t, fn.body);
  const bool falls_off = !errors_only && (sts.empty() || t[sts.back().first].text != "return");
  // The success path's exit: the body's last statement; `return 0;` anywhere.
  const std::size_t last_statement = sts.empty() ? fn.last : sts.back().first;
  auto succeeds = [&](std::size_t i) {
    return errors_only &&
           (i == last_statement || (i + 2 < fn.last && t[i].text == "return" && t[i + 1].text == "0" && t[i + 2].text == ";"));
  };
  std::set<std::size_t> reported;
  for (const auto& a : cs) {
    if (a.callee != pair.acquire || a.close_tok == std::string::npos || a.close_tok >= fn.last) continue;
    // `if (x) spin_lock(...)`: whether it holds depends on x, which this does not follow.
    if (unbraced_control(t, a.name_tok) != std::string::npos) continue;
    const std::string lock = a.arg_toks.empty() ? std::string() : arg_text(t, a.arg_toks[0]);
    // A function that releases the lock before it takes it is called with it held and hands it
    // back held (`unlock; msleep(1); lock;` in a polling loop).
    bool held_on_entry = false;
    for (const auto& r : cs) {
      if (r.callee == pair.acquire && same_lock(lock_arg(r), lock)) break; // taken first
      if (is_release_of(r, pair, lock)) {
        held_on_entry = true;
        break;
      }
    }
    if (held_on_entry) continue;
    auto [skip_first, skip_last] = failure_branch(t, fn, a);
    std::size_t scope_open = innermost_open(t, fn.body, a.name_tok);
    std::size_t scope_close = std::min(csrc::matching_close(t, scope_open), fn.last);
    bool released_somewhere = false;
    for (const auto& r : cs)
      if (r.name_tok > a.close_tok && is_release_of(r, pair, lock)) released_somewhere = true;
    std::string args = lock;
    if (pair.release_takes_all_args()) {
      args.clear();
      for (const auto& range : a.arg_toks) args += (args.empty() ? "" : ", ") + arg_text(t, range);
    }
    int depth = 0;
    for (std::size_t i = a.close_tok + 1; i <= scope_close; ++i) {
      if (t[i].text == "{") ++depth;
      else if (t[i].text == "}") --depth;
      // Another case of the switch the acquire is in: not reached from it.
      if (depth == 0 && (t[i].text == "case" || t[i].text == "default")) break;
      const bool end = i == fn.last;
      if (!(t[i].text == "return" || t[i].text == "goto" || (end && falls_off))) continue;
      if (skip_first <= i && i <= skip_last) continue;
      if (succeeds(i)) continue;
      if (released_on_path(t, fn, cs, pair, lock, a.close_tok, i)) continue;
      if (t[i].text == "goto" && i + 1 < fn.last) {
        std::set<std::string> visited;
        auto via = label_releases(t, fn, cs, pair, lock, t[i + 1].text, a.close_tok, visited);
        if (!via || *via) continue;
      }
      if (!reported.insert(i).second) continue;
      HeldExit h;
      h.lock = lock;
      h.release_call = pair.release + "(" + args + ")";
      h.acquire_line = t[a.name_tok].line;
      h.exit_first = i;
      h.exit_last = end ? i : statement_end(t, i, fn.last);
      h.exit_line = t[i].line;
      h.released_elsewhere = released_somewhere;
      out.push_back(std::move(h));
    }
  }
  std::sort(out.begin(), out.end(), [](const HeldExit& x, const HeldExit& y) { return x.exit_first < y.exit_first; });
  return out;
}

} // namespace autodriver::crash
