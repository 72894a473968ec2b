// Proposer "callback-signature": an ops/driver struct member's callback type changed (the
// incompatible-pointer-type error names both function types). When only the return type
// changed from int to void, the callback's definition is rewritten and its return statements
// fixed; the rule comes from the two types gcc prints, not from a table.

#include "autodriver/propose/callback_signature.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/struct_swap.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/shared/token_diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <ranges>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;

namespace {

/// The rules a retype applied, named in the edit's description.
void cite_rules(Edit& e, const std::set<std::string>& used) {
  for (const auto& p : used)
    e.description += fmt::format(" A type-strict helper called with a retyped argument becomes its typed variant (rule {}).", p);
}

struct FnType {
  std::string ret;
  std::string params;
};

bool parse_fn_type(const std::string& s, FnType& out) {
  static const std::regex k_fn(R"(^(.*?)\s*\(\*\)\((.*)\)$)");
  std::smatch m;
  if (!std::regex_match(s, m, k_fn)) return false;
  out.ret = std::string(util::trim(m[1].str()));
  out.params = std::string(util::trim(m[2].str()));
  return true;
}

/// The identifier assigned on a line like "\t.remove = foo_remove," or "x->remove = foo;".
std::string assigned_identifier(const std::string& line) {
  // ".remove = foo_remove," and wrapped forms such as ".remove = __exit_p(foo_remove),".
  static const std::regex k_assign(R"(=\s*&?\s*(?:[A-Za-z_]\w*\s*\(\s*)?([A-Za-z_]\w*)\s*\)?\s*[,;]?\s*$)");
  std::smatch m;
  if (std::regex_search(line, m, k_assign)) return m[1].str();
  return {};
}

std::string void_return_smpl(const std::string& fn, const std::string& old_ret) {
  // 1) "return f(x);" keeps the call; 2) other "return E;" become "return;"; 3) the return type
  // becomes void. The trailing top-level "return;" goes by trailing_return_edit(): SmPL's
  // `- return; }` also matches a return ending an inner block (`if (x) { f(); return; }`),
  // which would fall through after the change.
  return fmt::format(R"(@@
identifier f;
expression list es;
@@
{0}(...) {{
<...
- return f(es);
+ f(es);
+ return;
...>
}}

@@
expression E;
@@
{0}(...) {{
<...
- return E;
+ return;
...>
}}

@@
@@
- {1}
+ void
{0}(...) {{ ... }}
)",
                     fn, old_ret);
}

std::string squash(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ') out += c;
  return out;
}

/// One declaration or definition of a function in a token stream.
struct FnDecl {
  std::size_t name = 0, open = 0, close = 0;               ///< tokens: the name, '(' and ')'
  std::size_t body = 0;                                    ///< '{' of a definition, 0 for a prototype
  std::vector<std::pair<std::size_t, std::size_t>> params; ///< token ranges of the parameters
};

std::vector<FnDecl> fn_decls(const std::vector<Token>& toks, const std::string& fn) {
  std::vector<FnDecl> out;
  int depth = 0;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    if (toks[i].text == "{" && !toks[i].later_branch) ++depth;
    if (toks[i].text == "}" && !toks[i].later_branch) --depth;
    if (depth != 0 || toks[i].text != fn || toks[i + 1].text != "(") continue;
    if (i == 0 || (toks[i - 1].kind != TokKind::ident && toks[i - 1].text != "*")) continue;
    FnDecl d;
    d.name = i;
    d.open = i + 1;
    d.close = matching_close(toks, i + 1);
    if (d.close == std::string::npos) continue;
    std::size_t start = i + 2;
    int pd = 0;
    for (std::size_t k = i + 2; k < d.close; ++k) {
      if (toks[k].text == "(" || toks[k].text == "[") ++pd;
      if (toks[k].text == ")" || toks[k].text == "]") --pd;
      if (pd == 0 && toks[k].text == ",") {
        d.params.push_back({start, k - 1});
        start = k + 1;
      }
    }
    if (d.close > start) d.params.push_back({start, d.close - 1});
    // Up to the ';' or '{' that ends it; another declarator of the same function in an #else
    // branch may come first (falcosecurity: `umode_t *` / `mode_t *` variants), its parameter
    // list skipped whole.
    std::size_t k = d.close + 1;
    while (k < toks.size() && toks[k].text != ";" && toks[k].text != "{" && toks[k].text != ",") {
      if (toks[k].text == "(") {
        std::size_t c = matching_close(toks, k);
        if (c == std::string::npos) break;
        k = c;
      }
      ++k;
    }
    if (k >= toks.size() || toks[k].text == ",") continue;
    if (toks[k].text == "{") d.body = k;
    out.push_back(std::move(d));
  }
  return out;
}

/// A parameter the body uses that would go from an integer to a pointer (`unsigned long data` ->
/// `struct timer_list *`): the value it carried (a cookie cast back to the driver's object) is
/// not what the new pointer points at, so retyping it compiles and is wrong. The kernel's own
/// conversions of such callbacks rewrote their bodies; that is not a retype.
bool integer_cookie_retyped(const std::string& text, const std::string& fn, const std::vector<std::string>& to,
                            const std::vector<std::string>& from) {
  auto pointer = [](const std::string& t) { return t.find('*') != std::string::npos || t.find('[') != std::string::npos; };
  auto toks = tokenize(text);
  for (const auto& fd : fn_decls(toks, fn)) {
    if (!fd.body || fd.params.size() != to.size() || from.size() != to.size()) continue;
    std::size_t end = matching_close(toks, fd.body);
    if (end == std::string::npos) continue;
    for (std::size_t p = 0; p < fd.params.size(); ++p) {
      if (pointer(from[p]) || !pointer(to[p]) || from[p].find("struct") != std::string::npos) continue;
      auto [a, b] = fd.params[p];
      if (toks[b].kind != TokKind::ident) continue;
      for (std::size_t k = fd.body + 1; k < end; ++k)
        if (toks[k].kind == TokKind::ident && toks[k].text == toks[b].text) return true;
    }
  }
  return false;
}

/// Line edits that retype the parameters of every declaration and the definition of `fn` in
/// one file: parameter i becomes `to[i]` (keeping its name) where `from[i]` differs.
std::vector<TextEdit> retype_params(const std::string& file, const std::string& text, const std::string& fn,
                                    const std::vector<std::string>& to, const std::vector<std::string>& from) {
  std::vector<TextEdit> edits;
  auto toks = tokenize(text);
  for (const auto& fd : fn_decls(toks, fn)) {
    if (fd.params.size() != to.size()) continue;
    std::string out;
    std::size_t pos = toks[fd.name].begin;
    bool changed = false;
    for (std::size_t p = 0; p < fd.params.size(); ++p) {
      if (squash(to[p]) == squash(from[p])) continue;
      auto [a, b] = fd.params[p];
      std::string name = toks[b].kind == TokKind::ident ? toks[b].text : "";
      std::string type = to[p];
      std::string param = name.empty() ? type : type + (type.back() == '*' ? "" : " ") + name;
      out.append(text, pos, toks[a].begin - pos);
      out += param;
      pos = toks[b].end;
      changed = true;
    }
    if (!changed) continue;
    // Whole lines from the name's line to the closing parenthesis' line.
    out.append(text, pos, toks[fd.close].end - pos);
    edits.push_back(token_span_edit(file, text, toks[fd.name], toks[fd.close], out));
  }
  return edits;
}

/// The body of `fn`'s definition with each call of a type-strict helper (`min(`) that takes a
/// parameter retyped between integer types (`int count` -> `size_t count`) as a whole argument
/// turned into its typed variant (`min_t(T, `): the rule packs' typed-variant rules
/// (rules/minmax-typed.rule) name the pairs. `to`/`from` are the new and old parameter types by
/// position; `used` collects the rules applied.
std::string typed_for_retyped(const std::string& text, const std::string& fn, const std::vector<std::string>& to,
                              const std::vector<std::string>& from, const std::vector<TypedVariant>& variants,
                              std::set<std::string>& used) {
  if (variants.empty()) return text;
  auto toks = tokenize(text);
  std::map<std::string, std::string> retyped; // parameter name -> new type
  std::size_t open = 0, close = 0;
  for (const auto& fd : fn_decls(toks, fn)) {
    if (!fd.body || fd.params.size() != to.size() || to.size() != from.size()) continue;
    for (std::size_t p = 0; p < fd.params.size(); ++p) {
      auto b = fd.params[p].second;
      if (squash(to[p]) != squash(from[p]) && integer_type(to[p]) && integer_type(from[p]) && toks[b].kind == TokKind::ident)
        retyped[toks[b].text] = std::string(util::trim(to[p]));
    }
    open = fd.body;
    close = matching_close(toks, fd.body);
    break;
  }
  if (retyped.empty() || close == std::string::npos || close <= open) return text;
  struct Splice {
    std::size_t at, len;
    std::string text;
  };
  std::vector<Splice> splices; // "min(" -> "min_t(T, "
  for (std::size_t i = open; i + 1 < close; ++i) {
    auto v = std::find_if(variants.begin(), variants.end(), [&](const TypedVariant& x) { return x.name == toks[i].text; });
    if (v == variants.end() || toks[i + 1].text != "(") continue;
    std::size_t c = matching_close(toks, i + 1);
    if (c == std::string::npos || c > close) continue;
    // A top-level argument that is exactly one retyped parameter.
    std::string type;
    int depth = 0;
    std::size_t start = i + 2;
    for (std::size_t k = i + 2; k <= c; ++k) {
      if (k != c && (toks[k].text == "(" || toks[k].text == "[")) ++depth;
      if (k != c && (toks[k].text == ")" || toks[k].text == "]")) --depth;
      if ((depth == 0 && toks[k].text == ",") || k == c) {
        if (k == start + 1 && retyped.count(toks[start].text)) type = retyped[toks[start].text];
        start = k + 1;
      }
    }
    if (type.empty()) continue;
    splices.push_back({toks[i].begin, toks[i + 1].end - toks[i].begin, v->typed + "(" + type + ", "});
    used.insert(v->provenance);
  }
  std::string out = text;
  for (auto it = splices.rbegin(); it != splices.rend(); ++it) out.replace(it->at, it->len, it->text);
  return out;
}

