#include "autodriver/loop/patch_series.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace autodriver::loop {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

static util::Expected<util::RunResult> git(const fs::path& repo, std::vector<std::string> args) {
  util::RunRequest req;
  req.argv = {"git", "-c", "user.name=autodriver", "-c", "user.email=autodriver@localhost", "-c", "commit.gpgsign=false"};
  req.argv.insert(req.argv.end(), args.begin(), args.end());
  req.cwd = repo;
  req.timeout = 60s;
  req.stderr_mode = util::Stderr::merge;
  req.env_set = {{"GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z"}, {"GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z"}, {"LC_ALL", "C"}};
  auto r = util::run(req);
  if (!r) return r;
  if (!r->ok()) return util::unexpected(util::ErrorKind::spawn, "git " + args[0] + " failed: " + util::tail_capped(r->out, 300));
  return r;
}

util::Expected<std::vector<std::string>> write_patch_series(const PortRequest& req, const PortReport& rep,
                                                            const fs::path& repo) {
  std::vector<std::string> out;
  if (rep.accepted.empty()) return out;
  if (auto c = util::copy_tree(req.tree, repo, util::SkipBuildProducts::yes); !c) return util::unexpected(c.error());
  for (auto args : std::vector<std::vector<std::string>>{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "original"}})
    if (auto r = git(repo, args); !r) return util::unexpected(r.error());
  // Subjects name the module ("vmxnet3: adapt to ..."), else the tree's folder.
  std::string driver = rep.modules.size() == 1 ? rep.modules[0] : fs::absolute(req.tree).filename().string();
  if (driver.empty() || driver == ".") driver = fs::absolute(req.tree).parent_path().filename().string();
  std::string validation =
      rep.ok ? fmt::format("Validated by autodriver: the series builds against {}{}{}, and passes the integrity gate.",
                           req.to, req.boot ? " and the module loads in the target kernel under QEMU" : "",
                           req.from.empty() ? "" : " (it built against " + req.from + " before)")
             : fmt::format("autodriver could not validate the whole series: {} ({} error(s) remain).", rep.status,
                           rep.final_errors);
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
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out.empty() ? out : "\n" + out;
  };
  for (const auto& a : rep.accepted) {
    for (const auto& [f, text] : a.snapshot)
      if (auto w = util::write_file(repo / f, text); !w) return util::unexpected(w.error());
    std::string msg = fmt::format("{}: adapt to {}\n\n{}\n{}\nThis change was made by the {} proposer; kernel evidence "
                                  "({} site(s)): {}.\nBuild errors against {}: {} before, {} after this change.\n\n{}\n",
                                  driver, a.edit.title, a.edit.description, api_lines(a.edit), a.edit.proposer, a.edit.support,
                                  a.edit.evidence.empty() ? std::string("the target kernel's headers")
                                                          : fmt::format("{}", fmt::join(a.edit.evidence, ", ")),
                                  req.to, a.errors_before, a.errors_after, validation);
    if (auto r = git(repo, {"add", "-A"}); !r) return util::unexpected(r.error());
    fs::path msgfile = repo / ".git" / "AD_MSG";
    if (auto w = util::write_file(msgfile, msg); !w) return util::unexpected(w.error());
    if (auto r = git(repo, {"commit", "-q", "--allow-empty", "-F", msgfile.string()}); !r)
      return util::unexpected(r.error());
  }
  fs::path pdir = fs::absolute(req.out) / "patches";
  std::error_code ec;
  fs::create_directories(pdir, ec);
  auto r = git(repo, {"format-patch", "-q", "--numbered", "-o", pdir.string(), "HEAD~" + std::to_string(rep.accepted.size())});
  if (!r) return util::unexpected(r.error());
  for (const auto& e : fs::directory_iterator(pdir, ec)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace autodriver::loop
