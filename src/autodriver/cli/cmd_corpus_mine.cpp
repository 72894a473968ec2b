// `autodriver corpus mine REPO --range A..B -o DIR`: the `mine` subcommand of `corpus`
// (cmd_corpus.cpp adds the subcommand and calls setup_corpus_mine on it).

#include "autodriver/cli/commands.hpp"
#include "autodriver/corpus/mine.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace autodriver::cli {

std::function<int()> setup_corpus_mine(CLI::App& mine) {
  struct Opts {
    std::string repo, range, out;
    std::size_t treewide = 50;
    std::uint64_t max_file = 4u << 20;
    std::size_t limit = 0;
    bool include_treewide = false;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  mine.add_option("repo", o->repo, "A kernel git repository (a linux.git clone, bare or not)")->required();
  mine.add_option("--range", o->range, "Commits to mine, A..B (reachable from B, not from A), e.g. v6.1..v6.2")->required();
  mine.add_option("-o,--out", o->out, "Output directory: one case directory per mined commit")->required();
  mine.add_option("--treewide-threshold", o->treewide,
                  "A commit touching more driver files than this is listed as treewide in the summary, not mined")
      ->capture_default_str();
  mine.add_flag("--include-treewide", o->include_treewide, "Write treewide commits as cases too (metadata treewide=true)");
  mine.add_option("--max-file-size", o->max_file, "Driver files larger than this many bytes are not copied (recorded)")
      ->capture_default_str();
  mine.add_option("--limit", o->limit, "Stop after this many new cases (0: no limit)")->capture_default_str();
  mine.add_flag("--json", o->json, "Print the summary as JSON on stdout");
  return [o]() -> int {
    corpus::MineOptions opts;
    opts.repo = o->repo;
    opts.range = o->range;
    opts.out = o->out;
    opts.treewide_threshold = o->treewide;
    opts.max_file_bytes = o->max_file;
    opts.limit = o->limit;
    opts.include_treewide = o->include_treewide ? corpus::IncludeTreewide::yes : corpus::IncludeTreewide::no;
    auto summary = corpus::mine(
        opts, [](const corpus::MineProgress& p) { util::log_info("mine: {}/{} commits, {} cases", p.done, p.total, p.cases); });
    if (!summary) {
      std::fprintf(stderr, "autodriver: error: %s\n", summary.error().message.c_str());
      return util::interrupted() ? k_exit_interrupted : k_exit_error;
    }
    if (o->json) {
      std::cout << summary->to_json().dump(2, ' ', false, util::json_bytes) << "\n";
      return k_exit_ok;
    }
    fmt::print("{} commits in {}: {} new cases, {} already present, {} treewide (listed, {}), {} unreadable\n",
               summary->commits_walked, summary->range, summary->cases_written, summary->cases_present, summary->treewide.size(),
               o->include_treewide ? "written" : "not written", summary->failed.size());
    for (const auto& [kind, n] : summary->by_kind) fmt::print("  {:<16} {}\n", kind, n);
    for (const auto& t : summary->treewide)
      fmt::print("  treewide {} {} ({} driver files)\n", t.commit.substr(0, 12), t.subject, t.driver_files);
    if (summary->stopped_by_limit) fmt::print("stopped at --limit {}; run again to continue\n", o->limit);
    fmt::print("summary: {}\n", (std::filesystem::path(o->out) / "mine-summary.json").string());
    return k_exit_ok;
  };
}

} // namespace autodriver::cli