std::string drop_const(const std::string& type) { return type_key(type); }

/// Where each old parameter sits in a plan that only added parameters, in order; nullopt when
/// the plan moved, folded or dropped any.
std::optional<std::vector<std::size_t>> old_positions(const ParamReshape& plan, const std::vector<Param>& old_params) {
  std::vector<std::size_t> out;
  for (const auto& p : old_params) {
    auto it = std::find(plan.names.begin(), plan.names.end(), p.name);
    if (it == plan.names.end()) return std::nullopt;
    auto at = static_cast<std::size_t>(it - plan.names.begin());
    if (!out.empty() && at <= out.back()) return std::nullopt;
    out.push_back(at);
  }
  return out;
}

std::string with_name(const std::string& type, const std::string& name) {
  if (name.empty()) return type;
  return type + (type.back() == '*' ? "" : " ") + name;
}

std::string without_const(const std::string& type) {
  std::string out;
  for (const auto& t : tokenize(type))
    if (t.text != "const") out += (out.empty() ? "" : " ") + t.text;
  return out;
}

/// "struct ethtool_rxfh_param *" -> "ethtool_rxfh_param", else empty.
std::string pointed_struct(const std::string& type) {
  auto toks = tokenize(type);
  if (toks.size() == 3 && toks[0].text == "struct" && toks[2].text == "*") return toks[1].text;
  return {};
}

/// Two parameter types that differ at most in const: the same parameter, retyped.
bool compatible(const std::string& a, const std::string& b) { return drop_const(a) == drop_const(b); }

/// The type a kept parameter is written with: as the driver spelled it (`unsigned long`, not
/// gcc's `long unsigned int`) when it is the target's type, const included; else the target's.
std::string kept_type(const std::string& driver, const std::string& target) {
  auto consts = [](const std::string& t) { return std::ranges::count(tokenize(t), "const", &Token::text); };
  return type_key(driver) == type_key(target) && consts(driver) == consts(target) ? driver : target;
}

/// What the kernel's own implementations of a callback wrote where they used the parameter at
/// old position `pos` once the callback lost it: each implementation found in both the old and
/// the target's source, its two bodies diffed token by token, a hunk that replaced exactly that
/// parameter's name giving the expression (the target's parameters as $i). The expression at
/// least two implementations wrote, and more than any other (proto.recvmsg's `noblock` ->
/// `flags & MSG_DONTWAIT`, 5.19); empty when none.
std::string replaced_by_implementations(const TargetIndex::CallbackUsage& old_usage, const TargetIndex::CallbackUsage& usage,
                                        std::size_t pos) {
  std::map<std::string, int> votes;
  for (const auto& [key, onames] : old_usage.by_function) {
    auto it = usage.by_function.find(key);
    auto ob = old_usage.bodies.find(key), nb = usage.bodies.find(key);
    if (it == usage.by_function.end() || ob == old_usage.bodies.end() || nb == usage.bodies.end() || pos >= onames.size())
      continue;
    const std::string& gone = onames[pos];
    const auto& names = it->second;
    if (gone.empty() || std::find(names.begin(), names.end(), gone) != names.end()) continue;
    auto a = tokenize(ob->second), b = tokenize(nb->second);
    if (a.empty() || b.empty()) continue;
    auto plain = [](const std::vector<Token>& t, std::size_t k) {
      return t[k].kind == TokKind::ident && (k == 0 || (t[k - 1].text != "." && t[k - 1].text != "->"));
    };
    // Uses that went with more than the name (an argument dropped from a call that lost the
    // parameter too) say nothing of what replaced it.
    std::set<std::string> wrote;
    bool other = false;
    for (const auto& h : diff_tokens(a, 0, a.size() - 1, b, 0, b.size() - 1)) {
      bool uses = false;
      for (std::size_t k = h.a_first; k < h.a_first + h.a_count; ++k) uses = uses || (a[k].text == gone && plain(a, k));
      if (!uses) continue;
      std::vector<std::string> expr;
      bool param = false, expression = true;
      for (std::size_t k = h.b_first; k < h.b_first + h.b_count; ++k) {
        std::string t = b[k].text;
        if (auto p = std::find(names.begin(), names.end(), t); p != names.end() && plain(b, k)) {
          t = "$" + std::to_string(p - names.begin());
          param = true;
        }
        expression = expression && t != ";" && t != "{" && t != "}";
        expr.push_back(t);
      }
      if (h.a_count != 1 || !param || !expression) other = true;
      else wrote.insert(join_c_tokens(expr));
    }
    util::log_debug("callback-signature: {} lost {}: wrote {}{}", key, gone, fmt::join(wrote, " | "),
                    other ? "; other uses went with their call's argument" : "");
    for (const auto& w : wrote) ++votes[w];
  }
  std::string best;
  int n = 0, second = 0;
  for (const auto& [expr, c] : votes) {
    if (c > n) {
      second = n;
      n = c;
      best = expr;
    } else if (c > second) {
      second = c;
    }
  }
  util::log_debug("callback-signature: old position {}: {} implementation(s) wrote '{}' where they used it", pos, n, best);
  return n >= 2 && n > second ? best : std::string();
}

/// What a dropped parameter the body still uses is now computed from (the target's parameters
/// as $i): as the target's own implementations compute a local of its type from the parameters
/// they do get ("const struct i2c_device_id *id = i2c_client_get_device_id(client);", at least
/// two of them); else what they wrote in its place when they lost it (the old source's
/// implementations beside the target's: proto.recvmsg's `noblock` became `flags & MSG_DONTWAIT`).
/// Empty when neither says (one implementation is not a convention).
std::string derived_value(const Param& g, const std::vector<Param>& old_params, const TargetIndex::CallbackUsage& usage,
                          const TargetIndex::CallbackUsage& old_usage) {
  std::string best;
  int n = 0;
  if (auto it = usage.locals.find(drop_const(g.type)); it != usage.locals.end())
    for (const auto& [expr, c] : it->second)
      if (c > n) {
        n = c;
        best = expr;
      }
  if (n >= 2) return best;
  auto at = std::find_if(old_params.begin(), old_params.end(), [&](const Param& p) { return p.name == g.name; });
  return replaced_by_implementations(old_usage, usage, static_cast<std::size_t>(at - old_params.begin()));
}

/// Only parameters dropped: which ones? Types alone cannot tell two neighbours of one type
/// apart (proto.recvmsg (sk, msg, len, noblock, flags, addr_len) lost `noblock`, not `flags`):
/// the old parameters the target's own implementations still name, in order, stay; else the
/// positions the kernel's implementations kept (`old_to_new`, npos for a dropped one). Nullopt:
/// neither says (the type alignment decides).
std::optional<ParamReshape> plan_dropped_only(const std::vector<Param>& old_params, const std::vector<std::string>& to_types,
                                              const std::vector<std::string>& to_names,
                                              const std::vector<std::size_t>& old_to_new) {
  const std::size_t no = old_params.size(), nt = to_types.size();
  auto kept = [&](const std::function<std::size_t(std::size_t)>& to) -> std::optional<ParamReshape> {
    ParamReshape p;
    std::size_t next = 0;
    for (std::size_t i = 0; i < no; ++i) {
      std::size_t j = to(i);
      if (j == std::string::npos) {
        p.unused.push_back(old_params[i].name);
        p.dropped.push_back(old_params[i]);
        continue;
      }
      if (j != next || !compatible(old_params[i].type, to_types[j])) return std::nullopt;
      p.params.push_back(with_name(kept_type(old_params[i].type, to_types[j]), old_params[i].name));
      p.names.push_back(old_params[i].name);
      ++next;
    }
    if (next != nt) return std::nullopt;
    return p;
  };
  if (to_names.size() == nt) {
    std::size_t named = 0;
    if (auto p = kept([&](std::size_t i) {
          if (named < nt && to_names[named] == old_params[i].name) return named++;
          return std::string::npos;
        }))
      return p;
  }
  if (old_to_new.size() == no)
    if (auto p = kept([&](std::size_t i) { return old_to_new[i] < nt ? old_to_new[i] : std::string::npos; })) return p;
  return std::nullopt;
}

} // namespace

