#include "autodriver/kernel/source_grep.hpp"

#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

namespace autodriver::kernel {

namespace fs = std::filesystem;

namespace {

/// Files over this size are not tokenized (generated register tables): always candidates.
constexpr std::uintmax_t k_big_file = 4u << 20;
constexpr std::string_view k_magic = "ADWIDX1\n";

bool word_char(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/// A word's key (collisions only add candidates, which grep then rejects).
std::uint32_t word_hash(std::string_view w) { return util::fnv1a_32(w); }

/// Hashes of the words of `text` (maximal runs of word characters not starting with a digit),
/// each once. grep -w's word constituents include these (and, in a UTF-8 locale, other letters),
/// so every whole-word match grep finds is one of these runs.
void hashes_of(std::string_view text, std::vector<std::uint32_t>& out) {
  out.clear();
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    if (!word_char(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && word_char(static_cast<unsigned char>(text[j]))) ++j;
    if (!(text[i] >= '0' && text[i] <= '9')) out.push_back(word_hash(text.substr(i, j - i)));
    i = j;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

/// The tree's C and header files (regular files; symbolic links are not followed, as grep -r
/// does not), sorted, and a stamp of their names, sizes and times.
std::pair<std::vector<std::string>, std::uint64_t> list_sources(const fs::path& src) {
  std::vector<std::pair<std::string, std::uint64_t>> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(src, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    if (it->is_symlink(sec) || !it->is_regular_file(sec)) continue;
    auto ext = it->path().extension();
    if (ext != ".c" && ext != ".h") continue;
    auto size = it->file_size(sec);
    auto time = it->last_write_time(sec).time_since_epoch().count();
    found.push_back({it->path().lexically_relative(src).string(),
                     static_cast<std::uint64_t>(size) * 1000003u + static_cast<std::uint64_t>(time)});
  }
  std::sort(found.begin(), found.end());
  std::uint64_t stamp = 1469598103934665603ull;
  std::vector<std::string> files;
  files.reserve(found.size());
  for (auto& [rel, s] : found) {
    for (unsigned char c : rel) stamp = (stamp ^ c) * 1099511628211ull;
    stamp = (stamp ^ s) * 1099511628211ull;
    files.push_back(std::move(rel));
  }
  return {std::move(files), stamp};
}

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
bool get(std::string_view& in, T& v) {
  if (in.size() < sizeof v) return false;
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return true;
}
void put_array(std::string& out, const std::vector<std::uint32_t>& a) {
  put<std::uint64_t>(out, a.size());
  out.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(std::uint32_t));
}
bool get_array(std::string_view& in, std::vector<std::uint32_t>& a) {
  std::uint64_t n = 0;
  if (!get(in, n) || n > in.size() / sizeof(std::uint32_t)) return false;
  a.resize(n);
  std::memcpy(a.data(), in.data(), n * sizeof(std::uint32_t));
  in.remove_prefix(n * sizeof(std::uint32_t));
  return true;
}

std::vector<std::uint32_t> merge_sorted(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::vector<std::uint32_t> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

} // namespace

bool WordIndex::indexable(std::string_view word) {
  if (word.empty() || (word[0] >= '0' && word[0] <= '9')) return false;
  return std::all_of(word.begin(), word.end(), [](char c) { return word_char(static_cast<unsigned char>(c)); });
}

WordIndex WordIndex::build(const fs::path& src, const std::vector<std::string>& files) {
  WordIndex w;
  w.m_files = files;
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::vector<std::uint64_t> pairs;
  auto work = [&] {
    std::vector<std::uint64_t> mine;
    std::vector<std::uint32_t> big, hashes;
    for (std::size_t i = next++; i < files.size(); i = next++) {
      std::error_code ec;
      auto size = fs::file_size(src / files[i], ec);
      if (ec) continue;
      if (size > k_big_file) {
        big.push_back(static_cast<std::uint32_t>(i));
        continue;
      }
      auto text = util::read_file(src / files[i]);
      if (!text) continue;
      hashes_of(*text, hashes);
      for (auto h : hashes) mine.push_back((static_cast<std::uint64_t>(h) << 32) | i);
    }
    std::lock_guard lock(mutex);
    pairs.insert(pairs.end(), mine.begin(), mine.end());
    w.m_big.insert(w.m_big.end(), big.begin(), big.end());
  };
  unsigned n = std::clamp<unsigned>(static_cast<unsigned>(util::available_cpus()), 1, 8);
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  std::sort(pairs.begin(), pairs.end());
  std::sort(w.m_big.begin(), w.m_big.end());
  w.m_postings.reserve(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    auto h = static_cast<std::uint32_t>(pairs[i] >> 32);
    if (w.m_hashes.empty() || w.m_hashes.back() != h) {
      w.m_hashes.push_back(h);
      w.m_offsets.push_back(static_cast<std::uint32_t>(w.m_postings.size()));
    }
    w.m_postings.push_back(static_cast<std::uint32_t>(pairs[i] & 0xffffffffu));
  }
  w.m_offsets.push_back(static_cast<std::uint32_t>(w.m_postings.size()));
  return w;
}

std::string WordIndex::serialize() const {
  std::string out(k_magic);
  std::string names;
  for (const auto& f : m_files) names += f + '\n';
  put<std::uint64_t>(out, names.size());
  out += names;
  put_array(out, m_big);
  put_array(out, m_hashes);
  put_array(out, m_offsets);
  put_array(out, m_postings);
  return out;
}

std::optional<WordIndex> WordIndex::parse(std::string_view in) {
  if (!in.starts_with(k_magic)) return std::nullopt;
  in.remove_prefix(k_magic.size());
  WordIndex w;
  std::uint64_t n = 0;
  if (!get(in, n) || n > in.size()) return std::nullopt;
  for (auto l : util::split_lines(in.substr(0, n)))
    if (!l.empty()) w.m_files.emplace_back(l);
  in.remove_prefix(n);
  if (!get_array(in, w.m_big) || !get_array(in, w.m_hashes) || !get_array(in, w.m_offsets) || !get_array(in, w.m_postings) ||
      !in.empty())
    return std::nullopt;
  if (w.m_offsets.size() != w.m_hashes.size() + 1 || w.m_offsets.back() != w.m_postings.size()) return std::nullopt;
  for (auto id : w.m_postings)
    if (id >= w.m_files.size()) return std::nullopt;
  for (auto id : w.m_big)
    if (id >= w.m_files.size()) return std::nullopt;
  return w;
}

std::vector<std::uint32_t> WordIndex::ids_with(std::string_view word) const {
  std::vector<std::uint32_t> hit;
  auto h = word_hash(word);
  auto it = std::lower_bound(m_hashes.begin(), m_hashes.end(), h);
  if (it != m_hashes.end() && *it == h) {
    auto k = static_cast<std::size_t>(it - m_hashes.begin());
    hit.assign(m_postings.begin() + m_offsets[k], m_postings.begin() + m_offsets[k + 1]);
  }
  return merge_sorted(hit, m_big);
}

std::vector<std::string> WordIndex::files_with(std::string_view word) const {
  std::vector<std::string> out;
  for (auto id : ids_with(word)) out.push_back(m_files[id]);
  return out;
}

namespace {

bool in_cache(const fs::path& src) {
  return src.lexically_normal().string().starts_with(cache_root().lexically_normal().string() + "/");
}

} // namespace

std::shared_ptr<const WordIndex> WordIndex::of(const fs::path& src) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const WordIndex>> loaded;
  std::lock_guard lock(mutex);
  auto it = loaded.find(src.string());
  // A kept index is of a tree that does not change (the cache's sources, big trees): no listing.
  if (it != loaded.end() && it->second && it->second->m_kept) return it->second;
  auto [files, stamp] = list_sources(src);
  if (it != loaded.end() && it->second && it->second->m_stamp == stamp) return it->second;
  std::shared_ptr<WordIndex> out;
  // Kept on disk for the cache's own trees (Debian's kernel sources) and for big trees elsewhere;
  // a small tree (a test's fixture) is indexed again in a moment and leaves nothing behind.
  bool keep = in_cache(src) || files.size() >= 10000;
  if (!files.empty() && !keep) {
    out = std::make_shared<WordIndex>(build(src, files));
  } else if (!files.empty()) {
    fs::path cache =
        cache_root() / "index" /
        fmt::format("{}-{:016x}-words1-{:016x}.idx", src.filename().string(), std::hash<std::string>{}(src.string()), stamp);
    if (auto bytes = util::read_file(cache); bytes)
      if (auto w = parse(*bytes); w && w->m_files == files) out = std::make_shared<WordIndex>(std::move(*w));
    if (!out) {
      auto t0 = std::chrono::steady_clock::now();
      auto w = build(src, files);
      util::log_info("indexed the words of {} files of {} in {} ms ({} words)", files.size(), src.string(),
                     std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count(),
                     w.m_hashes.size());
      std::error_code ec;
      fs::create_directories(cache.parent_path(), ec);
      // Older indexes of this tree (its files changed since) are dropped with the new one written.
      std::string prefix = fmt::format("{}-{:016x}-words1-", src.filename().string(), std::hash<std::string>{}(src.string()));
      for (auto d = fs::directory_iterator(cache.parent_path(), ec); !ec && d != fs::directory_iterator(); d.increment(ec))
        if (d->path().filename().string().starts_with(prefix)) fs::remove(d->path(), ec);
      if (auto wr = util::write_file_atomic(cache, w.serialize()); !wr) util::log_debug("word index: {}", wr.error().message);
      out = std::make_shared<WordIndex>(std::move(w));
    }
  }
  if (out) {
    out->m_kept = keep;
    out->m_stamp = stamp;
  }
  loaded[src.string()] = out;
  return out;
}

std::vector<std::string> grep_source(const fs::path& src, const SourceGrep& q) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>> answers;
  std::string key = src.string() + '\0' + q.pattern;
  for (const auto* v : {&q.options, &q.includes, &q.dirs, &q.all_of, &q.any_of}) {
    key += '\1';
    for (const auto& s : *v) key += s + '\0';
  }
  // Answers are kept for trees that do not change (the cache's); a fixture may change between two.
  const bool stable = in_cache(src);
  if (stable) {
    std::lock_guard lock(mutex);
    if (auto it = answers.find(key); it != answers.end()) return it->second;
  }
  std::vector<std::string> includes = q.includes.empty() ? std::vector<std::string>{"*.c", "*.h"} : q.includes;
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& d : q.dirs)
    if (fs::exists(src / d, ec)) dirs.push_back(d);
  if (!q.dirs.empty() && dirs.empty()) return {};

