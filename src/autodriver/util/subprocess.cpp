#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace autodriver::util {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) {
  // Only async-signal-safe work here: set the flag; the runner loops notice it and kill.
  g_interrupted.store(true);
}

std::vector<std::string> build_env(const RunRequest& r) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& name : r.env_unset) env.erase(name);
  for (const auto& [k, v] : r.env_set) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

void append_capped(std::string& dst, std::size_t& dropped, std::size_t cap, const char* data, std::size_t n) {
  std::size_t room = dst.size() < cap ? cap - dst.size() : 0;
  std::size_t take = std::min(room, n);
  dst.append(data, take);
  dropped += n - take;
}

} // namespace

std::string RunResult::status_text() const {
  std::string prog = argv.empty() ? "process" : std::filesystem::path(argv[0]).filename().string();
  if (timed_out) return fmt::format("{} killed after its {:.0f} s timeout", prog, elapsed.count() / 1000.0);
  if (interrupted) return fmt::format("{} killed: interrupted", prog);
  if (signal != 0) return fmt::format("{} killed by signal {}", prog, signal);
  return fmt::format("{} exited {}", prog, exit_code);
}

Expected<RunResult> ProcessRunner::run(const RunRequest& r) {
  if (r.argv.empty()) return unexpected(ErrorKind::spawn, "empty argv");
  if (r.timeout.count() <= 0) return unexpected(ErrorKind::config, "subprocess without a timeout: " + r.argv[0]);
  if (g_interrupted.load()) return unexpected(ErrorKind::interrupted, "interrupted before starting " + r.argv[0]);

  int out_pipe[2], err_pipe[2], in_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(in_pipe, O_CLOEXEC) != 0 ||
      pipe2(exec_pipe, O_CLOEXEC) != 0)
    return unexpected(ErrorKind::spawn, std::string("pipe: ") + std::strerror(errno));

  std::vector<std::string> env = build_env(r);
  std::vector<char*> argv_c, env_c;
  for (const auto& a : r.argv) argv_c.push_back(const_cast<char*>(a.c_str()));
  argv_c.push_back(nullptr);
  for (const auto& e : env) env_c.push_back(const_cast<char*>(e.c_str()));
  env_c.push_back(nullptr);
  std::string cwd = r.cwd.string();

  auto start = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return unexpected(ErrorKind::spawn, std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    // The child dies with the tool, also when the tool is killed with -9 (QEMU, spatch, a build
    // command outside the sandbox); checked once more in case the parent died before prctl.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (r.stdin_data) {
      dup2(in_pipe[0], 0);
    } else {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, 0);
    }
    dup2(out_pipe[1], 1);
    dup2(r.stderr_mode == Stderr::merge ? out_pipe[1] : err_pipe[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      int e = errno;
      (void)!write(exec_pipe[1], &e, sizeof e);
      _exit(127);
    }
    // execvpe searches PATH of the parent; good enough because env_set rarely changes PATH.
    execvpe(argv_c[0], argv_c.data(), env_c.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid); // also in the parent, to avoid racing the child
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_pipe[0]);
  close(exec_pipe[1]);

  int exec_errno = 0;
  if (read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    close(exec_pipe[0]);
    waitpid(pid, nullptr, 0);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(in_pipe[1]);
    return unexpected(ErrorKind::spawn, fmt::format("cannot run {}: {}", r.argv[0], std::strerror(exec_errno)));
  }
  close(exec_pipe[0]);

  if (r.stdin_data) {
    // Small inputs only (prompts, scripts); written before reading output.
    std::string_view data = *r.stdin_data;
    signal(SIGPIPE, SIG_IGN);
    while (!data.empty()) {
      ssize_t n = write(in_pipe[1], data.data(), data.size());
      if (n <= 0) break;
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  close(in_pipe[1]);

  RunResult result;
  result.argv = r.argv;
  auto deadline = start + r.timeout;
  bool out_open = true, err_open = r.stderr_mode == Stderr::separate;
  if (!err_open) close(err_pipe[0]);
  char buf[65536];
  bool killed = false;
  while (out_open || err_open) {
    auto now = std::chrono::steady_clock::now();
    if (!killed && (now >= deadline || g_interrupted.load())) {
      result.timed_out = now >= deadline;
      result.interrupted = !result.timed_out;
      kill(-pid, SIGKILL);
      killed = true;
    }
    pollfd fds[2];
    int nfds = 0;
    if (out_open) fds[nfds++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[nfds++] = {err_pipe[0], POLLIN, 0};
    int rc = poll(fds, static_cast<nfds_t>(nfds), 100);
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < nfds; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      bool is_out = fds[i].fd == out_pipe[0];
      if (n <= 0) {
        if (n < 0 && errno == EINTR) continue;
        close(fds[i].fd);
        (is_out ? out_open : err_open) = false;
        continue;
      }
      auto len = static_cast<std::size_t>(n);
      if (is_out) append_capped(result.out, result.out_dropped, r.output_cap, buf, len);
      else append_capped(result.err, result.err_dropped, r.output_cap, buf, len);
      if (r.on_output) r.on_output(std::string_view(buf, len));
    }
    // After a kill, grandchildren that escaped the group may hold the pipe; stop waiting.
    if (killed && std::chrono::steady_clock::now() > deadline + std::chrono::seconds(5)) break;
  }
  if (out_open) close(out_pipe[0]);
  if (err_open) close(err_pipe[0]);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  // Reap anything left in the group (e.g. make's children after the parent exited).
  kill(-pid, SIGKILL);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
    result.exit_code = -1;
  }
  return result;
}

