#pragma once
// The LLM generator (issue 19, first step): asked by the loop only when the rule proposers have
// nothing left to try, for the errors that remain. It locates each error deterministically (the
// driver's lines around it, the target kernel's declarations of the names the error mentions)
// and lets the model read more through tools (a driver function or lines, the target's
// declarations and callers of a symbol; the driver's files only),
// fills the versioned prompt template (prompts/port-generator.v1.txt), and reads the model's
// answer as data (llm/answer): applied to a scratch copy only inside the driver's C files, then
// turned into whole-line text edits the loop tries, gates and keeps or drops like any other. A
// malformed or inapplicable answer is fed back once (prompts/port-retry.v1.txt); after that the
// round counts as failed. Every call's tokens and time are logged for the run store and verdict.

#include "autodriver/llm/client.hpp"
#include "autodriver/propose/proposer.hpp"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace autodriver::propose {

struct AgentSettings {
  llm::Endpoint endpoint;
  long budget_tokens = 0; ///< 0: no limit
  int max_locations = 3;  ///< errors shown to the model per round
  int max_tool_turns = 6; ///< answers that call tools before the model must answer without them
};

/// What the agent spent and what went wrong, per call.
struct AgentLog {
  int calls = 0;
  long prompt_tokens = 0;
  long completion_tokens = 0;
  long ms = 0;
  std::vector<nlohmann::json> rounds; ///< {"round", "calls", "tokens", "ms", "edits", "error"}
  nlohmann::json to_json() const;
};

class LlmAgent {
public:
  explicit LlmAgent(AgentSettings s);
  /// Edits for the errors among `diagnostics` (at most one edit per round); none when the model
  /// failed, the answer was unusable twice, or the budget is spent (said in the log).
  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx);
  const AgentLog& log() const { return m_log; }
  bool spent() const { return m_budget.exhausted(); }

private:
  /// Chat until the model answers without calling a tool, running its tool calls in between
  /// (read a driver function or lines, the target's declarations and callers of a symbol).
  util::Expected<llm::Reply> converse(llm::Client& client, std::vector<llm::Message>& messages, const PortContext& ctx,
                                      const std::set<std::string>& editable, int& tool_calls);
  AgentSettings m_settings;
  llm::Budget m_budget;
  AgentLog m_log;
  int m_round = 0;
};

/// The whole-line edit that turns `before` into `after` (the common first and last lines kept);
/// nullopt when they are equal.
std::optional<TextEdit> line_edit(const std::string& file, const std::string& before, const std::string& after);

} // namespace autodriver::propose
