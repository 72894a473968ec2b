// target-api strategy "renamed": a vanished name replaced by a similar name the target declares
// (ranked by similarity and use), or its table entries dropped.

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

/// The names the driver's own aliases give `name` (`#define pci_cfg_access_lock
/// pci_block_user_cfg_access`: a compat shim saying what the old name means on newer kernels).
std::vector<std::string> driver_aliases_of(const fs::path& tree, const std::string& name) {
  std::vector<std::string> out;
  for (const auto& [rel, text] : sources_mentioning(tree, name))
    for (auto line : util::split_lines(text))
      if (auto a = csrc::define_alias(line); a && a->second == name) out.push_back(a->first);
  return out;
}

/// The driver itself declares `name` at file scope: a declarator (`static int name;`,
/// `struct x *name = ...`), a declaring macro at the start of a declaration
/// (`static DEFINE_SEMAPHORE(name);`, `LIST_HEAD(name);`) or a `#define name`. Such a name is
/// undeclared only because its declaration broke (a macro changed arity): renaming it to a
/// similar kernel name would hide the driver's own object behind the kernel's.
bool driver_declares(const fs::path& tree, const std::string& name) {
  static const std::set<std::string> k_decl_start = {";", "}", "static", "const", "extern"};
  const std::regex define(R"(^\s*#\s*define\s+)" + name + R"(\b)");
  for (const auto& [rel, text] : sources_mentioning(tree, name)) {
    auto toks = tokenize(text);
    auto first = first_branch_mask(toks);
    int depth = 0;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const auto& t = toks[i];
      if (t.kind == TokKind::pp_line) {
        if (std::regex_search(t.text, define)) return true;
        continue;
      }
      if (t.kind == TokKind::punct && first[i]) {
        if (t.text == "{" || t.text == "(" || t.text == "[") ++depth;
        else if (t.text == "}" || t.text == ")" || t.text == "]") depth = std::max(0, depth - 1);
      }
      if (t.kind != TokKind::ident || t.text != name || i == 0) continue;
      const auto& p = toks[i - 1];
      if (depth == 0 && (p.kind == TokKind::ident || p.text == "*")) return true;
      // `MACRO(name` opening a file-scope declaration.
      if (depth == 1 && p.text == "(" && i >= 2 && toks[i - 2].kind == TokKind::ident) {
        bool starts = i == 2 || toks[i - 3].kind == TokKind::pp_line || k_decl_start.count(toks[i - 3].text);
        if (starts) return true;
      }
    }
  }
  return false;
}

