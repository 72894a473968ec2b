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

namespace {
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  for (auto& t : tokenize(s)) out.push_back(t.kind == TokKind::pp_line ? normalize_ws(t.text) : t.text);
  return out;
}

std::vector<std::string> tail(std::vector<std::string> w) {
  if (w.size() > k_context_tokens) w.erase(w.begin(), w.end() - static_cast<long>(k_context_tokens));
  return w;
}

std::vector<std::string> head(std::vector<std::string> w) {
  if (w.size() > k_context_tokens) w.resize(k_context_tokens);
  return w;
}
} // namespace

CollapsedFile collapse_blocks(std::string_view text, const std::vector<VersionBlock>& blocks) {
  // Which block (index into `blocks`) each line belongs to; overlapping blocks are left out.
  std::vector<std::size_t> order(blocks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return blocks[a].line < blocks[b].line; });
  std::vector<std::size_t> kept;
  for (auto i : order)
    if (kept.empty() || blocks[i].line > blocks[kept.back()].end_line) kept.push_back(i);
  CollapsedFile f;
  f.context.resize(blocks.size());
  std::vector<std::pair<std::size_t, std::size_t>> span(blocks.size(), {std::string::npos, 0}); // in expected_text
  std::size_t k = 0;
  int line = 1;
  for (std::size_t pos = 0; pos < text.size(); ++line) {
    auto nl = text.find('\n', pos);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view l = text.substr(pos, end - pos);
    pos = end;
    while (k < kept.size() && line > blocks[kept[k]].end_line) ++k;
    if (k == kept.size() || line < blocks[kept[k]].line) {
      f.old_text += l;
      f.expected_text += l;
      continue;
    }
    const auto& b = blocks[kept[k]];
    auto& sp = span[kept[k]];
    if (line == b.line) sp = {f.expected_text.size(), f.expected_text.size()};
    if (line >= b.old_first && line <= b.old_last) f.old_text += l;
    if (line >= b.new_first && line <= b.new_last) f.expected_text += l;
    sp.second = f.expected_text.size();
  }
  std::string_view exp = f.expected_text;
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (span[i].first != std::string::npos)
      f.context[i] = {tail(words(exp.substr(0, span[i].first))), head(words(exp.substr(span[i].second)))};
  return f;
}

bool matches_in_context(std::string_view ported, const BlockContext& context, std::string_view new_code) {
  auto mid = words(new_code), p = words(ported);
  std::vector<std::string> needle = context.before;
  needle.insert(needle.end(), mid.begin(), mid.end());
  needle.insert(needle.end(), context.after.begin(), context.after.end());
  if (needle.empty()) return p.empty();
  return std::search(p.begin(), p.end(), needle.begin(), needle.end()) != p.end();
}

bool matches_new_branch(std::string_view ported, const CollapsedCase& c, std::string_view new_code) {
  return matches_in_context(ported, {tail(words(c.before)), head(words(c.after))}, new_code);
}

} // namespace autodriver::propose
