#include "autodriver/crash/never_set.hpp"

#include "autodriver/csrc/tokens.hpp"

namespace autodriver::crash {

namespace {

using Toks = std::vector<csrc::Token>;

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

} // namespace

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
        std::size_t last = k;
        if (k + 1 < sts.size() && f.toks[sts[k + 1].first].text == "if") {
          bool tests = false;
          for (std::size_t i = sts[k + 1].first; i <= sts[k + 1].second && !tests; ++i) tests = f.toks[i].text == v;
          if (tests) last = k + 1;
        }
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
