// target-api strategies "member" and "read-only-member": a vanished struct member replaced by
// the target's accessors, the member it moved into, or its most similar member.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/target_api/strategies.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose::target_api {

using namespace csrc; // the C reader shared with gate/
namespace fs = std::filesystem;
using core::DiagKind;

namespace {

/// The accessors the target declares for member `m` of `struct tag` (tag empty: any struct),
/// found by name and first parameter (`struct tag *`): inode.i_mtime -> inode_get_mtime(),
/// inode_set_mtime_to_ts(); vm_area_struct.vm_flags -> vm_flags_set() / vm_flags_clear() /
/// vm_flags_reset(). Among several, the one with the fewest extra name words, then the most
/// used by the target's own drivers.
struct Accessors {
  std::string tag;
  std::string get, set;          ///< `x = p->m` and `p->m = v`
  std::string bits_on, bits_off; ///< `p->m |= v`, `p->m &= ~v` (a bit mask: set and clear both exist)
  std::string where;             ///< header of the first found
};

Accessors find_accessors(TargetIndex& idx, std::string tag, const std::string& m) {
  Accessors a;
  auto mw = name_words(m);
  if (mw.empty()) return a;
  std::vector<std::vector<std::string>> stems = {mw};
  if (mw.size() >= 2 && mw[0].size() <= 3) stems.push_back({mw.begin() + 1, mw.end()});
  auto contains = [](const std::vector<std::string>& w, const std::vector<std::string>& st) {
    if (st.empty() || w.size() < st.size()) return false;
    for (std::size_t i = 0; i + st.size() <= w.size(); ++i)
      if (std::equal(st.begin(), st.end(), w.begin() + static_cast<std::ptrdiff_t>(i))) return true;
    return false;
  };
  auto squash = [](std::string t) {
    t = std::regex_replace(t, std::regex(R"(\bconst\b)"), "");
    t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
    return t;
  };
  static const std::set<std::string> k_verbs = {"get", "set", "clear", "reset", "init", "mod", "update", "to", "ts"};
  struct Cand {
    std::string name;
    std::size_t params;
    bool void_ret;
    std::set<std::string> verbs;
    int extra;
    int uses;
  };
  std::vector<Cand> cands;
  // Named after the member (vm_flags_set), or after the struct and the member's stem
  // (inode_get_mtime); with the struct unknown only the first.
  auto tag_words = name_words(tag);
  for (const auto& n : idx.names()) {
    if (n.find(mw.back()) == std::string::npos) continue; // every stem ends with the member's last word
    auto w = name_words(n);
    const std::vector<std::string>* stem = nullptr;
    if (contains(w, stems[0])) stem = &stems[0];
    else if (stems.size() > 1 && !tag.empty() && contains(w, stems[1]) && contains(w, tag_words)) stem = &stems[1];
    if (!stem) continue;
    auto p = idx.prototype(n, nullptr);
    if (!p || p->is_macro || p->variadic || p->params.empty() || p->params.size() > 2) continue;
    std::smatch sm;
    std::string t0 = squash(p->params[0].type);
    static const std::regex k_struct(R"(^struct(\w+)\*$)");
    if (!std::regex_match(t0, sm, k_struct)) continue;
    if (!tag.empty() && sm[1].str() != tag) continue;
    if (tag.empty()) {
      auto ms = idx.struct_members(sm[1].str());
      if (std::find(ms.begin(), ms.end(), m) == ms.end()) continue;
    }
    Cand c{n, p->params.size(), squash(p->ret) == "void", {}, 0, 0};
    auto tw = name_words(sm[1].str());
    for (const auto& x : w) {
      if (k_verbs.count(x)) c.verbs.insert(x);
      else if (std::find(stem->begin(), stem->end(), x) == stem->end() && std::find(tw.begin(), tw.end(), x) == tw.end() &&
               x != "vma")
        ++c.extra;
    }
    c.uses = idx.usage_count(n);
    if (a.tag.empty()) a.tag = sm[1].str(), a.where = p->header;
    if (sm[1].str() != a.tag) continue;
    cands.push_back(std::move(c));
  }
  auto pick = [&](auto ok) {
    const Cand* best = nullptr;
    for (const auto& c : cands)
      if (ok(c) && (!best || c.extra < best->extra || (c.extra == best->extra && c.uses > best->uses))) best = &c;
    return best ? best->name : std::string();
  };
  auto only = [](const Cand& c, std::initializer_list<const char*> verbs) {
    for (const auto& v : c.verbs)
      if (std::none_of(verbs.begin(), verbs.end(), [&](const char* x) { return v == x; })) return false;
    return true;
  };
  a.get = pick([&](const Cand& c) { return c.params == 1 && !c.void_ret && only(c, {"get"}); });
  std::string set = pick([&](const Cand& c) { return c.params == 2 && c.verbs.count("set") && only(c, {"set", "to", "ts"}); });
  std::string clear = pick([&](const Cand& c) { return c.params == 2 && c.verbs.count("clear") && only(c, {"clear"}); });
  if (!set.empty() && !clear.empty()) {
    // A bit mask: "set" turns bits on; plain assignment is a reset.
    a.bits_on = set;
    a.bits_off = clear;
    a.set = pick([&](const Cand& c) { return c.params == 2 && c.verbs.count("reset") && only(c, {"reset"}); });
  } else {
    a.set = set;
  }
  return a;
}

/// SmPL replacing accesses to `p->m` / `s.m` by the accessors; `reads` also rewrites reads.
std::string accessor_smpl(const Accessors& a, const std::string& m, bool reads) {
  std::string out;
  auto rule = [&](const std::string& minus, const std::string& plus, bool expr) {
    for (int form = 0; form < 2; ++form) {
      std::string var = form == 0 ? "p" : "s", ref = form == 0 ? "p" : "&s";
      std::string decl = fmt::format("struct {} {}{};\n", a.tag, form == 0 ? "*" : "", var);
      std::string acc = form == 0 ? "p->" + m : "s." + m;
      out += "@@\n" + decl + (expr ? "expression E;\n" : "") + "@@\n";
      out += "- " + fmt::format(fmt::runtime(minus), acc) + "\n+ " + fmt::format(fmt::runtime(plus), ref) + "\n\n";
    }
  };
  if (!a.set.empty()) rule("{} = E", a.set + "({}, E)", true);
  if (!a.bits_on.empty()) rule("{} |= E", a.bits_on + "({}, E)", true);
  if (!a.bits_off.empty()) rule("{} &= ~E", a.bits_off + "({}, E)", true);
  if (reads && !a.get.empty()) rule("{}", a.get + "({})", false);
  return out;
}

/// A member moved into a struct the struct now points to or embeds (net_device.wol_enabled ->
/// net_device.ethtool->wol_enabled, 6.11): exactly one struct-typed member of the target's
/// struct has a member of that name. Two edits (typed, then untyped) ranked from `rank` on,
/// which advances past them; none when the target says nothing that clear.
void moved_into_member(TargetIndex& idx, const std::string& type, const std::string& tag, const std::string& m, int& rank,
                       std::vector<Edit>& out) {
  static const std::regex k_struct(R"(^(?:const\s+)?struct\s+(\w+)\s*(\*?)$)");
  // Candidates: (member, its struct, pointer?); a struct declared under #ifdef/#else lists
  // its members twice.
  // The member keeps its name, or drops a prefix word the sub-struct's name now carries
  // (cpuinfo_x86.cpu_core_id -> .topo.core_id, 6.7), as long as two words remain.
  std::vector<std::string> names = {m};
  if (auto u = m.find('_'); u != std::string::npos && m.find('_', u + 1) != std::string::npos) names.push_back(m.substr(u + 1));
  std::set<std::tuple<std::string, std::string, bool, std::string>> cands;
  for (const auto& p : idx.struct_member_types(tag)) {
    std::smatch sm;
    std::string t(util::trim(p.type));
    if (!std::regex_match(t, sm, k_struct) || sm[1].str() == tag) continue;
    auto sub = idx.struct_members(sm[1].str());
    for (const auto& n : names)
      if (std::find(sub.begin(), sub.end(), n) != sub.end()) {
        cands.insert({p.name, sm[1].str(), !sm[2].str().empty(), n});
        break;
      }
  }
  // Several (net_device.ethtool and .phydev both have wol_enabled): the one the target's own
  // drivers write, if only one of them is used.
  std::string via, via_tag, sub_name;
  bool pointer = false;
  int best = -1, second = -1;
  for (const auto& [name, stag, ptr, n] : cands) {
    int uses = cands.size() == 1 ? 1 : idx.usage_count(name + (ptr ? "->" : ".") + n);
    if (uses > best) {
      second = best;
      best = uses;
      via = name, via_tag = stag, pointer = ptr, sub_name = n;
    } else if (uses > second) {
      second = uses;
    }
  }
  util::log_debug("target-api: {}.{}: {} candidate path(s), best {} uses ({})", type, m, cands.size(), via, best);
  if (cands.empty() || best <= 0 || best == second) return;
  std::string path = via + (pointer ? "->" : ".") + sub_name;
  Edit e;
  e.proposer = "target-api";
  e.change_id = "member:" + type + "." + m;
  e.label = "member-changed";
  e.title = fmt::format("{}.{} moved to .{}", type, m, path);
  e.description = fmt::format("{} has no member {} in the target kernel; its member {} (struct {}{}) has one.", type, m, via,
                              via_tag, pointer ? " *" : "");
  // Typed first. Then, as the next alternative, any `E.m` / `E->m` spatch cannot type
  // (`cpu_data(cpu).cpu_core_id`: a per-cpu macro): one edit with both would also rewrite the
  // member on every other struct that has it, and a path already taken (`sta->link.m` is
  // `E.m`), so a tree with one use of each would keep neither.
  e.smpl = fmt::format("@@\n{0} *p;\n@@\n- p->{1}\n+ p->{2}\n\n@@\n{0} s;\n@@\n- s.{1}\n+ s.{2}\n", type, m, path);
  e.symbols = {type, m, via};
  e.support = 1;
  e.rank = rank++;
  Edit untyped = e;
  out.push_back(std::move(e));
  untyped.title += " (untyped uses too)";
  untyped.smpl = fmt::format("@@\nexpression E;\n@@\n(\n- E->{0}\n+ E->{1}\n|\n- E.{0}\n+ E.{1}\n)\n", m, path);
  untyped.rank = rank++;
  out.push_back(std::move(untyped));
}

/// The member of the target's struct that replaced `m` of the old kernel's in place: `m` is the only
/// member the old struct had and the target's lacks, exactly one member is new, it sits between the
/// same neighbours, and its type is the old one or a typed pointer where the old was `void *`
/// (ipmi_smi_msg.user_data -> recv_msg). Empty when the structs say nothing that clear.
std::string member_in_place(const std::vector<Param>& old_members, const std::vector<Param>& new_members, const std::string& m) {
  auto names = [](const std::vector<Param>& v) {
    std::vector<std::string> r;
    for (const auto& p : v) r.push_back(p.name);
    return r;
  };
  const auto o = names(old_members), n = names(new_members);
  auto has = [](const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  std::vector<std::size_t> removed, added;
  for (std::size_t i = 0; i < o.size(); ++i)
    if (!has(n, o[i])) removed.push_back(i);
  for (std::size_t i = 0; i < n.size(); ++i)
    if (!has(o, n[i])) added.push_back(i);
  if (removed.size() != 1 || added.size() != 1 || o[removed[0]] != m) return {};
  const std::size_t r = removed[0], a = added[0];
  const std::string before_old = r ? o[r - 1] : "", before_new = a ? n[a - 1] : "";
  const std::string after_old = r + 1 < o.size() ? o[r + 1] : "", after_new = a + 1 < n.size() ? n[a + 1] : "";
  if (before_old != before_new || after_old != after_new) return {};
  const std::string ot = no_spaces(old_members[r].type), nt = no_spaces(new_members[a].type);
  if (ot.empty() || nt.empty()) return {}; // function pointers: callback-signature's business
  if (ot != nt && !(ot == "void*" && nt.ends_with("*") && nt != "void*")) return {};
  return n[a];
}

/// The diagnosed line when it is a statement of its own setting member `m` to a constant:
/// `desc->flags = CRYPTO_TFM_REQ_MAY_SLEEP;`, `s.m = 0;`, `p->m = A | B;` (numbers, upper-case
/// names, true/false/NULL and the operators that combine them). The object may be declared
/// where SmPL cannot see its type (inside a macro: SHASH_DESC_ON_STACK(desc, tfm)); gcc named
/// the line and the member.
bool constant_setting_line(const std::string& line, const std::string& m) {
  auto toks = tokenize(line);
  if (toks.size() < 6 || toks.back().text != ";") return false;
  std::size_t eq = 0;
  while (eq < toks.size() && toks[eq].text != "=") ++eq;
  if (eq < 3 || eq + 2 >= toks.size() || toks[eq - 1].text != m || (toks[eq - 2].text != "->" && toks[eq - 2].text != "."))
    return false;
  for (std::size_t k = 0; k + 2 < eq; ++k)
    if (toks[k].kind != TokKind::ident && toks[k].text != "->" && toks[k].text != "." && toks[k].text != "[" &&
        toks[k].text != "]" && toks[k].kind != TokKind::number)
      return false;
  static const std::set<std::string> k_ops = {"|", "&", "~", "<<", ">>", "(", ")", "+", "-"};
  for (std::size_t k = eq + 1; k + 1 < toks.size(); ++k) {
    const auto& t = toks[k];
    if (t.kind == TokKind::number || k_ops.count(t.text) || t.text == "true" || t.text == "false" || t.text == "NULL") continue;
    if (t.kind == TokKind::ident &&
        std::none_of(t.text.begin(), t.text.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }))
      continue;
    return false;
  }
  return true;
}

} // namespace