std::optional<ParamReshape> plan_param_reshape(const std::vector<Param>& old_params, const std::vector<std::string>& to_types,
                                               const std::vector<std::string>& to_names,
                                               const std::function<std::vector<Param>(const std::string&)>& members,
                                               const std::vector<std::size_t>& old_to_new) {
  ParamReshape r;
  const std::size_t no = old_params.size(), nt = to_types.size();
  // Only parameters added: where did each old parameter go? When the target's own
  // implementations give every old parameter's name to a parameter of a compatible type, in the
  // same order, there (tpm_class_ops.send (chip, buf, count) -> (chip, buf, bufsiz, count)); else
  // where the kernel's own implementations moved each old position (`old_to_new`: 6.12's
  // tpm_tis_send `(chip, buf, len)` is 7.3's `(chip, buf, bufsiz, len)`: a driver's third
  // parameter, whatever its name, is the new fourth). A new parameter may sit before an old one of its type, which
  // type alignment alone gets wrong. The other positions are the new parameters.
  auto by_names = [&](const std::function<std::string(std::size_t)>& key) -> std::optional<ParamReshape> {
    ParamReshape p;
    std::vector<std::string> names(nt), types = to_types;
    std::size_t next = 0;
    for (std::size_t i = 0; i < no; ++i) {
      std::size_t hit = nt;
      std::string k = key(i);
      for (std::size_t j = next; !k.empty() && j < nt && hit == nt; ++j)
        if (to_names[j] == k && compatible(old_params[i].type, to_types[j])) hit = j;
      if (hit == nt) return std::nullopt;
      names[hit] = old_params[i].name;
      types[hit] = kept_type(old_params[i].type, to_types[hit]);
      next = hit + 1;
    }
    std::set<std::string> taken;
    for (const auto& op : old_params) taken.insert(op.name);
    for (std::size_t j = 0; j < nt; ++j) {
      if (!names[j].empty()) continue;
      std::string name = !to_names[j].empty() ? to_names[j] : pointed_struct(to_types[j]);
      if (name.empty() || !taken.insert(name).second) return std::nullopt;
      names[j] = name;
      p.added.push_back(name);
    }
    for (std::size_t i = 0; i < nt; ++i) p.params.push_back(with_name(types[i], names[i]));
    p.names = names;
    return p;
  };
  if (nt > no && to_names.size() == nt) {
    if (auto p = by_names([&](std::size_t i) { return old_params[i].name; })) return p;
    if (old_to_new.size() == no)
      if (auto p = by_names([&](std::size_t i) { return old_to_new[i] < nt ? to_names[old_to_new[i]] : std::string(); }))
        return p;
  }
  if (nt < no)
    if (auto p = plan_dropped_only(old_params, to_types, to_names, old_to_new)) return p;
  std::size_t pre = 0;
  while (pre < no && pre < nt && compatible(old_params[pre].type, to_types[pre])) ++pre;
  std::size_t suf = 0;
  while (suf < no - pre && suf < nt - pre && compatible(old_params[no - 1 - suf].type, to_types[nt - 1 - suf])) ++suf;
  std::set<std::string> taken;
  for (const auto& p : old_params) taken.insert(p.name);
  std::vector<std::string> mid_names(nt, "");
  for (std::size_t i = 0; i < pre; ++i) mid_names[i] = old_params[i].name;
  for (std::size_t i = 0; i < suf; ++i) mid_names[nt - 1 - i] = old_params[no - 1 - i].name;
  // The old parameters between the kept prefix and suffix are folded into a struct the target
  // passes instead (its members carry their names), or dropped when nothing replaces them.
  std::vector<Param> gone(old_params.begin() + static_cast<long>(pre), old_params.end() - static_cast<long>(suf));
  std::size_t holder = nt; // index of the target parameter the gone ones moved into
  if (!gone.empty() && nt > pre + suf) {
    for (std::size_t i = pre; i < nt - suf && holder == nt; ++i) {
      std::string tag = pointed_struct(to_types[i]);
      if (tag.empty()) continue;
      auto ms = members(tag);
      // Each folded parameter binds to the member of its name, else to the one member of its
      // type (directly, else through its address); members are claimed once.
      std::set<std::string> claimed;
      std::vector<std::string> binds;
      auto pick = [&](const Param& g) -> std::string {
        const std::string gt = drop_const(g.type);
        for (const auto& m : ms)
          if (m.name == g.name && !m.type.empty() && !claimed.count(m.name)) {
            if (gt == drop_const(m.type)) return fmt::format("{} = {{}}->{};", with_name(g.type, g.name), m.name);
            if (gt == drop_const(m.type) + "*") return fmt::format("{} = &{{}}->{};", with_name(g.type, g.name), m.name);
            return {};
          }
        for (bool address : {false, true}) {
          const Param* only = nullptr;
          int n = 0;
          for (const auto& m : ms) {
            if (m.type.empty() || claimed.count(m.name)) continue;
            if (gt == drop_const(m.type) + (address ? "*" : "")) {
              only = &m;
              ++n;
            }
          }
          if (n == 1) return fmt::format("{} = {}{{}}->{};", with_name(g.type, g.name), address ? "&" : "", only->name);
          if (n > 1) return {};
        }
        return {};
      };
      for (const auto& g : gone) {
        std::string b = pick(g);
        if (b.empty()) break;
        claimed.insert(b.substr(b.rfind("->") + 2, b.size() - b.rfind("->") - 3));
        binds.push_back(b);
      }
      if (binds.size() != gone.size()) continue;
      holder = i;
      std::string name = i < to_names.size() && !to_names[i].empty() ? to_names[i] : tag;
      if (taken.count(name)) return std::nullopt;
      taken.insert(name);
      mid_names[i] = name;
      for (auto& b : binds) r.prologue.push_back(fmt::format(fmt::runtime(b), name));
    }
  }
  if (holder == nt)
    for (const auto& g : gone) {
      r.unused.push_back(g.name); // nothing replaces them: must be unused
      r.dropped.push_back(g);
    }
  // Parameters the target adds: named like the target's own implementations, else after their type.
  for (std::size_t i = pre; i < nt - suf; ++i) {
    if (i == holder) continue;
    std::string name = i < to_names.size() ? to_names[i] : "";
    if (name.empty()) name = pointed_struct(to_types[i]);
    if (name.empty() || taken.count(name)) return std::nullopt;
    taken.insert(name);
    mid_names[i] = name;
    r.added.push_back(name);
  }
  for (std::size_t i = 0; i < nt; ++i) r.params.push_back(with_name(to_types[i], mid_names[i]));
  r.names = mid_names;
  return r;
}

namespace {

/// Line edits that change the return type `from_ret` -> `to_ret` of the declarations of `fn` in
/// one file's text `t` (named `rel`; only prototypes when `prototypes_only`: SmPL rewrites
/// definitions).
std::vector<TextEdit> retype_return_in(const std::string& rel, const std::string& t, const std::string& fn,
                                       const std::string& from_ret, const std::string& to_ret, bool prototypes_only) {
  std::vector<TextEdit> edits;
  auto old_ret = tokenize(from_ret);
  auto toks = tokenize(t);
  int depth = 0;
  for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
    // Braces of a later #else branch do not nest (both branches may open the same block).
    if (toks[i].text == "{" && !toks[i].later_branch) ++depth;
    if (toks[i].text == "}" && !toks[i].later_branch) --depth;
    if (depth != 0 || toks[i].text != fn || toks[i + 1].text != "(" || i < old_ret.size()) continue;
    bool match = true;
    for (std::size_t k = 0; k < old_ret.size(); ++k)
      if (toks[i - old_ret.size() + k].text != old_ret[k].text) match = false;
    if (!match) continue;
    if (prototypes_only) {
      // A prototype: the parameter list is followed by ';' (attributes aside), not '{'.
      int pd = 0;
      std::size_t k = i + 1;
      for (; k < toks.size(); ++k) {
        if (toks[k].text == "(") ++pd;
        if (toks[k].text == ")" && --pd == 0) break;
      }
      while (k + 1 < toks.size() && toks[k + 1].text != ";" && toks[k + 1].text != "{") ++k;
      if (k + 1 >= toks.size() || toks[k + 1].text != ";") continue;
    }
    const Token& first = toks[i - old_ret.size()];
    if (first.line != toks[i].line) continue; // type on its own line: not rewritten here
    std::size_t ls = t.rfind('\n', first.begin);
    ls = ls == std::string::npos ? 0 : ls + 1;
    std::size_t le = t.find('\n', toks[i].begin);
    if (le == std::string::npos) le = t.size();
    std::string line = t.substr(ls, first.begin - ls) + to_ret + (to_ret.back() == '*' ? "" : " ") +
                       t.substr(toks[i].begin, le - toks[i].begin) + "\n";
    edits.push_back({rel, first.line, 1, line});
  }
  return edits;
}

/// retype_return_in() over the tree's .c/.h files that mention `fn`.
std::vector<TextEdit> retype_return_edits(const PortContext& ctx, const std::string& fn, const std::string& from_ret,
                                          const std::string& to_ret, bool prototypes_only) {
  std::vector<TextEdit> edits;
  for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn))
    for (auto& te : retype_return_in(rel, t, fn, from_ret, to_ret, prototypes_only)) edits.push_back(std::move(te));
  return edits;
}

