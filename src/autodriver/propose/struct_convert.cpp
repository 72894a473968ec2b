// struct-convert: see struct_convert.hpp. Learned from the old and target kernel trees only.

#include "autodriver/propose/struct_convert.hpp"

#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/site_index.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

namespace {

constexpr std::size_t npos = std::string::npos;

/// Skips a designator chain `.a.b` starting at `i`; the members in `out`, the index after it.
std::size_t designators(const std::vector<Token>& toks, std::size_t i, std::size_t end, std::string& out) {
  while (i + 1 < end && toks[i].text == "." && toks[i + 1].kind == TokKind::ident) {
    out += "." + toks[i + 1].text;
    i += 2;
  }
  return i;
}

void flatten(const std::vector<Token>& toks, std::size_t open, std::size_t close, const std::string& prefix,
             std::vector<MemberPath>& out) {
  std::size_t i = open + 1;
  while (i < close) {
    if (toks[i].kind == TokKind::pp_line) {
      ++i;
      continue;
    }
    const bool later = toks[i].later_branch;
    std::string chain;
    std::size_t k = designators(toks, i, close, chain);
    // The value: up to the ',' closing it at this depth.
    std::size_t v = (!chain.empty() && k < close && toks[k].text == "=") ? k + 1 : i;
    std::size_t e = v;
    int depth = 0;
    for (; e < close; ++e) {
      if (toks[e].kind == TokKind::pp_line) continue;
      const std::string& y = toks[e].text;
      if (toks[e].kind == TokKind::punct && (y == "{" || y == "(" || y == "[")) ++depth;
      if (toks[e].kind == TokKind::punct && (y == "}" || y == ")" || y == "]")) --depth;
      if (depth == 0 && y == ",") break;
    }
    if (!chain.empty() && v > i && !later) {
      std::size_t first = v;
      while (first < e && toks[first].kind == TokKind::pp_line) ++first;
      if (first < e && toks[first].text == "{" && first + 1 < e && toks[first + 1].text == ".") {
        std::size_t c = matching_close(toks, first);
        if (c != npos && c < e + 1) flatten(toks, first, c, prefix + chain, out);
      } else {
        MemberPath m;
        m.path = prefix + chain;
        for (std::size_t x = v; x < e; ++x)
          if (toks[x].kind != TokKind::pp_line) m.value.push_back(toks[x].text);
        if (!m.value.empty()) out.push_back(std::move(m));
      }
    }
    i = e + 1;
  }
}

/// A function's return type and parameters, read from its definition.
struct Fn {
  std::string ret;           ///< "int"
  std::vector<Param> params; ///< types as C text ("struct acpi_device *"), names
};

std::string type_of(const std::vector<Param>& ps, std::size_t i) { return i < ps.size() ? type_key(ps[i].type) : ""; }

std::optional<Fn> function_of(const std::vector<Token>& toks, const Unit& u) {
  if (u.kind != UnitKind::function) return std::nullopt;
  std::size_t at = npos;
  for (std::size_t k = u.first; k + 1 < u.body; ++k)
    if (toks[k].text == u.name && toks[k + 1].text == "(") at = k;
  if (at == npos) return std::nullopt;
  std::size_t close = matching_close(toks, at + 1);
  if (close == npos || close > u.body) return std::nullopt;
  static const std::set<std::string> k_storage = {"static", "inline",         "__always_inline", "noinline", "__init",
                                                  "__exit", "__maybe_unused", "__cold",          "extern",   "__inline__"};
  std::vector<std::string> ret;
  for (std::size_t k = at; k-- > u.first;) {
    if (toks[k].kind == TokKind::pp_line) break;
    if (!k_storage.count(toks[k].text)) ret.insert(ret.begin(), toks[k].text);
  }
  if (ret.empty()) return std::nullopt;
  Fn f;
  f.ret = c_text(ret);
  std::vector<std::string> cur;
  int depth = 0;
  auto flush = [&] {
    if (cur.empty()) return;
    Param p;
    if (cur.size() > 1 && csrc::starts_ident(cur.back()) && cur[cur.size() - 2] != "struct") {
      p.name = cur.back();
      cur.pop_back();
    }
    p.type = c_text(cur);
    cur.clear();
    if (!(p.type == "void" && p.name.empty())) f.params.push_back(std::move(p));
  };
  for (std::size_t k = at + 2; k < close; ++k) {
    if (toks[k].kind == TokKind::pp_line) continue;
    const std::string& x = toks[k].text;
    if (x == "(" || x == "[") ++depth;
    if (x == ")" || x == "]") --depth;
    if (depth == 0 && x == ",") {
      flush();
      continue;
    }
    cur.push_back(x);
  }
  flush();
  return f;
}

/// "ret\ntype\tname\n..." (a vote key) and back.
std::string fn_key(const Fn& f) {
  std::string s = f.ret;
  for (const auto& p : f.params) s += "\n" + p.type + "\t" + p.name;
  return s;
}
Fn fn_from_key(const std::string& s) {
  Fn f;
  auto lines = util::split_lines(s);
  if (lines.empty()) return f;
  f.ret = std::string(lines[0]);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    std::string l(lines[i]);
    auto tab = l.find('\t');
    f.params.push_back({l.substr(0, tab), tab == npos ? std::string() : l.substr(tab + 1)});
  }
  return f;
}

/// The struct tag an initializer unit is declared with ("acpi_driver"), else empty.
std::string tag_of(const std::vector<Token>& toks, const Unit& u) {
  std::string tag;
  for (std::size_t k = u.first; k + 1 < u.body; ++k)
    if (toks[k].text == "struct" && toks[k + 1].kind == TokKind::ident) tag = toks[k + 1].text;
  return tag;
}

/// The callee-less function a value names (`f` or `&f`), when the file defines such a function.
std::string function_value(const MemberPath& m, const std::set<std::string>& fns) {
  if (m.value.size() == 1 && fns.count(m.value[0])) return m.value[0];
  if (m.value.size() == 2 && m.value[0] == "&" && fns.count(m.value[1])) return m.value[1];
  return {};
}

std::set<std::string> function_names(const SourceFile& f) {
  std::set<std::string> out;
  for (const auto& u : f.units)
    if (u.kind == UnitKind::function) out.insert(u.name);
  return out;
}

const Unit* function_unit(const SourceFile& f, const std::string& name) {
  for (const auto& u : f.units)
    if (u.kind == UnitKind::function && u.name == name) return &u;
  return nullptr;
}

std::vector<std::string> token_texts(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& t : tokenize(s)) out.push_back(t.text);
  return out;
}

/// Locals and parameters of a function declared `struct tag *name` (first declarator of each
/// declaration), with their types as keys.
std::map<std::string, std::string> pointer_locals(const std::vector<Token>& toks, const Unit& u) {
  std::map<std::string, std::string> out;
  for (std::size_t k = u.first; k + 3 <= u.last; ++k) {
    if (toks[k].text != "struct" || toks[k + 1].kind != TokKind::ident || toks[k + 2].text != "*" ||
        toks[k + 3].kind != TokKind::ident)
      continue;
    const std::string& prev = k > u.first ? toks[k - 1].text : "";
    if (k > u.first && prev != ";" && prev != "{" && prev != "}" && prev != "(" && prev != "," && prev != "const") continue;
    out.emplace(toks[k + 3].text, type_key("struct " + toks[k + 1].text + " *"));
  }
  return out;
}