/// An edit through the target's accessors for `tag.m`; false when the target has none.
bool accessor(TargetIndex& idx, const std::string& tag, const std::string& m, bool reads, std::vector<Edit>& out) {
  auto a = find_accessors(idx, tag, m);
  util::log_debug("target-api: accessors of {}.{}: struct {} get={} set={} on={} off={}", tag, m, a.tag, a.get, a.set, a.bits_on,
                  a.bits_off);
  if (a.tag.empty() || (a.set.empty() && a.bits_on.empty() && (!reads || a.get.empty()))) return false;
  std::vector<std::string> names;
  std::string listed;
  for (const auto* n : {&a.get, &a.set, &a.bits_on, &a.bits_off})
    if (!n->empty()) {
      names.push_back(*n);
      listed += (listed.empty() ? "" : ", ") + *n + "()";
    }
  Edit e;
  e.proposer = "target-api";
  e.change_id = "member:struct " + a.tag + "." + m;
  e.label = "member-changed";
  e.title = fmt::format("struct {}.{} is accessed through {}", a.tag, m, listed);
  e.description = fmt::format("The target kernel {} struct {}.{} directly; its accessors taking a struct {} * "
                              "({}) are used instead, as the target's own drivers do.",
                              reads ? "has no" : "does not let drivers write", a.tag, m, a.tag, a.where);
  e.smpl = accessor_smpl(a, m, reads);
  if (e.smpl.empty()) return false;
  e.symbols = {"struct " + a.tag, m};
  for (const auto& n : names) e.symbols.push_back(n);
  e.support = 1;
  e.rank = 1;
  out.push_back(std::move(e));
  return true;
}

