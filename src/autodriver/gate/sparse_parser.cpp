#include "autodriver/gate/sparse_parser.hpp"

#include <map>
#include <string>
#include <tuple>

namespace autodriver::gate {

using core::Diagnostic;

namespace {
std::string located_key(const Diagnostic& d) {
  return d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) + ":" + d.message;
}
std::string unlocated_key(const Diagnostic& d) { return d.file + ":" + d.message; }
} // namespace

std::vector<Diagnostic> sparse_only(const std::vector<Diagnostic>& with_sparse, const std::vector<Diagnostic>& gcc_only) {
  std::map<std::string, int> gcc_count;
  for (const auto& d : gcc_only) ++gcc_count[located_key(d)];
  std::vector<Diagnostic> out;
  for (const auto& d : with_sparse) {
    if (d.tool == "modpost") continue;
    auto it = gcc_count.find(located_key(d));
    if (it != gcc_count.end() && it->second > 0) {
      --it->second;
      continue;
    }
    Diagnostic s = d;
    s.tool = "sparse";
    s.kind = core::DiagKind::sparse;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<Diagnostic> new_findings(const std::vector<Diagnostic>& current, const std::vector<Diagnostic>& baseline) {
  std::map<std::string, int> base;
  for (const auto& d : baseline) ++base[unlocated_key(d)];
  std::vector<Diagnostic> out;
  for (const auto& d : current) {
    auto it = base.find(unlocated_key(d));
    if (it != base.end() && it->second > 0) {
      --it->second;
      continue;
    }
    out.push_back(d);
  }
  return out;
}

} // namespace autodriver::gate
