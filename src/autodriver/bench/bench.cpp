#include "autodriver/bench/bench.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/gate/check.hpp"
#include "autodriver/loop/port.hpp"
#include "autodriver/loop/record.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>

namespace autodriver::bench {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

std::string normalize_c(const std::string& text) {
  std::string out;
  for (const auto& t : csrc::tokenize(text)) {
    if (!out.empty()) out += ' ';
    if (t.kind == csrc::TokKind::pp_line) {
      // Directives: collapse inner whitespace.
      for (const auto& w : util::split_words(t.text)) out += w + " ";
    } else {
      out += t.text;
    }
  }
  return out;
}

namespace {

struct Similarity {
  bool exact = true;
  bool normalized = true;
  int files = 0;
};

Similarity compare_golden(const fs::path& ported, const fs::path& golden) {
  Similarity s;
  for (const auto& rel : util::list_files(golden)) {
    auto ext = rel.extension().string();
    if (ext != ".c" && ext != ".h") continue;
    ++s.files;
    auto g = util::read_file(golden / rel);
    auto p = util::read_file(ported / rel);
    if (!g || !p) {
      s.exact = s.normalized = false;
      continue;
    }
    if (*g != *p) s.exact = false;
    if (normalize_c(*g) != normalize_c(*p)) s.normalized = false;
  }
  if (s.files == 0) s.exact = s.normalized = false;
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

nlohmann::json run_case(const fs::path& case_dir, const nlohmann::json& meta, const BenchRequest& req) {
  std::string id = meta.value("id", case_dir.filename().string());
  nlohmann::json row = {{"v", 1},
                        {"id", id},
                        {"origin", meta.value("origin", "")},
                        {"subsystem", meta.value("subsystem", "")},
                        {"split", meta.value("split", "")},
                        {"change_types", meta.value("change_types", nlohmann::json::array())}};
  auto start = std::chrono::steady_clock::now();
  loop::PortRequest pr;
  pr.tree = case_dir / "before";
  pr.to = meta["to"].value("line", "6.12");
  if (req.use_from) pr.from = meta["from"].value("line", "6.1");
  pr.out = req.out / "ports" / id;
  pr.budget = req.budget;
  pr.build_timeout = req.build_timeout;
  // Cases at a time share the machine's CPUs instead of each taking all of them.
  pr.jobs = std::max(1, util::available_cpus() / std::max(1, req.jobs));
  const auto& unit = meta.value("unit", nlohmann::json::object());
  // The case's own build command, unless it is plain kbuild M= (the default).
  std::string bc = unit.value("build_command", "");
  if (!bc.empty() && bc.find("M=<before>") == std::string::npos) {
    for (auto pos = bc.find("<before>"); pos != std::string::npos; pos = bc.find("<before>")) bc.replace(pos, 8, "{tree}");
    pr.build_cmd = bc;
  }
  // Leave-one-out: the case's own files (old and new trees) are never learned from.
  std::string dir = unit.value("dir", "");
  for (const auto& f : unit.value("files", std::vector<std::string>{}))
    pr.leave_out.push_back(dir.empty() || dir == "." ? f : dir + "/" + f);
  if (auto g = meta.value("golden", nlohmann::json::object()); g.contains("path")) {
    std::string gp = g.value("path", "");
    for (const auto& f : unit.value("files", std::vector<std::string>{})) pr.leave_out.push_back(gp + "/" + f);
  }
  if (unit.contains("package")) pr.kb_leave_out.push_back(unit.value("package", ""));
  // store-kb: entries recorded from this case (its id, its files, its package) are left out too.
  pr.store_kb = req.store_kb;
  pr.rule_packs = req.rule_packs;
  pr.rule_dirs = req.rule_dirs;
  pr.llm = req.llm;
  pr.reference = req.reference;
  pr.case_id = id;
  const auto& runtime = meta.value("runtime", nlohmann::json::object());
  std::string rkind = runtime.value("kind", "none");
  bool testable = rkind == "device" || rkind == "virtual";
  if (req.boot && testable) {
    pr.boot = true;
    if (rkind == "device") pr.device = runtime.value("qemu_device", "");
    // Probing is expected only where the original driver probes: QEMU's model of a device may be
    // a variant the driver refuses (an enhanced revision another driver handles). The original
    // tree is booted on its own kernel once; if it loads but does not bind, the port must load.
    if (!pr.device.empty() && !meta["from"].value("line", "").empty()) {
      gate::CheckRequest base;
      base.tree = case_dir / "before";
      base.kernels = {meta["from"].value("line", "")};
      base.sparse = false;
      base.boot = true;
      base.device = pr.device;
      base.build_cmd = pr.build_cmd;
      if (auto chk = gate::run_check(base, nullptr); chk) {
        auto j = gate::to_json(*chk, base);
        std::string outcome;
        if (j.contains("gates") && j["gates"].contains("boot"))
          for (const auto& [rel, g] : j["gates"]["boot"]["by_kernel"].items()) outcome = g["details"].value("outcome", "");
        row["probe_baseline"] = outcome;
        if (outcome == "not-bound") pr.device.clear();
      }
    }
    row["probe_expected"] = !pr.device.empty();
  }
  std::error_code ec;
  fs::remove_all(pr.out, ec);
  loop::RecordOptions record; // each case is a run in the run store (one connection per case)
  record.store = req.store;
  record.command = "bench";
  record.case_id = id;
  auto rec = loop::run_port_recorded(pr, nullptr, record);
  if (!rec) {
    row["status"] = "error";
    row["error"] = rec.error().describe();
    row["compiled"] = false;
    return row;
  }
  row["run"] = rec->run_id;
  auto& rep = rec->report;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row["seconds"] = secs;
  row["runtime_testable"] = testable;
  if (!rep) {
    row["status"] = "error";
    row["error"] = rep.error().describe();
    row["compiled"] = false;
    return row;
  }
  bool compiled = rep->final_errors == 0 && rep->status != "from-fails";
  bool integrity_ok = rep->integrity.is_object() && rep->integrity.value("ok", false);
  row["status"] = rep->status;
  row["compiled"] = compiled;
  row["integrity_ok"] = integrity_ok;
  row["compiled_and_integrity"] = compiled && integrity_ok;
  row["integrity_rejected"] = compiled && !integrity_ok;
  row["initial_errors"] = rep->initial_errors;
  row["final_errors"] = rep->final_errors;
  if (rep->llm.is_object())
    row["llm"] = {{"calls", rep->llm.value("calls", 0)},
                  {"tokens", rep->llm.value("prompt_tokens", 0L) + rep->llm.value("completion_tokens", 0L)},
                  {"ms", rep->llm.value("ms", 0L)},
                  {"cost", rep->llm.value("cost", 0.0)}};
  row["accepted"] = nlohmann::json::array();
  for (const auto& a : rep->accepted) row["accepted"].push_back({{"proposer", a.edit.proposer}, {"title", a.edit.title}});
  if (pr.boot) {
    bool loaded = compiled && integrity_ok && rep->gates.is_object() && rep->gates.value("ok", false);
    row["loaded"] = loaded;
    // The unchanged driver does not load on its own kernel either: not load-testable here.
    row["load_untestable"] = rep->gates.is_object() && rep->gates.contains("baseline");
    if (rep->gates.is_object())
      for (const auto& [rel, g] : rep->gates["gates"]["boot"]["by_kernel"].items())
        row["boot_outcome"] = g["details"].value("outcome", "");
  }
  if (fs::exists(case_dir / "golden")) {
    auto sim = compare_golden(pr.out / "tree", case_dir / "golden");
    row["golden_exact"] = compiled && sim.exact;
    row["golden_normalized"] = compiled && sim.normalized;
  }
  auto j = loop::to_json(*rep, pr);
  (void)util::write_file_atomic(pr.out / "verdict.json", j.dump(2, ' ', false, util::json_bytes) + "\n");
  return row;
}

} // namespace

/// The report over the selected cases' result rows.
static nlohmann::json aggregate(const BenchRequest& req, const std::vector<std::pair<fs::path, nlohmann::json>>& todo,
                                std::map<std::string, nlohmann::json>& done) {
  int n = 0, compiled = 0, comp_integ = 0, rejected = 0, testable = 0, loaded = 0, with_golden = 0, exact = 0, norm = 0;
  int untestable = 0; // runtime-testable cases whose unchanged driver does not load on FROM either
  std::vector<double> times;
  std::map<std::string, std::array<int, 2>> per_type, per_origin;
  long llm_calls = 0, llm_tokens = 0, llm_ms = 0, llm_tokens_solved = 0; // --llm: over the cases, and the solved ones
  double llm_cost = 0, llm_cost_solved = 0;
  for (const auto& [dir, meta] : todo) {
    std::string id = meta.value("id", dir.filename().string());
    if (!done.count(id)) continue;
    const auto& r = done[id];
    ++n;
    bool ok = r.value("compiled_and_integrity", false);
    compiled += r.value("compiled", false);
    comp_integ += ok;
    rejected += r.value("integrity_rejected", false);
    if (r.value("runtime_testable", false)) {
      if (r.value("load_untestable", false)) {
        ++untestable;
      } else {
        ++testable;
        loaded += r.value("loaded", false);
      }
    }
    if (r.contains("golden_exact")) {
      ++with_golden;
      exact += r.value("golden_exact", false);
      norm += r.value("golden_normalized", false);
    }
    times.push_back(r.value("seconds", 0.0));
    for (const auto& t : r.value("change_types", std::vector<std::string>{})) {
      per_type[t][0]++;
      per_type[t][1] += ok;
    }
    per_origin[r.value("origin", "")][0]++;
    per_origin[r.value("origin", "")][1] += ok;
    if (auto l = r.find("llm"); l != r.end() && l->is_object()) {
      llm_calls += l->value("calls", 0);
      llm_tokens += l->value("tokens", 0L);
      llm_ms += l->value("ms", 0L);
      llm_cost += l->value("cost", 0.0);
      if (ok) llm_tokens_solved += l->value("tokens", 0L);
      if (ok) llm_cost_solved += l->value("cost", 0.0);
    }
  }
  nlohmann::json types = nlohmann::json::object(), origins = nlohmann::json::object();
  for (const auto& [t, v] : per_type) types[t] = {{"cases", v[0]}, {"ok", v[1]}};
  for (const auto& [t, v] : per_origin) origins[t] = {{"cases", v[0]}, {"ok", v[1]}};
  auto pct = [](int a, int b) { return b ? 100.0 * a / b : 0.0; };
  nlohmann::json report = {
      {"schema", "autodriver.bench"},
      {"schema_version", k_bench_schema_version},
      {"corpus", fs::absolute(req.corpus).string()},
      {"split", req.split.empty() ? "all" : req.split},
      {"use_from", req.use_from},
      {"reference", req.reference},
      {"cases", n},
      {"compiled", compiled},
      {"compiled_and_integrity", comp_integ},
      {"compile_rate_pct", pct(comp_integ, n)},
      {"integrity_rejections", rejected},
      {"runtime_testable", testable},
      {"load_untestable", untestable},
      {"loaded", loaded},
      {"load_rate_pct", pct(loaded, testable)},
      {"with_golden", with_golden},
      {"golden_exact", exact},
      {"golden_normalized", norm},
      {"median_seconds", median(times)},
      {"llm", !req.llm.on() ? nlohmann::json(nullptr)
                            : nlohmann::json{{"model", req.llm.model},
                                             {"calls", llm_calls},
                                             {"tokens", llm_tokens},
                                             {"ms", llm_ms},
                                             {"tokens_per_case", n ? llm_tokens / n : 0},
                                             {"tokens_per_solved_case", comp_integ ? llm_tokens_solved / comp_integ : 0},
                                             {"cost", llm_cost},
                                             {"cost_per_case", n ? llm_cost / n : 0.0},
                                             {"cost_per_solved_case", comp_integ ? llm_cost_solved / comp_integ : 0.0}}},
      {"per_change_type", types},
      {"per_origin", origins},
      {"paper", {{"name", "AutoDriver (LLM agents)"}, {"compile_rate_pct", 56.4}, {"boot", "27/55"}, {"minutes_per_case", 12}}}};
  return report;
}

util::Expected<nlohmann::json> run_bench(const BenchRequest& req, const BenchProgressFn& progress) {
  std::error_code ec;
  fs::path cases_dir = req.corpus / "cases";
  if (!fs::is_directory(cases_dir, ec))
    return unexpected(ErrorKind::not_found,
                      fmt::format("{}: not a corpus (no cases/ directory; see docs/case-format.md)", req.corpus.string()));
  if (!req.split.empty() && req.split != "dev" && req.split != "test")
    return unexpected(ErrorKind::config, "--split must be dev or test");
  fs::create_directories(req.out, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", req.out.string(), ec.message()));

  // Resume: results.jsonl rows already there are kept, their cases not rerun.
  fs::path results = req.out / "results.jsonl";
  std::map<std::string, nlohmann::json> done;
  if (auto text = util::read_file(results); text)
    for (auto line : util::split_lines(*text)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("id")) done[j["id"].get<std::string>()] = j;
    }

  std::vector<std::pair<fs::path, nlohmann::json>> todo;
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(cases_dir, ec)) {
    std::string id = e.path().filename().string();
    if (id.starts_with(".")) continue;
    if (!req.only.empty() && std::none_of(req.only.begin(), req.only.end(), [&](const auto& p) { return id.starts_with(p); }))
      continue;
    auto text = util::read_file(e.path() / "metadata.json");
    if (!text) continue;
    auto meta = nlohmann::json::parse(*text, nullptr, false);
    if (!meta.is_object()) continue;
    if (meta.value("schema_version", 0) > 1)
      return unexpected(ErrorKind::parse, fmt::format("{}: metadata schema_version {} is newer than this autodriver "
                                                      "understands (upgrade autodriver)",
                                                      (e.path() / "metadata.json").string(), meta.value("schema_version", 0)));
    if (meta.value("origin", "") == "mined") continue; // mined cases have no kernel targets to port between
    if (!req.split.empty() && meta.value("split", "") != req.split) continue;
    ids.push_back(id);
    todo.push_back({e.path(), meta});
  }
  std::sort(todo.begin(), todo.end(), [](auto& a, auto& b) { return a.first < b.first; });
  if (req.limit > 0 && static_cast<int>(todo.size()) > req.limit) todo.resize(static_cast<std::size_t>(req.limit));

