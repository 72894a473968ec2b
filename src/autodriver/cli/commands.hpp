#pragma once
// Subcommand table: each command registers its options on a CLI11 subcommand and runs.

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace autodriver::cli {

/// Exit codes shared by all commands.
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_failed = 1; ///< the driver failed a gate (data, not a tool failure)
inline constexpr int k_exit_error = 2;  ///< bad input or the tool could not do its job
inline constexpr int k_exit_interrupted = 130;

/// A number option's bound, said plainly when broken ("--jobs: 0 is not above 0"): CLI11's own
/// positive-number check prints the double range up to 1.8e308.
CLI::Validator positive();
/// `-j N`: a whole number of at least 1; above k_jobs_per_cpu times the CPUs this process may use
/// it is lowered to that, with a note (`-j 100000` would fork until the build timeout).
inline constexpr int k_jobs_per_cpu = 4;
CLI::Validator jobs_cap();
/// A count of at least 1 (`--max-iters`).
CLI::Validator at_least_one();
CLI::Validator non_negative();

/// `--build-deps PKG[,PKG]` (repeatable): Debian packages a driver's own build calls beyond the
/// kernel's (kernel::with_build_deps), each checked to be a package name.
CLI::Option* add_build_deps_option(CLI::App& sub, std::vector<std::string>& out);

struct Command {
  std::string_view name;
  std::string_view help;
  /// Adds options to `sub` and returns the function to run after parsing.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

Command kernel_command();
Command check_command();
Command port_command();
Command bench_command();
Command corpus_command();
Command kb_command();
Command runs_command(); ///< cmd_runs.cpp: the run store
Command show_command();
Command explain_command();
Command rerun_command();
Command apidiff_command(); ///< cmd_apidiff.cpp: API differences between two kernels
Command rules_command();   ///< cmd_rules.cpp: the rule packs
Command crash_command();   ///< cmd_crash.cpp: crash reports read, symbolized, localized
/// `--repro` of check and crash made ready once before any work (cmd_check.cpp): what is wrong
/// with it (no such file, does not compile, dynamically linked), or nullopt.
std::optional<std::string> repro_error(const std::string& repro);
/// `--store PATH` (global option): the run store file; empty = store::default_store_path().
std::filesystem::path& store_path_option();
/// `kb export|import` of the run store's KB (cmd_store_kb.cpp), registered on the `kb` command.
/// The returned runner returns -1 when neither subcommand was given.
std::function<int()> setup_kb_store(CLI::App& kb_sub);
/// Options and runner of `corpus mine` (cmd_corpus_mine.cpp), registered on the `corpus` command's "mine" subcommand.
std::function<int()> setup_corpus_mine(CLI::App& mine_sub);

} // namespace autodriver::cli
