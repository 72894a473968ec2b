#pragma once
// A scripted CommandRunner for tests: decisions that depend on what a tool printed (the build
// gate's diagnostics, the boot gate's console, a fetch's apt output) are tested without running
// the tool. Install it with ScopedRunner; every command then goes to it.

#include "autodriver/util/subprocess.hpp"

#include <mutex>
#include <string>
#include <vector>

namespace autodriver::util {

class FakeRunner final : public CommandRunner {
public:
  /// A command whose words contain every string of `match` (each as a substring of some word)
  /// is answered with `result` (its argv set to the command's); later rules win over earlier
  /// ones. A command no rule matches exits 0 with no output.
  void on(std::vector<std::string> match, RunResult result);
  /// Shorthand: exit code and stdout (stderr merged or not, as the request asks).
  void on(std::vector<std::string> match, int exit_code, std::string out);

  Expected<RunResult> run(const RunRequest& request) override;

  /// Every request seen, in order.
  std::vector<RunRequest> requests() const;
  /// The requests whose words contain `word` (as a substring of some word).
  std::vector<RunRequest> requests_with(const std::string& word) const;

private:
  struct Rule {
    std::vector<std::string> match;
    RunResult result;
  };
  mutable std::mutex m_mutex;
  std::vector<Rule> m_rules;
  std::vector<RunRequest> m_requests;
};

/// Installs a runner for its lifetime (default_runner() and run() use it), then restores the
/// previous one.
class ScopedRunner {
public:
  explicit ScopedRunner(CommandRunner& runner) : m_previous(set_default_runner(&runner)) {}
  ~ScopedRunner() { set_default_runner(m_previous); }
  ScopedRunner(const ScopedRunner&) = delete;
  ScopedRunner& operator=(const ScopedRunner&) = delete;

private:
  CommandRunner* m_previous;
};

} // namespace autodriver::util
