#pragma once
// Compat knowledge base, part 1: maintainers' `#if LINUX_VERSION_CODE` blocks read out of driver
// sources, and the API change each small block encodes (old-API form -> new-API form).

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::propose {

/// A kernel version as KERNEL_VERSION(a,b,c) spells it.
struct KVersion {
  int major = 0, minor = 0, patch = 0;
  std::string str() const; ///< "6.4.0"
  /// LINUX_VERSION_CODE of this version, as KERNEL_VERSION(a, b, c) computes it (c capped at 255).
  long code() const { return (static_cast<long>(major) << 16) + (static_cast<long>(minor) << 8) + (patch > 255 ? 255 : patch); }
  auto operator<=>(const KVersion&) const = default;
};

/// Parses "6.4", "6.4.0" or "6.12.117+deb12-amd64" (leading numbers only); {0,0,0} if none.
KVersion parse_kversion(std::string_view s);

/// One two-sided version block: the code for kernels below `boundary` and the code from
/// `boundary` on. A one-sided block (`#if` without `#else`) has one empty side. An `#elif` chain
/// of `>=` conditions yields one block per adjacent pair of branches.
struct VersionBlock {
  KVersion boundary;
  std::string old_code; ///< text of the branch for kernels < boundary (lines, '\n'-terminated)
  std::string new_code; ///< text of the branch for kernels >= boundary
  int line = 0;         ///< 1-based line of the `#if`
  int end_line = 0;     ///< 1-based line of the `#endif`
  /// Lines of the old / new branch (1-based, inclusive; first > last when the branch is empty).
  int old_first = 0, old_last = -1, new_first = 0, new_last = -1;
  bool simple = true; ///< exactly `#if`, optional `#else`, `#endif`
  KVersion old_since; ///< the old branch applies from this version on (0.0.0: any older kernel)
  KVersion new_until; ///< the new branch applies below this version (0.0.0: any newer kernel);
                      ///< set in `#elif` chains, where a newer branch takes over
};

/// Why blocks were not kept, counted (reported by `kb build`).
struct ExtractStats {
  int conditionals = 0; ///< `#if`/`#elif` lines naming LINUX_VERSION_CODE
  int blocks = 0;       ///< version blocks found
  int complex = 0;      ///< skipped: &&, ||, RHEL_RELEASE_CODE, macro wrappers
  int nested = 0;       ///< skipped: a branch holds another conditional
  int big = 0;          ///< skipped by derive: more than one small change
  int unclassified = 0; ///< skipped by derive: no single statement/initializer/include change
  int entries = 0;
  void add(const ExtractStats& o);
};

/// Version blocks of one source file.
std::vector<VersionBlock> extract_version_blocks(std::string_view text, ExtractStats& stats);

/// One learned change. Kinds (stored on disk, never renamed): include, call-args, call-rename,
/// member-rename, ident-rename, statement, delete.
struct KbChange {
  std::string kind;
  std::string old_form; ///< normalized tokens, single spaces; call forms use $0.. for arguments
  std::string new_form;
  std::vector<std::string> symbols; ///< old-side symbol first (the one diagnostics name)
};

/// The single changes a block encodes; empty when the block is big or unclassified (counted).
std::vector<KbChange> derive_changes(const VersionBlock& block, ExtractStats& stats);

/// Collapse whitespace runs to one space and trim (for comparing code).
std::string normalize_ws(std::string_view s);

} // namespace autodriver::propose
