#include "autodriver/loop/build_state.hpp"

#include <algorithm>
#include <limits>

namespace autodriver::loop {

std::string error_signature(const core::Diagnostic& d) {
  // Lines move when code is edited; file + message identifies an error well enough.
  return d.file + "|" + d.message;
}

void count_diagnostic(BuildState& s, const core::Diagnostic& d) {
  if (d.severity == core::Severity::error || d.severity == core::Severity::fatal) {
    if (d.severity == core::Severity::fatal) ++s.fatal;
    s.errors.push_back(d);
    s.signatures.insert(error_signature(d));
  } else if (d.severity == core::Severity::warning &&
             (d.kind == core::DiagKind::int_conversion || d.kind == core::DiagKind::incompatible_pointer_type ||
              d.kind == core::DiagKind::incompatible_type)) {
    ++s.type_warnings;
  }
}

BuildState state_of(const std::vector<core::Diagnostic>& diagnostics, bool ok) {
  BuildState s;
  s.exited_ok = ok;
  s.ok = ok;
  s.all = diagnostics;
  for (const auto& d : diagnostics) count_diagnostic(s, d);
  return s;
}

bool adds_no_error(const BuildState& cur, const BuildState& trial) {
  return std::all_of(trial.signatures.begin(), trial.signatures.end(),
                     [&](const std::string& sg) { return cur.signatures.count(sg) > 0; });
}

int trial_score(const BuildState& cur, const BuildState& trial) {
  if (trial.ok) return trial.type_warnings;
  // A build cut short says nothing about the edit: never progress.
  if (trial.timed_out) return std::numeric_limits<int>::max() / 2;
  std::set<std::string> removed_lines;
  for (const auto& d : cur.errors)
    if (!trial.signatures.count(error_signature(d))) removed_lines.insert(d.file + ":" + std::to_string(d.line));
  int penalty = 0;
  std::set<std::string> counted;
  for (const auto& d : trial.errors) {
    std::string sig = error_signature(d);
    if (cur.signatures.count(sig) || !counted.insert(sig).second) continue;
    if (removed_lines.count(d.file + ":" + std::to_string(d.line))) ++penalty;
  }
  // A fatal error (a missing header) that moved further down its file is progress: the file
  // now compiles past the old one (the next vanished header of a series of moves).
  if (trial.fatal > 0 && trial.fatal == cur.fatal) {
    bool further = true;
    for (const auto& d : trial.errors) {
      if (d.severity != core::Severity::fatal) continue;
      bool later = false;
      for (const auto& c : cur.errors)
        if (c.severity == core::Severity::fatal && c.file == d.file && c.line < d.line &&
            !trial.signatures.count(error_signature(c)))
          later = true;
      further = further && later;
    }
    if (further) --penalty;
  }
  // Past the compiler: objtool, modpost and the linker only run once every object compiled, so
  // a build whose errors are all theirs went further than one that still fails to compile.
  auto compiling = [](const BuildState& s) {
    return std::any_of(s.errors.begin(), s.errors.end(), [](const core::Diagnostic& d) { return d.tool == "gcc"; });
  };
  if (compiling(cur) && !trial.errors.empty() && !compiling(trial)) return std::min(trial.score() + penalty, cur.score() - 1);
  return trial.score() + penalty;
}

std::vector<std::pair<std::string, const core::Diagnostic*>> distinct(const std::vector<core::Diagnostic>& ds) {
  std::vector<std::pair<std::string, const core::Diagnostic*>> out;
  std::set<std::string> seen;
  for (const auto& d : ds) {
    std::string s = d.file + ":" + std::to_string(d.line) + ": " + d.message;
    if (seen.insert(s).second) out.emplace_back(std::move(s), &d);
  }
  return out;
}

std::vector<std::string> distinct_errors(const std::vector<core::Diagnostic>& ds) {
  std::vector<std::string> out;
  for (auto& [s, d] : distinct(ds)) out.push_back(std::move(s));
  return out;
}

nlohmann::json diag_list(const std::vector<core::Diagnostic>& ds) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [s, d] : distinct(ds))
    a.push_back({{"file", d->file}, {"line", d->line}, {"kind", core::to_string(d->kind)}, {"message", d->message}});
  return a;
}

} // namespace autodriver::loop
