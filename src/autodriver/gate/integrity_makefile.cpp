// Integrity rules for Makefile/Kbuild: objects dropped from obj-m/obj-y/foo-y/foo-objs, the
// Makefile deleted, and warning-suppression flags added (or -Werror removed).

#include "autodriver/gate/integrity_rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace autodriver::gate::integrity {

namespace {

struct Logical {
  int line = 0; ///< first physical line
  int last = 0;
  std::string text; ///< continuation lines joined, comment removed
};

std::vector<Logical> logical_lines(const std::vector<std::string>& raw) {
  std::vector<Logical> out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    Logical l;
    l.line = static_cast<int>(i) + 1;
    std::string joined;
    for (; i < raw.size(); ++i) {
      std::string_view s = raw[i];
      bool cont = !s.empty() && s.back() == '\\';
      if (cont) s.remove_suffix(1);
      joined += s;
      joined += ' ';
      if (!cont) break;
    }
    l.last = static_cast<int>(std::min(i, raw.size() - 1)) + 1;
    if (auto h = joined.find('#'); h != std::string::npos) joined.resize(h);
    l.text = csrc::normalize_space(joined);
    if (!l.text.empty()) out.push_back(std::move(l));
  }
  return out;
}

/// Object/module words of `obj-m += a.o`, `obj-$(CONFIG_X) := b/`, `foo-y := c.o`, `foo-objs = d.o`.
std::vector<std::pair<std::string, int>> objects(const std::vector<Logical>& lines) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& l : lines) {
    auto op = l.text.find('=');
    if (op == std::string::npos || op == 0) continue;
    std::size_t lhs_end = op;
    if (std::string_view(":+?").find(l.text[op - 1]) != std::string_view::npos) --lhs_end;
    std::string lhs = csrc::normalize_space(l.text.substr(0, lhs_end));
    bool list = lhs.starts_with("obj-") || lhs.ends_with("-y") || lhs.ends_with("-m") || lhs.ends_with("-objs") ||
                (lhs.find("-$(") != std::string::npos && lhs.ends_with(")"));
    if (!list || lhs.find(' ') != std::string::npos) continue;
    std::string rhs = l.text.substr(op + 1);
    std::size_t pos = 0;
    while (pos < rhs.size()) {
      auto e = rhs.find(' ', pos);
      std::string w = rhs.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      pos = e == std::string::npos ? rhs.size() : e + 1;
      if (w.ends_with(".o") || (w.ends_with("/") && w.size() > 1)) out.emplace_back(w, l.line);
    }
  }
  return out;
}

struct Flags {
  std::map<std::string, std::size_t> count;
  std::map<std::string, int> first_line;
};

/// Warning-relevant flags per logical line: -Wno-*, -w, -fpermissive, cc-disable-warning, -Werror.
Flags flags(const std::vector<Logical>& lines) {
  Flags f;
  for (const auto& l : lines) {
    std::size_t pos = 0;
    const std::string& t = l.text;
    while (pos < t.size()) {
      auto e = t.find_first_of(" ,()\"'", pos);
      std::string w = t.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
      pos = e == std::string::npos ? t.size() : e + 1;
      std::string k;
      if (w.starts_with("-Wno-")) k = "-Wno-*";
      else if (w == "-w") k = "-w";
      else if (w == "-fpermissive") k = "-fpermissive";
      else if (w == "cc-disable-warning") k = "cc-disable-warning";
      else if (w == "-Werror" || w.starts_with("-Werror=")) k = "-Werror";
      if (k.empty()) continue;
      ++f.count[k];
      f.first_line.try_emplace(k, l.line);
    }
  }
  return f;
}

} // namespace

void check_makefile(Context& ctx, const FilePair& f) {
  auto o_lines = logical_lines(f.o.raw);
  auto c_lines = logical_lines(f.c.raw);
  if (!f.in_candidate) ctx.add("makefile-object-dropped", f.rel, 0, "the Makefile was deleted");
  auto now = objects(c_lines);
  for (const auto& [obj, line] : objects(o_lines)) {
    bool kept = std::any_of(now.begin(), now.end(), [&](const auto& p) { return p.first == obj; });
    if (!kept && f.in_candidate)
      ctx.add("makefile-object-dropped", f.rel, f.candidate_line(line),
              fmt::format("'{}' (original line {}) is no longer built", obj, line));
  }
  Flags of = flags(o_lines), cf = flags(c_lines);
  for (const auto& [k, n] : cf.count) {
    if (k == "-Werror" || n <= of.count[k]) continue;
    int at = cf.first_line[k];
    // Prefer a line the diff added that carries the flag over an old one.
    for (const auto& l : c_lines) {
      bool added = std::any_of(f.blocks.begin(), f.blocks.end(),
                               [&](const Block& b) { return b.c_first <= l.last && l.line < b.c_first + b.c_count; });
      if (added && flags({l}).count.count(k)) {
        at = l.line;
        break;
      }
    }
    ctx.add("warning-suppressed", f.rel, at, fmt::format("added '{}' to the build flags ({} -> {})", k, of.count[k], n));
  }
  if (of.count["-Werror"] > cf.count["-Werror"] && f.in_candidate)
    ctx.add("warning-suppressed", f.rel, f.candidate_line(of.first_line["-Werror"]), "removed '-Werror' from the build flags");
}

} // namespace autodriver::gate::integrity
