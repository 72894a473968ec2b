#include "autodriver/crash/teardown.hpp"

#include "autodriver/csrc/scan.hpp"
#include "autodriver/util/memo.hpp"

#include <fmt/format.h>

#include <map>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

const csrc::Unit* function_named(const std::vector<csrc::Unit>& units, const std::string& name) {
  for (const auto& u : units)
    if (u.kind == csrc::UnitKind::function && u.name == name) return &u;
  return nullptr;
}

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

/// The type a function declares `name` with (`struct foo_priv *` of `struct foo_priv *p`),
/// among its parameters and locals: the tokens before the name back to `(`, `,`, `;` or `{`.
std::string declared_type(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& name) {
  for (std::size_t i = fn.first + 1; i < fn.last; ++i) {
    if (t[i].text != name || t[i - 1].text != "*") continue;
    std::size_t b = i;
    while (b > fn.first && t[b - 1].text != "(" && t[b - 1].text != "," && t[b - 1].text != ";" && t[b - 1].text != "{") --b;
    if (b + 1 >= i) continue;
    std::string type;
    for (std::size_t k = b; k < i; ++k)
      if (t[k].text != "const") type += (type.empty() ? "" : " ") + t[k].text;
    return type;
  }
  return {};
}

/// The variable `fn` declares with type `type`, or empty.
std::string variable_of_type(const std::vector<csrc::Token>& t, const csrc::Unit& fn, const std::string& type) {
  for (std::size_t i = fn.first + 1; i + 1 < fn.last; ++i)
    if (t[i].kind == csrc::TokKind::ident && t[i - 1].text == "*" &&
        (t[i + 1].text == "=" || t[i + 1].text == ";" || t[i + 1].text == "," || t[i + 1].text == ")"))
      if (declared_type(t, fn, t[i].text) == type) return t[i].text;
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
          const std::string arg = first_arg(c);
          if (c.callee != setup || !addressed(arg)) continue;
          const std::string m = csrc::last_member(arg);
          if (m.empty()) continue;
          ++p.calls;
          std::set<std::string> callees;
          named_in(t, down, m, setup, &callees);
          for (const auto& k : callees) ++votes[k];
        }
      }
    });
    for (const auto& [callee, n] : votes)
      if (n > p.released) p.release = callee, p.released = n;
    return p;
  });
}

PairOracle teardown_oracle(const fs::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& setup) { return teardown_pair(kernel_src, setup); };
}

std::vector<MissingTeardown> missing_teardowns(const std::vector<DriverFile>& files, const PairOracle& teardowns) {
  std::vector<MissingTeardown> out;
  if (!teardowns) return out;
  for (const auto& f : files) {
    const auto& t = f.toks;
    const auto setup = functions_in(f.units, entry_functions(t, f.units, false));
    const auto down = functions_in(f.units, entry_functions(t, f.units, true));
    if (setup.empty() || down.empty()) continue;
    std::set<std::string> asked, found; // (setup, member) asked; members given a teardown
    for (const auto* s : setup)
      for (const auto& c : csrc::find_calls(t, s->body, s->last)) {
        const std::string arg = first_arg(c);
        const std::string m = csrc::last_member(arg);
        if (!addressed(arg) || m.empty() || found.count(m) || !asked.insert(c.callee + "|" + m).second) continue;
        // Torn down already (by the kernel's call or any other naming the member).
        if (named_in(t, down, m, c.callee)) continue;
        auto p = teardowns(c.callee);
        if (!torn_down(p)) continue;
        // The object as the teardown function names it: a global as is; `p->timer` through the
        // teardown function's own variable of p's type.
        const std::string path = arg.substr(1);
        const std::string base = path.substr(0, path.find_first_of("-."));
        const std::string type = declared_type(t, *s, base);
        for (const auto* d : down) {
          std::string name = type.empty() ? base : variable_of_type(t, *d, type);
          const int at = after_declarations(t, *d);
          if (name.empty() || at == 0) continue;
          MissingTeardown mt;
          mt.file = f.rel;
          mt.setup = c.callee;
          mt.setup_line = t[c.name_tok].line;
          mt.release = p.release;
          mt.teardown = d->name;
          mt.call = fmt::format("{}(&{}{})", p.release, name, path.substr(base.size()));
          mt.insert_line = at;
          mt.evidence = p;
          out.push_back(std::move(mt));
          found.insert(m); // timer_setup() and mod_timer() of one timer: one teardown
          break;
        }
      }
  }
  return out;
}

} // namespace autodriver::crash
