// `autodriver bench CASES [--split dev|test] [--jobs N]`: the port loop over DriveBench cases.

#include "autodriver/bench/bench.hpp"
#include "autodriver/cli/commands.hpp"
#include "autodriver/cli/llm_options.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"

#include <fmt/format.h>

#include <iostream>

namespace autodriver::cli {

Command bench_command() {
  return {"bench",
          "Port every DriveBench case and report compile/load rates, integrity rejections, golden similarity and "
          "time, beside the AutoDriver paper",
          [](CLI::App& sub) -> std::function<int()> {
            auto req = std::make_shared<bench::BenchRequest>();
            auto json = std::make_shared<bool>(false);
            auto no_boot = std::make_shared<bool>(false);
            auto no_from = std::make_shared<bool>(false);
            auto no_store_kb = std::make_shared<bool>(false);
            auto no_reference = std::make_shared<bool>(false);
            auto no_rule_packs = std::make_shared<bool>(false);
            auto budget = std::make_shared<int>(300);
            sub.add_option("cases", req->corpus, "Corpus directory (autodriver corpus build -o DIR)")->required();
            sub.add_option("--split", req->split, "Only the dev or the test split");
            sub.add_option("-j,--jobs", req->jobs, "Cases at a time")->capture_default_str()->transform(jobs_cap());
            sub.add_option("--limit", req->limit, "At most N cases (after sorting by id)");
            sub.add_option("--only", req->only, "Case id prefixes (repeatable)");
            sub.add_option("-o,--out", req->out, "Results directory (resumable: finished cases are kept)")->required();
            sub.add_flag("--no-boot", *no_boot, "Skip the load/probe test of runtime-testable cases");
            sub.add_flag("--no-from", *no_from, "Do not tell the loop the old kernel (target-only repair)");
            sub.add_flag("--no-store-kb", *no_store_kb,
                         "store-kb: do not replay KB entries (a case never gets entries of its own runs)");
            sub.add_flag("--no-reference", *no_reference,
                         "With --no-from: no older reference kernel either (target kernel only)");
            sub.add_flag("--no-rule-packs", *no_rule_packs, "rule-pack: leave out the shipped rules (as port --no-rule-packs)");
            auto llm_price = std::make_shared<std::string>();
            add_llm_options(sub, req->llm, *llm_price, "each case");
            sub.add_option("--rules", req->rule_dirs, "rule-pack: a folder of your own rule files (as port --rules; repeatable)")
                ->check(CLI::ExistingDirectory);
            sub.add_option("--budget-s", *budget, "Per-case time budget")->capture_default_str()->check(positive());
            auto build_timeout = std::make_shared<int>(0);
            sub.add_option("--build-timeout", *build_timeout,
                           "Seconds one build may take (default: port's, 3x the case's first full build)")
                ->check(positive());
            sub.add_flag("--json", *json, "Print the report as JSON");
            return [=]() -> int {
              if (auto bad = finish_llm_options(req->llm, *llm_price); !bad.empty()) {
                std::fprintf(stderr, "autodriver: error: %s\n", bad.c_str());
                return k_exit_error;
              }
              req->boot = !*no_boot;
              req->use_from = !*no_from;
              req->store_kb = !*no_store_kb;
              req->reference = !*no_reference;
              req->rule_packs = !*no_rule_packs;
              req->budget = std::chrono::seconds(*budget);
              req->build_timeout = std::chrono::seconds(*build_timeout);
              req->store = store_path_option();
              auto rep = bench::run_bench(*req, [&](const std::string& m) {
                if (!*json) util::log_info("{}", m);
              });
              if (!rep) {
                std::fprintf(stderr, "autodriver: error: %s\n", rep.error().message.c_str());
                return rep.error().kind == util::ErrorKind::interrupted ? k_exit_interrupted : k_exit_error;
              }
              if (*json) std::cout << rep->dump(2, ' ', false, util::json_bytes) << "\n";
              else std::cout << bench::report_markdown(*rep);
              return k_exit_ok;
            };
          }};
}

} // namespace autodriver::cli
