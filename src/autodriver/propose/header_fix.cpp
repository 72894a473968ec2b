// Proposer "header-fix": headers that moved, and declarations that now live in a header the
// driver does not include. Learned from the target kernel's tree: which header declares the
// symbol, which headers the kernel's own users of the symbol include, and (with the old tree)
// what the kernel's files that included a vanished header include instead.

#include "autodriver/csrc/scan.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/propose/shared/site_index.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

/// Headers under include/ and arch/x86/include of `src` that declare or define `sym`.
std::vector<std::string> declaring_headers(const fs::path& src, const std::string& sym, bool is_type) {
  std::vector<std::string> out;
  const auto files = kernel::headers_naming(src, sym);
  // An enum constant (`BPF_MAP_CREATE,` on a line of its own in a uapi enum) declares it too;
  // only for UPPER_CASE names, the kernel's spelling of constants (a lowercase `ts` alone on a
  // line is a continued declaration, not an enumerator).
  bool constant = std::none_of(sym.begin(), sym.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
  std::string enumerator = constant ? "|^[ \\t]*" + sym + "[ \\t]*(=[^=\\n][^\\n]*,|,)[ \\t]*(/[*/][^\\n]*)?$" : "";
  std::regex decl =
      is_type ? std::regex("(struct|union|enum)\\s+" + sym + "\\s*\\{|typedef[^;]*\\b" + sym + "\\s*;|\\}\\s*" + sym + "\\s*;")
              // a prototype or definition: type words before the name at a line's
              // start (a call after `return`, `=` or `(` declares nothing)
              : std::regex("^[ \\t]*(?!return\\b)(?:[A-Za-z_]\\w*[ \\t\\*]+)+" + sym + "\\s*\\(|#\\s*define\\s+" + sym + "\\b" +
                               enumerator,
                           std::regex::ECMAScript | std::regex::multiline);
  for (const auto& rel : files) {
    auto text = util::read_file(src / rel);
    if (!text || !std::regex_search(*text, decl)) continue;
    // include/linux/x.h -> linux/x.h ; arch/x86/include/asm/x.h -> asm/x.h
    std::string inc = rel;
    for (const char* p : {"arch/x86/include/", "include/"})
      if (inc.starts_with(p)) {
        inc = inc.substr(std::string(p).size());
        break;
      }
    if (inc.starts_with("generated/")) continue;
    // include/uapi/linux/x.h: the kernel-side <linux/x.h> (which includes it) when there is one,
    // else the uapi header itself, which kbuild's -I puts at <linux/x.h> too.
    if (inc.starts_with("uapi/")) inc = inc.substr(5);
    if (std::find(out.begin(), out.end(), inc) != out.end()) continue;
    out.push_back(inc);
  }
  return out;
}

/// Line (1-based) after which a new #include goes: after the last #include line, else 0.
int last_include_line(const std::string& text) {
  // Only the includes before the first function count: a file that includes an X-macro list
  // inside a function or table (`#include <linux/cgroup_subsys.h>`) must not get a header there.
  int first_function = 0;
  for (const auto& it : csrc::scan(text).items)
    if (it.kind == csrc::ItemKind::function) {
      first_function = it.first_line;
      break;
    }
  int n = 0, last = 0, last_any = 0;
  static const std::regex k_inc(R"(^\s*#\s*include\s*[<"])");
  for (auto l : util::split_lines(text)) {
    ++n;
    if (!std::regex_search(l.begin(), l.end(), k_inc)) continue;
    last_any = n;
    if (!first_function || n < first_function) last = n;
  }
  return last ? last : last_any;
}

/// The `#include <header>` lines of the tree's files: (path relative to the tree, 1-based line).
std::vector<std::pair<std::string, int>> lines_including(const fs::path& tree, const std::string& header) {
  static const std::regex k_angle(R"(^\s*#\s*include\s*<([^>]+)>)");
  std::vector<std::pair<std::string, int>> out;
  for (const auto& rel : util::list_files(tree)) {
    // Sources only: a built work tree holds objects and modules too.
    if (rel.extension() != ".c" && rel.extension() != ".h") continue;
    auto t = util::read_file(tree / rel);
    if (!t || t->find(header) == std::string::npos) continue;
    int n = 0;
    for (auto l : util::split_lines(*t)) {
      ++n;
      std::match_results<std::string_view::const_iterator> m;
      if (std::regex_search(l.begin(), l.end(), m, k_angle) && m[1].str() == header) out.emplace_back(rel.string(), n);
    }
  }
  return out;
}