  bool prefilter = !(q.all_of.empty() && q.any_of.empty());
  for (const auto* v : {&q.all_of, &q.any_of})
    for (const auto& w : *v) prefilter = prefilter && WordIndex::indexable(w);
  std::shared_ptr<const WordIndex> index = prefilter ? WordIndex::of(src) : nullptr;

  std::vector<std::string> out;
  std::size_t size = 0;
  // grep OPTIONS [extra] -H -e PATTERN -- PATHS; false when grep gave no answer.
  auto run_grep = [&](const std::vector<std::string>& extra, const std::vector<std::string>& paths) {
    util::RunRequest req;
    req.argv = {"grep"};
    req.argv.insert(req.argv.end(), q.options.begin(), q.options.end());
    req.argv.insert(req.argv.end(), extra.begin(), extra.end());
    req.argv.insert(req.argv.end(), {"-H", "-e", q.pattern, "--"});
    req.argv.insert(req.argv.end(), paths.begin(), paths.end());
    req.cwd = src;
    req.timeout = q.timeout;
    req.output_cap = q.output_cap;
    auto r = util::run(req);
    // grep exits 0 (found) or 1 (nothing); 2, a timeout or a signal is no answer.
    if (!r || r->timed_out || r->interrupted || (r->exit_code != 0 && r->exit_code != 1)) return false;
    for (auto l : util::split_lines(r->out)) {
      if (l.empty()) continue;
      if (l.starts_with("./")) l.remove_prefix(2);
      size += l.size() + 1;
      if (size > q.output_cap) break;
      out.emplace_back(l);
    }
    return true;
  };

