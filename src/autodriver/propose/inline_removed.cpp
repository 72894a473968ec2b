// inline-removed: a helper the old kernel defined in a header as a one-expression static inline
// (or a function-like macro) and the target no longer declares anywhere: its calls become its old
// body with the arguments in place. 6.12 moved `fd_is_open(fd, fdt)` into fs/file.c as a static
// function; 6.1's <linux/fdtable.h> said `return test_bit(fd, fdt->open_fds);`. An old alias
// (`#define PCI_DMA_TODEVICE DMA_TO_DEVICE`) becomes a rename. The old kernel's headers come from
// --from (or the reference kernel); wrappers the kernel removed before any kernel here are stated
// in the rule packs (rules/*.rule, kind old-definitions) and reach this mechanism through
// rule-pack (make_inline_from_definitions). The target's headers must not declare the name (then
// header-fix adds the include instead), and the body must use each parameter at most once (an
// argument with side effects is not duplicated); the build gate decides whether what the body
// uses still exists in the target.

#include "autodriver/propose/inline_removed.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct OldBody {
  std::vector<std::string> params; ///< parameter names in order
  std::vector<std::string> expr;   ///< the body's expression, as tokens
  std::string where;               ///< "include/linux/fdtable.h:40"
  bool is_macro = false;
};