/// The callback a diagnostic's line assigns, once per callback (`done`), or empty.
/// The driver function a declaring macro on `line` wires up (`static CLASS_ATTR_RO(version);`
/// sets .show = version_show): a function named after one of the macro's arguments (the
/// argument itself, or it with a `_word` added) whose parameter types are `from`'s.
/// `at` is the identifier gcc's column points at (the argument of a macro call continued from an
/// earlier line: `static BIN_ATTR(flash_data, 0644, read_fn,\n\t\twrite_fn, 0);`): a function of
/// that very name wins; so does the one argument that names a fitting function exactly (the
/// attribute name `flash_data` is a suffix of both callbacks).
std::string macro_wired_function(const std::string& line, const PortContext& ctx, const FnType& from,
                                 const std::string& at = {}) {
  auto lt = tokenize(line);
  std::set<std::string> args;
  for (std::size_t i = 0; i + 1 < lt.size(); ++i)
    if (lt[i].kind == TokKind::ident && lt[i + 1].text == "(") {
      for (std::size_t k = i + 2; k < lt.size() && lt[k].text != ")"; ++k)
        if (lt[k].kind == TokKind::ident) args.insert(lt[k].text);
      break;
    }
  if (!at.empty()) args.insert(at);
  if (args.empty()) return {};
  auto want = split_top_level(from.params);
  std::set<std::string> fitting;
  std::string found;
  for (const auto& rel : c_files(ctx.tree)) {
    auto text = util::read_file(ctx.tree / rel);
    if (!text) continue;
    auto toks = tokenize(*text);
    for (const auto& u : find_units(toks)) {
      if (u.kind != UnitKind::function) continue;
      bool named = false;
      for (const auto& a : args)
        if (u.name == a || (u.name.size() > a.size() + 1 && u.name[a.size()] == '_' && u.name.starts_with(a)) ||
            (u.name.size() > a.size() + 1 && u.name[u.name.size() - a.size() - 1] == '_' && u.name.ends_with(a)))
          named = true;
      if (!named) continue;
      for (const auto& fd : fn_decls(toks, u.name)) {
        if (!fd.body || fd.params.size() != want.size()) continue;
        bool same = true;
        for (std::size_t p = 0; p < want.size() && same; ++p) {
          auto [a, b] = fd.params[p];
          std::string type = b > a ? text->substr(toks[a].begin, toks[b].begin - toks[a].begin) : std::string();
          same = squash(type) == squash(want[p]);
        }
        if (!same) continue;
        fitting.insert(u.name);
      }
    }
  }
  if (!at.empty() && fitting.count(at)) return at;
  std::vector<std::string> exact;
  for (const auto& f : fitting)
    if (args.count(f)) exact.push_back(f);
  if (exact.size() == 1) return exact.front();
  if (fitting.size() == 1) found = *fitting.begin();
  return found; // two fit: no guess
}

std::string callback_at(const core::Diagnostic& d, const PortContext& ctx, std::set<std::string>& done,
                        const FnType* from = nullptr) {
  auto line = diagnostic_line(ctx.tree, d);
  if (!line) return {};
  std::string fn = assigned_identifier(*line);
  if (fn.empty() && d.column > 0 && static_cast<std::size_t>(d.column) <= line->size()) {
    // Several initializers on one line (`{ .name = "x", .uevent = x_uevent };`): the value
    // gcc's column points at.
    static const std::regex k_at(R"(^&?\s*(?:[A-Za-z_]\w*\s*\(\s*)?([A-Za-z_]\w*))");
    std::smatch m;
    static const std::regex k_assigned(R"(=\s*$)");
    std::string rest = line->substr(static_cast<std::size_t>(d.column) - 1);
    std::string before = line->substr(0, static_cast<std::size_t>(d.column) - 1);
    // only an assigned value (`.uevent = x_uevent`), not a declaring macro's line
    if (std::regex_search(before, k_assigned) && std::regex_search(rest, m, k_at)) fn = m[1].str();
  }
  if (fn.empty() && from) {
    std::string at;
    // gcc counts display columns: a tab advances to the next multiple of 8.
    std::size_t byte = 0;
    for (int col = 1; byte < line->size() && col < d.column; ++byte)
      col = (*line)[byte] == '\t' ? ((col - 1) / 8 + 1) * 8 + 1 : col + 1;
    if (d.column > 0 && byte < line->size()) {
      static const std::regex k_ident_at(R"(^[A-Za-z_]\w*)");
      std::smatch m;
      std::string rest = line->substr(byte);
      if (std::regex_search(rest, m, k_ident_at)) at = m[0].str();
    }
    fn = macro_wired_function(*line, ctx, *from, at);
  }
  if (fn.empty() || !done.insert(fn).second) return {};
  return fn;
}

/// The struct member a diagnostic's line assigns (".remove = x," or "p->remove = x;"), or empty.
std::string member_at(const core::Diagnostic& d, const PortContext& ctx) {
  auto text = util::read_file(ctx.tree / d.file);
  if (!text) return {};
  auto lines = util::split_lines(*text);
  if (d.line < 1 || static_cast<std::size_t>(d.line) > lines.size()) return {};
  static const std::regex k_member(R"((?:\.|->)\s*([A-Za-z_]\w*)\s*=[^=])");
  std::string line(lines[static_cast<std::size_t>(d.line) - 1]);
  // The last designator before gcc's column (several initializers may share the line).
  std::string before = line;
  if (d.column > 0 && static_cast<std::size_t>(d.column) <= line.size()) before.resize(static_cast<std::size_t>(d.column) - 1);
  std::string found;
  for (auto it = std::sregex_iterator(before.begin(), before.end(), k_member); it != std::sregex_iterator(); ++it)
    found = (*it)[1].str();
  std::smatch m;
  if (found.empty() && std::regex_search(line, m, k_member)) found = m[1].str();
  return found;
}

/// How a patch subject names the callback gcc complained about, in the kernel's style: the
/// struct and member of the ops table it sits in ("platform_driver.remove"), else ".member",
/// else "callback".
std::string callback_label(const core::Diagnostic& d, const PortContext& ctx) {
  std::string member = member_at(d, ctx);
  if (member.empty()) return "callback";
  if (auto text = util::read_file(ctx.tree / d.file)) {
    auto toks = tokenize(*text);
    for (const auto& u : find_units(toks)) {
      if (u.kind != UnitKind::initializer || u.first >= toks.size() || u.last >= toks.size()) continue;
      if (toks[u.first].line > d.line || toks[u.last].line < d.line) continue;
      std::string type = u.type;
      for (const char* q : {"static ", "const ", "struct "})
        for (auto at = type.find(q); at != std::string::npos; at = type.find(q)) type.erase(at, std::strlen(q));
      type = std::string(util::trim(type));
      if (!type.empty() && type.find(' ') == std::string::npos) return "callback " + type + "." + member;
    }
  }
  return "callback ." + member;
}

/// Replaces the parameter list of one declaration with `params`, wrapping after commas (aligned
/// with the opening parenthesis) where the line would pass 100 columns.
TextEdit param_list_edit(const std::string& file, const std::string& text, const std::vector<Token>& toks, const FnDecl& fd,
                         const std::vector<std::string>& params) {
  std::size_t ls = text.rfind('\n', toks[fd.name].begin);
  ls = ls == std::string::npos ? 0 : ls + 1;
  std::size_t le = text.find('\n', toks[fd.close].end);
  if (le == std::string::npos) le = text.size();
  std::string head = text.substr(ls, toks[fd.open].end - ls);
  auto columns = [](const std::string& s) {
    std::size_t c = 0;
    for (char ch : s) c = ch == '\t' ? (c / 8 + 1) * 8 : c + 1;
    return c;
  };
  std::string indent;
  for (std::size_t c = columns(head), tabs = c / 8; indent.size() < tabs;) indent += '\t';
  indent += std::string(columns(head) % 8, ' ');
  std::string out = head, line = head;
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::string piece = params[i] + (i + 1 < params.size() ? "," : "");
    if (i > 0 && columns(line) + 1 + piece.size() > 100) {
      out += "\n" + indent;
      line = indent;
    } else if (i > 0) {
      out += " ";
      line += " ";
    }
    out += piece;
    line += piece;
  }
  out += text.substr(toks[fd.close].begin, le - toks[fd.close].begin) + "\n";
  return {file, toks[fd.name].line, toks[fd.close].line - toks[fd.name].line + 1, out};
}