/// A vote: candidates and how many examples chose each.
using Votes = std::map<std::string, std::map<std::string, int>>;

std::string winner(const std::map<std::string, int>& c, int* n = nullptr) {
  std::string best;
  int bn = 0;
  for (const auto& [k, v] : c)
    if (v > bn) best = k, bn = v;
  if (n) *n = bn;
  return best;
}

/// What the kernel's own conversions from `struct from` teach.
struct Conversion {
  std::string to_tag;
  int examples = 0;
  std::vector<std::string> evidence;
  std::map<std::string, std::string> member;              ///< old path -> new path, "" = dropped
  std::map<std::string, std::string> calls;               ///< old callee of the object -> new callee
  std::map<std::string, Fn> callback;                     ///< new path -> the callback's type
  std::map<std::string, std::vector<std::string>> bridge; ///< key(old type) '\n' key(new type) -> template over $P
  /// In callbacks the object reaches through its tables (its dev_pm_ops), the old way from a
  /// parameter to the old type and the new one: those callbacks get the new object's device
  /// now (`to_acpi_device(dev)` -> `ACPI_COMPANION(dev)`). key(old type) '\n' key(param type).
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> rebridge;
  struct Hook {
    std::string at;                ///< the new path whose callback makes the call
    std::vector<std::string> call; ///< tokens; $H the function, $L:<type> a local of that type, $C its context
    bool value = false;            ///< the call's result is used (an int to check)
  };
  std::map<std::string, std::vector<Hook>> moved; ///< old path -> calls in the new callbacks, in path order
  std::map<std::string, Fn> moved_type;           ///< old path -> the function's new type
  std::vector<std::string> includes;
};

/// The functions of `f` its object's tables hold: a value `&t`/`t` of a member that is no
/// function names a table defined in the file, an initializer (`static const struct dev_pm_ops
/// t = {...}`) or a declaring macro call (`static SIMPLE_DEV_PM_OPS(t, suspend, resume);`).
std::set<std::string> reached_functions(const SourceFile& f, const std::vector<MemberPath>& members,
                                        const std::set<std::string>& fns) {
  std::set<std::string> tables, out;
  for (const auto& m : members) {
    std::string t = m.value.size() == 1 ? m.value[0] : m.value.size() == 2 && m.value[0] == "&" ? m.value[1] : "";
    if (csrc::starts_ident(t) && !fns.count(t)) tables.insert(t);
  }
  if (tables.empty()) return out;
  for (const auto& u : f.units)
    if (u.kind == UnitKind::initializer && tables.count(u.name))
      for (std::size_t k = u.body; k <= u.last && k < f.tokens.size(); ++k)
        if (fns.count(f.tokens[k].text)) out.insert(f.tokens[k].text);
  for (const auto& c : find_calls(f.tokens, 0, f.tokens.size() - 1)) {
    if (c.args.empty() || !tables.count(c.args[0])) continue;
    if (std::any_of(c.callee.begin(), c.callee.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); }))
      continue;
    for (std::size_t i = 1; i < c.args.size(); ++i)
      if (fns.count(c.args[i])) out.insert(c.args[i]);
  }
  return out;
}

class Learner {
public:
  explicit Learner(std::string from) : m_from(std::move(from)) {}

  void add(const SourceFile& b, const SourceFile& a) {
    const auto fb = function_names(b), fa = function_names(a);
    bool used = false;
    for (const auto& u : b.units) {
      if (u.kind != UnitKind::initializer || tag_of(b.tokens, u) != m_from) continue;
      const Unit* v = a.unit(u.name);
      if (!v || v->kind != UnitKind::initializer) continue;
      std::string to = tag_of(a.tokens, *v);
      if (to.empty() || to == m_from) continue;
      if (u.body + 1 >= b.tokens.size() || v->body + 1 >= a.tokens.size()) continue;
      m_to[to]++;
      used = true;
      auto P = member_paths(b.tokens, u.body + 1);
      auto Q = member_paths(a.tokens, v->body + 1);
      std::vector<bool> usedq(Q.size(), false), donep(P.size(), false);
      // Every function-valued new member: its callback type.
      for (const auto& q : Q)
        if (auto g = function_value(q, fa); !g.empty())
          if (auto fn = function_of(a.tokens, *function_unit(a, g))) m_callback[q.path][fn_key(*fn)]++;
      // The same value on both sides.
      for (std::size_t i = 0; i < P.size(); ++i)
        for (std::size_t j = 0; j < Q.size(); ++j)
          if (!usedq[j] && Q[j].value == P[i].value) {
            m_member[P[i].path][Q[j].path]++;
            usedq[j] = donep[i] = true;
            pair_functions(b, a, function_value(P[i], fb), function_value(Q[j], fa));
            break;
          }
      // A callback renamed with its member (`foo_add` -> `foo_probe`): the old function is gone
      // from the new file, the new one was not in the old; the longest common prefix pairs them.
      for (std::size_t i = 0; i < P.size(); ++i) {
        if (donep[i]) continue;
        std::string f = function_value(P[i], fb);
        if (f.empty() || fa.count(f)) continue;
        std::size_t best = npos, best_len = 0;
        for (std::size_t j = 0; j < Q.size(); ++j) {
          std::string g = function_value(Q[j], fa);
          if (usedq[j] || g.empty() || fb.count(g)) continue;
          std::size_t l = 0;
          while (l < f.size() && l < g.size() && f[l] == g[l]) ++l;
          if (l > best_len) best = j, best_len = l;
        }
        if (best == npos) continue;
        m_member[P[i].path][Q[best].path]++;
        usedq[best] = donep[i] = true;
        pair_functions(b, a, f, function_value(Q[best], fa));
      }
      // A callback the new object no longer holds, still defined: handed over by calls instead.
      for (std::size_t i = 0; i < P.size(); ++i) {
        if (donep[i]) continue;
        std::string f = function_value(P[i], fb);
        if (!f.empty() && fa.count(f)) {
          learn_hooks(a, Q, fa, P[i].path, f);
          donep[i] = true;
        } else if (f.empty()) {
          m_member[P[i].path][""]++; // a value with no counterpart: dropped
        }
      }
      // Callbacks reached through the object's tables (its dev_pm_ops): how the old ones reached
      // the old type from the device they were given (`to_acpi_device(dev)`).
      for (const auto& g : reached_functions(b, P, fb)) {
        const Unit* og = function_unit(b, g);
        if (!og) continue;
        auto of = function_of(b.tokens, *og);
        if (!of) continue;
        const std::string ob = join_tokens(b.tokens, og->body, og->last);
        static const std::regex k_decl(R"((?:^|[;{}] )(struct \w+ \*) \w+ = )");
        std::set<std::string> types;
        for (std::sregex_iterator it(ob.begin(), ob.end(), k_decl), end; it != end; ++it) types.insert((*it)[1].str());
        for (const auto& p : of->params)
          for (const auto& t : types)
            if (auto o = p.name.empty() ? std::nullopt : bridge_in(ob, t, p.name))
              m_rebridge[type_key(t) + "\n" + type_key(p.type)][*o]++;
      }
      // Calls that take the object.
      auto takers = [](const SourceFile& s, const std::string& name) {
        std::set<std::string> out;
        for (const auto& c : find_calls(s.tokens, 0, s.tokens.size() - 1))
          for (const auto& arg : c.args)
            if (arg == name || arg == "& " + name) out.insert(c.callee);
        return out;
      };
      auto cb = takers(b, u.name), ca = takers(a, u.name);
      for (const auto& c : cb) {
        if (has_word(a.text, c)) continue;
        std::string best;
        double bs = 0;
        for (const auto& d : ca) {
          if (has_word(b.text, d)) continue;
          double s = name_similarity(c, d);
          if (s > bs) bs = s, best = d;
        }
        if (!best.empty()) m_calls[c][best]++;
      }
    }
    if (!used) return;
    ++m_examples;
    if (m_evidence.size() < 5) m_evidence.push_back(b.rel);
    auto ib = includes_of(b.tokens);
    for (const auto& i : includes_of(a.tokens))
      if (std::find(ib.begin(), ib.end(), i) == ib.end()) m_includes[i]++;
  }

