#include "autodriver/corpus/corpus_build.hpp"

#include "autodriver/corpus/case_format.hpp"
#include "autodriver/corpus/journal.hpp"
#include "autodriver/corpus/runtime.hpp"
#include "autodriver/corpus/unit_worker.hpp"
#include "autodriver/kernel/source.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

namespace autodriver::corpus {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

namespace {

/// A unit to decide: an in-tree DriverUnit or a DKMS package.
struct Candidate {
  std::string path;
  const DriverUnit* unit = nullptr;
  std::string dkms_package;
};

bool selected(const std::string& path, const std::vector<std::string>& only) {
  if (only.empty()) return true;
  for (const auto& p : only) {
    std::string prefix = p;
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    if (path == prefix || path.starts_with(prefix + "/") || (p.back() != '/' && path.starts_with(p))) return true;
  }
  return false;
}

util::Expected<core::Kernel> usable_kernel(const std::string& name) {
  auto k = kernel::resolve_kernel(name);
  if (!k) return k;
  std::error_code ec;
  if (!fs::exists(k->build_dir / ".config", ec))
    return unexpected(ErrorKind::not_found,
                      fmt::format("kernel {} is not installed: {} is missing (run `autodriver kernel fetch {}`)", name,
                                  k->build_dir.string(), name));
  return k;
}

} // namespace

util::Expected<nlohmann::json> corpus_summary(const fs::path& corpus) {
  auto cj = util::read_file(corpus / "corpus.json");
  if (!cj) return unexpected(ErrorKind::not_found, fmt::format("{} is not a corpus directory (no corpus.json)", corpus.string()));
  auto identity = nlohmann::json::parse(*cj, nullptr, false);
  auto decided = Journal::load(corpus / "journal.jsonl");
  if (!decided) return unexpected(decided.error());
  nlohmann::json s = {{"corpus", corpus.string()},
                      {"from", identity.value("from", nlohmann::json())},
                      {"to", identity.value("to", nlohmann::json())}};
  std::map<std::string, int> outcomes, per_subsystem, per_type, per_runtime, per_split, golden;
  int cases = 0, dkms_cases = 0;
  for (const auto& [unit, e] : *decided) {
    std::string o = e.value("outcome", "?");
    ++outcomes[o];
    if (o != "case") continue;
    ++cases;
    if (unit.starts_with("dkms/")) ++dkms_cases;
    ++per_subsystem[e.value("subsystem", "?")];
    for (const auto& t : e.value("change_types", nlohmann::json::array())) ++per_type[t.get<std::string>()];
    ++per_runtime[e.value("runtime", "none")];
    ++per_split[e.value("split", "?")];
    ++golden[e.value("golden", "none")];
  }
  s["units_decided"] = decided->size();
  s["outcomes"] = outcomes;
  s["cases"] = cases;
  s["dkms_cases"] = dkms_cases;
  s["cases_per_subsystem"] = per_subsystem;
  s["cases_per_change_type"] = per_type;
  s["cases_per_runtime"] = per_runtime;
  s["runtime_testable"] = per_runtime["device"] + per_runtime["virtual"];
  s["cases_per_split"] = per_split;
  s["golden"] = golden;
  return s;
}

namespace {

/// The units under the selected prefixes: candidates (=m in the old kernel's config, and the DKMS
/// packages with --dkms) and units.jsonl's text, which lists every unit with why it is or is not one.
struct Listing {
  std::vector<Candidate> cands;
  std::string text;
  std::size_t enumerated = 0, not_module = 0;
};
Listing list_candidates(const CorpusBuildOptions& opt, const std::vector<DriverUnit>& units, const core::Kernel& from,
                        const core::Kernel& to, const std::function<void(const std::string&)>& note) {
  Listing l;
  for (const auto& u : units) {
    if (!selected(u.path(), opt.only)) continue;
    ++l.enumerated;
    auto j = to_json(u);
    if (u.config_value != "m") {
      ++l.not_module;
      j["candidate"] = false;
      j["reason"] = u.config_value.empty() ? u.config + " is not set in " + from.release
                                           : u.config + "=" + u.config_value + " (built in) in " + from.release;
    } else {
      j["candidate"] = true;
      l.cands.push_back({u.path(), &u, {}});
    }
    l.text += j.dump(-1, ' ', false, util::json_bytes) + "\n";
  }
  if (opt.dkms) {
    auto pkgs = list_dkms_packages(dkms_suite(to.suite));
    if (!pkgs) note("cannot list DKMS packages: " + pkgs.error().message);
    else
      for (const auto& p : *pkgs) {
        std::string path = "dkms/" + p.substr(0, p.size() - 5);
        if (!selected(path, opt.only)) continue;
        ++l.enumerated;
        l.cands.push_back({path, nullptr, p});
        l.text +=
            nlohmann::json{{"path", path}, {"package", p}, {"candidate", true}}.dump(-1, ' ', false, util::json_bytes) + "\n";
      }
  }
  return l;
}

nlohmann::json dry_run_summary(const std::vector<Candidate>& cands, std::size_t enumerated, std::size_t not_module,
                               std::size_t already, std::size_t to_do) {
  nlohmann::json units_per_subsystem = nlohmann::json::object();
  for (const auto& c : cands)
    units_per_subsystem[c.unit ? subsystem_of(c.unit->dir) : std::string("dkms")] =
        units_per_subsystem.value(c.unit ? subsystem_of(c.unit->dir) : std::string("dkms"), 0) + 1;
  return nlohmann::json{{"dry_run", true},
                        {"enumerated", enumerated},
                        {"not_modules", not_module},
                        {"candidates", cands.size()},
                        {"already_decided", already},
                        {"to_do", to_do},
                        {"candidates_per_subsystem", units_per_subsystem}};
}

/// Runs `worker` on `jobs` threads and reports progress every 2 s until all have returned.
void run_workers(int jobs, const std::function<void()>& worker, std::mutex& mu, std::condition_variable& cv, Progress& prog,
                 std::chrono::steady_clock::time_point start, const ProgressSink& progress) {
  std::atomic<int> running{jobs};
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t)
    threads.emplace_back([&]() {
      worker();
      std::lock_guard<std::mutex> lock(mu);
      --running;
      cv.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(mu);
    while (running.load() > 0) {
      cv.wait_for(lock, std::chrono::seconds(2));
      prog.elapsed = std::chrono::steady_clock::now() - start;
      if (progress) progress(prog);
    }
  }
  for (auto& th : threads)
    if (th.joinable()) th.join();
  prog.elapsed = std::chrono::steady_clock::now() - start;
  if (progress) progress(prog);
}

} // namespace

util::Expected<nlohmann::json> build_corpus(const CorpusBuildOptions& opt, const ProgressSink& progress,
                                            const std::function<void(const std::string&)>& note) {
  if (opt.out.empty()) return unexpected(ErrorKind::config, "no output directory (-o DIR)");
  auto from = usable_kernel(opt.from);
  if (!from) return unexpected(from.error());
  auto to = usable_kernel(opt.to);
  if (!to) return unexpected(to.error());
  auto from_tree = kernel::ensure_source(*from, note);
  if (!from_tree) return unexpected(from_tree.error());
  auto to_tree = kernel::ensure_source(*to, note);
  if (!to_tree) return unexpected(to_tree.error());
  auto from_cfg = read_kernel_config(from->build_dir);
  if (!from_cfg) return unexpected(from_cfg.error());
  auto to_cfg = read_kernel_config(to->build_dir);
  if (!to_cfg) return unexpected(to_cfg.error());

  ScanContext ctx;
  ctx.from = *from;
  ctx.to = *to;
  ctx.from_tree = *from_tree;
  ctx.to_tree = *to_tree;
  ctx.from_version = source_tree_version(ctx.from_tree);
  ctx.to_version = source_tree_version(ctx.to_tree);
  ctx.from_headers = HeaderIndex(ctx.from_tree);
  ctx.to_headers = HeaderIndex(ctx.to_tree);
  ctx.corpus = opt.out;
  ctx.build_timeout = opt.build_timeout;
  if (auto ids = util::read_file(ctx.from_tree / "include/linux/pci_ids.h"); ids) collect_numeric_defines(*ids, ctx.pci_defines);

  note("enumerating driver units");
  auto units = enumerate_units(ctx.from_tree, opt.roots, *from_cfg);
  for (auto& u : enumerate_units(ctx.to_tree, opt.roots, *to_cfg)) {
    ctx.to_paths_by_module[u.module].push_back(u.path());
    ctx.to_units_by_path.emplace(u.path(), std::move(u));
  }

  nlohmann::json identity = {{"from", {{"line", from->line}, {"release", from->release}, {"source_version", ctx.from_version}}},
                             {"to", {{"line", to->line}, {"release", to->release}, {"source_version", ctx.to_version}}}};
  if (auto r = init_corpus_dir(opt.out, identity); !r) return unexpected(r.error());
  auto journal = Journal::open(opt.out / "journal.jsonl");
  if (!journal) return unexpected(journal.error());

  // Candidates: =m units of the old kernel's config; the rest are listed in units.jsonl with why.
  auto listed = list_candidates(opt, units, *from, *to, note);
  auto& cands = listed.cands;
  const std::size_t enumerated = listed.enumerated, not_module = listed.not_module;
  const std::string& listing = listed.text;
  if (opt.limit > 0 && cands.size() > opt.limit) cands.resize(opt.limit);
  if (auto r = util::write_file_atomic(opt.out / "units.jsonl", listing); !r) return unexpected(r.error());

  std::vector<const Candidate*> todo;
  std::size_t already = 0, cases_before = 0;
  for (const auto& c : cands) {
    if (journal->is_decided(c.path)) {
      ++already;
      if (journal->decided().at(c.path).value("outcome", "") == "case") ++cases_before;
    } else {
      todo.push_back(&c);
    }
  }
  note(fmt::format("{} units under the selected prefixes, {} not modules in {}, {} candidates ({} already decided, "
                   "{} to do), --jobs {}",
                   enumerated, not_module, from->release, cands.size(), already, todo.size(), opt.jobs));

  if (opt.dry_run) return dry_run_summary(cands, enumerated, not_module, already, todo.size());

  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  Progress prog;
  prog.total = cands.size();
  prog.done = already;
  prog.cases = cases_before;
  std::optional<util::Error> fatal;
  std::size_t tool_errors = 0;
  std::vector<std::string> error_samples;
  const auto start = std::chrono::steady_clock::now();
  std::atomic<bool> stop{false};

  auto worker = [&]() {
    while (!stop.load() && !util::interrupted()) {
      std::size_t i = next.fetch_add(1);
      if (i >= todo.size()) return;
      const Candidate& c = *todo[i];
      auto t0 = std::chrono::steady_clock::now();
      util::Expected<Outcome> out = c.unit ? decide_in_tree_unit(ctx, *c.unit) : decide_dkms_unit(ctx, c.dkms_package);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
      std::lock_guard<std::mutex> lock(mu);
      if (!out) {
        if (out.error().kind == ErrorKind::interrupted || util::interrupted()) return;
        if (out.error().kind == ErrorKind::io) {
          // Disk full or unwritable output: stop everyone; the journal keeps what is decided.
          fatal = out.error();
          stop = true;
          cv.notify_all();
          return;
        }
        ++tool_errors;
        if (error_samples.size() < 5) error_samples.push_back(c.path + ": " + out.error().describe());
        continue;
      }
      (*out)["elapsed_ms"] = ms;
      (*out)["at"] = static_cast<long long>(std::time(nullptr));
      if (auto w = journal->append(c.path, *out); !w) {
        fatal = w.error();
        stop = true;
        cv.notify_all();
        return;
      }
      ++prog.done;
      ++prog.done_this_run;
      if ((*out)["outcome"] == "case") ++prog.cases;
      prog.last_unit = c.path;
      prog.last_outcome = (*out)["outcome"].get<std::string>();
      cv.notify_all();
    }
  };

  run_workers(std::max(1, opt.jobs), worker, mu, cv, prog, start, progress);

  auto summary = corpus_summary(opt.out);
  if (!summary) return unexpected(summary.error());
  nlohmann::json& s = *summary;
  double minutes = std::chrono::duration<double>(prog.elapsed).count() / 60.0;
  s["this_run"] = {{"candidates", cands.size()},
                   {"enumerated", enumerated},
                   {"not_modules", not_module},
                   {"decided", prog.done_this_run},
                   {"already_decided", already},
                   {"tool_errors", tool_errors},
                   {"tool_error_samples", error_samples},
                   {"seconds", std::chrono::duration<double>(prog.elapsed).count()},
                   {"units_per_minute", minutes > 0 ? prog.done_this_run / minutes : 0.0},
                   {"jobs", opt.jobs},
                   {"only", opt.only},
                   {"interrupted", util::interrupted()},
                   {"complete", prog.done == cands.size()}};
  if (auto w = util::write_file_atomic(opt.out / "summary.json", s.dump(2, ' ', false, util::json_bytes) + "\n"); !w && !fatal)
    fatal = w.error();
  if (fatal)
    return unexpected(fatal->kind, fatal->message + " — stopped; decided units are kept in " +
                                       (opt.out / "journal.jsonl").string() + " and the next run continues");
  if (util::interrupted())
    return unexpected(ErrorKind::interrupted, fmt::format("interrupted after {} units; run the same command again to "
                                                          "continue",
                                                          prog.done_this_run));
  return s;
}

} // namespace autodriver::corpus
