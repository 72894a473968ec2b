#include "autodriver/crash/localize.hpp"

#include "autodriver/crash/alloc_size.hpp"
#include "autodriver/crash/driver_files.hpp"
#include "autodriver/crash/never_set.hpp"
#include "autodriver/crash/tail_call.hpp"
#include "autodriver/crash/teardown.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <regex>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

std::string in_tree(const std::string& file, const std::string& build_root) {
  if (build_root.empty()) return file;
  const std::string prefix = build_root.ends_with('/') ? build_root : build_root + "/";
  return file.starts_with(prefix) ? file.substr(prefix.size()) : file;
}

/// Where `function` is defined in the driver's C files (the line of its name).
std::optional<std::pair<std::string, int>> definition_of(const fs::path& tree, const std::string& function) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_regular_file(ec) || it->path().extension() != ".c") continue;
    auto text = util::read_file(it->path());
    if (!text || text->find(function) == std::string::npos) continue;
    auto toks = csrc::tokenize(*text);
    for (const auto& u : csrc::find_units(toks))
      if (u.kind == csrc::UnitKind::function && u.name == function)
        for (std::size_t k = u.first; k < u.body && k < toks.size(); ++k)
          if (toks[k].text == function) return std::make_pair(fs::relative(it->path(), tree).string(), toks[k].line);
  }
  return std::nullopt;
}

/// The tree's C sources and headers, relative to it.
std::vector<std::string> source_files(const fs::path& tree) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto ext = it->path().extension();
    if (it->is_regular_file(ec) && (ext == ".c" || ext == ".h")) out.push_back(fs::relative(it->path(), tree).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// A driver source file read once, its tokens and the function unit around a line.
struct SourceView {
  std::string text;
  std::vector<csrc::Token> toks;
  std::vector<std::string_view> lines;
  const csrc::Unit* fn = nullptr;
  std::vector<csrc::Unit> units;

  std::string line_text(int l) const {
    return l >= 1 && static_cast<std::size_t>(l) <= lines.size() ? std::string(lines[static_cast<std::size_t>(l) - 1]) : "";
  }
};

std::optional<SourceView> view(const fs::path& tree, const Location& at) {
  if (tree.empty() || at.file.empty() || at.line <= 0) return std::nullopt;
  auto text = util::read_file(tree / at.file);
  if (!text) return std::nullopt;
  SourceView v;
  v.text = std::move(*text);
  v.toks = csrc::tokenize(v.text);
  v.units = csrc::find_units(v.toks);
  v.lines = util::split_lines(v.text);
  for (const auto& u : v.units)
    if (u.kind == csrc::UnitKind::function && v.toks[u.first].line <= at.line && at.line <= v.toks[u.last].line) v.fn = &u;
  return v;
}

std::string trimmed(std::string s) {
  auto b = s.find_first_not_of(" \t");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// The pointers the line dereferences: `X->`, unary `*X`, `X[`.
std::vector<std::string> dereferenced(const SourceView& v, int line) {
  std::vector<std::string> out;
  auto add = [&](const std::string& x) {
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  };
  const auto& t = v.toks;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].line != line || t[i].kind != csrc::TokKind::ident) continue;
    const std::string& nx = t[i + 1].text;
    bool after_member = i > 0 && (t[i - 1].text == "->" || t[i - 1].text == ".");
    if (!after_member && (nx == "->" || nx == "[")) add(t[i].text);
    if (i > 0 && t[i - 1].text == "*" && !after_member) {
      // Unary: nothing that ends an operand before the '*'.
      bool unary = i < 2 || (t[i - 2].kind != csrc::TokKind::ident && t[i - 2].kind != csrc::TokKind::number &&
                             t[i - 2].text != ")" && t[i - 2].text != "]");
      if (unary) add(t[i].text);
    }
  }
  return out;
}

struct Assignment {
  int line = 0;
  std::string rhs;    ///< the value's tokens joined
  std::string callee; ///< the value is a call of this function
};

/// Assignments `x = value` (declarations with an initializer too) in the function.
std::vector<Assignment> assignments(const SourceView& v, const std::string& x) {
  std::vector<Assignment> out;
  if (!v.fn) return out;
  const auto& t = v.toks;
  for (const auto& as : csrc::assignments_of(t, v.fn->body, v.fn->last, x)) {
    const std::size_t i = as.var_tok, e = as.end_tok;
    Assignment a;
    a.line = t[i].line;
    if (e > i + 2) a.rhs = csrc::join_tokens(t, i + 2, e - 1);
    // `(type *)f(...)` and `f(...)`: the callee.
    std::size_t k = i + 2;
    if (t[k].text == "(" && k + 1 < t.size()) {
      std::size_t c = csrc::matching_close(t, k);
      if (c != std::string::npos && c + 1 < e) k = c + 1;
    }
    if (k + 1 < e && t[k].kind == csrc::TokKind::ident && t[k + 1].text == "(") a.callee = t[k].text;
    out.push_back(std::move(a));
  }
  return out;
}

bool is_parameter(const SourceView& v, const std::string& x) {
  if (!v.fn) return false;
  for (std::size_t k = v.fn->first; k < v.fn->body; ++k)
    if (v.toks[k].text == x && k + 1 < v.toks.size() && (v.toks[k + 1].text == "," || v.toks[k + 1].text == ")")) return true;
  return false;
}

/// A test of `x` against NULL or an error pointer between two lines (exclusive of the first).
bool checked_between(const SourceView& v, const std::string& x, int after, int before) {
  const auto& t = v.toks;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].line <= after || t[i].line >= before || t[i].text != x) continue;
    const std::string& p = t[i - 1].text;
    const std::string& n = t[i + 1].text;
    if (p == "!" || n == "==" || n == "!=" ||
        (p == "(" && i >= 2 &&
         (t[i - 2].text == "if" || t[i - 2].text == "IS_ERR" || t[i - 2].text == "IS_ERR_OR_NULL" ||
          t[i - 2].text == "unlikely" || t[i - 2].text == "likely")))
      return true;
  }
  return false;
}

bool null_value(const std::string& rhs) { return rhs == "NULL" || rhs == "0" || rhs == "( void * ) 0"; }

std::optional<Hypothesis> pointer_hypothesis(const CrashReport& r, const Location& at, const SourceView& v) {
  const bool null = r.kind == CrashKind::null_deref || r.kind == CrashKind::kasan_other;
  const std::string fn = at.function;
  const std::string here = fmt::format("{}:{}", at.file, at.line);
  const std::string code = trimmed(v.line_text(at.line));
  for (const auto& x : dereferenced(v, at.line)) {
    auto as = assignments(v, x);
    const Assignment* before = nullptr;
    const Assignment* after = nullptr;
    for (const auto& a : as) {
      if (a.line < at.line) before = &a;
      else if (!after) after = &a;
    }
    Hypothesis h;
    h.function = fn;
    h.file = at.file;
    h.line = at.line;
    h.evidence = {r.headline, fmt::format("{}: {}", here, code)};
    if (before) h.evidence.push_back(fmt::format("{}:{}: {}", at.file, before->line, trimmed(v.line_text(before->line))));
    h.variable = x;
    if (before && null_value(before->rhs) && after && !null_value(after->rhs)) {
      h.kind = "use-before-set";
      h.set_line = after->line;
      h.callee = after->callee;
      h.statement = fmt::format("{}() dereferences {} at {} before it is set at {}:{} (it is NULL until then, from {}:{})", fn, x,
                                here, at.file, after->line, at.file, before->line);
    } else if (before && null_value(before->rhs)) {
      h.set_line = before->line;
      h.kind = "null-pointer";
      h.statement = fmt::format("{} is set to NULL at {}:{} and dereferenced at {} in {}()", x, at.file, before->line, here, fn);
    } else if (before && !before->callee.empty() && !checked_between(v, x, before->line, at.line)) {
      h.kind = "unchecked-result";
      h.set_line = before->line;
      h.callee = before->callee;
      h.statement =
          fmt::format("{} = {}() at {}:{} is dereferenced at {} in {}() without a check; {}() returned {}", x, before->callee,
                      at.file, before->line, here, fn, before->callee, null ? "NULL" : "an invalid pointer");
    } else if (!before && after && !is_parameter(v, x)) {
      h.kind = "use-before-set";
      h.set_line = after->line;
      h.callee = after->callee;
      h.statement = fmt::format("{}() dereferences {} at {} before it is set at {}:{}", fn, x, here, at.file, after->line);
    } else if (is_parameter(v, x)) {
      const Frame* caller = nullptr;
      for (std::size_t i = 0; i + 1 < r.trace.size(); ++i)
        if (r.trace[i].function == fn) caller = &r.trace[i + 1];
      if (r.rip && r.rip->function == fn && !r.trace.empty()) caller = &r.trace.front();
      h.kind = null ? "null-pointer" : "bad-pointer";
      h.statement =
          fmt::format("{}() dereferences its parameter {} at {}; {} passed {}", fn, x, here,
                      caller ? caller->function + "()" : std::string("its caller"), null ? "NULL" : "an invalid pointer");
    } else {
      h.kind = null ? "null-pointer" : "bad-pointer";
      auto cr2 = r.registers.find("CR2");
      h.statement = fmt::format("{}() dereferences {} at {}, which is {}{}", fn, x, here, null ? "NULL" : "not a valid pointer",
                                cr2 == r.registers.end() ? "" : fmt::format(" (CR2 {})", cr2->second));
    }
    return h;
  }
  return std::nullopt;
}