  std::optional<Conversion> result() const {
    Conversion c;
    c.to_tag = winner(m_to);
    if (c.to_tag.empty() || m_examples == 0) return std::nullopt;
    c.examples = m_examples;
    c.evidence = m_evidence;
    for (const auto& [p, v] : m_member) c.member[p] = winner(v);
    for (const auto& [p, v] : m_calls) c.calls[p] = winner(v);
    for (const auto& [p, v] : m_callback) c.callback[p] = fn_from_key(winner(v));
    for (const auto& [k, v] : m_bridge) c.bridge[k] = util::split_words(winner(v));
    // The new way from such a device to the old type: the bridge from the new object, which
    // reaches the old type through the new object's device (`ACPI_COMPANION(&$P->dev)`), given
    // that device itself (`ACPI_COMPANION($P)`).
    for (const auto& [k, v] : m_rebridge) {
      const std::string old_type = k.substr(0, k.find('\n'));
      for (const auto& [bk, tmpl] : c.bridge) {
        if (bk.substr(0, bk.find('\n')) != old_type) continue;
        std::vector<std::string> derived;
        int through_device = 0;
        for (std::size_t i = 0; i < tmpl.size(); ++i) {
          if (i + 3 < tmpl.size() && tmpl[i] == "&" && tmpl[i + 1] == "$P" && tmpl[i + 2] == "->" &&
              csrc::starts_ident(tmpl[i + 3])) {
            derived.push_back("$P");
            i += 3;
            ++through_device;
          } else {
            if (tmpl[i] == "$P") through_device = -100;
            derived.push_back(tmpl[i]);
          }
        }
        if (through_device == 1) c.rebridge[k] = {util::split_words(winner(v)), derived};
      }
    }
    for (const auto& [p, at] : m_hooks) {
      int seen = 0;
      for (const auto& [where, v] : at) {
        int n = 0;
        for (const auto& [_, x] : v) n += x;
        seen = std::max(seen, n);
      }
      for (const auto& [where, v] : at) {
        int n = 0;
        for (const auto& [_, x] : v) n += x;
        if (2 * n < seen) continue; // a call only some examples make there
        std::string w = winner(v);
        Conversion::Hook h;
        h.at = where;
        h.value = w.starts_with("=");
        h.call = util::split_words(w.substr(1));
        c.moved[p].push_back(std::move(h));
      }
      if (auto it = m_moved_type.find(p); it != m_moved_type.end()) c.moved_type[p] = fn_from_key(winner(it->second));
    }
    for (const auto& [i, n] : m_includes)
      if (2 * n >= m_examples) c.includes.push_back(i);
    return c;
  }

private:
  /// An old callback and its replacement: how the new one reaches each old parameter type it
  /// no longer receives (a local of that type initialised from a new parameter).
  void pair_functions(const SourceFile& b, const SourceFile& a, const std::string& f, const std::string& g) {
    if (f.empty() || g.empty()) return;
    const Unit* uf = function_unit(b, f);
    const Unit* ug = function_unit(a, g);
    if (!uf || !ug) return;
    auto of = function_of(b.tokens, *uf);
    auto ng = function_of(a.tokens, *ug);
    if (!of || !ng) return;
    const std::string body = join_tokens(a.tokens, ug->body, ug->last);
    for (const auto& op : of->params) {
      bool passed = false;
      for (const auto& np : ng->params) passed = passed || type_key(np.type) == type_key(op.type);
      if (passed) continue;
      for (const auto& np : ng->params) {
        if (np.name.empty()) continue;
        if (auto expr = bridge_in(body, join_tokens_of(op.type), np.name))
          m_bridge[type_key(op.type) + "\n" + type_key(np.type)][*expr]++;
      }
    }
  }

  static std::string join_tokens_of(const std::string& type) {
    std::string s;
    for (const auto& t : token_texts(type)) s += (s.empty() ? "" : " ") + t;
    return s;
  }

  static std::string regex_escape(const std::string& s) {
    static const std::regex k_special(R"([.^$|()\[\]{}*+?\\])");
    return std::regex_replace(s, k_special, R"(\$&)");
  }

  /// `T x = E;` or `T x; ... x = E;` in a body of single-space-joined tokens, E naming `param`:
  /// E with `param` spelled $P.
  static std::optional<std::string> bridge_in(const std::string& body, const std::string& type, const std::string& param) {
    const std::string t = regex_escape(type);
    std::smatch m;
    std::string expr;
    if (std::regex_search(body, m, std::regex("(?:^|[;{}] )" + t + " (\\w+) = ([^;]+?) ;"))) {
      expr = m[2].str();
    } else if (std::regex_search(body, m, std::regex("(?:^|[;{}] )" + t + " (\\w+) ;"))) {
      std::smatch m2;
      if (std::regex_search(body, m2, std::regex("[;{}] " + m[1].str() + " = ([^;=]+?) ;"))) expr = m2[1].str();
    }
    if (expr.empty() || !has_word(expr, param)) return std::nullopt;
    std::string out;
    for (const auto& x : token_texts(expr)) out += (out.empty() ? "" : " ") + (x == param ? std::string("$P") : x);
    return out;
  }