/// Headers of the target named like `h` (its file name) anywhere under include/ or
/// arch/x86/include/, as include paths; uapi copies are reached through <linux/...> too.
std::vector<std::string> same_named_headers(const fs::path& src, const std::string& h) {
  std::vector<std::string> out;
  const std::string base = fs::path(h).filename().string();
  for (const auto& root : kernel::k_header_dirs) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(src / root, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec) || it->path().filename() != base) continue;
      std::string inc = fs::relative(it->path(), src / root, ec).generic_string();
      if (inc.starts_with("uapi/")) inc = inc.substr(5);
      if (inc.starts_with("generated/") || inc == h) continue;
      if (std::find(out.begin(), out.end(), inc) == out.end()) out.push_back(inc);
    }
  }
  return out;
}

/// The old kernel's copy of a header `<h>` (include/ or arch/x86/include/), if it has one.
std::optional<fs::path> old_header(const fs::path& old_src, const std::string& h) {
  for (const auto* dirs : {&kernel::k_header_dirs, &kernel::k_uapi_header_dirs})
    for (const auto& root : *dirs) {
      std::error_code ec;
      if (fs::is_regular_file(old_src / root / h, ec)) return old_src / root / h;
    }
  return std::nullopt;
}

/// `text` with each `#include <x>` the target lacks and the old kernel has replaced by that
/// header's own text (recursively, a few levels): the vendored header needs nothing the target
/// took away with it.
std::string inline_vanished(const fs::path& old_src, const fs::path& new_src, const std::string& text, int depth) {
  static const std::regex k_angle(R"(^\s*#\s*include\s*<([^>]+)>)");
  std::string out;
  for (auto l : util::split_lines(text)) {
    std::match_results<std::string_view::const_iterator> m;
    if (depth < 3 && std::regex_search(l.begin(), l.end(), m, k_angle)) {
      std::string inc = m[1].str();
      std::error_code ec;
      bool in_target = fs::exists(new_src / "include" / inc, ec) || fs::exists(new_src / "arch/x86/include" / inc, ec) ||
                       fs::exists(new_src / "include/uapi" / inc, ec);
      if (!in_target)
        if (auto p = old_header(old_src, inc); p)
          if (auto t = util::read_file(*p); t) {
            out += inline_vanished(old_src, new_src, *t, depth + 1);
            continue;
          }
    }
    out += std::string(l) + "\n";
  }
  return out;
}

