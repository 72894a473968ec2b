#include "autodriver/corpus/tree_diff.hpp"

#include <fmt/format.h>

namespace autodriver::corpus::git {

namespace {

bool is_tree(const git_tree_entry* e) { return git_tree_entry_type(e) == GIT_OBJECT_TREE; }

std::string join(const std::string& prefix, const char* name) { return prefix.empty() ? name : prefix + "/" + name; }

util::Expected<Tree> lookup_tree(git_repository* repo, const git_tree_entry* e) {
  git_tree* t = nullptr;
  if (git_tree_lookup(&t, repo, git_tree_entry_id(e)) != 0) return util::unexpected(last_error(k_repo_error, "read tree"));
  return Tree(t);
}

/// Every file below `tree` as added (or deleted, `side_old`).
util::Expected<void> all_files(git_repository* repo, const git_tree* tree, const std::string& prefix, bool side_old,
                               std::vector<FileChange>& out) {
  std::size_t n = git_tree_entrycount(tree);
  for (std::size_t i = 0; i < n; ++i) {
    const git_tree_entry* e = git_tree_entry_byindex(tree, i);
    std::string path = join(prefix, git_tree_entry_name(e));
    if (is_tree(e)) {
      auto sub = lookup_tree(repo, e);
      if (!sub) return util::unexpected(sub.error());
      if (auto r = all_files(repo, sub->get(), path, side_old, out); !r) return r;
      continue;
    }
    FileChange c;
    c.path = std::move(path);
    c.status = side_old ? FileChange::Status::deleted : FileChange::Status::added;
    (side_old ? c.old_id : c.new_id) = *git_tree_entry_id(e);
    (side_old ? c.old_mode : c.new_mode) = git_tree_entry_filemode(e);
    out.push_back(std::move(c));
  }
  return {};
}

util::Expected<void> walk(git_repository* repo, const git_tree* a, const git_tree* b, const std::string& prefix,
                          std::vector<FileChange>& out) {
  // Entries present in a (deleted or changed), then entries only in b (added). Lookups by name are
  // binary searches, so a directory with thousands of entries costs O(n log n) only when it changed.
  std::size_t na = a ? git_tree_entrycount(a) : 0, nb = b ? git_tree_entrycount(b) : 0;
  for (std::size_t i = 0; i < na; ++i) {
    const git_tree_entry* ea = git_tree_entry_byindex(a, i);
    const char* name = git_tree_entry_name(ea);
    const git_tree_entry* eb = b ? git_tree_entry_byname(b, name) : nullptr;
    if (eb && git_oid_equal(git_tree_entry_id(ea), git_tree_entry_id(eb)) &&
        git_tree_entry_filemode(ea) == git_tree_entry_filemode(eb))
      continue; // identical file or subtree: never read
    std::string path = join(prefix, name);
    bool ta = is_tree(ea), tb = eb && is_tree(eb);
    if (ta && tb) {
      auto sa = lookup_tree(repo, ea);
      auto sb = lookup_tree(repo, eb);
      if (!sa) return util::unexpected(sa.error());
      if (!sb) return util::unexpected(sb.error());
      if (auto r = walk(repo, sa->get(), sb->get(), path, out); !r) return r;
      continue;
    }
    if (ta) {
      auto sa = lookup_tree(repo, ea);
      if (!sa) return util::unexpected(sa.error());
      if (auto r = all_files(repo, sa->get(), path, true, out); !r) return r;
    }
    if (tb) {
      auto sb = lookup_tree(repo, eb);
      if (!sb) return util::unexpected(sb.error());
      if (auto r = all_files(repo, sb->get(), path, false, out); !r) return r;
    }
    if (!ta && !tb && eb) {
      out.push_back({FileChange::Status::modified, path, *git_tree_entry_id(ea), *git_tree_entry_id(eb),
                     git_tree_entry_filemode(ea), git_tree_entry_filemode(eb)});
    } else {
      if (!ta) out.push_back({FileChange::Status::deleted, path, *git_tree_entry_id(ea), {}, git_tree_entry_filemode(ea), 0});
      if (eb && !tb) out.push_back({FileChange::Status::added, path, {}, *git_tree_entry_id(eb), 0, git_tree_entry_filemode(eb)});
    }
  }
  for (std::size_t j = 0; j < nb; ++j) {
    const git_tree_entry* eb = git_tree_entry_byindex(b, j);
    if (a && git_tree_entry_byname(a, git_tree_entry_name(eb))) continue;
    std::string path = join(prefix, git_tree_entry_name(eb));
    if (is_tree(eb)) {
      auto sb = lookup_tree(repo, eb);
      if (!sb) return util::unexpected(sb.error());
      if (auto r = all_files(repo, sb->get(), path, false, out); !r) return r;
    } else {
      out.push_back({FileChange::Status::added, path, {}, *git_tree_entry_id(eb), 0, git_tree_entry_filemode(eb)});
    }
  }
  return {};
}

bool is_blob_mode(std::uint32_t mode) { return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE; }

util::Expected<Blob> side_blob(git_repository* repo, const git_oid& id, std::uint32_t mode, const std::string& path) {
  if (!is_blob_mode(mode) && mode != GIT_FILEMODE_LINK) return Blob(nullptr); // missing side or submodule
  git_blob* raw = nullptr;
  if (git_blob_lookup(&raw, repo, &id) != 0) return util::unexpected(last_error(k_repo_error, fmt::format("read {}", path)));
  return Blob(raw);
}

util::Expected<Patch> make_patch(git_repository* repo, const FileChange& c, std::uint64_t max_bytes, std::uint32_t flags) {
  auto old_blob = side_blob(repo, c.old_id, c.old_mode, c.path);
  if (!old_blob) return util::unexpected(old_blob.error());
  auto new_blob = side_blob(repo, c.new_id, c.new_mode, c.path);
  if (!new_blob) return util::unexpected(new_blob.error());
  git_diff_options o = GIT_DIFF_OPTIONS_INIT;
  o.flags = flags;
  o.max_size = static_cast<git_off_t>(max_bytes); // larger blobs are treated as binary: never diffed
  git_patch* p = nullptr;
  const char* old_path = c.status == FileChange::Status::added ? nullptr : c.path.c_str();
  const char* new_path = c.status == FileChange::Status::deleted ? nullptr : c.path.c_str();
  if (git_patch_from_blobs(&p, old_blob->get(), old_path, new_blob->get(), new_path, &o) != 0)
    return util::unexpected(last_error(k_repo_error, fmt::format("diff {}", c.path)));
  return Patch(p);
}

} // namespace

util::Expected<std::vector<FileChange>> changed_files(git_repository* repo, const git_tree* old_tree, const git_tree* new_tree) {
  std::vector<FileChange> out;
  if (auto r = walk(repo, old_tree, new_tree, "", out); !r) return util::unexpected(r.error());
  return out;
}

util::Expected<bool> is_whitespace_only(git_repository* repo, const FileChange& change, std::uint64_t max_bytes) {
  if (change.status != FileChange::Status::modified) return false;
  auto patch = make_patch(repo, change, max_bytes, GIT_DIFF_IGNORE_WHITESPACE);
  if (!patch) return util::unexpected(patch.error());
  if (!*patch) return false;
  if (git_patch_get_delta(patch->get())->flags & GIT_DIFF_FLAG_BINARY) return false;
  return git_patch_num_hunks(patch->get()) == 0;
}

util::Expected<std::string> patch_text(git_repository* repo, const FileChange& change, std::uint64_t max_bytes) {
  auto patch = make_patch(repo, change, max_bytes, GIT_DIFF_NORMAL);
  if (!patch) return util::unexpected(patch.error());
  if (!*patch) return std::string();
  git_buf buf = GIT_BUF_INIT;
  if (git_patch_to_buf(&buf, patch->get()) != 0) return util::unexpected(last_error(k_repo_error, "patch"));
  std::string text(buf.ptr ? buf.ptr : "", buf.size);
  git_buf_dispose(&buf);
  return text;
}

} // namespace autodriver::corpus::git
