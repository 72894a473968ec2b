// ops-swap: an ops table handed to the kernel is of the wrong struct type now (proc_create()
// takes `struct proc_ops` where drivers passed `struct file_operations` before 5.6; video devices
// take `struct v4l2_file_operations`). gcc names both types ("expected 'const struct proc_ops *'
// but argument is of type 'struct file_operations *'"); the table's declaration is retyped and each
// designated member mapped to the target struct's member of the same name, else the one whose
// name without the struct's common prefix is closest (`.open` -> `.proc_open`, `.llseek` ->
// `.proc_lseek`). A member with no counterpart is dropped only when its value is not a function
// (`.owner = THIS_MODULE`); a callback with nowhere to go means no edit. Everything comes from the
// target's struct definitions.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;

namespace {

/// "const struct proc_ops *" -> "proc_ops".
std::string pointee_struct_tag(const std::string& type) {
  static const std::regex k_tag(R"(struct\s+([A-Za-z_]\w*)\s*\*)");
  std::smatch m;
  return std::regex_search(type, m, k_tag) ? m[1].str() : std::string();
}

/// The longest prefix ending in '_' that every member shares ("proc_").
std::string common_prefix(const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::string p = names[0];
  for (const auto& n : names) {
    std::size_t k = 0;
    while (k < p.size() && k < n.size() && p[k] == n[k]) ++k;
    p.resize(k);
  }
  auto us = p.rfind('_');
  return us == std::string::npos ? std::string() : p.substr(0, us + 1);
}

class OpsSwap final : public Proposer {
public:
  std::string_view id() const override { return "ops-swap"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to) return out;
    TargetIndex idx(ctx.new_src, ctx.to->build_dir);
    std::set<std::string> done;
    static const std::regex k_expected(R"(^expected '([^']+)' but argument is of type '([^']+)')");
    static const std::regex k_assign(R"(^assignment to '([^']+)' from incompatible pointer type '([^']+)')");
    for (const auto& d : diags) {
      if (d.kind != core::DiagKind::incompatible_pointer_type || d.file.empty() || d.file.front() == '/') continue;
      std::string want, have;
      std::smatch m;
      if (std::regex_search(d.message, m, k_assign)) {
        want = m[1].str(), have = m[2].str();
      } else {
        for (const auto& n : d.notes)
          if (std::regex_search(n.message, m, k_expected)) want = m[1].str(), have = m[2].str();
      }
      std::string to = pointee_struct_tag(want), from = pointee_struct_tag(have);
      util::log_debug("ops-swap: {}:{} wants struct {} for struct {}", d.file, d.line, to, from);
      if (to.empty() || from.empty() || to == from) continue;
      swap_table(idx, ctx, d, to, from, done, out);
    }
    return out;
  }

private:
  void swap_table(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, const std::string& to,
                  const std::string& from, std::set<std::string>& done, std::vector<Edit>& out) {
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    auto lines = util::split_lines(*text);
    if (d.line < 1 || static_cast<std::size_t>(d.line) > lines.size()) return;
    std::string line(lines[static_cast<std::size_t>(d.line) - 1]);
    auto to_members = idx.struct_members(to);
    if (to_members.empty()) return;
    auto to_fns = idx.function_pointer_members(to);
    std::string prefix = common_prefix(to_members);
    // The table: an initializer of `struct from` in the tree whose name is on the diagnostic's line.
    for (const auto& path : util::list_files(ctx.tree)) {
      if (path.extension() != ".c" && path.extension() != ".h") continue;
      const std::string rel = path.string();
      auto t = util::read_file(ctx.tree / path);
      if (!t) continue;
      auto toks = tokenize(*t);
      for (const auto& u : find_units(toks)) {
        if (u.kind != UnitKind::initializer || !has_word(line, u.name) || !done.insert(u.name).second) continue;
        if (u.type.find("struct " + from) == std::string::npos) continue;
        auto tlines = util::split_lines(*t);
        Edit e;
        e.proposer = "ops-swap";
        e.change_id = "ops-swap:" + u.name;
        e.label = "callback-type-changed";
        e.title = fmt::format("{} is a struct {} now (was struct {})", u.name, to, from);
        // The declaration line(s): `struct from` -> `struct to`.
        for (std::size_t k = u.first; k < u.body; ++k)
          if (toks[k].text == from && k > 0 && toks[k - 1].text == "struct") {
            std::string l(tlines[static_cast<std::size_t>(toks[k].line) - 1]);
            auto pos = l.find("struct " + from);
            if (pos == std::string::npos) return;
            l.replace(pos, 7 + from.size(), "struct " + to);
            e.text_edits.push_back({rel, toks[k].line, 1, l + "\n"});
          }
        if (e.text_edits.empty()) return;
        std::vector<std::string> mapping;
        for (const auto& dm : designated_members(toks, u)) {
          const int ln = toks[dm.dot_tok].line;
          // One member per line, its value ending on it: whole-line edits stay exact.
          if (dm.end_tok == 0 || toks[dm.end_tok - 1].line != ln) return;
          if (std::find(to_members.begin(), to_members.end(), dm.member) != to_members.end()) continue;
          std::string best;
          double best_s = 0;
          bool tie = false;
          for (const auto& x : to_members) {
            std::string bare = x.substr(x.starts_with(prefix) ? prefix.size() : 0);
            double s = name_similarity(dm.member, bare); // token overlap or edit distance: "llseek" ~ "lseek"
            if (s > best_s) best_s = s, best = x, tie = false;
            else if (s == best_s) tie = true;
          }
          bool is_fn_value =
              std::regex_match(dm.value, std::regex(R"([A-Za-z_]\w*)")) && dm.value != "THIS_MODULE" && dm.value != "NULL";
          std::string l(tlines[static_cast<std::size_t>(ln) - 1]);
          if (best_s >= 0.5 && !tie && (to_fns.count(best) > 0) == is_fn_value) {
            auto pos = l.find("." + dm.member);
            if (pos == std::string::npos) return;
            l.replace(pos, dm.member.size() + 1, "." + best);
            e.text_edits.push_back({rel, ln, 1, l + "\n"});
            mapping.push_back(fmt::format(".{} -> .{}", dm.member, best));
          } else if (!is_fn_value && util::trim(l).starts_with("." + dm.member)) {
            e.text_edits.push_back({rel, ln, 1, ""});
            mapping.push_back(fmt::format(".{} dropped", dm.member));
          } else {
            return; // a callback with no counterpart: not this rule's to guess
          }
        }
        e.description = fmt::format("{}() now expects a struct {} where the driver passes {}, a struct {}: the "
                                    "table is retyped and its members mapped by name in the target's struct {} "
                                    "({}).",
                                    d.symbols.empty() ? std::string("the kernel") : d.symbols[0], to, u.name, from, to,
                                    mapping.empty() ? std::string("same names") : fmt::format("{}", fmt::join(mapping, ", ")));
        e.symbols = {"struct " + from, "struct " + to};
        e.support = 1;
        out.push_back(std::move(e));
        return;
      }
    }
  }
};

} // namespace

std::unique_ptr<Proposer> make_ops_swap() { return std::make_unique<OpsSwap>(); }

} // namespace autodriver::propose
