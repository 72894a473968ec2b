#pragma once
// The LLM agents (issue 19): asked by the loop only when the rule proposers have nothing left to
// try, for the errors that remain. One round is a small team:
//  - the generator locates each error deterministically (the driver's lines around it and the
//    other places of the driver the error names: a function whose type no longer fits, the
//    definition of a name it uses; the target's declarations of the names the error mentions),
//    fills the versioned prompt (prompts/port-generator.v1.txt) and may call tools before it
//    answers (llm_tools.hpp: the driver, the target kernel, how the kernel's own drivers changed a
//    symbol, the API change, the compat KB, building a proposed change);
//  - the reviewer (the loop's trial of the answer: its build, the integrity gate on the files it
//    touched, new warnings and sparse on its lines) turns what it found into feedback;
//  - the refiner amends the best near miss with that feedback (prompts/port-review.v1.txt):
//    "debug, don't regenerate";
//  - a last attempt starts over from the original files, given the lessons of every failed
//    attempt (prompts/port-reflect.v1.txt).
// Answers are data (llm/answer): applied to a scratch copy only inside the driver's C files, then
// turned into whole-line text edits the loop tries, gates and keeps or drops like any other. A
// malformed or inapplicable answer is fed back once (prompts/port-retry.v1.txt); after that the
// attempt counts as failed. Every call's tokens, cost and time are logged for the run store and verdict.

#include "autodriver/llm/client.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/site_index.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::propose {

/// What a trial of an agent's edit showed: the reviewer's material, and the loop's judgement.
struct Review {
  bool applied = false;
  std::string error;       ///< why it could not be tried (did not apply, interrupted)
  bool stop = false;       ///< the run must end (interrupted): no further attempt
  bool ok = false;         ///< the module builds
  bool progressed = false; ///< the loop would keep it: its score is lower than the work tree's
  int score = 0;           ///< the loop's trial score (lower is better)
  int errors_before = 0;
  int errors_after = 0;
  std::vector<std::string> new_errors; ///< errors the edit brought (a few)
  std::vector<std::string> remaining;  ///< errors still there (a few)
  std::vector<std::string> findings;   ///< the integrity gate on the files the edit touched
  std::vector<std::string> warnings;   ///< new compiler warnings and sparse findings on its lines
  /// Kept as it is: it lowers the score, brings no new error and no finding.
  bool acceptable() const { return applied && progressed && new_errors.empty() && findings.empty(); }
  /// Kept as a near miss, to refine: it lowers the score and the integrity gate finds nothing.
  bool near_miss() const { return applied && progressed && findings.empty(); }
  /// For the model: what the build and the reviewer found, in a few lines.
  std::string describe() const;
  nlohmann::json to_json() const;
};

/// Builds an edit the way the loop tries one and reviews it.
using Reviewer = std::function<Review(const Edit&)>;

struct AgentSettings {
  llm::Endpoint endpoint;
  long budget_tokens = 0;               ///< 0: no limit
  int max_locations = 3;                ///< errors shown to the model per round
  int max_tool_turns = 6;               ///< answers that call tools before the model must answer without them
  int max_attempts = 3;                 ///< answers reviewed per round (with a reviewer): generator, refiners, reflection
  double max_cost = 0;                  ///< at the prices below; 0: no limit
  double price_in = 0;                  ///< per million prompt tokens
  double price_out = 0;                 ///< per million completion tokens
  bool stream = false;                  ///< streamed answers (server-sent events), as some servers prefer
  Reviewer review;                      ///< empty: the first usable answer is the round's edit, unreviewed
  nlohmann::json api_changes = nullptr; ///< the port's apidiff changes (verdict `changes`), for the api_change tool
};

/// What the agent spent and what went wrong, per call.
struct AgentLog {
  int calls = 0;
  long prompt_tokens = 0;
  long completion_tokens = 0;
  double cost = 0;
  long ms = 0;
  /// {"round", "calls", "tool_calls", "tokens", "tokens_in", "tokens_out", "cost", "ms", "edits", "error",
  ///  "attempts": [{"attempt", "role", "review" | "error"}]}
  std::vector<nlohmann::json> rounds;
  nlohmann::json to_json() const;
};

class LlmAgent {
public:
  explicit LlmAgent(AgentSettings s);
  /// Edits for the errors among `diagnostics` (at most one per round: the accepted attempt, else
  /// the best near miss); none when the model failed, every answer was unusable or rejected, or
  /// the budget is spent (said in the log).
  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx);
  const AgentLog& log() const { return m_log; }
  bool spent() const { return m_budget.exhausted(); }

private:
  struct Round;
  struct Attempt;
  /// Chat until the model answers without calling a tool, running its tool calls in between.
  util::Expected<llm::Reply> converse(llm::Client& client, std::vector<llm::Message>& messages, Round& r);
  /// One answer turned into an edit against the round's tree: the model asked (tools allowed),
  /// its answer applied to a copy of `base`; an unusable answer fed back once.
  Attempt answer(llm::Client& client, std::vector<llm::Message>& messages, Round& r, const Attempt* base);
  /// The edit (whole-line text edits against the round's tree) of a copy that holds the answer.
  std::optional<Edit> edit_of(const Round& r, const std::filesystem::path& copy, const std::set<std::string>& files) const;
  /// Answer text for the try_build tool: applied to a copy, reviewed, the copy removed.
  std::string try_build(Round& r, const std::string& text);

  AgentSettings m_settings;
  llm::Budget m_budget;
  AgentLog m_log;
  int m_round = 0;
  SiteIndexCache m_sites;
};

/// The whole-line edit that turns `before` into `after` (the common first and last lines kept);
/// nullopt when they are equal.
std::optional<TextEdit> line_edit(const std::string& file, const std::string& before, const std::string& after);

} // namespace autodriver::propose
