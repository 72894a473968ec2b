#include "autodriver/crash/release.hpp"

#include "autodriver/crash/driver_files.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/memo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

bool is_member_access(const std::string& s) { return s == "->" || s == "."; }

/// `path` is `x` or reaches a member through it (`x->y` for x, not `xy`).
bool through(const std::string& path, const std::string& x) {
  if (!path.starts_with(x)) return false;
  std::string_view rest = std::string_view(path).substr(x.size());
  return rest.empty() || rest.starts_with("->") || rest.starts_with(".");
}

/// Token i reads `x` (a variable or an object path): the path starting there is x or goes through
/// it, and is not x itself being assigned (`x = ...`).
bool reads_at(const std::vector<csrc::Token>& t, std::size_t i, const std::string& x) {
  auto [path, end] = csrc::object_path(t, i);
  if (path.empty() || !through(path, x)) return false;
  return !(path.size() == x.size() && end + 1 < t.size() && t[end + 1].text == "=");
}

/// Tokens [first, last] assign `x` or one of the objects it goes through (`a = ...` for `a->b`):
/// after that, x names another object.
bool assigns_path(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last, const std::string& x) {
  for (std::size_t i = first; i <= last && i < t.size(); ++i) {
    auto [path, end] = csrc::object_path(t, i);
    if (!path.empty() && end + 1 <= last && t[end + 1].text == "=" && through(x, path)) return true;
  }
  return false;
}

/// After the call statement ending at `semi`: is the object read again on a path from it?
/// No when the enclosing block returns or jumps away first, or the object is assigned anew.
bool read_after(const std::vector<csrc::Token>& t, std::size_t semi, std::size_t unit_last, const std::string& x) {
  int depth = 0;
  bool left_block = false;
  for (std::size_t i = semi + 1; i < unit_last && i < t.size(); ++i) {
    const auto& s = t[i].text;
    if (s == "{") ++depth;
    else if (s == "}" && --depth < 0) left_block = true;
    if (!left_block && depth == 0 && (s == "return" || s == "goto")) {
      // The path ends unless the return statement itself reads x.
      for (std::size_t k = i; k < unit_last && t[k].text != ";"; ++k)
        if (reads_at(t, k, x)) return true;
      return false;
    }
    auto [path, end] = csrc::object_path(t, i);
    if (path.empty() || !through(path, x)) continue;
    return reads_at(t, i, x);
  }
  return false;
}

/// After the statement ending at `semi`, nothing else runs on its path: closing braces lead to a
/// `return`, a label (the next error-path step, not this path's) or the function's end.
bool ends_path(const std::vector<csrc::Token>& t, std::size_t semi, std::size_t unit_last) {
  std::size_t i = semi + 1;
  while (i < unit_last && t[i].text == "}") ++i;
  if (i >= unit_last) return true;
  return t[i].text == "return" || (t[i].kind == csrc::TokKind::ident && i + 1 < t.size() && t[i + 1].text == ":");
}

bool starts_statement(const std::vector<csrc::Token>& t, std::size_t i) {
  if (i == 0) return true;
  const auto& p = t[i - 1].text;
  return p == ";" || p == "{" || p == "}" || p == ")" || p == "else" || p == ":";
}

} // namespace

std::optional<CallStatement> call_statement(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last,
                                            bool address) {
  if (last >= t.size() || first + 4 > last || t[last].text != ";") return std::nullopt;
  if (t[first].kind != csrc::TokKind::ident || t[first + 1].text != "(") return std::nullopt;
  // The first argument: a variable or an object path (`kfree(adapter->ring)`, `iounmap(priv->regs)`),
  // with `address` also its address (`spin_lock(&p->lock)`).
  const bool amp = address && t[first + 2].text == "&";
  auto [var, end] = csrc::object_path(t, first + (amp ? 3 : 2));
  if (amp && !var.empty()) var = "&" + var;
  if (var.empty() || end + 1 >= last || (t[end + 1].text != "," && t[end + 1].text != ")")) return std::nullopt;
  static const std::set<std::string> k_keywords = {"if", "while", "for", "switch", "return", "sizeof", "do"};
  if (k_keywords.count(t[first].text)) return std::nullopt;
  if (csrc::matching_close(t, first + 1) + 1 != last) return std::nullopt;
  return CallStatement{first, last, t[first].text, var};
}

