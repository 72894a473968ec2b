// store-kb: edits that solved the same diagnostic in earlier runs, replayed from the run store's
// knowledge base before any other proposer's. An entry is keyed by the diagnostic's signature
// (kind + message without paths or positions: the symbol, member and type names), and what is
// replayed is the edit's portable part: its SmPL, call rewrite and identifier renames, and
// #include lines re-anchored in this tree. Line edits of another driver's code cannot be replayed
// (their line numbers and function names are that driver's), so entries that need them are skipped.
// Entries are data: SmPL with script rules is refused, and the loop gates every replayed edit.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/store/kb.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;

namespace {

/// At most this many KB alternatives per change: a wrong entry costs one trial, not the change.
constexpr std::size_t k_max_alternatives = 2;

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

TextEdit text_edit(std::string file, int line, int remove, std::string text) {
  TextEdit t;
  t.file = std::move(file);
  t.line = line;
  t.remove = remove;
  t.text = std::move(text);
  return t;
}

bool is_include(const std::string& line) { return trim(line).starts_with("#include"); }

/// "#include <linux/x.h>" -> "linux/x.h" (also for "...").
std::string include_target(const std::string& line) {
  std::string t = trim(line);
  auto open = t.find_first_of("<\"");
  auto close = open == std::string::npos ? std::string::npos : t.find_first_of(">\"", open + 1);
  return close == std::string::npos ? std::string() : t.substr(open + 1, close - open - 1);
}

/// The `-#include` lines of a unified diff (what a header move replaced).
std::vector<std::string> removed_includes(const std::string& patch) {
  std::vector<std::string> out;
  for (auto l : util::split_lines(patch))
    if (l.starts_with("-") && !l.starts_with("---") && is_include(std::string(l.substr(1)))) out.emplace_back(l.substr(1));
  return out;
}

/// The recorded text edits as include operations in `tree`: added includes go after the last
/// #include of the file the diagnostic is in; a replaced include replaces the same #include
/// wherever this tree has it. False when an edit is not an #include line (not portable).
bool reanchor_includes(const Edit& recorded, const std::string& patch, const core::Diagnostic& d, const fs::path& tree,
                       std::vector<TextEdit>& out) {
  std::vector<std::string> olds = removed_includes(patch);
  for (const auto& te : recorded.text_edits) {
    std::vector<std::string> news;
    for (auto l : util::split_lines(te.text)) news.emplace_back(l);
    if (news.empty() || !std::all_of(news.begin(), news.end(), is_include)) return false;
    if (te.remove == 0) {
      fs::path rel = d.file;
      if (rel.empty() || rel.is_absolute() || !fs::is_regular_file(tree / rel)) return false;
      auto text = util::read_file(tree / rel);
      if (!text) return false;
      int line = 0, after = 0;
      std::set<std::string> have;
      for (auto l : util::split_lines(*text)) {
        ++line;
        if (is_include(std::string(l))) {
          after = line;
          have.insert(include_target(std::string(l)));
        }
      }
      std::string add;
      for (const auto& n : news)
        if (!have.count(include_target(n))) add += n + "\n";
      if (!add.empty()) out.push_back(text_edit(rel.string(), after + 1, 0, add));
      continue;
    }
    // A replaced #include: the old line comes from the patch, the new from the edit.
    if (te.remove != 1 || news.size() != 1 || olds.empty()) return false;
    bool found = false;
    for (const auto& old : olds)
      for (const auto& f : c_files(tree)) {
        auto text = util::read_file(tree / f);
        if (!text) continue;
        int line = 0;
        for (auto l : util::split_lines(*text)) {
          ++line;
          if (is_include(std::string(l)) && include_target(std::string(l)) == include_target(old)) {
            out.push_back(text_edit(f, line, 1, news.front() + "\n"));
            found = true;
          }
        }
      }
    if (!found) return false;
  }
  return true;
}

bool overlaps(const nlohmann::json& recorded, const std::vector<std::string>& mine) {
  if (!recorded.is_array()) return false;
  for (const auto& r : recorded)
    if (r.is_string() && std::find(mine.begin(), mine.end(), r.get<std::string>()) != mine.end()) return true;
  return false;
}

/// Leave-out: an entry recorded from the same bench case, or from a run that left out the same
/// kernel files or DKMS packages (the same driver), never comes back to it.
bool left_out(const store::KbEntry& e, store::RunStore& st, const PortContext& ctx) {
  if (!ctx.case_id.empty()) {
    if (e.evidence.value("case", "") == ctx.case_id) return true;
    if (e.run_id) {
      auto q = st.db().prepare("SELECT case_id FROM runs WHERE id = ?");
      if (q) {
        q->bind(1, *e.run_id);
        if (auto row = q->step(); row && *row && q->text_col(0) == ctx.case_id) return true;
      }
    }
  }
  return overlaps(e.evidence.value("unit_files", nlohmann::json()), ctx.leave_out) ||
         overlaps(e.evidence.value("packages", nlohmann::json()), ctx.kb_leave_out);
}

class StoreKb final : public Proposer {
public:
  std::string_view id() const override { return "store-kb"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx) override {
    if (ctx.store.empty() || !fs::exists(ctx.store)) return {};
    auto st = store::RunStore::open(ctx.store);
    if (!st) {
      util::log_info("store-kb: {}", st.error().message);
      return {};
    }
    // Alternatives per change, keyed by the replayed edit so that one fix recorded for several
    // diagnostics (or by several runs) is one alternative with that many supporting entries.
    struct Candidate {
      Edit edit;
      int support = 0;               ///< distinct drivers whose runs recorded it
      std::set<std::string> drivers; ///< the bench case, else the driver tree, of each entry
      bool local = false;
      std::size_t order = 0;
    };
    std::map<std::string, Candidate> by_key;
    std::set<std::string> seen;
    for (const auto& d : diagnostics) {
      if (d.severity != core::Severity::error && d.severity != core::Severity::fatal) continue;
      std::string sig = store::diagnostic_signature(core::to_json(d));
      if (!seen.insert(sig).second) continue;
      auto hits = store::kb_entries(*st, sig);
      if (!hits) {
        util::log_info("store-kb: {}", hits.error().message);
        continue;
      }
      for (const auto& h : *hits) {
        if (left_out(h, *st, ctx)) continue;
        if (std::string why; !store::kb_edit_is_data(h.edit, &why)) {
          util::log_info("store-kb: entry {} skipped: {}", h.id, why);
          continue;
        }
        Edit recorded = edit_from_json(h.edit);
        Edit e;
        e.proposer = "store-kb";
        e.change_id = h.change_id.empty() ? recorded.change_id : h.change_id;
        e.label = h.label.empty() ? recorded.label : h.label;
        e.title = h.title.empty() ? recorded.title : h.title;
        e.smpl = recorded.smpl;
        e.call = recorded.call;
        e.renames = recorded.renames;
        e.symbols = recorded.symbols;
        if (!recorded.text_edits.empty() && !reanchor_includes(recorded, h.patch, d, ctx.tree, e.text_edits)) continue;
        if (e.smpl.empty() && !e.call && e.renames.empty() && e.text_edits.empty()) continue;
        std::string key = e.change_id + "\n" + to_json(e).dump(-1, ' ', false, util::json_bytes);
        auto [it, fresh] = by_key.try_emplace(key);
        Candidate& c = it->second;
        if (fresh) {
          c.order = by_key.size();
          e.description = fmt::format("replayed from the KB: entry {} ({}{}) solved `{}` with {}'s edit", h.id, h.origin,
                                      h.run_id ? fmt::format(", run {}", *h.run_id) : "", sig,
                                      recorded.proposer.empty() ? h.proposer : recorded.proposer);
          c.edit = std::move(e);
        }
        // Evidence counts drivers, not runs: ten runs of one driver are one site.
        auto text_of = [&](const char* field) { return util::json_get(h.evidence, field, ""); };
        std::string driver = text_of("case");
        if (driver.empty()) driver = text_of("tree");
        if (driver.empty()) driver = "entry:" + std::to_string(h.id);
        c.drivers.insert(driver);
        c.support = static_cast<int>(c.drivers.size());
        c.local = c.local || h.origin == "local";
        c.edit.evidence.push_back(fmt::format("kb:{}", h.id));
      }
    }
    // Best first per change: local evidence, then the most entries, then the oldest.
    std::map<std::string, std::vector<Candidate*>> groups;
    for (auto& [k, c] : by_key) groups[c.edit.change_id].push_back(&c);
    std::vector<Edit> out;
    for (auto& [change, list] : groups) {
      std::sort(list.begin(), list.end(), [](const Candidate* a, const Candidate* b) {
        if (a->local != b->local) return a->local;
        if (a->support != b->support) return a->support > b->support;
        return a->order < b->order;
      });
      for (std::size_t i = 0; i < list.size() && i < k_max_alternatives; ++i) {
        Edit e = list[i]->edit;
        e.support = list[i]->support;
        // Negative ranks sort before every fresh proposal (rank 0 = a proposer's best): an edit
        // that already passed the gates once is tried first.
        e.rank = static_cast<int>(i) - static_cast<int>(k_max_alternatives);
        out.push_back(std::move(e));
      }
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_store_kb() { return std::make_unique<StoreKb>(); }

} // namespace autodriver::propose
