// Gate "build": compile the driver against the target kernel and parse gcc/kbuild/modpost output.

#include "autodriver/gate/diag_refine.hpp"
#include "autodriver/gate/gate.hpp"
#include "autodriver/gate/gcc_parser.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/sandbox.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace autodriver::gate {

namespace fs = std::filesystem;

bool has_kbuild_makefile(const fs::path& tree) {
  return fs::exists(tree / "Makefile") || fs::exists(tree / "Kbuild") || fs::exists(tree / "makefile") ||
         fs::exists(tree / "GNUmakefile");
}

void clean_build_products(const fs::path& tree) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (auto it = fs::recursive_directory_iterator(tree, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!util::entry_is_file(*it)) continue;
    auto name = it->path().filename().string();
    auto ext = it->path().extension().string();
    if (ext == ".o" || ext == ".ko" || ext == ".mod" || name.ends_with(".mod.c") || name == "Module.symvers" ||
        name == "modules.order" || (name.starts_with(".") && name.ends_with(".cmd")))
      doomed.push_back(it->path());
  }
  for (const auto& p : doomed) fs::remove(p, ec);
}

std::string build_failure_tail(std::string_view out, std::size_t lines) {
  std::vector<std::string> kept;
  for (auto line : util::split_lines(out)) {
    line = util::trim(line);
    if (line.empty() || line.find(": Entering directory") != std::string_view::npos ||
        line.find(": Leaving directory") != std::string_view::npos)
      continue;
    kept.emplace_back(line.substr(0, 300));
  }
  if (kept.size() > lines) kept.erase(kept.begin(), kept.end() - static_cast<long>(lines));
  std::string s;
  for (const auto& l : kept) s += (s.empty() ? "" : "\n") + l;
  return s;
}

std::string expand_dkms_names(std::string word, const std::vector<std::pair<std::string, std::string>>& names) {
  for (const auto& [k, v] : names) {
    for (const std::string& form : {"${" + k + "}", "$" + k}) {
      std::size_t at = 0;
      while ((at = word.find(form, at)) != std::string::npos) {
        // `$kernelver` only as a whole name ($kernelversion is another variable).
        std::size_t end = at + form.size();
        if (form[1] != '{' && end < word.size() && (std::isalnum(static_cast<unsigned char>(word[end])) || word[end] == '_')) {
          at = end;
          continue;
        }
        word.replace(at, form.size(), v);
        at += v.size();
      }
    }
  }
  return word;
}

util::Expected<BuildRun> build_tree(const core::Kernel& kernel, const fs::path& tree, const BuildSpec& spec) {
  util::RunRequest req;
  req.cwd = spec.subdir.empty() ? tree : tree / spec.subdir;
  // The driver's folder inside the sandbox (the tree, or its subfolder under a --root).
  const std::string driver_dir =
      spec.subdir.empty() ? std::string(k_sandbox_tree) : (fs::path(k_sandbox_tree) / spec.subdir).lexically_normal().string();
  req.timeout = spec.timeout;
  req.stderr_mode = util::Stderr::merge;
  req.output_cap = 8 * 1024 * 1024;
  // ASCII quotes in gcc messages, no colour, no parallel output interleaving surprises.
  req.env_set = {{"LC_ALL", "C"}, {"LANG", "C"}, {"GCC_COLORS", ""}, {"KBUILD_VERBOSE", "0"}};
  req.env_unset = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "ARCH", "CROSS_COMPILE"};
  if (spec.build_cmd.empty()) {
    // -k: every object is compiled even when one fails, so one build reports every file's errors
    // (a repair must not look like a regression because it lets make reach the next broken file).
    req.argv = {"make",
                "-k",
                fmt::format("-j{}", spec.jobs > 0 ? spec.jobs : util::available_cpus()),
                "-C",
                kernel.build_dir.string(),
                "M=" + driver_dir};
    for (const auto& a : spec.extra_make_args) req.argv.push_back(a);
    if (spec.objects.empty()) req.argv.push_back("modules");
    for (const auto& o : spec.objects) {
      // kbuild names single objects relative to M=.
      fs::path rel = spec.subdir.empty() ? fs::path(o) : fs::path(o).lexically_relative(spec.subdir);
      if (rel.empty() || *rel.begin() == "..")
        return util::unexpected(util::ErrorKind::config,
                                fmt::format("object {} is outside the driver's folder {}", o, spec.subdir.string()));
      req.argv.push_back(rel.string());
    }
  } else {
    // What DKMS gives a MAKE line (kernelver, kernel_source_dir, arch): placeholders, $names and
    // ${names} of the command, and variables of its environment, so a dkms.conf line runs as is.
    const std::vector<std::pair<std::string, std::string>> dkms = {
        {"kernelver", kernel.release}, {"kernel_source_dir", kernel.build_dir.string()}, {"arch", "x86_64"}};
    std::vector<std::pair<std::string, std::string>> vars = {
        {"kdir", kernel.build_dir.string()}, {"kver", kernel.release}, {"tree", driver_dir}, {"src", driver_dir}};
    vars.insert(vars.end(), dkms.begin(), dkms.end());
    for (const auto& [k, v] : dkms) req.env_set[k] = v;
    for (auto& w : util::split_command(spec.build_cmd)) req.argv.push_back(util::substitute(expand_dkms_names(w, dkms), vars));
    if (req.argv.empty()) return util::unexpected(util::ErrorKind::config, "empty --build-cmd");
    if (fs::path(req.argv[0]).filename() == "make") req.argv.insert(req.argv.begin() + 1, "-k");
    for (const auto& a : spec.extra_make_args) req.argv.push_back(a);
  }
  BuildRun br;
  br.command = util::render_argv(req.argv);
  util::log_debug("build: {}", br.command);
  // The tree's Makefile and a --build-cmd are the driver's code: they run sandboxed, with the
  // kernel's toolchain root and tree read-only and only the scratch copy writable.
  // The tree is at one path inside the sandbox whichever copy is built (k_sandbox_tree).
  auto sandbox = kernel.build_sandbox(tree);
  sandbox.writable.clear();
  sandbox.moved.emplace_back(tree, k_sandbox_tree);
  if (auto s = util::sandbox_request(req, sandbox); !s) return util::unexpected(s.error());
  auto r = util::run(req);
  if (!r) return util::unexpected(r.error());
  br.run = std::move(*r);
  if (!br.run.ok() && util::says_disk_full(br.run.out))
    return util::unexpected(util::ErrorKind::io,
                            fmt::format("the file system holding {} is full (No space left on device): free space there, "
                                        "or set TMPDIR to a folder on a larger one",
                                        tree.string()));
  for (auto line : util::split_lines(br.run.out)) {
    line = util::trim(line);
    // Not kbuild's own link-time objects (foo.mod.o, .module-common.o): the driver's files.
    if (line.find("CC [M]") != std::string_view::npos && !line.ends_with(".mod.o") && !line.ends_with(".module-common.o")) {
      ++br.compiled;
      util::log_debug("build: {}", line);
    }
  }
  ParseOptions po;
  po.tree_root = k_sandbox_tree;
  po.subdir = spec.subdir.string();
  br.diagnostics = parse_build_output(br.run.out, po);
  refine_with_sources(br.diagnostics, tree);
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (util::entry_is_file(*it) && it->path().extension() == ".ko") br.modules.push_back(fs::relative(it->path(), tree));
  std::sort(br.modules.begin(), br.modules.end());
  return br;
}

