#include "autodriver/apidiff/kbuild_flags.hpp"

#include "autodriver/util/sandbox.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <array>

namespace fs = std::filesystem;

namespace autodriver::apidiff {

namespace {

bool is_compiler(std::string_view word) {
  auto name = fs::path(std::string(word)).filename().string();
  return name == "cc" || name == "gcc" || name == "clang" || name.find("-gcc") != std::string::npos || name.starts_with("gcc-") ||
         name.starts_with("clang-");
}

/// The argv of a compile command line, or empty: the C file is the last word ending in ".c".
std::vector<std::string> compile_argv(std::string_view line) {
  line = util::trim(line);
  // kbuild joins the compile and objtool/recordmcount steps with ';' (and sometimes wraps in "{ ... }").
  if (line.starts_with("{")) line.remove_prefix(1);
  if (auto semi = line.find(" ; "); semi != std::string_view::npos) line = line.substr(0, semi);
  if (auto semi = line.find("; "); semi != std::string_view::npos) line = line.substr(0, semi);
  auto words = util::split_command(line);
  if (words.size() < 3 || !is_compiler(words[0])) return {};
  bool has_c = false;
  for (const auto& w : words) has_c = has_c || w == "-c";
  if (!has_c || !words.back().ends_with(".c")) return {};
  return words;
}

} // namespace

CompileCommands parse_verbose_build(std::string_view make_output) {
  CompileCommands out;
  for (auto line : util::split_lines(make_output))
    if (auto argv = compile_argv(line); !argv.empty()) out[argv.back()] = std::move(argv);
  return out;
}

CompileCommands read_cmd_files(const fs::path& tree) {
  CompileCommands out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto name = it->path().filename().string();
    if (!util::entry_is_file(*it) || !name.starts_with(".") || !name.ends_with(".o.cmd")) continue;
    auto text = util::read_file(it->path());
    if (!text) continue;
    for (auto line : util::split_lines(*text)) {
      auto assign = line.find(" := ");
      if (assign == std::string_view::npos || !(line.starts_with("savedcmd_") || line.starts_with("cmd_"))) continue;
      if (auto argv = compile_argv(line.substr(assign + 4)); !argv.empty()) out[argv.back()] = std::move(argv);
    }
  }
  return out;
}

std::vector<std::string> to_clang_args(const std::vector<std::string>& gcc_argv, const fs::path& cwd) {
  // Flags gcc accepts and clang 14 rejects (or that only drive code generation) in kbuild's command
  // lines of the 6.1 and 6.12 Debian kernels; prefix match.
  static constexpr std::array<std::string_view, 24> k_drop_prefix = {
      "-W", // warnings, -Wp,-MMD deps file, -Wa assembler flags: none change declarations
      "-fconserve-stack",
      "-mrecord-mcount",
      "-fno-allow-store-data-races",
      "-mindirect-branch",
      "-fzero-call-used-regs",
      "-ftrivial-auto-var-init",
      "-mfunction-return",
      "-fmin-function-alignment",
      "-fplugin",
      "-fno-var-tracking",
      "-fno-ipa-",
      "-mharden-sls",
      "-mskip-rax-setup",
      "-fpatchable-function-entry",
      "-falign-jumps",
      "-falign-loops",
      "-fno-stack-clash-protection",
      "-fmacro-prefix-map",
      "-fsanitize",
      "-fno-inline-functions-called-once",
      "-mpreferred-stack-boundary",
      "-fcf-protection",
      "-g"};
  auto absolute = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : (cwd / p).lexically_normal().string(); };
  std::vector<std::string> out;
  for (std::size_t i = 1; i < gcc_argv.size(); ++i) {
    const std::string& a = gcc_argv[i];
    if (a == "-c" || (i + 1 == gcc_argv.size() && a.ends_with(".c"))) continue;
    if (a == "-o" || a == "-MF" || a == "-MT") {
      ++i;
      continue;
    }
    bool drop = false;
    for (auto p : k_drop_prefix) drop = drop || a.starts_with(p);
    if (drop) continue;
    if (a == "-include" || a == "-isystem" || a == "-I" || a == "-iquote" || a == "-idirafter") {
      out.push_back(a);
      if (i + 1 < gcc_argv.size()) out.push_back(absolute(gcc_argv[++i]));
      continue;
    }
    if (a.starts_with("-I") && a.size() > 2) {
      out.push_back("-I" + absolute(a.substr(2)));
      continue;
    }
    out.push_back(a);
  }
  out.push_back("-w");
  out.push_back("-ferror-limit=0");
  return out;
}

util::Expected<Capture> capture_compile_commands(const core::Kernel& kernel, const fs::path& tree, const CaptureSpec& spec) {
  util::RunRequest req;
  const fs::path driver_dir = spec.subdir.empty() ? tree : (tree / spec.subdir).lexically_normal();
  req.cwd = driver_dir;
  req.timeout = spec.timeout;
  req.stderr_mode = util::Stderr::merge;
  req.output_cap = 16 * 1024 * 1024;
  req.env_set = {{"LC_ALL", "C"}, {"LANG", "C"}, {"KBUILD_VERBOSE", "1"}};
  req.env_unset = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "ARCH", "CROSS_COMPILE"};
  if (spec.build_cmd.empty()) {
    req.argv = {"make", "-k", "-j2", "-C", kernel.build_dir.string(), "M=" + driver_dir.string(), "V=1", "modules"};
  } else {
    const std::vector<std::pair<std::string, std::string>> vars = {{"kdir", kernel.build_dir.string()},
                                                                   {"kver", kernel.release},
                                                                   {"tree", driver_dir.string()},
                                                                   {"src", driver_dir.string()}};
    for (auto& w : util::split_command(spec.build_cmd)) req.argv.push_back(util::substitute(w, vars));
    if (req.argv.empty()) return util::unexpected(util::ErrorKind::config, "empty --build-cmd");
    if (fs::path(req.argv[0]).filename() == "make") {
      req.argv.insert(req.argv.begin() + 1, "-k");
      req.argv.push_back("V=1");
    }
  }
  Capture cap;
  cap.command = util::render_argv(req.argv);
  util::log_debug("apidiff: {}", cap.command);
  if (auto s = util::sandbox_request(req, kernel.build_sandbox(tree)); !s) return util::unexpected(s.error());
  auto r = util::run(req);
  if (!r) return util::unexpected(r.error());
  if (r->interrupted) return util::unexpected(util::ErrorKind::interrupted, "interrupted");
  if (r->timed_out)
    return util::unexpected(util::ErrorKind::timeout, fmt::format("{} killed after {} s", cap.command, spec.timeout.count()));
  cap.exit_code = r->exit_code;
  cap.commands = parse_verbose_build(r->out);
  for (auto& [file, argv] : read_cmd_files(tree)) cap.commands.try_emplace(file, std::move(argv));
  return cap;
}

} // namespace autodriver::apidiff
