#include "autodriver/propose/shared/site_index.hpp"

#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const Unit* SourceFile::unit(const std::string& name) const {
  for (const auto& u : units)
    if (u.name == name) return &u;
  return nullptr;
}

SiteIndex::SiteIndex(fs::path old_src, fs::path new_src, std::vector<std::string> leave_out, std::vector<fs::path> driver_files)
    : m_old(std::move(old_src)), m_new(std::move(new_src)), m_leave_out(std::move(leave_out)) {
  for (const auto& f : driver_files) {
    auto text = util::read_file(f);
    if (text) m_driver_files.push_back({f.filename().string(), *text});
  }
}

static double line_overlap(const std::string& a, const std::string& b) {
  std::set<std::string_view> la, lb;
  for (auto l : util::split_lines(a)) {
    l = util::trim(l);
    if (l.size() > 8) la.insert(l);
  }
  for (auto l : util::split_lines(b)) {
    l = util::trim(l);
    if (l.size() > 8) lb.insert(l);
  }
  if (la.empty() || lb.empty()) return 0;
  std::size_t common = 0;
  for (auto l : la) common += lb.count(l);
  return static_cast<double>(common) / static_cast<double>(std::min(la.size(), lb.size()));
}

bool SiteIndex::left_out(const std::string& rel, const fs::path& tree) {
  for (const auto& p : m_leave_out) {
    if (p.empty()) continue;
    std::string prefix = p.back() == '/' ? p : p + "/";
    if (rel == p || rel.starts_with(prefix)) return true;
  }
  // Never learn from a kernel copy of the driver being ported (leave-one-out even when the
  // caller did not name its path): same file name and mostly the same lines.
  std::string base = fs::path(rel).filename().string();
  for (const auto& [dbase, dtext] : m_driver_files) {
    if (dbase != base) continue;
    auto f = load(tree, rel);
    if (f && line_overlap(f->text, dtext) > 0.5) return true;
  }
  return false;
}

std::shared_ptr<const SourceFile> SiteIndex::load(const fs::path& tree, const std::string& rel) {
  std::string key = (tree / rel).string();
  if (auto it = m_cache.find(key); it != m_cache.end()) return it->second;
  auto text = util::read_file(tree / rel);
  std::shared_ptr<const SourceFile> out;
  if (text && text->size() < 2 * 1024 * 1024) {
    auto f = std::make_shared<SourceFile>();
    f->rel = rel;
    f->text = std::move(*text);
    f->tokens = tokenize(f->text);
    f->units = find_units(f->tokens);
    out = f;
  }
  m_cache[key] = out;
  return out;
}

std::vector<std::string> SiteIndex::files_using(const fs::path& tree, const std::string& word, std::size_t limit, Files files) {
  std::vector<std::string> out;
  if (tree.empty() || word.empty()) return out;
  const std::string key = tree.string() + '\n' + word + '\n' + std::to_string(limit) + (files == Files::c ? "" : "\nh");
  if (auto it = m_grep_cache.find(key); it != m_grep_cache.end()) return it->second;
  kernel::SourceGrep q;
  q.options = {"-lw"};
  q.includes = {"*.c"};
  if (files == Files::c_and_h) q.includes.push_back("*.h");
  q.pattern = word;
  q.dirs = {"drivers", "sound", "net", "fs", "kernel", "mm", "block", "crypto", "lib", "virt", "security", "arch/x86"};
  if (files == Files::c_and_h) q.dirs.push_back("include");
  // A word or a phrase ("struct fd"): each of its words is on the matching line. A regex
  // ("INTEL_FAM6_[A-Za-z0-9_]*") gets no prefilter: grep reads the tree.
  if (std::all_of(word.begin(), word.end(),
                  [](char c) { return c == ' ' || std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
    q.all_of = util::split_words(word);
  q.output_cap = 1 << 20;
  std::vector<std::string> all = kernel::grep_source(tree, q);
  for (const auto& rel : all) {
    if (out.size() >= limit) break;
    if (left_out(rel, tree)) continue;
    out.push_back(rel);
  }
  m_grep_cache[key] = out;
  return out;
}

namespace {

/// Cheap before tokenizing: equal sizes, then equal bytes.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec1, ec2;
  if (fs::file_size(a, ec1) != fs::file_size(b, ec2) || ec1 || ec2) return false;
  auto ta = util::read_file(a);
  auto tb = util::read_file(b);
  return ta && tb && *ta == *tb;
}

} // namespace

std::vector<FilePair> SiteIndex::pairs_using(const std::string& word, std::size_t limit, Pairs which, Files files) {
  std::vector<FilePair> out;
  if (m_old.empty() || m_new.empty()) return out;
  for (const auto& rel : files_using(m_old, word, which == Pairs::changed ? 4000 : 400, files)) {
    if (out.size() >= limit) break;
    if (!fs::exists(m_new / rel)) continue;
    if (which == Pairs::changed) {
      auto it = m_changed.find(rel);
      if (it == m_changed.end()) it = m_changed.emplace(rel, !same_file(m_old / rel, m_new / rel)).first;
      if (!it->second) continue;
    }
    auto b = load(m_old, rel);
    auto a = load(m_new, rel);
    if (!b || !a) continue;
    if (which == Pairs::changed && b->text == a->text) continue;
    out.push_back({b, a});
  }
  return out;
}

SiteIndex& SiteIndexCache::get(const PortContext& ctx) {
  std::string key = ctx.old_src.string() + '\n' + ctx.new_src.string() + '\n' + ctx.original_tree.string();
  for (const auto& l : ctx.leave_out) key += '\n' + l;
  if (!m_index || key != m_key) {
    std::vector<fs::path> driver_files;
    for (const auto& rel : util::list_files(ctx.original_tree))
      if (rel.extension() == ".c" || rel.extension() == ".h") driver_files.push_back(ctx.original_tree / rel);
    m_index = std::make_unique<SiteIndex>(ctx.old_src, ctx.new_src, ctx.leave_out, driver_files);
    m_key = std::move(key);
  }
  return *m_index;
}

} // namespace autodriver::propose
