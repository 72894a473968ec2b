#include "autodriver/corpus/git_repo.hpp"

#include <fmt/format.h>

#include <mutex>
#include <unordered_set>
#include <vector>

namespace autodriver::corpus::git {

util::Error last_error(util::ErrorKind kind, std::string_view what) {
  const git_error* e = git_error_last();
  std::string msg = e && e->message ? e->message : "unknown libgit2 error";
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '.')) msg.pop_back();
  return util::make_error(kind, fmt::format("{}: {}", what, msg));
}

void ensure_init() {
  static std::once_flag once;
  // Never shut down: handles may outlive main's locals, and the OS frees everything at exit.
  std::call_once(once, [] { git_libgit2_init(); });
}

util::Expected<Repository> open_repository(const std::filesystem::path& path) {
  ensure_init();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return util::unexpected(util::ErrorKind::not_found, fmt::format("{} does not exist", path.string()));
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) != 0)
    return util::unexpected(
        util::ErrorKind::config,
        fmt::format("{} is not a git repository (give the top of a clone, e.g. a linux.git checkout)", path.string()));
  return Repository(raw);
}

util::Expected<Commit> resolve_commit(git_repository* repo, const std::string& rev) {
  git_object* obj = nullptr;
  if (git_revparse_single(&obj, repo, rev.c_str()) != 0)
    return util::unexpected(util::ErrorKind::not_found, fmt::format("unknown revision '{}'", rev));
  Object owned(obj);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, owned.get(), GIT_OBJECT_COMMIT) != 0)
    return util::unexpected(util::ErrorKind::not_found, fmt::format("revision '{}' does not name a commit", rev));
  return Commit(reinterpret_cast<git_commit*>(peeled));
}

std::string to_hex(const git_oid& id) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &id);
  return buf;
}

namespace {

struct TreeWalk {
  const std::function<bool(std::string_view)>* wanted;
  std::unordered_set<std::string>* seen; // raw blob ids
  std::vector<std::pair<std::string, git_oid>> fresh;
};

int collect_blob(const char* root, const git_tree_entry* entry, void* payload) {
  auto* w = static_cast<TreeWalk*>(payload);
  if (git_tree_entry_type(entry) != GIT_OBJECT_BLOB) return 0;
  std::string path = std::string(root) + git_tree_entry_name(entry);
  if (!(*w->wanted)(path)) return 0;
  const git_oid* id = git_tree_entry_id(entry);
  if (w->seen->insert(std::string(reinterpret_cast<const char*>(id->id), GIT_OID_RAWSZ)).second) w->fresh.emplace_back(path, *id);
  return 0;
}

} // namespace

util::Expected<int> each_file_version(git_repository* repo, const std::string& rev,
                                      const std::function<bool(std::string_view path)>& wanted, const FileVersionVisitor& visit) {
  auto tip = resolve_commit(repo, rev);
  if (!tip) return util::unexpected(tip.error());
  git_revwalk* walk_raw = nullptr;
  if (git_revwalk_new(&walk_raw, repo) != 0) return util::unexpected(last_error(util::ErrorKind::io, "revwalk"));
  Revwalk walk(walk_raw);
  git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);
  if (git_revwalk_push(walk.get(), git_commit_id(tip->get())) != 0)
    return util::unexpected(last_error(util::ErrorKind::io, "revwalk"));
  std::unordered_set<std::string> seen;
  int commits = 0;
  git_oid oid;
  while (git_revwalk_next(&oid, walk.get()) == 0) {
    git_commit* c_raw = nullptr;
    if (git_commit_lookup(&c_raw, repo, &oid) != 0) continue; // a shallow or damaged clone: skip
    Commit commit(c_raw);
    git_tree* t_raw = nullptr;
    if (git_commit_tree(&t_raw, commit.get()) != 0) continue;
    Tree tree(t_raw);
    TreeWalk w{&wanted, &seen, {}};
    git_tree_walk(tree.get(), GIT_TREEWALK_PRE, collect_blob, &w);
    ++commits;
    std::string hex = to_hex(oid);
    for (const auto& [path, id] : w.fresh) {
      git_blob* b_raw = nullptr;
      if (git_blob_lookup(&b_raw, repo, &id) != 0) continue;
      Blob blob(b_raw);
      visit(path, hex,
            std::string_view(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                             static_cast<std::size_t>(git_blob_rawsize(blob.get()))));
    }
  }
  return commits;
}

} // namespace autodriver::corpus::git
