#pragma once
// `explain`: Detect the first step that went wrong in a recorded run, Attribute the failure
// to a step and a component, and suggest a Recovery (AgentDebugX's D -> A -> R).

#include "autodriver/store/run_store.hpp"

namespace autodriver::store {

/// Closed set of causes (stored in JSON as these strings).
///  none                the run succeeded
///  interrupted         Ctrl-C or a killed process; nothing is known to be wrong
///  infrastructure      the tool or its environment failed (spawn, timeout, disk), not the patch
///  input               the driver does not build on its own (--from) kernel
///  missing-mapping     an error no proposer offered an edit for (unknown API change)
///  wrong-mapping       edits were offered for the change but none removed the error
///  proposer-regression an accepted edit introduced an error that was still there at the end
///  integrity           the integrity gate rejected an accepted edit (a cheat or an over-reach)
///  runtime             the ported driver failed the boot/load gate
///  gate-false-positive the boot gate failed for a reason outside the driver (QEMU, kernel)
///  budget              time ran out while the loop was still making progress
///  agent               the LLM agents were asked for the errors left and none of their answers removed them
struct Explanation {
  nlohmann::json doc; ///< {"run", "status", "outcome", "detect", "attribute", "recover"}
};

/// Works on the recorded rows only (no rebuilds; loop::replay_attributions adds counterfactual
/// replays to the document). `verdict` is the run's verdict.json artifact
/// (null when missing); `kb` may be null (no knowledge-base suggestions).
Explanation explain_run(const RunRow& run, const std::vector<StepRow>& steps, const nlohmann::json& verdict, RunStore* kb);

/// One line for an agent round's answers (the `attempts` of an `agent` step): what each one's
/// review found, or why it could not be used.
std::string agent_attempts_summary(const nlohmann::json& attempts);

/// Human-readable rendering of explain_run's document.
std::string render_explanation(const nlohmann::json& doc);

} // namespace autodriver::store
