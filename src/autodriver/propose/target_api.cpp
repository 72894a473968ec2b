// Proposer "target-api": repairs from the target kernel alone, driven by the diagnostics (for
// out-of-tree drivers whose old kernel is unknown). Each repair is a strategy in its own file
// under propose/target_api/ (strategies.hpp); the table below says which diagnostics each one
// answers, in the order they are asked.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/target_api/strategies.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace autodriver::propose {

namespace {

using core::DiagKind;
using namespace target_api;

/// What a strategy is given for one diagnostic.
struct Ask {
  TargetIndex& idx;
  const PortContext& ctx;
  std::set<std::string>& seen; ///< keys of the repairs asked for already in this iteration
  std::vector<Edit>& out;
  DriverAliases& aliases;

  /// First time `key` is asked for in this iteration.
  bool once(const std::string& key) { return seen.insert(key).second; }
};

/// A diagnostic that names a symbol and is not a note.
bool named(const core::Diagnostic& d) { return !d.symbols.empty() && d.severity != core::Severity::note; }
bool is_error(const core::Diagnostic& d) {
  return named(d) && (d.severity == core::Severity::error || d.severity == core::Severity::fatal);
}

/// One strategy: its name, the diagnostic kinds it answers (none listed: every error that names a
/// symbol) and the call, which also holds the strategy's own conditions and its key of "once".
struct Strategy {
  const char* name;
  std::vector<DiagKind> kinds;
  void (*run)(Ask& a, const core::Diagnostic& d);
};

const std::vector<Strategy>& strategies() {
  static const std::vector<Strategy> k_table = {
      {"import-namespace",
       {DiagKind::modpost_other},
       [](Ask& a, const core::Diagnostic& d) { import_namespace(a.idx, a.ctx, d, a.seen, a.out); }},
      {"obsolete-annotation",
       {DiagKind::syntax_error},
       [](Ask& a, const core::Diagnostic& d) { obsolete_annotation(a.idx, a.ctx, d, a.seen, a.out); }},
      {"arguments",
       {DiagKind::too_many_arguments, DiagKind::too_few_arguments},
       [](Ask& a, const core::Diagnostic& d) {
         if (named(d) && a.once("args:" + d.symbols[0])) arguments(a.idx, a.ctx, d, a.out);
       }},
      {"renamed",
       {DiagKind::implicit_function_declaration, DiagKind::undeclared_identifier, DiagKind::modpost_undefined_symbol},
       [](Ask& a, const core::Diagnostic& d) {
         if (named(d) && a.once("name:" + d.symbols[0])) renamed(a.idx, a.ctx, d, a.out);
       }},
      {"unexported-array",
       {DiagKind::modpost_undefined_symbol},
       [](Ask& a, const core::Diagnostic& d) {
         if (named(d) && a.once("array:" + d.symbols[0])) unexported_array(a.idx, a.ctx, d, a.out);
       }},
      {"prototype-sync",
       {DiagKind::conflicting_types},
       [](Ask& a, const core::Diagnostic& d) {
         if (named(d) && a.once("proto:" + d.symbols[0])) prototype_sync(a.ctx, d, a.out);
       }},
      {"read-only-member",
       {DiagKind::read_only_member},
       [](Ask& a, const core::Diagnostic& d) {
         if (named(d) && a.once("readonly:" + d.symbols[0])) accessor(a.idx, "", d.symbols[0], false, a.out);
       }},
      {"adapter",
       {DiagKind::incompatible_pointer_type},
       [](Ask& a, const core::Diagnostic& d) {
         if (named(d) && d.symbols.size() >= 2 && d.symbols[0].find("(*)") == std::string::npos &&
             a.once("adapter:" + d.file + ":" + std::to_string(d.line)))
           adapter(a.idx, a.ctx, d, a.out);
       }},
      {"member",
       {DiagKind::no_member},
       [](Ask& a, const core::Diagnostic& d) {
         // "'const struct file_operations' has no member named 'iterate'" is the same struct.
         if (named(d) && d.symbols.size() >= 2 &&
             (d.symbols[0].starts_with("struct ") || d.symbols[0].starts_with("const struct ")) &&
             a.once("member:" + d.symbols[0] + d.symbols[1]))
           member(a.idx, a.ctx, d, a.out);
       }},
      // Old-kernel compat shims (a `#define` or static inline the driver carries for kernels that
      // lacked the name) collide with the target's own definition once the target has it.
      {"shim", {}, [](Ask& a, const core::Diagnostic& d) { shim(a.idx, a.ctx, d, a.seen, a.out); }},
      {"type-shim", {}, [](Ask& a, const core::Diagnostic& d) { type_shim(a.ctx, d, a.seen, a.out); }},
      {"alias-shim", {}, [](Ask& a, const core::Diagnostic& d) { alias_shim(a.idx, a.ctx, d, a.seen, a.out, a.aliases); }},
  };
  return k_table;
}

class TargetApi final : public Proposer {
public:
  std::string_view id() const override { return "target-api"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty() || !ctx.to) return out;
    TargetIndex idx(ctx.new_src, ctx.to->build_dir);
    std::set<std::string> seen;
    DriverAliases aliases; // the tree changes between iterations
    Ask ask{idx, ctx, seen, out, aliases};
    for (const auto& d : diags)
      for (const auto& s : strategies()) {
        bool asked = s.kinds.empty() ? is_error(d) : std::find(s.kinds.begin(), s.kinds.end(), d.kind) != s.kinds.end();
        if (asked) s.run(ask, d);
      }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_target_api() { return std::make_unique<TargetApi>(); }

} // namespace autodriver::propose