  void learn_hooks(const SourceFile& a, const std::vector<MemberPath>& Q, const std::set<std::string>& fa,
                   const std::string& old_path, const std::string& f) {
    if (auto fn = function_of(a.tokens, *function_unit(a, f))) m_moved_type[old_path][fn_key(*fn)]++;
    for (const auto& c : find_calls(a.tokens, 0, a.tokens.size() - 1)) {
      if (std::find(c.args.begin(), c.args.end(), f) == c.args.end()) continue;
      const Unit* h = nullptr;
      for (const auto& u : a.units)
        if (u.kind == UnitKind::function && u.first <= c.name_tok && c.name_tok <= u.last) h = &u;
      if (!h) continue;
      std::string at;
      for (const auto& q : Q)
        if (function_value(q, fa) == h->name) at = q.path;
      if (at.empty()) continue;
      auto locals = pointer_locals(a.tokens, *h);
      auto hf = function_of(a.tokens, *h);
      std::string tmpl = c.callee + " (";
      for (std::size_t i = 0; i < c.args.size(); ++i) {
        const std::string& arg = c.args[i];
        std::string x;
        if (arg == f) {
          x = "$H";
        } else if (auto it = locals.find(arg);
                   it != locals.end() && hf &&
                   std::none_of(hf->params.begin(), hf->params.end(), [&](const Param& p) { return p.name == arg; })) {
          x = "$L:" + it->second;
        } else {
          // A bridge expression of a parameter (`ACPI_COMPANION(&pdev->dev)`): that local's type.
          for (const auto& [key, votes] : m_bridge)
            for (const auto& [expr, _] : votes)
              if (hf)
                for (const auto& p : hf->params)
                  if (!p.name.empty() && Learner::bridge_matches(expr, arg, p.name)) x = "$L:" + key.substr(0, key.find('\n'));
          if (x.empty()) {
            bool constant = true;
            for (const auto& t : token_texts(arg))
              if (csrc::starts_ident(t) &&
                  std::any_of(t.begin(), t.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); }))
                constant = false;
            x = constant ? arg : "$C";
          }
        }
        tmpl += (i ? " , " : " ") + x;
      }
      tmpl += " )";
      const std::string& prev = c.name_tok > 0 ? a.tokens[c.name_tok - 1].text : "";
      const bool value = prev == "=" || prev == "return" || prev == "(" || prev == "!";
      m_hooks[old_path][at][(value ? "=" : "-") + tmpl]++;
    }
  }

  static bool bridge_matches(const std::string& tmpl, const std::string& arg, const std::string& param) {
    std::string s;
    for (const auto& x : token_texts(arg)) s += (s.empty() ? "" : " ") + (x == param ? std::string("$P") : x);
    return s == tmpl;
  }

  std::string m_from;
  int m_examples = 0;
  std::vector<std::string> m_evidence;
  std::map<std::string, int> m_to, m_includes;
  Votes m_member, m_calls, m_callback, m_bridge, m_moved_type, m_rebridge;
  std::map<std::string, Votes> m_hooks; ///< old path -> at -> template
};

/// ".drv.pm" when no example held it: the mapping of a sibling under the same prefix that kept
/// its last member (".drv.name" -> ".driver.name" gives ".drv" -> ".driver").
std::optional<std::string> mapped_path(const Conversion& c, const std::string& path) {
  if (auto it = c.member.find(path); it != c.member.end()) return it->second;
  auto dot = path.rfind('.');
  if (dot == 0 || dot == npos) return std::nullopt;
  const std::string prefix = path.substr(0, dot), last = path.substr(dot);
  std::optional<std::string> to;
  for (const auto& [p, q] : c.member) {
    if (!p.starts_with(prefix + ".") || p.rfind('.') != dot || q.empty()) continue;
    const std::string tail = p.substr(dot);
    if (!q.ends_with(tail)) return std::nullopt;
    std::string np = q.substr(0, q.size() - tail.size());
    if (to && *to != np) return std::nullopt;
    to = np;
  }
  if (!to) return std::nullopt;
  return *to + last;
}

std::string fill(const std::vector<std::string>& tmpl, const std::map<std::string, std::string>& vars) {
  std::vector<std::string> out;
  for (const auto& t : tmpl) {
    auto it = vars.find(t);
    if (it == vars.end()) {
      out.push_back(t);
      continue;
    }
    for (const auto& x : token_texts(it->second)) out.push_back(x);
  }
  return c_text(out);
}

/// One adapter: a function with the new callback type that reaches the old parameter types
/// through learned bridges, calls the driver's callback and makes the hooks' calls.
struct Adapter {
  std::string name;
  std::string path;    ///< new member path
  Fn type;             ///< the new callback type
  std::string wrapped; ///< the driver's function, may be empty
  std::optional<Fn> wrapped_type;
  std::vector<std::pair<Conversion::Hook, std::string>> hooks; ///< hook, its handler adapter
  std::string undo; ///< the driver's function to call when a hook fails after `wrapped`
  std::optional<Fn> undo_type;
  /// The old object's device-managed resources, which the driver core released when the old
  /// driver unbound and no driver of the old object's device releases now: the callback's
  /// resources are a devres group of that device, released with the new device's own resources
  /// (a devm action of the new object, run after its remove or a failed probe). The function
  /// releasing the group; empty when not needed.
  std::string devres_release;
  std::string devres_old; ///< type key of the old object
};

} // namespace

std::vector<MemberPath> member_paths(const std::vector<Token>& toks, std::size_t open) {
  std::vector<MemberPath> out;
  if (open >= toks.size() || toks[open].text != "{") return out;
  std::size_t close = matching_close(toks, open);
  if (close == npos) return out;
  flatten(toks, open, close, "", out);
  return out;
}

namespace {

class StructConvert final : public Proposer {
public:
  std::string_view id() const override { return "struct-convert"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.old_src.empty() || ctx.new_src.empty()) return out;
    static const std::regex k_var(
        R"((?:variable '(\w+)' has initializer but incomplete type|storage size of '(\w+)' isn't known))");
    std::set<std::string> done;
    for (const auto& d : diags) {
      if (d.file.empty() || d.file.front() == '/') continue;
      std::smatch m;
      if (!std::regex_search(d.message, m, k_var)) continue;
      const std::string var = m[1].matched ? m[1].str() : m[2].str();
      if (!done.insert(d.file + ":" + var).second) continue;
      if (auto e = convert(ctx, d.file, var)) out.push_back(std::move(*e));
    }
    return out;
  }

private:
  const std::optional<Conversion>& learn(SiteIndex& idx, const std::string& tag) {
    auto it = m_learned.find(tag);
    if (it != m_learned.end()) return it->second;
    Learner l(tag);
    for (const auto& p : idx.pairs_using("struct " + tag, 120, SiteIndex::Pairs::changed)) l.add(*p.before, *p.after);
    auto r = l.result();
    if (r) {
      std::vector<std::string> m;
      for (const auto& [a, b] : r->member) m.push_back(a + "->" + b);
      for (const auto& [a, b] : r->calls) m.push_back(a + "()->" + b + "()");
      for (const auto& [a, b] : r->bridge) m.push_back("bridge " + a + ": " + c_text(b));
      for (const auto& [a, hs] : r->moved)
        for (const auto& h : hs) m.push_back("hook " + a + " at " + h.at + ": " + c_text(h.call));
      for (const auto& [a, f] : r->callback) m.push_back("type " + a + ": " + fn_key(f));
      for (const auto& [a, f] : r->rebridge) m.push_back("rebridge " + a + ": " + c_text(f.first) + " -> " + c_text(f.second));
      util::log_debug("struct-convert: struct {} -> struct {} in {} kernel drivers: {}", tag, r->to_tag, r->examples,
                      fmt::join(m, "; "));
    }
    return m_learned[tag] = std::move(r);
  }

