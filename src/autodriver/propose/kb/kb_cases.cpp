#include "autodriver/propose/kb/kb_cases.hpp"

#include "autodriver/csrc/tokens.hpp"

#include <algorithm>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {
bool new_branch_covers(const VersionBlock& b, const KVersion& k) {
  return b.boundary <= k && (b.new_until == KVersion{} || k < b.new_until);
}
} // namespace

bool block_spans(const VersionBlock& b, const KVersion& from, const KVersion& to) {
  if (normalize_ws(b.old_code) == normalize_ws(b.new_code)) return false;
  return b.old_since <= from && from < b.boundary && new_branch_covers(b, to);
}

bool block_changed_by(const VersionBlock& b, const KVersion& target) {
  if (normalize_ws(b.old_code) == normalize_ws(b.new_code)) return false;
  return new_branch_covers(b, target);
}

CollapsedCase collapse_block(std::string_view text, const VersionBlock& b) {
  CollapsedCase c;
  int line = 1;
  std::string old_branch, new_branch;
  for (std::size_t pos = 0; pos < text.size();) {
    auto nl = text.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string l(text.substr(pos, end - pos));
    if (line < b.line) c.before += l;
    else if (line > b.end_line) c.after += l;
    else {
      if (line >= b.old_first && line <= b.old_last) old_branch += l;
      if (line >= b.new_first && line <= b.new_last) new_branch += l;
    }
    pos = end;
    ++line;
  }
  c.old_text = c.before + old_branch + c.after;
  c.expected_text = c.before + new_branch + c.after;
  return c;
}

namespace {
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  for (auto& t : tokenize(s)) out.push_back(t.kind == TokKind::pp_line ? normalize_ws(t.text) : t.text);
  return out;
}
} // namespace

bool matches_new_branch(std::string_view ported, const CollapsedCase& c, std::string_view new_code) {
  constexpr std::size_t k_context = 12;
  auto before = words(c.before), after = words(c.after), mid = words(new_code), p = words(ported);
  std::vector<std::string> needle(before.end() - static_cast<long>(std::min(k_context, before.size())), before.end());
  needle.insert(needle.end(), mid.begin(), mid.end());
  needle.insert(needle.end(), after.begin(), after.begin() + static_cast<long>(std::min(k_context, after.size())));
  if (needle.empty()) return p.empty();
  return std::search(p.begin(), p.end(), needle.begin(), needle.end()) != p.end();
}

} // namespace autodriver::propose