std::string argument_path(const std::vector<csrc::Token>& t, const csrc::Call& c, std::size_t n) {
  if (n >= c.arg_toks.size()) return "";
  const auto [first, last] = c.arg_toks[n];
  auto [path, end] = csrc::object_path(t, first);
  return !path.empty() && end == last ? path : "";
}

ReleaseEvidence release_evidence(const fs::path& kernel_src, const std::string& callee, std::size_t arg) {
  static util::Memo<ReleaseEvidence> known;
  return known.get(kernel_src.string() + "|" + callee + "|" + std::to_string(arg), [&] {
    ReleaseEvidence out;
    out.callee = callee;
    for_each_kernel_function(kernel_src, callee, [&](const auto& t, const auto& u) {
      for (std::size_t i = u.body; i + 4 < u.last; ++i) {
        if (t[i].text != callee || !starts_statement(t, i)) continue;
        std::size_t close = csrc::matching_close(t, i + 1);
        if (close == std::string::npos || close + 1 >= u.last || t[close + 1].text != ";") continue;
        auto calls = csrc::find_calls(t, i, close);
        if (calls.empty() || calls.front().name_tok != i) continue;
        const std::string var = argument_path(t, calls.front(), arg);
        if (var.empty()) continue;
        ++out.calls;
        if (!read_after(t, close + 1, u.last, var)) ++out.last_use;
        if (ends_path(t, close + 1, u.last)) ++out.last_call;
      }
    });
    return out;
  });
}

/// `name` is declared a pointer in the function (`type *name`, parameters included).
static bool declared_pointer(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& name) {
  for (std::size_t i = fn.first + 2; i < fn.last; ++i)
    if (t[i].text == name && t[i - 1].text == "*" && (t[i - 2].kind == csrc::TokKind::ident || t[i - 2].text == "*")) return true;
  return false;
}

namespace {

/// The members a file assigns from a call of `alloc` (`x->m = alloc(`, `x.m = alloc(`), each with
/// the line of its first such assignment.
std::map<std::string, int> members_assigned_from(const std::vector<csrc::Token>& t, const std::string& alloc) {
  std::map<std::string, int> out;
  for (std::size_t i = 1; i + 3 < t.size(); ++i)
    if (t[i].kind == csrc::TokKind::ident && (t[i - 1].text == "->" || t[i - 1].text == ".") && t[i + 1].text == "=" &&
        t[i + 2].text == alloc && t[i + 3].text == "(")
      out.emplace(t[i].text, t[i].line);
  return out;
}

/// The last member of an object path (`buffer_info` of `tx_ring->buffer_info`), or "".
std::string last_member_of(const std::string& path) {
  const auto at = path.find_last_of(">.");
  return at == std::string::npos ? "" : path.substr(at + 1);
}

} // namespace

AllocRelease alloc_release(const fs::path& kernel_src, const std::string& alloc) {
  static util::Memo<AllocRelease> known;
  return known.get(kernel_src.string() + "|" + alloc, [&] {
    AllocRelease out;
    out.alloc = alloc;
    for_each_kernel_file(kernel_src, alloc, [&](const auto& t, const auto&) {
      const auto members = members_assigned_from(t, alloc);
      if (members.empty()) return;
      std::set<std::string> here;
      for (const auto& c : csrc::find_calls(t, 0, t.empty() ? 0 : t.size() - 1)) {
        if (c.args.size() != 1 || c.callee == alloc) continue;
        const std::string path = argument_path(t, c, 0);
        if (!path.empty() && members.count(last_member_of(path))) here.insert(c.callee);
      }
      if (here.empty()) return;
      ++out.files;
      for (const auto& r : here) ++out.by[r];
    });
    for (const auto& [r, n] : out.by)
      if (n > out.released) out.release = r, out.released = n;
    return out;
  });
}

AllocOracle alloc_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& alloc) { return alloc_release(kernel_src, alloc); };
}

