// `autodriver runs`, `show RUN`, `explain RUN`, `rerun RUN --from-step N`: the run store.

#include "autodriver/cli/commands.hpp"
#include "autodriver/loop/record.hpp"
#include "autodriver/loop/replay.hpp"
#include "autodriver/store/explain.hpp"
#include "autodriver/store/run_store.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <iostream>

namespace autodriver::cli {

namespace fs = std::filesystem;

std::filesystem::path& store_path_option() {
  static std::filesystem::path p;
  return p;
}

namespace {

fs::path store_path() { return store_path_option().empty() ? store::default_store_path() : store_path_option(); }

store::RunStore open_store() {
  auto st = store::RunStore::open(store_path());
  if (!st) throw util::FatalError{st.error()};
  return std::move(*st);
}

/// RUN: a number or "last".
std::int64_t resolve_run(store::RunStore& st, const std::string& arg) {
  if (arg == "last") {
    auto id = st.last_run_id();
    if (!id) throw util::FatalError{id.error()};
    if (!*id)
      throw util::FatalError{
          util::make_error(util::ErrorKind::not_found, fmt::format("{}: no runs recorded yet", st.path().string()))};
    return **id;
  }
  char* end = nullptr;
  long long v = std::strtoll(arg.c_str(), &end, 10);
  if (arg.empty() || *end || v <= 0)
    throw util::FatalError{
        util::make_error(util::ErrorKind::config, fmt::format("RUN must be a run id or `last`, not `{}`", arg))};
  return v;
}

store::RunRow load_run(store::RunStore& st, std::int64_t id) {
  auto r = st.run(id);
  if (!r) throw util::FatalError{r.error()};
  if (!*r)
    throw util::FatalError{util::make_error(util::ErrorKind::not_found,
                                            fmt::format("run {} is not in {} (see `autodriver runs`)", id, st.path().string()))};
  return **r;
}

std::vector<store::StepRow> load_steps(store::RunStore& st, std::int64_t id) {
  auto s = st.steps(id);
  if (!s) throw util::FatalError{s.error()};
  return *s;
}

nlohmann::json load_verdict(store::RunStore& st, std::int64_t id) {
  auto arts = st.artifacts(id);
  if (!arts) return nullptr;
  for (const auto& a : *arts)
    if (a.kind == "verdict")
      if (auto b = st.blob(a.hash); b && *b) return nlohmann::json::parse(**b, nullptr, false);
  return nullptr;
}

std::string step_line(const store::StepRow& s) {
  std::string what;
  const auto& in = s.input;
  const auto& out = s.output;
  if (s.kind.starts_with("build")) {
    what = fmt::format("{} {}: {} error(s)", in.value("kernel", ""), out.value("ok", false) ? "ok" : "fails",
                       s.diagnostics.is_array() ? s.diagnostics.size() : 0);
  } else if (s.kind == "propose") {
    what = fmt::format("{} edit(s)", out.value("edits", 0));
  } else if (s.kind == "try") {
    // errors_after -1: the edits changed no file (a semantic patch that matched nothing), nothing was built.
    const int after = out.value("errors_after", 0);
    what = fmt::format(
        "{}{}: {}", in.contains("change") ? in.value("change", "") : fmt::format("{} changes combined", in.value("changes", 0)),
        in.contains("rank") ? fmt::format(" (alt {})", in.value("rank", 0)) : "",
        after < 0 ? std::string("changed no file, not built")
                  : fmt::format("{} -> {} error(s)", in.value("errors_before", 0), after));
  } else if (s.kind == "accept") {
    what = fmt::format("{}: {}", in.value("change", ""), out.value("title", ""));
  } else if (s.kind == "reject") {
    what = in.value("change", "");
  } else if (s.kind == "integrity") {
    what = fmt::format("{} ({} violation(s))", out.value("ok", false) ? "ok" : "rejected", out.value("violations", 0));
  } else if (s.kind == "crash" && out.contains("title")) { // a port's boot test crashed the target
    what = out.value("title", "");
  } else if (s.kind == "parse" && out.contains("reports")) {
    const auto& r = out["reports"];
    what = r.is_array() && !r.empty() ? fmt::format("{} report(s): {}", r.size(), r[0].get<std::string>()) : "no report";
  } else if (s.kind == "localize" && out.contains("localized")) {
    const auto& l = out["localized"];
    what = l.is_array() && !l.empty()
               ? fmt::format("{}:{} in {}()", l[0].value("file", ""), l[0].value("line", 0), l[0].value("function", ""))
               : "outside the driver";
  } else if (s.kind == "hypothesize" && out.contains("hypotheses")) {
    const auto& h = out["hypotheses"];
    what = h.is_array() && !h.empty() ? h[0].value("statement", "") : "none";
  } else if (s.kind == "agent") { // the LLM generator's round
    const auto attempts = in.value("attempts", nlohmann::json::array());
    what = fmt::format("{}: {} edit(s), {} call(s), {} tool call(s){}{}", in.value("model", ""), out.value("edits", 0),
                       in.value("calls", 0), in.value("tool_calls", 0),
                       attempts.empty() ? std::string() : "; " + store::agent_attempts_summary(attempts),
                       in.contains("error") ? " - " + in.value("error", "") : std::string());
  } else if (s.kind == "repair" && out.contains("status")) {
    what = out.value("status", "");
  } else {
    what = out.value("ok", true) ? "ok" : "failed";
  }
  std::string tokens = s.tokens_in || s.tokens_out ? fmt::format(" tokens {}/{}", s.tokens_in, s.tokens_out) : "";
  return fmt::format("{:>4} {:<12} {:<20} {:>8.1f}s{}  {}", s.seq, s.kind, s.component, s.elapsed_ms / 1000.0, tokens, what);
}

int run_list(const store::RunFilter& f, bool json) {
  auto st = open_store();
  auto rows = st.list_runs(f);
  if (!rows) throw util::FatalError{rows.error()};
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : *rows) a.push_back(store::to_json(r));
    std::cout << nlohmann::json{{"schema", "autodriver.runs"}, {"schema_version", 1}, {"store", st.path().string()}, {"runs", a}}
                     .dump(2, ' ', false, util::json_bytes)
              << "\n";
    return k_exit_ok;
  }
  for (const auto& r : *rows) {
    std::string outcome = r.summary.is_object() ? r.summary.value("outcome", "") : "";
    fmt::print("{:>5}  {:<11} {:<19} {:<6} {:<20} {:>4} steps  {}{}\n", r.id, r.status, r.started_at.substr(0, 19), r.command,
               outcome, r.steps, r.case_id.empty() ? r.tree : r.case_id,
               r.parent_run ? fmt::format("  (rerun of {})", *r.parent_run) : "");
  }
  return k_exit_ok;
}