/// The old kernel's header copied into the driver (the target removed it with its in-tree
/// users): a new file beside the files that include it, which now include it by its quoted
/// name. Nothing when there is no old tree, the includers sit in different folders or the
/// name is taken.
std::optional<Edit> vendored_header(SiteIndex& idx, const PortContext& ctx, const std::string& h,
                                    const std::vector<std::pair<std::string, int>>& including) {
  if (ctx.old_src.empty() || including.empty()) return std::nullopt;
  auto src = old_header(ctx.old_src, h);
  if (!src) return std::nullopt;
  // Only a header that went with its users: a kernel file that included it and still exists
  // now includes something else, and a private copy would fall out of step with it (an
  // interface between two modules).
  std::error_code ec;
  const std::string stem = fs::path(h).stem().string();
  for (const auto& rel : idx.files_using(ctx.old_src, stem, 400, SiteIndex::Files::c_and_h)) {
    if (fs::path(rel).filename() == fs::path(h).filename() && rel.starts_with("include/")) continue;
    if (rel.find("include/uapi/") != std::string::npos || rel.starts_with("arch/x86/include/")) continue;
    if (fs::exists(ctx.new_src / rel, ec)) {
      auto t = util::read_file(ctx.old_src / rel);
      if (t && t->find(h) != std::string::npos) return std::nullopt;
    }
  }
  auto text = util::read_file(*src);
  if (!text) return std::nullopt;
  fs::path dir = fs::path(including.front().first).parent_path();
  for (const auto& [rel, line] : including)
    if (fs::path(rel).parent_path() != dir) return std::nullopt;
  const std::string name = fs::path(h).filename().string();
  if (fs::exists(ctx.tree / dir / name, ec)) return std::nullopt;
  std::string body = inline_vanished(ctx.old_src, ctx.new_src, *text, 0);
  // The SPDX line stays first; then where the copy came from.
  std::string spdx;
  if (body.starts_with("/* SPDX-") || body.starts_with("// SPDX-")) {
    auto nl = body.find('\n');
    spdx = body.substr(0, nl + 1);
    body = body.substr(nl + 1);
  }
  Edit e;
  e.proposer = "header-fix";
  e.change_id = "header:" + h;
  e.label = "header-moved";
  e.title = fmt::format("<{}> is gone: keep the old kernel's copy", h);
  e.description = fmt::format("<{}> does not exist in the target kernel (it went with its in-tree users); the "
                              "old kernel's header is copied into the driver as \"{}\".",
                              h, name);
  std::string rel_src = fs::relative(*src, ctx.old_src, ec).generic_string();
  e.text_edits.push_back(
      {(dir / name).generic_string(), 1, 0,
       spdx + fmt::format("/* Copied from the old kernel's {}: the target kernel no longer has it. */\n", rel_src) + body});
  for (const auto& [rel, line] : including) e.text_edits.push_back({rel, line, 1, fmt::format("#include \"{}\"\n", name)});
  e.symbols = {h};
  e.support = 1;
  return e;
}

/// The first file of gcc's "In file included from A:1, from B:2" chain that is the driver's:
/// its path relative to `tree` (the shortest trailing part of the printed path the tree has).
std::string innermost_driver_includer(const fs::path& tree, const std::string& raw) {
  static const std::regex k_from(R"((?:In file included from|^\s+from) ([^:\s]+):\d+)");
  for (auto l : util::split_lines(raw)) {
    std::string line(l);
    std::smatch m;
    if (!std::regex_search(line, m, k_from)) continue;
    fs::path p(m[1].str());
    std::vector<std::string> parts;
    for (const auto& c : p) parts.push_back(c.string());
    for (std::size_t k = 1; k < parts.size(); ++k) {
      fs::path rel;
      for (std::size_t i = parts.size() - k; i < parts.size(); ++i) rel /= parts[i];
      std::error_code ec;
      if (fs::is_regular_file(tree / rel, ec)) return rel.generic_string();
    }
  }
  return {};
}

class HeaderFix final : public Proposer {
public:
  std::string_view id() const override { return "header-fix"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    if (ctx.new_src.empty()) return out;
    SiteIndex& idx = m_sites.get(ctx);
    std::set<std::string> seen;
    m_proposed.clear();
    // A function-like macro called with the wrong number of arguments is then reported
    // undeclared too: the name is defined, the call is what changed, an include adds nothing.
    // (gcc_parser classes both "macro "X" passed N arguments" forms as argument-count errors.)
    for (const auto& d : diags)
      if ((d.kind == core::DiagKind::too_many_arguments || d.kind == core::DiagKind::too_few_arguments) && !d.symbols.empty())
        seen.insert("s:" + d.file + ":" + d.symbols[0]);
    for (const auto& d : diags) {
      if (d.symbols.empty() || d.severity == core::Severity::note) continue;
      if (d.kind == core::DiagKind::missing_header) {
        if (seen.insert("h:" + d.symbols[0]).second) moved_header(idx, ctx, d, out);
      } else if (d.kind == core::DiagKind::implicit_function_declaration || d.kind == core::DiagKind::undeclared_identifier) {
        // In a kernel header (a macro it defines uses a name of a header it does not include):
        // the include goes into the driver file that brought that header in.
        core::Diagnostic here = d;
        if (!d.file.empty() && d.file.front() == '/') {
          here.file = innermost_driver_includer(ctx.tree, d.raw);
          if (here.file.empty()) continue;
        }
        if (seen.insert("s:" + here.file + ":" + d.symbols[0]).second) missing_include(idx, ctx, here, false, out);
      } else if (d.kind == core::DiagKind::unknown_type || d.kind == core::DiagKind::incomplete_type) {
        std::string sym = d.symbols[0];
        if (sym.starts_with("struct ") || sym.starts_with("union ") || sym.starts_with("enum "))
          sym = sym.substr(sym.find(' ') + 1);
        // "field 'base' has incomplete type" names the member: the type is on its line.
        // So does "storage size of 'ts' isn't known" (a variable: `struct timespec ts;`).
        if (d.message.starts_with("field '") || d.message.starts_with("storage size of '")) sym = field_type(ctx, d, sym);
        if (seen.insert("t:" + d.file + ":" + sym).second) missing_include(idx, ctx, d, true, out, sym);
      }
    }
    return out;
  }

private:
  SiteIndexCache m_sites;
  std::set<std::string> m_proposed; ///< "file|header" include lines proposed in this round

