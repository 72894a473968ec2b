// Gate "integrity": the anti-cheat comparison of a ported tree with its original.
// Rules live in integrity_rules.cpp; this file walks the trees, diffs them and runs the gate.

#include "autodriver/gate/integrity.hpp"
#include "autodriver/gate/integrity_rules.hpp"

#include "autodriver/gate/gate.hpp"
#include "autodriver/gate/kbuild.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace autodriver::gate {

namespace fs = std::filesystem;

namespace {

constexpr std::uintmax_t k_max_file_bytes = 4 * 1024 * 1024;

bool is_build_product(const fs::path& rel) {
  for (const auto& part : rel)
    if (part == ".git" || part == ".tmp_versions") return true;
  auto name = rel.filename().string();
  auto ext = rel.extension().string();
  return ext == ".o" || ext == ".ko" || ext == ".mod" || ext == ".a" || name.ends_with(".mod.c") || name == "Module.symvers" ||
         name == "modules.order" || (name.starts_with(".") && name.ends_with(".cmd")) || name.ends_with(".o.d");
}

bool is_binary(std::string_view text) { return text.substr(0, 8192).find('\0') != std::string_view::npos; }

/// Parses `@@ -a[,b] +c[,d] @@` lines of `diff -U0` into blocks with first-line numbers.
std::vector<integrity::Block> parse_unified(std::string_view out) {
  std::vector<integrity::Block> blocks;
  auto num = [](std::string_view s, std::size_t& i) {
    int v = 0;
    auto r = std::from_chars(s.data() + i, s.data() + s.size(), v);
    i = static_cast<std::size_t>(r.ptr - s.data());
    return v;
  };
  std::size_t pos = 0;
  while (pos < out.size()) {
    auto nl = out.find('\n', pos);
    std::string_view line = out.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? out.size() : nl + 1;
    if (!line.starts_with("@@ -")) continue;
    std::size_t i = 4;
    integrity::Block b;
    int a = num(line, i), ac = 1, c = 0, cc = 1;
    if (i < line.size() && line[i] == ',') ++i, ac = num(line, i);
    if (i + 2 < line.size() && line[i] == ' ' && line[i + 1] == '+') i += 2;
    c = num(line, i);
    if (i < line.size() && line[i] == ',') ++i, cc = num(line, i);
    // With a zero count, unified format names the line *before* the change.
    b.o_first = ac == 0 ? a + 1 : a;
    b.o_count = ac;
    b.c_first = cc == 0 ? c + 1 : c;
    b.c_count = cc;
    blocks.push_back(b);
  }
  return blocks;
}

std::vector<integrity::Block> diff_blocks(const fs::path& a, const fs::path& b, int o_lines, int c_lines) {
  util::RunRequest req;
  req.argv = {"diff", "-U0", "--text", a.string(), b.string()};
  req.timeout = std::chrono::seconds(60);
  req.env_set = {{"LC_ALL", "C"}};
  auto r = util::run(req);
  if (r && (r->exit_code == 0 || r->exit_code == 1) && r->out_dropped == 0) return parse_unified(r->out);
  // diff could not say: treat the whole file as one replaced block (conservative).
  util::log_info("integrity: diff failed on {}: {}", b.string(), r ? r->status_text() : r.error().describe());
  return {integrity::Block{1, o_lines, 1, c_lines}};
}

} // namespace

const std::vector<std::string>& integrity_rule_ids() {
  static const std::vector<std::string> k_ids = {
      "function-deleted", "function-stubbed",       "code-disabled",    "makefile-object-dropped", "warning-suppressed",
      "silencing-cast",   "ops-assignment-removed", "unrelated-change", "shim-self-reference",     "shim-emptied"};
  return k_ids;
}