/// Text edits that drop every use of `name` from the driver, where the use is a table entry
/// (`.llseek = no_llseek,`) or one term of an OR of flags (`FS_REQUIRES_DEV | FS_LITTER`); a
/// line left empty goes. Empty when some use is anything else (nothing is half dropped).
std::vector<TextEdit> drop_uses(const fs::path& tree, const std::string& name) {
  std::vector<TextEdit> out;
  for (const auto& [rel, text] : sources_mentioning(tree, name)) {
    auto toks = tokenize(text);
    std::vector<std::pair<std::size_t, std::size_t>> cuts; // byte ranges to remove
    auto at = [&](std::size_t k, const char* p) { return k < toks.size() && toks[k].text == p; };
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (toks[i].kind != TokKind::ident || toks[i].text != name) continue;
      if (i >= 3 && at(i - 1, "=") && toks[i - 2].kind == TokKind::ident && at(i - 3, ".") &&
          (at(i + 1, ",") || at(i + 1, "}"))) {
        std::size_t from = toks[i - 3].begin, to = at(i + 1, ",") ? toks[i + 1].end : toks[i].end;
        // The last entry loses the comma before it when that is on its line (`{ .a = x, .b = y }`);
        // on a line of its own the previous entry keeps its comma (valid C, fewer lines touched).
        if (at(i + 1, "}") && at(i - 4, ",") && toks[i - 4].line == toks[i].line) from = toks[i - 4].begin;
        cuts.push_back({from, to});
      } else if (i >= 1 && at(i - 1, "|") && toks[i - 1].line == toks[i].line) {
        cuts.push_back({toks[i - 1].begin, toks[i].end});
      } else if (at(i + 1, "|") && toks[i + 1].line == toks[i].line && i + 2 < toks.size()) {
        cuts.push_back({toks[i].begin, toks[i + 2].begin});
      } else {
        return {};
      }
    }
    if (cuts.empty()) continue;
    std::string now = text;
    std::sort(cuts.rbegin(), cuts.rend());
    for (const auto& [from, to] : cuts) {
      std::size_t f = from;
      // Spaces before a cut term go with it unless they start the line.
      while (f > 0 && (now[f - 1] == ' ' || now[f - 1] == '\t')) {
        std::size_t b = f - 1;
        while (b > 0 && (now[b - 1] == ' ' || now[b - 1] == '\t')) --b;
        if (b == 0 || now[b - 1] == '\n') break;
        f = b;
      }
      now.erase(f, to - f);
    }
    auto old_lines = util::split_lines(text), new_lines = util::split_lines(now);
    if (old_lines.size() != new_lines.size()) return {};
    for (std::size_t l = 0; l < old_lines.size(); ++l) {
      if (old_lines[l] == new_lines[l]) continue;
      TextEdit te;
      te.file = rel;
      te.line = static_cast<int>(l + 1);
      te.remove = 1;
      if (!util::trim(new_lines[l]).empty()) te.text = std::string(new_lines[l]) + "\n";
      out.push_back(std::move(te));
    }
  }
  return out;
}

/// The kernel's own porting notes say what became of `name`: no guessing by similarity. True when
/// they do (an edit was proposed, or the note's replacement is not declared either).
bool from_porting_notes(TargetIndex& idx, const PortContext& ctx, const std::string& name, std::vector<Edit>& out) {
  auto note = idx.porting_notes().find(name);
  if (note == idx.porting_notes().end()) return false;
  const auto& pn = note->second;
  Edit e;
  e.proposer = "target-api";
  e.change_id = "ident:" + name;
  e.symbols = {name};
  e.evidence = {pn.where};
  e.support = 1;
  if (pn.drop) {
    e.label = "removed-with-replacement";
    e.title = fmt::format("{} is gone: its uses are dropped", name);
    e.description = fmt::format("The target kernel's porting notes ({}): \"{}\"", pn.where, pn.sentence);
    e.text_edits = drop_uses(ctx.tree, name);
    if (!e.text_edits.empty()) out.push_back(std::move(e));
    return true;
  }
  if (!idx.names().count(pn.use) && !idx.in_headers(pn.use)) return false;
  e.label = "rename";
  e.title = fmt::format("{} was replaced by {}", name, pn.use);
  e.description = fmt::format("The target kernel's porting notes ({}): \"{}\"", pn.where, pn.sentence);
  e.renames = {{name, pn.use}};
  e.symbols.push_back(pn.use);
  out.push_back(std::move(e));
  return true;
}