  /// `struct drm_framebuffer base;` on the diagnostic's line -> "drm_framebuffer"; else `field`.
  static std::string field_type(const PortContext& ctx, const core::Diagnostic& d, const std::string& field) {
    auto l = diagnostic_line(ctx.tree, d);
    if (!l) return field;
    std::smatch m;
    if (std::regex_search(*l, m, std::regex(R"((?:struct|union|enum)\s+([A-Za-z_]\w*)\s+)" + field + R"(\b)"))) return m[1].str();
    return field;
  }

  void moved_header(SiteIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
    const std::string& h = d.symbols[0];
    std::map<std::string, int> votes;
    // Kernel files that included h in the old tree: what do they include now?
    if (!ctx.old_src.empty()) {
      std::string base = fs::path(h).stem().string();
      for (const auto& pair : idx.pairs_using(base, 80, SiteIndex::Pairs::all, SiteIndex::Files::c_and_h)) {
        auto oi = includes_of(pair.before->tokens);
        if (std::find(oi.begin(), oi.end(), h) == oi.end()) continue;
        auto ni = includes_of(pair.after->tokens);
        if (std::find(ni.begin(), ni.end(), h) != ni.end()) continue;
        std::set<std::string> old_set(oi.begin(), oi.end());
        for (const auto& x : ni)
          if (!old_set.count(x)) ++votes[x];
      }
    }
    // Same file name elsewhere in the target's include dirs (<drm/x.h> -> <drm/intel/x.h>);
    // a header under the old one's directory counts twice.
    for (const auto& inc : same_named_headers(ctx.new_src, h)) {
      std::string dir = fs::path(h).parent_path().string();
      votes[inc] += !dir.empty() && inc.starts_with(dir + "/") ? 2 : 1;
    }
    std::vector<std::pair<std::string, int>> ranked(votes.begin(), votes.end());
    // Ties go to the name closer to the old one (i915_mei_hdcp_interface.h -> i915_hdcp_interface.h).
    auto shared_words = [&](const std::string& inc) {
      auto words = [](const std::string& p) {
        std::string stem = fs::path(p).stem().string();
        std::replace(stem.begin(), stem.end(), '-', '_');
        auto w = name_words(stem);
        return std::set<std::string>(w.begin(), w.end());
      };
      auto a = words(h), b = words(inc);
      return static_cast<int>(std::count_if(b.begin(), b.end(), [&](const std::string& x) { return a.count(x) > 0; }));
    };
    std::stable_sort(ranked.begin(), ranked.end(), [&](auto& a, auto& b) {
      return a.second != b.second ? a.second > b.second : shared_words(a.first) > shared_words(b.first);
    });
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    const auto including = lines_including(ctx.tree, h);
    int rank = 0;
    for (const auto& [inc, n] : ranked) {
      if (rank >= 2 || inc == h) break;
      Edit e;
      e.proposer = "header-fix";
      e.change_id = "header:" + h;
      e.label = "header-moved";
      e.title = fmt::format("<{}> moved to <{}>", h, inc);
      e.description = fmt::format("<{}> no longer exists in the target kernel; <{}> provides it ({} kernel file(s) "
                                  "switched to it or it has the same name).",
                                  h, inc, n);
      // Every file of the tree that includes the vanished header, not only the one gcc reached first.
      for (const auto& [rel, line] : including) e.text_edits.push_back({rel, line, 1, fmt::format("#include <{}>\n", inc)});
      if (e.text_edits.empty()) e.text_edits.push_back({d.file, d.line, 1, fmt::format("#include <{}>\n", inc)});
      e.symbols = {h, inc};
      e.support = n;
      e.rank = rank++;
      out.push_back(std::move(e));
    }
    // The target has no such header at all: what the driver took from it is declared elsewhere
    // now (reached through other includes) or gone. The last alternative drops the include and
    // lets the next build name what is still missing.
    if (fs::exists(ctx.new_src / "include" / h) || fs::exists(ctx.new_src / "arch/x86/include" / h)) return;
    if (auto v = vendored_header(idx, ctx, h, including); v) {
      v->rank = rank++;
      out.push_back(std::move(*v));
    }
    Edit e;
    e.proposer = "header-fix";
    e.change_id = "header:" + h;
    e.label = "header-moved";
    e.title = fmt::format("<{}> is gone", h);
    e.description = fmt::format("<{}> does not exist in the target kernel and no header took its name; the include "
                                "is dropped.",
                                h);
    for (const auto& [rel, line] : including) e.text_edits.push_back({rel, line, 1, ""});
    if (e.text_edits.empty()) return; // a quoted (driver-local) header: not the kernel's
    e.symbols = {h};
    e.support = 1;
    e.rank = rank;
    out.push_back(std::move(e));
  }