  /// The calls that take the object (`f(var)`, `f(&var)`) renamed as the kernel's converted drivers
  /// renamed them, into `edited` (line -> new text); false when a line holds the callee twice.
  static bool rename_calls(const Conversion& c, const std::vector<Token>& toks, const std::string& var,
                           const std::vector<std::string_view>& lines, int first_line, int last_line,
                           std::map<int, std::string>& edited, std::vector<std::string>& renamed) {
    for (const auto& call : find_calls(toks, 0, toks.size() - 1)) {
      auto it = c.calls.find(call.callee);
      if (it == c.calls.end()) continue;
      if (std::none_of(call.args.begin(), call.args.end(), [&](const std::string& a) { return a == var || a == "& " + var; }))
        continue;
      const int ln = toks[call.name_tok].line;
      if (ln >= first_line && ln <= last_line) continue;
      std::string& l = edited.try_emplace(ln, lines[static_cast<std::size_t>(ln) - 1]).first->second;
      auto pos = l.find(call.callee);
      if (pos == npos || l.find(call.callee, pos + 1) != npos) return false;
      l.replace(pos, call.callee.size(), it->second);
      renamed.push_back(call.callee + "() -> " + it->second + "()");
    }
    return true;
  }

  /// Callbacks the object's tables hold get the new object's device now: the way they reached
  /// the old type from it, as the kernel's converted drivers changed theirs (into `edited`).
  static std::vector<std::string>
  rebridge_callbacks(const Conversion& c, const std::string& rel, const std::vector<Token>& toks, const std::vector<Unit>& units,
                     const Unit& obj, const std::set<std::string>& fns, std::map<std::string, const Unit*>& fn_units,
                     const std::vector<std::string_view>& lines, std::map<int, std::string>& edited) {
    std::vector<std::string> rebridged;
    SourceFile sf;
    sf.rel = rel;
    sf.tokens = toks;
    sf.units = units;
    for (const auto& g : reached_functions(sf, member_paths(toks, obj.body + 1), fns)) {
      const Unit* fu = fn_units[g];
      auto fn = function_of(toks, *fu);
      if (!fn) continue;
      for (const auto& p : fn->params) {
        if (p.name.empty()) continue;
        for (const auto& [key, rb] : c.rebridge) {
          if (key.substr(key.find('\n') + 1) != type_key(p.type)) continue;
          const std::string was = fill(rb.first, {{"$P", p.name}}), now = fill(rb.second, {{"$P", p.name}});
          for (int ln = toks[fu->body].line; ln <= toks[fu->last].line; ++ln) {
            if (lines[static_cast<std::size_t>(ln) - 1].find(was) == npos) continue;
            std::string& l = edited.try_emplace(ln, lines[static_cast<std::size_t>(ln) - 1]).first->second;
            for (auto pos = l.find(was); pos != npos; pos = l.find(was, pos + now.size())) l.replace(pos, was.size(), now);
            rebridged.push_back(fmt::format("{}: {} -> {}", g, was, now));
          }
        }
      }
    }
    return rebridged;
  }

  /// `#include`s of the headers the converted drivers gained, after the file's last include
  /// above the object; nullopt when there are none to add.
  static std::optional<TextEdit> include_edit(const Conversion& c, const std::string& rel, const std::vector<Token>& toks,
                                              int first_line) {
    auto have = includes_of(toks);
    int last_include = 0;
    for (const auto& t : toks)
      if (t.kind == TokKind::pp_line && t.text.find("include") != npos && t.line < first_line) last_include = t.line;
    std::string inc;
    for (const auto& i : c.includes)
      if (std::find(have.begin(), have.end(), i) == have.end()) inc += "#include <" + i + ">\n";
    if (inc.empty() || last_include == 0) return std::nullopt;
    return TextEdit{rel, last_include + 1, 0, inc};
  }

  /// Where each member of the object goes on the new struct.
  struct MemberPlan {
    std::vector<std::pair<std::string, std::string>> members;    ///< new path -> value text ("" for an adapter)
    std::map<std::string, Adapter> adapters;                     ///< by new path
    std::vector<std::string> mapping;                            ///< "old -> new" for the description
    std::vector<std::pair<std::string, Conversion::Hook>> hooks; ///< old path, hook
  };

  /// The object's members mapped onto the new struct as the kernel's conversions mapped them;
  /// false when one has no counterpart (or a callback nowhere to go).
  bool map_members(const Conversion& c, const std::vector<Token>& toks, const Unit& obj, const std::string& var,
                   const std::set<std::string>& fns, const std::function<std::optional<Fn>(const std::string&)>& fn_type,
                   const std::vector<std::string>& new_members, MemberPlan& plan) {
    for (const auto& m : member_paths(toks, obj.body + 1)) {
      std::string f = function_value(m, fns);
      auto q = mapped_path(c, m.path);
      if (!f.empty() && c.moved.count(m.path)) {
        for (const auto& h : c.moved.at(m.path)) plan.hooks.push_back({m.path, h});
        plan.mapping.push_back(fmt::format("{} handed over by {}", m.path, c.moved.at(m.path).front().call.front()));
        m_handler_old[m.path] = f;
        continue;
      }
      if (!q && f.empty()) {
        // A value no example held: kept where the new struct has the member, else dropped like
        // the values the kernel's conversions dropped.
        const std::string top = m.path.substr(1, m.path.find('.', 1) == npos ? npos : m.path.find('.', 1) - 1);
        q = std::find(new_members.begin(), new_members.end(), top) != new_members.end() ? m.path : std::string();
      }
      if (!q) {
        util::log_debug("struct-convert: {} of {} has no counterpart the kernel's conversions show", m.path, var);
        return false;
      }
      if (q->empty()) {
        if (!f.empty()) return false; // a callback with nowhere to go
        plan.mapping.push_back(m.path + " dropped");
        continue;
      }
      plan.mapping.push_back(m.path + " -> " + *q);
      if (!f.empty()) {
        auto cb = c.callback.find(*q);
        auto old = fn_type(f);
        if (cb == c.callback.end() || !old) return false;
        if (same_type(*old, cb->second)) {
          plan.members.push_back({*q, c_text(m.value)});
          continue;
        }
        Adapter& a = plan.adapters[*q];
        a.path = *q;
        a.type = cb->second;
        a.wrapped = f;
        a.wrapped_type = old;
        for (const auto& p : old->params) m_type_text.emplace(type_key(p.type), p.type);
        plan.members.push_back({*q, ""});
        continue;
      }
      plan.members.push_back({*q, c_text(m.value)});
    }
    return true;
  }

