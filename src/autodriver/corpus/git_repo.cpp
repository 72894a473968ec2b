#include "autodriver/corpus/git_repo.hpp"

#include <fmt/format.h>

#include <mutex>

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

} // namespace autodriver::corpus::git
