#include "autodriver/crash/teardown.hpp"

#include "autodriver/csrc/scan.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/memo.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

/// The first argument of a call as one string without blanks ("&p->timer").
std::string first_arg(const csrc::Call& c) {
  if (c.args.empty()) return {};
  std::string out;
  for (char ch : c.args[0])
    if (ch != ' ') out += ch;
  return out;
}

/// A setup's object: its first argument takes the address of a variable or member (`&p->timer`,
/// `&t`); what the setup begins lives there.
bool addressed(const std::string& arg) { return arg.size() > 1 && arg[0] == '&' && arg.find('(') == std::string::npos; }

/// Functions of `units` whose bodies lie in the set `names`.
std::vector<const csrc::Unit*> functions_in(const std::vector<csrc::Unit>& units, const std::set<std::string>& names) {
  std::vector<const csrc::Unit*> out;
  for (const auto& u : units)
    if (u.kind == csrc::UnitKind::function && names.count(u.name)) out.push_back(&u);
  return out;
}

/// A call in `fns` whose first argument names `member` last (other than `except`).
bool named_in(const std::vector<csrc::Token>& t, const std::vector<const csrc::Unit*>& fns, const std::string& member,
              const std::string& except, std::set<std::string>* callees = nullptr) {
  bool any = false;
  for (const auto* f : fns)
    for (const auto& c : csrc::find_calls(t, f->body, f->last))
      if (c.callee != except && csrc::last_member(first_arg(c)) == member) {
        any = true;
        if (callees) callees->insert(c.callee);
      }
  return any;
}

/// A plain C identifier ("netdev"), not a path or an expression.
bool identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

/// A pointer to a struct ("struct net_device *"): an object a registration can keep.
bool pointer_type(const std::string& type) { return type.starts_with("struct ") && type.ends_with("*"); }

/// The function `registrar(f)` names ("module_init"), or empty.
std::string registered(const std::vector<csrc::Token>& t, const char* registrar) {
  for (std::size_t i = 0; i + 2 < t.size(); ++i)
    if (t[i].text == registrar && t[i + 1].text == "(") return t[i + 2].text;
  return {};
}

/// The names of every function of the file.
std::set<std::string> all_functions(const std::vector<csrc::Unit>& units) {
  std::set<std::string> out;
  for (const auto& u : units)
    if (u.kind == csrc::UnitKind::function) out.insert(u.name);
  return out;
}

/// Some function of `fns` calls `callee`.
bool calls_in(const std::vector<csrc::Token>& t, const std::vector<const csrc::Unit*>& fns, const std::string& callee) {
  for (const auto* f : fns)
    for (std::size_t i = f->body; i + 1 < f->last; ++i)
      if (t[i].text == callee && t[i + 1].text == "(") return true;
  return false;
}

/// Token i starts a label `name:` (a statement's first token followed by ':'; `case X:` is not one,
/// `default:` is).
bool starts_label(const std::vector<csrc::Token>& t, std::size_t i) {
  return t[i].kind == csrc::TokKind::ident && t[i + 1].text == ":" &&
         (t[i - 1].text == ";" || t[i - 1].text == "{" || t[i - 1].text == "}");
}

/// The calls that undo what function `a` does: those under its own error labels (its unwind
/// ladder: `err_irq: e100_clean_cbs(nic);`) and the kernel drivers' undo calls of its calls
/// (`request_irq` -> `free_irq`, undo_pair).
std::set<std::string> undo_calls_of(const std::vector<csrc::Token>& t, const csrc::Unit& a, const PairOracle& undos) {
  std::set<std::string> out;
  bool ladder = false;
  for (std::size_t i = a.body + 1; i + 1 < a.last; ++i) {
    if (starts_label(t, i) && t[i].text != "default") ladder = true;
    if (t[i].kind != csrc::TokKind::ident || t[i + 1].text != "(") continue;
    if (ladder) out.insert(t[i].text);
    else if (undos) {
      if (auto p = undos(t[i].text); undone(p)) out.insert(p.release);
    }
  }
  return out;
}

