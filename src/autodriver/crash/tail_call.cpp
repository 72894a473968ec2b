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
      const auto units = csrc::find_units(t);
      // The function, and the functions of the same file it calls, two levels deep: gcc inlines
      // those (__dev_open calls ->ndo_set_rx_mode through dev_set_rx_mode and __dev_set_rx_mode).
      std::set<std::string> read, next{name};
      for (int depth = 0; depth < 3 && !next.empty(); ++depth) {
        std::set<std::string> callees;
        for (const auto& u : units) {
          if (u.kind != csrc::UnitKind::function || !next.count(u.name) || !read.insert(u.name).second) continue;
          for (std::size_t i = u.body; i + 2 < u.last; ++i) {
            if (t[i].text == "->" && t[i + 1].kind == csrc::TokKind::ident && t[i + 2].text == "(") out.insert(t[i + 1].text);
            if (t[i + 1].kind == csrc::TokKind::ident && t[i + 2].text == "(" && t[i].text != "->" && t[i].text != ".")
              callees.insert(t[i + 1].text);
          }
        }
        next = std::move(callees);
      }
      if (!read.empty()) break;
    }
    return out;
  });
}

namespace {

/// Whether `name` is `callee`, or a static inline function of the kernel's headers that calls it,
/// two levels deep (schedule_work() -> queue_work() -> queue_work_on(): the trace shows the last).
bool reaches(const fs::path& kernel_src, const std::string& name, const std::string& callee, int depth = 0) {
  if (name == callee) return true;
  if (depth >= 3 || kernel_src.empty()) return false;
  static util::Memo<std::set<std::string>> known;
  const auto calls = known.get(kernel_src.string() + "|" + name, [&] {
    std::set<std::string> out;
    kernel::SourceGrep q;
    q.options = {"-lE"};
    q.includes = {"*.h"};
    q.pattern = "static (__always_)?inline .*[ *]" + name + "\\(";
    q.dirs = kernel::k_header_dirs;
    q.all_of = {name};
    for (const auto& rel : kernel::grep_source(kernel_src, q)) {
      auto text = util::read_file(kernel_src / rel);
      if (!text) continue;
      auto t = csrc::tokenize(*text);
      for (const auto& u : csrc::find_units(t))
        if (u.kind == csrc::UnitKind::function && u.name == name)
          for (const auto& c : csrc::find_calls(t, u.body, u.last)) out.insert(c.callee);
      if (!out.empty()) break;
    }
    return out;
  });
  return std::any_of(calls.begin(), calls.end(), [&](const std::string& c) { return reaches(kernel_src, c, callee, depth + 1); });
}

/// The line of the function's last statement when it is a call of `callee` (or `return callee(...)`),
/// or of an inline wrapper of the kernel's headers that calls it.
std::optional<int> ends_calling(const DriverFile& f, const csrc::Unit& fn, const std::string& callee,
                                const fs::path& kernel_src) {
  auto sts = csrc::block_statements(f.toks, fn.body);
  if (sts.empty()) return std::nullopt;
  auto [a, b] = sts.back();
  if (f.toks[a].text == "return") ++a;
  if (a + 1 <= b && f.toks[a].kind == csrc::TokKind::ident && f.toks[a + 1].text == "(" &&
      reaches(kernel_src, f.toks[a].text, callee))
    return f.toks[a].line;
  return std::nullopt;
}

} // namespace

namespace {

/// The driver functions assigned to one of `members` whose last statement calls `callee`, and
/// whether `callee` is itself assigned to one of them.
std::vector<TailCall> ending_with(const std::vector<DriverFile>& driver, const std::set<std::string>& members,
                                  const std::string& callee, const std::string& caller, bool& callee_assigned,
                                  const fs::path& kernel_src) {
  std::vector<TailCall> fits;
  for (const auto& f : driver)
    for (const auto& init : f.units) {
      if (init.kind != csrc::UnitKind::initializer) continue;
      for (const auto& d : csrc::designated_members(f.toks, init)) {
        if (!members.count(d.member)) continue;
        callee_assigned = callee_assigned || d.value == callee;
        for (const auto& fn : f.units)
          if (fn.kind == csrc::UnitKind::function && fn.name == d.value)
            if (auto line = ends_calling(f, fn, callee, kernel_src))
              fits.push_back({fn.name, f.rel, *line, callee, caller, d.member});
      }
    }
  return fits;
}

std::vector<const Frame*> reliable_frames(const CrashReport& r) {
  std::vector<const Frame*> frames;
  if (r.rip) frames.push_back(&*r.rip);
  for (const auto& f : r.trace)
    if (f.reliable) frames.push_back(&f);
  return frames;
}

/// A symbol without gcc's clone suffix (`f.isra.0`, `f.cold`: f).
std::string base_symbol(const std::string& name) { return name.substr(0, name.find('.')); }

} // namespace

std::optional<TailCall> lost_tail_call(const CrashReport& r, const fs::path& tree, const fs::path& kernel_src) {
  if (tree.empty() || kernel_src.empty()) return std::nullopt;
  const auto frames = reliable_frames(r);
  for (const auto* f : frames)
    if (!f->module.empty()) return std::nullopt; // the trace has module frames: nothing was lost
  std::optional<std::vector<DriverFile>> driver;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    const std::string callee = base_symbol(frames[i]->function), caller = frames[i + 1]->function;
    auto members = members_called_by(kernel_src, caller);
    if (members.empty()) continue;
    if (!driver) driver = read_driver(tree);
    bool assigned = false;
    auto fits = ending_with(*driver, members, callee, caller, assigned, kernel_src);
    if (fits.size() == 1) return fits.front();
    if (!fits.empty()) return std::nullopt;
  }
  return std::nullopt;
}

std::optional<TailCall> lost_tail_caller(const CrashReport& r, const fs::path& tree, const fs::path& kernel_src) {
  if (tree.empty() || kernel_src.empty()) return std::nullopt;
  const auto frames = reliable_frames(r);
  std::size_t outer = frames.size();
  for (std::size_t i = 0; i < frames.size(); ++i)
    if (!frames[i]->module.empty()) outer = i;
  if (outer + 1 >= frames.size()) return std::nullopt;
  const std::string callee = base_symbol(frames[outer]->function), caller = frames[outer + 1]->function;
  auto members = members_called_by(kernel_src, caller);
  if (members.empty()) return std::nullopt;
  bool assigned = false;
  auto fits = ending_with(read_driver(tree), members, callee, caller, assigned, kernel_src);
  if (assigned || fits.size() != 1) return std::nullopt;
  return fits.front();
}

} // namespace autodriver::crash
