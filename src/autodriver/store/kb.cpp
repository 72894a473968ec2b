#include "autodriver/store/kb.hpp"
#include "autodriver/util/json_text.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <pwd.h>
#include <regex>
#include <unistd.h>

namespace autodriver::store {

using util::ErrorKind;
using util::unexpected;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

/// Absolute paths: keep only the last component (a driver file name says what it needs to).
std::string strip_paths(const std::string& s) {
  static const std::regex k_abs(R"((^|[\s'"`(=:,])(/[^\s'"`():,;]+/)([^\s'"`():,;/]*))");
  return std::regex_replace(s, k_abs, "$1$3");
}

std::string scrub_string(std::string s) {
  static const std::regex k_keys(
      R"((sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}))");
  static const std::regex k_assign(R"(((api[_-]?key|token|secret|password|authorization)\s*[=:]\s*)\S+)", std::regex::icase);
  s = std::regex_replace(s, k_keys, "<redacted>");
  s = std::regex_replace(s, k_assign, "$1<redacted>");
  s = strip_paths(s);
  std::string user;
  if (const char* u = std::getenv("USER"); u && *u) user = u;
  else if (auto* pw = getpwuid(getuid()); pw && pw->pw_name) user = pw->pw_name;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // Whole words only: a user called "dev" must not turn "device" into "<user>ice".
  auto word = [](const std::string& w) {
    return std::regex(R"((^|[^A-Za-z0-9_]))" + std::regex_replace(w, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                      R"(($|[^A-Za-z0-9_]))");
  };
  if (user.size() > 1 && user != "root") s = std::regex_replace(s, word(user), "$1<user>$2");
  if (std::string h = host; h.size() > 1) s = std::regex_replace(s, word(h), "$1<host>$2");
  return s;
}

KbEntry read_entry(const Stmt& s, RunStore& st) {
  KbEntry e;
  e.id = s.int_col(0);
  e.signature = s.text_col(1);
  e.change_id = s.text_col(2);
  e.label = s.text_col(3);
  e.title = s.text_col(4);
  e.proposer = s.text_col(5);
  e.edit = nlohmann::json::parse(s.text_col(6), nullptr, false);
  std::string hash = s.text_col(7);
  e.evidence = nlohmann::json::parse(s.text_col(8), nullptr, false);
  if (!s.is_null(9)) e.run_id = s.int_col(9);
  e.origin = s.text_col(10);
  e.created_at = s.text_col(11);
  if (!hash.empty())
    if (auto b = st.blob(hash); b && *b) e.patch = **b;
  return e;
}

} // namespace

std::string diagnostic_signature(const nlohmann::json& d) {
  std::string msg = d.value("message", "");
  for (const char* q : {"\u2018", "\u2019", "`"}) msg = replace_all(msg, q, "'");
  msg = strip_paths(msg);
  static const std::regex k_position(R"(([A-Za-z0-9_.-]+\.[ch]):[0-9]+(:[0-9]+)?)");
  msg = std::regex_replace(msg, k_position, "$1");
  std::string out = d.value("kind", "other") + ": ";
  bool space = false;
  for (char c : msg) {
    if (c == ' ' || c == '\t' || c == '\n') {
      space = true;
      continue;
    }
    if (space && out.back() != ' ') out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool kb_edit_is_data(const nlohmann::json& edit, std::string* why) {
  std::string smpl = edit.is_object() && edit.contains("smpl") && edit["smpl"].is_string() ? edit["smpl"].get<std::string>() : "";
  // Rule headers like "@ r depends on x @" or "@script:python p@"; "include"/"using" lines read other files.
  static const std::regex k_script(R"(@[^@\n]*\b(script|initialize|finalize)\s*:)");
  static const std::regex k_include(R"((^|\n)[ \t]*(include|using)[ \t]+")");
  if (std::regex_search(smpl, k_script)) {
    if (why) *why = "its SmPL has a script rule";
    return false;
  }
  if (std::regex_search(smpl, k_include)) {
    if (why) *why = "its SmPL includes another file";
    return false;
  }
  return true;
}

util::Expected<bool> add_kb_entry(RunStore& st, const KbEntry& e) {
  auto tx = Transaction::begin(st.db());
  if (!tx) return unexpected(tx.error());
  std::string hash;
  if (!e.patch.empty()) {
    auto h = st.put_blob(e.patch);
    if (!h) return unexpected(h.error());
    hash = *h;
  }
  auto q = st.db().prepare("INSERT OR IGNORE INTO kb_entries(signature, change_id, label, title, proposer, edit, patch_hash, "
                           "evidence, run_id, origin, created_at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  if (!q) return unexpected(q.error());
  q->bind(1, e.signature).bind(2, e.change_id).bind(3, e.label).bind(4, e.title).bind(5, e.proposer);
  q->bind(6, e.edit.dump(-1, ' ', false, util::json_bytes))
      .bind(7, hash)
      .bind(8, e.evidence.dump(-1, ' ', false, util::json_bytes))
      .bind_opt(9, e.run_id)
      .bind(10, e.origin);
  q->bind(11, e.created_at.empty() ? now_iso() : e.created_at);
  if (auto r = q->exec(); !r) return unexpected(r.error());
  auto changes = st.db().prepare("SELECT changes()");
  if (!changes) return unexpected(changes.error());
  auto row = changes->step();
  if (!row) return unexpected(row.error());
  bool added = *row && changes->int_col(0) > 0;
  if (auto r = tx->commit(); !r) return unexpected(r.error());
  return added;
}

util::Expected<std::vector<KbEntry>> kb_entries(RunStore& st, const std::string& signature) {
  std::string sql = "SELECT id, signature, change_id, label, title, proposer, edit, patch_hash, evidence, run_id, origin, "
                    "created_at FROM kb_entries";
  if (!signature.empty()) sql += " WHERE signature = ?";
  // Local evidence before imported, then the oldest (most reused) first.
  sql += " ORDER BY origin != 'local', id";
  auto q = st.db().prepare(sql);
  if (!q) return unexpected(q.error());
  if (!signature.empty()) q->bind(1, signature);
  std::vector<KbEntry> out;
  while (true) {
    auto row = q->step();
    if (!row) return unexpected(row.error());
    if (!*row) break;
    out.push_back(read_entry(*q, st));
  }
  return out;
}

nlohmann::json scrub(const nlohmann::json& v) {
  if (v.is_string()) return scrub_string(v.get<std::string>());
  if (v.is_array()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& x : v) a.push_back(scrub(x));
    return a;
  }
  if (v.is_object()) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [k, x] : v.items()) o[scrub_string(k)] = scrub(x);
    return o;
  }
  return v;
}

nlohmann::json export_kb_bundle(const std::vector<KbEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : entries) {
    // Provenance without local identities: which proposer, which kernels, which driver file.
    list.push_back(scrub(nlohmann::json{{"signature", e.signature},
                                        {"change_id", e.change_id},
                                        {"label", e.label},
                                        {"title", e.title},
                                        {"proposer", e.proposer},
                                        {"edit", e.edit},
                                        {"patch", e.patch},
                                        {"evidence", e.evidence},
                                        {"created_at", e.created_at}}));
  }
  return {{"schema", "autodriver.kb-bundle"}, {"schema_version", k_kb_bundle_version}, {"entries", list}};
}

util::Expected<int> import_kb_bundle(RunStore& st, const nlohmann::json& b, const std::string& origin) {
  if (!b.is_object() || b.value("schema", "") != "autodriver.kb-bundle")
    return unexpected(ErrorKind::parse,
                      "not a KB bundle (no \"schema\": \"autodriver.kb-bundle\"): export one with `autodriver kb export FILE`");
  int v = b.value("schema_version", 0);
  if (v > k_kb_bundle_version)
    return unexpected(
        ErrorKind::parse,
        fmt::format("KB bundle schema_version {} is newer than this autodriver understands ({}): upgrade autodriver", v,
                    k_kb_bundle_version));
  if (v < 1 || !b.contains("entries") || !b["entries"].is_array())
    return unexpected(ErrorKind::parse, "KB bundle: schema_version and an \"entries\" array are required");
  std::vector<KbEntry> entries;
  for (std::size_t i = 0; i < b["entries"].size(); ++i) {
    const auto& j = b["entries"][i];
    auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
    if (!j.is_object() || str("signature").empty() || str("change_id").empty())
      return unexpected(ErrorKind::parse, fmt::format("KB bundle: entry {} has no signature or change_id", i));
    KbEntry e;
    e.signature = str("signature");
    e.change_id = str("change_id");
    e.label = str("label");
    e.title = str("title");
    e.proposer = str("proposer");
    e.edit = j.contains("edit") && j["edit"].is_object() ? j["edit"] : nlohmann::json::object();
    if (std::string why; !kb_edit_is_data(e.edit, &why))
      return unexpected(ErrorKind::parse, fmt::format("KB bundle: entry {} is refused: {} (a bundle carries data only)", i, why));
    e.patch = str("patch");
    e.evidence = j.contains("evidence") && j["evidence"].is_object() ? j["evidence"] : nlohmann::json::object();
    e.origin = "import:" + origin;
    e.created_at = str("created_at");
    entries.push_back(std::move(e));
  }
  int added = 0;
  for (const auto& e : entries) {
    auto r = add_kb_entry(st, e);
    if (!r) return unexpected(r.error());
    added += *r;
  }
  return added;
}

} // namespace autodriver::store
