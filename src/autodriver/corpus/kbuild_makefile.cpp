#include "autodriver/corpus/kbuild_makefile.hpp"

#include "autodriver/util/strings.hpp"

#include <algorithm>
#include <regex>
#include <set>

namespace autodriver::corpus {

namespace {

/// Joins backslash continuations and strips comments; one logical line per entry.
std::vector<std::string> logical_lines(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (auto raw : util::split_lines(text)) {
    std::string line(raw);
    if (auto hash = line.find('#'); hash != std::string::npos && (hash == 0 || line[hash - 1] != '\\')) line.erase(hash);
    bool cont = !line.empty() && line.back() == '\\';
    if (cont) line.pop_back();
    cur += line;
    cur += ' ';
    if (!cont) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

struct Assignment {
  std::string lhs;
  std::string op;
  std::string rhs;
};

/// "$(CONFIG_FOO)" or "$(subst m,y,$(CONFIG_FOO))" -> "CONFIG_FOO"; empty when none.
std::string config_in(std::string_view s) {
  static const std::regex k_re(R"(\$\((?:[^()]*\()?\s*(CONFIG_[A-Za-z0-9_]+)\s*\)?\))");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(s.begin(), s.end(), m, k_re)) return m[1].str();
  return {};
}

class Vars {
public:
  void assign(const Assignment& a) {
    auto& v = m_values[a.lhs];
    if (a.op == "+=") v += " " + a.rhs;
    else if (a.op == "?=") {
      if (v.empty()) v = a.rhs;
    } else v = a.rhs;
  }
  /// Expands $(name) of plain variables (not CONFIG_, not kbuild's own like src/srctree).
  std::string expand(std::string s, int depth = 0) const {
    static const std::regex k_ref(R"(\$\(([A-Za-z0-9_.\-]+)\))");
    if (depth > 8) return s;
    std::string out;
    std::smatch m;
    bool changed = false;
    auto begin = s.cbegin();
    while (std::regex_search(begin, s.cend(), m, k_ref)) {
      out.append(begin, m[0].first);
      std::string name = m[1].str();
      auto it = m_values.find(name);
      if (it != m_values.end() && !name.starts_with("CONFIG_")) {
        out += it->second;
        changed = true;
      } else {
        out += m[0].str();
      }
      begin = m[0].second;
    }
    out.append(begin, s.cend());
    return changed ? expand(out, depth + 1) : out;
  }
  const std::map<std::string, std::string>& all() const { return m_values; }

private:
  std::map<std::string, std::string> m_values;
};

bool is_simple_flag(const std::string& w) {
  if (w.starts_with("-D") || w.starts_with("-U") || w.starts_with("-W") || w.starts_with("-f")) return true;
  if (w == "-I$(src)" || w.starts_with("-I$(src)/") || w == "-I$(obj)" || w.starts_with("-I$(obj)/")) return true;
  return false;
}

/// "-I$(srctree)/$(src)" and "-I$(srctree)/drivers/x" point at the kernel tree; the first is just $(src).
std::string normalize_flag(std::string w) {
  if (w.starts_with("-I$(srctree)/$(src)")) w = "-I$(src)" + w.substr(std::string("-I$(srctree)/$(src)").size());
  if (w.starts_with("-I $(src)")) w = "-I$(src)" + w.substr(9);
  return w;
}

} // namespace

std::map<std::string, std::string> parse_dot_config(std::string_view text) {
  std::map<std::string, std::string> out;
  for (auto line : util::split_lines(text)) {
    if (!line.starts_with("CONFIG_")) continue;
    auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    out.emplace(std::string(line.substr(0, eq)), std::string(util::trim(line.substr(eq + 1))));
  }
  return out;
}

KbuildMakefile parse_kbuild_makefile(std::string_view text, const ConfigLookup& config) {
  static const std::regex k_assign(R"(^\s*([A-Za-z0-9_.\-/$()+, ]*?[A-Za-z0-9_.\-)])\s*(:=|\+=|\?=|=)\s*(.*)$)");
  std::vector<Assignment> assigns;
  Vars vars;
  for (const auto& line : logical_lines(text)) {
    std::smatch m;
    if (!std::regex_match(line, m, k_assign)) continue;
    auto lhs = std::string(util::trim(m[1].str()));
    if (lhs.starts_with("ifeq") || lhs.starts_with("ifneq") || lhs.starts_with("define")) continue;
    Assignment a{lhs, m[2].str(), std::string(util::trim(m[3].str()))};
    assigns.push_back(a);
    vars.assign(a);
  }

  KbuildMakefile mk;
  std::set<std::string> seen;
  auto expanded_words = [&](const std::string& rhs) { return util::split_words(vars.expand(rhs)); };

  for (const auto& a : assigns) {
    // Module declarations: obj-m, obj-$(CONFIG_X). obj-y is built in and never a module.
    std::string cfg;
    if (a.lhs == "obj-m") {
    } else if (a.lhs.starts_with("obj-$(")) {
      cfg = config_in(a.lhs);
      if (cfg.empty()) continue;
    } else {
      continue;
    }
    for (const auto& w : expanded_words(a.rhs)) {
      if (!w.ends_with(".o") || w.find('/') != std::string::npos) continue; // subdirs have their own Makefile
      std::string name = w.substr(0, w.size() - 2);
      if (!seen.insert(name).second) continue;
      ModuleDecl d;
      d.name = name;
      d.config = cfg;
      if (w.find("$(") != std::string::npos) d.problems.push_back("unresolved make variable in " + w);
      mk.modules.push_back(std::move(d));
    }
  }

  for (auto& d : mk.modules) {
    std::vector<std::string> objs;
    for (const auto& [lhs, value] : vars.all()) {
      if (!lhs.starts_with(d.name + "-")) continue;
      std::string suffix = lhs.substr(d.name.size() + 1);
      bool take = false;
      if (suffix == "y" || suffix == "objs" || suffix == "m") take = true;
      else if (suffix.starts_with("$(")) {
        auto c = config_in(suffix);
        if (c.empty()) continue;
        auto v = config(c);
        take = v == "y" || v == "m";
        d.composite = true;
      } else {
        continue;
      }
      d.composite = true;
      if (!take) continue;
      for (const auto& w : expanded_words(value)) {
        if (w.find("$(") != std::string::npos) {
          d.problems.push_back("unresolved make variable in " + d.name + "-" + suffix + ": " + w);
          continue;
        }
        if (w.ends_with(".o") && std::find(objs.begin(), objs.end(), w) == objs.end()) objs.push_back(w);
      }
    }
    if (!d.composite) objs.push_back(d.name + ".o");
    d.objects = std::move(objs);
    if (d.objects.empty()) d.problems.push_back("no objects for " + d.name);
  }

  for (const auto& a : assigns) {
    bool cc = a.lhs == "ccflags-y" || a.lhs == "EXTRA_CFLAGS" || a.lhs == "subdir-ccflags-y" || a.lhs == "asflags-y";
    if (a.lhs.starts_with("ccflags-$(")) {
      auto c = config_in(a.lhs);
      auto v = c.empty() ? std::string() : config(c);
      cc = v == "y" || v == "m";
    }
    bool per_object = a.lhs.starts_with("CFLAGS_") && a.lhs.ends_with(".o");
    if (!cc && !per_object) continue;
    std::string kept;
    for (auto w : expanded_words(a.rhs)) {
      w = normalize_flag(w);
      if (is_simple_flag(w)) {
        if (cc) mk.ccflags.push_back(w);
        kept += (kept.empty() ? "" : " ") + w;
      } else {
        mk.dropped_flags.push_back(w);
      }
    }
    if (per_object && !kept.empty()) mk.object_flags[a.lhs.substr(7)] += kept;
  }
  std::sort(mk.ccflags.begin(), mk.ccflags.end());
  mk.ccflags.erase(std::unique(mk.ccflags.begin(), mk.ccflags.end()), mk.ccflags.end());
  return mk;
}

} // namespace autodriver::corpus