  std::optional<Edit> convert(const PortContext& ctx, const std::string& rel, const std::string& var) {
    auto text = util::read_file(ctx.tree / rel);
    if (!text) return std::nullopt;
    auto toks = tokenize(*text);
    auto units = find_units(toks);
    const Unit* u = nullptr;
    for (const auto& x : units)
      if (x.kind == UnitKind::initializer && x.name == var) u = &x;
    if (!u || u->body + 1 >= toks.size()) return std::nullopt;
    const std::string from = tag_of(toks, *u);
    if (from.empty()) return std::nullopt;
    SiteIndex& idx = m_index.get(ctx);
    const auto& conv = learn(idx, from);
    if (!conv) {
      util::log_debug("struct-convert: no kernel driver converted a struct {}", from);
      return std::nullopt;
    }
    const Conversion& c = *conv;
    m_ctx_type.clear();
    m_type_text.clear();
    m_handler_old.clear();
    m_generated_handlers.clear();
    std::vector<std::string> new_members;
    std::optional<TargetIndex> tix; // the target's declarations, read once per conversion
    if (ctx.to) tix.emplace(ctx.new_src, ctx.to->build_dir);
    if (tix) new_members = tix->struct_members(c.to_tag);
    std::set<std::string> fns;
    std::map<std::string, const Unit*> fn_units;
    for (const auto& x : units)
      if (x.kind == UnitKind::function) fns.insert(x.name), fn_units[x.name] = &x;
    auto fn_type = [&](const std::string& f) -> std::optional<Fn> {
      auto it = fn_units.find(f);
      return it == fn_units.end() ? std::nullopt : function_of(toks, *it->second);
    };

    // New members: path -> value text; adapters by new path.
    MemberPlan plan;
    if (!map_members(c, toks, *u, var, fns, fn_type, new_members, plan)) return std::nullopt;
    auto& members = plan.members;
    auto& adapters = plan.adapters;
    auto& mapping = plan.mapping;
    auto& hooks = plan.hooks;
    // Hooks: each goes into the adapter of the new path the kernel's drivers made the call in.
    std::string generated;
    for (const auto& [old_path, h] : hooks) {
      auto cb = c.callback.find(h.at);
      auto mt = c.moved_type.find(old_path);
      if (cb == c.callback.end() || mt == c.moved_type.end()) return std::nullopt;
      Adapter& a = adapters[h.at];
      if (a.path.empty()) {
        a.path = h.at;
        a.type = cb->second;
        members.push_back({h.at, ""});
      }
      const std::string f = m_handler_old[old_path];
      auto old = fn_type(f);
      if (!old) return std::nullopt;
      std::string handler = unique_name(*text, var + "_" + old_path.substr(old_path.rfind('.') + 1));
      if (!m_generated_handlers.count(old_path)) {
        auto body = handler_text(handler, mt->second, f, *old, h);
        if (!body) return std::nullopt;
        generated += *body;
        m_generated_handlers.insert(old_path);
      }
      a.hooks.push_back({h, handler});
    }
    m_generated_handlers.clear();
    // The first hook that returns a value undoes the wrapped callback of the path its pair runs in.
    for (auto& [path, a] : adapters) {
      if (a.hooks.empty() || a.wrapped.empty()) continue;
      for (const auto& [p, other] : adapters)
        if (p != path && !other.wrapped.empty() && other.hooks.size() && !other.hooks.front().first.value)
          a.undo = other.wrapped, a.undo_type = other.wrapped_type;
    }
    if (auto rel_fn = devres_scope(tix, c, *text + generated, var, adapters)) generated += *rel_fn;
    for (auto& [path, a] : adapters) {
      a.name = unique_name(*text + generated, var + "_" + path.substr(path.rfind('.') + 1));
      auto body = adapter_text(a, c);
      if (!body) return std::nullopt;
      generated += *body;
      for (auto& [p, v] : members)
        if (p == path) v = a.name;
    }
    if (adapters.empty() && hooks.empty() && members.empty()) return std::nullopt;

    // The declaration: `static struct from var = {` ... `};` on lines of its own.
    const int first_line = toks[u->first].line, last_line = toks[u->last].line;
    for (const auto& t : toks)
      if ((t.line == first_line && t.begin < toks[u->first].begin) || (t.line == last_line && t.begin > toks[u->last].begin))
        return std::nullopt;
    std::vector<std::string> decl;
    for (std::size_t k = u->first; k < u->body; ++k) {
      if (toks[k].kind == TokKind::pp_line) return std::nullopt;
      decl.push_back(toks[k].text == from && k > 0 && toks[k - 1].text == "struct" ? c.to_tag : toks[k].text);
    }
    std::string init = c_text(decl) + " = {\n" + initializer_text(members) + "};\n";

    Edit e;
    e.proposer = "struct-convert";
    e.change_id = "struct-convert:" + from;
    e.label = "removed-with-replacement";
    e.title = fmt::format("struct {} is gone: {} becomes a struct {}", from, var, c.to_tag);
    e.symbols = {"struct " + from, "struct " + c.to_tag};
    e.support = c.examples;
    e.evidence = c.evidence;
    e.text_edits.push_back({rel, first_line, last_line - first_line + 1, generated + init});
    // Calls that take the object.
    std::vector<std::string> renamed;
    std::map<int, std::string> edited; ///< line -> its new text
    auto lines = util::split_lines(*text);
    if (!rename_calls(c, toks, var, lines, first_line, last_line, edited, renamed)) return std::nullopt;
    // Callbacks the object's tables hold get the new object's device now: the way they reached
    // the old type from it, as the kernel's converted drivers changed theirs.
    auto rebridged = rebridge_callbacks(c, rel, toks, units, *u, fns, fn_units, lines, edited);
    for (const auto& [ln, l] : edited) e.text_edits.push_back({rel, ln, 1, l + "\n"});
    // The headers the converted drivers gained.
    if (auto inc = include_edit(c, rel, toks, first_line)) e.text_edits.push_back(std::move(*inc));
    std::sort(e.text_edits.begin(), e.text_edits.end(), [](const TextEdit& x, const TextEdit& y) { return x.line > y.line; });
    e.description = fmt::format(
        "The target kernel no longer has struct {}. {} of its own drivers that declared one in the old tree declare a "
        "struct {} in the target (e.g. {}); as they did: {}{}. The driver's callbacks are unchanged; functions with the "
        "new callback types call them{}.",
        from, c.examples, c.to_tag,
        fmt::join(c.evidence.begin(), c.evidence.begin() + std::min<std::size_t>(2, c.evidence.size()), ", "),
        fmt::join(mapping, ", "), renamed.empty() ? std::string() : fmt::format("; {}", fmt::join(renamed, ", ")),
        adapters.empty() ? std::string() : fmt::format(" ({})", fmt::join(adapter_names(adapters), ", ")));
    if (!rebridged.empty())
      e.description += fmt::format(" Callbacks its tables hold now get the new object's device, and reach the old one "
                                   "as the converted drivers' do: {}.",
                                   fmt::join(rebridged, ", "));
    if (std::any_of(adapters.begin(), adapters.end(), [](const auto& x) { return !x.second.devres_release.empty(); }))
      e.description += " No driver binds the old object's device any more, so the device-managed resources the "
                       "driver's callback takes on it form a group released with the new device's own.";
    return e;
  }

