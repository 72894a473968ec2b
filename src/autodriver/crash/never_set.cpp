#include "autodriver/crash/never_set.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/util/memo.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <set>

namespace autodriver::crash {

namespace {

using Toks = std::vector<csrc::Token>;

/// t[i] is a member named after `->` or `.`.
bool t_is_member(const Toks& t, std::size_t i) {
  return i > 0 && t[i].kind == csrc::TokKind::ident && (t[i - 1].text == "->" || t[i - 1].text == ".");
}

/// The statement after which a value assigned by statement `k` of `sts` may be stored: the `if`
/// right after it when that tests `var` (`if (!edev) return -ENOMEM;`), else statement k itself.
std::size_t through_its_test(const Toks& t, const std::vector<std::pair<std::size_t, std::size_t>>& sts, std::size_t k,
                             const std::string& var) {
  if (k + 1 >= sts.size() || t[sts[k + 1].first].text != "if") return k;
  for (std::size_t i = sts[k + 1].first; i <= sts[k + 1].second; ++i)
    if (t[i].text == var) return k + 1;
  return k;
}

/// Whether an initializer of the file names both functions (`.probe = a, .remove = b`).
bool same_table(const DriverFile& f, const std::string& a, const std::string& b) {
  for (const auto& u : f.units) {
    if (u.kind != csrc::UnitKind::initializer) continue;
    bool has_a = false, has_b = false;
    for (const auto& d : csrc::designated_members(f.toks, u)) {
      has_a = has_a || d.value == a;
      has_b = has_b || d.value == b;
    }
    if (has_a && has_b) return true;
  }
  return false;
}

/// Whether any file of the driver calls a function named like `setter` up to its prefix
/// (`pci_set_drvdata` and `dev_set_drvdata` store the same).
bool calls_family(const std::vector<DriverFile>& driver, const std::string& family) {
  for (const auto& f : driver)
    for (std::size_t i = 0; i + 1 < f.toks.size(); ++i)
      if (f.toks[i].kind == csrc::TokKind::ident && f.toks[i + 1].text == "(" && f.toks[i].text.ends_with(family)) return true;
  return false;
}

/// The pointer-to-struct members of the structs the driver defines: (member, owner) -> the member's
/// pointee type ("netdev", "struct nic") -> "struct net_device *"; members with one `*` only.
std::map<std::pair<std::string, std::string>, std::string> struct_pointer_members(const std::vector<DriverFile>& driver) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  for (const auto& f : driver) {
    const Toks& t = f.toks;
    for (std::size_t i = 0; i + 2 < t.size(); ++i) {
      if ((t[i].text != "struct" && t[i].text != "union") || t[i + 1].kind != csrc::TokKind::ident || t[i + 2].text != "{")
        continue;
      const std::string owner = t[i].text + " " + t[i + 1].text;
      const std::size_t close = csrc::matching_close(t, i + 2);
      if (close == std::string::npos) break;
      int depth = 0;
      for (std::size_t k = i + 3; k + 1 < close; ++k) {
        depth += t[k].text == "{" ? 1 : t[k].text == "}" ? -1 : 0;
        // `struct X *name` at the struct's own level, one star.
        if (depth || t[k].text != "struct" || k + 4 >= close || t[k + 2].text != "*" || t[k + 3].kind != csrc::TokKind::ident ||
            (k > 0 && t[k - 1].text != ";" && t[k - 1].text != "{" && t[k - 1].kind != csrc::TokKind::pp_line))
          continue;
        out[{t[k + 3].text, owner}] = "struct " + t[k + 1].text + " *";
      }
      i = close;
    }
  }
  return out;
}

/// Members the driver stores somewhere: `->m =`, `.m =` (also in initializers and macro bodies),
/// `&x->m` handed to a call, compound assignments.
std::set<std::string> assigned_members(const std::vector<DriverFile>& driver) {
  std::set<std::string> out;
  const auto scan = [&](const Toks& t) {
    for (std::size_t i = 1; i + 1 < t.size(); ++i) {
      if (!t_is_member(t, i)) continue;
      const std::string& next = t[i + 1].text;
      if ((next.size() >= 1 && next.back() == '=' && next != "==" && next != "!=" && next != "<=" && next != ">=") ||
          next == "++" || next == "--")
        out.insert(t[i].text);
      // `&x->m` takes m's address; `&x->m->dev` takes dev's, not m's.
      if (next == "->" || next == "." || next == "[") continue;
      std::size_t b = i;
      while (b >= 2 && (t[b - 1].text == "->" || t[b - 1].text == ".") && t[b - 2].kind == csrc::TokKind::ident) b -= 2;
      if (b > 0 && t[b - 1].text == "&") out.insert(t[i].text);
    }
  };
  for (const auto& f : driver) {
    scan(f.toks);
    for (const auto& tok : f.toks)
      if (tok.kind == csrc::TokKind::pp_line) scan(csrc::tokenize(tok.text.substr(tok.text.find('#') + 1)));
  }
  return out;
}

/// Whether `u` is bound as some table's `.probe`.
bool bound_as_probe(const std::vector<DriverFile>& driver, const std::string& fn) {
  for (const auto& f : driver)
    for (const auto& u : f.units)
      if (u.kind == csrc::UnitKind::initializer)
        for (const auto& d : csrc::designated_members(f.toks, u))
          if (d.member == "probe" && d.value == fn) return true;
  return false;
}

/// Locals and parameters of `u` assigned from a call (`v = f(...)`, also `if (!(v = f(...)))`).
std::set<std::string> assigned_from_calls(const Toks& t, const csrc::Unit& u) {
  std::set<std::string> out;
  for (std::size_t i = u.body; i + 3 < u.last; ++i)
    if (t[i].kind == csrc::TokKind::ident && t[i + 1].text == "=" && t[i + 2].kind == csrc::TokKind::ident &&
        t[i + 3].text == "(" && t[i - 1].text != "->" && t[i - 1].text != ".")
      out.insert(t[i].text);
  return out;
}

/// Where `obj->member = value;` goes in the driver, for a member of `owner` of type `type`.
std::optional<UnsetMember> store_place(const std::vector<DriverFile>& driver, const std::string& member, const std::string& owner,
                                       const std::string& type) {
  for (const auto& f : driver) {
    const Toks& t = f.toks;
    for (const auto& u : f.units) {
      if (u.kind != csrc::UnitKind::function) continue;
      const auto made = assigned_from_calls(t, u);
      std::string obj, value;
      int values = 0;
      for (const auto& v : made)
        if (csrc::declared_type(t, u, v) == owner + " *") obj = v;
      if (obj.empty()) continue;
      std::set<std::string> names(made.begin(), made.end());
      for (const auto& p : parameter_names(t, u))
        if (!p.empty()) names.insert(p);
      for (const auto& n : names)
        if (n != obj && csrc::declared_type(t, u, n) == type) value = n, ++values;
      if (values != 1 || !(made.count(value) || bound_as_probe(driver, u.name))) continue;
      // After the statement assigning the object (and the test of it right after).
      const auto sts = csrc::block_statements(t, u.body);
      for (std::size_t k = 0; k < sts.size(); ++k) {
        bool assigns = false;
        for (std::size_t i = sts[k].first; i + 2 <= sts[k].second && !assigns; ++i)
          assigns = t[i].text == obj && t[i + 1].text == "=" && t[i + 2].kind == csrc::TokKind::ident;
        if (!assigns) continue;
        const std::size_t last = through_its_test(t, sts, k, obj);
        UnsetMember out;
        out.member = member;
        out.owner = owner;
        out.file = f.rel;
        out.function = u.name;
        out.made_line = t[sts[k].first].line;
        out.after_line = t[sts[last].second].line;
        out.statement = obj + "->" + member + " = " + value + ";";
        return out;
      }
    }
  }
  return std::nullopt;
}

/// An argument that is exactly `&base->m` or `&base.m`: (base, m); empty strings otherwise.
std::pair<std::string, std::string> member_address(const Toks& t, std::pair<std::size_t, std::size_t> r) {
  const auto [a, b] = r;
  if (b != a + 3 || t[a].text != "&" || t[a + 1].kind != csrc::TokKind::ident ||
      (t[a + 2].text != "->" && t[a + 2].text != ".") || t[b].kind != csrc::TokKind::ident)
    return {};
  return {t[a + 1].text, t[b].text};
}

/// A name holding the kernel's word for making something ready, "init" or "setup", as one of its
/// `_`-separated words in any case (INIT_LIST_HEAD, spin_lock_init, timer_setup).
bool init_word(const std::string& name) {
  std::size_t b = 0;
  while (b <= name.size()) {
    std::size_t e = name.find('_', b);
    if (e == std::string::npos) e = name.size();
    std::string w;
    for (std::size_t i = b; i < e; ++i) w += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    if (w == "init" || w == "setup") return true;
    b = e + 1;
  }
  return false;
}

/// Whether the driver makes member `m` ready anywhere: a call named with "init"/"setup" (or
/// `init`) taking `&y->m` first, or a store to it (`y->m = ...`, `.m = LIST_HEAD_INIT(...)`).
bool initialised_anywhere(const std::vector<DriverFile>& driver, const std::string& m, const std::string& init) {
  for (const auto& f : driver) {
    for (const auto& c : csrc::find_calls(f.toks, 0, f.toks.empty() ? 0 : f.toks.size() - 1))
      if ((c.callee == init || init_word(c.callee)) && !c.arg_toks.empty() && member_address(f.toks, c.arg_toks[0]).second == m)
        return true;
    for (std::size_t i = 1; i + 1 < f.toks.size(); ++i)
      if (t_is_member(f.toks, i) && f.toks[i].text == m && f.toks[i + 1].text == "=") return true;
  }
  return false;
}

/// The driver function that gets an `owner` back from its member `m`: `container_of(w, struct T,
/// m)` in its body (also through to_delayed_work()). "" when none does, or several (the handler is
/// then chosen at run time: `tulip_tbl[tp->chip_id].media_task`).
std::string handler_of(const std::vector<DriverFile>& driver, const std::string& owner, const std::string& m) {
  const std::string tag = owner.substr(owner.find(' ') + 1);
  std::set<std::string> found;
  for (const auto& f : driver)
    for (const auto& u : f.units) {
      if (u.kind != csrc::UnitKind::function) continue;
      for (std::size_t i = u.body; i + 4 < u.last; ++i)
        if (f.toks[i].text == "struct" && f.toks[i + 1].text == tag && f.toks[i + 2].text == "," && f.toks[i + 3].text == m &&
            f.toks[i + 4].text == ")")
          found.insert(u.name);
    }
  return found.size() == 1 ? *found.begin() : "";
}

/// Where member `m` of the object made by statement `made` of `sts` is initialised: before the
/// first later statement that names `obj->m` when that function uses it, else after the last
/// statement that writes the whole object (`memset(obj, 0, sizeof(*obj))`, `*obj = ...`) or
/// after `made` itself. The index of the statement it follows.
std::size_t init_point(const Toks& t, const std::vector<std::pair<std::size_t, std::size_t>>& sts, std::size_t made,
                       const std::string& obj, const std::string& m) {
  std::size_t after = made;
  for (std::size_t k = made + 1; k < sts.size(); ++k) {
    for (std::size_t i = sts[k].first; i + 2 <= sts[k].second; ++i)
      if (t[i].text == obj && t[i + 1].text == "->" && t[i + 2].text == m) return k - 1;
    const bool whole = (t[sts[k].first].text == "*" && t[sts[k].first + 1].text == obj) || [&] {
      for (const auto& c : csrc::find_calls(t, sts[k].first, sts[k].second))
        if (c.args.size() >= 2 && c.args[0] == obj && c.args.back().find("sizeof") != std::string::npos) return true;
      return false;
    }();
    if (whole) after = k;
  }
  return after;
}

/// Where an object of type `owner` is made: a function assigning a local or parameter of type
/// `owner *` from a call in a statement of its body (a `.probe` function first); member `m`'s
/// initialiser goes after that statement and the test of its result (init_point). The object's
/// variable, or "".
std::string made_place(const std::vector<DriverFile>& driver, const std::string& owner, const std::string& m, UninitMember& at) {
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& f : driver)
      for (const auto& u : f.units) {
        if (u.kind != csrc::UnitKind::function || bound_as_probe(driver, u.name) != (pass == 0)) continue;
        std::string obj;
        for (const auto& v : assigned_from_calls(f.toks, u))
          if (csrc::declared_type(f.toks, u, v) == owner + " *") obj = v;
        if (obj.empty()) continue;
        const auto sts = csrc::block_statements(f.toks, u.body);
        for (std::size_t k = 0; k < sts.size(); ++k) {
          bool assigns = false;
          for (std::size_t i = sts[k].first; i + 3 <= sts[k].second && !assigns; ++i)
            assigns = f.toks[i].text == obj && f.toks[i + 1].text == "=" && f.toks[i + 2].kind == csrc::TokKind::ident &&
                      f.toks[i + 3].text == "(";
          if (!assigns) continue;
          at.file = f.rel;
          at.function = u.name;
          at.made_line = f.toks[sts[k].first].line;
          at.after_line = f.toks[sts[init_point(f.toks, sts, through_its_test(f.toks, sts, k, obj), obj, m)].second].line;
          return obj;
        }
      }
  return "";
}

} // namespace

