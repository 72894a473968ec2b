#pragma once
// Statement rewrites learned by anti-unification: the kernel's own code rewrote a statement that
// used a changed API ("vma->vm_flags |= VM_IO;" -> "vm_flags_set(vma, VM_IO);"); the pieces both
// forms share become holes, so the pair generalises to any driver's statement of that shape.

#include "autodriver/csrc/tokens.hpp"

#include <optional>
#include <string>
#include <vector>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

/// Token texts with holes "$0", "$1", ... (one per distinct shared sub-expression).
struct StmtTemplate {
  std::vector<std::string> before;
  std::vector<std::string> after;
  int holes = 0;
  bool expression = false; ///< an expression rule (narrowed), not whole statements
  std::string key() const;
};

/// The statement(s) of `toks` around [first, last]: back to the previous ';', '{', '}', `else`
/// or control header, forward to the next ';' at the same depth. Nullopt for blocks or giants.
std::optional<std::pair<std::size_t, std::size_t>> enclosing_statements(const std::vector<Token>& toks, std::size_t first,
                                                                        std::size_t last, std::size_t lo, std::size_t hi);

/// Anti-unifies an old statement with its new form: the longest sub-expressions of `before`
/// (assignment sides, call arguments, postfix chains) that occur verbatim in `after` become
/// holes; `api` (the changed symbol) is never inside a hole. Nullopt when nothing is shared or
/// either side contains a block or control statement.
std::optional<StmtTemplate> anti_unify(const std::vector<std::string>& before, const std::vector<std::string>& after,
                                       const std::string& api);

/// The expression-level rule inside a statement rule, when both sides share a prefix and suffix
/// ("$1 = $0 -> i_ctime ;" / "$1 = inode_get_ctime ( $0 ) ;" -> "$0 -> i_ctime" / "inode_get_ctime ( $0 )").
std::optional<StmtTemplate> narrow_to_expression(const StmtTemplate& t, const std::string& api);

/// The Coccinelle semantic patch for a template (holes are expression metavariables).
std::string template_smpl(const StmtTemplate& t);

/// For a rule that replaces a flag, `E0->m |= FLAG;` -> S(E0), the SmPL that also covers the
/// flag ORed with others: `E0->m |= A | FLAG;` keeps A, and an OR chain elsewhere in a function
/// (a local initializer that later reaches `E0->m |= v;`, or `E0->m = A | FLAG;`) loses FLAG
/// while S(E0) goes after the function's `E0->m` assignment (6.12's NETIF_F_LLTX -> `lltx`:
/// tun, pasemi_mac). Put it before template_smpl(t). Empty when `t` is not such a rule.
std::string flag_variants_smpl(const StmtTemplate& t, const std::string& flag);

} // namespace autodriver::propose