namespace {
std::atomic<CommandRunner*> g_runner_override{nullptr};
}

CommandRunner& default_runner() {
  static ProcessRunner runner;
  CommandRunner* r = g_runner_override.load();
  return r ? *r : runner;
}

CommandRunner* set_default_runner(CommandRunner* runner) { return g_runner_override.exchange(runner); }

namespace {
thread_local RunObserver t_run_observer;
}

RunObserver set_thread_run_observer(RunObserver observer) {
  std::swap(t_run_observer, observer);
  return observer;
}

Expected<RunResult> run(const RunRequest& request) {
  auto r = default_runner().run(request);
  if (r && t_run_observer) t_run_observer(*r);
  return r;
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted.load(); }

std::filesystem::path find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return std::filesystem::exists(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (!rest.empty()) {
    auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (dir.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

bool says_disk_full(std::string_view output) {
  return output.find(std::strerror(ENOSPC)) != std::string_view::npos ||
         output.find("No space left on device") != std::string_view::npos;
}

std::string render_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool quote = a.empty() || a.find_first_of(" \t\"'$") != std::string::npos;
    if (quote) out += "'" + a + "'";
    else out += a;
  }
  return out;
}

namespace {

int count_available_cpus() {
  int n = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  // cgroup v2: "0::/path" in /proc/self/cgroup; cpu.max is "max 100000" or "QUOTA PERIOD".
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    if (!line.starts_with("0::")) continue;
    std::filesystem::path dir = std::filesystem::path("/sys/fs/cgroup") / std::filesystem::path(line.substr(3)).relative_path();
    for (;;) {
      std::ifstream f(dir / "cpu.max");
      std::string quota;
      long period = 0;
      if (f >> quota >> period && quota != "max" && period > 0) {
        long q = std::atol(quota.c_str());
        if (q > 0) n = std::min<int>(n, static_cast<int>((q + period - 1) / period));
      }
      if (dir == "/sys/fs/cgroup" || !dir.has_parent_path() || dir.parent_path() == dir) break;
      dir = dir.parent_path();
    }
  }
  return std::max(1, n);
}

} // namespace

int available_cpus() {
  // Every build asks; the process's CPUs do not change while it runs.
  static const int n = count_available_cpus();
  return n;
}

} // namespace autodriver::util
