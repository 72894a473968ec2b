#pragma once
// The closed loop: gates on the unchanged tree, proposers for each API change, apply, re-gate,
// keep what helps, repeat until the build passes, progress stops or the budget ends.

#include "autodriver/llm/client.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::loop {

inline constexpr int k_port_schema_version = 1;

struct PortRequest {
  std::filesystem::path tree; ///< the driver (never written)
  /// --root: a folder holding `tree` that is copied with it (vendor trees whose Makefile compiles
  /// a sibling folder); empty: found from the tree's build files (gate/build_root.hpp).
  std::filesystem::path root;
  /// Inside run_port, once `tree` is the root: the driver's folder in it (empty: tree itself).
  std::filesystem::path subdir;
  std::string to;   ///< target kernel
  std::string from; ///< the kernel it builds on; empty when unknown
  std::string build_cmd;
  std::vector<std::string> build_deps; ///< Debian packages the build needs beyond the kernel's (kernel::with_build_deps)
  bool boot = false;
  std::string device;
  /// With --boot: a crash of the ported driver on the target that the unchanged driver does not
  /// show on --from is repaired, a repair kept only if this many boots run clean; 0: analysed only.
  int crash_runs = 3;
  bool compat = false;
  std::vector<std::string> compat_kernels; ///< --compat K: older kernels the result must still build on
  std::filesystem::path out;               ///< OUT/tree, OUT/patches, OUT/verdict.json
  int max_iters = 6;
  std::chrono::seconds budget{900};
  /// Per build; 0: three times the target's first full build (at least 3 minutes), and always
  /// within the budget left.
  std::chrono::seconds build_timeout{0};
  int jobs = 0;                                 ///< make -j of one build; 0: the CPUs available
  std::vector<std::string> leave_out;           ///< kernel-relative paths never learned from
  std::vector<std::string> proposers;           ///< ids to use; empty = all in the table
  std::vector<std::string> kb_leave_out;        ///< compat-kb: KB provenance packages never learned from
  std::filesystem::path kb_path;                ///< compat-kb: KB file; empty = default
  bool api_changes = false;                     ///< --api-changes: name apidiff's change for each diagnostic (needs from)
  bool store_kb = true;                         ///< store-kb: replay KB entries of the run store (--no-store-kb)
  bool rule_packs = true;                       ///< rule-pack: the shipped rules/ (--no-rule-packs)
  std::vector<std::filesystem::path> rule_dirs; ///< rule-pack: the user's rule folders (--rules DIR)
  /// Without --from: learn from the newest known kernel older than the target whose source is
  /// at hand (its own drivers' updates, its headers) as a reference pair; never built against,
  /// never the driver's version (--no-reference).
  bool reference = true;
  std::filesystem::path kb_store;  ///< store-kb: the run store read; set by run_port_recorded
  std::string case_id;             ///< bench case: its own KB entries are never replayed
  std::filesystem::path from_tree; ///< the tree built on --from; empty = tree (rerun: the
                                   ///< original, since a checkpoint builds on the target only)
  /// Patches: "Name <email>" of their author; empty = the user's git config (user.name,
  /// user.email), else autodriver's own name. `signoff` adds the author's Signed-off-by.
  std::string author;
  bool signoff = false;
  /// --llm URL --model NAME: the LLM generator is asked for the errors the rule proposers leave
  /// (propose/llm_agent.hpp); off unless llm.url is set. The key is read from `llm.key_env` at each request.
  llm::Options llm;
  /// Called with each step as it happens (the run store records it before the loop goes on).
  std::function<void(const nlohmann::json&)> on_step;
};

struct AcceptedEdit {
  propose::Edit edit;
  std::vector<std::pair<std::string, std::string>> snapshot; ///< changed files' content after the edit
  int errors_before = 0;
  int errors_after = 0;
  /// Edits accepted by one trial share its build figures: the index of the first of them in
  /// `accepted` and how many there were (1: this edit alone was measured).
  std::size_t group = 0;
  std::size_t group_size = 1;
};

struct PortReport {
  std::string status;         ///< ported, already-builds, from-fails, no-progress, budget, integrity-rejected, gates-failed
  std::string reference;      ///< without --from: the older kernel learned from (release), empty when none
  std::filesystem::path root; ///< the folder copied with the driver, when it was not the driver's own
  bool ok = false;            ///< builds on the target, integrity passed, requested gates passed
  int initial_errors = 0;
  int final_errors = 0;
  std::vector<AcceptedEdit> accepted;
  nlohmann::json steps = nlohmann::json::array();
  nlohmann::json final_build = nullptr;
  nlohmann::json integrity = nullptr;
  nlohmann::json gates = nullptr;      ///< boot/sparse results on the target
  nlohmann::json changes = nullptr;    ///< --api-changes: loop/api_changes.hpp, per initial target diagnostic
  nlohmann::json compat = nullptr;     ///< --compat: guard version and the builds on both kernels
  std::vector<std::string> remaining;  ///< diagnostics still failing (messages)
  std::vector<std::string> patches;    ///< paths of the patch files
  nlohmann::json checkpatch = nullptr; ///< the target's checkpatch.pl --strict on the patches
  std::vector<std::string> modules;    ///< modules the driver builds (from kernel, else target), for patch subjects
  std::chrono::milliseconds elapsed{0};
  nlohmann::json llm = nullptr; ///< with --llm: calls, tokens and time per round (propose/llm_agent.hpp)
};

using PortProgressFn = std::function<void(const std::string&)>;

class Builder; // loop/builder.hpp

/// A proposer as the loop runs it: `alone_first` edits are tried one at a time before any other
/// edit, and an iteration that keeps one ends there (they change which code compiles).
struct LoopProposer {
  std::unique_ptr<propose::Proposer> proposer;
  bool alone_first = false;
};

/// What the loop runs on; what is left empty is the real thing. Tests replace them: a scripted
/// builder, their own proposers, kernels that are folders of their own, no kernel sources.
struct PortDeps {
  std::shared_ptr<Builder> builder;                                               ///< null: kbuild in the build sandbox
  std::optional<std::vector<LoopProposer>> proposers;                             ///< none: the table's (request.proposers)
  std::function<util::Expected<core::Kernel>(const std::string&)> resolve_kernel; ///< null: kernel::resolve_kernel
  /// The kernel's source tree (learned from); null: kernel::ensure_source (downloads it once).
  std::function<util::Expected<std::filesystem::path>(const core::Kernel&)> source;
};

util::Expected<PortReport> run_port(const PortRequest& request, const PortProgressFn& progress);
util::Expected<PortReport> run_port(const PortRequest& request, const PortProgressFn& progress, PortDeps deps);

nlohmann::json to_json(const PortReport& report, const PortRequest& request);

} // namespace autodriver::loop
