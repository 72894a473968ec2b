#include "autodriver/corpus/case_format.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <unistd.h>

namespace autodriver::corpus {

namespace fs = std::filesystem;
using util::ErrorKind;
using util::unexpected;

std::string case_id_from_path(std::string_view unit_path) {
  std::string id;
  for (char c : unit_path) {
    if (c == '/') id += "__";
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') id += c;
    else id += '_';
  }
  return id;
}

fs::path case_dir(const fs::path& corpus, const std::string& id) { return corpus / "cases" / id; }

util::Expected<fs::path> write_case(const fs::path& corpus, const CaseFiles& c) {
  if (!c.metadata.contains("id") || !c.metadata["id"].is_string())
    return unexpected(ErrorKind::internal, "case metadata without an id");
  const std::string id = c.metadata["id"].get<std::string>();
  const fs::path final_dir = case_dir(corpus, id);
  const fs::path tmp = corpus / "cases" / fmt::format(".tmp-{}-{}", id, getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", tmp.string(), ec.message()));
  auto fail = [&](const util::Error& e) -> util::Expected<fs::path> {
    std::error_code ignore;
    fs::remove_all(tmp, ignore);
    return unexpected(e);
  };
  if (auto r = util::copy_tree(c.before, tmp / "before", util::SkipBuildProducts::yes); !r) return fail(r.error());
  if (!c.golden.empty())
    if (auto r = util::copy_tree(c.golden, tmp / "golden", util::SkipBuildProducts::yes); !r) return fail(r.error());
  nlohmann::json meta = c.metadata;
  meta["schema_version"] = k_case_schema_version;
  if (auto r = util::write_file(tmp / "diagnostics.json", c.diagnostics.dump(2, ' ', false, util::json_bytes) + "\n"); !r)
    return fail(r.error());
  if (auto r = util::write_file(tmp / "api_delta.patch", c.api_delta); !r) return fail(r.error());
  // metadata.json last: its presence marks a complete case even before the rename.
  if (auto r = util::write_file(tmp / "metadata.json", meta.dump(2, ' ', false, util::json_bytes) + "\n"); !r)
    return fail(r.error());
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec)
    return fail(util::make_error(ErrorKind::io, fmt::format("cannot move {} into place: {}", final_dir.string(), ec.message())));
  return final_dir;
}

util::Expected<nlohmann::json> read_case_metadata(const fs::path& dir) {
  auto text = util::read_file(dir / "metadata.json");
  if (!text) return unexpected(text.error());
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return unexpected(ErrorKind::parse, fmt::format("{}/metadata.json is not valid JSON", dir.string()));
  int v = j.value("schema_version", 0);
  if (v > k_case_schema_version)
    return unexpected(ErrorKind::config, fmt::format("{}/metadata.json has schema_version {}, newer than this "
                                                     "autodriver understands ({}): upgrade autodriver",
                                                     dir.string(), v, k_case_schema_version));
  if (v < 1) return unexpected(ErrorKind::parse, fmt::format("{}/metadata.json has no schema_version", dir.string()));
  return j;
}

std::vector<fs::path> list_cases(const fs::path& corpus) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(corpus / "cases", ec)) {
    if (!e.is_directory() || e.path().filename().string().starts_with(".")) continue;
    if (fs::exists(e.path() / "metadata.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

static nlohmann::json files_json(const fs::path& root) {
  nlohmann::json j = nlohmann::json::object();
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return j;
  for (const auto& rel : util::list_files(root)) {
    auto text = util::read_file(root / rel);
    if (text) j[rel.generic_string()] = *text;
  }
  return j;
}

util::Expected<std::size_t> export_jsonl(const fs::path& corpus, const fs::path& out, WithFiles with_files,
                                         const std::string& split_filter) {
  if (!fs::exists(corpus / "corpus.json") && !fs::exists(corpus / "cases"))
    return unexpected(ErrorKind::not_found, fmt::format("{} is not a corpus directory (no corpus.json)", corpus.string()));
  fs::path tmp = out;
  tmp += fmt::format(".tmp.{}", getpid());
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) return unexpected(ErrorKind::io, fmt::format("cannot write {}", tmp.string()));
  std::size_t n = 0;
  for (const auto& dir : list_cases(corpus)) {
    auto meta = read_case_metadata(dir);
    if (!meta) {
      f.close();
      fs::remove(tmp);
      return unexpected(meta.error());
    }
    if (!split_filter.empty() && meta->value("split", "") != split_filter) continue;
    nlohmann::json row = *meta;
    if (with_files == WithFiles::yes) {
      row["before_files"] = files_json(dir / "before");
      row["golden_files"] = files_json(dir / "golden");
      auto diags = util::read_file(dir / "diagnostics.json");
      row["diagnostics_full"] = diags ? nlohmann::json::parse(*diags, nullptr, false) : nlohmann::json::array();
      auto delta = util::read_file(dir / "api_delta.patch");
      row["api_delta"] = delta ? *delta : "";
    }
    f << row.dump(-1, ' ', false, util::json_bytes) << "\n";
    ++n;
  }
  f.flush();
  if (!f) {
    f.close();
    std::error_code ec;
    fs::remove(tmp, ec);
    return unexpected(ErrorKind::io, fmt::format("write failed for {} (disk full?)", out.string()));
  }
  f.close();
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot rename into {}: {}", out.string(), ec.message()));
  return n;
}

util::Expected<void> init_corpus_dir(const fs::path& corpus, const nlohmann::json& identity) {
  std::error_code ec;
  fs::create_directories(corpus / "cases", ec);
  if (ec) return unexpected(ErrorKind::io, fmt::format("cannot create {}: {}", corpus.string(), ec.message()));
  const fs::path file = corpus / "corpus.json";
  if (fs::exists(file)) {
    auto text = util::read_file(file);
    if (!text) return unexpected(text.error());
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded()) return unexpected(ErrorKind::parse, fmt::format("{} is not valid JSON", file.string()));
    if (j.value("schema_version", 0) > k_corpus_schema_version)
      return unexpected(ErrorKind::config, fmt::format("{} was written by a newer autodriver", file.string()));
    for (const auto& key : {"from", "to", "origin"})
      if (identity.contains(key) && j.value(key, nlohmann::json()) != identity[key])
        return unexpected(ErrorKind::config,
                          fmt::format("{} holds a corpus with {} = {}, not {}: use another -o directory", corpus.string(), key,
                                      j.value(key, nlohmann::json()).dump(-1, ' ', false, util::json_bytes),
                                      identity[key].dump(-1, ' ', false, util::json_bytes)));
    return {};
  }
  nlohmann::json j = identity;
  j["schema_version"] = k_corpus_schema_version;
  return util::write_file_atomic(file, j.dump(2, ' ', false, util::json_bytes) + "\n");
}

} // namespace autodriver::corpus
