#pragma once
// The strategies of the target-api proposer (propose/target_api.cpp), one file each in this
// folder; the proposer's table says which diagnostics each one answers. Every strategy reads
// the target kernel only (its headers, its source, its own drivers) and appends Edits to `out`.

#include "autodriver/core/diagnostic.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/target_decls.hpp"

#include <set>
#include <string>
#include <vector>

namespace autodriver::propose::target_api {

/// The driver's `#define A B` lines, read once per iteration (the tree changes between them).
struct DriverAliases {
  struct Alias {
    std::string name, old_name, file;
    int line = 0;
  };
  bool loaded = false;
  std::vector<Alias> list;
};

// annotation.cpp
void obsolete_annotation(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                         std::vector<Edit>& out);
// shims.cpp
void shim(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
          std::vector<Edit>& out);
void type_shim(const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen, std::vector<Edit>& out);
void alias_shim(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                std::vector<Edit>& out, DriverAliases& aliases);
// prototypes.cpp
void prototype_sync(const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out);
// adapter.cpp
void adapter(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out);
// modpost.cpp
void import_namespace(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::set<std::string>& seen,
                      std::vector<Edit>& out);
void unexported_array(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out);
// arguments.cpp
void arguments(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out);
// renamed.cpp
void renamed(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out);
// members.cpp
/// An edit through the target's accessors for `tag.m` (tag empty: any struct); false when the
/// target has none.
bool accessor(TargetIndex& idx, const std::string& tag, const std::string& m, bool reads, std::vector<Edit>& out);
void member(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out);

// common.cpp
/// A type's text without its spaces ("struct a *" -> "structa*").
std::string no_spaces(std::string t);
/// How well a call argument's text fits a parameter (type and name agreement; higher is better).
int compat(const std::string& arg, const Param& p);
/// An edit removing the driver's own `what` definition of `name` (lines [line, line + lines)).
Edit shim_edit(const std::string& file, const std::string& name, int line, int lines, const char* what);

} // namespace autodriver::propose::target_api