/// Missing unlock: the crash's line takes a lock (a scoped acquire, learned from the kernel) and
/// a driver function leaves that lock held on one of its exits. Exits of functions that release
/// the lock elsewhere (an inconsistent exit), naming it exactly as the crashing line, and of the
/// crashing function itself come first.
std::vector<Hypothesis> lock_hypotheses(const CrashReport& r, const Location& at, const SourceView& v, const fs::path& tree,
                                        const PairOracle& pairs) {
  std::vector<Hypothesis> out;
  if (!pairs || !v.fn) return out;
  std::optional<ScopedPair> pair;
  std::string lock;
  for (const auto& c : csrc::find_calls(v.toks, v.fn->body, v.fn->last)) {
    if (v.toks[c.name_tok].line != at.line) continue;
    auto p = pairs(c.callee);
    if (!p.scoped()) continue;
    pair = p;
    lock = lock_arg(c);
    break;
  }
  if (!pair) return out;
  struct Found {
    HeldExit exit;
    std::string file, function;
    int rank = 0;
  };
  std::vector<Found> found;
  for (const auto& f : read_driver(tree))
    for (const auto& u : f.units)
      for (auto& h : held_exits(f.toks, u, *pair)) {
        if (!same_lock(h.lock, lock)) continue;
        auto squeeze = [](std::string x) {
          std::erase(x, ' ');
          return x;
        };
        int rank = (h.released_elsewhere ? 0 : 4) + (squeeze(h.lock) == squeeze(lock) ? 0 : 2) + (u.name == at.function ? 0 : 1);
        found.push_back({std::move(h), f.rel, u.name, rank});
      }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.rank < b.rank; });
  for (const auto& f : found) {
    Hypothesis h;
    h.kind = "missing-unlock";
    h.function = f.function;
    h.file = f.file;
    h.line = f.exit.exit_line;
    h.variable = f.exit.lock;
    h.set_line = f.exit.acquire_line;
    h.callee = pair->release;
    h.call = f.exit.release_call;
    std::string then = r.kind == CrashKind::lockdep
                           ? fmt::format("lockdep: {}", r.detail)
                           : fmt::format("{}() then {} at {}:{}", at.function,
                                         r.kind == CrashKind::hung_task ? "blocks taking it" : "spins on it", at.file, at.line);
    h.statement = fmt::format(
        "{}() {} at {}:{} with {} held (taken with {}() at line {}{}); {}", f.function,
        f.exit.exit_first < f.exit.exit_last ? "returns" : "ends", f.file, f.exit.exit_line,
        f.exit.lock.empty() ? "the lock " + pair->acquire + "() takes" : f.exit.lock, pair->acquire, f.exit.acquire_line,
        f.exit.released_elsewhere ? fmt::format(", released with {}() on its other exits", pair->release) : "", then);
    h.evidence.push_back(r.headline);
    auto text = util::read_file(tree / f.file);
    auto lines = text ? util::split_lines(*text) : std::vector<std::string_view>{};
    for (int l : {f.exit.acquire_line, f.exit.exit_line})
      if (l >= 1 && static_cast<std::size_t>(l) <= lines.size())
        h.evidence.push_back(fmt::format("{}:{}: {}", f.file, l, trimmed(std::string(lines[static_cast<std::size_t>(l) - 1]))));
    if (f.file != at.file || (at.line != f.exit.acquire_line && at.line != f.exit.exit_line))
      h.evidence.push_back(fmt::format("{}:{}: {}", at.file, at.line, trimmed(v.line_text(at.line))));
    h.evidence.push_back(fmt::format("the target kernel's drivers call {}() after {} of {} {}() calls in the same function",
                                     pair->release, pair->released, pair->calls, pair->acquire));
    out.push_back(std::move(h));
  }
  return out;
}

/// A fault on memory: a bad or NULL pointer, or an access out of an object's bounds.
bool memory_fault_kind(CrashKind k) {
  return k == CrashKind::null_deref || k == CrashKind::paging_request || k == CrashKind::general_protection ||
         k == CrashKind::kasan_other || k == CrashKind::kasan_out_of_bounds || k == CrashKind::oops;
}

/// A member the crashing statement hands on by address that the driver never initialises
/// (members_never_initialised): a list head, a work item or a lock left as zeroed memory.
std::vector<Hypothesis> uninit_hypotheses(const CrashReport& r, const Location& at, const std::vector<DriverFile>& driver,
                                          const InitOracle& inits) {
  std::vector<Hypothesis> out;
  for (const auto& um : members_never_initialised(driver, at.file, at.function, at.line, inits)) {
    Hypothesis h{"never-initialised", "", um.function, um.file, um.made_line, {r.headline}};
    h.variable = um.statement.substr(um.statement.find('(') + 2, um.statement.find_first_of(",)") - um.statement.find('(') - 2);
    h.set_line = um.after_line;
    h.callee = um.how.init;
    h.call = um.statement;
    h.statement = fmt::format("{}() at {}:{} hands {}'s member {} to {}(), and no function of the driver initialises it (the "
                              "kernel's drivers call {}() on such a member in {} of {} files): {}() makes the object at {}:{}",
                              at.function, at.file, at.line, um.owner, um.member, um.used_by, um.how.init, um.how.initialised,
                              um.how.files, um.function, um.file, um.made_line);
    out.push_back(std::move(h));
  }
  return out;
}

/// The source's text of tokens [r.first, r.second] (`&tp->lock` as written).
std::string source_text(const SourceView& v, std::pair<std::size_t, std::size_t> r) {
  return v.text.substr(v.toks[r.first].begin, v.toks[r.second].end - v.toks[r.first].begin);
}

/// The crashing statement releases a member the driver allocates with an allocator whose memory
/// the kernel's drivers give back with another call (foreign_release): kfree() of vzalloc()'s.
std::optional<Hypothesis> foreign_release_hypothesis(const CrashReport& r, const Location& at, const SourceView& v,
                                                     const std::vector<DriverFile>& driver, const AllocOracle& allocs) {
  auto fr = foreign_release(driver, at.file, at.function, at.line, allocs);
  if (!fr) return std::nullopt;
  Hypothesis h{"foreign-release", "", at.function, at.file, at.line, {r.headline}};
  h.evidence.push_back(fmt::format("{}:{}: {}", at.file, at.line, trimmed(v.line_text(at.line))));
  h.evidence.push_back(fmt::format("the target kernel's drivers release a member they assigned from {}() with {}() in {} of "
                                   "{} files",
                                   fr->alloc, fr->release, fr->evidence.released, fr->evidence.files));
  h.variable = fr->member;
  h.set_line = at.line;
  h.callee = fr->callee;
  h.call = fr->release;
  h.statement = fmt::format("{}() gives {} back with {}() at {}:{}, but the driver allocates it with {}() at {}, whose memory "
                            "is released with {}()",
                            at.function, fr->member, fr->callee, at.file, at.line, fr->alloc, fr->alloc_at, fr->release);
  return h;
}

/// The state of an object the crashing statement hands on: a member never initialised, or
/// memory released with another allocator's release.
std::vector<Hypothesis> object_state_hypotheses(const CrashReport& r, const Location& at, const SourceView& v,
                                                const fs::path& tree, const InitOracle& inits, const AllocOracle& allocs) {
  const bool fault = memory_fault_kind(r.kind) || r.kind == CrashKind::bug_on || r.kind == CrashKind::warning;
  std::vector<Hypothesis> out;
  if ((!inits && !allocs) || (!fault && r.kind != CrashKind::slab)) return out;
  const auto driver = read_driver(tree); // read once for both questions
  if (fault) out = uninit_hypotheses(r, at, driver, inits);
  if (out.empty())
    if (auto h = foreign_release_hypothesis(r, at, v, driver, allocs)) out.push_back(std::move(*h));
  return out;
}