int run_show(const std::string& arg, bool json) {
  auto st = open_store();
  auto id = resolve_run(st, arg);
  auto run = load_run(st, id);
  auto steps = load_steps(st, id);
  auto arts = st.artifacts(id);
  if (!arts) throw util::FatalError{arts.error()};
  if (json) {
    nlohmann::json s = nlohmann::json::array(), a = nlohmann::json::array();
    for (const auto& x : steps) s.push_back(store::to_json(x));
    for (const auto& x : *arts) a.push_back({{"name", x.name}, {"kind", x.kind}, {"sha256", x.hash}, {"size", x.size}});
    std::cout << nlohmann::json{{"schema", "autodriver.run"},
                                {"schema_version", 1},
                                {"run", store::to_json(run)},
                                {"steps", s},
                                {"artifacts", a}}
                     .dump(2, ' ', false, util::json_bytes)
              << "\n";
    return k_exit_ok;
  }
  fmt::print("run {}: {} {} ({})\n", run.id, run.command, run.status,
             run.summary.is_object() ? run.summary.value("outcome", "") : "");
  fmt::print("  tree: {}{}\n  started {} ended {} on {} (pid {})\n", run.tree, run.case_id.empty() ? "" : "  case " + run.case_id,
             run.started_at, run.ended_at.empty() ? "-" : run.ended_at, run.host, run.pid);
  if (run.parent_run) fmt::print("  rerun of run {} from step {}\n", *run.parent_run, run.args.value("from_step", 0));
  std::int64_t tin = 0, tout = 0;
  for (const auto& s : steps) {
    fmt::print("{}\n", step_line(s));
    for (const auto& d : s.diagnostics)
      if (d.is_object()) fmt::print("       ! {}:{}: {}\n", d.value("file", ""), d.value("line", 0), d.value("message", ""));
    tin += s.tokens_in;
    tout += s.tokens_out;
  }
  fmt::print("  {} step(s), tokens in/out {}/{}\n", steps.size(), tin, tout);
  for (const auto& a : *arts) fmt::print("  artifact {} ({} bytes, sha256 {})\n", a.name, a.size, a.hash.substr(0, 12));
  return k_exit_ok;
}

