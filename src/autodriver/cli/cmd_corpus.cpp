// `autodriver corpus build | export | summary | mine`: the DriveBench corpus (docs/case-format.md).

#include "autodriver/cli/commands.hpp"
#include "autodriver/corpus/case_format.hpp"
#include "autodriver/corpus/corpus_build.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <unistd.h>

namespace autodriver::cli {

namespace fs = std::filesystem;

static std::string format_duration(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f}s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f}m", seconds / 60);
  return fmt::format("{:.1f}h", seconds / 3600);
}

static void print_progress(const corpus::Progress& p, bool tty) {
  static std::size_t last_printed = static_cast<std::size_t>(-1);
  static auto last_time = std::chrono::steady_clock::now();
  double secs = std::chrono::duration<double>(p.elapsed).count();
  double rate = secs > 0 ? p.done_this_run / secs : 0; // units per second
  std::size_t left = p.total - std::min(p.total, p.done);
  std::string eta = rate > 0 ? format_duration(left / rate) : "?";
  std::string line = fmt::format("[{}/{}] {:.0f}%  cases {}  {:.1f} units/min  ETA {}  {} {}", p.done, p.total,
                                 p.total ? 100.0 * p.done / p.total : 100.0, p.cases, rate * 60, eta, p.last_unit,
                                 p.last_outcome.empty() ? "" : "(" + p.last_outcome + ")");
  if (tty) {
    if (line.size() > 150) line = line.substr(0, 150);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (p.done == last_printed && now - last_time < std::chrono::seconds(60)) return;
  if (p.done != p.total && now - last_time < std::chrono::seconds(15) && last_printed != static_cast<std::size_t>(-1)) return;
  last_printed = p.done;
  last_time = now;
  std::fprintf(stderr, "%s\n", line.c_str());
}

static void print_table(const std::string& title, const nlohmann::json& counts) {
  std::vector<std::pair<int, std::string>> rows;
  for (auto it = counts.begin(); it != counts.end(); ++it) rows.push_back({it.value().get<int>(), it.key()});
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  fmt::print("{}\n", title);
  if (rows.empty()) fmt::print("  (none)\n");
  for (const auto& [n, k] : rows) fmt::print("  {:<32} {:>6}\n", k, n);
}

static void print_summary(const nlohmann::json& s) {
  fmt::print("\nDriveBench corpus {} ({} -> {})\n", s.value("corpus", ""), s["from"].value("release", "?"),
             s["to"].value("release", "?"));
  if (s.contains("this_run")) {
    const auto& r = s["this_run"];
    fmt::print("this run: {} units decided in {} ({:.1f} units/min, --jobs {}), {} already decided, {} tool errors\n",
               r.value("decided", 0), format_duration(r.value("seconds", 0.0)), r.value("units_per_minute", 0.0),
               r.value("jobs", 0), r.value("already_decided", 0), r.value("tool_errors", 0));
    for (const auto& e : r.value("tool_error_samples", nlohmann::json::array()))
      fmt::print("  error: {}\n", e.get<std::string>());
  }
  fmt::print("units decided: {}   cases: {} ({} from DKMS)   runtime-testable: {}\n", s.value("units_decided", 0),
             s.value("cases", 0), s.value("dkms_cases", 0), s.value("runtime_testable", 0));
  print_table("outcomes:", s["outcomes"]);
  print_table("cases per subsystem:", s["cases_per_subsystem"]);
  print_table("cases per change type:", s["cases_per_change_type"]);
  print_table("cases per runtime testability:", s["cases_per_runtime"]);
  print_table("cases per split:", s["cases_per_split"]);
  print_table("golden status:", s["golden"]);
}

Command corpus_command() {
  return {"corpus", "Build and export the DriveBench corpus of real kernel API-change cases",
          [](CLI::App& sub) -> std::function<int()> {
            sub.require_subcommand(1);
            auto opt = std::make_shared<corpus::CorpusBuildOptions>();
            auto json = std::make_shared<bool>(false);
            auto no_dkms = std::make_shared<bool>(false);
            auto timeout = std::make_shared<int>(300);
            auto limit = std::make_shared<std::size_t>(0);
            CLI::App* build = sub.add_subcommand("build", "Scan driver units: builds on --from, fails on --to = a case");
            build->add_option("--from", opt->from, "Old kernel (builds)")->capture_default_str();
            build->add_option("--to", opt->to, "New kernel (fails)")->capture_default_str();
            build->add_option("-o,--out", opt->out, "Corpus directory (created; a rerun continues it)")->required();
            build->add_option("-j,--jobs", opt->jobs, "Units built in parallel")->capture_default_str()->transform(jobs_cap());
            build->add_option("--only", opt->only, "Unit path prefixes, e.g. drivers/hwmon dkms/ (repeatable)");
            build->add_option("--limit", *limit, "Only the first N candidate units (path order)");
            build->add_flag("--no-dkms", *no_dkms, "Skip Debian's *-dkms packages");
            build->add_option("--build-timeout", *timeout, "Seconds before one build is killed")->capture_default_str();
            build->add_flag("--json", *json, "Print the summary as JSON on stdout");
            build->add_flag("--dry-run", opt->dry_run, "Enumerate the units (units.jsonl) and print the counts; build nothing");

            auto export_dir = std::make_shared<fs::path>();
            auto export_out = std::make_shared<fs::path>();
            auto no_files = std::make_shared<bool>(false);
            auto split = std::make_shared<std::string>();
            CLI::App* exp = sub.add_subcommand("export", "Write a corpus as JSONL, one case per line");
            exp->add_option("dir", *export_dir, "Corpus directory")->required();
            exp->add_option("--jsonl", *export_out, "Output file")->required();
            exp->add_flag("--no-files", *no_files, "Metadata only (no before/golden file contents)");
            exp->add_option("--split", *split, "Only cases of this split")->check(CLI::IsMember({"dev", "test"}));

            auto summary_dir = std::make_shared<fs::path>();
            CLI::App* sum = sub.add_subcommand("summary", "Print the summary tables of a corpus directory");
            sum->add_option("dir", *summary_dir, "Corpus directory")->required();
            sum->add_flag("--json", *json, "JSON on stdout");

            CLI::App* mine = sub.add_subcommand("mine", "Mine a kernel git repository's history into cases (libgit2)");
            auto run_mine = setup_corpus_mine(*mine);

            return [=]() -> int {
              if (mine->parsed()) return run_mine();
              if (build->parsed()) {
                opt->dkms = !*no_dkms;
                opt->limit = *limit;
                opt->build_timeout = std::chrono::seconds(*timeout);
                bool tty = isatty(2) != 0;
                auto s = corpus::build_corpus(
                    *opt,
                    [&](const corpus::Progress& p) {
                      if (util::log_level() >= util::LogLevel::info || !*json) print_progress(p, tty);
                    },
                    [](const std::string& m) { std::fprintf(stderr, "autodriver: %s\n", m.c_str()); });
                if (tty) std::fprintf(stderr, "\n");
                if (!s) {
                  std::fprintf(stderr, "autodriver: error: %s\n", s.error().message.c_str());
                  return s.error().kind == util::ErrorKind::interrupted ? k_exit_interrupted : k_exit_error;
                }
                if (*json || opt->dry_run) std::cout << s->dump(2, ' ', false, util::json_bytes) << "\n";
                else print_summary(*s);
                return k_exit_ok;
              }
              if (exp->parsed()) {
                auto n = corpus::export_jsonl(*export_dir, *export_out,
                                              *no_files ? corpus::WithFiles::no : corpus::WithFiles::yes, *split);
                if (!n) {
                  std::fprintf(stderr, "autodriver: error: %s\n", n.error().message.c_str());
                  return k_exit_error;
                }
                std::fprintf(stderr, "autodriver: wrote %zu cases to %s\n", *n, export_out->c_str());
                return k_exit_ok;
              }
              auto s = corpus::corpus_summary(*summary_dir);
              if (!s) {
                std::fprintf(stderr, "autodriver: error: %s\n", s.error().message.c_str());
                return k_exit_error;
              }
              (*s)["corpus"] = summary_dir->string();
              if (*json) std::cout << s->dump(2, ' ', false, util::json_bytes) << "\n";
              else print_summary(*s);
              return k_exit_ok;
            };
          }};
}

} // namespace autodriver::cli