/// Sleep in atomic context ("BUG: scheduling while atomic", "sleeping function called from
/// invalid context"): the crash's driver statement lies between a scoped acquire (learned from the
/// kernel, lock.hpp) and its release in the same function, with no release of that lock between:
/// the statement sleeps while the lock is held. The nearest acquire first.
std::vector<Hypothesis> sleep_hypotheses(const CrashReport& r, const Location& at, const SourceView& v, const PairOracle& pairs) {
  std::vector<Hypothesis> out;
  if (!pairs || !v.fn) return out;
  if (r.headline.find("scheduling while atomic") == std::string::npos &&
      r.headline.find("sleeping function called from invalid context") == std::string::npos)
    return out;
  const auto cs = csrc::find_calls(v.toks, v.fn->body, v.fn->last);
  auto line_of = [&](const csrc::Call& c) { return v.toks[c.name_tok].line; };
  std::string sleeper;
  for (const auto& c : cs)
    if (line_of(c) == at.line) {
      sleeper = c.callee;
      break;
    }
  if (sleeper.empty()) return out;
  for (std::size_t i = 0; i < cs.size() && line_of(cs[i]) < at.line; ++i) {
    const auto& a = cs[i];
    const std::string lock = lock_arg(a);
    if (lock.empty()) continue;
    // The same lock given back after the statement by another call: only then ask the kernel.
    const csrc::Call* release = nullptr;
    for (std::size_t j = i + 1; j < cs.size() && !release; ++j)
      if (line_of(cs[j]) > at.line && cs[j].callee != a.callee && lock_arg(cs[j]) == lock) release = &cs[j];
    if (!release) continue;
    const auto pair = pairs(a.callee);
    if (!pair.scoped() || pair.release != release->callee) continue;
    bool given_back = false;
    for (std::size_t j = i + 1; j < cs.size() && line_of(cs[j]) < at.line; ++j)
      given_back = given_back || (cs[j].callee == pair.release && lock_arg(cs[j]) == lock);
    if (given_back) continue;
    Hypothesis h;
    h.kind = "sleep-in-atomic";
    h.function = at.function;
    h.file = at.file;
    h.line = at.line;
    h.variable = source_text(v, a.arg_toks[0]);
    h.set_line = line_of(a);
    h.callee = sleeper;
    h.call = release->callee + "(";
    for (std::size_t k = 0; k < release->args.size(); ++k) h.call += (k ? ", " : "") + source_text(v, release->arg_toks[k]);
    h.call += ")";
    h.statement = fmt::format("{}() calls {}() at {}:{} while holding {} (taken with {}() at line {}, given back with {}() at "
                              "line {}): {}",
                              at.function, sleeper, at.file, at.line, h.variable, a.callee, h.set_line, release->callee,
                              line_of(*release), r.headline);
    h.evidence.push_back(r.headline);
    for (int l : {h.set_line, at.line, line_of(*release)})
      h.evidence.push_back(fmt::format("{}:{}: {}", at.file, l, trimmed(v.line_text(l))));
    h.evidence.push_back(fmt::format("the target kernel's drivers call {}() after {} of {} {}() calls in the same function",
                                     pair.release, pair.released, pair.calls, pair.acquire));
    out.push_back(std::move(h));
  }
  std::stable_sort(out.begin(), out.end(), [](const Hypothesis& a, const Hypothesis& b) { return a.set_line > b.set_line; });
  return out;
}

/// The hypotheses about a lock held at the crash: one another exit left held (a hang), or one
/// held while the statement sleeps.
std::vector<Hypothesis> held_lock_hypotheses(const CrashReport& r, const Location& at, const SourceView& v, const fs::path& tree,
                                             const PairOracle& pairs) {
  if (r.kind == CrashKind::hung_task || r.kind == CrashKind::soft_lockup || r.kind == CrashKind::rcu_stall ||
      r.kind == CrashKind::lockdep || r.nmi_hang())
    return lock_hypotheses(r, at, v, tree, pairs);
  if (r.kind == CrashKind::bug_other && v.fn) return sleep_hypotheses(r, at, v, pairs);
  return {};
}

/// The address the report faulted on lies where x86-64 maps modules (0xffffffffa0000000 and up,
/// below the fixmap): with no module frame in the trace, memory of a module that is gone.
} // namespace

bool module_address(const CrashReport& r) {
  static const std::regex k_addr(R"(address: ([0-9a-f]{16}))");
  std::string a;
  if (auto it = r.registers.find("CR2"); it != r.registers.end()) a = it->second;
  std::smatch m;
  if (a.empty() && std::regex_search(r.headline, m, k_addr)) a = m[1].str();
  if (a.size() != 16) return false;
  const unsigned long long v = std::strtoull(a.c_str(), nullptr, 16);
  return v >= 0xffffffffa0000000ULL && v < 0xffffffffff000000ULL;
}