struct ExplainOptions {
  std::string run;
  bool json = false;
  bool no_replay = false;
  int replays = 2;
  int replay_timeout_s = 120;
};

int run_explain(const ExplainOptions& o) {
  if (o.json && util::log_level() != util::LogLevel::debug) util::set_log_level(util::LogLevel::quiet);
  bool json = o.json;
  auto st = open_store();
  auto id = resolve_run(st, o.run);
  auto run = load_run(st, id);
  auto steps = load_steps(st, id);
  auto ex = store::explain_run(run, steps, load_verdict(st, id), &st);
  ex.doc["replays"] = 0;
  if (!o.no_replay && o.replays > 0) {
    loop::ReplayOptions ro;
    ro.max_replays = o.replays;
    ro.build_timeout = std::chrono::seconds(o.replay_timeout_s);
    ro.total = std::chrono::seconds(o.replay_timeout_s * 2 * o.replays);
    loop::replay_attributions(st, run, ex.doc, ro);
  }
  if (json) std::cout << ex.doc.dump(2, ' ', false, util::json_bytes) << "\n";
  else std::cout << store::render_explanation(ex.doc);
  return k_exit_ok;
}

struct RerunOptions {
  std::string run;
  std::int64_t from_step = 0;
  fs::path out;
  std::vector<std::string> proposers;
  int max_iters = 0;
  int budget_s = 0;
  std::vector<std::string> with; ///< KEY=VALUE overrides of the recorded options
  bool json = false;
};

/// `--with KEY=VALUE`: the option names of `port`, applied to the recorded args (runs.args keys).
nlohmann::json apply_with(nlohmann::json args, const std::vector<std::string>& with, nlohmann::json& overrides) {
  enum class Type { text, number, flag, list };
  struct Key {
    std::string_view name, arg;
    Type type;
  };
  static const std::vector<Key> k_keys = {
      {"proposer", "proposers", Type::list},
      {"max-iters", "max_iters", Type::number},
      {"budget-s", "budget_s", Type::number},
      {"build-timeout", "build_timeout_s", Type::number},
      {"build-cmd", "build_cmd", Type::text},
      {"build-deps", "build_deps", Type::list},
      {"from", "from", Type::text},
      {"to", "to", Type::text},
      {"device", "device", Type::text},
      {"boot", "boot", Type::flag},
      {"compat", "compat", Type::flag},
      {"store-kb", "store_kb", Type::flag},
      {"leave-out", "leave_out", Type::list},
      {"kb", "kb_path", Type::text},
      {"kb-leave-out", "kb_leave_out", Type::list},
      {"rule-packs", "rule_packs", Type::flag},
      {"rules", "rule_dirs", Type::list},
  };
  auto bad = [](const std::string& what) {
    std::string names;
    for (const auto& k : k_keys) names += (names.empty() ? "" : ", ") + std::string(k.name);
    return util::FatalError{
        util::make_error(util::ErrorKind::config, fmt::format("--with {}: expected KEY=VALUE with KEY one of {}", what, names))};
  };
  for (const auto& w : with) {
    auto eq = w.find('=');
    if (eq == std::string::npos) throw bad(w);
    std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    auto k = std::find_if(k_keys.begin(), k_keys.end(), [&](const Key& x) { return x.name == key; });
    if (k == k_keys.end()) throw bad(w);
    nlohmann::json v;
    switch (k->type) {
    case Type::text: v = value; break;
    case Type::number: {
      char* end = nullptr;
      long n = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end || n <= 0) throw bad(w + " (a positive number)");
      v = n;
      break;
    }
    case Type::flag:
      if (value == "true" || value == "yes" || value == "1") v = true;
      else if (value == "false" || value == "no" || value == "0") v = false;
      else throw bad(w + " (true or false)");
      break;
    case Type::list:
      v = nlohmann::json::array();
      for (std::size_t pos = 0; pos <= value.size();) {
        auto comma = std::min(value.find(',', pos), value.size());
        if (comma > pos) v.push_back(value.substr(pos, comma - pos));
        pos = comma + 1;
      }
      break;
    }
    args[std::string(k->arg)] = v;
    overrides[key] = v;
  }
  return args;
}

