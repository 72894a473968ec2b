#include "autodriver/crash/tail_call.hpp"

#include "autodriver/crash/driver_files.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/memo.hpp"

#include <regex>

namespace autodriver::crash {

namespace fs = std::filesystem;

std::set<std::string> members_called_by(const fs::path& kernel_src, const std::string& name) {
  static util::Memo<std::set<std::string>> known;
  static const std::regex k_name(R"(^[A-Za-z_]\w*$)");
  if (kernel_src.empty() || !std::regex_match(name, k_name)) return {};
  return known.get(kernel_src.string() + "|" + name, [&] {
    std::set<std::string> out;
    kernel::SourceGrep q;
    q.options = {"-lE"};
    q.includes = {"*.c"};
    q.pattern = "^[A-Za-z_][A-Za-z0-9_ *]*[ *]" + name + "\\(";
    q.dirs = kernel::k_code_dirs;
    q.all_of = {name};
    for (const auto& rel : kernel::grep_source(kernel_src, q)) {
      auto text = util::read_file(kernel_src / rel);
      if (!text) continue;
      auto t = csrc::tokenize(*text);
      for (const auto& u : csrc::find_units(t)) {
        if (u.kind != csrc::UnitKind::function || u.name != name) continue;
        for (std::size_t i = u.body; i + 2 < u.last; ++i)
          if (t[i].text == "->" && t[i + 1].kind == csrc::TokKind::ident && t[i + 2].text == "(") out.insert(t[i + 1].text);
      }
      if (!out.empty()) break;
    }
    return out;
  });
}

namespace {

/// The line of the function's last statement when it is a call of `callee` (or `return callee(...)`).
std::optional<int> ends_calling(const DriverFile& f, const csrc::Unit& fn, const std::string& callee) {
  auto sts = csrc::block_statements(f.toks, fn.body);
  if (sts.empty()) return std::nullopt;
  auto [a, b] = sts.back();
  if (f.toks[a].text == "return") ++a;
  if (a + 1 <= b && f.toks[a].text == callee && f.toks[a + 1].text == "(") return f.toks[a].line;
  return std::nullopt;
}

} // namespace

std::optional<TailCall> lost_tail_call(const CrashReport& r, const fs::path& tree, const fs::path& kernel_src) {
  if (tree.empty() || kernel_src.empty()) return std::nullopt;
  std::vector<const Frame*> frames;
  if (r.rip) frames.push_back(&*r.rip);
  for (const auto& f : r.trace)
    if (f.reliable) frames.push_back(&f);
  for (const auto* f : frames)
    if (!f->module.empty()) return std::nullopt; // the trace has module frames: nothing was lost
  std::optional<std::vector<DriverFile>> driver;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    const std::string callee = frames[i]->function, caller = frames[i + 1]->function;
    auto members = members_called_by(kernel_src, caller);
    if (members.empty()) continue;
    if (!driver) driver = read_driver(tree);
    std::vector<TailCall> fits;
    for (const auto& f : *driver)
      for (const auto& init : f.units) {
        if (init.kind != csrc::UnitKind::initializer) continue;
        for (const auto& d : csrc::designated_members(f.toks, init)) {
          if (!members.count(d.member)) continue;
          for (const auto& fn : f.units)
            if (fn.kind == csrc::UnitKind::function && fn.name == d.value)
              if (auto line = ends_calling(f, fn, callee)) fits.push_back({fn.name, f.rel, *line, callee, caller, d.member});
        }
      }
    if (fits.size() == 1) return fits.front();
    if (!fits.empty()) return std::nullopt;
  }
  return std::nullopt;
}

} // namespace autodriver::crash