namespace {

class KbuildGate final : public Gate {
public:
  std::string_view id() const override { return "build"; }

  core::GateResult run(const GateInput& in) override {
    core::GateResult g;
    g.gate = "build";
    g.kernel = in.kernel.release;
    auto start = std::chrono::steady_clock::now();
    BuildSpec spec;
    spec.build_cmd = in.request.build_cmd;
    spec.timeout = in.request.build_timeout;
    spec.jobs = in.request.jobs;
    spec.subdir = in.request.subdir;
    auto br = build_tree(in.kernel, in.work_tree, spec);
    g.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    if (!br) {
      g.infra_error = br.error().describe();
      g.summary = "could not run the build: " + br.error().message;
      return g;
    }
    int errors = 0, warnings = 0;
    for (const auto& d : br->diagnostics) {
      if (d.severity == core::Severity::error || d.severity == core::Severity::fatal) ++errors;
      if (d.severity == core::Severity::warning) ++warnings;
    }
    nlohmann::json mods = nlohmann::json::array();
    for (const auto& m : br->modules) mods.push_back(m.string());
    g.diagnostics = std::move(br->diagnostics);
    g.details = {{"command", br->command},
                 {"exit_code", br->run.exit_code},
                 {"timed_out", br->run.timed_out},
                 {"modules", mods},
                 {"errors", errors},
                 {"warnings", warnings},
                 {"log_tail", util::tail_capped(br->run.out, 16 * 1024)}};
    g.ok = br->run.ok() && !br->modules.empty();
    if (br->run.timed_out) g.summary = fmt::format("build did not finish within {} s", in.request.build_timeout.count());
    else if (br->run.interrupted) g.summary = "build interrupted";
    else if (g.ok) g.summary = fmt::format("built {} module(s), {} warning(s)", br->modules.size(), warnings);
    else if (br->run.ok()) g.summary = "the build succeeded but produced no .ko file";
    else if (errors == 0 && !br->run.out.empty()) {
      // Nothing the parser could read: the build stopped before the compiler ran (a Makefile's
      // own check, a missing tool); its last lines say why.
      const std::string tail = build_failure_tail(br->run.out);
      g.details["failure"] = tail;
      std::string one_line = tail;
      std::replace(one_line.begin(), one_line.end(), '\n', '|');
      g.summary = "the build failed before the compiler ran: " + one_line;
    } else g.summary = fmt::format("build failed: {} error(s), {} warning(s)", errors, warnings);
    return g;
  }
};

} // namespace

std::unique_ptr<Gate> make_kbuild_gate() { return std::make_unique<KbuildGate>(); }

} // namespace autodriver::gate