MemberInit member_init(const std::filesystem::path& kernel_src, const std::string& callee, std::size_t arg) {
  static util::Memo<MemberInit> known;
  return known.get(kernel_src.string() + "|" + callee + "|" + std::to_string(arg), [&] {
    MemberInit out;
    std::map<std::string, int> files, calls, handlers;
    std::map<std::string, std::map<std::size_t, int>> arities;
    for_each_kernel_file(kernel_src, callee, [&](const Toks& t, const std::vector<csrc::Unit>& units) {
      const auto cs = csrc::find_calls(t, 0, t.empty() ? 0 : t.size() - 1);
      std::set<std::string> members, here, functions;
      for (const auto& c : cs)
        if (c.callee == callee && c.arg_toks.size() > arg)
          if (auto m = member_address(t, c.arg_toks[arg]).second; !m.empty()) members.insert(m);
      if (members.empty()) return;
      ++out.files;
      for (const auto& u : units)
        if (u.kind == csrc::UnitKind::function) functions.insert(u.name);
      for (const auto& c : cs) {
        if (c.callee == callee || !init_word(c.callee) || c.arg_toks.empty() ||
            !members.count(member_address(t, c.arg_toks[0]).second))
          continue;
        if (here.insert(c.callee).second) ++files[c.callee];
        ++calls[c.callee];
        ++arities[c.callee][c.args.size()];
        if (c.args.size() >= 2 && functions.count(c.args[1])) ++handlers[c.callee];
      }
    });
    for (const auto& [name, n] : files)
      if (n > out.initialised) out.init = name, out.initialised = n;
    if (out.init.empty()) return out;
    int best = 0;
    for (const auto& [a, n] : arities[out.init])
      if (n > best) best = n, out.arity = static_cast<int>(a);
    out.handler = handlers[out.init] * 2 > calls[out.init];
    return out;
  });
}

