// Gate "sparse": a C=2 CHECK=sparse build; sparse's findings, minus those of a baseline tree.

#include "autodriver/gate/gate.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/gate/sparse_parser.hpp"
#include "autodriver/util/files.hpp"

#include <fmt/format.h>

namespace autodriver::gate {

namespace fs = std::filesystem;

util::Expected<std::vector<core::Diagnostic>> sparse_build(const core::Kernel& kernel, const fs::path& tree, BuildSpec spec,
                                                           const std::vector<core::Diagnostic>& gcc, std::string* command) {
  // C=2 runs the checker on every source whether or not gcc must rebuild it, so on the
  // already-built tree the output is (almost only) sparse's.
  spec.extra_make_args = {"C=2", "CHECK=sparse"};
  auto r = build_tree(kernel, tree, spec);
  if (util::interrupted() || (r && r->run.interrupted))
    return util::unexpected(util::ErrorKind::interrupted, "interrupted during a sparse build");
  if (!r) return util::unexpected(r.error());
  if (command) *command = r->command;
  if (r->run.out.find("sparse: not found") != std::string::npos || r->run.out.find("sparse: No such file") != std::string::npos)
    return util::unexpected(util::ErrorKind::config, "sparse is not installed (apt-get install sparse)");
  if (r->run.timed_out)
    return util::unexpected(util::ErrorKind::timeout,
                            fmt::format("sparse build did not finish within {} s", spec.timeout.count()));
  return sparse_only(r->diagnostics, gcc);
}

namespace {

struct SparseRun {
  std::vector<core::Diagnostic> findings;
  std::string command;
  std::string error; ///< infra failure
};

SparseRun sparse_findings(const core::Kernel& kernel, const fs::path& tree, const CheckRequest& req,
                          const std::vector<core::Diagnostic>* gcc_diags) {
  SparseRun out;
  BuildSpec spec;
  spec.build_cmd = req.build_cmd;
  spec.timeout = req.build_timeout;
  spec.jobs = req.jobs;
  spec.subdir = req.subdir;
  std::vector<core::Diagnostic> plain;
  if (!gcc_diags) {
    // Baseline trees have no build gate result: build them plainly first to know gcc's own lines.
    auto b = build_tree(kernel, tree, spec);
    if (!b) {
      out.error = b.error().describe();
      return out;
    }
    plain = b->diagnostics;
    gcc_diags = &plain;
  }
  auto r = sparse_build(kernel, tree, spec, *gcc_diags, &out.command);
  if (!r) {
    const auto kind = r.error().kind;
    out.error = kind == util::ErrorKind::config || kind == util::ErrorKind::timeout ? r.error().message : r.error().describe();
    return out;
  }
  out.findings = std::move(*r);
  return out;
}

class SparseGate final : public Gate {
public:
  std::string_view id() const override { return "sparse"; }

  core::GateResult run(const GateInput& in) override {
    core::GateResult g;
    g.gate = "sparse";
    g.kernel = in.kernel.release;
    auto start = std::chrono::steady_clock::now();
    const core::GateResult* build = find_result(in.earlier, "build");
    if (!build || !build->ok) {
      g.skipped = true;
      g.summary = "skipped: the build failed";
      return g;
    }
    SparseRun cur = sparse_findings(in.kernel, in.work_tree, in.request, &build->diagnostics);
    if (!cur.error.empty()) {
      g.infra_error = cur.error;
      g.summary = "sparse could not run: " + cur.error;
      return g;
    }
    std::vector<core::Diagnostic> counted = cur.findings;
    int baseline_count = -1;
    if (!in.request.baseline.empty()) {
      fs::path base_tree = in.scratch / "baseline";
      auto c = util::copy_tree(in.request.baseline, base_tree, util::SkipBuildProducts::yes);
      if (!c) {
        g.infra_error = c.error().describe();
        g.summary = "cannot copy the baseline tree";
        return g;
      }
      SparseRun base = sparse_findings(in.kernel, base_tree, in.request, nullptr);
      if (!base.error.empty()) {
        g.infra_error = "baseline: " + base.error;
        g.summary = "sparse could not run on the baseline: " + base.error;
        return g;
      }
      baseline_count = static_cast<int>(base.findings.size());
      counted = new_findings(cur.findings, base.findings);
    }
    int errors = 0;
    for (const auto& d : cur.findings)
      if (d.severity == core::Severity::error) ++errors;
    g.diagnostics = counted;
    g.details = {{"command", cur.command},
                 {"findings_total", cur.findings.size()},
                 {"counted", counted.size()},
                 {"baseline_findings", baseline_count},
                 {"errors", errors}};
    g.ok = counted.empty();
    g.summary = in.request.baseline.empty() ? fmt::format("{} sparse finding(s)", counted.size())
                                            : fmt::format("{} new sparse finding(s) ({} total, {} in the baseline)",
                                                          counted.size(), cur.findings.size(), baseline_count);
    g.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return g;
  }
};

} // namespace

std::unique_ptr<Gate> make_sparse_gate() { return std::make_unique<SparseGate>(); }

} // namespace autodriver::gate