void member(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
  std::string type = d.symbols[0], m = d.symbols[1];
  std::string tag = type.substr(type.rfind(' ') + 1);
  auto members = idx.struct_members(tag);
  if (members.empty() || std::find(members.begin(), members.end(), m) != members.end()) return;
  // What the driver assigns to the member: a function of its own, or something else
  // (THIS_MODULE, a constant). A successor member must be of the same kind.
  std::string value;
  if (auto text = util::read_file(ctx.tree / d.file); text) {
    auto lines = util::split_lines(*text);
    if (d.line >= 1 && static_cast<std::size_t>(d.line) <= lines.size()) {
      std::smatch mm;
      std::string l(lines[static_cast<std::size_t>(d.line) - 1]);
      if (std::regex_search(l, mm, std::regex("\\." + m + "\\s*=\\s*&?\\s*([A-Za-z_]\\w*)"))) value = mm[1].str();
    }
  }
  bool value_is_function = false;
  std::optional<std::vector<std::string>> value_params; // the driver function's parameter types
  if (!value.empty())
    for (const auto& [rel, text] : sources_mentioning(ctx.tree, value)) {
      const auto* t = &text;
      auto toks = tokenize(*t);
      for (const auto& u : find_units(toks)) {
        if (u.kind != UnitKind::function || u.name != value) continue;
        value_is_function = true;
        for (std::size_t k = u.first; k + 1 < u.body; ++k)
          if (toks[k].text == value && toks[k + 1].text == "(") {
            std::size_t c = matching_close(toks, k + 1);
            if (c == std::string::npos || c >= u.body) break;
            value_params = param_types(t->substr(toks[k + 1].end, toks[c].begin - toks[k + 1].end));
            break;
          }
      }
    }
  auto fn_members = idx.function_pointer_members(tag);
  // With the old kernel at hand, a successor has the type the member had: a similar name of
  // another type (block_device.bd_inode -> bd_holder, a void *) compiles and is wrong.
  std::string old_type;
  std::map<std::string, std::string> new_types;
  std::string in_place; // the member that took m's place in the struct, whatever its name
  if (!ctx.old_src.empty() && ctx.from) {
    TargetIndex old_idx(ctx.old_src, ctx.from->build_dir);
    const auto old_members = old_idx.struct_member_types(tag), new_members = idx.struct_member_types(tag);
    for (const auto& p : old_members)
      if (p.name == m) old_type = no_spaces(p.type);
    for (const auto& p : new_members) new_types[p.name] = no_spaces(p.type);
    in_place = member_in_place(old_members, new_members, m);
  }
  std::vector<std::pair<double, std::string>> cands;
  if (!in_place.empty()) cands.push_back({2.0, in_place});
  // A prefix most of the struct's members share (bio's "bi_", sock's "sk_") is no evidence that
  // two of them are one: bi_error and bi_next are compared as "error" and "next".
  std::string prefix = m.substr(0, m.find('_') == std::string::npos ? 0 : m.find('_') + 1);
  if (!prefix.empty() && 2 * std::count_if(members.begin(), members.end(), [&](const std::string& x) {
                           return x.starts_with(prefix);
                         }) < static_cast<long>(members.size()))
    prefix.clear();
  auto unprefixed = [&](const std::string& x) { return !prefix.empty() && x.starts_with(prefix) ? x.substr(prefix.size()) : x; };
  for (const auto& x : members) {
    if (x == in_place) continue;
    double s = name_similarity(unprefixed(m), unprefixed(x));
    if (s < 0.5) continue;
    if (!value.empty() && value_is_function != (fn_members.count(x) > 0)) continue;
    if (auto it = new_types.find(x); !old_type.empty() && it != new_types.end() && it->second != old_type) continue;
    // A function's successor member takes as many parameters as the function (iterate ->
    // iterate_shared, not read_iter); one taking exactly its types comes first.
    if (value_is_function && value_params)
      if (auto mp = idx.function_member_params(tag, x)) {
        if (mp->size() != value_params->size()) continue;
        bool same = true;
        for (std::size_t i = 0; i < mp->size(); ++i) same = same && no_spaces((*mp)[i]) == no_spaces((*value_params)[i]);
        if (same) s += 1.0;
      }
    cands.push_back({s, x});
  }
  std::sort(cands.begin(), cands.end(), [](auto& a, auto& b) { return a.first > b.first; });
  int rank = 1;
  // The accessors the target's own code uses for the member go before similar names.
  if (value.empty() && accessor(idx, tag, m, true, out)) ++rank;
  if (value.empty()) moved_into_member(idx, type, tag, m, rank, out);
  if (cands.empty() && rank > 1) return;
  if (cands.empty()) {
    // No successor member: when the driver only sets it to a constant, in an initializer or a
    // statement of its own (`b->input = 0;`), the setting has no meaning on the target any more
    // and goes (the diagnostic names it). A read of it, or a value computed, stays an error.
    Edit e;
    e.proposer = "target-api";
    e.change_id = "member:" + type + "." + m;
    e.label = "member-changed";
    e.title = fmt::format("{} lost the member .{}", type, m);
    e.description = fmt::format("{} has no member {} in the target kernel and no similar one; the driver's "
                                "constant setting of it is dropped.",
                                type, m);
    e.smpl = fmt::format("@@\nidentifier x;\nconstant C;\n@@\n{0} x = {{\n-\t.{1} = C,\n}};\n\n"
                         "@@\nidentifier x;\n@@\n{0} x = {{\n-\t.{1} = \\(true\\|false\\|NULL\\),\n}};\n\n"
                         "@@\n{0} *p;\n{0} s;\nconstant C;\n@@\n(\n- p->{1} = C;\n|\n- s.{1} = C;\n|\n"
                         "- p->{1} = \\(true\\|false\\|NULL\\);\n|\n- s.{1} = \\(true\\|false\\|NULL\\);\n)\n",
                         type, m);
    e.symbols = {type, m};
    e.support = 1;
    e.rank = 2;
    out.push_back(std::move(e));
    // The line gcc named, when SmPL cannot type its object: the same setting dropped there.
    if (auto line = diagnostic_line(ctx.tree, d); line && constant_setting_line(*line, m)) {
      Edit at_line = out.back();
      at_line.smpl.clear();
      at_line.rank = 3;
      TextEdit te;
      te.file = d.file;
      te.line = d.line;
      te.remove = 1;
      at_line.text_edits.push_back(std::move(te));
      fill_expectations(at_line, ctx.tree);
      out.push_back(std::move(at_line));
    }
    return;
  }
  for (const auto& [s, x] : cands) {
    if (rank > 2) break;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "member:" + type + "." + m;
    e.label = "member-changed";
    e.title = fmt::format("{}.{} was renamed to .{}", type, m, x);
    e.description = x == in_place ? fmt::format("{} has no member {} in the target kernel; .{} took its place between "
                                                "the same members (the only member removed and the only one added "
                                                "since the old kernel, of type {} where it was {}).",
                                                type, m, x, new_types[x], old_type)
                                  : fmt::format("{} has no member {} in the target kernel; .{} is its most similar member "
                                                "(similarity {:.2f}).",
                                                type, m, x, s);
    e.smpl = fmt::format("@@\nidentifier x;\nexpression E;\n@@\n{0} x = {{\n-\t.{1} = E,\n+\t.{2} = E,\n}};\n\n"
                         "@@\n{0} *p;\n{0} s;\n@@\n(\n- p->{1}\n+ p->{2}\n|\n- s.{1}\n+ s.{2}\n)\n",
                         type, m, x);
    e.symbols = {type, m, x};
    e.support = 1;
    e.rank = rank++;
    out.push_back(std::move(e));
  }
}

} // namespace autodriver::propose::target_api