  if (index) {
    std::vector<std::uint32_t> ids;
    bool first = true;
    auto narrow = [&](std::vector<std::uint32_t> some) {
      if (first) {
        ids = std::move(some);
        first = false;
        return;
      }
      std::vector<std::uint32_t> both;
      std::set_intersection(ids.begin(), ids.end(), some.begin(), some.end(), std::back_inserter(both));
      ids = std::move(both);
    };
    for (const auto& w : q.all_of) narrow(index->ids_with(w));
    if (!q.any_of.empty()) {
      std::vector<std::uint32_t> any;
      for (const auto& w : q.any_of) any = merge_sorted(any, index->ids_with(w));
      narrow(std::move(any));
    }
    // The candidates grep -r would have read, in batches well under the argument size limit.
    std::vector<std::string> batch;
    std::size_t bytes = 0;
    for (auto id : ids) {
      const std::string& rel = index->path(id);
      bool under = dirs.empty() || std::any_of(dirs.begin(), dirs.end(), [&](const std::string& d) {
                     return d == "." || rel == d || (rel.size() > d.size() && rel.starts_with(d) && rel[d.size()] == '/');
                   });
      std::string base = fs::path(rel).filename().string();
      bool named = std::any_of(includes.begin(), includes.end(),
                               [&](const std::string& g) { return ::fnmatch(g.c_str(), base.c_str(), 0) == 0; });
      if (!under || !named) continue;
      batch.push_back(rel);
      bytes += rel.size() + 1;
      if (bytes > (64u << 10)) {
        if (!run_grep({}, batch)) return {};
        batch.clear();
        bytes = 0;
      }
    }
    if (!batch.empty() && !run_grep({}, batch)) return {};
  } else {
    std::vector<std::string> extra{"-r"};
    for (const auto& g : includes) extra.push_back("--include=" + g);
    if (!run_grep(extra, dirs.empty() ? std::vector<std::string>{"."} : dirs)) return {};
  }
  // Path order (grep -r walks folders in the order the file system lists them).
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::string_view(a).substr(0, a.find(':')) < std::string_view(b).substr(0, b.find(':'));
  });
  if (stable) {
    std::lock_guard lock(mutex);
    if (answers.size() > 20000) answers.clear();
    answers.emplace(std::move(key), out);
  }
  return out;
}

std::vector<std::string> headers_naming(const fs::path& src, const std::string& word) {
  SourceGrep q;
  q.options = {"-lwE"};
  q.includes = {"*.h"};
  q.pattern = word;
  q.dirs = k_header_dirs;
  q.all_of = {word};
  q.timeout = std::chrono::seconds(60);
  return grep_source(src, q);
}

std::vector<std::string> c_files_naming(const fs::path& src, const std::string& word, const std::vector<std::string>& dirs,
                                        std::chrono::seconds timeout) {
  SourceGrep q;
  q.options = {"-lw"};
  q.includes = {"*.c"};
  q.pattern = word;
  q.dirs = dirs;
  q.all_of = {word};
  q.timeout = timeout;
  return grep_source(src, q);
}

} // namespace autodriver::kernel