  /// One statement line at one tab of indentation (`\t` + `stmt` + `\n`), wrapped after commas
  /// with the continuation aligned under the call's opening parenthesis past 80 columns.
  static std::string line(const std::string& stmt, int tabs = 1) {
    const std::string ind(static_cast<std::size_t>(tabs), '\t');
    if (tabs * 8 + static_cast<int>(stmt.size()) <= 80) return ind + stmt + "\n";
    auto open = stmt.find('(');
    if (open == npos) return ind + stmt + "\n";
    const std::size_t col = static_cast<std::size_t>(tabs) * 8 + open + 1;
    const std::string cont = std::string(col / 8, '\t') + std::string(col % 8, ' ');
    std::string out = ind, cur;
    std::size_t width = static_cast<std::size_t>(tabs) * 8;
    std::size_t start = 0;
    int depth = 0;
    for (std::size_t i = 0; i < stmt.size(); ++i) {
      if (stmt[i] == '(') ++depth;
      if (stmt[i] == ')') --depth;
      if ((stmt[i] == ',' && depth == 1) || i + 1 == stmt.size()) {
        std::string piece = stmt.substr(start, i + 1 - start);
        if (start > 0 && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
        if (width + piece.size() + 1 > 80 && start > 0) {
          while (!out.empty() && out.back() == ' ') out.pop_back();
          out += "\n" + cont;
          width = col;
        } else if (start > 0) {
          out += " ";
          ++width;
        }
        out += piece;
        width += piece.size();
        start = i + 1;
      }
    }
    return out + "\n";
  }

  /// `struct x *` whose struct has a `struct device dev` member in the target.
  static bool has_device(TargetIndex& tix, const std::string& type) {
    static const std::regex k_tag(R"(^struct\s+(\w+)\s*\*$)");
    std::smatch m;
    std::string t(util::trim(type));
    if (!std::regex_match(t, m, k_tag)) return false;
    for (const auto& p : tix.struct_member_types(m[1].str()))
      if (p.name == "dev" && type_key(p.type) == type_key("struct device")) return true;
    return false;
  }

  /// See Adapter::devres_release: only for a driver that uses device-managed resources, a bind
  /// callback (int from one object parameter, old and new) whose old and new objects both carry
  /// a struct device, with the target declaring devres groups. The release function's text.
  std::optional<std::string> devres_scope(std::optional<TargetIndex>& target, const Conversion& c, const std::string& text,
                                          const std::string& var, std::map<std::string, Adapter>& adapters) {
    if (!target || text.find("devm_") == npos) return std::nullopt;
    TargetIndex& tix = *target;
    for (const char* fn : {"devres_open_group", "devres_close_group", "devres_release_group", "devm_add_action_or_reset"})
      if (!tix.names().count(fn)) return std::nullopt;
    for (auto& [path, a] : adapters) {
      if (!a.wrapped_type || a.wrapped_type->params.size() != 1 || a.type.params.size() != 1) continue;
      if (type_key(a.type.ret) == "void" || type_key(a.wrapped_type->ret) == "void") continue;
      const Param& op = a.wrapped_type->params[0];
      const Param np = named(a.type)[0];
      auto br = c.bridge.find(type_key(op.type) + "\n" + type_key(np.type));
      if (br == c.bridge.end() || !has_device(tix, op.type) || !has_device(tix, np.type)) continue;
      const std::string name = unique_name(text, var + "_release_devres");
      std::string lname = op.name.empty() || op.name == np.name ? "obj" : op.name;
      a.devres_release = name;
      a.devres_old = type_key(op.type);
      return fmt::format("static void {}(void *data)\n{{\n", name) +
             line(fmt::format("{}{}{} = data;", np.type, np.type.ends_with("*") ? "" : " ", np.name)) +
             line(fmt::format("{}{}{} = {};", op.type, op.type.ends_with("*") ? "" : " ", lname,
                              fill(br->second, {{"$P", np.name}}))) +
             "\n" + line(fmt::format("devres_release_group(&{}->dev, {});", lname, np.name)) + "}\n\n";
    }
    return std::nullopt;
  }

  static std::vector<std::string> adapter_names(const std::map<std::string, Adapter>& a) {
    std::vector<std::string> out;
    for (const auto& [p, x] : a) out.push_back(x.name + "() for " + p);
    return out;
  }

  static bool same_type(const Fn& a, const Fn& b) {
    if (type_key(a.ret) != type_key(b.ret) || a.params.size() != b.params.size()) return false;
    for (std::size_t i = 0; i < a.params.size(); ++i)
      if (type_of(a.params, i) != type_of(b.params, i)) return false;
    return true;
  }

  static std::string unique_name(const std::string& text, std::string name) {
    while (has_word(text, name)) name += "_new";
    return name;
  }

  static std::string initializer_text(const std::vector<std::pair<std::string, std::string>>& members) {
    // Group by the first member of each path, in first-seen order.
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> groups;
    for (const auto& [p, v] : members) {
      auto dot = p.find('.', 1);
      std::string head = dot == npos ? p : p.substr(0, dot);
      if (!groups.count(head)) order.push_back(head);
      groups[head].push_back({dot == npos ? "" : p.substr(dot), v});
    }
    std::string out;
    for (const auto& head : order) {
      const auto& g = groups[head];
      if (g.size() == 1 && g[0].first.empty()) {
        out += "\t" + head + " = " + g[0].second + ",\n";
        continue;
      }
      std::vector<std::pair<std::string, std::string>> sub;
      for (const auto& [rest, v] : g)
        if (!rest.empty()) sub.push_back({rest, v});
      std::string inner = initializer_text(sub);
      std::string indented;
      for (auto l : util::split_lines(inner)) indented += "\t" + std::string(l) + "\n";
      out += "\t" + head + " = {\n" + indented + "\t},\n";
    }
    return out;
  }

  /// Arguments for calling a driver function of type `old` from a function with parameters
  /// `params`: a parameter of the same type, else the local of that type (`locals`).
  static std::optional<std::vector<std::string>> args_for(const Fn& old, const std::vector<Param>& params,
                                                          const std::map<std::string, std::string>& locals) {
    std::vector<std::string> args;
    std::set<std::size_t> used;
    for (std::size_t i = 0; i < old.params.size(); ++i) {
      std::string a;
      for (std::size_t j = 0; j < params.size() && a.empty(); ++j)
        if (!used.count(j) && type_of(params, j) == type_of(old.params, i)) a = params[j].name, used.insert(j);
      if (a.empty())
        if (auto it = locals.find(type_of(old.params, i)); it != locals.end()) a = it->second;
      if (a.empty()) return std::nullopt;
      args.push_back(a);
    }
    return args;
  }

  static std::vector<Param> named(const Fn& f) {
    std::vector<Param> ps = f.params;
    for (std::size_t i = 0; i < ps.size(); ++i)
      if (ps[i].name.empty()) ps[i].name = fmt::format("arg{}", i);
    return ps;
  }

  static std::string signature(const std::string& name, const Fn& f, const std::vector<Param>& ps) {
    std::vector<std::string> p;
    for (const auto& x : ps) p.push_back(x.type.ends_with("*") ? x.type + x.name : x.type + " " + x.name);
    return fmt::format("static {} {}({})\n", f.ret, name,
                       p.empty() ? std::string("void") : fmt::format("{}", fmt::join(p, ", ")));
  }

  /// The driver's handler `f` (type `old`) called from a function of the type the kernel's
  /// drivers gave theirs: parameters matched by type; an old pointer parameter not among the new
  /// ones comes through the `void *` context the hook passes ($C is the same object).
  std::optional<std::string> handler_text(const std::string& name, const Fn& type, const std::string& f, const Fn& old,
                                          const Conversion::Hook& h) {
    auto ps = named(type);
    std::map<std::string, std::string> locals;
    // The context the hook hands the handler: an argument after the handler that is free ($C) or
    // a local of the old type ($L:T, as the kernel's drivers that passed the object itself).
    auto hpos = std::find(h.call.begin(), h.call.end(), "$H");
    std::string ctx_arg;
    for (auto it = hpos; it != h.call.end(); ++it)
      if (*it == "$C" || it->starts_with("$L:")) ctx_arg = *it;
    for (const auto& p : old.params) {
      bool direct = std::any_of(ps.begin(), ps.end(), [&](const Param& x) { return type_key(x.type) == type_key(p.type); });
      if (direct) continue;
      if (ctx_arg.empty() || !p.type.ends_with("*")) return std::nullopt;
      if (ctx_arg != "$C" && ctx_arg.substr(3) != type_key(p.type)) return std::nullopt;
      auto ctx = std::find_if(ps.begin(), ps.end(), [](const Param& x) { return type_key(x.type) == type_key("void *"); });
      if (ctx == ps.end()) return std::nullopt;
      locals[type_key(p.type)] = ctx->name;
      m_ctx_type = type_key(p.type);
      m_type_text[m_ctx_type] = p.type;
    }
    auto args = args_for(old, ps, locals);
    if (!args) return std::nullopt;
    std::string call = fmt::format("{}({})", f, fmt::join(*args, ", "));
    std::string body = type_key(type.ret) == "void" ? line(call + ";") : line("return " + call + ";");
    return signature(name, type, ps) + "{\n" + body + "}\n\n";
  }

  std::optional<std::string> adapter_text(const Adapter& a, const Conversion& c) {
    auto ps = named(a.type);
    // Locals of the old parameter types, each from a new parameter through a learned bridge.
    std::vector<std::string> need;
    if (a.wrapped_type)
      for (const auto& p : a.wrapped_type->params) need.push_back(type_of({p}, 0));
    for (const auto& [h, _] : a.hooks)
      for (const auto& t : h.call) {
        if (t.starts_with("$L:")) need.push_back(t.substr(3));
        if (t == "$C" && !m_ctx_type.empty()) need.push_back(m_ctx_type);
      }
    std::map<std::string, std::string> locals;
    std::string decls;
    std::set<std::string> taken;
    for (const auto& p : ps) taken.insert(p.name);
    for (const auto& t : need) {
      if (locals.count(t) || std::any_of(ps.begin(), ps.end(), [&](const Param& x) { return type_key(x.type) == t; })) continue;
      std::optional<std::string> init;
      std::string type_text;
      for (const auto& p : ps) {
        auto it = c.bridge.find(t + "\n" + type_key(p.type));
        if (it == c.bridge.end()) continue;
        init = fill(it->second, {{"$P", p.name}});
        break;
      }
      if (!init) return std::nullopt;
      // The local's name and type as the driver's function spells them.
      std::string lname = "obj";
      if (a.wrapped_type)
        for (const auto& p : a.wrapped_type->params)
          if (type_key(p.type) == t) lname = p.name.empty() ? lname : p.name, type_text = p.type;
      if (type_text.empty())
        if (auto it = m_type_text.find(t); it != m_type_text.end()) type_text = it->second;
      if (type_text.empty()) return std::nullopt;
      while (taken.count(lname)) lname += "_";
      taken.insert(lname);
      locals[t] = lname;
      decls += line(fmt::format("{}{}{} = {};", type_text, type_text.ends_with("*") ? "" : " ", lname, *init));
    }
    const bool returns = type_key(a.type.ret) != "void";
    std::string body;
    bool ret_declared = false;
    auto ret_var = [&] {
      if (!ret_declared) decls += fmt::format("\t{} ret;\n", a.type.ret);
      ret_declared = true;
      return std::string("ret");
    };
    auto hook_call = [&](const Conversion::Hook& h, const std::string& handler) -> std::optional<std::string> {
      std::map<std::string, std::string> vars{{"$H", handler}};
      for (const auto& t : h.call) {
        if (t.starts_with("$L:")) {
          auto it = locals.find(t.substr(3));
          if (it == locals.end()) return std::nullopt;
          vars[t] = it->second;
        }
        if (t == "$C") {
          auto it = locals.find(m_ctx_type);
          if (it == locals.end()) return std::nullopt;
          vars[t] = it->second;
        }
      }
      return fill(h.call, vars);
    };
    // Uninstalling hooks (their results unused) run before the wrapped callback, installing
    // ones after it.
    for (const auto& [h, handler] : a.hooks) {
      if (h.value) continue;
      auto call = hook_call(h, handler);
      if (!call) return std::nullopt;
      body += line(*call + ";");
    }
    if (!a.wrapped.empty()) {
      auto args = args_for(*a.wrapped_type, ps, locals);
      if (!args) return std::nullopt;
      std::string call = fmt::format("{}({})", a.wrapped, fmt::join(*args, ", "));
      const bool old_returns = type_key(a.wrapped_type->ret) != "void";
      bool has_install = std::any_of(a.hooks.begin(), a.hooks.end(), [](const auto& x) { return x.first.value; });
      auto old_obj = locals.find(a.devres_old);
      if (!a.devres_release.empty() && returns && old_returns && old_obj != locals.end() && !ps.empty()) {
        const std::string& np = ps[0].name;
        const std::string od = fmt::format("&{}->dev", old_obj->second);
        body += fmt::format("\tif (!devres_open_group({}, {}, GFP_KERNEL))\n\t\treturn -ENOMEM;\n", od, np);
        body += line(fmt::format("{} = devm_add_action_or_reset(&{}->dev, {}, {});", ret_var(), np, a.devres_release, np));
        body += "\tif (ret)\n\t\treturn ret;\n";
        body += line(fmt::format("ret = {};", call));
        body += line(fmt::format("devres_close_group({}, {});", od, np));
        body += has_install ? "\tif (ret)\n\t\treturn ret;\n" : "\treturn ret;\n";
        if (!has_install) return signature(a.name, a.type, ps) + "{\n" + decls + "\n" + body + "}\n\n";
      } else if (returns && old_returns && has_install)
        body += line(fmt::format("{} = {};", ret_var(), call)) + "\tif (ret)\n\t\treturn ret;\n";
      else if (returns && old_returns) body += line("return " + call + ";");
      else body += line(call + ";");
    }
    bool installed = false;
    for (const auto& [h, handler] : a.hooks) {
      if (!h.value) continue;
      auto call = hook_call(h, handler);
      if (!call) return std::nullopt;
      if (!returns) {
        body += line(*call + ";");
        continue;
      }
      body += line(fmt::format("{} = {};", ret_var(), *call));
      if (!a.undo.empty() && a.undo_type) {
        auto args = args_for(*a.undo_type, ps, locals);
        if (!args) return std::nullopt;
        body += "\tif (ret)\n" + line(fmt::format("{}({});", a.undo, fmt::join(*args, ", ")), 2);
      }
      installed = true;
    }
    if (returns && installed) body += "\treturn ret;\n";
    else if (returns && (a.wrapped.empty() || type_key(a.wrapped_type->ret) == "void")) body += "\treturn 0;\n";
    return signature(a.name, a.type, ps) + "{\n" + decls + (decls.empty() ? "" : "\n") + body + "}\n\n";
  }

  SiteIndexCache m_index;
  std::map<std::string, std::optional<Conversion>> m_learned;
  std::map<std::string, std::string> m_handler_old; ///< old path -> the driver's function
  std::set<std::string> m_generated_handlers;
  std::string m_ctx_type;                         ///< the old type a handler's context stands for
  std::map<std::string, std::string> m_type_text; ///< type key -> as the driver spells it
};

} // namespace

std::unique_ptr<Proposer> make_struct_convert() { return std::make_unique<StructConvert>(); }

} // namespace autodriver::propose
