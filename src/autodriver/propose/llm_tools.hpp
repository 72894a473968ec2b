#pragma once
// The tools the LLM generator may call before it answers (issue 19): what it reads on demand
// instead of having it stuffed into the prompt. Reading the driver (a function, lines of a file:
// the driver's files only), the target kernel (a symbol's declaration, its callers in the
// kernel's drivers), how the kernel's own drivers changed their uses of a symbol between the old
// and the new tree, the API change behind a symbol (apidiff's entry when the port computed one,
// else the two kernels' declarations), the compat KB's rewrites for it, and building a proposed
// change to see its diagnostics. A tool's answer is text for the model; bad arguments are answered
// with an error, never acted on.

#include "autodriver/llm/client.hpp"
#include "autodriver/propose/proposer.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::propose {

class SiteIndexCache;

/// What the tools read: the port's context, the files an answer may touch, apidiff's changes.
struct ToolEnv {
  const PortContext& ctx;
  const std::set<std::string>& editable; ///< relative paths of the driver's C files and headers
  const nlohmann::json& api_changes;     ///< the verdict's `changes` (--api-changes), or null
  SiteIndexCache& sites;                 ///< kernel history: the old/new file pairs, leave-out honoured
  /// Builds SEARCH/REPLACE blocks (or a diff) applied to the driver and says what the build and
  /// the reviewer found; empty: the tool is not offered.
  std::function<std::string(const std::string& answer)> try_build;
};

/// The tool definitions offered to the model (`try_build` only when the environment can build).
std::vector<llm::Tool> agent_tools(bool can_build);

/// Runs one tool call; its answer is text for the model (an error too, never an exception).
std::string run_tool(const llm::ToolCall& call, const ToolEnv& env);

/// Lines [line - radius, line + radius] of the tree's file, numbered ("  12 text").
std::string numbered_lines(const std::filesystem::path& tree, const std::string& file, int line, int radius);

/// Lines of the target's source naming `symbol`: its declarations in the headers (`declaration`),
/// or calls of it in the drivers (else), at most `max`, each capped at 300 characters.
std::string kernel_lines(const std::filesystem::path& src, const std::string& symbol, bool declaration, int max);

/// How the kernel's own drivers changed lines using `symbol` between ctx.old_src and ctx.new_src:
/// the diff hunks (of files that changed) whose removed or added lines name it, a few per file,
/// at most `max_hunks`; left-out paths and copies of the driver are never read.
std::string kernel_history(const PortContext& ctx, SiteIndexCache& sites, const std::string& symbol, int max_hunks);

/// A C identifier the tools accept (letters, digits, `_`; at most 80 characters).
bool symbol_name(const std::string& s);

} // namespace autodriver::propose