IntegrityReport check_integrity(const IntegrityInput& in) {
  IntegrityReport report;
  integrity::Context ctx(in, report);

  std::set<fs::path> paths;
  for (const auto* root : {&in.original, &in.candidate})
    for (auto& p : util::list_files(*root))
      if (!is_build_product(p)) paths.insert(p);

  std::vector<integrity::FilePair> files;
  for (const auto& rel : paths) {
    integrity::FilePair f;
    f.rel = rel.generic_string();
    fs::path op = in.original / rel, cp = in.candidate / rel;
    std::error_code ec;
    f.in_original = fs::is_regular_file(op, ec);
    f.in_candidate = fs::is_regular_file(cp, ec);
    auto too_big = [&](const fs::path& p) { return fs::file_size(p, ec) > k_max_file_bytes; };
    if ((f.in_original && too_big(op)) || (f.in_candidate && too_big(cp))) {
      auto a = f.in_original ? util::read_file(op) : util::Expected<std::string>(std::string());
      auto b = f.in_candidate ? util::read_file(cp) : util::Expected<std::string>(std::string());
      if (!a || !b || *a != *b) {
        report.changed_files.push_back(f.rel);
        ctx.add("unrelated-change", f.rel, 0,
                fmt::format("file larger than {} MiB changed: too large to check", k_max_file_bytes >> 20));
      }
      continue;
    }
    auto a = f.in_original ? util::read_file(op) : util::Expected<std::string>(std::string());
    auto b = f.in_candidate ? util::read_file(cp) : util::Expected<std::string>(std::string());
    if (!a || !b) {
      report.changed_files.push_back(f.rel);
      ctx.add("unrelated-change", f.rel, 0, "cannot read the file: " + (!a ? a.error() : b.error()).describe());
      continue;
    }
    if (f.in_original == f.in_candidate && *a == *b) {
      if (integrity::is_c_source(f.rel)) ctx.note_candidate_functions(csrc::scan(*b));
      continue;
    }
    report.changed_files.push_back(f.rel);
    if (is_binary(*a) || is_binary(*b)) {
      ctx.add("unrelated-change", f.rel, 0, "binary file changed");
      continue;
    }
    f.original_text = std::move(*a);
    f.candidate_text = std::move(*b);
    f.o = csrc::scan(f.original_text);
    f.c = csrc::scan(f.candidate_text);
    if (f.original_text.empty()) f.o.raw.clear();
    if (f.candidate_text.empty()) f.c.raw.clear();
    f.blocks = diff_blocks(f.in_original ? op : fs::path("/dev/null"), f.in_candidate ? cp : fs::path("/dev/null"),
                           f.o.line_count(), f.c.line_count());
    report.hunks += static_cast<int>(f.blocks.size());
    if (integrity::is_c_source(f.rel)) ctx.note_candidate_functions(f.c);
    files.push_back(std::move(f));
  }
  for (const auto& f : files)
    if (integrity::is_c_source(f.rel)) ctx.note_passed_functions(f);
  for (auto& f : files) {
    f.build_line_map();
    if (integrity::is_c_source(f.rel)) integrity::check_c_file(ctx, f);
    else if (integrity::is_makefile(f.rel)) integrity::check_makefile(ctx, f);
  }
  std::sort(report.changed_files.begin(), report.changed_files.end());
  report.ok = report.violations.empty();
  return report;
}

nlohmann::json to_json(const IntegrityReport& r) {
  nlohmann::json v = nlohmann::json::array();
  std::map<std::string, int> counts;
  for (const auto& id : integrity_rule_ids()) counts[id] = 0;
  for (const auto& x : r.violations) {
    v.push_back({{"rule", x.rule}, {"file", x.file}, {"line", x.line}, {"detail", x.detail}});
    ++counts[x.rule];
  }
  return {{"ok", r.ok}, {"hunks", r.hunks}, {"changed_files", r.changed_files}, {"violations", v}, {"rule_counts", counts}};
}

namespace {

class IntegrityGate final : public Gate {
public:
  std::string_view id() const override { return "integrity"; }

  core::GateResult run(const GateInput& in) override {
    core::GateResult g;
    g.gate = "integrity";
    g.kernel = in.kernel.release;
    auto start = std::chrono::steady_clock::now();
    if (in.request.baseline.empty()) {
      g.skipped = true;
      g.ok = true;
      g.summary = "skipped: no --baseline (the original tree) given";
      return g;
    }
    // The original's own diagnostics on this kernel say which edits the port may make.
    fs::path base_tree = in.scratch / "integrity-baseline";
    if (auto c = util::copy_tree(in.request.baseline, base_tree, util::SkipBuildProducts::yes); !c) {
      g.infra_error = c.error().describe();
      g.summary = "cannot copy the baseline tree";
      return g;
    }
    BuildSpec spec;
    spec.build_cmd = in.request.build_cmd;
    spec.timeout = in.request.build_timeout;
    spec.jobs = in.request.jobs;
    spec.subdir = in.request.subdir;
    auto b = build_tree(in.kernel, base_tree, spec);
    if (!b) {
      g.infra_error = "baseline build: " + b.error().describe();
      g.summary = "could not build the baseline tree: " + b.error().describe();
      return g;
    }
    if (b->run.timed_out) {
      g.infra_error = fmt::format("baseline build did not finish within {} s", spec.timeout.count());
      g.summary = *g.infra_error;
      return g;
    }
    IntegrityInput ii;
    ii.original = in.request.baseline;
    ii.candidate = in.request.tree;
    ii.diagnostics = b->diagnostics;
    IntegrityReport rep = check_integrity(ii);
    g.ok = rep.ok;
    g.details = to_json(rep);
    g.details["baseline_command"] = b->command;
    g.details["baseline_diagnostics"] = b->diagnostics.size();
    for (const auto& v : rep.violations) {
      core::Diagnostic d;
      d.tool = "integrity";
      d.file = v.file;
      d.line = v.line;
      d.severity = core::Severity::error;
      d.message = v.rule + ": " + v.detail;
      d.symbols = {v.rule};
      g.diagnostics.push_back(std::move(d));
    }
    if (rep.ok) {
      g.summary = fmt::format("no violation ({} changed file(s), {} hunk(s), {} baseline diagnostic(s))",
                              rep.changed_files.size(), rep.hunks, b->diagnostics.size());
    } else {
      const auto& first = rep.violations.front();
      g.summary = fmt::format("{} violation(s), first: {} at {}:{}", rep.violations.size(), first.rule, first.file, first.line);
    }
    g.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    return g;
  }
};

} // namespace

std::unique_ptr<Gate> make_integrity_gate() { return std::make_unique<IntegrityGate>(); }

} // namespace autodriver::gate
