#include "autodriver/propose/kb/kb_file.hpp"

#include "autodriver/kernel/archive.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

namespace {

std::string entry_id(const std::string& boundary, const KbChange& c) {
  // Stable across runs and platforms; each field ends with a 0xff byte.
  std::string key;
  for (const std::string* s : {&c.kind, &c.old_form, &c.new_form, &boundary}) key += *s + '\xff';
  return fmt::format("kb-{:016x}", util::fnv1a_64(key));
}

bool is_c_source(const fs::path& p) {
  auto e = p.extension();
  return e == ".c" || e == ".h";
}

/// Entries of every version a source's `texts` gives, each change once per file.
void add_versioned_texts(const KbSource& src, Kb& kb) {
  std::set<std::pair<std::string, std::string>> kept; // (entry id, file)
  ExtractStats stats;
  src.texts([&](const std::string& file, const std::string& version, std::string_view text) {
    if (!is_c_source(file)) return;
    for (auto& e : kb_entries_of(text, KbProvenance{src.package, version, file, 0}, stats))
      if (kept.insert({e.id, e.provenance.file}).second) kb.entries.push_back(std::move(e));
  });
  stats.entries = static_cast<int>(kept.size()); // the other counts are over every version read
  kb.stats.add(stats);
}

} // namespace

std::vector<KbEntry> kb_entries_of(std::string_view text, const KbProvenance& where, ExtractStats& stats) {
  std::vector<KbEntry> out;
  if (text.find("LINUX_VERSION_CODE") == std::string_view::npos) return out;
  for (const auto& b : extract_version_blocks(text, stats))
    for (auto& c : derive_changes(b, stats)) {
      KbEntry e;
      e.boundary = b.boundary.str();
      e.id = entry_id(e.boundary, c);
      e.change = std::move(c);
      e.provenance = where;
      e.provenance.line = b.line;
      out.push_back(std::move(e));
    }
  return out;
}

Kb build_kb(const std::vector<KbSource>& sources) {
  Kb kb;
  for (const auto& src : sources) {
    // Two versions of a package (two Debian releases) are one source by name.
    if (std::find(kb.sources.begin(), kb.sources.end(), src.package) == kb.sources.end()) kb.sources.push_back(src.package);
    if (src.texts) {
      add_versioned_texts(src, kb);
      continue;
    }
    for (const auto& rel : util::list_files(src.root)) {
      if (!is_c_source(rel)) continue;
      auto text = util::read_file(src.root / rel);
      if (!text) continue;
      KbProvenance where{src.package, src.version, rel.string(), 0};
      for (auto& e : kb_entries_of(*text, where, kb.stats)) kb.entries.push_back(std::move(e));
    }
  }
  std::stable_sort(kb.entries.begin(), kb.entries.end(), [](const KbEntry& a, const KbEntry& b) {
    return std::tie(a.id, a.provenance.package, a.provenance.file, a.provenance.line) <
           std::tie(b.id, b.provenance.package, b.provenance.file, b.provenance.line);
  });
  return kb;
}

nlohmann::json to_json(const Kb& kb) {
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : kb.entries)
    entries.push_back({{"id", e.id},
                       {"boundary", e.boundary},
                       {"kind", e.change.kind},
                       {"old", e.change.old_form},
                       {"new", e.change.new_form},
                       {"symbols", e.change.symbols},
                       {"provenance",
                        {{"package", e.provenance.package},
                         {"version", e.provenance.version},
                         {"file", e.provenance.file},
                         {"line", e.provenance.line}}}});
  const auto& s = kb.stats;
  return {{"schema", "autodriver.compat-kb"},
          {"schema_version", k_kb_schema_version},
          {"sources", kb.sources},
          {"stats",
           {{"conditionals", s.conditionals},
            {"blocks", s.blocks},
            {"complex", s.complex},
            {"nested", s.nested},
            {"big", s.big},
            {"unclassified", s.unclassified},
            {"entries", s.entries}}},
          {"entries", entries}};
}