/// The function of the file that undoes what `a` does (a .ndo_stop helper for the .ndo_open helper
/// that arms a timer): the other function making the most distinct calls of undo_calls_of(a), at
/// least one, alone at the top; nullptr otherwise.
const csrc::Unit* counterpart(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units, const csrc::Unit& a,
                              const PairOracle& undos) {
  const auto undo = undo_calls_of(t, a, undos);
  const csrc::Unit* best = nullptr;
  std::size_t most = 0;
  bool tie = false;
  for (const auto& u : units) {
    if (u.kind != csrc::UnitKind::function || u.name == a.name) continue;
    std::set<std::string> made;
    for (const auto& c : csrc::find_calls(t, u.body, u.last))
      if (undo.count(c.callee)) made.insert(c.callee);
    if (made.size() > most) best = &u, most = made.size(), tie = false;
    else if (made.size() == most && most > 0) tie = true;
  }
  return tie ? nullptr : best;
}

/// The counterpart (above) of a function outside `setup` that names `member` in a call other than
/// `setup_call` and `release` (arms it: `mod_timer(&p->member, ...)`), the first found; nullptr
/// when none arms it there or no counterpart stands out.
const csrc::Unit* armed_counterpart(const DriverFile& f, const std::vector<const csrc::Unit*>& setup, const std::string& member,
                                    const std::string& setup_call, const std::string& release, const PairOracle& undos) {
  for (const auto& u : f.units) {
    if (u.kind != csrc::UnitKind::function || std::find(setup.begin(), setup.end(), &u) != setup.end()) continue;
    for (const auto& c : csrc::find_calls(f.toks, u.body, u.last)) {
      const std::string arg = first_arg(c);
      if (c.callee == setup_call || c.callee == release || !addressed(arg) || csrc::last_member(arg) != member) continue;
      if (const auto* b = counterpart(f.toks, f.units, u, undos); b && b->name != u.name) return b;
    }
  }
  return nullptr;
}

/// The variable is named again after token `at` in the function (the object outlives a call there).
bool named_after(const std::vector<csrc::Token>& t, const csrc::Unit& fn, std::size_t at, const std::string& name) {
  for (std::size_t i = at + 1; i < fn.last; ++i)
    if (t[i].text == name) return true;
  return false;
}

/// A call in `fns` (other than `except`; `only` that callee when given) whose first argument is a
/// variable the calling function declares with `type`. With `outlived`, only calls after which
/// the function still names the variable: the call ends something on the object, not the object
/// itself (unregister_netdev(dev), not the free_netdev(dev) that ends every setup on it).
bool typed_in(const std::vector<csrc::Token>& t, const std::vector<const csrc::Unit*>& fns, const std::string& type,
              const std::string& except, std::set<std::string>* callees = nullptr, const std::string& only = "",
              bool outlived = false) {
  bool any = false;
  for (const auto* f : fns)
    for (const auto& c : csrc::find_calls(t, f->body, f->last)) {
      const std::string arg = first_arg(c);
      // A statement of its own (`unregister_netdev(dev);`), not a value read (`p = netdev_priv(dev)`).
      const bool statement = c.close_tok + 1 < t.size() && t[c.close_tok + 1].text == ";" && c.name_tok > 0 &&
                             (t[c.name_tok - 1].text == ";" || t[c.name_tok - 1].text == "{" || t[c.name_tok - 1].text == "}" ||
                              t[c.name_tok - 1].text == ")");
      if (c.callee != except && (only.empty() || c.callee == only) && statement && identifier(arg) &&
          csrc::declared_type(t, *f, arg) == type && (!outlived || named_after(t, *f, c.close_tok, arg))) {
        any = true;
        if (callees) callees->insert(c.callee);
      }
    }
  return any;
}

/// The variable `fn` declares with type `type`, or empty.
std::string variable_of_type(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& type) {
  for (std::size_t i = fn.first + 1; i + 1 < fn.last; ++i)
    if (t[i].kind == csrc::TokKind::ident && t[i - 1].text == "*" &&
        (t[i + 1].text == "=" || t[i + 1].text == ";" || t[i + 1].text == "," || t[i + 1].text == ")"))
      if (csrc::declared_type(t, fn, t[i].text) == type) return t[i].text;
  return {};
}