namespace {

/// Missing cleanup on a failed init or probe: the crash touched memory of a module that is gone,
/// and an error exit of the driver's module_init or .probe function leaves something registered
/// that the kernel's drivers undo on their error paths (`undos`, see lock.hpp).
std::vector<Hypothesis> cleanup_hypotheses(const CrashReport& r, const std::vector<DriverFile>& files, const PairOracle& undos) {
  std::vector<Hypothesis> out;
  if (!undos) return out;
  for (const auto& f : files) {
    const auto entry = entry_functions(f.toks, f.units, false, 0); // module_init(f) and `.probe = f`
    for (const auto& u : f.units) {
      if (u.kind != csrc::UnitKind::function || !entry.count(u.name)) continue;
      std::set<std::string> asked;
      for (const auto& c : csrc::find_calls(f.toks, u.body, u.last)) {
        if (c.args.empty() || !asked.insert(c.callee).second || asked.size() > 40) continue;
        auto p = undos(c.callee);
        if (!undone(p)) continue;
        for (const auto& x : held_exits(f.toks, u, p, true)) {
          Hypothesis h;
          h.kind = "missing-cleanup";
          h.function = u.name;
          h.file = f.rel;
          h.line = x.exit_line;
          h.variable = x.lock;
          h.set_line = x.acquire_line;
          h.callee = p.release;
          h.call = x.release_call;
          h.statement = fmt::format("{}() fails at {}:{} without {} after {}() at line {} (the kernel's drivers undo it with "
                                    "{}() on their error paths); the crash reads memory of a module that is gone ({})",
                                    u.name, f.rel, x.exit_line, x.release_call, p.acquire, x.acquire_line, p.release, r.headline);
          h.evidence = {r.headline,
                        fmt::format("the target kernel's drivers call {}() after an error label following {} of {} {}() calls",
                                    p.release, p.released, p.calls, p.acquire)};
          out.push_back(std::move(h));
        }
      }
    }
  }
  return out;
}

/// Missing teardown on remove or exit: the crash touched memory of a module that is gone (a timer
/// or work still armed after rmmod runs the module's freed code), and the driver's setup begins
/// something (`timer_setup(&p->timer, ...)`) that the kernel's drivers end in their teardown
/// functions and the driver's teardown functions never end (`teardowns`, see teardown.hpp).
std::vector<Hypothesis> teardown_hypotheses(const CrashReport& r, const std::vector<DriverFile>& files,
                                            const PairOracle& teardowns, const std::set<std::string>& types = {},
                                            const std::string& why = "the crash runs code of a module that is gone",
                                            const PairOracle& undos = {}) {
  std::vector<Hypothesis> out;
  auto found = missing_teardowns(files, teardowns, types, undos);
  // A registration of an object the faulting function is handed goes first, the kernel's surest
  // pairs first; one the driver ends nowhere before one it ends elsewhere (a timer its .ndo_stop
  // deletes), and one it arms again outside setup before both.
  auto sure = [](const MissingTeardown& m) { return double(m.evidence.released) / std::max(1, m.evidence.calls); };
  std::stable_sort(found.begin(), found.end(),
                   [&](const MissingTeardown& a, const MissingTeardown& b) { return sure(a) > sure(b); });
  std::stable_partition(found.begin(), found.end(), [](const MissingTeardown& m) { return !m.ended_elsewhere; });
  // A member the driver arms again outside setup (a timer its .ndo_open helper starts) before one
  // it only sets up: the crash came from something running.
  std::stable_partition(found.begin(), found.end(), [](const MissingTeardown& m) { return m.armed; });
  std::stable_partition(found.begin(), found.end(), [](const MissingTeardown& m) { return !m.object_type.empty(); });
  for (const auto& m : found) {
    Hypothesis h;
    h.kind = "missing-teardown";
    h.function = m.teardown;
    h.file = m.file;
    h.line = m.insert_line;
    h.set_line = m.setup_line;
    h.variable = m.call.substr(m.call.find('(') + 1, m.call.size() - m.call.find('(') - 2);
    h.callee = m.release;
    h.call = m.call;
    h.statement = fmt::format("{}() never ends what {}() at {}:{} began ({}: the kernel's drivers end it with {}() when "
                              "they tear down); {} ({})",
                              m.teardown, m.setup, m.file, m.setup_line, h.variable, m.release, why, r.headline);
    h.evidence = {r.headline, fmt::format("the target kernel's drivers call {}() in a teardown function after {} of {} {}() "
                                          "calls",
                                          m.release, m.evidence.released, m.evidence.calls, m.setup)};
    out.push_back(std::move(h));
  }
  return out;
}

/// A fault in a driver function while the module is being unloaded, in a function its teardown
/// (remove, exit and what they call) does not reach: the kernel still called into the driver
/// through something the teardown left registered. The registrations of objects the faulting
/// function is handed (`struct net_device *` of an `.ndo_start_xmit`) are asked first. A kernel
/// check (BUG_ON, WARN) failing in a call the teardown itself makes (free_netdev(dev) of a device
/// still registered; the trace goes through remove or exit) asks the same of the objects that call
/// is given, and when none of those was left, of any object the setup registered: the check
/// tripped over what it left (pci_disable_msix() warning of an interrupt still requested by a
/// device never unregistered).
std::vector<Hypothesis> going_hypotheses(const CrashReport& r, const std::vector<Location>& where, const Location& fault,
                                         const SourceView& src, const fs::path& tree, const PairOracle& teardowns) {
  const auto files = read_driver(tree);
  bool in_teardown = false;
  for (const auto& f : files) {
    const auto down = entry_functions(f.toks, f.units, true);
    if (f.rel == fault.file && down.count(src.fn->name)) in_teardown = true;
    for (const auto& l : where)
      if (l.file == f.rel && (l.role == "fault" || l.role == "caller") && down.count(l.function)) in_teardown = true;
  }
  if (!in_teardown)
    return teardown_hypotheses(r, files, teardowns, parameter_types(src.toks, *src.fn),
                               fmt::format("{}() ran while the module was being unloaded", src.fn->name));
  // A kernel check that failed in a call the teardown makes: BUG_ON, WARN, or SLUB's (a cache
  // destroyed with objects left: what used it is still torn down later).
  if (r.kind != CrashKind::bug_on && r.kind != CrashKind::warning && r.kind != CrashKind::slab) return {};
  // The teardown undid a step while a later one still stood (teardown reverses setup).
  for (const auto& f : files) {
    const auto down = entry_functions(f.toks, f.units, true, 0);
    for (const auto& l : where) {
      if (l.file != f.rel || (l.role != "fault" && l.role != "caller") || !down.count(l.function)) continue;
      for (const auto& u : f.units) {
        if (u.kind != csrc::UnitKind::function || u.name != l.function) continue;
        if (auto o = teardown_out_of_order(f, u, l.line, teardowns)) {
          Hypothesis h{"teardown-order", "", u.name, f.rel, o->first_line, {r.headline}};
          h.set_line = o->later_line;
          h.callee = h.variable = o->callee;
          h.statement =
              fmt::format("{}() undoes a setup step at {}:{} while {}() at {}:{} has yet to undo a later step of "
                          "{}() ({}): teardown goes in the reverse order of setup, and the kernel's check failed "
                          "({})",
                          u.name, f.rel, o->first_line, o->callee, f.rel, o->later_line, o->setup_fn, o->why, r.headline);
          h.evidence.push_back(fmt::format("{}:{}: {}", f.rel, o->later_line, trimmed(src.line_text(o->later_line))));
          return {h};
        }
      }
    }
  }
  const std::string why =
      fmt::format("the kernel's check failed in what {}() calls at {}:{}", src.fn->name, fault.file, fault.line);
  auto out = teardown_hypotheses(r, files, teardowns, object_types_at(src.toks, *src.fn, fault.line), why);
  if (out.empty()) out = teardown_hypotheses(r, files, teardowns, {"*"}, why);
  return out;
}

/// A call of `release` on a line in (from, to) of the function: what was taken is given back.
bool released_between(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int from, int to, const std::string& release) {
  for (const auto& c : csrc::find_calls(t, fn.body, fn.last))
    if (c.callee == release && t[c.name_tok].line > from && t[c.name_tok].line < to) return true;
  return false;
}

/// The faulting line repeats an earlier call on the same object (`h` names the place): a double
/// release, or, for a call the kernel's drivers pair with a release in the same function, a lock
/// taken twice whose second acquisition waits for itself (scripts/coccinelle/locks/double_lock.cocci).
std::optional<Hypothesis> repeated_hypothesis(Hypothesis h, const SourceView& src, const PairOracle& pairs) {
  auto rc = repeated_call(src.toks, *src.fn, h.line);
  if (!rc) return std::nullopt;
  const auto pair = pairs ? pairs(rc->call.callee) : ScopedPair{};
  const bool acquire = pair.scoped();
  // A call with no argument names no object: only a lock taken twice is claimed.
  if (!acquire && rc->call.var.empty()) return std::nullopt;
  // Given back in between: taken again, not twice.
  if (acquire && released_between(src.toks, *src.fn, rc->first_line, rc->again_line, pair.release)) return std::nullopt;
  if (acquire) h.kind = "double-acquire";
  h.variable = rc->call.var;
  h.set_line = rc->first_line;
  h.callee = rc->call.callee;
  h.statement = acquire
                    ? fmt::format("{}() takes {} with {}() at {}:{} while it holds it since {}:{}: the second acquisition "
                                  "waits for itself",
                                  h.function, h.variable.empty() ? "its lock" : h.variable, h.callee, h.file, rc->again_line,
                                  h.file, rc->first_line)
                    : fmt::format("{}() calls {}({}) at {}:{} after calling it at {}:{} on the same path ({} is not set "
                                  "again in between)",
                                  h.function, h.callee, h.variable, h.file, rc->again_line, h.file, rc->first_line, h.variable);
  h.evidence.push_back(fmt::format("{}:{}: {}", h.file, rc->first_line, trimmed(src.line_text(rc->first_line))));
  return h;
}

/// The allocator refused a release (`h` names the place) of an object the driver allocated with a
/// managed interface (devm_kzalloc()): the driver core frees it again, or the pointer is not the
/// allocator's own (scripts/coccinelle/free/devm_free.cocci).
std::optional<Hypothesis> managed_hypothesis(const CrashReport& r, Hypothesis h, const SourceView& src,
                                             const ManagedOracle& managed) {
  auto m = managed_release(src.toks, src.units, *src.fn, h.line, managed);
  if (!m) return std::nullopt;
  h.variable = m->release.var;
  h.set_line = m->alloc_line;
  h.callee = m->release.callee;
  h.statement =
      fmt::format("{}() releases {} with {}() at {}:{}, but {} comes from {}() at line {}, which the driver core "
                  "releases itself when the driver unbinds ({})",
                  h.function, h.variable, h.callee, h.file, m->release_line, h.variable, m->allocator, m->alloc_line, r.headline);
  h.evidence.push_back(fmt::format("{}:{}: {}", h.file, m->alloc_line, trimmed(src.line_text(m->alloc_line))));
  h.evidence.push_back(fmt::format("{}() is one of the managed interfaces the kernel's "
                                   "Documentation/driver-api/driver-model/devres.rst lists",
                                   m->allocator));
  return h;
}

/// A stack overwritten in the function (`proto` names it): its loops that index a local array
/// past its end (bounds.hpp), each with the condition that stops inside the array.
std::vector<Hypothesis> loop_hypotheses(const CrashReport& r, const Hypothesis& proto, const SourceView& src,
                                        const ValueOracle& values) {
  std::vector<Hypothesis> out;
  for (const auto& o : loop_overruns(src.toks, *src.fn, src.text, values)) {
    Hypothesis h = proto;
    h.line = o.loop_line;
    h.set_line = o.array_line;
    h.variable = o.array;
    h.callee = o.index;
    // `<=` one past the end: `<`; any other bound: the array's own size.
    h.call = o.op == "<=" && o.last == o.size ? o.index + " < " + o.bound : o.index + " < " + o.size_text;
    h.statement = fmt::format("the loop at {}:{} ({} {} {}) indexes {}[{}] up to {}, and {}() declares {} with {} elements at "
                              "line {}: it writes past the array into the stack ({})",
                              h.file, o.loop_line, o.index, o.op, o.bound, o.array, o.index, o.last, src.fn->name, o.array,
                              o.size, o.array_line, r.detail);
    h.evidence.push_back(fmt::format("{}:{}: {}", h.file, o.array_line, trimmed(src.line_text(o.array_line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", h.file, o.loop_line, trimmed(src.line_text(o.loop_line))));
    out.push_back(std::move(h));
  }
  return out;
}

/// A local char array a formatted write overruns, in the function the stack protector names or
/// one it inlines (format_overruns): the array is declared large enough for the longest write.
std::vector<Hypothesis> format_hypotheses(const CrashReport& r, const Location& at, const SourceView& src, const fs::path& tree,
                                          const ValueOracle& values) {
  std::vector<Hypothesis> out;
  std::vector<std::vector<csrc::Token>> driver;
  for (auto& f : read_driver(tree)) driver.push_back(std::move(f.toks));
  for (const auto& o : format_overruns(src.toks, src.units, src.fn->name, src.text, values, driver)) {
    Hypothesis h{"buffer-size", "", o.function, at.file, o.array_line, {r.headline}};
    long long size = 1;
    while (size < o.need) size *= 2;
    h.variable = o.array;
    h.set_line = o.write_line;
    h.callee = o.writer;
    h.call = std::to_string(size);
    h.statement =
        fmt::format("{}() writes up to {} bytes into {} with {}() at {}:{}, and declares it with {} ({}) at line {}: "
                    "the write runs past the array into the stack ({})",
                    o.function, o.need, o.array, o.writer, at.file, o.write_line, o.size, o.size_text, o.array_line, r.detail);
    for (int l : {o.array_line, o.write_line})
      h.evidence.push_back(fmt::format("{}:{}: {}", at.file, l, trimmed(src.line_text(l))));
    out.push_back(std::move(h));
  }
  return out;
}

/// A stack the protector found overwritten: a loop past a local array, else a formatted write
/// past one.
std::vector<Hypothesis> stack_hypotheses(const CrashReport& r, const Hypothesis& proto, const Location& at, const SourceView& src,
                                         const fs::path& tree, const ValueOracle& values) {
  auto out = loop_hypotheses(r, proto, src, values);
  if (out.empty() && !tree.empty()) out = format_hypotheses(r, at, src, tree, values);
  return out;
}

/// A loop around the fault that runs one past the count the file's other loops over the same
/// array stop before (bounds.hpp); with the fault's line in an inlined callee, the loops of the
/// frame's own function `symbol`. At most three, the nearest first.
std::vector<Hypothesis> count_hypotheses(const Hypothesis& proto, const SourceView& src, const std::string& symbol) {
  std::vector<Hypothesis> out;
  const csrc::Unit* fn = src.fn;
  auto os = loops_past_count(src.toks, src.units, *fn, proto.line);
  if (os.empty())
    for (const auto& u : src.units)
      if (u.kind == csrc::UnitKind::function && u.name == symbol && &u != src.fn) {
        fn = &u;
        os = loops_past_count(src.toks, src.units, u, proto.line);
        break;
      }
  for (const auto& o : os) {
    if (out.size() == 3) break;
    Hypothesis h = proto;
    const std::string bound =
        src.text.substr(src.toks[o.bound_first].begin, src.toks[o.bound_last].end - src.toks[o.bound_first].begin);
    h.function = fn->name;
    h.line = h.set_line = o.loop_line;
    h.variable = o.array;
    h.callee = o.index;
    h.call = o.index + " < " + bound;
    h.statement =
        fmt::format("the loop at {}:{} runs {} up to {} inclusive and indexes {}[{}]; the file's other {} loop(s) over "
                    "{} stop before {} ({}:{}): its last pass is one past the end",
                    h.file, o.loop_line, o.index, bound, o.array, o.index, o.agree, o.array, bound, h.file, o.agree_line);
    h.evidence.push_back(fmt::format("{}:{}: {}", h.file, o.loop_line, trimmed(src.line_text(o.loop_line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", h.file, o.agree_line, trimmed(src.line_text(o.agree_line))));
    out.push_back(std::move(h));
  }
  return out;
}

/// No frame of the driver: the crash touched memory of a module that is gone (its code or data), or
/// the kernel walked what a driver left registered (a notifier, a device freed by devres while
/// still registered): what a failed init or probe, or a remove or exit, left behind. Both are
/// asked, the log rarely tells whether the module's init failed or its exit ran: a teardown missing
/// outright goes first (away from module memory, also registrations of any object), a missing undo
/// on an error path after it. The driver's files are read once.
std::vector<Hypothesis> left_behind_hypotheses(const CrashReport& r, const fs::path& tree, const PairOracle& undos,
                                               const PairOracle& teardowns) {
  const bool gone_code = module_address(r);
  const auto files = read_driver(tree);
  auto out = gone_code
                 ? teardown_hypotheses(r, files, teardowns, {}, "the crash runs code of a module that is gone", undos)
                 : teardown_hypotheses(r, files, teardowns, {"*"},
                                       "the crash has no frame of the driver: the kernel reached what it left behind", undos);
  if (gone_code)
    for (auto& h : cleanup_hypotheses(r, files, undos)) out.push_back(std::move(h));
  return out;
}

const Location* first_with(const std::vector<Location>& where, std::string_view role) {
  for (const auto& l : where)
    if (l.role == role) return &l;
  return nullptr;
}

std::string at_text(const Location& l) {
  return l.file.empty() ? l.function + "()" : fmt::format("{}() at {}:{}", l.function, l.file, l.line);
}

} // namespace

std::vector<Location> localize(const CrashReport& r, const std::set<std::string>& driver_modules, const fs::path& tree,
                               const std::string& build_root, const fs::path& kernel_src) {
  std::vector<Location> out;
  std::set<std::string> seen;
  std::optional<std::vector<std::string>> sources; // the tree's files, read when a built-in frame asks
  // A frame of the kernel image whose decoded source path ends with one of the tree's files (a
  // syzbot report of a driver built into the kernel: drivers/misc/x.c:30 for DIR/x.c).
  auto built_in = [&](const Frame& f) -> std::string {
    if (!f.module.empty() || f.file.empty() || tree.empty()) return "";
    if (!sources) sources = source_files(tree);
    std::string best;
    for (const auto& rel : *sources)
      if ((f.file == rel || f.file.ends_with("/" + rel)) && rel.size() > best.size()) best = rel;
    return best;
  };
  auto add = [&](const Frame& f, const std::string& why, const char* role) {
    std::string file = in_tree(f.file, build_root);
    if (f.module.empty()) {
      file = built_in(f);
      if (file.empty()) return;
    } else if (!driver_modules.empty() && !driver_modules.count(f.module)) {
      return;
    }
    std::string key = std::string(role) + "|" + f.function + "@" + f.file + ":" + std::to_string(f.line);
    if (!seen.insert(key).second) return;
    Location c{f.function, f.module, file, f.line, why, role, !f.file.empty()};
    if (c.file.empty() && !tree.empty())
      if (auto d = definition_of(tree, f.function)) c.file = d->first, c.line = d->second;
    out.push_back(std::move(c));
  };
  if (r.rip) add(*r.rip, "faulting instruction", "fault");
  // Without the RIP in the driver, the innermost driver frame of the trace is where its code went
  // wrong (it called into the kernel with what crashed there).
  int k = 0;
  for (const auto& f : r.trace)
    if (f.reliable) add(f, fmt::format("caller {} in the call trace", ++k), out.empty() ? "fault" : "caller");
  for (const auto& f : r.free_stack) add(f, "frees the object (the report's free stack)", "free");
  for (const auto& f : r.alloc_stack) add(f, "allocates the object (the report's allocation stack)", "alloc");
  for (const auto& l : r.locks)
    add(l.at, fmt::format("{} {} here (lockdep)", l.acquiring ? "tries to take" : "took", l.lock),
        out.empty() ? "fault" : "lock");
  if (out.empty())
    if (auto tc = lost_tail_call(r, tree, kernel_src)) {
      Location c{tc->function,
                 driver_modules.size() == 1 ? *driver_modules.begin() : std::string(),
                 tc->file,
                 tc->line,
                 fmt::format("its last statement tail-calls {}() (a tail call leaves no frame); {}() calls it as .{}", tc->callee,
                             tc->caller, tc->member),
                 "fault",
                 false,
                 "tail-call"};
      out.push_back(std::move(c));
    }
  // The outermost driver frame was tail-called: the lost caller is the driver's function the
  // kernel called (what it did before the tail call may be the cause).
  if (!out.empty())
    if (auto tc = lost_tail_caller(r, tree, kernel_src))
      out.push_back(Location{tc->function, out.back().module, tc->file, tc->line,
                             fmt::format("its last statement tail-calls {}() (a tail call leaves no frame); {}() calls it as .{}",
                                         tc->callee, tc->caller, tc->member),
                             "caller", false, "tail-call"});
  return out;
}

bool allocator_corruption(const CrashReport& r) {
  if (r.kind == CrashKind::kasan_out_of_bounds) return true;
  if (r.kind == CrashKind::slab)
    return r.detail.find("already free") == std::string::npos && r.detail.find("remaining") == std::string::npos;
  for (const auto& f : r.trace)
    if (f.function == "slab_pad_check" || f.function == "check_slab" || f.function == "check_object" ||
        f.function == "check_bytes_and_report")
      return true;
  return r.headline.find("corruption") != std::string::npos || r.detail.find("list_debug") != std::string::npos;
}

nlohmann::json to_json(const Location& l) {
  return {{"function", l.function},
          {"module", l.module},
          {"file", l.file},
          {"line", l.line},
          {"why", l.why},
          {"role", l.role},
          {"from_debug_info", l.from_debug_info},
          {"inferred", l.inferred}};
}

nlohmann::json to_json(const Hypothesis& h) {
  return {{"kind", h.kind}, {"statement", h.statement}, {"function", h.function},
          {"file", h.file}, {"line", h.line},           {"evidence", h.evidence}};
}

void rank_by_hypotheses(std::vector<Location>& where, const std::vector<Hypothesis>& hyps) {
  if (hyps.empty()) return;
  const Hypothesis& h = hyps.front();
  if (where.empty()) {
    // A crash with no frame in the driver that the source explains (missing cleanup).
    if (h.kind == "missing-cleanup")
      where.push_back(Location{h.function, "", h.file, h.line, fmt::format("fails without {} (the driver's source)", h.call),
                               "cause", false});
    if (h.kind == "missing-teardown")
      where.push_back(Location{h.function, "", h.file, h.line,
                               fmt::format("ends without {} (begun at line {}; the driver's source)", h.call, h.set_line),
                               "cause", false});
    if (h.kind == "alloc-size")
      where.push_back(Location{h.function, "", h.file, h.set_line,
                               fmt::format("sizes {} with the size of a pointer (the driver's source)", h.variable), "cause",
                               false});
    return;
  }
  Location cause{h.function, where.front().module, h.file, 0, "", "cause", false};
  if (h.kind == "use-after-release") {
    cause.line = h.set_line;
    cause.why =
        fmt::format("releases {} with {}() before the use at line {} (the driver's source)", h.variable, h.callee, h.line);
  } else if (h.kind == "double-release") {
    cause.line = h.line;
    cause.why =
        fmt::format("calls {}({}) a second time (first at line {}; the driver's source)", h.callee, h.variable, h.set_line);
  } else if (h.kind == "buffer-size") {
    cause.line = h.line;
    cause.why = fmt::format("declares {} too small for what {}() writes at line {} (the driver's source)", h.variable, h.callee,
                            h.set_line);
  } else if (h.kind == "never-initialised") {
    cause.line = h.set_line;
    cause.why = fmt::format("makes the object and never initialises {} with {}() (the driver's source)", h.variable, h.callee);
  } else if (h.kind == "never-set") {
    cause.line = h.line;
    cause.why = fmt::format("makes {} and never stores it with {}() (the driver's source)", h.variable, h.callee);
  } else if (h.kind == "alloc-size") {
    cause.line = h.set_line;
    cause.why = fmt::format("allocates {} with the size of a pointer (the driver's source)", h.variable);
  } else if (h.kind == "teardown-order") {
    cause.line = h.line;
    cause.why =
        fmt::format("undoes its step before {}() at line {} undoes a later one (the driver's source)", h.callee, h.set_line);
  } else if (h.kind == "loop-bound") {
    cause.line = h.line;
    cause.why = fmt::format("indexes {} past its end (the driver's source)", h.variable);
  } else if (h.kind == "missing-teardown") {
    cause.line = h.line;
    cause.why = fmt::format("ends without {} (begun at line {}; the driver's source)", h.call, h.set_line);
  } else if (h.kind == "missing-unlock") {
    cause.line = h.line;
    cause.why = fmt::format("leaves {} held (taken at line {}; the driver's source)",
                            h.variable.empty() ? "its lock" : h.variable, h.set_line);
  } else {
    return;
  }
  if (cause.line == where.front().line && cause.file == where.front().file) return;
  where.insert(where.begin(), std::move(cause));
}

namespace {

/// The report shows the slab allocator's poison of freed objects (POISON_FREE, 0x6b in every byte:
/// include/linux/poison.h) as the faulting address (plus a member's offset) or in a register: the
/// faulting code used a pointer it loaded from an object already freed.
bool reads_freed_memory(const CrashReport& r) {
  constexpr std::string_view poison = "6b6b6b6b6b6b"; // the high six bytes; the offset may change the rest
  if (r.headline.find(poison) != std::string::npos) return true;
  for (const auto& [name, value] : r.registers)
    if (value.starts_with(poison)) return true;
  return false;
}

/// The last members of the object paths the calls on `line` of `fn` are handed
/// (`clean_ring(adapter->tx_ring)`: tx_ring).
std::set<std::string> members_handed_on(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line) {
  std::set<std::string> out;
  for (const auto& c : csrc::find_calls(t, fn.body, fn.last)) {
    if (t[c.name_tok].line != line) continue;
    for (std::size_t n = 0; n < c.arg_toks.size(); ++n)
      if (const auto path = argument_path(t, c, n); path.find_first_of(".>") != std::string::npos)
        if (auto m = csrc::last_member(path); !m.empty()) out.insert(m);
  }
  return out;
}

/// A use after release through a call: the faulting function reads what a caller further down the
/// trace released before the call that led here: a member (`cp->regs`, also through the driver's
/// macros: `iounmap(cp->regs); unregister_netdev(dev);` -> .ndo_stop reads the registers), the
/// object the call is handed or one derived from it (`scsi_host_put(host); release(adapter);` with
/// `adapter = shost_priv(host)`), or a member one of the driver's own functions released
/// (`release_resources(adapter); shutdown(adapter);`, the first unmapping adapter->mmioBase).
std::optional<Hypothesis> release_through_call(const CrashReport& r, const std::vector<Location>& where, const Location& fault,
                                               const SourceView& src, const fs::path& tree, const ReleaseOracle& releases) {
  if (!releases) return std::nullopt;
  auto members = members_read_on(src.toks, fault.line, read_driver(tree, ".h"));
  // A pointer loaded from freed memory faulted: the freed object may be any one the calls above
  // were handed (`clean_ring(adapter->tx_ring)` reads the ring's buffers through the freed ring).
  const bool freed = reads_freed_memory(r);
  std::optional<std::vector<DriverFile>> driver;
  bool below = false;
  for (const auto& c : where) {
    below = below || (c.line == fault.line && c.file == fault.file); // the fault may name the function inlined there
    if (!below || c.role != "caller" || c.line <= 0 || (c.function == fault.function && c.file == fault.file)) continue;
    auto cv = view(tree, c);
    if (!cv || !cv->fn) continue;
    if (!driver) driver = read_driver(tree);
    if (freed) members.merge(members_handed_on(cv->toks, *cv->fn, c.line));
    auto rb = release_before_call(cv->toks, *cv->fn, c.line, members, releases, &*driver);
    if (!rb) continue;
    const std::string name = cv->fn->name.empty() ? c.function : cv->fn->name;
    // The release is the very call that led here, made once before (`release_res(adapter);` on two
    // lines): the same release twice, not one too early.
    if (auto h = repeated_hypothesis(Hypothesis{"double-release", "", name, c.file, c.line, {}}, *cv, {});
        h && h->set_line == rb->at.release_line) {
      h->statement +=
          fmt::format(", and the first call already released what the second reaches at {}:{}", fault.file, fault.line);
      h->evidence.push_back(fmt::format("{}:{}: {}", c.file, c.line, trimmed(cv->line_text(c.line))));
      return h;
    }
    Hypothesis h{"use-after-release", "", name, c.file, c.line, {}};
    h.variable = rb->at.release.var;
    h.set_line = rb->at.release_line;
    h.callee = rb->at.release.callee;
    const std::string released =
        rb->inside ? fmt::format("calls {}({}) at {}:{}, which releases {} with {}() at {}:{},", h.callee, h.variable, c.file,
                                 rb->at.release_line, rb->inside->path, rb->inside->callee, rb->inside->file, rb->inside->line)
                   : fmt::format("releases {} with {}() at {}:{}", h.variable, h.callee, c.file, rb->at.release_line);
    h.statement = fmt::format("{}() {} and then calls what reaches {}() at {}:{}, which still reads it at {}:{}", name, released,
                              fault.function, c.file, c.line, fault.file, fault.line);
    h.evidence.push_back(fmt::format("{}:{}: {}", c.file, rb->at.release_line, trimmed(cv->line_text(rb->at.release_line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", c.file, c.line, trimmed(cv->line_text(c.line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", fault.file, fault.line, trimmed(src.line_text(fault.line))));
    const auto& ev = rb->inside ? rb->inside->evidence : rb->at.evidence;
    h.evidence.push_back(fmt::format("the target kernel's drivers do not use that argument of {}() after {} of {} calls",
                                     ev.callee, ev.last_use, ev.calls));
    return h;
  }
  return std::nullopt;
}

/// Members the line dereferences through a path (`priv->ring->head`, `priv->ring[i]`: ring).
std::set<std::string> dereferenced_members(const SourceView& v, int line) {
  std::set<std::string> out;
  const auto& t = v.toks;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].line != line) continue;
    auto [path, end] = csrc::object_path(t, i);
    // Every member of the path that is itself followed by -> or [ (the last one only by [).
    for (std::size_t k = i + 2; k <= end + 0 && k < t.size(); k += 2)
      if (k + 1 < t.size() && (t[k + 1].text == "->" || t[k + 1].text == "[")) out.insert(t[k].text);
    if (!path.empty()) i = end;
  }
  return out;
}

/// An allocation sized by a pointer (alloc_size) whose object the faulting statement names, or the
/// driver's only one when the allocator found corruption and no driver statement says whose: the
/// allocator reports the overrun where it next checks the memory, usually far from the cause.
std::optional<Hypothesis> pointer_sized(const CrashReport& r, const Location* fault, const SourceView* src,
                                        const fs::path& tree) {
  const bool overrun = allocator_corruption(r);
  if (tree.empty() || (!overrun && r.kind != CrashKind::general_protection && r.kind != CrashKind::bug_on)) return std::nullopt;
  const auto sites = pointer_sized_allocs(read_driver(tree));
  if (sites.empty()) return std::nullopt;
  std::set<std::string> names;
  if (fault && src) {
    names = members_read_on(src->toks, fault->line, read_driver(tree, ".h"));
    for (const auto& tok : src->toks)
      if (tok.line == fault->line && tok.kind == csrc::TokKind::ident) names.insert(tok.text);
  }
  const PointerSizedAlloc* a = nullptr;
  for (const auto& s : sites)
    if (!a && names.count(csrc::last_member(s.target))) a = &s;
  // The one such allocation of the driver, for any report of corrupted memory.
  if (!a && sites.size() == 1) a = &sites.front();
  if (!a) return std::nullopt;
  const std::string where =
      fault ? fmt::format("{}() at {}:{}", fault->function, fault->file, fault->line) : std::string("the kernel");
  Hypothesis h{"alloc-size", "", a->function, a->file, a->line, {}};
  h.variable = a->target;
  h.set_line = a->line;
  h.callee = a->callee;
  const std::string operand = a->type.empty() ? a->target : a->type;
  h.statement =
      fmt::format("{}() sizes memory for {} at {}:{} with sizeof({}), the size of a pointer, not of what {} "
                  "points to; {} finds memory written past an object ({})",
                  a->function, a->target, a->file, a->line, operand, a->target, where, r.detail.empty() ? r.headline : r.detail);
  h.evidence.push_back(fmt::format("{}:{}: sizeof({})", a->file, a->line, operand));
  if (fault && src)
    h.evidence.push_back(fmt::format("{}:{}: {}", fault->file, fault->line, trimmed(src->line_text(fault->line))));
  return h;
}

/// pointer_sized's hypothesis first when the allocator found the corruption, after the others for
/// any other fault.
void add_pointer_sized(std::vector<Hypothesis>& out, const CrashReport& r, const Location* fault, const SourceView* src,
                       const fs::path& tree) {
  auto h = pointer_sized(r, fault, src, tree);
  if (!h) return;
  if (allocator_corruption(r)) out.insert(out.begin(), std::move(*h));
  else out.push_back(std::move(*h));
}

/// A NULL read back through a getter whose setter the driver never calls (never_set): the
/// setter goes where the value is made.
std::optional<Hypothesis> never_set_hypothesis(const Hypothesis& unchecked, const Location& fault, const std::string& fn,
                                               const fs::path& tree) {
  auto ns = never_set(read_driver(tree), fault.file, fn, unchecked.variable, unchecked.callee);
  if (!ns) return std::nullopt;
  Hypothesis h{"never-set", "", ns->function, ns->file, ns->made_line, {}};
  h.variable = unchecked.variable;
  h.set_line = ns->after_line;
  h.callee = ns->setter;
  h.call = ns->statement;
  h.statement = fmt::format("{}() reads {} back with {}() at {}:{} and gets NULL: no function of the driver calls a "
                            "*{}() to store it; {}() makes it at {}:{}",
                            fn, unchecked.variable, unchecked.callee, fault.file, unchecked.set_line,
                            ns->setter.substr(ns->setter.rfind("set")), ns->function, ns->file, ns->made_line);
  h.evidence = unchecked.evidence;
  return h;
}

/// A NULL read through a pointer member of the driver's own struct that nothing in the driver ever
/// assigns (member_never_set), read by a function on the crash's path (`readers`, the faulting
/// function's names, then the callers of `where`): the assignment goes where the object is made.
std::optional<Hypothesis> unset_member_hypothesis(const CrashReport& r, const std::vector<Location>& where,
                                                  std::vector<std::string> readers, const fs::path& tree) {
  for (const auto& c : where)
    if (c.role == "caller") readers.push_back(c.function);
  auto m = member_never_set(read_driver(tree), readers);
  if (!m) return std::nullopt;
  Hypothesis h{"never-set", "", m->function, m->file, m->made_line, {r.headline}};
  h.variable = m->statement.substr(0, m->statement.find(" = "));
  h.set_line = m->after_line;
  h.call = m->statement;
  h.statement = fmt::format("{}() reads {}'s member {} at line {}, which no function of the driver ever assigns (the "
                            "object's memory is zeroed, so it is NULL); {}() makes the object at {}:{}",
                            m->reader, m->owner, m->member, m->read_line, m->function, m->file, m->made_line);
  return h;
}

/// The fault line tests a pointer for NULL in the kernel's BUG_ON() or WARN_ON() (`BUG_ON(!dev)`,
/// `BUG_ON(dev == NULL)`) right after reading it back through a getter (`dev =
/// pci_get_drvdata(pdev)`): the getter returned NULL, as an unchecked result that the assertion
/// caught; never_set then asks whether the driver ever stores it.
std::optional<Hypothesis> asserted_null(const CrashReport& r, const Location& at, const SourceView& v) {
  const auto& t = v.toks;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (t[i].line != at.line || t[i].kind != csrc::TokKind::ident) continue;
    const bool negated = i > 0 && t[i - 1].text == "!";
    const bool compared =
        (t[i + 1].text == "==" && t[i + 2].text == "NULL") || (i > 1 && t[i - 1].text == "==" && t[i - 2].text == "NULL");
    if (!negated && !compared) continue;
    const Assignment* before = nullptr;
    const auto as = assignments(v, t[i].text);
    for (const auto& a : as)
      if (a.line <= at.line) before = &a;
    if (!before || before->callee.empty()) continue;
    Hypothesis h{"unchecked-result", "", at.function, at.file, at.line, {r.headline}};
    h.variable = t[i].text;
    h.set_line = before->line;
    h.callee = before->callee;
    h.evidence.push_back(fmt::format("{}:{}: {}", at.file, at.line, trimmed(v.line_text(at.line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", at.file, before->line, trimmed(v.line_text(before->line))));
    h.statement = fmt::format("{} = {}() at {}:{} is NULL where {}() asserts it is not at {}:{}", h.variable, h.callee, at.file,
                              before->line, at.function, at.file, at.line);
    return h;
  }
  return std::nullopt;
}

/// Members the line reads only inside the driver's function-like macros it calls (`cpw16(...)`
/// writing through `cp->regs`): the line's text shows no dereference, the expansion does.
std::set<std::string> members_in_macros(const SourceView& v, int line, const fs::path& tree) {
  auto all = members_read_on(v.toks, line, read_driver(tree, ".h"));
  for (std::size_t i = 1; i < v.toks.size(); ++i)
    if (v.toks[i].line == line && (v.toks[i - 1].text == "->" || v.toks[i - 1].text == ".")) all.erase(v.toks[i].text);
  return all;
}

/// A member the faulting function dereferences while it is still NULL because a caller down the
/// trace sets it only after the call that led there (`x->ring = ...` after `register_netdev()` or
/// after a direct call; `cp->regs = regs` after `cp_stop_hw(cp)` whose macros write through it):
/// the assignment is the cause, use-before-set in the caller.
std::optional<Hypothesis> field_set_after_call(const std::vector<Location>& where, const Location& fault, const SourceView& src,
                                               const fs::path& tree) {
  auto members = dereferenced_members(src, fault.line);
  members.merge(members_in_macros(src, fault.line, tree));
  if (members.empty()) return std::nullopt;
  bool below = false;
  for (const auto& c : where) {
    below = below || (c.line == fault.line && c.file == fault.file);
    if (!below || c.role != "caller" || c.line <= 0 || (c.function == fault.function && c.file == fault.file)) continue;
    auto cv = view(tree, c);
    if (!cv || !cv->fn) continue;
    const auto& t = cv->toks;
    int set_before = 0, set_after = 0;
    std::string var, rhs;
    for (std::size_t i = cv->fn->body; i < cv->fn->last; ++i) {
      auto [path, end] = csrc::object_path(t, i);
      if (path.empty()) continue;
      const std::size_t m = end;
      if (end > i && members.count(t[m].text) && end + 2 < t.size() && t[end + 1].text == "=") {
        std::size_t e = end + 2;
        while (e < cv->fn->last && t[e].text != ";") ++e;
        std::string value = csrc::join_tokens(t, end + 2, e - 1);
        if (t[i].line < c.line && !null_value(value)) set_before = t[i].line; // set (not to NULL) before the call
        else if (t[i].line > c.line && !set_after && !null_value(value)) set_after = t[i].line, var = path, rhs = value;
      }
      i = end;
    }
    if (set_before || !set_after) continue;
    const std::string name = cv->fn->name.empty() ? c.function : cv->fn->name;
    Hypothesis h{"use-before-set", "", name, c.file, c.line, {}};
    h.variable = var;
    h.set_line = set_after;
    h.statement = fmt::format("{}() dereferences {} at {}:{} while it is still unset: {}() sets it only at {}:{}, after the "
                              "call at {}:{} that led there",
                              fault.function, var.substr(var.rfind("->") == std::string::npos ? 0 : var.rfind("->") + 2),
                              fault.file, fault.line, name, c.file, set_after, c.file, c.line);
    h.evidence.push_back(fmt::format("{}:{}: {}", fault.file, fault.line, trimmed(src.line_text(fault.line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", c.file, c.line, trimmed(cv->line_text(c.line))));
    h.evidence.push_back(fmt::format("{}:{}: {}", c.file, set_after, trimmed(cv->line_text(set_after))));
    return h;
  }
  return std::nullopt;
}

} // namespace

std::vector<Hypothesis> hypothesize(const CrashReport& r, const std::vector<Location>& where, const fs::path& tree,
                                    const ReleaseOracle& releases, const PairOracle& pairs, const PairOracle& undos,
                                    const PairOracle& teardowns, const ValueOracle& values, const ManagedOracle& managed,
                                    const InitOracle& inits, const AllocOracle& allocs) {
  std::vector<Hypothesis> out;
  const Location* fault = first_with(where, "fault");
  if (!fault) fault = first_with(where, "caller");
  if (!fault && where.empty() && !tree.empty()) out = left_behind_hypotheses(r, tree, undos, teardowns);
  // No faulting driver frame (none, or only KFENCE's allocation stack): the allocator's finding.
  if (!fault && !tree.empty() && allocator_corruption(r)) add_pointer_sized(out, r, nullptr, nullptr, tree);
  if (!fault) return out;
  auto src = view(tree, *fault);
  const std::string symbol = fault->function;
  // The frame names the symbol; an inlined function's line lies in the function the source names.
  Location named = *fault;
  if (src && src->fn && !src->fn->name.empty()) named.function = src->fn->name;
  fault = &named;
  const bool exact = fault->from_debug_info || !fault->inferred.empty(); // the line is a statement's
  const std::string code = src ? trimmed(src->line_text(fault->line)) : "";
  auto base = [&](const char* kind, std::string statement) {
    Hypothesis h{kind, std::move(statement), fault->function, fault->file, fault->line, {r.headline}};
    if (!code.empty()) h.evidence.push_back(fmt::format("{}:{}: {}", fault->file, fault->line, code));
    return h;
  };
  if (src && src->fn && exact &&
      (r.kind == CrashKind::slab || r.kind == CrashKind::kasan_double_free || r.kind == CrashKind::bug_on))
    if (auto h = managed_hypothesis(r, base("managed-release", ""), *src, managed)) out.push_back(std::move(*h));
  if (src && src->fn && exact && out.empty())
    if (auto h = repeated_hypothesis(base("double-release", ""), *src, pairs)) out.push_back(std::move(*h));
  if (src && src->fn && exact && out.empty())
    if (auto rb = release_before_use(src->toks, *src->fn, fault->line, releases)) {
      Hypothesis h = base("use-after-release", "");
      h.variable = rb->release.var;
      h.set_line = rb->release_line;
      h.callee = rb->release.callee;
      h.statement = fmt::format("{}() releases {} with {}() at {}:{} and still uses it at {}:{}", fault->function, h.variable,
                                h.callee, h.file, rb->release_line, h.file, rb->use_line);
      for (int l : {rb->release_line, rb->use_line})
        if (l != fault->line) h.evidence.push_back(fmt::format("{}:{}: {}", h.file, l, trimmed(src->line_text(l))));
      h.evidence.push_back(fmt::format("the target kernel's drivers do not use the argument of {}() after {} of {} calls",
                                       h.callee, rb->evidence.last_use, rb->evidence.calls));
      out.push_back(std::move(h));
    }
  if (src && src->fn && exact && out.empty())
    if (auto h = release_through_call(r, where, *fault, *src, tree, releases)) out.push_back(std::move(*h));
  const bool memory_fault = memory_fault_kind(r.kind);
  if (src && src->fn && exact && out.empty() && (memory_fault || r.kind == CrashKind::bug_on))
    for (auto& h : count_hypotheses(base("loop-bound", ""), *src, symbol)) out.push_back(std::move(h));
  if (src && src->fn && exact && out.empty() && memory_fault && r.kind != CrashKind::kasan_out_of_bounds)
    if (auto h = field_set_after_call(where, *fault, *src, tree)) out.push_back(std::move(*h));
  if (src && src->fn && exact && out.empty() && !tree.empty())
    for (auto& h : object_state_hypotheses(r, *fault, *src, tree, inits, allocs)) out.push_back(std::move(h));
  if (src && exact) add_pointer_sized(out, r, fault, &*src, tree);
  if (src && exact && out.empty())
    for (auto& h : held_lock_hypotheses(r, *fault, *src, tree, pairs)) out.push_back(std::move(h));
  if (src && src->fn && out.empty() && r.kind == CrashKind::panic && r.detail.find("stack-protector") != std::string::npos)
    for (auto& h : stack_hypotheses(r, base("loop-bound", ""), *fault, *src, tree, values)) out.push_back(std::move(h));
  if (src && src->fn && exact && out.empty() && !tree.empty() && !fault->module.empty() &&
      std::find(r.unloading.begin(), r.unloading.end(), fault->module) != r.unloading.end())
    for (auto& h : going_hypotheses(r, where, *fault, *src, tree, teardowns)) out.push_back(std::move(h));
  switch (r.kind) {
  case CrashKind::null_deref:
  case CrashKind::paging_request:
  case CrashKind::general_protection:
  case CrashKind::kasan_other:
  case CrashKind::oops: {
    if (r.kind == CrashKind::null_deref && src && !tree.empty())
      if (auto h = unset_member_hypothesis(r, where, {fault->function, symbol}, tree)) out.push_back(std::move(*h));
    std::optional<Hypothesis> pointer;
    if (src && exact) pointer = pointer_hypothesis(r, *fault, *src);
    if (pointer && pointer->kind == "unchecked-result" && src->fn && !tree.empty())
      if (auto h = never_set_hypothesis(*pointer, *fault, src->fn->name, tree)) out.push_back(std::move(*h));
    if (pointer) out.push_back(std::move(*pointer));
    else
      out.push_back(base(
          r.kind == CrashKind::null_deref ? "null-pointer" : "bad-pointer",
          fmt::format("{} dereferences {} pointer", at_text(*fault), r.kind == CrashKind::null_deref ? "a NULL" : "an invalid")));
    break;
  }
  case CrashKind::kasan_use_after_free: {
    const Location* freed = first_with(where, "free");
    const Location* made = first_with(where, "alloc");
    std::string rw = r.access.starts_with("Write") ? "written" : "read";
    out.push_back(
        base("use-after-free",
             fmt::format("the object{} is {} by {} after {}", made ? " allocated by " + at_text(*made) : "", rw, at_text(*fault),
                         freed ? "it was freed by " + at_text(*freed) : "it was freed (the free stack is not the driver's)")));
    break;
  }
  case CrashKind::kasan_double_free: {
    const Location* freed = first_with(where, "free");
    out.push_back(base("double-free", fmt::format("{} frees an object {}", at_text(*fault),
                                                  freed ? "already freed by " + at_text(*freed) : "that was already freed")));
    break;
  }
  case CrashKind::slab: {
    const Location* freed = first_with(where, "free");
    const Location* made = first_with(where, "alloc");
    const std::string by = freed ? "already freed by " + at_text(*freed) : "that was already freed";
    if (r.detail.find("already free") != std::string::npos)
      out.push_back(base("double-free", fmt::format("{} frees an object {}", at_text(*fault), by)));
    else if (r.detail.find("overwritten") != std::string::npos)
      out.push_back(base("use-after-free", fmt::format("the object{} was written after it was freed{} (the allocator found "
                                                       "it changed: {}; the write came before {})",
                                                       made ? " allocated by " + at_text(*made) : "",
                                                       freed ? " by " + at_text(*freed) : "", r.detail, at_text(*fault))));
    else
      out.push_back(base("bug-condition", fmt::format("the slab allocator's check failed at {}: {}", at_text(*fault), r.detail)));
    break;
  }
  case CrashKind::kasan_out_of_bounds:
    out.push_back(base("bad-pointer", fmt::format("{} accesses memory out of its object's bounds ({})", at_text(*fault),
                                                  r.access.empty() ? r.detail : r.access)));
    break;
  case CrashKind::warning:
    out.push_back(base("warn-condition", fmt::format("the WARN condition {} holds ({})", at_text(*fault), r.detail)));
    break;
  case CrashKind::bug_on:
    if (auto a = src && src->fn && exact && !tree.empty() ? asserted_null(r, *fault, *src) : std::nullopt)
      if (auto h = never_set_hypothesis(*a, *fault, src->fn->name, tree)) out.insert(out.begin(), std::move(*h));
    out.push_back(base("bug-condition", fmt::format("the BUG_ON condition {} holds ({})", at_text(*fault), r.detail)));
    break;
  case CrashKind::refcount:
    out.push_back(base("refcount-underflow", fmt::format("{} drops a reference that is already gone ({}): a put without "
                                                         "its get, or a second put",
                                                         at_text(*fault), r.detail)));
    break;
  case CrashKind::lockdep:
    out.push_back(
        base("lock-order", fmt::format("{} takes a lock in an order that can deadlock ({})", at_text(*fault), r.detail)));
    break;
  case CrashKind::soft_lockup:
  case CrashKind::hung_task:
  case CrashKind::rcu_stall:
    out.push_back(
        base("blocked", fmt::format("{} does not return: it {}", at_text(*fault),
                                    r.kind == CrashKind::hung_task ? "sleeps without being woken" : "spins without yielding")));
    break;
  case CrashKind::ubsan:
    out.push_back(base("bad-pointer", fmt::format("{} has undefined behaviour: {}", at_text(*fault), r.detail)));
    break;
  case CrashKind::panic:
  case CrashKind::bug_other:
    out.push_back(base("bug-condition", fmt::format("{} is where the kernel stopped: {}", at_text(*fault), r.headline)));
    break;
  }
  return out;
}

} // namespace autodriver::crash