/// The target's names most similar to `name` (at most 8, most similar first).
std::vector<std::pair<double, std::string>> similar_names(TargetIndex& idx, const std::string& name) {
  // A constant renamed to a merely similar constant compiles and means something else
  // (I2C_CLASS_DDC is not I2C_CLASS_HWMON): constants need a much closer name than functions.
  bool constant = std::none_of(name.begin(), name.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
  double threshold = constant ? 0.85 : 0.6;
  std::vector<std::pair<double, std::string>> cands;
  for (const auto& n : idx.names()) {
    if (n.size() < 3 || n == name) continue;
    double s = name_similarity(name, n);
    if (s >= threshold) cands.push_back({s, n});
  }
  std::sort(cands.begin(), cands.end(), [](auto& a, auto& b) { return a.first > b.first; });
  if (cands.size() > 8) cands.resize(8);
  return cands;
}

/// What a successor of the diagnostic's name must satisfy, read once per diagnostic from the
/// driver's use of the name, the target's declarations and (when at hand) the older kernel.
class SuccessorTest {
public:
  SuccessorTest(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d)
      : m_idx(idx), m_ctx(ctx), m_name(d.symbols[0]) {
    read_value_use(d);
    read_call_args(d);
    read_old_kernel(d);
  }

  bool accepts(const std::string& n) {
    if (!takes(n) || !same_shape(n) || stub(n) || !absorbs(n)) return false;
    if (m_value_use) {
      auto p = m_idx.prototype(n, nullptr);
      if (p && !p->is_macro) return false;
    }
    return true;
  }

private:
  /// An undeclared lowercase name not called is a variable or parameter: a function of the
  /// target with a similar name would compile (as a pointer) and mean nothing. An ops-table value
  /// (`.llseek = no_llseek,`) is a function designator: functions stay.
  void read_value_use(const core::Diagnostic& d) {
    const std::string& name = m_name;
    m_value_use = d.kind == DiagKind::undeclared_identifier &&
                  std::any_of(name.begin(), name.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
    if (!m_value_use) return;
    auto text = util::read_file(m_ctx.tree / d.file);
    if (!text) return;
    auto lines = util::split_lines(*text);
    if (d.line >= 1 && static_cast<std::size_t>(d.line) <= lines.size() &&
        std::regex_search(std::string(lines[static_cast<std::size_t>(d.line) - 1]),
                          std::regex(R"(\.\s*\w+\s*=\s*&?\s*)" + name + R"(\s*(,|\}|$))")))
      m_value_use = false;
  }

  /// A call's replacement must take the call's arguments: same count, none of an incompatible
  /// kind (prandom_u32_max(10) is not prandom_u32_state(struct rnd_state *)).
  void read_call_args(const core::Diagnostic& d) {
    if (d.kind != DiagKind::implicit_function_declaration) return;
    auto text = util::read_file(m_ctx.tree / d.file);
    if (!text) return;
    auto toks = tokenize(*text);
    for (const auto& c : find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1))
      if (c.callee == m_name && toks[c.name_tok].line == d.line) {
        m_args = c.args;
        return;
      }
  }

  /// With an older kernel's source at hand (--from, or the reference): the renamed function's old
  /// prototype, and the old kernel's drivers that called it and still exist in the target.
  void read_old_kernel(const core::Diagnostic& d) {
    if (d.kind != DiagKind::implicit_function_declaration || m_ctx.old_src.empty()) return;
    TargetIndex old_idx(m_ctx.old_src, m_ctx.from ? m_ctx.from->build_dir : fs::path());
    m_old_proto = old_idx.prototype(m_name, nullptr);
    if (m_old_proto && (m_old_proto->is_macro || m_old_proto->variadic)) m_old_proto.reset();
    for (const auto& l : kernel::c_files_naming(m_ctx.old_src, m_name, kernel::k_user_dirs))
      if (m_old_callers.size() < 30 && fs::exists(m_ctx.new_src / l) &&
          !std::any_of(m_ctx.leave_out.begin(), m_ctx.leave_out.end(), [&](const std::string& lo) { return l.starts_with(lo); }))
        m_old_callers.push_back(l);
  }

  bool takes(const std::string& n) const {
    if (!m_args) return true;
    auto p = m_idx.prototype(n, nullptr);
    if (!p) return true;
    if (p->variadic) return p->params.size() <= m_args->size();
    if (p->params.size() != m_args->size()) return false;
    for (std::size_t i = 0; i < m_args->size(); ++i)
      if (!p->is_macro && compat((*m_args)[i], p->params[i]) < -1) return false;
    return true;
  }

  /// A successor takes the old prototype's parameter types (a similar name that takes a bool
  /// where the old one took a count compiles and means something else:
  /// blk_queue_max_hw_sectors(q, unsigned int) is not blk_mq_run_hw_queues(q, bool)) and returns
  /// what it returned (spi_controller_is_slave's bool is not spi_controller_resume's int status).
  bool same_shape(const std::string& n) const {
    if (!m_old_proto) return true;
    auto p = m_idx.prototype(n, nullptr);
    if (!p || p->is_macro) return true;
    if (p->variadic || p->params.size() != m_old_proto->params.size()) return false;
    auto plain = [](const std::string& t) {
      std::string o;
      for (const auto& tk : tokenize(t))
        if (tk.text != "const" && tk.text != "__user" && tk.text != "__iomem") o += tk.text;
      return o;
    };
    for (std::size_t i = 0; i < p->params.size(); ++i) {
      const auto &a = m_old_proto->params[i].type, &b = p->params[i].type;
      if (plain(a) != plain(b) && !(integer_type(a) && integer_type(b))) return false;
    }
    const auto &ra = m_old_proto->ret, &rb = p->ret;
    if (ra.empty() || rb.empty()) return true;
    return plain(ra) == plain(rb) || (integer_type(ra) && integer_type(rb));
  }

  /// A macro that compiles its arguments away (`no_printk`: `if (0) _printk(...)`) is a stub,
  /// never the successor of something that did work (snd_printk).
  bool stub(const std::string& n) const {
    std::string body = m_idx.macro_body(n);
    std::string sq;
    for (char ch : body)
      if (!std::isspace(static_cast<unsigned char>(ch))) sq += ch;
    return sq.find("if(0)") != std::string::npos || sq == "do{}while(0)" || sq == "({0;})" || sq == "((void)0)";
  }

  /// The old kernel's drivers that called the name and still exist in the target show whether a
  /// candidate took its place: their calls of it grew by about as many calls as the name had
  /// (devlink_info_driver_name_put's callers kept their devlink_info_serial_number_put calls as
  /// they were: the kernel dropped the former). Identifier counts are read once.
  bool absorbs(const std::string& n) {
    if (!m_counted) {
      m_counted = true;
      for (const auto& rel : m_old_callers) {
        auto o = util::read_file(m_ctx.old_src / rel);
        auto t = util::read_file(m_ctx.new_src / rel);
        if (!o || !t) continue;
        for (const auto& tk : tokenize(*o))
          if (tk.kind == TokKind::ident) ++m_old_uses[tk.text];
        for (const auto& tk : tokenize(*t))
          if (tk.kind == TokKind::ident) ++m_new_uses[tk.text];
      }
    }
    int had = m_old_uses[m_name];
    return had == 0 || 2 * (m_new_uses[n] - m_old_uses[n]) >= had;
  }

  TargetIndex& m_idx;
  const PortContext& m_ctx;
  std::string m_name;
  bool m_value_use = false;
  std::optional<std::vector<std::string>> m_args;
  std::optional<Prototype> m_old_proto;
  std::vector<std::string> m_old_callers;
  std::map<std::string, int> m_old_uses, m_new_uses;
  bool m_counted = false;
};

/// The target's Documentation names what replaced `name` (TargetIndex::documented_replacement):
/// each named function the target declares and the call fits is proposed, the one whose own words
/// the old name shares first (getrawmonotonic64: ktime_get_raw_ts64 among the raw, clocktai and
/// boottime accessors one paragraph lists), then in the order the text names them. Returns the
/// next free rank.
int from_documentation(TargetIndex& idx, const std::string& name, SuccessorTest& test, std::vector<Edit>& out) {
  auto doc = idx.documented_replacement(name);
  if (!doc) return 1;
  std::vector<std::string> fit;
  for (const auto& n : doc->names)
    if ((idx.names().count(n) || idx.in_headers(n)) && test.accepts(n)) fit.push_back(n);
  if (fit.empty()) return 1;
  // Words every candidate shares (ktime, get, ts64) tell nothing; the others count when the old
  // name holds them.
  std::map<std::string, int> in_all;
  for (const auto& n : fit) {
    auto words = name_words(n);
    for (const auto& w : std::set<std::string>(words.begin(), words.end())) ++in_all[w];
  }
  auto score = [&](const std::string& n) {
    int s = 0;
    for (const auto& w : name_words(n))
      if (in_all[w] < static_cast<int>(fit.size()) && w.size() >= 3 && name.find(w) != std::string::npos) ++s;
    return s;
  };
  std::stable_sort(fit.begin(), fit.end(), [&](const std::string& a, const std::string& b) { return score(a) > score(b); });
  int rank = 1;
  for (const auto& n : fit) {
    if (rank > 3) break;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "ident:" + name;
    e.label = "rename";
    e.title = fmt::format("{} was replaced by {}", name, n);
    e.description = fmt::format("The target kernel's documentation ({}): \"{}\"", doc->where, doc->sentence);
    e.renames = {{name, n}};
    e.symbols = {name, n};
    e.evidence = {doc->where};
    e.support = 1;
    e.rank = rank++;
    out.push_back(std::move(e));
  }
  return rank;
}

} // namespace