int run_rerun(const RerunOptions& o) {
  std::int64_t id = 0, checkpoint = 0;
  if (o.json && util::log_level() != util::LogLevel::debug) util::set_log_level(util::LogLevel::quiet);
  loop::PortRequest req;
  fs::path store = store_path();
  fs::path original;
  fs::path recorded_root;
  nlohmann::json overrides = nlohmann::json::object();
  std::optional<util::TempDir> base;
  {
    auto st = open_store();
    id = resolve_run(st, o.run);
    auto run = load_run(st, id);
    if (run.command != "port" && run.command != "rerun" && run.command != "bench")
      throw util::FatalError{util::make_error(util::ErrorKind::config,
                                              fmt::format("run {} is a `{}` run: only port runs can be rerun", id, run.command))};
    auto steps = load_steps(st, id);
    if (o.from_step < 0 || o.from_step > static_cast<std::int64_t>(steps.size()))
      throw util::FatalError{
          util::make_error(util::ErrorKind::config,
                           fmt::format("--from-step {}: run {} has steps 1..{} (0 = the start)", o.from_step, id, steps.size()))};
    // The original run's effective options (kernels, build command, proposers, budgets,
    // leave-outs), then --with and the shortcut flags on top.
    req = loop::request_from_json(apply_with(run.args, o.with, overrides));
    req.from_tree.clear(); // the recorded one was a temporary copy; set again below
    original = run.args.value("original_tree", run.args.value("tree", ""));
    if (!fs::is_directory(original))
      throw util::FatalError{util::make_error(
          util::ErrorKind::not_found, fmt::format("{}: the run's driver tree is gone; rerun needs it", original.string()))};
    // Checkpoint: the original tree with the files of every edit accepted up to the step.
    auto dir = util::TempDir::create(util::scratch_root(), "rerun-");
    if (!dir) throw util::FatalError{dir.error()};
    base.emplace(std::move(*dir));
    // A driver copied with a root (a sibling folder its Makefile compiles): the root is copied and
    // the checkpoint's edits are paths in it.
    recorded_root = run.args.value("root", "");
    const fs::path copied = recorded_root.empty() ? original : recorded_root;
    const fs::path sub = recorded_root.empty() ? fs::path() : original.lexically_relative(recorded_root);
    fs::path tree = base->path() / copied.filename();
    if (auto c = util::copy_tree(copied, tree, util::SkipBuildProducts::yes); !c) throw util::FatalError{c.error()};
    int applied = 0;
    auto cp = loop::write_checkpoint(st, id, o.from_step, tree, applied);
    if (!cp) throw util::FatalError{cp.error()};
    checkpoint = *cp;
    (void)steps;
    req.tree = sub.empty() ? tree : tree / sub;
    req.root = sub.empty() ? fs::path() : tree;
    req.out = o.out;
    // A checkpoint tree carries target-kernel edits, so it no longer builds on the old kernel:
    // the old kernel builds the original tree instead, and --from (rules learned from the old
    // tree) is kept.
    if (applied > 0 && !req.from.empty()) {
      fs::path pristine = base->path() / "from" / copied.filename();
      if (auto c = util::copy_tree(copied, pristine, util::SkipBuildProducts::yes); !c) throw util::FatalError{c.error()};
      req.from_tree = sub.empty() ? pristine : pristine / sub;
    }
    if (!o.proposers.empty()) {
      req.proposers = o.proposers;
      overrides["proposer"] = o.proposers;
    }
    if (o.max_iters > 0) {
      req.max_iters = o.max_iters;
      overrides["max-iters"] = o.max_iters;
    }
    if (o.budget_s > 0) {
      req.budget = std::chrono::seconds(o.budget_s);
      overrides["budget-s"] = o.budget_s;
    }
  }
  loop::RecordOptions ro;
  ro.store = store;
  ro.command = "rerun";
  ro.parent_run = id;
  ro.extra_args = {
      {"from_step", o.from_step}, {"checkpoint_step", checkpoint}, {"original_tree", original.string()}, {"with", overrides}};
  if (!recorded_root.empty()) ro.extra_args["root"] = recorded_root.string(); // not the temporary copy
  ro.case_id = req.case_id;
  auto rec = loop::run_port_recorded(
      req, [](const std::string& m) { util::log_info("{}", m); }, ro);
  if (!rec) throw util::FatalError{rec.error()};
  if (!rec->report) {
    std::fprintf(stderr, "autodriver: error: run %lld: %s\n", static_cast<long long>(rec->run_id),
                 rec->report.error().message.c_str());
    return rec->report.error().kind == util::ErrorKind::interrupted ? k_exit_interrupted : k_exit_error;
  }
  auto j = loop::to_json(*rec->report, req);
  j["run"] = rec->run_id;
  j["parent_run"] = id;
  auto written = util::write_file_atomic(req.out / "verdict.json", j.dump(2, ' ', false, util::json_bytes) + "\n");
  if (!written) {
    std::fprintf(stderr, "autodriver: error: %s\n", written.error().describe().c_str());
    return k_exit_error;
  }
  if (o.json) std::cout << j.dump(2, ' ', false, util::json_bytes) << "\n";
  else
    fmt::print("run {} (rerun of {} from step {}): {} ({} -> {} error(s))\n", rec->run_id, id, checkpoint, rec->report->status,
               rec->report->initial_errors, rec->report->final_errors);
  return rec->report->ok ? k_exit_ok : k_exit_failed;
}

} // namespace