std::optional<ForeignRelease> foreign_release(const std::vector<DriverFile>& driver, const std::string& file,
                                              const std::string& fn, int line, const AllocOracle& allocs) {
  if (!allocs) return std::nullopt;
  for (const auto& f : driver) {
    const csrc::Unit* u = f.rel == file ? function_named(f.units, fn) : nullptr;
    if (!u) continue;
    for (const auto& c : csrc::find_calls(f.toks, u->body, u->last)) {
      if (f.toks[c.name_tok].line != line || c.args.size() != 1) continue;
      const std::string m = last_member_of(argument_path(f.toks, c, 0));
      if (m.empty()) continue;
      // Where the driver assigns that member from a call: each allocator the kernel frees otherwise.
      for (const auto& g : driver)
        for (std::size_t i = 1; i + 3 < g.toks.size(); ++i) {
          const auto& t = g.toks;
          if (t[i].text != m || (t[i - 1].text != "->" && t[i - 1].text != ".") || t[i + 1].text != "=" ||
              t[i + 2].kind != csrc::TokKind::ident || t[i + 3].text != "(" || t[i + 2].text == c.callee)
            continue;
          auto how = allocs(t[i + 2].text);
          if (!how.learned() || how.release == c.callee || !how.foreign(c.callee)) continue;
          return ForeignRelease{m, t[i + 2].text, c.callee, how.release, fmt::format("{}:{}", g.rel, t[i].line), how};
        }
    }
  }
  return std::nullopt;
}

ReleaseOracle release_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& callee, std::size_t arg) { return release_evidence(kernel_src, callee, arg); };
}

std::set<std::string> derived_names(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& x) {
  std::set<std::string> out = {x};
  for (std::size_t i = fn.body; i + 2 < fn.last; ++i) {
    if (t[i].kind != csrc::TokKind::ident || t[i + 1].text != "=" || t[i].text == x || out.count(t[i].text)) continue;
    if (!declared_pointer(t, fn, t[i].text)) continue;
    if (i > 0 && (t[i - 1].text == "->" || t[i - 1].text == ".")) continue;
    for (std::size_t k = i + 2; k < fn.last && t[k].text != ";" && t[k].text != ","; ++k)
      if (reads_at(t, k, x)) {
        out.insert(t[i].text);
        break;
      }
  }
  return out;
}

bool reads_any(const std::vector<csrc::Token>& t, std::size_t first, std::size_t last, const std::set<std::string>& names) {
  for (std::size_t i = first; i <= last && i < t.size(); ++i)
    for (const auto& n : names)
      if (reads_at(t, i, n)) return true;
  return false;
}

std::optional<ReleaseBeforeUse> release_before_use(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line,
                                                   const ReleaseOracle& releases) {
  if (!releases) return std::nullopt;
  // The statements of the innermost block holding the line (a remove's `if (dev) { ... }`).
  auto sts = csrc::block_statements(t, block_holding(t, fn, line));
  const std::size_t at = statement_holding(t, sts, line);
  if (at == sts.size()) return std::nullopt;
  auto found = [&](std::size_t rel, std::size_t use, const CallStatement& c, ReleaseEvidence ev) {
    return ReleaseBeforeUse{c, t[sts[rel].first].line, t[sts[use].first].line, std::move(ev)};
  };
  // The statement at the line releases, and a later one reads what it released.
  if (auto c = call_statement(t, sts[at].first, sts[at].second)) {
    auto names = derived_names(t, fn, c->var);
    for (std::size_t k = at + 1; k < sts.size(); ++k)
      if (reads_any(t, sts[k].first, sts[k].second, names)) {
        auto ev = releases(c->callee, 0);
        if (ev.releases()) return found(at, k, *c, ev);
        break;
      }
  }
  // The statement at the line reads what an earlier one released (the nearest such release).
  for (std::size_t k = at; k-- > 0;) {
    auto c = call_statement(t, sts[k].first, sts[k].second);
    if (!c || !reads_any(t, sts[at].first, sts[at].second, derived_names(t, fn, c->var))) continue;
    auto ev = releases(c->callee, 0);
    if (ev.releases()) return found(k, at, *c, ev);
  }
  return std::nullopt;
}