/// The line after the leading declarations of `fn`'s body (where a first statement goes), or 0.
int after_declarations(const std::vector<csrc::Token>& t, const csrc::Unit& fn) {
  auto sts = csrc::block_statements(t, fn.body);
  // An empty body: before its closing brace, when that has a line of its own.
  if (sts.empty()) return t[fn.last].line > t[fn.body].line ? t[fn.last].line : 0;
  for (const auto& [a, b] : sts) {
    // A declaration: a type word first, or `name *var` / `name var` followed by `=` or `;`.
    const auto& w = t[a].text;
    bool decl = w == "struct" || w == "union" || w == "enum" || w == "const" || w == "unsigned" || w == "int" || w == "long" ||
                w == "char" || w == "bool" || w == "u8" || w == "u16" || w == "u32" || w == "u64";
    if (!decl && a + 2 <= b && t[a].kind == csrc::TokKind::ident &&
        (t[a + 1].kind == csrc::TokKind::ident || (t[a + 1].text == "*" && t[a + 2].kind == csrc::TokKind::ident)))
      decl = true;
    if (!decl) return t[a].line;
  }
  return t[sts.back().second].line + 1;
}

} // namespace

std::set<std::string> entry_functions(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units, bool teardown,
                                      int levels) {
  std::set<std::string> out;
  const char* registrar = teardown ? "module_exit" : "module_init";
  for (std::size_t i = 0; i + 2 < t.size(); ++i)
    if (t[i].text == registrar && t[i + 1].text == "(") out.insert(t[i + 2].text);
  for (const auto& u : units) {
    if (u.kind != csrc::UnitKind::initializer) continue;
    for (const auto& d : csrc::designated_members(t, u)) {
      if (teardown ? !d.member.starts_with("remove") : d.member != "probe") continue;
      for (const auto& w : csrc::identifiers(d.value))
        if (function_named(units, w)) out.insert(w);
    }
  }
  // Levels down: the file's own functions they call (remove -> stop -> the timer's end).
  for (int level = 0; level < levels; ++level) {
    std::set<std::string> more;
    for (const auto* f : functions_in(units, out))
      for (const auto& c : csrc::find_calls(t, f->body, f->last))
        if (function_named(units, c.callee)) more.insert(c.callee);
    out.insert(more.begin(), more.end());
  }
  return out;
}

ScopedPair teardown_pair(const fs::path& kernel_src, const std::string& setup) {
  static util::Memo<ScopedPair> known;
  return known.get(kernel_src.string() + "|" + setup, [&] {
    ScopedPair p;
    p.acquire = setup;
    std::map<std::string, int> votes;
    for_each_kernel_file(kernel_src, setup, [&](const auto& t, const auto& units) {
      const auto teardown = entry_functions(t, units, true);
      if (teardown.empty()) return;
      const auto down = functions_in(units, teardown);
      const auto setup_side = entry_functions(t, units, false);
      for (const auto& u : units) {
        if (u.kind != csrc::UnitKind::function || teardown.count(u.name) || !setup_side.count(u.name)) continue;
        for (const auto& c : csrc::find_calls(t, u.body, u.last)) {
          // A call the teardown makes too (free_netdev() on probe's error path) ends, not begins.
          if (c.callee != setup || calls_in(t, down, setup)) continue;
          const std::string arg = first_arg(c);
          std::set<std::string> callees;
          if (addressed(arg)) {
            const std::string m = csrc::last_member(arg);
            if (m.empty()) continue;
            named_in(t, down, m, setup, &callees);
          } else if (identifier(arg)) {
            const std::string type = csrc::declared_type(t, u, arg);
            if (!pointer_type(type)) continue;
            typed_in(t, down, type, setup, &callees, "", true);
          } else {
            continue;
          }
          ++p.calls;
          for (const auto& k : callees) ++votes[k];
        }
      }
    });
    // A driver that registers through its bus's module_*_driver() macro calls the pair the
    // header's module_driver() names, in its init and exit: each use is one more setup torn down so.
    for (const auto& m : module_driver_macros(kernel_src)) {
      if (m.setup != setup) continue;
      const int n = macro_uses(kernel_src, m.macro);
      p.calls += n;
      votes[m.teardown] += n;
    }
    for (const auto& [callee, n] : votes)
      if (n > p.released) p.release = callee, p.released = n;
    return p;
  });
}

