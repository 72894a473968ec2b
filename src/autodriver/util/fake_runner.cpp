#include "autodriver/util/fake_runner.hpp"

#include <algorithm>

namespace autodriver::util {

namespace {

bool has_word(const std::vector<std::string>& argv, const std::string& part) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
}

} // namespace

void FakeRunner::on(std::vector<std::string> match, RunResult result) {
  std::lock_guard lock(m_mutex);
  m_rules.push_back({std::move(match), std::move(result)});
}

void FakeRunner::on(std::vector<std::string> match, int exit_code, std::string out) {
  RunResult r;
  r.exit_code = exit_code;
  r.out = std::move(out);
  on(std::move(match), std::move(r));
}

Expected<RunResult> FakeRunner::run(const RunRequest& request) {
  if (request.argv.empty()) return unexpected(ErrorKind::config, "empty command");
  if (request.timeout.count() <= 0) return unexpected(ErrorKind::config, "no timeout for " + request.argv[0]);
  std::lock_guard lock(m_mutex);
  m_requests.push_back(request);
  RunResult out;
  out.exit_code = 0;
  for (auto it = m_rules.rbegin(); it != m_rules.rend(); ++it)
    if (std::all_of(it->match.begin(), it->match.end(), [&](const std::string& m) { return has_word(request.argv, m); })) {
      out = it->result;
      break;
    }
  out.argv = request.argv;
  if (request.stderr_mode == Stderr::merge) {
    out.out += out.err;
    out.err.clear();
  }
  if (request.on_output && !out.out.empty()) request.on_output(out.out);
  return out;
}

std::vector<RunRequest> FakeRunner::requests() const {
  std::lock_guard lock(m_mutex);
  return m_requests;
}

std::vector<RunRequest> FakeRunner::requests_with(const std::string& word) const {
  std::lock_guard lock(m_mutex);
  std::vector<RunRequest> out;
  for (const auto& r : m_requests)
    if (has_word(r.argv, word)) out.push_back(r);
  return out;
}

} // namespace autodriver::util