namespace {

/// The body of `#define name(...) body` in the file, as tokens; empty when the file has none.
std::vector<csrc::Token> macro_body(const std::vector<csrc::Token>& t, const std::string& name) {
  for (const auto& tok : t) {
    if (tok.kind != csrc::TokKind::pp_line) continue;
    auto d = csrc::tokenize(tok.text.substr(tok.text.find('#') + 1));
    if (d.size() < 3 || d[0].text != "define" || d[1].text != name || d[2].text != "(" || d[2].begin != d[1].end) continue;
    std::size_t close = csrc::matching_close(d, 2);
    if (close == std::string::npos) return {};
    return std::vector<csrc::Token>(d.begin() + static_cast<std::ptrdiff_t>(close) + 1, d.end());
  }
  return {};
}

/// The body of the first `#define name(...)` of `files`, in their order; empty when none has one.
std::vector<csrc::Token> macro_body(const std::vector<const std::vector<csrc::Token>*>& files, const std::string& name) {
  for (const auto* f : files)
    if (auto body = macro_body(*f, name); !body.empty()) return body;
  return {};
}

void members_in(const std::vector<const std::vector<csrc::Token>*>& files, const std::vector<csrc::Token>& toks, int depth,
                std::set<std::string>& out) {
  for (std::size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].kind != csrc::TokKind::ident) continue;
    if (i > 0 && is_member_access(toks[i - 1].text)) out.insert(toks[i].text);
    else if (depth > 0 && i + 1 < toks.size() && toks[i + 1].text == "(")
      if (auto body = macro_body(files, toks[i].text); !body.empty()) members_in(files, body, depth - 1, out);
  }
}

} // namespace

std::set<std::string> members_read_on(const std::vector<csrc::Token>& t, int line, const std::vector<DriverFile>& headers) {
  std::vector<csrc::Token> on;
  for (const auto& tok : t)
    if (tok.line == line && tok.kind != csrc::TokKind::pp_line) on.push_back(tok);
  std::vector<const std::vector<csrc::Token>*> files{&t};
  for (const auto& h : headers) files.push_back(&h.toks);
  std::set<std::string> out;
  members_in(files, on, 2, out);
  return out;
}

