// `autodriver port DIR --to K [...]`: the closed update loop.

#include "autodriver/cli/commands.hpp"
#include "autodriver/cli/llm_options.hpp"
#include "autodriver/loop/output_dir.hpp"
#include "autodriver/loop/port.hpp"
#include "autodriver/loop/record.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <regex>

namespace autodriver::cli {

namespace fs = std::filesystem;

namespace {

/// The human summary of a port: status, accepted edits, what remains, where the results are.
void print_summary(const loop::PortRequest& req, const loop::PortReport& rep, std::int64_t run_id) {
  if (rep.status == "from-fails")
    fmt::print("{}: from-fails: the port left {} of {} error(s), and the unchanged driver does not build "
               "on {} either ({} error(s) there, below), in {:.1f} s\n",
               req.tree.string(), rep.final_errors, rep.initial_errors, req.from, rep.remaining.size(),
               rep.elapsed.count() / 1000.0);
  else if (rep.status == "timeout" || rep.status == "budget")
    fmt::print("{}: {}: a build was cut short ({} error(s) at the start) in {:.1f} s\n", req.tree.string(), rep.status,
               rep.initial_errors, rep.elapsed.count() / 1000.0);
  else
    fmt::print("{}: {} ({} -> {} error(s)) in {:.1f} s\n", req.tree.string(), rep.status, rep.initial_errors, rep.final_errors,
               rep.elapsed.count() / 1000.0);
  for (const auto& a : rep.accepted) fmt::print("  + [{}] {} ({} site(s))\n", a.edit.proposer, a.edit.title, a.edit.support);
  for (const auto& r : rep.remaining) fmt::print("  ! {}\n", r);
  // The last target build failed with nothing the compiler said: its own last lines.
  std::string failure;
  for (const auto& s : rep.steps)
    if (s.value("step", "") == "build-target") failure = util::json_get(s, "failure", std::string());
  if (!failure.empty() && rep.final_errors > 0) {
    fmt::print("  the build failed before the compiler ran:\n");
    for (auto line : util::split_lines(failure)) fmt::print("    {}\n", line);
  }
  if (!rep.integrity.is_null() && !rep.integrity.value("ok", true))
    for (const auto& v : rep.integrity["violations"])
      fmt::print("  integrity: {} at {}:{}: {}\n", v.value("rule", ""), v.value("file", ""), v.value("line", 0),
                 v.value("detail", ""));
  if (rep.gates.is_object() && rep.gates.contains("crash")) {
    const auto& c = rep.gates["crash"];
    fmt::print("  crash on {}: {}\n", req.to, c.value("title", ""));
    for (const auto& l : c.value("localized", nlohmann::json::array()))
      fmt::print("    at {}:{} in {}() [{}]\n", l.value("file", ""), l.value("line", 0), l.value("function", ""),
                 l.value("why", ""));
    for (const auto& h : c.value("hypotheses", nlohmann::json::array()))
      fmt::print("    hypothesis ({}): {}\n", h.value("kind", ""), h.value("statement", ""));
    fmt::print("    (not repaired: crash repair is not implemented yet; autodriver crash reads such logs)\n");
  }
  fmt::print("  tree: {}\n", (req.out / "tree").string());
  fmt::print("  run: {} (autodriver show {})\n", run_id, run_id);
  for (const auto& p : rep.patches) fmt::print("  patch: {}\n", p);
  if (rep.checkpatch.is_object() && rep.checkpatch.value("ran", false))
    fmt::print("  checkpatch.pl --strict: {} error(s), {} warning(s), {} check(s)\n", rep.checkpatch.value("errors", 0),
               rep.checkpatch.value("warnings", 0), rep.checkpatch.value("checks", 0));
}

} // namespace

Command port_command() {
  return {"port", "Port a driver to a kernel: gate, propose edits learned from the kernel itself, apply, re-gate, repeat",
          [](CLI::App& sub) -> std::function<int()> {
            auto req = std::make_shared<loop::PortRequest>();
            auto json = std::make_shared<bool>(false);
            auto budget = std::make_shared<int>(900);
            sub.add_option("dir", req->tree, "Driver source tree (never written)")->required();
            sub.add_option("--root", req->root,
                           "Folder holding DIR that is copied with it, for a driver whose Makefile builds files of a sibling "
                           "folder (../common/...); default: found from DIR's Makefiles, at most 3 folders up. Never written");
            sub.add_option("--to", req->to, "Target kernel: 6.1, 6.12 or a kernel build dir")->required();
            sub.add_option("--from", req->from,
                           "Kernel the driver builds on today; enables rules learned from the kernel's own "
                           "drivers (old tree vs new tree)");
            add_build_deps_option(sub, req->build_deps);
            sub.add_option("--build-cmd", req->build_cmd,
                           "Build command with {kdir} and {kver}, or DKMS's $kernelver, $kernel_source_dir and $arch "
                           "(default: kbuild M=)");
            sub.add_flag("--boot", req->boot, "Also boot the target kernel in QEMU and load the result");
            sub.add_option("--device", req->device, "QEMU -device to probe on with --boot");
            sub.add_option("--crash-runs", req->crash_runs,
                           "With --boot: a crash of the port on the target that the unchanged driver does not show on --from "
                           "is repaired (autodriver crash --repair's repairs), a repair kept only if this many boots run clean; "
                           "0: only analysed")
                ->capture_default_str()
                ->check(non_negative());
            auto compat = sub.add_option("--compat", req->compat_kernels,
                                         "Keep older kernels building (#if LINUX_VERSION_CODE guards): alone, the --from "
                                         "kernel; with a kernel (repeatable: --compat 6.1 --compat 6.12) that one too")
                              ->expected(0, 1)
                              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
            sub.add_option("-o,--out", req->out, "Output directory: OUT/tree, OUT/patches, OUT/verdict.json")->required();
            sub.add_option("--max-iters", req->max_iters, "Iterations of the loop")->capture_default_str()->check(at_least_one());
            sub.add_option("--budget-s", *budget, "Wall-time budget in seconds")->capture_default_str()->check(positive());
            auto build_timeout = std::make_shared<int>(0);
            sub.add_option("--build-timeout", *build_timeout,
                           "Seconds one build may take (default: 3x the target's first full build, at least 180; "
                           "never more than the budget left). A build cut short ends the run as `timeout` or `budget`")
                ->check(positive());
            sub.add_option("-j,--jobs", req->jobs, "make -j of a build (default: the CPUs this process may use)")
                ->transform(jobs_cap());
            sub.add_option("--leave-out", req->leave_out,
                           "Kernel-relative path never learned from (the driver's own in-tree copy; repeatable)");
            std::vector<std::string> proposer_ids;
            for (const auto& p : propose::proposer_table()) proposer_ids.emplace_back(p.id);
            sub.add_option("--proposer", req->proposers,
                           fmt::format("Only these proposers (repeatable; default all, in this order): {}",
                                       fmt::join(proposer_ids, ", ")))
                ->check(CLI::IsMember(proposer_ids));
            sub.add_option("--kb-leave-out", req->kb_leave_out,
                           "compat-kb: never use KB entries learned from this package (repeatable)");
            sub.add_option("--kb", req->kb_path, "compat-kb: KB file (default: $AUTODRIVER_KB, else <cache>/kb/compat-kb.json)");
            auto no_store_kb = std::make_shared<bool>(false);
            auto no_rule_packs = std::make_shared<bool>(false);
            sub.add_option("--rules", req->rule_dirs,
                           "rule-pack: a folder of your own rule files (*.rule, format in docs/rules.md; repeatable); a rule "
                           "named like a shipped one replaces it")
                ->check(CLI::ExistingDirectory);
            sub.add_flag(
                "--no-rule-packs", *no_rule_packs,
                "rule-pack: leave out the shipped rules (knowledge stated by hand, rules/*.rule); --rules folders still apply");
            auto no_reference = std::make_shared<bool>(false);
            sub.add_flag("--no-reference", *no_reference,
                         "Without --from: do not learn from an older known kernel's source (target kernel only)");
            sub.add_flag("--no-store-kb", *no_store_kb,
                         "store-kb: do not replay the run store's KB entries (edits that solved the same diagnostics before)");
            sub.add_flag("--api-changes", req->api_changes,
                         "With --from: run apidiff beside the first builds and name the kernel API change behind "
                         "each diagnostic (verdict `changes`)");
            sub.add_option("--author", req->author,
                           "Author of OUT/patches, \"Name <email>\" (default: your git config's user.name and user.email)")
                ->check(CLI::Validator(
                    [](std::string& v) -> std::string {
                      static const std::regex k(R"(^\s*\S.*<[^<>\s]+@[^<>\s]+>\s*$)");
                      return std::regex_match(v, k) ? "" : "expected \"Name <email>\", got '" + v + "'";
                    },
                    "NAME <EMAIL>"));
            sub.add_flag("--signoff,-s", req->signoff, "Add the author's Signed-off-by to each patch (as git commit -s)");
            auto llm_price = std::make_shared<std::string>();
            add_llm_options(sub, req->llm, *llm_price, "the run");
            sub.add_flag("--json", *json, "Print the versioned JSON verdict (also written to OUT/verdict.json)");
            return [=]() -> int {
              if (auto bad = finish_llm_options(req->llm, *llm_price); !bad.empty()) {
                std::fprintf(stderr, "autodriver: error: %s\n", bad.c_str());
                return k_exit_error;
              }
              // A refused -o writes nothing anywhere: checked before the run, against the driver and
              // the root copied with it.
              if (auto o = loop::check_output_dir(req->out, loop::trees_read(req->tree, req->root)); !o) {
                std::fprintf(stderr, "autodriver: error: %s\n", o.error().message.c_str());
                return k_exit_error;
              }
              req->budget = std::chrono::seconds(*budget);
              req->build_timeout = std::chrono::seconds(*build_timeout);
              req->compat = compat->count() > 0;
              std::erase(req->compat_kernels, std::string());
              if (req->compat && req->compat_kernels.empty() && req->from.empty()) {
                std::fprintf(stderr, "autodriver: error: --compat needs --from or a kernel to stay compatible with "
                                     "(--compat 6.1)\n");
                return k_exit_error;
              }
              req->store_kb = !*no_store_kb;
              req->rule_packs = !*no_rule_packs;
              req->reference = !*no_reference;
              if (*json && util::log_level() != util::LogLevel::debug) util::set_log_level(util::LogLevel::quiet);
              loop::RecordOptions record; // every port is a run in the run store
              record.store = store_path_option();
              auto rec = loop::run_port_recorded(
                  *req, [](const std::string& m) { util::log_info("{}", m); }, record);
              if (!rec) {
                std::fprintf(stderr, "autodriver: error: %s\n", rec.error().message.c_str());
                return k_exit_error;
              }
              auto& rep = rec->report;
              // OUT/verdict.json, and stdout with --json: the same text whatever ended the run.
              // A verdict that cannot be written (a full disk) fails the run: OUT without it is
              // not a result.
              auto write_verdict = [&](const nlohmann::json& j) {
                std::error_code ec;
                fs::create_directories(req->out, ec);
                const std::string text = j.dump(2, ' ', false, util::json_bytes) + "\n";
                auto w = util::write_file_atomic(req->out / "verdict.json", text);
                if (*json) std::cout << text;
                if (!w) std::fprintf(stderr, "autodriver: error: %s\n", w.error().describe().c_str());
                return bool(w);
              };
              if (!rep) {
                // The verdict says what ended the run: `interrupted` (a signal) or `error`.
                const bool intr = rep.error().kind == util::ErrorKind::interrupted || util::interrupted();
                nlohmann::json j{{"schema", "autodriver.port"},
                                 {"ok", false},
                                 {"status", intr ? "interrupted" : "error"},
                                 {"error", rep.error().message},
                                 {"tree", fs::absolute(req->tree).string()},
                                 {"run", rec->run_id}};
                write_verdict(j);
                std::fprintf(stderr, "autodriver: %s: %s\n", intr ? "interrupted" : "error", rep.error().message.c_str());
                return intr ? k_exit_interrupted : k_exit_error;
              }
              auto j = loop::to_json(*rep, *req);
              j["run"] = rec->run_id;
              if (!write_verdict(j)) return k_exit_error;
              if (!*json) print_summary(*req, *rep, rec->run_id);
              return rep->ok ? k_exit_ok : k_exit_failed;
            };
          }};
}

} // namespace autodriver::cli