/// The line deleting the last top-level statement of `fn`'s definition when it is a return,
/// as void_return_smpl() leaves it (`<indent>return;`, which the edit expects and relocates to).
/// Nullopt when the body does not end in a top-level return.
std::optional<TextEdit> trailing_return_edit(const PortContext& ctx, const std::string& fn) {
  for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn)) {
    auto toks = tokenize(t);
    for (const auto& fd : fn_decls(toks, fn)) {
      if (!fd.body) continue;
      std::size_t close = matching_close(toks, fd.body);
      if (close == std::string::npos || close < fd.body + 2 || toks[close - 1].text != ";") return std::nullopt;
      std::size_t k = close - 1;
      while (k > fd.body + 1 && toks[k - 1].text != ";" && toks[k - 1].text != "{" && toks[k - 1].text != "}") --k;
      if (toks[k].text != "return") return std::nullopt;
      // The statement owns its first line (nothing before it there).
      std::size_t ls = t.rfind('\n', toks[k].begin);
      ls = ls == std::string::npos ? 0 : ls + 1;
      if (t.find_first_not_of(" \t", ls) != toks[k].begin) return std::nullopt;
      TextEdit te{rel, toks[k].line, 1, ""};
      te.expect = t.substr(ls, toks[k].begin - ls) + "return;\n";
      return te;
    }
  }
  return std::nullopt;
}

/// A function that returned void now returns a value: `return;` becomes `return 0;` and a body
/// that ends without a return gets one, on top of `e`'s retyping edits of the same files
/// (merged into one edit per file). False when the definition is not found or its closing
/// brace shares a line.
bool returns_zero(const PortContext& ctx, const std::string& fn, Edit& e) {
  bool found = false;
  std::vector<TextEdit> merged;
  for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn)) {
    std::vector<TextEdit> mine;
    for (const auto& te : e.text_edits)
      if (te.file == rel) mine.push_back(te);
    std::string t1 = apply_line_edits(t, mine);
    auto toks = tokenize(t1);
    std::string t2 = t1;
    for (const auto& fd : fn_decls(toks, fn)) {
      if (!fd.body) continue;
      std::size_t close = matching_close(toks, fd.body);
      if (close == std::string::npos) return false;
      std::size_t ls = t1.rfind('\n', toks[close].begin);
      ls = ls == std::string::npos ? 0 : ls + 1;
      if (t1.find_first_not_of(" \t", ls) != toks[close].begin) return false;
      std::vector<std::pair<std::size_t, std::string>> inserts;
      for (std::size_t k = fd.body + 1; k + 1 < close; ++k)
        if (toks[k].text == "return" && toks[k + 1].text == ";") inserts.emplace_back(toks[k].end, " 0");
      // The last statement: `return ...;` ends the body already.
      std::size_t last = close - 1;
      bool ends_in_return = false;
      if (last > fd.body && toks[last].text == ";") {
        std::size_t k = last;
        while (k > fd.body && toks[k - 1].text != ";" && toks[k - 1].text != "{" && toks[k - 1].text != "}") --k;
        ends_in_return = toks[k].text == "return";
      }
      if (!ends_in_return) inserts.emplace_back(ls, "\treturn 0;\n");
      for (auto it = inserts.rbegin(); it != inserts.rend(); ++it) t2.insert(it->first, it->second);
      found = true;
      break;
    }
    if (auto te = changed_lines_edit(rel, t, t2)) merged.push_back(std::move(*te));
  }
  if (!found) return false;
  e.text_edits = std::move(merged);
  return true;
}

Edit callback_edit(const std::string& fn) {
  Edit e;
  e.proposer = "callback-signature";
  e.change_id = "callback:" + fn;
  e.label = "callback-type-changed";
  return e;
}