InitOracle init_oracle(const std::filesystem::path& kernel_src) {
  if (kernel_src.empty()) return {};
  return [kernel_src](const std::string& callee, std::size_t arg) { return member_init(kernel_src, callee, arg); };
}

std::vector<UninitMember> members_never_initialised(const std::vector<DriverFile>& driver, const std::string& file,
                                                    const std::string& fn, int line, const InitOracle& inits) {
  std::vector<UninitMember> out;
  if (!inits) return out;
  for (const auto& f : driver) {
    const csrc::Unit* u = f.rel == file ? function_named(f.units, fn) : nullptr;
    if (!u) continue;
    for (const auto& c : csrc::find_calls(f.toks, u->body, u->last)) {
      if (f.toks[c.name_tok].line != line || init_word(c.callee)) continue;
      for (std::size_t i = 0; i < c.arg_toks.size(); ++i) {
        const auto [base, m] = member_address(f.toks, c.arg_toks[i]);
        if (m.empty()) continue;
        std::string owner = csrc::declared_type(f.toks, *u, base);
        const bool arrow = f.toks[c.arg_toks[i].first + 2].text == "->";
        if (arrow != owner.ends_with(" *")) continue;
        if (arrow) owner.resize(owner.size() - 2);
        if (!owner.starts_with("struct ")) continue;
        UninitMember um;
        um.how = inits(c.callee, i);
        if (!um.how.learned() || um.how.arity < 1 || um.how.arity > 2 || initialised_anywhere(driver, m, um.how.init)) continue;
        std::string handler;
        if (um.how.arity == 2) {
          if (!um.how.handler) continue;
          handler = handler_of(driver, owner, m);
          if (handler.empty()) continue;
        }
        const std::string obj = made_place(driver, owner, m, um);
        if (obj.empty()) continue;
        um.member = m;
        um.owner = owner;
        um.used_by = c.callee;
        um.statement = fmt::format("{}(&{}->{}{});", um.how.init, obj, m, handler.empty() ? "" : ", " + handler);
        out.push_back(std::move(um));
      }
    }
  }
  return out;
}

