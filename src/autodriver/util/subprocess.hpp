#pragma once
// The one runner for every external tool (make, gcc, spatch, sparse, qemu, git, apt-get, ...).
//
// argv vector (never a shell string), explicit cwd and environment, a required timeout,
// a cap on captured output, and kill of the whole process group on timeout or interrupt.
// A non-zero exit is data (RunResult), not an Error; Errors are only "could not run it".

#include "autodriver/util/expected.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::util {

enum class Stderr { separate, merge };

struct RunRequest {
  std::vector<std::string> argv;
  std::filesystem::path cwd;                  ///< empty: the current directory
  std::map<std::string, std::string> env_set; ///< variables added or overridden
  std::vector<std::string> env_unset;         ///< variables removed
  std::chrono::milliseconds timeout{0};       ///< required: 0 is rejected
  std::size_t output_cap = 4 * 1024 * 1024;   ///< bytes kept per stream; the rest is counted, not kept
  Stderr stderr_mode = Stderr::separate;
  std::optional<std::string> stdin_data; ///< empty: stdin is /dev/null
  /// Called with each chunk of merged output as it arrives (progress, live console).
  std::function<void(std::string_view)> on_output;
};

struct RunResult {
  std::vector<std::string> argv;
  int exit_code = -1;       ///< -1 when killed by a signal
  int signal = 0;           ///< terminating signal, 0 if none
  bool timed_out = false;   ///< killed because the timeout expired
  bool interrupted = false; ///< killed because the user interrupted autodriver
  std::string out;
  std::string err;             ///< empty when Stderr::merge
  std::size_t out_dropped = 0; ///< bytes beyond output_cap
  std::size_t err_dropped = 0;
  std::chrono::milliseconds elapsed{0};

  bool ok() const { return exit_code == 0 && !timed_out && !interrupted; }
  /// "make exited 2", "qemu killed after 30 s timeout", ...
  std::string status_text() const;
};

/// Abstract runner so that tests can substitute a fake (util/fake_runner.hpp).
class CommandRunner {
public:
  virtual ~CommandRunner() = default;
  virtual Expected<RunResult> run(const RunRequest& request) = 0;
};

/// fork/exec in a new process group; poll()s both pipes; SIGKILLs the group on timeout.
class ProcessRunner final : public CommandRunner {
public:
  Expected<RunResult> run(const RunRequest& request) override;
};

/// The process-wide default runner.
CommandRunner& default_runner();

/// Replaces the runner default_runner() and run() use, process-wide (tests: a FakeRunner);
/// nullptr restores the real one. Returns the one it replaced (nullptr: the real one).
CommandRunner* set_default_runner(CommandRunner* runner);

/// Shorthand: default_runner().run(request).
Expected<RunResult> run(const RunRequest& request);

/// Sees every command run() finishes on this thread (the run store records the argv with the
/// step it belongs to). Per thread, so parallel bench cases each see their own commands.
using RunObserver = std::function<void(const RunResult&)>;
/// Sets this thread's observer (empty removes it); returns the previous one.
RunObserver set_thread_run_observer(RunObserver observer);

/// Install SIGINT/SIGTERM handlers that mark the process interrupted; every runner loop notices
/// the mark and kills its child's process group (a handler may not do that work itself).
void install_interrupt_handlers();

/// True after SIGINT/SIGTERM.
bool interrupted();

/// CPUs this process may use: its affinity mask, bounded by its cgroup's CPU quota (cpu.max of
/// its cgroup and every parent). At least 1.
int available_cpus();

/// Looks a program up on PATH; empty when missing.
std::filesystem::path find_program(const std::string& name);

/// Render argv for logs ("make -C /x M=/y modules"), quoting words with spaces.
std::string render_argv(const std::vector<std::string>& argv);

/// True when a tool's output says a write failed because its file system is full (ENOSPC's
/// message): the run cannot go on, and the driver is not to blame.
bool says_disk_full(std::string_view output);

} // namespace autodriver::util