/// `return E;` (or `E;` for a void function) as the whole body between `open` and its '}'.
std::optional<std::vector<std::string>> single_expression(const std::vector<Token>& toks, std::size_t open, std::size_t close) {
  std::size_t a = open + 1;
  if (a < close && toks[a].text == "return") ++a;
  if (a + 1 >= close || toks[close - 1].text != ";") return std::nullopt;
  std::vector<std::string> out;
  for (std::size_t k = a; k + 1 < close; ++k) {
    if (toks[k].text == ";" || toks[k].text == "{" || toks[k].kind == TokKind::pp_line) return std::nullopt;
    out.push_back(toks[k].text);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

/// A config-off stub: a constant (`0`, `-EINVAL`, `NULL`, `false`) that uses none of its
/// parameters. Copying it into a driver would compile and switch the feature off.
bool is_stub(const std::vector<std::string>& expr, const std::vector<std::string>& params) {
  if (params.empty()) return false;
  for (const auto& x : expr)
    if (std::find(params.begin(), params.end(), x) != params.end()) return false;
  std::vector<std::string> core;
  for (const auto& x : expr)
    if (x != "(" && x != ")" && x != "-") core.push_back(x);
  if (core.size() != 1) return false;
  const auto& c = core[0];
  return std::isdigit(static_cast<unsigned char>(c[0])) || c == "NULL" || c == "false" || c == "true" ||
         (c.size() > 1 && c[0] == 'E' &&
          std::all_of(c.begin() + 1, c.end(), [](char ch) { return std::isupper(static_cast<unsigned char>(ch)); }));
}

/// The definition of `name` in one header's text, when it is one expression.
std::optional<OldBody> body_in(const std::string& text, const std::string& name, const std::string& where) {
  auto toks = tokenize(text);
  // A function-like macro: one pp_line token "#define name(a, b) body".
  for (const auto& t : toks) {
    if (t.kind != TokKind::pp_line) continue;
    std::string def = t.text;
    for (auto pos = def.find("\\\n"); pos != std::string::npos; pos = def.find("\\\n")) def.replace(pos, 2, " ");
    auto p = def.find("define");
    if (p == std::string::npos || def.compare(0, 1, "#") != 0) continue;
    auto rest = std::string(util::trim(std::string_view(def).substr(p + 6)));
    if (!rest.starts_with(name + "(")) continue;
    auto close = rest.find(')');
    if (close == std::string::npos) continue;
    OldBody b;
    b.is_macro = true;
    for (const auto& prm : split_top_level(rest.substr(name.size() + 1, close - name.size() - 1))) b.params.push_back(prm);
    for (const auto& bt : tokenize(rest.substr(close + 1))) b.expr.push_back(bt.text);
    // An expression, not a statement macro.
    bool bad = b.expr.empty();
    for (const auto& x : b.expr)
      if (x == ";" || x == "{" || x == "#" || x == "##" || x == "do") bad = true;
    for (const auto& prm : b.params)
      if (!csrc::starts_ident(prm)) bad = true; // variadic macros
    if (bad || t.later_branch || is_stub(b.expr, b.params)) continue;
    b.where = fmt::format("{}:{}", where, t.line);
    return b;
  }
  for (const auto& u : find_units(toks)) {
    if (u.kind != UnitKind::function || u.name != name) continue;
    bool is_static = false;
    for (std::size_t k = u.first; k < u.body; ++k)
      if (toks[k].text == "static") is_static = true;
    if (!is_static) continue; // an exported function: its body is not the driver's to copy
    std::size_t close = matching_close(toks, u.body);
    if (close == std::string::npos) continue;
    auto expr = single_expression(toks, u.body, close);
    if (!expr) continue;
    std::string decl;
    for (std::size_t k = u.first; k < u.body; ++k) decl += toks[k].text + " ";
    auto proto = parse_prototype(decl, name);
    if (!proto || proto->variadic) continue;
    OldBody b;
    for (const auto& prm : proto->params)
      if (!(prm.name.empty() && prm.type == "void")) b.params.push_back(prm.name);
    b.expr = std::move(*expr);
    // The `#else` of `#ifdef CONFIG_X` (the real one is exported) or a stub: not the function.
    if (toks[u.first].later_branch || is_stub(b.expr, b.params)) continue;
    b.where = fmt::format("{}:{}", where, toks[u.first].line);
    return b;
  }
  return std::nullopt;
}

/// `#define name OTHER` (an alias of one identifier) in one header's text.
std::optional<std::pair<std::string, std::string>> alias_in(const std::string& text, const std::string& name,
                                                            const std::string& where) {
  for (const auto& t : tokenize(text)) {
    if (t.kind != TokKind::pp_line) continue;
    if (auto a = define_alias(t.text); a && a->first == name)
      return std::make_pair(a->second, fmt::format("{}:{}", where, t.line));
  }
  return std::nullopt;
}

/// `#define name <integer>` in one header's text when the header numbers a family of things with
/// such constants (miscdevice.h's `*_MINOR`, pci_ids.h's `PCI_DEVICE_ID_<VENDOR>_*`): at least five
/// siblings of the same name prefix (up to its last '_') or suffix (from its first '_'), all plain
/// integers, most of them no single bit (a family of flags is not a registry: a flag the kernel
/// dropped may have been given another meaning, an identifier keeps its number).
std::optional<std::pair<std::string, std::string>> registry_constant(const std::string& text, const std::string& name,
                                                                     const std::string& where) {
  static const std::regex k_def(
      R"(^#\s*define\s+([A-Za-z_]\w*)\s+((?:0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*)\s*(?:/\*.*\*/\s*|//.*)?$)");
  std::map<std::string, std::string> consts;
  std::string value;
  int line = 0;
  for (const auto& t : tokenize(text)) {
    std::smatch m;
    if (t.kind != TokKind::pp_line || !std::regex_match(t.text, m, k_def)) continue;
    consts[m[1].str()] = m[2].str();
    if (m[1].str() == name) value = m[2].str(), line = t.line;
  }
  if (value.empty()) return std::nullopt;
  auto first = name.find('_'), last = name.rfind('_');
  if (first == std::string::npos || first == 0) return std::nullopt;
  const std::string prefix = name.substr(0, last + 1), suffix = name.substr(first);
  for (bool by_prefix : {true, false}) {
    int n = 0, bits = 0;
    for (const auto& [k, v] : consts) {
      if (k == name || !(by_prefix ? k.starts_with(prefix) : k.ends_with(suffix))) continue;
      ++n;
      unsigned long long x = std::stoull(v, nullptr, 0);
      if ((x & (x - 1)) == 0) ++bits;
    }
    if (n >= 5 && 2 * bits < n) return std::make_pair(value, fmt::format("{}:{}", where, line));
  }
  return std::nullopt;
}

/// Where old definitions are read: the old kernel's headers (inline-removed), or definition
/// texts given as data (the rule packs' old-definitions, rule_pack.cpp).
struct DefinitionSource {
  fs::path old_src;                  ///< empty: no old kernel tree
  std::vector<OldDefinitions> texts; ///< read after old_src
};

/// The definition of `name` in the first source that has one.
template <typename Find>
auto in_old_headers(const DefinitionSource& src, const std::string& name, Find find)
    -> decltype(find(std::string(), std::string())) {
  if (!src.old_src.empty()) {
    for (const auto& rel : kernel::headers_naming(src.old_src, name))
      if (auto text = util::read_file(src.old_src / rel))
        if (auto b = find(*text, rel)) return b;
  }
  for (const auto& h : src.texts)
    if (has_word(h.text, name))
      if (auto b = find(h.text, h.origin)) return b;
  return std::nullopt;
}

/// The body with parameter i as "E<i>" (not where it is a member name after '.' or '->'), or
/// nullopt when a parameter is used twice or a parameter name is missing.
std::optional<std::vector<std::string>> substituted(const OldBody& b) {
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < b.params.size(); ++i) {
    if (b.params[i].empty()) return std::nullopt;
    index[b.params[i]] = static_cast<int>(i);
  }
  std::map<int, int> uses;
  std::vector<std::string> out;
  for (std::size_t k = 0; k < b.expr.size(); ++k) {
    const auto& x = b.expr[k];
    bool member = k > 0 && (b.expr[k - 1] == "." || b.expr[k - 1] == "->");
    if (auto it = index.find(x); it != index.end() && !member) {
      if (++uses[it->second] > 1) return std::nullopt;
      out.push_back(fmt::format("E{}", it->second));
    } else {
      out.push_back(x);
    }
  }
  return out;
}

/// Drops parentheses that enclose the whole expression (a macro body's own), however many.
void strip_enclosing_parens(std::vector<std::string>& e) {
  while (e.size() >= 2 && e.front() == "(" && e.back() == ")") {
    int depth = 0;
    std::size_t k = 0;
    for (; k < e.size(); ++k) {
      if (e[k] == "(") ++depth;
      if (e[k] == ")" && --depth == 0) break;
    }
    if (k + 1 != e.size()) return; // `(a) + (b)`: the first ')' closes before the end
    e = std::vector<std::string>(e.begin() + 1, e.end() - 1);
  }
}

/// A call or a name needs no parentheses around it; anything else gets them.
bool primary(const std::vector<std::string>& e) {
  if (e.size() == 1) return true;
  if (e.size() >= 3 && csrc::starts_ident(e[0]) && e[1] == "(") {
    int depth = 0;
    for (std::size_t k = 1; k < e.size(); ++k) {
      if (e[k] == "(") ++depth;
      if (e[k] == ")" && --depth == 0) return k + 1 == e.size();
    }
  }
  return false;
}

// The callee of a body that is one call passing every parameter on in order (`E0`, `E1`, ...
// as substituted() names them) and nothing else; nullopt otherwise.
std::optional<std::string> forwarded_to(const std::vector<std::string>& e, std::size_t params) {
  if (params == 0 || e.size() != 2 + 2 * params || !csrc::starts_ident(e[0]) || e[1] != "(" || e.back() != ")")
    return std::nullopt;
  for (std::size_t i = 0; i < params; ++i) {
    if (e[2 + 2 * i] != fmt::format("E{}", i)) return std::nullopt;
    if (i + 1 < params && e[3 + 2 * i] != ",") return std::nullopt;
  }
  return e[0];
}

class InlineRemoved final : public Proposer {
  std::string m_id;
  std::vector<OldDefinitions> m_texts;
  bool m_old_headers;

  DefinitionSource source(const PortContext& ctx) const { return {m_old_headers ? ctx.old_src : fs::path(), m_texts}; }

  /// A numbered constant the target dropped from its registry header (see registry_constant):
  /// the driver defines it itself, with the number the old kernel gave it, in each file gcc
  /// names, after the file's last #include before its first use (else just before that use).
  void registry_define(const PortContext& ctx, const std::vector<core::Diagnostic>& diags, const std::string& name,
                       std::vector<Edit>& out) {
    auto k = in_old_headers(source(ctx), name, [&](const std::string& text, const std::string& where) {
      return registry_constant(text, name, where);
    });
    if (!k) return;
    Edit e;
    e.proposer = m_id;
    e.change_id = "inline:" + name;
    e.label = "removed-with-replacement";
    e.title = fmt::format("{} was removed from the kernel's headers: the driver defines it", name);
    e.symbols = {name};
    e.support = 1;
    e.evidence = {k->second};
    std::set<std::string> files;
    for (const auto& d : diags)
      if (!d.symbols.empty() && d.symbols[0] == name && !d.file.empty() && d.file.front() != '/') files.insert(d.file);
    for (const auto& rel : files) {
      auto text = util::read_file(ctx.tree / rel);
      if (!text) return;
      auto toks = tokenize(*text);
      int first_use = 0, last_include = 0;
      for (const auto& t : toks) {
        if (t.kind == TokKind::ident && t.text == name && !first_use) first_use = t.line;
        if (t.kind == TokKind::pp_line && t.text.find("include") != std::string::npos && (!first_use || t.line < first_use))
          last_include = t.line + static_cast<int>(std::count(t.text.begin(), t.text.end(), '\n'));
        if (t.kind == TokKind::pp_line && has_word(t.text, name) && !first_use) first_use = t.line;
      }
      if (!first_use) return;
      auto lines = util::split_lines(*text);
      int at = last_include ? last_include + 1 : first_use;
      if (at > 1 && util::trim(lines[static_cast<std::size_t>(at) - 2]).ends_with("\\")) return;
      e.text_edits.push_back({rel, at, 0, fmt::format("#define {} {}\n", name, k->first)});
    }
    if (e.text_edits.empty()) return;
    e.description = fmt::format("{} is defined nowhere in the target kernel. {} numbered it {} in a header that "
                                "numbers its family with plain constants (a registry, not flags): the driver "
                                "defines it with that number.",
                                name, k->second, k->first);
    out.push_back(std::move(e));
  }

  /// `#define kzfree(x) kfree_sensitive(x)`: every parameter passed on in order, so the old name
  /// is the new one under another spelling, also where it is not called (`#define p_free kzfree`,
  /// a function pointer `.release = kzfree`): a rename. False when the body is anything else.
  bool forwarding_rename(const std::string& name, const OldBody& b, const std::vector<std::string>& expr,
                         std::vector<Edit>& out) const {
    auto callee = forwarded_to(expr, b.params.size());
    if (!callee) return false;
    Edit e;
    e.proposer = m_id;
    e.change_id = "inline:" + name;
    e.label = "rename";
    e.title = fmt::format("{}() was removed: it forwarded to {}()", name, *callee);
    e.renames = {{name, *callee}};
    e.symbols = {name, *callee};
    e.support = 1;
    e.evidence = {b.where};
    e.description = fmt::format("{}() is declared nowhere in the target kernel's headers. {} defined it as `{}`, "
                                "its arguments passed on unchanged: every use of the name becomes {}.",
                                name, b.where, join_c_tokens(b.expr), *callee);
    out.push_back(std::move(e));
    return true;
  }

public:
  InlineRemoved(std::string id, std::vector<OldDefinitions> texts, bool old_headers)
      : m_id(std::move(id)), m_texts(std::move(texts)), m_old_headers(old_headers) {}

  std::string_view id() const override { return m_id; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to) return out;
    if (source(ctx).old_src.empty() && m_texts.empty()) return out; // nothing to read old definitions from
    std::set<std::string> names, idents, tags, types;
    static const std::regex k_struct(R"(\bstruct\s+([A-Za-z_]\w*))");
    for (const auto& d : diags) {
      if (d.severity == core::Severity::error &&
          (d.kind == core::DiagKind::incomplete_type || d.message.find("storage size of") != std::string::npos))
        // a struct the target no longer has, named on the diagnostic's line (`struct timespec ts;`)
        if (auto l = diagnostic_line(ctx.tree, d))
          for (auto it = std::sregex_iterator(l->begin(), l->end(), k_struct); it != std::sregex_iterator(); ++it)
            tags.insert((*it)[1].str());
      // "invalid use of undefined type 'struct spi_master'" on `master->x = y;`: the message names it
      if (d.severity == core::Severity::error && d.message.find("undefined type 'struct ") != std::string::npos) {
        std::smatch m;
        if (std::regex_search(d.message, m, k_struct)) tags.insert(m[1].str());
      }
      if (d.symbols.empty() || !csrc::starts_ident(d.symbols[0])) continue;
      if (d.kind == core::DiagKind::implicit_function_declaration) names.insert(d.symbols[0]);
      if (d.kind == core::DiagKind::undeclared_identifier) idents.insert(d.symbols[0]);
      if (d.kind == core::DiagKind::unknown_type) types.insert(d.symbols[0]);
    }
    if (names.empty() && idents.empty() && tags.empty() && types.empty()) return out;
    TargetIndex target(ctx.new_src, ctx.to->build_dir);
    // An old alias of another name (`#define PCI_DMA_TODEVICE DMA_TO_DEVICE`) is a rename.
    auto alias_rename = [&](const std::string& name, const char* what) {
      auto a = in_old_headers(source(ctx), name,
                              [&](const std::string& text, const std::string& where) { return alias_in(text, name, where); });
      if (!a) return;
      Edit e;
      e.proposer = m_id;
      e.change_id = "inline:" + name;
      e.label = "rename";
      e.title = fmt::format("{} was removed: use {}", name, a->first);
      e.renames = {{name, a->first}};
      e.symbols = {name, a->first};
      e.support = 1;
      e.evidence = {a->second};
      e.description = fmt::format("{} {} is declared nowhere in the target kernel; {} defined it as an alias of {}.", what, name,
                                  a->second, a->first);
      out.push_back(std::move(e));
    };
    for (const auto& name : idents) {
      if (target.names().count(name)) continue;
      auto before = out.size();
      alias_rename(name, "identifier");
      if (out.size() == before) registry_define(ctx, diags, name, out);
    }
    // A typedef name the target lacks that an old header aliased (`#define wait_queue_t
    // wait_queue_entry_t` of a rule file): a rename too.
    for (const auto& name : types)
      if (!target.names().count(name)) alias_rename(name, "type");
    // (gcc saying the type is incomplete is the evidence: uapi headers still spell some removed
    // kernel-internal structs for user space, so a grep of the target would find them)
    for (const auto& tag : tags) {
      auto a = in_old_headers(source(ctx), tag,
                              [&](const std::string& text, const std::string& where) { return alias_in(text, tag, where); });
      if (a && !target.struct_members(a->first).empty()) alias_rename(tag, "struct");
    }
    for (const auto& name : names) {
      if (target.names().count(name)) continue; // declared elsewhere in the target: an include fixes it
      auto b = in_old_headers(source(ctx), name,
                              [&](const std::string& text, const std::string& where) { return body_in(text, name, where); });
      if (!b) {
        alias_rename(name, "function"); // `#define ktime_get_ts ktime_get_ts64`
        continue;
      }
      auto expr = substituted(*b);
      if (!expr) continue;
      strip_enclosing_parens(*expr); // `( (x)->y = (v) )`: the call's place decides if it needs them
      if (expr->empty()) continue;
      if (forwarding_rename(name, *b, *expr, out)) continue;
      std::string body = join_c_tokens(*expr);
      if (!primary(*expr)) body = "(" + body + ")";
      std::string metas, args;
      for (std::size_t i = 0; i < b->params.size(); ++i) {
        metas += fmt::format("{}E{}", i ? ", " : "", i);
        args += fmt::format("{}E{}", i ? ", " : "", i);
      }
      Edit e;
      e.proposer = m_id;
      e.change_id = "inline:" + name;
      e.label = "removed-with-replacement";
      e.title = fmt::format("{}() was removed: use its old body", name);
      e.smpl = fmt::format("@@\n{}@@\n- {}({})\n+ {}\n", metas.empty() ? "" : "expression " + metas + ";\n", name, args, body);
      // A body that is one call is also a token-level call rewrite (for uses spatch cannot parse).
      if (primary(*expr) && expr->size() > 1) {
        std::vector<std::string> targs;
        std::string cur;
        int depth = 0;
        for (std::size_t k = 2; k + 1 < expr->size(); ++k) {
          const auto& x = (*expr)[k];
          if (x == "(" || x == "[") ++depth;
          if (x == ")" || x == "]") --depth;
          if (x == "," && depth == 0) {
            targs.push_back(cur);
            cur.clear();
            continue;
          }
          std::string t = x[0] == 'E' && x.size() > 1 && std::isdigit(static_cast<unsigned char>(x[1])) ? "$" + x.substr(1) : x;
          cur += (cur.empty() ? "" : " ") + t;
        }
        if (!cur.empty()) targs.push_back(cur);
        e.call = CallRewrite{name, b->params.size(), (*expr)[0], targs};
      }
      e.symbols = {name};
      if (e.call) e.symbols.push_back(e.call->to); // the replacement's callee may appear wherever the name was
      e.support = 1;
      e.evidence = {b->where};
      e.description = fmt::format("{}() is declared nowhere in the target kernel's headers. {} defined it as `{}`; "
                                  "each call is replaced by that expression with its arguments in place.",
                                  name, b->where, join_c_tokens(b->expr));
      util::log_debug("inline-removed: {} -> {}", name, body);
      out.push_back(std::move(e));
    }
    // A header's compat layer removed at once (6.1's <linux/spi/spi.h>: `struct spi_master`,
    // spi_master_get_devdata(), devm_spi_register_master() ...): each rename alone leaves the
    // others' types mismatched, so all of one old header's go together as one more change.
    std::map<std::string, std::vector<const Edit*>> by_header;
    for (const auto& e : out)
      if (!e.evidence.empty()) by_header[e.evidence.front().substr(0, e.evidence.front().rfind(':'))].push_back(&e);
    std::vector<Edit> layers;
    for (const auto& [header, edits] : by_header) {
      if (edits.size() < 2) continue;
      Edit all;
      all.proposer = m_id;
      all.change_id = "inline-header:" + header;
      all.label = "removed-with-replacement";
      std::vector<std::string> names_in;
      for (const auto* e : edits) {
        for (const auto& r : e->renames) all.renames.push_back(r);
        if (!e->smpl.empty()) all.smpl += (all.smpl.empty() ? "" : "\n") + e->smpl;
        for (const auto& sym : e->symbols) all.symbols.push_back(sym);
        all.evidence.push_back(e->evidence.front());
        names_in.push_back(e->symbols.front());
      }
      all.title = fmt::format("compat names of {} removed together: {}", header, fmt::join(names_in, ", "));
      all.description = fmt::format("The target kernel declares none of {}; {} defined each as an "
                                    "alias or a one-expression wrapper, all replaced together.",
                                    fmt::join(names_in, ", "), header);
      all.support = static_cast<int>(edits.size());
      layers.push_back(std::move(all));
    }
    for (auto& l : layers) out.push_back(std::move(l));
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_inline_removed() {
  return std::make_unique<InlineRemoved>("inline-removed", std::vector<OldDefinitions>{}, true);
}

std::unique_ptr<Proposer> make_inline_from_definitions(std::string id, std::vector<OldDefinitions> texts) {
  return std::make_unique<InlineRemoved>(std::move(id), std::move(texts), false);
}

} // namespace autodriver::propose
