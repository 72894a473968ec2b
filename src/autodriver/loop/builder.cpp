#include "autodriver/loop/builder.hpp"

#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/sparse_parser.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

namespace autodriver::loop {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

class KbuildBuilder final : public Builder {
public:
  KbuildBuilder(std::string build_cmd, fs::path subdir) : m_build_cmd(std::move(build_cmd)), m_subdir(std::move(subdir)) {}

  util::Expected<BuildState> build(const core::Kernel& k, const fs::path& tree, const BuildLimit& limit,
                                   const std::vector<std::string>& objects) override {
    gate::BuildSpec spec = spec_for(limit);
    spec.objects = objects;
    auto t0 = Clock::now();
    auto r = gate::build_tree(k, tree, spec);
    // A build killed by Ctrl-C or SIGTERM says nothing about the driver or the edit.
    if (util::interrupted() || (r && r->run.interrupted))
      return util::unexpected(util::ErrorKind::interrupted, "interrupted during a build");
    if (!r) return util::unexpected(r.error());
    BuildState s;
    s.ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    s.compiled = r->compiled;
    s.limit = limit.timeout;
    s.exited_ok = r->run.ok();
    s.ok = s.exited_ok && !r->modules.empty() && objects.empty();
    s.timed_out = r->run.timed_out;
    s.by_budget = s.timed_out && limit.by_budget;
    s.all = r->diagnostics;
    for (const auto& m : r->modules) s.modules.push_back(m.stem().string());
    for (const auto& d : r->diagnostics) count_diagnostic(s, d);
    if (!s.ok && s.signatures.empty()) {
      s.signatures.insert(s.timed_out ? fmt::format("build did not finish within {} s", limit.timeout.count())
                                      : "build failed: " + r->run.status_text());
      if (!s.timed_out && !s.exited_ok) s.failure = gate::build_failure_tail(r->run.out);
    }
    return s;
  }

  bool single_objects() const override { return m_build_cmd.empty(); }

  util::Expected<std::vector<core::Diagnostic>> sparse(const core::Kernel& k, const fs::path& tree, const BuildLimit& limit,
                                                       const std::vector<core::Diagnostic>& gcc) override {
    return gate::sparse_build(k, tree, spec_for(limit), gcc);
  }

private:
  gate::BuildSpec spec_for(const BuildLimit& limit) const {
    gate::BuildSpec spec;
    spec.build_cmd = m_build_cmd;
    spec.timeout = limit.timeout;
    spec.jobs = limit.jobs;
    spec.subdir = m_subdir;
    return spec;
  }

  std::string m_build_cmd;
  fs::path m_subdir;
};

} // namespace

std::unique_ptr<Builder> make_kbuild_builder(std::string build_cmd, fs::path subdir) {
  return std::make_unique<KbuildBuilder>(std::move(build_cmd), std::move(subdir));
}

} // namespace autodriver::loop