std::optional<ReleaseInside> release_inside(const std::vector<DriverFile>& driver, const std::string& function, std::size_t param,
                                            const std::set<std::string>& members, const ReleaseOracle& releases, int depth) {
  if (!releases || members.empty() || depth <= 0) return std::nullopt;
  for (const auto& f : driver) {
    const csrc::Unit* fn = function_named(f.units, function);
    if (!fn) continue;
    const auto names = parameter_names(f.toks, *fn);
    const std::string p = param < names.size() ? names[param] : "";
    if (p.empty()) return std::nullopt;
    for (const auto& c : csrc::find_calls(f.toks, fn->body, fn->last)) {
      for (std::size_t n = 0; n < c.arg_toks.size(); ++n) {
        const std::string path = argument_path(f.toks, c, n);
        if (path.empty() || !through(path, p)) continue;
        if (path == p) {
          // The object handed on to another of the driver's functions.
          if (auto in = release_inside(driver, c.callee, n, members, releases, depth - 1)) return in;
          continue;
        }
        if (!members.count(csrc::last_member(path))) continue;
        auto ev = releases(c.callee, n);
        if (ev.releases()) return ReleaseInside{function, f.rel, f.toks[c.name_tok].line, path, c.callee, std::move(ev)};
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ReleaseBeforeCall> release_before_call(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line,
                                                     const std::set<std::string>& members, const ReleaseOracle& releases,
                                                     const std::vector<DriverFile>* driver) {
  if (!releases) return std::nullopt;
  auto sts = csrc::block_statements(t, fn.body);
  const std::size_t at = statement_holding(t, sts, line);
  if (at == sts.size()) return std::nullopt;
  auto found = [&](std::size_t k, const CallStatement& c, ReleaseEvidence ev, std::optional<ReleaseInside> in = {}) {
    return ReleaseBeforeCall{ReleaseBeforeUse{c, t[sts[k].first].line, t[sts[at].first].line, std::move(ev)}, std::move(in)};
  };
  for (std::size_t k = at; k-- > 0;) {
    auto c = call_statement(t, sts[k].first, sts[k].second);
    if (!c) continue;
    const bool member = c->var.find_first_of(".-") != std::string::npos;
    // A member path the faulting function read.
    if (member && members.count(csrc::last_member(c->var)))
      if (auto ev = releases(c->callee, 0); ev.releases()) return found(k, *c, std::move(ev));
    // The object the call is handed (or a pointer derived from it).
    if (!reads_any(t, sts[at].first, sts[at].second, derived_names(t, fn, c->var))) continue;
    if (auto ev = releases(c->callee, 0); ev.releases()) return found(k, *c, std::move(ev));
    // A function of the driver handed the same object that releases what the fault read.
    if (driver)
      if (auto in = release_inside(*driver, c->callee, 0, members, releases)) return found(k, *c, in->evidence, std::move(in));
  }
  return std::nullopt;
}

std::optional<RepeatedCall> repeated_call(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line) {
  auto sts = csrc::block_statements(t, fn.body);
  const std::size_t at = statement_holding(t, sts, line);
  if (at == sts.size()) return std::nullopt;
  auto again = call_statement(t, sts[at].first, sts[at].second, true);
  // A call with no argument (`rtnl_lock();`): one object for every caller.
  const auto [a0, b0] = sts[at];
  if (!again && b0 == a0 + 3 && t[a0].kind == csrc::TokKind::ident && t[a0 + 1].text == "(" && t[a0 + 2].text == ")")
    again = CallStatement{a0, b0, t[a0].text, ""};
  if (!again) return std::nullopt;
  const std::string text = csrc::join_tokens(t, sts[at].first, sts[at].second);
  for (std::size_t k = at; k-- > 0;) {
    const auto [a, b] = sts[k];
    // The same statement (before asking whether it sets the path: a lock call is handed its address).
    if (csrc::join_tokens(t, a, b) == text) return RepeatedCall{*again, t[a].line, t[sts[at].first].line};
    // Set again in between: a new object, not a second release of the first.
    if (!again->var.empty() && assigns_path(t, a, b, again->var)) return std::nullopt;
  }
  return std::nullopt;
}

std::set<std::string> managed_interfaces(std::string_view rst) {
  std::set<std::string> out;
  // The list's heading ("List of managed interfaces") names it; everything after it is the list.
  const auto from = rst.rfind("List of managed interfaces");
  if (from == std::string_view::npos) return out;
  rst.remove_prefix(from);
  for (std::size_t i = 0; i < rst.size(); ++i) {
    if (!csrc::ident_start(rst[i]) || (i > 0 && csrc::ident_char(rst[i - 1]))) continue;
    std::size_t e = i;
    while (e < rst.size() && csrc::ident_char(rst[e])) ++e;
    if (e < rst.size() && rst[e] == '(') out.emplace(rst.substr(i, e - i));
    i = e;
  }
  return out;
}

ManagedOracle managed_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  auto text = util::read_file(kernel_src / "Documentation/driver-api/driver-model/devres.rst");
  if (!text) return {};
  auto names = std::make_shared<const std::set<std::string>>(managed_interfaces(*text));
  if (names->empty()) return {};
  return [names](const std::string& callee) { return names->count(callee) > 0; };
}

std::optional<ManagedRelease> managed_release(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units,
                                              const csrc::Unit& fn, int line, const ManagedOracle& managed) {
  if (!managed) return std::nullopt;
  auto sts = csrc::block_statements(t, fn.body);
  const std::size_t at = statement_holding(t, sts, line);
  if (at == sts.size()) return std::nullopt;
  auto rel = call_statement(t, sts[at].first, sts[at].second);
  if (!rel) return std::nullopt;
  // The released object: a member path by its last member, a variable by its declared type.
  const bool member = rel->var.find_first_of(".-") != std::string::npos;
  const std::string key = member ? csrc::last_member(rel->var) : csrc::declared_type(t, fn, rel->var);
  if (key.empty()) return std::nullopt;
  for (const auto& u : units) {
    if (u.kind != csrc::UnitKind::function) continue;
    for (std::size_t i = u.body; i + 3 < u.last; ++i) {
      // `path = allocator(`
      auto [path, end] = csrc::object_path(t, i);
      if (path.empty() || end + 3 >= u.last || t[end + 1].text != "=" || t[end + 2].kind != csrc::TokKind::ident ||
          t[end + 3].text != "(" || !managed(t[end + 2].text)) {
        if (!path.empty()) i = end;
        continue;
      }
      const bool same = member ? csrc::last_member(path) == key
                               : path.find_first_of(".-") == std::string::npos && csrc::declared_type(t, u, path) == key;
      if (same) return ManagedRelease{*rel, t[sts[at].first].line, t[end + 2].text, t[i].line};
      i = end;
    }
  }
  return std::nullopt;
}

} // namespace autodriver::crash
