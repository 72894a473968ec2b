#pragma once
// Shared by `kb build|cases|eval` (cmd_kb.cpp, cmd_kb_cases.cpp): which driver sources to read.

#include "autodriver/core/kernel.hpp"
#include "autodriver/propose/kb/kb_extract.hpp"
#include "autodriver/propose/kb/kb_file.hpp"
#include "autodriver/util/expected.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::cli {

struct SourceOptions {
  std::vector<std::string> source_dirs;
  std::vector<std::string> packages;
  bool dkms = false;
  std::string suite; ///< --suite: the Debian release whose *-dkms packages are meant
};

/// --source, --package, --dkms.
void add_source_options(CLI::App& sub, SourceOptions& o);

/// The sources the options name; DKMS packages fetched into the cache (one unavailable package
/// is a warning, not an error).
/// The packages come from --suite, else `default_suite` (the target kernel's release), else the
/// host's own Debian release.
util::Expected<std::vector<propose::KbSource>> gather(const SourceOptions& o, const std::string& default_suite = {});

/// LINUX_VERSION_CODE of a kernel's headers (the sublevel matters for backported boundaries).
propose::KVersion kernel_version(const core::Kernel& k);

struct CasesOptions {
  SourceOptions sources;
  std::string from = "6.1";
  std::string to = "6.12";
  bool older_than_target = false; ///< every block whose new branch `to` compiles; --from unused
  bool check_build = false;       ///< keep only cases whose package builds on `to` and whose collapsed tree does not
  bool by_boundary = false;       ///< one case per boundary: every selected block of it collapsed together
  int max_per_package = 0;        ///< 0: no cap
  int max_package_build_s = 0;    ///< 0: no limit
  std::filesystem::path out;
};

/// `kb cases`: collapsed-block cases (cmd_kb_cases.cpp).
int run_cases(const CasesOptions& o);

} // namespace autodriver::cli