std::vector<ModuleDriverMacro> module_driver_macros(const fs::path& kernel_src) {
  static util::Memo<std::vector<ModuleDriverMacro>> known;
  if (kernel_src.empty()) return {};
  return known.get(kernel_src.string(), [&] {
    std::vector<ModuleDriverMacro> out;
    kernel::SourceGrep q;
    q.options = {"-l"};
    q.includes = {"*.h"};
    q.pattern = "module_driver(";
    q.dirs = kernel::k_header_dirs;
    q.all_of = {"module_driver"};
    for (const auto& rel : kernel::grep_source(kernel_src, q)) {
      auto text = util::read_file(kernel_src / rel);
      if (!text) continue;
      for (const auto& tok : csrc::tokenize(*text))
        if (tok.kind == csrc::TokKind::pp_line)
          if (auto m = module_driver_macro(tok.text)) out.push_back(std::move(*m));
    }
    return out;
  });
}

std::optional<ModuleDriverMacro> module_driver_macro(std::string_view directive) {
  const auto hash = directive.find('#');
  if (hash == std::string_view::npos) return std::nullopt;
  // Continuation lines joined: `module_driver(x, reg, \` newline `unreg)`.
  std::string text(directive.substr(hash + 1));
  for (auto at = text.find("\\\n"); at != std::string::npos; at = text.find("\\\n", at)) text.replace(at, 2, " ");
  const auto d = csrc::tokenize(text);
  if (d.size() < 4 || d[0].text != "define" || d[1].kind != csrc::TokKind::ident || d[1].text == "module_driver")
    return std::nullopt;
  for (const auto& c : csrc::find_calls(d, 2, d.size() - 1)) {
    if (c.callee != "module_driver" || c.arg_toks.size() < 3) continue;
    const auto [r0, r1] = c.arg_toks[1];
    const auto [u0, u1] = c.arg_toks[2];
    if (r0 != r1 || u0 != u1 || d[r0].kind != csrc::TokKind::ident || d[u0].kind != csrc::TokKind::ident) return std::nullopt;
    return ModuleDriverMacro{d[1].text, d[r0].text, d[u0].text};
  }
  return std::nullopt;
}

int macro_uses(const fs::path& kernel_src, const std::string& macro) {
  // A file uses its bus's macro once, at the top level (a line of its own).
  kernel::SourceGrep q;
  q.options = {"-lE"};
  q.includes = {"*.c"};
  q.pattern = "^" + macro + "\\(";
  q.dirs = kernel::k_driver_dirs;
  q.all_of = {macro};
  return static_cast<int>(kernel::grep_source(kernel_src, q).size());
}

PairOracle teardown_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& setup) { return teardown_pair(kernel_src, setup); };
}

