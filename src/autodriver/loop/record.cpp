#include "autodriver/loop/record.hpp"

#include "autodriver/gate/build_root.hpp"
#include "autodriver/store/kb.hpp"
#include "autodriver/store/run_store.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

namespace autodriver::loop {

namespace fs = std::filesystem;

nlohmann::json request_to_json(const PortRequest& r) {
  return {{"tree", fs::absolute(r.tree).string()},
          {"to", r.to},
          {"from", r.from},
          {"build_cmd", r.build_cmd},
          {"build_deps", r.build_deps},
          {"boot", r.boot},
          {"device", r.device},
          {"compat", r.compat},
          {"compat_kernels", r.compat_kernels},
          {"out", r.out.empty() ? "" : fs::absolute(r.out).string()},
          {"max_iters", r.max_iters},
          {"budget_s", r.budget.count()},
          {"build_timeout_s", r.build_timeout.count()},
          {"jobs", r.jobs},
          {"leave_out", r.leave_out},
          {"proposers", r.proposers},
          {"kb_leave_out", r.kb_leave_out},
          {"kb_path", r.kb_path.string()},
          {"store_kb", r.store_kb},
          {"rule_packs", r.rule_packs},
          {"rule_dirs",
           [&] {
             std::vector<std::string> v;
             for (const auto& d : r.rule_dirs) v.push_back(fs::absolute(d).string());
             return v;
           }()},
          {"case_id", r.case_id},
          {"from_tree", r.from_tree.empty() ? "" : fs::absolute(r.from_tree).string()},
          {"root", r.root.empty() ? "" : fs::absolute(r.root).string()}};
}

PortRequest request_from_json(const nlohmann::json& a) {
  PortRequest r;
  r.tree = a.value("tree", "");
  r.to = a.value("to", "");
  r.from = a.value("from", "");
  r.build_cmd = a.value("build_cmd", "");
  r.build_deps = a.value("build_deps", std::vector<std::string>{});
  r.boot = a.value("boot", false);
  r.device = a.value("device", "");
  r.compat = a.value("compat", false);
  r.compat_kernels = a.value("compat_kernels", std::vector<std::string>{});
  r.out = a.value("out", "");
  r.max_iters = a.value("max_iters", 6);
  r.budget = std::chrono::seconds(a.value("budget_s", 900));
  r.build_timeout = std::chrono::seconds(a.value("build_timeout_s", 0));
  r.jobs = a.value("jobs", 0);
  r.leave_out = a.value("leave_out", std::vector<std::string>{});
  r.proposers = a.value("proposers", std::vector<std::string>{});
  r.kb_leave_out = a.value("kb_leave_out", std::vector<std::string>{});
  r.kb_path = a.value("kb_path", "");
  r.store_kb = a.value("store_kb", true);
  r.rule_packs = a.value("rule_packs", true);
  for (const auto& d : a.value("rule_dirs", std::vector<std::string>{})) r.rule_dirs.emplace_back(d);
  r.case_id = a.value("case_id", "");
  r.from_tree = a.value("from_tree", "");
  r.root = a.value("root", "");
  return r;
}

namespace {

void warn(const util::Error& e) { util::log_info("run store: {}", e.message); }

/// The errors of the last target build before step index `until` in the loop's steps.
nlohmann::json errors_before(const nlohmann::json& steps, std::size_t until) {
  nlohmann::json errs = nlohmann::json::array();
  for (std::size_t i = 0; i < until && i < steps.size(); ++i)
    if (steps[i].value("step", "") == "build-target") errs = steps[i].value("errors", nlohmann::json::array());
  return errs;
}

/// KB entries: each accepted edit of a port that passed, keyed by the diagnostics it solved.
void record_kb(store::RunStore& st, std::int64_t run_id, const PortReport& rep, const PortRequest& req) {
  if (!rep.ok) return;
  std::size_t k = 0;
  for (std::size_t i = 0; i < rep.steps.size() && k < rep.accepted.size(); ++i) {
    if (rep.steps[i].value("step", "") != "accept") continue;
    const auto& acc = rep.accepted[k];
    auto errs = errors_before(rep.steps, i);
    std::vector<nlohmann::json> solved;
    for (const auto& d : errs) {
      std::string msg = d.value("message", "");
      for (const auto& sym : acc.edit.symbols)
        if (!sym.empty() && msg.find(sym) != std::string::npos) {
          solved.push_back(d);
          break;
        }
    }
    std::string patch;
    if (k < rep.patches.size())
      if (auto t = util::read_file(rep.patches[k]); t) patch = *t;
    for (const auto& d : solved) {
      store::KbEntry e;
      e.signature = store::diagnostic_signature(d);
      e.change_id = acc.edit.change_id;
      e.label = acc.edit.label;
      e.title = acc.edit.title;
      e.proposer = acc.edit.proposer;
      e.edit = propose::to_json(acc.edit);
      e.patch = patch;
      e.evidence = {{"errors_before", acc.errors_before},
                    {"errors_after", acc.errors_after},
                    {"final_build_ok", true},
                    {"integrity_ok", rep.integrity.is_object() && rep.integrity.value("ok", false)},
                    {"gates_ok", rep.gates.is_object() ? nlohmann::json(rep.gates.value("ok", false)) : nlohmann::json(nullptr)},
                    {"from", req.from},
                    {"to", req.to},
                    {"driver", fs::absolute(req.tree).filename().string()},
                    // Leave-out keys (store-kb never replays an entry to the case or files it came from).
                    {"case", req.case_id},
                    {"unit_files", req.leave_out},
                    {"packages", req.kb_leave_out}};
      e.run_id = run_id;
      if (auto r = store::add_kb_entry(st, e); !r) warn(r.error());
    }
    ++k;
  }
}

void record_artifacts(store::RunStore& st, std::int64_t run_id, const PortReport& rep, const PortRequest& req) {
  for (const auto& p : rep.patches)
    if (auto text = util::read_file(p); text)
      if (auto r = st.add_artifact(run_id, "patches/" + fs::path(p).filename().string(), "patch", *text); !r) warn(r.error());
  // One record per accepted edit: the edit and the content of the files it changed, which is
  // the checkpoint `rerun --from-step` restores.
  for (std::size_t k = 0; k < rep.accepted.size(); ++k) {
    const auto& a = rep.accepted[k];
    nlohmann::json files = nlohmann::json::object();
    for (const auto& [f, text] : a.snapshot)
      if (auto h = st.put_blob(text); h) files[f] = *h;
    nlohmann::json j = {{"edit", propose::to_json(a.edit)},
                        {"errors_before", a.errors_before},
                        {"errors_after", a.errors_after},
                        {"files", files}};
    if (auto r = st.add_artifact(run_id, fmt::format("accepted/{:03d}.json", k + 1), "accepted",
                                 j.dump(2, ' ', false, util::json_bytes));
        !r)
      warn(r.error());
  }
  if (auto r = st.add_artifact(run_id, "verdict.json", "verdict", to_json(rep, req).dump(2, ' ', false, util::json_bytes)); !r)
    warn(r.error());
}

} // namespace

util::Expected<RecordedPort> run_port_recorded(const PortRequest& request, const PortProgressFn& progress,
                                               const RecordOptions& opt) {
  auto st = store::RunStore::open(opt.store.empty() ? store::default_store_path() : opt.store);
  if (!st) return util::unexpected(st.error());
  store::RunInfo info;
  info.command = opt.command;
  info.args = request_to_json(request);
  // The root run_port will copy with the driver (--root, or found from its build files): a
  // rerun and an explain replay copy the same folder.
  if (request.root.empty())
    if (auto found = gate::find_build_root(request.tree); found && !found->subdir.empty())
      info.args["root"] = found->root.string();
  if (info.args.value("case_id", "").empty()) info.args["case_id"] = opt.case_id;
  for (const auto& [k, v] : opt.extra_args.items()) info.args[k] = v;
  info.tree = opt.extra_args.value("original_tree", fs::absolute(request.tree).string());
  info.case_id = opt.case_id;
  info.parent_run = opt.parent_run;
  auto id = st->begin_run(info);
  if (!id) return util::unexpected(id.error());
  std::int64_t run_id = *id;

  PortRequest req = request;
  if (req.case_id.empty()) req.case_id = opt.case_id;
  if (req.store_kb) req.kb_store = st->path();
  auto chained = request.on_step;
  // Commands this thread ran since the previous step belong to the next one (the builds of a
  // build/try step, spatch of a propose step). Commands of helper threads are not seen.
  nlohmann::json commands = nlohmann::json::array();
  auto previous = util::set_thread_run_observer([&](const util::RunResult& r) {
    commands.push_back({{"argv", r.argv}, {"exit", r.exit_code}, {"ms", r.elapsed.count()}, {"timed_out", r.timed_out}});
  });
  req.on_step = [&](const nlohmann::json& step) {
    nlohmann::json data = step;
    if (!commands.empty()) data["argv"] = std::exchange(commands, nlohmann::json::array());
    if (auto r = st->add_loop_step(run_id, data); !r) warn(r.error());
    if (chained) chained(step);
  };
  RecordedPort out{run_port(req, progress), run_id};
  util::set_thread_run_observer(std::move(previous));
  nlohmann::json summary;
  store::RunStatus status;
  if (!out.report) {
    bool intr = out.report.error().kind == util::ErrorKind::interrupted || util::interrupted();
    status = intr ? store::RunStatus::interrupted : store::RunStatus::error;
    summary = {{"outcome", intr ? "interrupted" : "error"}, {"error", out.report.error().describe()}};
  } else if (util::interrupted()) {
    // Builds killed by Ctrl-C look like failed builds to the loop: the outcome is not a result.
    status = store::RunStatus::interrupted;
    summary = {{"outcome", "interrupted"}, {"loop_outcome", out.report->status}, {"error", "interrupted by a signal"}};
  } else {
    const auto& rep = *out.report;
    status = rep.ok ? store::RunStatus::ok : store::RunStatus::failed;
    summary = {{"outcome", rep.status},
               {"ok", rep.ok},
               {"initial_errors", rep.initial_errors},
               {"final_errors", rep.final_errors},
               {"accepted", rep.accepted.size()},
               {"remaining", rep.remaining},
               {"integrity", rep.integrity},
               {"gates_ok", rep.gates.is_object() ? nlohmann::json(rep.gates.value("ok", false)) : nlohmann::json(nullptr)},
               {"elapsed_ms", rep.elapsed.count()}};
    record_artifacts(*st, run_id, rep, request);
    record_kb(*st, run_id, rep, req);
  }
  if (auto r = st->end_run(run_id, status, summary); !r) warn(r.error());
  return out;
}

} // namespace autodriver::loop
