#pragma once
// `apidiff`: the API differences between two kernels for the symbols a driver tree uses,
// read by libclang from the driver's files compiled with each kernel's own kbuild flags.

#include "autodriver/apidiff/decls.hpp"
#include "autodriver/core/api_change.hpp"
#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::apidiff {

inline constexpr int k_json_schema_version = 1;

struct ApidiffRequest {
  std::filesystem::path tree; ///< never written: builds run in scratch copies
  core::Kernel from;
  core::Kernel to;
  std::string build_cmd; ///< empty: kbuild M=; {kdir} {kver} substituted
  std::chrono::seconds build_timeout{300};
  ParseOptions parse;
  std::filesystem::path subdir; ///< the driver's folder inside `tree` when tree is a root (gate/build_root.hpp)
};

struct KernelParse {
  std::string release;
  std::size_t declarations = 0;
  int parse_errors = 0;
  std::vector<std::string> error_samples;
  std::vector<std::string> clang_args;
};

struct FileReport {
  std::string file;            ///< relative to the tree
  std::size_t identifiers = 0; ///< distinct identifiers in the file
  KernelParse from, to;
  std::vector<core::ApiChange> changes;
};

struct ApidiffReport {
  std::filesystem::path tree;
  core::Kernel from, to;
  std::string build_from, build_to; ///< the build commands that gave the compile flags
  std::vector<FileReport> files;
  std::vector<std::string> skipped;     ///< "x.c: no compile command on 6.12 (...)", "y.c: too large"
  std::vector<core::ApiChange> changes; ///< union over the files, without duplicates
  std::chrono::milliseconds elapsed{0};
};

/// Builds the tree once per kernel (V=1) for the compile flags, parses every compiled C file with
/// libclang per kernel and diffs the declarations. Errors: the tree or a kernel is unusable, or no
/// C file was compiled on both kernels.
util::Expected<ApidiffReport> run_apidiff(const ApidiffRequest& request);

/// docs/apidiff.md: schema "autodriver.apidiff", schema_version 1.
nlohmann::json to_json(const ApidiffReport& report);

} // namespace autodriver::apidiff
