#pragma once
// The port loop as a session of named phases (run() calls them in order):
//   locate_root -> validate -> resolve_kernels -> prepare -> baseline -> iterate
//   [propose -> alone_first -> combined trial (halves) -> single trials] -> conclude
//   -> integrity (and its repair) -> compat -> gates -> series.
// Each phase reads and writes the session's state; the builder, the proposers, kernel resolution
// and source trees come from PortDeps, so tests script them (tests/unit/test_port_session.cpp).

#include "autodriver/gate/check.hpp"
#include "autodriver/gate/integrity.hpp"
#include "autodriver/gate/scratch.hpp"
#include "autodriver/loop/boot_crash.hpp"
#include "autodriver/loop/build_state.hpp"
#include "autodriver/loop/port.hpp"
#include "autodriver/loop/trial.hpp"
#include "autodriver/propose/llm_agent.hpp"
#include "autodriver/propose/rules/rules.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace autodriver::loop {

class PortSession {
public:
  PortSession(const PortRequest& request, PortProgressFn progress, PortDeps deps);
  PortSession(const PortSession&) = delete;
  PortSession& operator=(const PortSession&) = delete;
  util::Expected<PortReport> run();

private:
  using Clock = std::chrono::steady_clock;
  using EditGroups = std::map<std::string, std::vector<const propose::Edit*>>;

  // Phases, in the order run() calls them.
  util::Expected<void> locate_root();
  util::Expected<void> validate();
  util::Expected<void> resolve_kernels();
  util::Expected<void> prepare();
  util::Expected<bool> baseline(); ///< true: the run ends here (already builds, or cut short)
  void make_proposers();
  util::Expected<void> iterate();
  void reference_for_new_names();
  util::Expected<std::vector<propose::Edit>> propose_edits(int iter);
  void add_result_follow_ups(const std::vector<propose::Edit>& edits);
  /// The LLM generator's edits for the errors the rules left (none without --llm).
  std::vector<propose::Edit> agent_edits(int iter);
  /// The agents' reviewer: the edit tried as the loop tries any (its build), the integrity gate on
  /// the files it touched, new warnings and (once the module builds) sparse on its lines.
  propose::Review review_agent_edit(const propose::Edit& e);
  util::Expected<bool> alone_first(std::vector<propose::Edit>& edits, int iter);
  util::Expected<void> combined(const std::vector<const propose::Edit*>& set, int depth, int iter);
  util::Expected<void> accept_set(const std::vector<const propose::Edit*>& set, Trial& t, int iter);
  util::Expected<void> singles(EditGroups& groups, int iter);
  /// The follow-ups of an accepted change, each tried on top of the work tree; kept when the build
  /// is no worse and nothing new appears.
  util::Expected<void> follow_up(const std::string& change_id, int iter);
  util::Expected<void> single_change(const std::string& id, const std::vector<const propose::Edit*>& alternatives, int iter);
  util::Expected<std::optional<Trial>> with_include(const std::string& id, const propose::Edit& edit,
                                                    const std::vector<core::Diagnostic>& needed, int iter,
                                                    std::optional<propose::Edit>& merged);
  util::Expected<void> conclude();
  util::Expected<void> integrity();
  /// What the integrity gate compares: the user's tree with `candidate`, given the accepted edits.
  gate::IntegrityInput integrity_input(const std::filesystem::path& candidate) const;
  util::Expected<bool> integrity_repair(const gate::IntegrityInput& ii, gate::IntegrityReport& integ);
  util::Expected<void> compat();
  util::Expected<void> gates();
  /// A crash on the target that the unchanged driver does not show on --from: repaired by
  /// reproduction (loop/crash_repair), the repair kept as one more patch when N boots run clean.
  util::Expected<void> repair_boot_crash(const BootCrash& c, const gate::CheckRequest& cr);
  util::Expected<void> series();

  // Helpers shared by the phases.
  BuildLimit limit(int share = 1) const;
  bool over_budget() const { return Clock::now() - m_start > m_req.budget; }
  void note(const std::string& m) const;
  void step(const std::string& kind, nlohmann::json data);
  util::Expected<BuildState> build(const core::Kernel& k, const std::filesystem::path& tree, const BuildLimit& limit,
                                   const std::vector<std::string>& objects = {});
  util::Expected<Trial> trial(const std::vector<const propose::Edit*>& edits);
  void tried(nlohmann::json data, const Trial& t);
  util::Expected<void> adopt(Trial& t);
  util::Expected<void> keep_trial(const propose::Edit& e, Trial& t, int iter);
  void end_iteration(int iter);
  util::Expected<void> refresh(int iter);
  void cut_short(const BuildState& b, const core::Kernel& k);
  util::Expected<void> finish_out(const std::filesystem::path& patches);
  long code_of(const core::Kernel& k) const;
  void set_elapsed();

  PortRequest m_req;
  PortProgressFn m_progress;
  PortDeps m_deps;
  PortReport m_rep;
  Clock::time_point m_start;
  std::filesystem::path m_tree_abs;
  std::optional<core::Kernel> m_to, m_from;
  std::vector<core::Kernel> m_olds;     ///< --from and --compat kernels, kept building
  std::vector<std::string> m_old_names; ///< as the user wrote them (the gates resolve them again)
  long m_newest_old = 0;
  propose::ApplyOptions m_apply;
  std::optional<util::TempDir> m_scratch;
  std::filesystem::path m_work;
  std::filesystem::path m_from_tree;
  bool m_from_built = false;
  propose::PortContext m_ctx;
  std::vector<propose::Rule> m_rules; ///< the rule packs in use (m_ctx.rules)
  int m_cpus = 1;
  std::chrono::seconds m_first_build{0};
  BuildState m_cur; ///< the build of the work tree as it is
  std::vector<core::Diagnostic> m_original_diags;
  std::set<std::string> m_settled;                                ///< change ids accepted or exhausted
  std::map<std::string, std::vector<propose::Edit>> m_follow_ups; ///< this iteration's, by the change they follow
  std::set<std::string> m_alone_first;                            ///< change ids of alone-first proposers' edits
  bool m_progressed = false;                                      ///< this iteration kept an edit
  std::set<std::string> m_reference_asked;                        ///< missing names the reference was chosen for
  std::optional<propose::LlmAgent> m_agent;                       ///< --llm
  int m_iter = 0;                                                 ///< the iteration running (the agents' reviews are its steps)
  /// The last reviewed answer's trial (its text edits as the key): the loop's own try of that
  /// edit takes it instead of building the same tree again.
  std::optional<std::pair<std::string, Trial>> m_reviewed;
};

} // namespace autodriver::loop