util::Expected<Kb> kb_from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.value("schema", "") != "autodriver.compat-kb")
    return unexpected(ErrorKind::parse, "not a compat KB file (schema is not autodriver.compat-kb)");
  int v = j.value("schema_version", 0);
  if (v > k_kb_schema_version)
    return unexpected(ErrorKind::config, fmt::format("compat KB schema_version {} is newer than this autodriver "
                                                     "understands ({}): rebuild it with `autodriver kb build`",
                                                     v, k_kb_schema_version));
  if (v < 1) return unexpected(ErrorKind::parse, "compat KB has no schema_version");
  Kb kb;
  try {
    kb.sources = j.value("sources", std::vector<std::string>{});
    if (j.contains("stats")) {
      const auto& s = j["stats"];
      kb.stats = {s.value("conditionals", 0), s.value("blocks", 0),       s.value("complex", 0), s.value("nested", 0),
                  s.value("big", 0),          s.value("unclassified", 0), s.value("entries", 0)};
    }
    for (const auto& x : j.at("entries")) {
      KbEntry e;
      e.id = x.at("id").get<std::string>();
      e.boundary = x.at("boundary").get<std::string>();
      e.change.kind = x.at("kind").get<std::string>();
      e.change.old_form = x.at("old").get<std::string>();
      e.change.new_form = x.at("new").get<std::string>();
      e.change.symbols = x.at("symbols").get<std::vector<std::string>>();
      const auto& p = x.at("provenance");
      e.provenance = {p.at("package").get<std::string>(), p.value("version", ""), p.value("file", ""), p.value("line", 0)};
      kb.entries.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& ex) {
    return unexpected(ErrorKind::parse, fmt::format("malformed compat KB entry: {}", ex.what()));
  }
  return kb;
}

util::Expected<void> save_kb(const Kb& kb, const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  return util::write_file_atomic(path, to_json(kb).dump(1, ' ', false, util::json_bytes) + "\n");
}

util::Expected<Kb> load_kb(const fs::path& path) {
  auto text = util::read_file(path);
  if (!text) return unexpected(text.error());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return unexpected(ErrorKind::parse, fmt::format("{}: not JSON", path.string()));
  auto kb = kb_from_json(j);
  if (!kb) return unexpected(ErrorKind::parse, fmt::format("{}: {}", path.string(), kb.error().message));
  return kb;
}

Kb without_packages(const Kb& kb, const std::vector<std::string>& packages) {
  if (packages.empty()) return kb;
  std::set<std::string> drop(packages.begin(), packages.end());
  Kb out;
  out.stats = kb.stats;
  for (const auto& s : kb.sources)
    if (!drop.count(s)) out.sources.push_back(s);
  for (const auto& e : kb.entries)
    if (!drop.count(e.provenance.package)) out.entries.push_back(e);
  return out;
}

fs::path default_kb_path() {
  if (const char* e = std::getenv("AUTODRIVER_KB"); e && *e) return e;
  return kernel::cache_root() / "kb" / "compat-kb.json";
}

std::vector<KbSource> cached_dkms_sources() {
  // <cache>/dkms/<suite>/<package>/: a package cached for several Debian releases counts once, in
  // its newest version (the one that knows the most kernels).
  struct Found {
    std::string debian_version;
    std::vector<KbSource> sources;
  };
  std::map<std::string, Found> by_package;
  std::error_code ec;
  fs::path dkms = kernel::cache_root() / "dkms";
  for (const auto& suite : fs::directory_iterator(dkms, ec)) {
    std::error_code ec1;
    for (const auto& pkg : fs::directory_iterator(suite.path(), ec1)) {
      if (!fs::exists(pkg.path() / "complete.json")) continue;
      std::string deb, version;
      if (auto st = util::read_file(pkg.path() / "complete.json"); st) {
        auto j = nlohmann::json::parse(*st, nullptr, false);
        if (!j.is_discarded()) {
          deb = j.value("deb", "");
          version = j.value("version", "");
        }
      }
      std::string name = pkg.path().filename().string();
      auto it = by_package.find(name);
      if (it != by_package.end() && kernel::compare_debian_versions(version, it->second.debian_version) <= 0) continue;
      Found f{version, {}};
      std::error_code ec2;
      for (const auto& d : fs::directory_iterator(pkg.path() / "root/usr/src", ec2))
        if (d.is_directory()) f.sources.push_back({name, deb, d.path()});
      by_package[name] = std::move(f);
    }
  }
  std::vector<KbSource> out;
  for (auto& [name, f] : by_package) out.insert(out.end(), f.sources.begin(), f.sources.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.root < b.root; });
  return out;
}

} // namespace autodriver::propose