  void missing_include(SiteIndex& idx, const PortContext& ctx, const core::Diagnostic& d, bool is_type, std::vector<Edit>& out,
                       std::string sym = {}) {
    if (sym.empty()) sym = d.symbols[0];
    auto headers = declaring_headers(ctx.new_src, sym, is_type);
    if (headers.empty() || headers.size() > 6) return;
    auto text = util::read_file(ctx.tree / d.file);
    if (!text) return;
    auto tokens = tokenize(*text);
    auto have = includes_of(tokens);
    // Prefer the header that the target's own users of the symbol include.
    std::map<std::string, int> score;
    for (const auto& h : headers) score[h] = 0;
    for (const auto& rel : idx.files_using(ctx.new_src, sym, 40)) {
      auto f = idx.load(ctx.new_src, rel);
      if (!f) continue;
      for (const auto& inc : includes_of(f->tokens))
        if (score.count(inc)) ++score[inc];
    }
    std::vector<std::pair<std::string, int>> ranked(score.begin(), score.end());
    std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.second > b.second; });
    int rank = 0;
    for (const auto& [h, n] : ranked) {
      if (rank >= 2) break;
      if (std::find(have.begin(), have.end(), h) != have.end()) continue;
      // one include line per file and header, whichever of its symbols asked for it first
      if (!m_proposed.insert(d.file + "|" + h).second) continue;
      Edit e;
      e.proposer = "header-fix";
      e.change_id = "include:" + d.file + ":" + sym;
      e.label = "header-moved";
      e.title = fmt::format("include <{}> for {}", h, sym);
      e.description = fmt::format("In the target kernel {} is declared in <{}>, which {} no longer gets "
                                  "indirectly ({} of the kernel's own users include it).",
                                  sym, h, d.file, n);
      int after = last_include_line(*text);
      e.text_edits.push_back({d.file, after + 1, 0, fmt::format("#include <{}>\n", h)});
      e.symbols = {sym, h};
      e.support = n;
      e.rank = rank++;
      out.push_back(std::move(e));
    }
  }
};

} // namespace

std::unique_ptr<Proposer> make_header_fix() { return std::make_unique<HeaderFix>(); }

} // namespace autodriver::propose