std::optional<UnsetMember> member_never_set(const std::vector<DriverFile>& driver, const std::vector<std::string>& readers) {
  const auto members = struct_pointer_members(driver);
  if (members.empty()) return std::nullopt;
  const auto assigned = assigned_members(driver);
  for (const auto& reader : readers)
    for (const auto& f : driver) {
      const csrc::Unit* u = function_named(f.units, reader);
      if (!u) continue;
      for (std::size_t i = u->body + 1; i < u->last; ++i) {
        if (!t_is_member(f.toks, i) || assigned.count(f.toks[i].text)) continue;
        for (const auto& [key, type] : members) {
          if (key.first != f.toks[i].text) continue;
          auto place = store_place(driver, key.first, key.second, type);
          if (!place) continue;
          place->reader = reader;
          place->read_line = f.toks[i].line;
          return place;
        }
      }
    }
  return std::nullopt;
}

std::optional<NeverSet> never_set(const std::vector<DriverFile>& driver, const std::string& file, const std::string& fn,
                                  const std::string& var, const std::string& getter) {
  const std::size_t get = getter.rfind("get");
  if (get == std::string::npos) return std::nullopt;
  const std::string family = "set" + getter.substr(get + 3); // "set_drvdata"
  if (family == "set" || calls_family(driver, family)) return std::nullopt;
  const DriverFile* here = nullptr;
  const csrc::Unit* f_unit = nullptr;
  for (const auto& f : driver)
    if (f.rel == file) here = &f, f_unit = function_named(f.units, fn);
  if (!here || !f_unit) return std::nullopt;
  const Toks& t = here->toks;
  const std::string type = csrc::declared_type(t, *f_unit, var);
  // The getter's call in fn and the parameter its first argument comes from.
  const csrc::Call* call = nullptr;
  const auto calls = csrc::find_calls(t, f_unit->body, f_unit->last);
  for (const auto& c : calls)
    if (c.callee == getter && !c.arg_toks.empty()) call = &c;
  if (type.empty() || !call) return std::nullopt;
  std::string param, param_type;
  for (const auto& name : parameter_names(t, *f_unit))
    for (std::size_t i = call->arg_toks[0].first; i <= call->arg_toks[0].second; ++i)
      if (t[i].text == name) param = name, param_type = csrc::declared_type(t, *f_unit, name);
  if (param.empty() || param_type.empty()) return std::nullopt;
  for (const auto& f : driver) {
    for (const auto& u : f.units) {
      if (u.kind != csrc::UnitKind::function || u.name == fn || !(same_table(f, u.name, fn) || same_table(*here, u.name, fn)))
        continue;
      std::string p_name;
      for (const auto& name : parameter_names(f.toks, u))
        if (csrc::declared_type(f.toks, u, name) == param_type) p_name = name;
      if (p_name.empty()) continue;
      // A local of the value's type assigned from a call, and the statement after it that tests it.
      const auto sts = csrc::block_statements(f.toks, u.body);
      for (std::size_t k = 0; k < sts.size(); ++k) {
        std::string v;
        for (std::size_t i = sts[k].first; i + 2 < sts[k].second; ++i)
          if (f.toks[i].kind == csrc::TokKind::ident && f.toks[i + 1].text == "=" && f.toks[i + 2].kind == csrc::TokKind::ident &&
              f.toks[i + 3].text == "(" && (i == sts[k].first || f.toks[i - 1].text == "*") &&
              !f.toks[i + 2].text.ends_with(getter.substr(get))) // read back, not made (`pci_get_drvdata()`)
            v = f.toks[i].text;
        if (v.empty() || csrc::declared_type(f.toks, u, v) != type) continue;
        const std::size_t last = through_its_test(f.toks, sts, k, v);
        std::string args;
        for (std::size_t i = call->arg_toks[0].first; i <= call->arg_toks[0].second; ++i) {
          std::vector<std::string> one{t[i].text == param ? p_name : t[i].text};
          args += (args.empty() || t[i].begin == t[i - 1].end ? "" : " ") + csrc::c_text(one);
        }
        NeverSet out{
            getter, getter.substr(0, get) + family, f.rel, u.name, f.toks[sts[last].second].line, f.toks[sts[k].first].line, ""};
        out.statement = out.setter + "(" + args + ", " + v + ");";
        return out;
      }
    }
  }
  return std::nullopt;
}

} // namespace autodriver::crash
