#include "autodriver/loop/patch_series.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

namespace autodriver::loop {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Identity {
  std::string name, email;
};

static util::Expected<util::RunResult> git(const fs::path& repo, std::vector<std::string> args, const Identity& who) {
  util::RunRequest req;
  req.argv = {"git", "-c", "user.name=" + who.name, "-c", "user.email=" + who.email, "-c", "commit.gpgsign=false"};
  req.argv.insert(req.argv.end(), args.begin(), args.end());
  req.cwd = repo;
  req.timeout = 60s;
  req.stderr_mode = util::Stderr::merge;
  req.env_set = {{"LC_ALL", "C"}};
  auto r = util::run(req);
  if (!r) return r;
  if (!r->ok())
    return util::unexpected(util::says_disk_full(r->out) ? util::ErrorKind::io : util::ErrorKind::spawn,
                            "git " + args[0] + " failed: " + util::tail_capped(r->out, 300));
  return r;
}

/// The patches' author: --author "Name <email>", else the user's git identity, else autodriver.
static Identity author_of(const PortRequest& req) {
  static const std::regex k_author(R"(^\s*(.*?)\s*<([^<>\s]+@[^<>\s]+)>\s*$)");
  std::smatch m;
  if (std::regex_match(req.author, m, k_author) && !m[1].str().empty()) return {m[1].str(), m[2].str()};
  auto config = [](const std::string& key) {
    util::RunRequest r;
    r.argv = {"git", "config", "--get", key};
    r.timeout = 10s;
    auto out = util::run(r);
    return out && out->ok() ? std::string(util::trim(out->out)) : std::string();
  };
  Identity who{config("user.name"), config("user.email")};
  if (who.name.empty() || who.email.empty()) return {"autodriver", "autodriver@localhost"};
  return who;
}

/// Paragraphs wrapped at 72 columns (checkpatch wants commit description lines of at most 75);
/// a word longer than that (a path) stays whole on its own line.
static std::string wrap(const std::string& text, std::size_t width = 72) {
  std::string out;
  for (auto para : util::split_lines(text)) {
    std::string line;
    for (const auto& word : util::split_words(para)) {
      if (!line.empty() && line.size() + 1 + word.size() > width) {
        out += line + "\n";
        line.clear();
      }
      line += (line.empty() ? "" : " ") + word;
    }
    out += line + "\n";
  }
  return out;
}

util::Expected<std::vector<std::string>> write_patch_series(const PortRequest& req, const PortReport& rep, const fs::path& repo,
                                                            const fs::path& pdir) {
  std::vector<std::string> out;
  if (rep.accepted.empty()) return out;
  if (auto c = util::copy_tree(req.tree, repo, util::SkipBuildProducts::yes); !c) return util::unexpected(c.error());
  const Identity who = author_of(req);
  for (auto args : std::vector<std::vector<std::string>>{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "original"}})
    if (auto r = git(repo, args, who); !r) return util::unexpected(r.error());
  // Subjects name the module ("vmxnet3: adapt to ..."), else the tree's folder.
  const fs::path folder = fs::absolute(req.subdir.empty() ? req.tree : req.tree / req.subdir).lexically_normal();
  std::string driver = rep.modules.size() == 1 ? rep.modules[0] : folder.filename().string();
  if (driver.empty() || driver == ".") driver = folder.parent_path().filename().string();
  std::string validation =
      rep.ok
          ? fmt::format("Validated by autodriver: the series builds against {}{}{}, and passes the integrity gate.", req.to,
                        req.boot ? " and the module loads in the target kernel under QEMU" : "",
                        req.from.empty() ? "" : " (it built against " + req.from + " before)")
          : fmt::format("autodriver could not validate the whole series: {} ({} error(s) remain).", rep.status, rep.final_errors);
  // --api-changes: the apidiff changes this edit's symbols name, as one line each in the body.
  auto api_lines = [&](const propose::Edit& e) {
    std::set<std::string> lines;
    auto names = [&](const std::string& s) {
      if (s.empty()) return false;
      std::string tag = s.starts_with("struct ") ? s.substr(7) : s.starts_with("union ") ? s.substr(6) : s;
      return std::find(e.symbols.begin(), e.symbols.end(), s) != e.symbols.end() ||
             std::find(e.symbols.begin(), e.symbols.end(), tag) != e.symbols.end();
    };
    if (rep.changes.is_array())
      for (const auto& d : rep.changes)
        for (const auto& c : d["changes"])
          if (names(c.value("symbol", "")) || names(c.value("to", "")) || // callback edits name the new type
              (c["member"].is_string() && names(c["member"].get<std::string>())))
            lines.insert("Kernel API change (apidiff " + req.from + " -> " + req.to + "): " + c.value("summary", ""));
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    return text.empty() ? text : "\n" + text;
  };
  for (std::size_t k = 0; k < rep.accepted.size(); ++k) {
    const auto& a = rep.accepted[k];
    for (const auto& [f, text] : a.snapshot)
      if (auto w = util::write_file(repo / f, text); !w) return util::unexpected(w.error());
    // Figures only as they were measured: an edit tried alone has its own; edits accepted by one
    // trial share that trial's, and the patch says which patches they were.
    std::string figures =
        a.group_size <= 1
            ? fmt::format("Build errors against {}: {} before this change, {} after it.", req.to, a.errors_before, a.errors_after)
            : fmt::format("This change was validated together with patches {}-{} of this series: build errors "
                          "against {}: {} before them, {} after them.",
                          a.group + 1, a.group + a.group_size, req.to, a.errors_before, a.errors_after);
    std::string evidence = a.edit.evidence.empty() ? std::string("the target kernel's headers")
                                                   : fmt::format("{}", fmt::join(a.edit.evidence, ", "));
    // A crash repair (loop/crash_repair) was judged by boots, not by build errors: its description says how.
    const bool crash_fix = a.edit.proposer == "crash-repair";
    std::string body = wrap(a.edit.description) + wrap(api_lines(a.edit)) + "\n" +
                       (crash_fix ? std::string()
                                  : wrap(fmt::format("This change was made by the {} proposer; kernel evidence ({} site(s)): {}.",
                                                     a.edit.proposer, a.edit.support, evidence)) +
                                        wrap(figures) + "\n") +
                       wrap(validation);
    if (req.signoff) body += fmt::format("\nSigned-off-by: {} <{}>\n", who.name, who.email);
    std::string msg = fmt::format("{}: {} {}\n\n{}", driver, crash_fix ? "fix" : "adapt to", a.edit.title, body);
    if (auto r = git(repo, {"add", "-A"}, who); !r) return util::unexpected(r.error());
    fs::path msgfile = repo / ".git" / "AD_MSG";
    if (auto w = util::write_file(msgfile, msg); !w) return util::unexpected(w.error());
    if (auto r = git(repo, {"commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", msgfile.string()}, who); !r)
      return util::unexpected(r.error());
  }
  std::error_code ec;
  fs::create_directories(pdir, ec);
  if (ec) return util::unexpected(util::ErrorKind::io, fmt::format("cannot create {}: {}", pdir.string(), ec.message()));
  auto r =
      git(repo, {"format-patch", "-q", "--numbered", "-o", pdir.string(), "HEAD~" + std::to_string(rep.accepted.size())}, who);
  if (!r) return util::unexpected(r.error());
  for (const auto& e : fs::directory_iterator(pdir, ec)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json checkpatch_series(const std::vector<std::string>& patches, const fs::path& source) {
  const fs::path script = source / "scripts" / "checkpatch.pl";
  if (source.empty() || !fs::is_regular_file(script))
    return {{"ran", false}, {"why", "the target kernel's source (scripts/checkpatch.pl) is not at hand"}};
  // "x.patch:12: WARNING:LONG_LINE: line length of 104 exceeds 100 columns" (--terse, --show-types)
  static const std::regex k_finding(R"(^[^:]*:\d+: (ERROR|WARNING|CHECK):([A-Z_0-9]+): (.*)$)");
  int errors = 0, warnings = 0, checks = 0;
  nlohmann::json per = nlohmann::json::array();
  for (const auto& p : patches) {
    util::RunRequest r;
    // --no-tree: the patch is checked on its own; the script still reads its data files
    // (spelling.txt, const_structs.checkpatch) next to itself.
    r.argv = {"perl", script.string(), "--strict", "--no-tree", "--terse", "--show-types", "--no-summary", "--color=never", p};
    r.cwd = source;
    r.timeout = 120s;
    r.stderr_mode = util::Stderr::merge;
    auto out = util::run(r);
    if (!out) return {{"ran", false}, {"why", out.error().message}};
    nlohmann::json findings = nlohmann::json::array();
    for (auto line : util::split_lines(out->out)) {
      std::smatch m;
      std::string l(line);
      if (!std::regex_match(l, m, k_finding)) continue;
      const std::string level = m[1].str();
      (level == "ERROR" ? errors : level == "WARNING" ? warnings : checks) += 1;
      findings.push_back({{"level", level}, {"type", m[2].str()}, {"message", m[3].str()}});
    }
    per.push_back({{"patch", fs::path(p).filename().string()}, {"findings", findings}});
  }
  return {{"ran", true}, {"errors", errors}, {"warnings", warnings}, {"checks", checks}, {"patches", per}};
}

} // namespace autodriver::loop