void renamed(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
  const std::string& name = d.symbols[0];
  if (idx.names().count(name)) return; // declared: a missing #include (header-fix), not a rename
  // Declared in a header outside the indexed dirs (include/crypto/internal/...): still an include.
  if (idx.prototype(name, nullptr)) return;
  if (driver_declares(ctx.tree, name)) return;
  if (from_porting_notes(idx, ctx, name, out)) return;
  // The most similar names, re-ranked by how much the target's own drivers use each (log scale),
  // without what the target documents as deprecated (Documentation/process/deprecated.rst).
  auto cands = similar_names(idx, name);
  const auto& deprecated = idx.deprecated();
  SuccessorTest test(idx, ctx, d);
  // A successor the driver's own alias of the name contradicts (`#define X_lock old_name` and the
  // candidate X_unlock) means the opposite, however close its spelling.
  const auto aliases = driver_aliases_of(ctx.tree, name);
  auto contradicted = [&](const std::string& n) {
    return std::any_of(aliases.begin(), aliases.end(), [&](const std::string& a) { return opposite_names(a, n); });
  };
  // What the target's documentation names goes before any guess by spelling.
  std::set<std::string> documented;
  int rank = from_documentation(idx, name, test, out);
  for (const auto& e : out)
    if (e.change_id == "ident:" + name && e.renames.size() == 1) documented.insert(e.renames[0].second);
  std::vector<std::tuple<double, int, std::string>> ranked;
  for (const auto& [s, n] : cands)
    if (!deprecated.count(n) && !contradicted(n) && !documented.count(n) && test.accepts(n))
      ranked.push_back({s, idx.usage_count(n), n});
  std::sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) {
    double sa = std::get<0>(a) + 0.03 * std::log2(1.0 + std::get<1>(a));
    double sb = std::get<0>(b) + 0.03 * std::log2(1.0 + std::get<1>(b));
    return sa > sb;
  });
  const int guesses_from = rank;
  for (const auto& [s, uses, n] : ranked) {
    if (rank >= guesses_from + 3) break;
    if (uses == 0) continue;
    Edit e;
    e.proposer = "target-api";
    e.change_id = "ident:" + name;
    e.label = "rename";
    e.title = fmt::format("{} was replaced by {}", name, n);
    e.description = fmt::format("{} does not exist in the target kernel; {} is the most similar name it declares "
                                "(similarity {:.2f}, used by {} of its driver files).",
                                name, n, s, uses);
    e.renames = {{name, n}};
    e.symbols = {name, n};
    e.support = uses;
    e.rank = rank++;
    out.push_back(std::move(e));
  }
}

} // namespace autodriver::propose::target_api