Command runs_command() {
  return {"runs", "List recorded runs (newest first) from the run store", [](CLI::App& sub) -> std::function<int()> {
            auto f = std::make_shared<store::RunFilter>();
            auto status = std::make_shared<std::string>();
            auto case_id = std::make_shared<std::string>();
            auto since = std::make_shared<std::string>();
            auto until = std::make_shared<std::string>();
            auto json = std::make_shared<bool>(false);
            sub.add_option("--status", *status, "Only runs with this status")
                ->check(CLI::IsMember({"running", "ok", "failed", "interrupted", "error"}));
            sub.add_option("--case", *case_id, "Only runs of this bench case");
            sub.add_option("--since", *since, "Started at or after (UTC, e.g. 2025-06-01 or 2025-06-01T12:00)");
            sub.add_option("--until", *until, "Started before (UTC)");
            sub.add_option("-n,--limit", f->limit, "At most N runs");
            sub.add_flag("--json", *json, "Print JSON");
            return [=]() -> int {
              if (!status->empty()) f->status = *status;
              if (!case_id->empty()) f->case_id = *case_id;
              if (!since->empty()) f->since = *since;
              if (!until->empty()) f->until = *until;
              return run_list(*f, *json);
            };
          }};
}

Command show_command() {
  return {"show", "Show a recorded run: each step, what it changed, what each gate said, time and tokens",
          [](CLI::App& sub) -> std::function<int()> {
            auto run = std::make_shared<std::string>();
            auto json = std::make_shared<bool>(false);
            sub.add_option("run", *run, "Run id or `last`")->required();
            sub.add_flag("--json", *json, "Print JSON");
            return [=]() -> int { return run_show(*run, *json); };
          }};
}

Command explain_command() {
  return {"explain", "Find the step where a recorded run went wrong, what caused it, and how to recover",
          [](CLI::App& sub) -> std::function<int()> {
            auto o = std::make_shared<ExplainOptions>();
            sub.add_option("run", o->run, "Run id or `last`")->required();
            sub.add_flag("--json", o->json, "Print JSON");
            sub.add_flag("--no-replay", o->no_replay, "Recorded rows only: do not rebuild trees to confirm attributions");
            sub.add_option("--replays", o->replays, "Attributions confirmed by rebuilding, at most")->capture_default_str();
            sub.add_option("--replay-timeout-s", o->replay_timeout_s, "Timeout of each replay build")->capture_default_str();
            return [=]() -> int { return run_explain(*o); };
          }};
}

Command rerun_command() {
  return {"rerun",
          "Replay a recorded port from a checkpoint with other proposers, iterations or budget (a new run linked to the old)",
          [](CLI::App& sub) -> std::function<int()> {
            auto o = std::make_shared<RerunOptions>();
            sub.add_option("run", o->run, "Run id or `last`")->required();
            sub.add_option("--from-step", o->from_step,
                           "Start from the tree after this step (its accepted edits kept; 0 = the start)")
                ->required();
            sub.add_option("-o,--out", o->out, "Output directory (as for port)")->required();
            sub.add_option("--proposer", o->proposers, "Use only these proposers (repeatable)");
            sub.add_option("--max-iters", o->max_iters, "Iterations of the loop");
            sub.add_option("--budget-s", o->budget_s, "Wall-time budget in seconds");
            sub.add_option("--with", o->with,
                           "Override a recorded option, KEY=VALUE with port's option names: proposer=a,b "
                           "max-iters=N budget-s=S build-cmd=CMD from=K to=K boot=true store-kb=false ... (repeatable)");
            sub.add_flag("--json", o->json, "Print the versioned JSON verdict");
            return [=]() -> int { return run_rerun(*o); };
          }};
}

} // namespace autodriver::cli