class CallbackSignature final : public Proposer {
public:
  std::string_view id() const override { return "callback-signature"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    std::set<std::string> done;
    // An initializer of a member the struct no longer has: gcc's recovery matches it against
    // some other member, so the type it names says nothing about the callback.
    std::set<std::pair<std::string, int>> unknown_member_lines;
    for (const auto& d : diags)
      if (d.kind == core::DiagKind::no_member) unknown_member_lines.insert({d.file, d.line});
    for (const auto& d : diags)
      if (d.kind == core::DiagKind::conflicting_types) own_definition(d, ctx, done, out);
    // A driver function passed as an argument whose parameter type changed: as if assigned.
    std::vector<core::Diagnostic> passed;
    passed.reserve(diags.size());
    m_passed.clear();
    for (const auto& d : diags)
      if (auto p = passed_callback(d, ctx)) {
        passed.push_back(std::move(p->first));
        m_passed[passed.size() - 1] = std::move(p->second);
      }
    std::vector<const core::Diagnostic*> all;
    for (const auto& d : diags) all.push_back(&d);
    for (const auto& d : passed) all.push_back(&d);
    for (std::size_t i = 0; i < passed.size(); ++i) m_passed_at[&passed[i]] = i;
    for (const auto* dp : all) {
      const auto& d = *dp;
      if (d.kind != core::DiagKind::incompatible_pointer_type || d.symbols.size() < 2) continue;
      if (unknown_member_lines.count({d.file, d.line})) continue;
      FnType to, from;
      if (!parse_fn_type(d.symbols[0], to) || !parse_fn_type(d.symbols[1], from)) continue;
      if (to.params != from.params && squash(to.ret) == squash(from.ret)) {
        params_changed(d, to, from, ctx, done, out);
        continue;
      }
      if (to.params != from.params && to.ret != "void" && from.ret != "void" && squash(to.ret) != squash(from.ret)) {
        if (split_top_level(to.params).size() == split_top_level(from.params).size()) both_changed(d, to, from, ctx, done, out);
        else reshaped_and_retyped(d, to, from, ctx, done, out);
        continue;
      }
      if (to.params == from.params && to.ret != "void" && squash(to.ret) != squash(from.ret)) {
        ret_changed(d, to, from, ctx, done, out);
        continue;
      }
      if (to.params != from.params || to.ret != "void" || from.ret == "void") continue;
      std::string fn = callback_for(d, ctx, done, &from);
      if (fn.empty()) continue;
      Edit e = callback_edit(fn);
      e.title = fmt::format("{} returns void instead of {}", callback_label(d, ctx), from.ret);
      e.description = fmt::format("The kernel now expects '{}' where {}() is '{}': {}() returns void and its return statements "
                                  "no longer carry a value.",
                                  d.symbols[0], fn, d.symbols[1], fn);
      e.smpl = void_return_smpl(fn, from.ret);
      // Prototypes (often in a header) must follow the definition, or the types conflict.
      e.text_edits = retype_return_edits(ctx, fn, from.ret, "void", true);
      if (auto te = trailing_return_edit(ctx, fn)) e.text_edits.push_back(std::move(*te));
      e.symbols = {fn, d.symbols[0]};
      e.support = 1;
      out.push_back(std::move(e));
    }
    merge_passed(passed, out);
    return out;
  }

private:
  /// Several driver functions passed in the same place (`dm_io_async_bvec(..., a_callback, ...)`
  /// here, `b_callback` there: one message, one error): each function's edit alone leaves the
  /// error standing, so they become one edit.
  void merge_passed(const std::vector<core::Diagnostic>& passed, std::vector<Edit>& out) const {
    std::map<std::string, std::set<std::string>> fns_by_message;
    for (const auto& d : passed)
      if (const auto* p = passed_for(d)) fns_by_message[d.file + "|" + d.message].insert(p->fn);
    for (const auto& [message, fns] : fns_by_message) {
      if (fns.size() < 2) continue;
      std::vector<std::size_t> parts;
      for (std::size_t i = 0; i < out.size(); ++i)
        if (out[i].rank == 0 && out[i].change_id.starts_with("callback:") && fns.count(out[i].change_id.substr(9)))
          parts.push_back(i);
      if (parts.size() != fns.size()) continue;
      Edit m = out[parts.front()];
      m.change_id = fmt::format("callback:{}", fmt::join(fns, "+"));
      m.title = fmt::format("{} ({})", m.title, fmt::join(fns, ", "));
      for (std::size_t k = 1; k < parts.size(); ++k) {
        const Edit& e = out[parts[k]];
        m.text_edits.insert(m.text_edits.end(), e.text_edits.begin(), e.text_edits.end());
        m.description += " " + e.description;
        for (const auto& sym : e.symbols)
          if (std::find(m.symbols.begin(), m.symbols.end(), sym) == m.symbols.end()) m.symbols.push_back(sym);
        if (!e.smpl.empty()) return; // SmPL rules are not merged here
      }
      if (!m.smpl.empty()) return;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) out.erase(out.begin() + static_cast<long>(*it));
      out.push_back(std::move(m));
    }
  }

  /// A driver function passed where the target wants another function type.
  struct Passed {
    std::string fn;                 ///< the driver function passed
    std::vector<std::string> names; ///< parameter names of the target's typedef, when it has one
  };
  std::map<std::size_t, Passed> m_passed; ///< by index into propose()'s `passed`
  std::map<const core::Diagnostic*, std::size_t> m_passed_at;

  const Passed* passed_for(const core::Diagnostic& d) const {
    auto it = m_passed_at.find(&d);
    if (it == m_passed_at.end()) return nullptr;
    auto p = m_passed.find(it->second);
    return p == m_passed.end() ? nullptr : &p->second;
  }

  /// The callback of an assignment's line, or the function a converted argument diagnostic passes.
  std::string callback_for(const core::Diagnostic& d, const PortContext& ctx, std::set<std::string>& done, const FnType* from) {
    if (const auto* p = passed_for(d)) return done.insert(p->fn).second ? p->fn : std::string();
    return callback_at(d, ctx, done, from);
  }

  /// "passing argument N of 'f' from incompatible pointer type" with gcc's note "expected 'T'
  /// {aka 'void (*)(...)'} but argument is of type 'void (*)(...)'" where argument N is a driver
  /// function: the diagnostic as an assignment would read (symbols: wanted type, its type) and
  /// the function. The typedef's parameter names come from the target's header.
  std::optional<std::pair<core::Diagnostic, Passed>> passed_callback(const core::Diagnostic& d, const PortContext& ctx) {
    static const std::regex k_msg(R"(^passing argument (\d+) of '([A-Za-z_]\w*)' from incompatible pointer type)");
    static const std::regex k_note(
        R"(^expected '([^']+)'(?: \{aka '([^']+)'\})? but argument is of type '([^']+)'(?: \{aka '([^']+)'\})?)");
    std::smatch m, n;
    if (d.kind != core::DiagKind::incompatible_pointer_type || d.file.empty() || d.file.front() == '/' ||
        !std::regex_search(d.message, m, k_msg))
      return std::nullopt;
    const std::size_t argn = std::stoul(m[1].str());
    const std::string callee = m[2].str();
    std::string want, want_name, have;
    for (const auto& note : d.notes)
      if (std::regex_search(note.message, n, k_note)) {
        want = n[2].matched ? n[2].str() : n[1].str();
        want_name = n[2].matched ? n[1].str() : "";
        have = n[4].matched ? n[4].str() : n[3].str();
      }
    FnType a, b;
    if (want.empty() || !parse_fn_type(want, a) || !parse_fn_type(have, b) || argn == 0) return std::nullopt;
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return std::nullopt;
    auto toks = tokenize(*text);
    if (toks.empty()) return std::nullopt;
    std::string fn;
    for (const auto& c : find_calls(toks, 0, toks.size() - 1)) {
      if (c.callee != callee || toks[c.name_tok].line > d.line || toks[c.close_tok].line < d.line || c.arg_toks.size() < argn)
        continue;
      auto [first, last] = c.arg_toks[argn - 1];
      if (first == last && toks[first].kind == TokKind::ident) fn = toks[first].text;
      if (last == first + 1 && toks[first].text == "&" && toks[last].kind == TokKind::ident) fn = toks[last].text;
    }
    if (fn.empty()) return std::nullopt;
    core::Diagnostic out = d;
    out.symbols = {want, have};
    Passed p{fn, {}};
    if (!want_name.empty() && ctx.to && !ctx.new_src.empty()) {
      TargetIndex idx(ctx.new_src, ctx.to->build_dir);
      if (auto ps = idx.function_typedef_params(want_name))
        for (const auto& q : *ps) p.names.push_back(q.name);
    }
    util::log_debug("callback-signature: {}() passed as argument {} of {}() where '{}' is wanted", fn, argn, callee, want);
    return std::make_pair(std::move(out), std::move(p));
  }

  /// The driver defines a function the kernel declares (a subsystem's own implementation, or a
  /// hook the kernel calls), and the target's prototype changed: "conflicting types for 'f';
  /// have 'int(struct x *)'" with a note at the kernel's "previous declaration ... with type
  /// 'void(struct x *)'". The old kernel must have declared it too (else it is a clash of names,
  /// not an API change). The definition follows the prototype: its return type, or its parameter
  /// types (`struct device *` -> `const struct device *`).
  void own_definition(const core::Diagnostic& d, const PortContext& ctx, std::set<std::string>& done, std::vector<Edit>& out) {
    if (d.symbols.empty() || d.file.empty() || d.file.front() == '/') return;
    const std::string fn = d.symbols[0];
    static const std::regex k_have(R"(; have '(.*)'$)");
    static const std::regex k_prev(R"(^previous declaration of '([^']+)' with type '(.*)'$)");
    static const std::regex k_sig(R"(^(.*?)\s*\((.*)\)$)");
    std::smatch m;
    if (!std::regex_search(d.message, m, k_have)) return;
    std::string have = m[1].str(), want;
    for (const auto& n : d.notes)
      if (!n.file.empty() && n.file.front() == '/' && !n.file.starts_with(ctx.tree.string()) &&
          std::regex_match(n.message, m, k_prev) && m[1].str() == fn)
        want = m[2].str();
    std::smatch a, b;
    if (want.empty() || !std::regex_match(have, a, k_sig) || !std::regex_match(want, b, k_sig)) return;
    FnType from{std::string(util::trim(a[1].str())), std::string(util::trim(a[2].str()))};
    FnType to{std::string(util::trim(b[1].str())), std::string(util::trim(b[2].str()))};
    if (ctx.old_src.empty() || !ctx.from) return;
    TargetIndex old_idx(ctx.old_src, ctx.from->build_dir);
    if (!old_idx.prototype(fn, nullptr) || done.count(fn)) return;
    auto tp = split_top_level(to.params), fp = split_top_level(from.params);
    Edit e = callback_edit(fn);
    e.change_id = "definition:" + fn;
    e.label = "return-type-changed";
    if (squash(to.params) == squash(from.params) && squash(to.ret) != squash(from.ret)) {
      e.title = fmt::format("{}() returns {} as the kernel now declares it", fn, to.ret);
      e.description = fmt::format("The driver defines {}(), which the kernel declares; the target declares it "
                                  "'{}' where the driver has '{}'.",
                                  fn, want, have);
      if (to.ret == "void") {
        e.smpl = void_return_smpl(fn, from.ret);
        e.text_edits = retype_return_edits(ctx, fn, from.ret, "void", true);
        if (auto te = trailing_return_edit(ctx, fn)) e.text_edits.push_back(std::move(*te));
        e.description += " Its return statements no longer carry a value.";
      } else {
        e.text_edits = retype_return_edits(ctx, fn, from.ret, to.ret, false);
        if (from.ret == "void" && !returns_zero(ctx, fn, e)) return;
        if (e.text_edits.empty()) return;
      }
    } else if (squash(to.ret) == squash(from.ret) && tp.size() == fp.size()) {
      e.label = "arguments-changed";
      e.title = fmt::format("{}() takes ({}) as the kernel now declares it", fn, to.params);
      e.description = fmt::format("The driver defines {}(), which the kernel declares; the target declares it "
                                  "'{}' where the driver has '{}': the parameters are retyped to match.",
                                  fn, want, have);
      for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn))
        if (auto te = changed_lines_edit(rel, t, apply_line_edits(t, retype_params(rel, t, fn, tp, fp))))
          e.text_edits.push_back(std::move(*te));
      if (e.text_edits.empty()) return;
    } else {
      return;
    }
    done.insert(fn);
    e.symbols = {fn};
    e.support = 1;
    out.push_back(std::move(e));
  }

  /// The return type changed (e.g. gained const): retype it in every declaration of the callback.
  void ret_changed(const core::Diagnostic& d, const FnType& to, const FnType& from, const PortContext& ctx,
                   std::set<std::string>& done, std::vector<Edit>& out) {
    std::string fn = callback_for(d, ctx, done, &from);
    if (fn.empty()) return;
    Edit e = callback_edit(fn);
    e.title = fmt::format("{} returns {}", callback_label(d, ctx), to.ret);
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}': its return type becomes {}.", d.symbols[0], fn,
                                d.symbols[1], to.ret);
    e.text_edits = retype_return_edits(ctx, fn, from.ret, to.ret, false);
    if (e.text_edits.empty()) return;
    if (from.ret == "void") {
      // It returned nothing, so it never failed: every way out returns 0.
      if (!returns_zero(ctx, fn, e)) return;
      e.description += " It returned nothing, so it never failed: it now returns 0 on every path.";
    }
    e.symbols = {fn, d.symbols[0]};
    e.support = 1;
    out.push_back(std::move(e));
  }

  /// Return type and parameter types changed together (tty_operations.write: int (*)(..., int)
  /// -> ssize_t (*)(..., size_t)): both retypes on the same declarations, as one edit per file.
  void both_changed(const core::Diagnostic& d, const FnType& to, const FnType& from, const PortContext& ctx,
                    std::set<std::string>& done, std::vector<Edit>& out) {
    std::string member = member_at(d, ctx);
    std::string fn = callback_for(d, ctx, done, &from);
    if (fn.empty()) return;
    auto tp = split_top_level(to.params), fp = split_top_level(from.params);
    auto ret_edits = retype_return_edits(ctx, fn, from.ret, to.ret, false);
    auto variants = typed_variants(ctx);
    std::set<std::string> used;
    Edit e = callback_edit(fn);
    e.title = fmt::format("{} returns {} and takes ({})", callback_label(d, ctx), to.ret, to.params);
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}': its return and parameter types "
                                "are retyped to match.",
                                d.symbols[0], fn, d.symbols[1]);
    for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn)) {
      std::vector<TextEdit> mine;
      for (const auto& te : ret_edits)
        if (te.file == rel) mine.push_back(te);
      if (integer_cookie_retyped(t, fn, tp, fp)) return;
      std::string t1 = apply_line_edits(t, mine);
      std::string t2 = apply_line_edits(t1, retype_params(rel, t1, fn, tp, fp));
      t2 = typed_for_retyped(t2, fn, tp, fp, variants, used);
      if (auto te = changed_lines_edit(rel, t, t2)) e.text_edits.push_back(std::move(*te));
    }
    if (e.text_edits.empty()) return;
    cite_rules(e, used);
    e.symbols = {fn, d.symbols[0]};
    e.support = 1;
    out.push_back(std::move(e));
  }

  /// Parameters added or dropped and the return type changed together (vm_operations_struct.fault:
  /// `int (*)(struct vm_area_struct *, struct vm_fault *)` -> `vm_fault_t (*)(struct vm_fault *)`):
  /// params_reshaped()'s edit with the return type retyped on the same declarations.
  void reshaped_and_retyped(const core::Diagnostic& d, const FnType& to, const FnType& from, const PortContext& ctx,
                            std::set<std::string>& done, std::vector<Edit>& out) {
    std::vector<Edit> reshaped;
    params_reshaped(d, split_top_level(to.params), from, ctx, done, reshaped);
    if (reshaped.size() != 1) return;
    Edit e = std::move(reshaped.front());
    const std::string fn = e.symbols.empty() ? std::string() : e.symbols.front();
    std::map<std::string, std::vector<TextEdit>> by_file;
    for (auto& te : e.text_edits) by_file[te.file].push_back(std::move(te));
    e.text_edits.clear();
    for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn)) {
      auto it = by_file.find(rel);
      std::string t2 = it == by_file.end() ? t : apply_line_edits(t, it->second);
      std::string t3 = apply_line_edits(t2, retype_return_in(rel, t2, fn, from.ret, to.ret, false));
      if (auto te = changed_lines_edit(rel, t, t3)) e.text_edits.push_back(std::move(*te));
    }
    if (e.text_edits.empty()) return;
    e.title = fmt::format("{} returns {} and takes ({})", callback_label(d, ctx), to.ret, to.params);
    e.description += fmt::format(" Its return type becomes {}.", to.ret);
    out.push_back(std::move(e));
  }

  void params_changed(const core::Diagnostic& d, const FnType& to, const FnType& from, const PortContext& ctx,
                      std::set<std::string>& done, std::vector<Edit>& out) {
    auto tp = split_top_level(to.params), fp = split_top_level(from.params);
    if (tp.size() != fp.size()) return params_reshaped(d, tp, from, ctx, done, out);
    std::string member = member_at(d, ctx);
    std::string fn = callback_for(d, ctx, done, &from);
    if (fn.empty()) return;
    Edit e = callback_edit(fn);
    e.title = fmt::format("{} takes ({})", callback_label(d, ctx), to.params);
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}': its parameters are retyped to match.",
                                d.symbols[0], fn, d.symbols[1]);
    auto variants = typed_variants(ctx);
    std::set<std::string> used;
    for (const auto& [rel, t] : sources_mentioning(ctx.tree, fn)) {
      if (integer_cookie_retyped(t, fn, tp, fp)) return;
      std::string t2 = typed_for_retyped(apply_line_edits(t, retype_params(rel, t, fn, tp, fp)), fn, tp, fp, variants, used);
      if (auto te = changed_lines_edit(rel, t, t2)) e.text_edits.push_back(std::move(*te));
    }
    if (e.text_edits.empty()) return;
    cite_rules(e, used);
    e.symbols = {fn, d.symbols[0]};
    e.support = 1;
    out.push_back(std::move(e));
    struct_swapped(d, tp, fp, fn, ctx, out);
  }

  /// A parameter went from `struct A *` to `struct B *`: the alternative that moves the whole
  /// driver to struct B (its helpers, locals and members carry the same values), converting
  /// the members whose representation changed as the target's own code does.
  void struct_swapped(const core::Diagnostic& d, const std::vector<std::string>& tp, const std::vector<std::string>& fp,
                      const std::string& fn, const PortContext& ctx, std::vector<Edit>& out) {
    std::string a, b;
    for (std::size_t i = 0; i < tp.size(); ++i) {
      if (squash(tp[i]) == squash(fp[i])) continue;
      std::string na = pointed_struct(without_const(fp[i])), nb = pointed_struct(without_const(tp[i]));
      if (na.empty() || nb.empty() || na == nb || (!a.empty() && (a != na || b != nb))) return;
      a = na;
      b = nb;
    }
    if (a.empty()) return;
    std::map<std::string, MemberBridge> bridges;
    if (!ctx.new_src.empty() && ctx.to) {
      TargetIndex idx(ctx.new_src, ctx.to->build_dir);
      bridges = target_member_bridges(ctx.new_src, a, b, [&](const std::string& conv) -> std::string {
        auto p = idx.prototype(conv, nullptr);
        if (!p || p->params.empty()) return {};
        std::string t(util::trim(p->params[0].type));
        if (t.empty() || t.back() != '*') return {};
        t.pop_back();
        return std::string(util::trim(t));
      });
    }
    const auto sources = sources_mentioning(ctx.tree, a);
    std::set<std::string> names;
    for (const auto& [rel, t] : sources)
      for (const auto& n : names_of_struct_type(t, {a, b})) names.insert(n);
    Edit e = callback_edit(fn);
    e.rank = 1;
    e.title = fmt::format("{} takes struct {}: the driver's struct {} becomes struct {}", callback_label(d, ctx), b, a, b);
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}'; the driver's other uses of "
                                "struct {} (helpers, locals, members) carry the same values and move to struct {}.",
                                d.symbols[0], fn, d.symbols[1], a, b);
    std::set<std::string> convs;
    for (const auto& [m, br] : bridges) {
      convs.insert(br.into);
      convs.insert(br.out_of);
    }
    if (!bridges.empty())
      e.description += fmt::format(" Members converted as the target's own code converts between the two ({}): {}.",
                                   fmt::join(convs, ", "), fmt::join(std::views::keys(bridges), ", "));
    // The driver functions it rewrites hold struct A values: their API changed with it.
    std::set<std::string> touched;
    for (const auto& [rel, t] : sources) {
      std::string t2 = swap_struct(t, a, b, bridges, names);
      for (const auto& f : changed_functions(t, t2))
        if (!f.empty()) touched.insert(f);
      if (auto te = changed_lines_edit(rel, t, t2)) e.text_edits.push_back(std::move(*te));
    }
    if (e.text_edits.empty()) return;
    e.symbols = {fn, d.symbols[0], a, b};
    for (const auto& f : touched) e.symbols.push_back(f);
    for (const auto& c : convs) e.symbols.push_back(c);
    for (const auto& [m, br] : bridges) e.symbols.push_back("legacy_" + m);
    e.support = 1;
    out.push_back(std::move(e));
  }

  /// Where the kernel's own implementations moved each old parameter: the same function in the
  /// old source and in the target's, positions matched by the names each gives them (where the
  /// old source is at hand; a move at least two implementations agree on).
  static std::vector<std::size_t> followed_positions(const TargetIndex::CallbackUsage& old_usage,
                                                     const TargetIndex::CallbackUsage& usage) {
    std::vector<std::size_t> old_to_new;
    std::map<std::vector<std::size_t>, int> votes;
    for (const auto& [where, onames] : old_usage.by_function) {
      auto it = usage.by_function.find(where);
      if (it == usage.by_function.end()) continue;
      // Parameters only added (each old name found, in order), or only dropped (a name not
      // found is npos; as many as the new list is shorter).
      const bool dropping = it->second.size() < onames.size();
      std::vector<std::size_t> moved;
      std::size_t next = 0, gone = 0;
      for (const auto& n : onames) {
        std::size_t j = next;
        while (j < it->second.size() && it->second[j] != n) ++j;
        if (j >= it->second.size() && !dropping) break;
        if (j >= it->second.size()) {
          moved.push_back(std::string::npos);
          ++gone;
          continue;
        }
        moved.push_back(j);
        next = j + 1;
      }
      if (moved.size() == onames.size() && onames.size() - gone == it->second.size()) ++votes[moved];
    }
    int best = 1;
    for (const auto& [moved, n] : votes)
      if (n > best) best = n, old_to_new = moved;
    return old_to_new;
  }

  /// The callback type gained, lost or folded parameters: plan the new list from the driver's
  /// definition, the target's member struct types and its own implementations' parameter names.
  void params_reshaped(const core::Diagnostic& d, const std::vector<std::string>& tp, const FnType& from, const PortContext& ctx,
                       std::set<std::string>& done, std::vector<Edit>& out) {
    std::string member = member_at(d, ctx);
    std::string fn = callback_for(d, ctx, done, &from);
    if (fn.empty()) return;
    util::log_debug("callback-signature: .{} = {}(): {} parameter(s) now", member, fn, tp.size());
    const auto sources = sources_mentioning(ctx.tree, fn);
    // The definition's parameters (names are needed: they are what the body uses).
    std::vector<Param> old_params;
    std::string body_text;
    const long version = ctx.to ? linux_version_code(ctx.to->build_dir) : 0;
    for (const auto& [rel, t] : sources) {
      auto toks = tokenize(t);
      for (const auto& fd : fn_decls(toks, fn)) {
        if (!fd.body) continue;
        for (auto [a, b] : fd.params) {
          if (toks[b].kind != TokKind::ident || a == b) return; // unnamed or "void"
          old_params.push_back({std::string(util::trim(t.substr(toks[a].begin, toks[b].begin - toks[a].begin))), toks[b].text});
        }
        // What the target compiles of the body: a use of a dropped parameter inside an
        // old-kernel branch (`#if LINUX_VERSION_CODE < ...`) is no use on the target.
        auto close = matching_close(toks, fd.body);
        std::vector<bool> dead = version ? version_dead_lines(t, version) : std::vector<bool>{};
        for (std::size_t k = fd.body; k < toks.size() && k <= close; ++k) {
          auto line = static_cast<std::size_t>(toks[k].line);
          if (line >= 1 && line <= dead.size() && dead[line - 1]) continue;
          body_text += toks[k].text + " ";
        }
        break;
      }
      if (!body_text.empty()) break;
    }
    if (body_text.empty()) {
      util::log_debug("callback-signature: no definition of {}() with named parameters", fn);
      return;
    }
    std::optional<TargetIndex> idx;
    TargetIndex::CallbackUsage usage;
    if (!ctx.new_src.empty() && ctx.to) {
      idx.emplace(ctx.new_src, ctx.to->build_dir);
      usage = idx->callback_usage(member, tp);
    }
    auto members = [&](const std::string& tag) { return idx ? idx->struct_member_types(tag) : std::vector<Param>{}; };
    std::vector<std::size_t> old_to_new;
    TargetIndex::CallbackUsage old_usage; // the old source's implementations of the callback
    if (!ctx.old_src.empty() && !member.empty() && tp.size() != old_params.size()) {
      TargetIndex old_idx(ctx.old_src, ctx.from ? ctx.from->build_dir : fs::path());
      old_usage = old_idx.callback_usage(member, split_top_level(from.params));
      old_to_new = followed_positions(old_usage, usage);
    }
    // A function passed as an argument has no member to look up: its typedef names the parameters.
    if (const auto* p = passed_for(d);
        p && p->names.size() == tp.size() &&
        std::all_of(usage.param_names.begin(), usage.param_names.end(), [](const std::string& x) { return x.empty(); }))
      usage.param_names = p->names;
    util::log_debug("callback-signature: the target's implementations name them ({}); {} old position(s) followed",
                    fmt::join(usage.param_names, ", "), old_to_new.size());
    auto plan = plan_param_reshape(old_params, tp, usage.param_names, members, old_to_new);
    if (!plan) {
      util::log_debug("callback-signature: no parameter plan for {}() (a name clash or an unnamed new parameter)", fn);
      return;
    }
    auto body = tokenize(body_text);
    const bool folded = !plan->prologue.empty();
    std::vector<std::string> derived;
    for (const auto& g : plan->dropped) {
      bool used = std::any_of(body.begin(), body.end(), [&](const Token& t) { return t.text == g.name; });
      if (!used) continue;
      std::string best = derived_value(g, old_params, usage, old_usage);
      if (best.empty()) return;
      for (std::size_t i = plan->names.size(); i-- > 0;) {
        std::string ph = "$" + std::to_string(i);
        for (auto pos = best.find(ph); pos != std::string::npos; pos = best.find(ph))
          best.replace(pos, ph.size(), plan->names[i]);
      }
      if (best.find('$') != std::string::npos) return;
      plan->prologue.push_back(fmt::format("{} = {};", with_name(g.type, g.name), best));
      derived.push_back(g.name);
    }
    std::erase_if(plan->unused,
                  [&](const std::string& u) { return std::find(derived.begin(), derived.end(), u) != derived.end(); });
    Edit e = callback_edit(fn);
    e.title = fmt::format("{} takes ({})", callback_label(d, ctx), fmt::join(tp, ", "));
    e.description = fmt::format("The kernel now expects '{}' where {}() is '{}'.", d.symbols[0], fn, d.symbols[1]);
    if (folded)
      e.description += fmt::format(" The parameters it no longer passes are members of the structure it passes "
                                   "instead; the body reads them from there ({}).",
                                   fmt::join(plan->prologue, " "));
    if (!plan->unused.empty()) e.description += fmt::format(" Dropped, unused: {}.", fmt::join(plan->unused, ", "));
    if (!plan->added.empty()) e.description += fmt::format(" Added: {}.", fmt::join(plan->added, ", "));
    if (!derived.empty())
      e.description += fmt::format(" {} computed from the remaining parameters as the kernel's own "
                                   "implementations of .{} do.",
                                   fmt::join(derived, ", "), member);
    // The driver's own direct calls of the callback pass the added parameters too: 0 or NULL,
    // which the body never reads (it was written without them).
    const auto positions = old_positions(*plan, old_params);
    bool calls_fixed = false;
    for (const auto& [rel, t] : sources) {
      auto toks = tokenize(t);
      std::vector<TextEdit> mine;
      for (const auto& fd : fn_decls(toks, fn)) {
        mine.push_back(param_list_edit(rel, t, toks, fd, plan->params));
        if (!fd.body || plan->prologue.empty()) continue;
        // Bindings open the body: '{' must end its line (kernel style for functions).
        std::size_t nl = t.find('\n', toks[fd.body].end);
        if (fd.body + 1 >= toks.size() || (nl != std::string::npos && toks[fd.body + 1].begin < nl)) return;
        std::string lines;
        for (const auto& p : plan->prologue) lines += "\t" + p + "\n";
        mine.push_back({rel, toks[fd.body].line + 1, 0, lines});
      }
      // Separate edits, each relocatable on its own (an edit spanning from a prototype to the
      // last call would stop applying once any other accepted edit touched the lines between).
      if (positions && plan->dropped.empty() && plan->prologue.empty())
        if (auto t3 = pass_added_arguments(t, fn, *positions, tp); t3 && *t3 != t) {
          // Arguments are added inside lines: the line count stays, each run of changed lines is an edit.
          auto a = util::split_lines(t), b = util::split_lines(*t3);
          for (std::size_t i = 0; i < a.size() && a.size() == b.size();) {
            if (a[i] == b[i]) {
              ++i;
              continue;
            }
            TextEdit te{rel, static_cast<int>(i) + 1, 0, ""};
            for (; i < a.size() && a[i] != b[i]; ++i, ++te.remove) te.text += std::string(b[i]) + "\n";
            mine.push_back(std::move(te));
          }
          calls_fixed = true;
        }
      for (auto& te : mine) e.text_edits.push_back(std::move(te));
    }
    if (e.text_edits.empty()) return;
    if (calls_fixed)
      e.description += " The driver's direct calls pass 0 or NULL for the added parameters, which the body "
                       "does not read.";
    e.symbols = {fn, d.symbols[0]};
    e.support = 1;
    out.push_back(std::move(e));
  }
};

} // namespace

