#include "autodriver/propose/proposer.hpp"

#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"

namespace autodriver::propose {

const std::vector<ProposerEntry>& proposer_table() {
  static const std::vector<ProposerEntry> k_table = {
      {"store-kb", "edits that solved the same diagnostic in earlier runs (the run store's KB), replayed first", &make_store_kb},
      {"learned-rewrite", "rewrites learned from the kernel's own drivers (old tree vs new tree), as SmPL",
       &make_learned_rewrite},
      {"callback-signature", "callback return type changes read off incompatible-pointer-type errors", &make_callback_signature},
      {"void-result", "a function the kernel made void: the driver's uses of its value become the call and 0", &make_void_result},
      {"return-fit", "a function declared void whose returns still carry values: each keeps its call and returns nothing",
       &make_return_fit},
      {"argument-cast", "an argument the driver casts to a parameter's old type is cast to its new one", &make_argument_cast},
      {"entry-points", "an entry point found by its magic name (init_module) is registered with the macro objtool names",
       &make_entry_points},
      {"kbuild-vars",
       "Makefile variables the target's kbuild no longer reads renamed as the old kbuild forwarded them (EXTRA_CFLAGS -> "
       "ccflags-y)",
       &make_kbuild_vars},
      {"ops-swap", "an ops table passed where the kernel now wants another struct type: retyped, members mapped by name",
       &make_ops_swap},
      {"struct-convert",
       "an object whose struct type the target removed, converted as the kernel's own drivers converted theirs (members, calls, "
       "callback types, handed-over callbacks)",
       &make_struct_convert},
      {"header-fix", "moved headers and declarations that need another #include, from the target tree", &make_header_fix},
      {"inline-removed", "calls of a one-expression helper the target removed become its old body (old kernel's headers)",
       &make_inline_removed},
      {"rule-pack",
       "knowledge stated by hand in rule files with provenance (rules/*.rule, compiled in; --rules DIR adds yours, "
       "--no-rule-packs leaves the shipped ones out): old definitions, removed statements, table paths, semantic patches",
       &make_rule_pack},
      {"target-api", "repairs from the target kernel alone: arguments by type/name, renames, members", &make_target_api},
      {"feature-switch",
       "the driver's own feature macro (#ifdef HAVE_X ... #else) switched on when the target's errors sit in its #else branch",
       &make_feature_switch, true},
      {"compat-kb", "old-API -> new-API forms learned from maintainers' #if LINUX_VERSION_CODE blocks (DKMS sources)",
       &make_compat_kb},
  };
  return k_table;
}

std::optional<std::string> diagnostic_line(const std::filesystem::path& tree, const core::Diagnostic& d) {
  if (d.file.empty() || d.file.front() == '/' || d.line < 1) return std::nullopt;
  auto text = util::read_file(tree / d.file);
  if (!text) return std::nullopt;
  auto lines = util::split_lines(*text);
  if (static_cast<std::size_t>(d.line) > lines.size()) return std::nullopt;
  return std::string(lines[static_cast<std::size_t>(d.line) - 1]);
}

nlohmann::json to_json(const Edit& e) {
  nlohmann::json edits = nlohmann::json::array();
  for (const auto& t : e.text_edits)
    edits.push_back({{"file", t.file}, {"line", t.line}, {"remove", t.remove}, {"text", t.text}});
  nlohmann::json renames = nlohmann::json::array();
  for (const auto& [a, b] : e.renames) renames.push_back({a, b});
  nlohmann::json j = {
      {"proposer", e.proposer},       {"change_id", e.change_id}, {"label", e.label},    {"title", e.title},
      {"description", e.description}, {"smpl", e.smpl},           {"text_edits", edits}, {"renames", renames},
      {"symbols", e.symbols},         {"support", e.support},     {"rank", e.rank},      {"evidence", e.evidence}};
  if (e.call) j["call"] = {{"from", e.call->from}, {"arity", e.call->arity}, {"to", e.call->to}, {"args", e.call->args}};
  if (!e.follows.empty()) j["follows"] = e.follows;
  return j;
}

Edit edit_from_json(const nlohmann::json& j) {
  Edit e;
  if (!j.is_object()) return e;
  auto str = [&](const char* k) { return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string(); };
  auto strs = [&](const nlohmann::json& a) {
    std::vector<std::string> out;
    if (a.is_array())
      for (const auto& x : a)
        if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
  };
  e.proposer = str("proposer");
  e.change_id = str("change_id");
  e.label = str("label");
  e.title = str("title");
  e.description = str("description");
  e.smpl = str("smpl");
  e.follows = str("follows");
  if (j.contains("text_edits") && j["text_edits"].is_array())
    for (const auto& t : j["text_edits"])
      if (t.is_object()) {
        TextEdit te;
        te.file = util::json_get(t, "file", "");
        te.line = util::json_get(t, "line", 0);
        te.remove = util::json_get(t, "remove", 0);
        te.text = util::json_get(t, "text", "");
        e.text_edits.push_back(std::move(te));
      }
  if (j.contains("renames") && j["renames"].is_array())
    for (const auto& r : j["renames"])
      if (r.is_array() && r.size() == 2 && r[0].is_string() && r[1].is_string())
        e.renames.emplace_back(r[0].get<std::string>(), r[1].get<std::string>());
  if (j.contains("call") && j["call"].is_object()) {
    const auto& c = j["call"];
    e.call = CallRewrite{util::json_get(c, "from", ""), util::json_get(c, "arity", std::size_t{0}), util::json_get(c, "to", ""),
                         strs(util::json_get(c, "args", nlohmann::json::array()))};
  }
  e.symbols = strs(util::json_get(j, "symbols", nlohmann::json::array()));
  e.support = util::json_get(j, "support", 0);
  e.rank = util::json_get(j, "rank", 0);
  e.evidence = strs(util::json_get(j, "evidence", nlohmann::json::array()));
  return e;
}

} // namespace autodriver::propose
