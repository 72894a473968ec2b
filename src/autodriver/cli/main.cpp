// autodriver: keep Linux drivers building and working while kernel APIs change.

#include "autodriver/cli/commands.hpp"
#include "autodriver/util/error.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <cstdio>
#include <vector>

using namespace autodriver;

int main(int argc, char** argv) {
  util::install_interrupt_handlers();
  CLI::App app{"autodriver: build, check and port Linux drivers across kernel API changes.\n"
               "Kernels: a Debian kernel line (`kernel list --available`: 5.10 to 7.3 today), a full Debian release, `host`, or "
               "a path to a kernel build directory."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "autodriver 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Print every external command and step");
  app.add_option("--store", cli::store_path_option(),
                 "Run store file (default: $AUTODRIVER_STORE, else "
                 "$XDG_DATA_HOME/autodriver/runs.sqlite, else ~/.local/share/autodriver/runs.sqlite)");
  app.fallthrough(); // --store and -v also after the subcommand

  // Explicit command table (no static registration).
  const std::vector<cli::Command> commands = {
      cli::kernel_command(),  cli::check_command(), cli::port_command(), cli::bench_command(),   cli::corpus_command(),
      cli::kb_command(),      cli::runs_command(),  cli::show_command(), cli::explain_command(), cli::rerun_command(),
      cli::apidiff_command(), cli::rules_command(), cli::crash_command()};
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.help));
    runners.push_back({sub, c.setup(*sub)});
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : cli::k_exit_error;
  }
  if (verbose) util::set_log_level(util::LogLevel::debug);
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) {
        int rc = run();
        if (util::interrupted()) return cli::k_exit_interrupted;
        return rc;
      }
  } catch (const util::FatalError& e) {
    std::fprintf(stderr, "autodriver: error: %s\n", e.error.message.c_str());
    return cli::k_exit_error;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "autodriver: internal error: %s\n", e.what());
    return cli::k_exit_error;
  }
  return cli::k_exit_error;
}