std::optional<std::string> pass_added_arguments(const std::string& text, const std::string& fn,
                                                const std::vector<std::size_t>& old_at,
                                                const std::vector<std::string>& to_types) {
  std::vector<std::string> neutral(to_types.size());
  for (std::size_t j = 0; j < to_types.size(); ++j) {
    if (std::find(old_at.begin(), old_at.end(), j) != old_at.end()) continue;
    auto tt = tokenize(to_types[j]);
    if (tt.empty()) return std::nullopt;
    bool pointer = tt.back().text == "*";
    // 0 converts to every arithmetic and enum type; a struct or union by value has no neutral
    // value (a typedef of one fails to build and the trial says so).
    bool aggregate = std::any_of(tt.begin(), tt.end(), [](const Token& t) { return t.text == "struct" || t.text == "union"; });
    if (!pointer && aggregate) return std::nullopt;
    neutral[j] = pointer ? "NULL" : "0";
  }
  auto toks = tokenize(text);
  std::set<std::size_t> decl_names;
  for (const auto& fd : fn_decls(toks, fn)) decl_names.insert(fd.name);
  struct Splice {
    std::size_t at;
    std::string text;
  };
  std::vector<Splice> splices;
  for (const auto& c : find_calls(toks, 0, toks.size() ? toks.size() - 1 : 0)) {
    if (c.callee != fn || decl_names.count(c.name_tok)) continue;
    if (c.arg_toks.size() != old_at.size()) return std::nullopt;
    // Each added argument goes after the old argument before it, or right after '('.
    for (std::size_t j = 0, k = 0; j < to_types.size(); ++j) {
      if (k < old_at.size() && old_at[k] == j) {
        ++k;
        continue;
      }
      if (k == 0)
        splices.push_back({toks[c.name_tok + 1].end, neutral[j] + (old_at.empty() && j + 1 == to_types.size() ? "" : ", ")});
      else splices.push_back({toks[c.arg_toks[k - 1].second].end, ", " + neutral[j]});
    }
  }
  std::stable_sort(splices.begin(), splices.end(), [](const Splice& a, const Splice& b) { return a.at < b.at; });
  std::string out = text;
  for (auto it = splices.rbegin(); it != splices.rend(); ++it) out.insert(it->at, it->text);
  return out;
}

std::unique_ptr<Proposer> make_callback_signature() { return std::make_unique<CallbackSignature>(); }

} // namespace autodriver::propose
