#pragma once
// Rule packs: kernel-API knowledge stated by hand, kept as data with its provenance (one file per
// API change under rules/, compiled into the binary; users add their own folders with --rules
// DIR). The mechanisms that apply a rule stay in C++ (rule_pack.cpp); a rule only says what the
// kernel changed, where that is written down, and whether its text is the kernel's own definition.
//
// A rule file (`NAME.rule`) is a header of `key: value` lines, a line `---`, and a body:
//
//     # comment lines start with '#'
//     kind: old-definitions            # what the body is (below)
//     kernel: 5.18                     # the kernel version that made the change
//     source: include/linux/pci-dma-compat.h of Linux 5.17; removed by commit 7968778914e5
//     kernel-definition: yes           # no: stated by hand, not a definition the kernel had
//     why: one sentence for the patch body (optional)
//     symbols: pci_alloc_consistent pci_free_consistent   # names that trigger it (per kind)
//     target-from: 6.4                 # optional: only for targets of at least / below a version
//     target-below: 7.0
//     ---
//     <body>
//
// Kinds:
//   old-definitions    body: C (#defines and one-expression static inlines) as an old kernel's
//                      header had them; calls of a name the target lacks become its old body
//                      (the inline-removed mechanism reading these instead of old headers)
//   remove-statements  body: one ECMAScript regex per line, each a whole-line statement form;
//                      when a diagnostic names a symbol and the target lacks the first symbol,
//                      the driver's live statements of these forms are deleted
//   smpl               body: a Coccinelle semantic patch; proposed when a diagnostic names one of
//                      the symbols and the target declares none of `target-lacks`
//   table-path         no body; fields table-type, name-member, child-member, table-call,
//                      new-call, header (and path-type, paths-call): a registration of nested
//                      one-directory tables becomes the new call with the directories as one
//                      "a/b" path (sysctl, Linux 6.6)
//   typed-variant      body: lines `NAME -> TYPED_NAME`: when a driver's variable changes type,
//                      NAME(a, b) of mixed types becomes TYPED_NAME(T, a, b)

#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::propose {

struct Rule {
  std::string name;                          ///< the file's stem
  std::string kind;                          ///< one of rule_kinds()
  std::string file;                          ///< "rules/NAME.rule" (shipped) or the path read
  std::string kernel;                        ///< version that made the change, e.g. "5.18"
  std::string source;                        ///< the kernel document or commit it states
  bool kernel_definition = false;            ///< the body is the kernel's own text
  std::string why;                           ///< one sentence for the patch body
  std::vector<std::string> symbols;          ///< trigger names (kind-specific)
  std::map<std::string, std::string> fields; ///< kind-specific keys
  std::string body;
  int body_line = 0; ///< line of the body's first line in the file

  /// "rules/pci-dma-compat.rule (Linux 5.18; include/linux/pci-dma-compat.h ...)".
  std::string provenance() const;
  /// Whitespace-separated words of a field; empty when absent.
  std::vector<std::string> words(const std::string& key) const;
};

const std::vector<std::string_view>& rule_kinds();

/// Parses one rule file's text; `file` names it in errors ("FILE:LINE: what is wrong").
util::Expected<Rule> parse_rule(std::string_view text, const std::string& file);

/// The rules shipped with autodriver (the repository's rules/ folder, compiled in).
const std::vector<Rule>& shipped_rules();

/// Shipped rules (unless `shipped` is false) and every *.rule of each folder, sorted by name; a
/// user rule with a shipped rule's name replaces it. Any unreadable or malformed file is an error.
util::Expected<std::vector<Rule>> load_rules(bool shipped, const std::vector<std::filesystem::path>& dirs);

/// "6.4" / "2.6.37" -> (a << 16) + (b << 8) + c; -1 when it is not a version.
long version_code_of(std::string_view version);

/// Whether a rule's target-from / target-below admit a target of `version_code` (a rule scoped to
/// versions never applies to a target whose version is unknown, 0).
bool applies_to(const Rule& rule, long version_code);

/// A typed-variant pair of a rule: `min` -> `min_t`.
struct TypedVariant {
  std::string name, typed;
  std::string provenance; ///< the rule's
};

struct PortContext;

/// The target's LINUX_VERSION_CODE (its release, else its build dir's version.h); 0 when unknown.
long target_version_code(const PortContext& ctx);

/// The typed-variant pairs of the rules in `ctx` that apply to its target.
std::vector<TypedVariant> typed_variants(const PortContext& ctx);

/// The rule files compiled in: {"rules/NAME.rule", text} (generated at build time).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_rule_files();

} // namespace autodriver::propose