  std::mutex mu;
  std::atomic<std::size_t> next{0};
  std::size_t total = todo.size(), finished = 0;
  auto worker = [&]() {
    while (true) {
      std::size_t i = next++;
      if (i >= todo.size() || util::interrupted()) return;
      const auto& [dir, meta] = todo[i];
      std::string id = meta.value("id", dir.filename().string());
      {
        std::lock_guard lock(mu);
        if (done.count(id)) {
          ++finished;
          continue;
        }
      }
      auto row = run_case(dir, meta, req);
      if (util::interrupted() && row.value("status", "") == "error") return; // not a result: redo next time
      std::lock_guard lock(mu);
      done[id] = row;
      ++finished;
      // Append + flush one line per case: a killed run keeps every finished case.
      std::string line = row.dump(-1, ' ', false, util::json_bytes) + "\n";
      if (FILE* f = std::fopen(results.c_str(), "a")) {
        std::fwrite(line.data(), 1, line.size(), f);
        std::fflush(f);
        fsync(fileno(f));
        std::fclose(f);
      }
      if (progress)
        progress(
            fmt::format("[{}/{}] {}: {} ({:.0f} s)", finished, total, id, row.value("status", ""), row.value("seconds", 0.0)));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, req.jobs); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (util::interrupted())
    return unexpected(ErrorKind::interrupted, "interrupted: finished cases are kept in " + results.string());

  nlohmann::json report = aggregate(req, todo, done);
  for (auto w : {util::write_file_atomic(req.out / "report.json", report.dump(2, ' ', false, util::json_bytes) + "\n"),
                 util::write_file_atomic(req.out / "report.md", report_markdown(report))})
    if (!w) util::log_warn("{}", w.error().describe());
  return report;
}

std::string report_markdown(const nlohmann::json& r) {
  std::string md;
  const auto& llm = r.contains("llm") && r["llm"].is_object() ? r["llm"] : nlohmann::json();
  md += fmt::format("| | autodriver (this run, {}) | AutoDriver paper |\n|---|---|---|\n",
                    llm.is_object() ? "LLM " + llm.value("model", std::string()) : std::string("no LLM"));
  md += fmt::format("| cases | {} ({} split) | 235 (DriveBench, 5.10-6.10) |\n", r.value("cases", 0), r.value("split", ""));
  md += fmt::format("| compile + integrity | {}/{} = {:.1f} % | 56.4 % |\n", r.value("compiled_and_integrity", 0),
                    r.value("cases", 0), r.value("compile_rate_pct", 0.0));
  md += fmt::format("| integrity rejections | {} | not measured |\n", r.value("integrity_rejections", 0));
  md += fmt::format("| load/probe on runtime-testable | {}/{} = {:.1f} %{} | 27/55 boot |\n", r.value("loaded", 0),
                    r.value("runtime_testable", 0), r.value("load_rate_pct", 0.0),
                    r.value("load_untestable", 0) > 0
                        ? fmt::format(" ({} more not loadable on the old kernel either)", r.value("load_untestable", 0))
                        : std::string());
  md += fmt::format("| identical to golden (exact / normalized) | {} / {} of {} | not reported |\n", r.value("golden_exact", 0),
                    r.value("golden_normalized", 0), r.value("with_golden", 0));
  md += fmt::format("| median time per case | {:.1f} s | ~12 min |\n", r.value("median_seconds", 0.0));
  if (llm.is_object())
    md += fmt::format("| LLM calls / tokens (per case, per solved case) | {} / {} ({}, {}) | not reported |\n",
                      llm.value("calls", 0L), llm.value("tokens", 0L), llm.value("tokens_per_case", 0L),
                      llm.value("tokens_per_solved_case", 0L));
  if (llm.is_object() && llm.value("cost", 0.0) > 0)
    md += fmt::format("| LLM cost (per case, per solved case) | {:.4f} ({:.4f}, {:.4f}) | not reported |\n",
                      llm.value("cost", 0.0), llm.value("cost_per_case", 0.0), llm.value("cost_per_solved_case", 0.0));
  return md;
}

} // namespace autodriver::bench
