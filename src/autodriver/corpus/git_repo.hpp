#pragma once
// A thin RAII layer over libgit2: owning handles, one-time library init, and errors as Expected.
// Only what `corpus mine` needs; callers that want more use the raw handles with .get().

#include "autodriver/util/expected.hpp"

#include <git2.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace autodriver::corpus::git {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using Handle = std::unique_ptr<T, Deleter<T, Free>>;

using Repository = Handle<git_repository, git_repository_free>;
using Commit = Handle<git_commit, git_commit_free>;
using Tree = Handle<git_tree, git_tree_free>;
using Diff = Handle<git_diff, git_diff_free>;
using Patch = Handle<git_patch, git_patch_free>;
using Blob = Handle<git_blob, git_blob_free>;
using Object = Handle<git_object, git_object_free>;
using Revwalk = Handle<git_revwalk, git_revwalk_free>;

/// The last libgit2 error as "what: libgit2 message", for one-line reports.
util::Error last_error(util::ErrorKind kind, std::string_view what);
/// The error kind of a repository read that failed (an object or path not there: a corrupt or
/// shallow clone); `corpus mine` skips the commit, while any other error (writing the output) stops it.
inline constexpr util::ErrorKind k_repo_error = util::ErrorKind::not_found;

/// Initialises libgit2 once per process (idempotent, thread-safe).
void ensure_init();

/// The commit a revision names ("v6.1", "HEAD~3", a sha); peels tags. Error kind not_found
/// when the revision does not exist in `repo`.
util::Expected<Commit> resolve_commit(git_repository* repo, const std::string& rev);

/// Opens the repository at `path` (work tree or bare, no upward search). Error kind config
/// when `path` is not a git repository.
util::Expected<Repository> open_repository(const std::filesystem::path& path);

/// Hex sha of an object id.
std::string to_hex(const git_oid& id);

/// Every version a repository's history holds of the files `wanted` accepts: the commits
/// reachable from `rev`, oldest first; `visit(path, commit_hex, text)` once per distinct content,
/// at the first commit that has it (a file's text its maintainers later deleted is still seen).
/// Returns how many commits were read.
using FileVersionVisitor = std::function<void(const std::string& path, const std::string& commit, std::string_view text)>;
util::Expected<int> each_file_version(git_repository* repo, const std::string& rev,
                                      const std::function<bool(std::string_view path)>& wanted, const FileVersionVisitor& visit);

} // namespace autodriver::corpus::git
