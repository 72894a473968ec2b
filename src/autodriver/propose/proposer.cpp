#include "autodriver/propose/proposer.hpp"

namespace autodriver::propose {

const std::vector<ProposerEntry>& proposer_table() {
  static const std::vector<ProposerEntry> k_table = {
      {"learned-rewrite", "rewrites learned from the kernel's own drivers (old tree vs new tree), as SmPL", &make_learned_rewrite},
      {"callback-signature", "callback return type changes read off incompatible-pointer-type errors", &make_callback_signature},
      {"header-fix", "moved headers and declarations that need another #include, from the target tree", &make_header_fix},
      {"target-api", "repairs from the target kernel alone: arguments by type/name, renames, members", &make_target_api},
      {"compat-kb", "old-API -> new-API forms learned from maintainers' #if LINUX_VERSION_CODE blocks (DKMS sources)", &make_compat_kb},
  };
  return k_table;
}

nlohmann::json to_json(const Edit& e) {
  nlohmann::json edits = nlohmann::json::array();
  for (const auto& t : e.text_edits) edits.push_back({{"file", t.file}, {"line", t.line}, {"remove", t.remove}, {"text", t.text}});
  nlohmann::json renames = nlohmann::json::array();
  for (const auto& [a, b] : e.renames) renames.push_back({a, b});
  return {{"proposer", e.proposer}, {"change_id", e.change_id}, {"label", e.label},   {"title", e.title},
          {"description", e.description}, {"smpl", e.smpl}, {"text_edits", edits}, {"renames", renames},
          {"symbols", e.symbols}, {"support", e.support}, {"rank", e.rank}, {"evidence", e.evidence}};
}

} // namespace autodriver::propose
