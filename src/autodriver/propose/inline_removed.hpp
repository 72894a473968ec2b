#pragma once
// The inline-removed mechanism (inline_removed.cpp) over definitions given as data: the rule
// packs' old-definitions (rule_pack.cpp) instead of an old kernel's headers.

#include "autodriver/propose/proposer.hpp"

#include <memory>
#include <string>
#include <vector>

namespace autodriver::propose {

/// C definitions as an old kernel's header had them, and where they are stated.
struct OldDefinitions {
  std::string origin; ///< named in edits' evidence and descriptions ("rules/pci-dma-compat.rule")
  std::string text;
};

/// inline-removed reading only `texts`; its edits carry `id` as their proposer.
std::unique_ptr<Proposer> make_inline_from_definitions(std::string id, std::vector<OldDefinitions> texts);

} // namespace autodriver::propose