std::vector<MissingTeardown> missing_teardowns(const std::vector<DriverFile>& files, const PairOracle& teardowns,
                                               const std::set<std::string>& types, const PairOracle& undos) {
  std::vector<MissingTeardown> out;
  if (!teardowns) return out;
  for (const auto& f : files) {
    const auto& t = f.toks;
    const auto setup = functions_in(f.units, entry_functions(t, f.units, false));
    const auto entry = entry_functions(t, f.units, false, 0);
    const auto down = functions_in(f.units, entry_functions(t, f.units, true));
    if (setup.empty() || down.empty()) continue;
    std::set<std::string> asked, found; // (setup, object) asked; objects given a teardown
    for (const auto* s : setup)
      for (const auto& c : csrc::find_calls(t, s->body, s->last)) {
        const std::string arg = first_arg(c);
        // The object: the member an address names (`&p->timer`), or a variable of one of `types`.
        std::string key, type;
        if (addressed(arg)) key = csrc::last_member(arg);
        else if (identifier(arg) && pointer_type(type = csrc::declared_type(t, *s, arg)) &&
                 (types.count(type) || types.count("*")))
          key = "type " + type;
        else type.clear();
        if (key.empty() || found.count(key) || !asked.insert(c.callee + "|" + key).second || calls_in(t, down, c.callee))
          continue;
        // Torn down already (by the kernel's call or any other naming the member).
        if (type.empty() && named_in(t, down, key, c.callee)) continue;
        auto p = teardowns(c.callee);
        if (!torn_down(p) || (!type.empty() && typed_in(t, down, type, c.callee, nullptr, p.release))) continue;
        // The object as the teardown function names it: a global as is; `p->timer` through the
        // teardown function's own variable of p's type; a variable of `type` as the teardown
        // function declares it.
        const std::string path = type.empty() ? arg.substr(1) : arg;
        const std::string base = path.substr(0, path.find_first_of("-."));
        const std::string base_type = type.empty() ? csrc::declared_type(t, *s, base) : type;
        // module_init's registrations end in module_exit; the others in remove and below; first
        // where the driver already makes that teardown call for something else (its other works
        // cancelled in one helper), rather than in the first function that can name the object.
        auto order = down;
        std::stable_partition(order.begin(), order.end(), [&](const csrc::Unit* d) { return calls_in(t, {d}, p.release); });
        const bool in_init = registered(t, "module_init") == s->name;
        std::stable_partition(order.begin(), order.end(),
                              [&](const csrc::Unit* d) { return (registered(t, "module_exit") == d->name) == in_init; });
        // A member armed again outside setup (`mod_timer(&nic->watchdog, ...)` in the .ndo_open
        // helper) is ended by the function that undoes that one (the .ndo_stop helper) first.
        const csrc::Unit* armed = type.empty() ? armed_counterpart(f, setup, key, c.callee, p.release, undos) : nullptr;
        if (armed) order.insert(order.begin(), armed);
        for (const auto* d : order) {
          std::string name = base_type.empty() ? base : variable_of_type(t, *d, base_type);
          const int at = after_declarations(t, *d);
          if (name.empty() || at == 0) continue;
          MissingTeardown mt;
          mt.file = f.rel;
          mt.setup = c.callee;
          mt.setup_line = t[c.name_tok].line;
          mt.release = p.release;
          mt.teardown = d->name;
          mt.call = fmt::format("{}({}{}{})", p.release, type.empty() ? "&" : "", name, path.substr(base.size()));
          mt.insert_line = at;
          mt.object_type = type;
          mt.ended_elsewhere = type.empty() && named_in(t, functions_in(f.units, all_functions(f.units)), key, c.callee);
          mt.evidence = p;
          // timer_setup() and mod_timer() of one timer: one teardown; of one object, the setup in the
          // probe or init function itself the kernel's drivers pair most surely (register_netdev(dev)
          // rather than the SET_NETDEV_DEV(dev) before it or a helper's netdev_dbg(dev)).
          if (type.empty()) found.insert(key);
          auto same = std::find_if(out.begin(), out.end(), [&](const MissingTeardown& o) {
            return o.file == mt.file && o.object_type == type && !type.empty() && o.release == mt.release;
          });
          mt.in_entry = entry.count(s->name) > 0;
          mt.armed = d == armed;
          if (same == out.end()) out.push_back(std::move(mt));
          else if (std::make_pair(mt.in_entry, mt.evidence.released * same->evidence.calls) >
                   std::make_pair(same->in_entry, same->evidence.released * mt.evidence.calls))
            *same = std::move(mt);
          break;
        }
      }
  }
  return out;
}

std::set<std::string> object_types_at(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line) {
  std::set<std::string> out;
  for (std::size_t i = fn.body; i < fn.last; ++i)
    if (t[i].line == line && t[i].kind == csrc::TokKind::ident) {
      const std::string type = csrc::declared_type(t, fn, t[i].text);
      if (pointer_type(type)) out.insert(type);
    }
  return out;
}

std::set<std::string> parameter_types(const std::vector<csrc::Token>& t, const csrc::Unit& fn) {
  std::set<std::string> out;
  if (fn.kind != csrc::UnitKind::function) return out;
  for (std::size_t i = fn.first; i + 1 < fn.body; ++i)
    if (t[i].kind == csrc::TokKind::ident && (t[i + 1].text == "," || t[i + 1].text == ")")) {
      const std::string type = csrc::declared_type(t, fn, t[i].text);
      if (pointer_type(type)) out.insert(type);
    }
  return out;
}

