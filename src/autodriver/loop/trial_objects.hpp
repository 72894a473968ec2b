#pragma once
// Which objects judge a trial: kbuild can compile single objects of an out-of-tree module, so a
// trial that changed a few files of a big driver need not rebuild the whole module to be judged.

#include "autodriver/core/diagnostic.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace autodriver::loop {

struct TrialObjects {
  std::vector<std::string> objects; ///< "sub/a.o"; empty: the whole module decides
  /// A changed header is judged by a sample of the C files that include it, not all of them:
  /// the files outside the sample keep their diagnostics until a full build refreshes them.
  bool sampled = false;
  /// The C files those objects compile (relative to the tree): their diagnostics all come anew.
  std::set<std::string> units;
};

/// The objects a trial that changed `changed` (paths relative to the tree) can be judged by, given
/// the current build's `errors` (compiler errors in the tree's C files and headers only: a link or
/// modpost error, or one outside the tree, leaves the whole module to decide) and the built tree
/// `work`:
/// - a changed C file that kbuild compiles on its own (its record in the built tree, or an error
///   of its own now) and that no other file includes: its object;
/// - a changed header: the C files with errors of their own that include it (at most eight), and
///   the first two that report errors located in it, when that is fewer than half the C files
///   that include it; else the whole module. A header no file with an error includes (it cannot
///   remove an error) is judged by the C files with errors (at most eight).
/// Nothing when the trial changed every file with errors and no header (a full build then
/// compiles only those anyway, and links), or when an object lies outside `subdir` (the driver's
/// folder under a root: kbuild builds single objects of M= only).
TrialObjects trial_objects(const std::set<std::string>& changed, const std::vector<core::Diagnostic>& errors,
                           const std::filesystem::path& work, const std::filesystem::path& subdir = {});

/// The C files the build of `work` compiled: those with kbuild's record of their object
/// (`.x.o.cmd`), those whose compilation reported one of `diags` (it failed, so kbuild kept no
/// record), and C files a diagnostic points into (one C file including another). Relative paths.
std::set<std::string> compiled_units(const std::filesystem::path& work, const std::vector<core::Diagnostic>& diags,
                                     const std::filesystem::path& subdir = {});

/// The C file whose compilation reported `d`: the outermost file of its "In file included from"
/// chain, else its own file; relative to the tree (`prefix`, the sandbox's tree path, removed) and
/// normalized ("././include/x.h" -> "include/x.h"); a chain's relative names are taken from
/// `subdir`, the folder the build ran in.
std::string reporting_unit(const core::Diagnostic& d, const std::string& prefix, const std::filesystem::path& subdir = {});

/// `path` normalized as a tree-relative path ("./a/../b.c" -> "b.c").
std::string tree_relative(const std::string& path, const std::string& prefix);

} // namespace autodriver::loop
