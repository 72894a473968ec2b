#pragma once
// The exact compiler command kbuild uses for each driver file, and its translation to clang.

#include "autodriver/core/kernel.hpp"
#include "autodriver/util/expected.hpp"

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::apidiff {

/// gcc argv (compiler first) per source file, keyed by the source's absolute path as kbuild printed it.
using CompileCommands = std::map<std::string, std::vector<std::string>>;

/// Compile commands in `make V=1` output: lines that run a C compiler with `-c` on a `.c` file
/// (kbuild appends "; objtool ..." to some; that part is cut).
CompileCommands parse_verbose_build(std::string_view make_output);

/// Compile commands from kbuild's `.<obj>.o.cmd` files under `tree` ("savedcmd_x.o := gcc ..." on 6.x,
/// "cmd_x.o := ..." before); only written for objects that compiled.
CompileCommands read_cmd_files(const std::filesystem::path& tree);

/// clang arguments for libclang from a gcc command run in `cwd`: keeps -I/-D/-U/-include/-isystem/
/// -nostdinc/-std/-m/-f flags clang knows, drops the compiler, -c/-o, the source, -W*/-Wp/-Wa, plugins
/// and gcc-only flags; relative include paths become absolute; adds -w and -ferror-limit=0.
std::vector<std::string> to_clang_args(const std::vector<std::string>& gcc_argv, const std::filesystem::path& cwd);

struct CaptureSpec {
  std::string build_cmd; ///< empty: make -C {kdir} M={tree} modules; else the user's command
  std::chrono::seconds timeout{300};
  std::filesystem::path subdir; ///< the driver's folder inside `tree` (a root); empty: tree itself
};

struct Capture {
  CompileCommands commands; ///< keyed by the path inside `tree`
  std::string command;      ///< rendered argv of the build
  int exit_code = 0;
};

/// Builds `tree` (a scratch copy: it is written) once against `kernel` with V=1 and -k and collects
/// the compile command of every C file, also those that failed to compile.
util::Expected<Capture> capture_compile_commands(const core::Kernel& kernel, const std::filesystem::path& tree,
                                                 const CaptureSpec& spec);

} // namespace autodriver::apidiff