namespace {

/// A setup function's steps, numbered by the `goto LABEL` checks in source order: each label's
/// first jump, where each statement under a label stands, and the setup calls the kernel's
/// drivers tear down with the goto that checks each.
struct Ladder {
  struct Learned {
    std::string setup;
    ScopedPair pair;       ///< torn_down()
    std::size_t check = 0; ///< the first goto after the call
  };
  std::map<std::string, std::size_t> first_jump; ///< label -> token of its first goto
  std::vector<std::size_t> gotos;                ///< every goto's token, in order
  /// a statement's text under a label -> that label's first goto, and the statement's place among
  /// the label's statements (0 first): one label's cleanup undoes in reverse order of setup too
  /// (`error: mempool_destroy(pool); kmem_cache_destroy(cache);`)
  std::map<std::string, std::pair<std::size_t, std::size_t>> undo_at;
  std::vector<Learned> learned; ///< in source order
};

Ladder ladder_of(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const PairOracle& teardowns) {
  Ladder l;
  for (std::size_t i = fn.body; i + 1 < fn.last; ++i)
    if (t[i].text == "goto" && t[i + 1].kind == csrc::TokKind::ident) {
      l.gotos.push_back(i);
      l.first_jump.emplace(t[i + 1].text, i);
    }
  std::string label;
  std::size_t pos = 0;
  for (std::size_t i = fn.body + 1; i + 1 < fn.last; ++i) {
    if (starts_label(t, i)) {
      label = t[i].text;
      pos = 0;
      ++i;
      continue;
    }
    if (label.empty() || !l.first_jump.count(label) || !(t[i - 1].text == ";" || t[i - 1].text == ":")) continue;
    std::size_t e = i;
    while (e < fn.last && t[e].text != ";") ++e;
    l.undo_at.emplace(csrc::join_tokens(t, i, e), std::make_pair(l.first_jump[label], pos++));
  }
  if (teardowns && !l.gotos.empty())
    for (const auto& c : csrc::find_calls(t, fn.body, fn.last)) {
      auto pair = teardowns(c.callee);
      if (!torn_down(pair)) continue;
      const auto g = std::find_if(l.gotos.begin(), l.gotos.end(), [&](std::size_t x) { return x > c.close_tok; });
      if (g != l.gotos.end()) l.learned.push_back({c.callee, std::move(pair), *g});
    }
  return l;
}

} // namespace

std::optional<OutOfOrder> teardown_out_of_order(const DriverFile& f, const csrc::Unit& fn, int line,
                                                const PairOracle& teardowns) {
  const auto& t = f.toks;
  const auto sts = csrc::block_statements(t, fn.body);
  const std::size_t at = statement_holding(t, sts, line);
  if (at == sts.size()) return std::nullopt;
  const auto text = [&](std::size_t k) { return csrc::join_tokens(t, sts[k].first, sts[k].second); };
  const auto callee = [&](std::size_t k) {
    return t[sts[k].first].kind == csrc::TokKind::ident && t[sts[k].first + 1].text == "(" ? t[sts[k].first].text : "";
  };
  if (callee(at).empty()) return std::nullopt;
  for (const auto* s : functions_in(f.units, entry_functions(t, f.units, false, 0))) {
    const Ladder l = ladder_of(t, *s, teardowns);
    if (l.gotos.empty()) continue;
    // The step a teardown statement undoes, ordered by the gotos: a statement under a label undoes
    // a step before the label's first jump (2g - 1), a setup call is the step its next goto
    // checks (2g). Of one label's statements, each undoes a step before the one above it.
    constexpr std::size_t k_scale = 1024;
    const auto step = [&](std::size_t k, std::string* why) -> std::optional<std::size_t> {
      if (auto it = l.undo_at.find(text(k)); it != l.undo_at.end()) {
        if (why) *why = fmt::format("{}() unwinds it on its error path", s->name);
        const auto [jump, place] = it->second;
        return (2 * jump - 1) * k_scale - std::min<std::size_t>(place, k_scale - 1);
      }
      for (const auto& d : l.learned)
        if (d.pair.release == callee(k)) {
          if (why)
            *why = fmt::format("the kernel's drivers end {}() with {}() ({} of {})", d.setup, d.pair.release, d.pair.released,
                               d.pair.calls);
          return 2 * d.check * k_scale;
        }
      return std::nullopt;
    };
    const auto x = step(at, nullptr);
    if (!x) continue;
    for (std::size_t y = at + 1; y < sts.size(); ++y) {
      if (callee(y).empty()) continue;
      std::string why;
      const auto sy = step(y, &why);
      if (!sy || *sy <= *x) continue;
      return OutOfOrder{t[sts[at].first].line, t[sts[y].first].line, callee(y), s->name, why};
    }
  }
  return std::nullopt;
}

} // namespace autodriver::crash
