#include "autodriver/propose/shared/target_decls.hpp"

#include "autodriver/propose/shared/result_test.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/kernel/target.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// Output lines of `grep -r OPTIONS --include=INCLUDE -e PATTERN -- DIRS` run in the kernel tree
/// `src`, where every line the pattern matches holds `word` as a whole word (the tree's word
/// index names the files to read); empty when grep fails or times out. For a tree in the cache the
/// answers are kept for the process (kernel::grep_source): it never changes, and the loop asks the
/// same questions every iteration (and bench's cases ask each other's).
static std::vector<std::string> grep_kernel(const fs::path& src, std::vector<std::string> options, const std::string& include,
                                            const std::string& pattern, std::vector<std::string> dirs, const std::string& word,
                                            std::chrono::seconds timeout) {
  kernel::SourceGrep q;
  q.options = std::move(options);
  q.includes = {include};
  q.pattern = pattern;
  q.dirs = std::move(dirs);
  q.all_of = {word};
  q.timeout = timeout;
  return kernel::grep_source(src, q);
}

std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(util::trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!util::trim(cur).empty()) out.emplace_back(util::trim(cur));
  return out;
}

static Param parse_param(const std::string& p) {
  Param out;
  auto toks = tokenize(p);
  // Function pointer parameter: "int (*cb)(void *)".
  for (std::size_t i = 0; i + 2 < toks.size(); ++i)
    if (toks[i].text == "(" && toks[i + 1].text == "*" && toks[i + 2].kind == TokKind::ident) {
      out.name = toks[i + 2].text;
      out.type = p;
      return out;
    }
  if (!toks.empty() && toks.back().kind == TokKind::ident && toks.size() > 1) {
    static const std::set<std::string> k_type_words = {"int",    "long", "char", "short", "void", "unsigned", "signed", "bool",
                                                       "size_t", "u8",   "u16",  "u32",   "u64",  "gfp_t",    "loff_t"};
    if (!k_type_words.count(toks.back().text) && !(toks.size() == 2 && toks[0].text == "struct")) {
      out.name = toks.back().text;
      out.type = std::string(util::trim(p.substr(0, toks.back().begin)));
      return out;
    }
  }
  out.type = p;
  return out;
}

std::optional<Prototype> parse_prototype(const std::string& decl, const std::string& name) {
  Prototype pr;
  pr.name = name;
  pr.text = decl;
  std::smatch m;
  std::regex k_macro("#\\s*define\\s+" + name + "\\(([^)]*)\\)");
  if (std::regex_search(decl, m, k_macro)) {
    pr.is_macro = true;
    for (const auto& p : split_top_level(m[1].str())) {
      if (p == "...") pr.variadic = true;
      else pr.params.push_back({"", p});
    }
    return pr;
  }
  auto pos = decl.find(name + "(");
  while (pos != std::string::npos && pos > 0 && (std::isalnum(static_cast<unsigned char>(decl[pos - 1])) || decl[pos - 1] == '_'))
    pos = decl.find(name + "(", pos + 1);
  if (pos == std::string::npos) {
    std::regex k_spaced("\\b" + name + "\\s+\\(");
    if (!std::regex_search(decl, m, k_spaced)) return std::nullopt;
    pos = static_cast<std::size_t>(m.position(0));
  }
  pr.ret = std::string(util::trim(decl.substr(0, pos)));
  for (const char* w : {"extern ", "static ", "inline ", "__always_inline ", "__must_check "})
    for (auto p = pr.ret.find(w); p != std::string::npos; p = pr.ret.find(w)) pr.ret.erase(p, std::string(w).size());
  auto open = decl.find('(', pos);
  int depth = 0;
  std::size_t close = open;
  for (std::size_t i = open; i < decl.size(); ++i) {
    if (decl[i] == '(') ++depth;
    if (decl[i] == ')' && --depth == 0) {
      close = i;
      break;
    }
  }
  std::string params = decl.substr(open + 1, close - open - 1);
  if (util::trim(params) == "void") return pr;
  for (const auto& p : split_top_level(params)) {
    if (p == "...") pr.variadic = true;
    else pr.params.push_back(parse_param(p));
  }
  return pr;
}

std::optional<Prototype> prototype_at(const fs::path& file, int line, const std::string& name) {
  auto text = util::read_file(file);
  if (!text) return std::nullopt;
  auto lines = util::split_lines(*text);
  if (line < 1 || static_cast<std::size_t>(line) > lines.size()) return std::nullopt;
  // The declaration may start a line or two above the note (return type on its own line).
  std::size_t first = static_cast<std::size_t>(line) - 1;
  if (first > 0 && !util::contains(lines[first], name + "(") && !util::contains(lines[first], "define")) --first;
  std::string decl;
  for (std::size_t i = first; i < lines.size() && i < first + 12; ++i) {
    std::string l(lines[i]);
    if (!l.empty() && l.back() == '\\') l.pop_back();
    decl += l + " ";
    if (l.find(';') != std::string::npos || l.find('{') != std::string::npos ||
        (util::contains(lines[first], "#define") && lines[i].back() != '\\'))
      break;
  }
  auto pr = parse_prototype(decl, name);
  if (pr) pr->header = file.string();
  return pr;
}

TargetIndex::TargetIndex(fs::path src, fs::path build_dir) : m_src(std::move(src)), m_build(std::move(build_dir)) {}

std::optional<Prototype> TargetIndex::prototype(const std::string& name, const core::Diagnostic* d) {
  if (d)
    for (const auto& n : d->notes) {
      if (n.message.find("declared here") == std::string::npos && n.message.find("macro") == std::string::npos) continue;
      fs::path f = n.file;
      if (f.is_relative()) f = m_build / f;
      if (auto p = prototype_at(f, n.line, name)) return p;
    }
  if (m_src.empty()) return std::nullopt;
  auto lines =
      grep_kernel(m_src, {"-nE"}, "*.h", "(^|[ *])" + name + "\\(|define " + name + "\\(", kernel::k_header_dirs, name, 60s);
  for (const auto& l : lines) {
    auto c1 = l.find(':');
    auto c2 = l.find(':', c1 + 1);
    if (c1 == std::string_view::npos || c2 == std::string_view::npos) continue;
    std::string rest(l.substr(c2 + 1));
    auto code = util::trim(rest);
    if (code.starts_with("return") || rest.find(" = ") != std::string::npos) continue;
    if (code.starts_with("*") || code.starts_with("/*") || code.starts_with("//")) continue; // a comment
    int line = std::atoi(std::string(l.substr(c1 + 1, c2 - c1 - 1)).c_str());
    if (auto p = prototype_at(m_src / std::string(l.substr(0, c1)), line, name)) return p;
  }
  return std::nullopt;
}

const std::set<std::string>& TargetIndex::names() {
  if (m_names_loaded) return m_names;
  m_names_loaded = true;
  if (m_src.empty()) return m_names;
  // Keyed by the tree's path too: two trees may share a folder name (test fixtures "new").
  fs::path cache = kernel::cache_root() / "index" /
                   fmt::format("{}-{:016x}-names2.txt", m_src.filename().string(), std::hash<std::string>{}(m_src.string()));
  if (auto t = util::read_file(cache); t) {
    for (auto l : util::split_lines(*t))
      if (!l.empty()) m_names.emplace(l);
    if (!m_names.empty()) return m_names;
  }
  for (const char* dir : {"include/linux", "include/net", "include/media", "include/sound", "include/drm", "include/asm-generic",
                          "arch/x86/include/asm", "include/scsi", "include/video", "include/crypto", "include/rdma",
                          "include/target", "include/keys", "include/acpi", "include/pcmcia", "include/xen"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(m_src / dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->path().extension() != ".h") continue;
      auto text = util::read_file(it->path());
      if (!text) continue;
      auto toks = tokenize(*text);
      for (std::size_t i = 0; i < toks.size(); ++i) {
        if (toks[i].kind == TokKind::pp_line) {
          static const std::regex k_def(R"(^#\s*define\s+([A-Za-z_]\w*))");
          std::smatch m;
          if (std::regex_search(toks[i].text, m, k_def)) m_names.insert(m[1].str());
          continue;
        }
        if (toks[i].kind == TokKind::ident && i + 1 < toks.size() && toks[i + 1].text == "(" && i > 0 &&
            (toks[i - 1].kind == TokKind::ident || toks[i - 1].text == "*"))
          m_names.insert(toks[i].text);
      }
    }
  }
  std::string out;
  for (const auto& n : m_names) out += n + "\n";
  std::error_code ec;
  fs::create_directories(cache.parent_path(), ec);
  (void)util::write_file_atomic(cache, out);
  return m_names;
}

std::string TargetIndex::macro_body(const std::string& name) {
  if (m_src.empty()) return {};
  auto lines = grep_kernel(m_src, {"-nE"}, "*.h", "^#\\s*define\\s+" + name + "\\(", kernel::k_header_dirs, name, 60s);
  for (const auto& l : lines) {
    auto c1 = l.find(':');
    auto c2 = l.find(':', c1 + 1);
    if (c1 == std::string_view::npos || c2 == std::string_view::npos) continue;
    int line = std::atoi(std::string(l.substr(c1 + 1, c2 - c1 - 1)).c_str());
    auto text = util::read_file(m_src / std::string(l.substr(0, c1)));
    if (!text) continue;
    for (const auto& tk : tokenize(*text)) {
      if (tk.kind != TokKind::pp_line || tk.line != line) continue;
      std::string body = tk.text;
      auto close = body.find(')');
      if (close == std::string::npos) return {};
      body = body.substr(close + 1);
      for (auto p = body.find("\\\n"); p != std::string::npos; p = body.find("\\\n")) body.replace(p, 2, " ");
      return std::string(util::trim(body));
    }
  }
  return {};
}

fs::path TargetIndex::header_defining(const std::string& tag) {
  if (m_src.empty()) return {};
  auto files = grep_kernel(m_src, {"-lE"}, "*.h", "^struct " + tag + " \\{", kernel::k_header_dirs, tag, 60s);
  return files.empty() ? fs::path() : m_src / files.front();
}

bool TargetIndex::in_headers(const std::string& name) {
  if (m_src.empty()) return false;
  return !grep_kernel(m_src, {"-lw", "-m1"}, "*.h", name, kernel::k_header_dirs, name, 60s).empty();
}

std::vector<std::string> TargetIndex::struct_members(const std::string& tag) {
  std::vector<std::string> out;
  for (const auto& m : struct_member_types(tag)) out.push_back(m.name);
  return out;
}

std::vector<Param> TargetIndex::struct_member_types(const std::string& tag) {
  if (auto it = m_members.find(tag); it != m_members.end()) return it->second;
  std::vector<Param>& out = m_members[tag];
  if (m_src.empty()) return out;
  auto lines = grep_kernel(m_src, {"-lE"}, "*.h", "struct " + tag + " \\{", kernel::k_header_dirs, tag, 60s);
  for (const auto& l : lines) {
    auto text = util::read_file(m_src / l);
    if (!text) continue;
    auto toks = tokenize(*text);
    for (std::size_t i = 0; i + 2 < toks.size(); ++i) {
      if (toks[i].text != "struct" || toks[i + 1].text != tag || toks[i + 2].text != "{") continue;
      int braces = 0, parens = 0;
      std::size_t decl_start = i + 3; // first token of the current member declaration
      std::string base;               // "u32" of "u32 a, *b;"
      for (std::size_t k = i + 2; k < toks.size(); ++k) {
        const std::string& t = toks[k].text;
        if (t == "(") ++parens;
        if (t == ")") --parens;
        if (t == "{") ++braces;
        if (t == "}" && --braces == 0) break;
        if (parens == 0 && (t == ";" || t == "{" || t == "}")) {
          decl_start = k + 1;
          base.clear();
          continue;
        }
        if (toks[k].kind != TokKind::ident || k + 1 >= toks.size()) continue;
        const std::string& nx = toks[k + 1].text;
        // "(*name)": a function pointer member.
        if (k >= 2 && toks[k - 1].text == "*" && toks[k - 2].text == "(" && nx == ")" && parens == 1) {
          out.push_back({"", t});
          m_fn_members[tag].insert(t);
          if (k + 2 < toks.size() && toks[k + 2].text == "(") {
            std::size_t c = matching_close(toks, k + 2);
            if (c != std::string::npos)
              m_fn_params[tag][t] = param_types(text->substr(toks[k + 2].end, toks[c].begin - toks[k + 2].end));
          }
          continue;
        }
        if (parens != 0 || !(nx == ";" || nx == "[" || nx == ":" || nx == ",")) continue;
        // The type: tokens from the declaration start (or the base type after a comma) to the name.
        std::size_t from = decl_start;
        std::string stars;
        std::size_t j = k;
        while (j > decl_start && toks[j - 1].text == "*") {
          stars += "*";
          --j;
        }
        if (j > decl_start && toks[j - 1].text == ",") from = j; // "u32 a, b": b has the base type
        std::string type;
        if (from == j) {
          type = base;
        } else {
          for (std::size_t q = from; q < j; ++q) type += (type.empty() ? "" : " ") + toks[q].text;
          if (base.empty()) base = type;
        }
        if (nx == "[") stars += "*";
        if (!stars.empty()) type += " " + stars;
        out.push_back({type, t});
      }
      return out;
    }
  }
  return out;
}

std::set<std::string> TargetIndex::function_pointer_members(const std::string& tag) {
  if (!m_fn_members.count(tag)) (void)struct_member_types(tag);
  return m_fn_members[tag];
}

std::optional<std::vector<std::string>> TargetIndex::function_member_params(const std::string& tag, const std::string& name) {
  if (!m_fn_members.count(tag)) (void)struct_member_types(tag);
  auto it = m_fn_params.find(tag);
  if (it == m_fn_params.end()) return std::nullopt;
  auto p = it->second.find(name);
  if (p == it->second.end()) return std::nullopt;
  return p->second;
}

std::optional<std::vector<Param>> TargetIndex::function_typedef_params(const std::string& name) {
  static const std::regex k_name(R"(^[A-Za-z_]\w*$)");
  if (m_src.empty() || !std::regex_match(name, k_name)) return std::nullopt;
  auto files =
      grep_kernel(m_src, {"-lE"}, "*.h", "typedef[^;]*\\(\\s*\\*\\s*" + name + "\\s*\\)", kernel::k_header_dirs, name, 60s);
  for (const auto& f : files) {
    auto text = util::read_file(m_src / f);
    if (!text) continue;
    auto toks = tokenize(*text);
    for (std::size_t i = 0; i + 4 < toks.size(); ++i) {
      // typedef RET ( * NAME ) ( PARAMS ) ;
      if (toks[i].text != "*" || toks[i + 1].text != name || toks[i + 2].text != ")" || toks[i + 3].text != "(") continue;
      std::size_t close = matching_close(toks, i + 3);
      if (close == std::string::npos) continue;
      std::vector<Param> out;
      std::size_t start = i + 4;
      int depth = 0;
      for (std::size_t k = i + 4; k <= close; ++k) {
        const std::string& t = toks[k].text;
        if (k < close && (t == "(" || t == "[")) ++depth;
        if (k < close && (t == ")" || t == "]")) --depth;
        if (k == close || (depth == 0 && t == ",")) {
          if (k > start) {
            std::string p = text->substr(toks[start].begin, toks[k - 1].end - toks[start].begin);
            std::string type = param_type_only(p);
            std::string pname = toks[k - 1].kind == TokKind::ident && type != util::trim(p) ? toks[k - 1].text : "";
            out.push_back({type, pname});
          }
          start = k + 1;
        }
      }
      if (out.size() == 1 && out[0].type == "void") out.clear();
      return out;
    }
  }
  return std::nullopt;
}

std::string param_type_only(const std::string& param) {
  auto toks = tokenize(param);
  std::size_t n = toks.size();
  // A trailing identifier is the name unless it is all there is or follows struct/enum/union.
  if (n >= 2 && toks[n - 1].kind == TokKind::ident && toks[n - 2].text != "struct" && toks[n - 2].text != "enum" &&
      toks[n - 2].text != "union" && toks[n - 1].text != "int" && toks[n - 1].text != "long" && toks[n - 1].text != "char" &&
      toks[n - 1].text != "short")
    --n;
  std::vector<std::string> words;
  for (std::size_t i = 0; i < n; ++i) words.push_back(toks[i].text);
  return type_text(words);
}

std::vector<std::string> param_types(const std::string& list) {
  std::vector<std::string> out;
  if (util::trim(list).empty()) return out;
  for (const auto& p : split_top_level(list)) out.push_back(param_type_only(p));
  if (out.size() == 1 && out[0] == "void") out.clear();
  return out;
}

std::string type_text(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& t : tokens) {
    if (!out.empty() && (t != "*" || out.back() != '*')) out += " ";
    out += t;
  }
  return out;
}

std::vector<std::map<std::string, int>> TargetIndex::caller_args(const std::string& name, std::size_t arity, int* calls) {
  std::vector<std::map<std::string, int>> out(arity);
  if (calls) *calls = 0;
  if (m_src.empty()) return out;
  auto lines = grep_kernel(m_src, {"-lw"}, "*.c", name, kernel::k_user_dirs, name, 120s);
  int files = 0;
  for (const auto& l : lines) {
    if (++files > 60) break;
    auto text = util::read_file(m_src / l);
    if (!text) continue;
    auto toks = tokenize(*text);
    for (const auto& c : find_calls(toks, 0, toks.size() - 1)) {
      if (c.callee != name || c.args.size() != arity) continue;
      if (calls) ++*calls;
      for (std::size_t i = 0; i < arity; ++i) ++out[i][c.args[i]];
    }
  }
  return out;
}

TargetIndex::ResultTests TargetIndex::result_tests(const std::string& name) {
  ResultTests out;
  if (m_src.empty()) return out;
  int files = 0;
  for (const auto& l : grep_kernel(m_src, {"-lw"}, "*.c", name, kernel::k_user_dirs, name, 120s)) {
    if (++files > 60) break;
    auto text = util::read_file(m_src / l);
    if (!text) continue;
    for (const auto& c : result_checks(tokenize(*text), name)) ++(c.test == ResultTest::is_err ? out.is_err : out.null);
  }
  return out;
}

std::string join_c_tokens(const std::vector<std::string>& ts) {
  static const std::set<std::string> k_tight_before = {"(", ")", ",", "->", ".", "[", "]", ";", "++", "--"};
  static const std::set<std::string> k_prefix = {"&", "*", "-", "!", "~"};
  std::string out, prev;
  bool expect_operand = true, prev_prefix = false;
  for (const auto& t : ts) {
    bool tight =
        out.empty() || k_tight_before.count(t) || prev == "(" || prev == "[" || prev == "->" || prev == "." || prev_prefix;
    if (!tight) out += ' ';
    out += t;
    const bool ident_like = !t.empty() && (std::isalnum(static_cast<unsigned char>(t[0])) || t[0] == '_' || t[0] == '$' ||
                                           t[0] == '"' || t[0] == '\'');
    prev_prefix = expect_operand && k_prefix.count(t);
    expect_operand = !ident_like && t != ")" && t != "]" && t != "++" && t != "--";
    prev = t;
  }
  return out;
}

/// Type text with const dropped and no spaces ("const struct a *" -> "structa*").
TargetIndex::CallbackUsage TargetIndex::callback_usage(const std::string& member, const std::vector<std::string>& types) {
  const std::size_t arity = types.size();
  CallbackUsage out;
  out.param_names.resize(arity);
  if (m_src.empty() || member.empty()) return out;
  std::vector<std::string> want;
  for (const auto& t : types) {
    auto tt = tokenize(t);
    want.push_back(type_key(tt, 0, tt.size() - 1));
  }
  // Many structs share a member name (.probe): files that never mention the first parameter's
  // struct cannot implement this callback.
  std::string tag;
  if (auto tt = tokenize(types.empty() ? "" : types[0]); tt.size() >= 2 && tt[tt.size() - 2].kind == TokKind::ident)
    for (std::size_t i = 0; i + 1 < tt.size(); ++i)
      if (tt[i].text == "struct") tag = tt[i + 1].text;
  auto lines = grep_kernel(m_src, {"-Eo", "-m", "2"}, "*.c", "\\." + member + "\\s*=\\s*&?[A-Za-z_][A-Za-z0-9_]*",
                           kernel::k_user_dirs, member, 120s);
  // The files are read up to a bound: in an order spread over the whole tree (by a hash of the
  // path, the same on every machine), not the first folders' alone (path order reads forty
  // drivers/a* to drivers/g* implementations and no others).
  auto path_of = [](std::string_view l) { return l.substr(0, l.find(':')); };
  std::stable_sort(lines.begin(), lines.end(), [&](const std::string& a, const std::string& b) {
    auto ka = util::fnv1a_32(path_of(a)), kb = util::fnv1a_32(path_of(b));
    return ka != kb ? ka < kb : path_of(a) < path_of(b);
  });
  std::vector<std::map<std::string, int>> votes(arity);
  // A generic member name (.fn, .callback) is assigned in many unrelated structs: the bound is on
  // the files that hold an implementation of this type, with a looser one on the files read.
  std::set<std::string> seen_files, implementing;
  static const std::regex k_line(R"(^([^:]+):\.\w+\s*=\s*&?(\w+)$)");
  for (const auto& l : lines) {
    std::smatch m;
    std::string line(l);
    if (!std::regex_match(line, m, k_line)) continue;
    if (!seen_files.count(m[1].str()) && (implementing.size() >= 40 || seen_files.size() >= 400)) break;
    auto text = util::read_file(m_src / m[1].str());
    if (!text || (!tag.empty() && text->find(tag) == std::string::npos)) continue;
    seen_files.insert(m[1].str());
    auto toks = tokenize(*text);
    for (const auto& u : find_units(toks)) {
      if (u.kind != UnitKind::function || u.name != m[2].str()) continue;
      std::size_t open = u.first;
      while (open < u.body && !(toks[open].text == m[2].str() && toks[open + 1].text == "(")) ++open;
      if (open >= u.body) break;
      std::size_t close = matching_close(toks, open + 1);
      if (close == std::string::npos) break;
      std::vector<std::string> names, got;
      int depth = 0;
      std::string last;
      std::size_t param_start = open + 2, last_at = 0;
      for (std::size_t k = open + 2; k <= close; ++k) {
        const std::string& t = toks[k].text;
        if (depth == 0 && (t == "," || k == close)) {
          names.push_back(last);
          got.push_back(last_at > param_start ? type_key(toks, param_start, last_at - 1) : "");
          last.clear();
          param_start = k + 1;
          continue;
        }
        if (t == "(" || t == "[") ++depth;
        if (t == ")" || t == "]") --depth;
        if (depth == 0 && toks[k].kind == TokKind::ident) {
          last = t;
          last_at = k;
        }
      }
      if (names.size() != arity || got != want) break;
      for (std::size_t i = 0; i < arity; ++i) ++votes[i][names[i]];
      out.by_function[m[1].str() + "|" + m[2].str()] = names;
      implementing.insert(m[1].str());
      // The declarations opening the body: "type name = expr;" with expr over the parameters.
      std::size_t end = matching_close(toks, u.body);
      if (end != std::string::npos && end < toks.size())
        out.bodies[m[1].str() + "|" + m[2].str()] = text->substr(toks[u.body].begin, toks[end].end - toks[u.body].begin);
      for (std::size_t k = u.body + 1; k < end && k < toks.size();) {
        std::size_t eq = k, semi = k;
        int d = 0;
        for (semi = k; semi < end; ++semi) {
          const std::string& t = toks[semi].text;
          if (t == "(" || t == "[" || t == "{") ++d;
          if (t == ")" || t == "]" || t == "}") --d;
          if (d == 0 && t == "=" && eq == k) eq = semi;
          if (d == 0 && t == ";") break;
        }
        // A declaration has a type before its name: at least two tokens before '='.
        if (eq == k || eq < k + 2 || toks[eq - 1].kind != TokKind::ident || toks[k].kind != TokKind::ident ||
            toks[k].text == "return")
          break;
        std::vector<std::string> expr;
        bool uses_param = false;
        for (std::size_t q = eq + 1; q < semi; ++q) {
          std::string t = toks[q].text;
          for (std::size_t i = 0; i < arity; ++i)
            if (toks[q].kind == TokKind::ident && t == names[i] && toks[q - 1].text != "." && toks[q - 1].text != "->") {
              t = "$" + std::to_string(i);
              uses_param = true;
            }
          expr.push_back(t);
        }
        if (uses_param) ++out.locals[type_key(toks, k, eq - 2)][join_c_tokens(expr)];
        k = semi + 1;
      }
      break;
    }
  }
  for (std::size_t i = 0; i < arity; ++i) {
    int best = 0;
    for (const auto& [n, c] : votes[i])
      if (c > best) {
        best = c;
        out.param_names[i] = n;
      }
  }
  return out;
}

int TargetIndex::usage_count(const std::string& name) {
  if (m_src.empty()) return 0;
  auto lines = grep_kernel(m_src, {"-lw", "-m", "1"}, "*.c", name, kernel::k_driver_dirs, name, 60s);
  return static_cast<int>(lines.size());
}

const std::set<std::string>& TargetIndex::deprecated() {
  if (m_deprecated_loaded) return m_deprecated;
  m_deprecated_loaded = true;
  auto text = util::read_file(m_src / "Documentation/process/deprecated.rst");
  if (!text) return m_deprecated;
  auto lines = util::split_lines(*text);
  static const std::regex k_fn(R"(([A-Za-z_]\w*)\(\))");
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    // A reStructuredText section title is underlined with '-' (or '=') as long as the title.
    auto under = util::trim(lines[i + 1]);
    if (under.size() < 3 ||
        (under.find_first_not_of('-') != std::string_view::npos && under.find_first_not_of('=') != std::string_view::npos))
      continue;
    std::string title(lines[i]);
    for (auto it = std::sregex_iterator(title.begin(), title.end(), k_fn); it != std::sregex_iterator(); ++it)
      m_deprecated.insert((*it)[1].str());
  }
  return m_deprecated;
}

static std::size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// `b` is `a` with one word turned into its opposite (do_gettimeofday / do_settimeofday64,
/// foo_lock / foo_unlock): similar spelling, the opposite action. These are pairs of English
/// words, the same in every API, not facts about one kernel interface.
bool opposite_names(const std::string& a, const std::string& b) {
  static const std::pair<const char*, const char*> k_pairs[] = {{"get", "set"},
                                                                {"get", "put"},
                                                                {"enable", "disable"},
                                                                {"lock", "unlock"},
                                                                {"start", "stop"},
                                                                {"alloc", "free"},
                                                                {"inc", "dec"},
                                                                {"read", "write"},
                                                                {"add", "del"},
                                                                {"add", "remove"},
                                                                {"register", "unregister"},
                                                                {"on", "off"},
                                                                {"up", "down"},
                                                                {"open", "close"},
                                                                {"attach", "detach"},
                                                                {"map", "unmap"},
                                                                {"acquire", "release"},
                                                                {"push", "pop"},
                                                                {"begin", "end"},
                                                                {"min", "max"},
                                                                {"suspend", "resume"},
                                                                {"connect", "disconnect"},
                                                                {"init", "exit"},
                                                                {"create", "destroy"},
                                                                {"load", "unload"},
                                                                {"show", "store"},
                                                                {"enter", "leave"},
                                                                {"request", "release"},
                                                                {"mask", "unmask"},
                                                                {"pin", "unpin"}};
  for (const auto& [x, y] : k_pairs)
    for (const auto& [from, to] : {std::pair<std::string, std::string>{x, y}, std::pair<std::string, std::string>{y, x}})
      for (auto at = a.find(from); at != std::string::npos; at = a.find(from, at + 1)) {
        std::string turned = a.substr(0, at) + to + a.substr(at + from.size());
        if (turned == a) continue;
        if (b.find(turned) != std::string::npos || (turned.starts_with(b) && b.size() >= at + to.size())) return true;
      }
  // The word where a name's words start (getnstimeofday64 / do_settimeofday64): `a` starts a word
  // with one, `b` with its opposite, neither with the other, and what follows the two words ends
  // the same way (the rest of the name is kept).
  auto starts_word = [](const std::string& s, const std::string& w) {
    std::vector<std::size_t> at;
    for (auto p = s.find(w); p != std::string::npos; p = s.find(w, p + 1))
      if (p == 0 || s[p - 1] == '_') at.push_back(p);
    return at;
  };
  auto common_tail = [](const std::string& x, const std::string& y) {
    std::size_t n = 0;
    while (n < x.size() && n < y.size() && x[x.size() - 1 - n] == y[y.size() - 1 - n]) ++n;
    return n;
  };
  for (const auto& [x, y] : k_pairs)
    for (const auto& [from, to] : {std::pair<std::string, std::string>{x, y}, std::pair<std::string, std::string>{y, x}}) {
      auto in_a = starts_word(a, from), in_b = starts_word(b, to);
      if (in_a.empty() || in_b.empty() || !starts_word(a, to).empty() || !starts_word(b, from).empty()) continue;
      std::string rest_a = a.substr(in_a[0] + from.size()), rest_b = b.substr(in_b[0] + to.size());
      if ((rest_a.empty() && rest_b.empty()) || common_tail(rest_a, rest_b) >= 4) return true;
    }
  return false;
}

double name_similarity(const std::string& a, const std::string& b) {
  if (a == b) return 1.0;
  if (opposite_names(a, b)) return 0.0;
  auto words = [](const std::string& s) {
    std::vector<std::string> w;
    std::string cur;
    for (char c : s) {
      if (c == '_') {
        if (!cur.empty()) w.push_back(cur), cur.clear();
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) w.push_back(cur);
    return w;
  };
  auto wa = words(a), wb = words(b);
  int common = 0;
  std::vector<bool> used(wb.size(), false);
  for (const auto& x : wa)
    for (std::size_t j = 0; j < wb.size(); ++j)
      if (!used[j] && (x == wb[j] || (x.size() >= 3 && wb[j].starts_with(x)) || (wb[j].size() >= 3 && x.starts_with(wb[j])))) {
        used[j] = true;
        ++common;
        break;
      }
  double jac = (wa.empty() && wb.empty()) ? 0 : static_cast<double>(common) / static_cast<double>(std::max(wa.size(), wb.size()));
  double lev = 1.0 - static_cast<double>(levenshtein(a, b)) / static_cast<double>(std::max(a.size(), b.size()));
  return std::max(jac, lev);
}

} // namespace autodriver::propose

namespace autodriver::propose {

const std::map<std::string, TargetIndex::PortingNote>& TargetIndex::porting_notes() {
  if (m_notes_loaded) return m_notes;
  m_notes_loaded = true;
  const std::string rel = "Documentation/filesystems/porting.rst";
  auto text = util::read_file(m_src / rel);
  if (!text) return m_notes;
  auto lines = util::split_lines(*text);
  // Paragraphs (blank-line separated), each remembered with its first line.
  static const std::regex k_gone(R"((^|[^>\w])([A-Za-z_]\w*)(\(\))?\s+(?:is|are)\s+gone\b)");
  static const std::regex k_use(R"(^[^.]*?\b(?:use|switch to|replaced by)\s+([A-Za-z_]\w*)(\(\))?)");
  static const std::regex k_drop(R"(leave it NULL|just remove it)", std::regex::icase);
  std::size_t i = 0;
  while (i < lines.size()) {
    while (i < lines.size() && util::trim(lines[i]).empty()) ++i;
    std::size_t start = i;
    std::string para;
    for (; i < lines.size() && !util::trim(lines[i]).empty(); ++i) {
      if (!para.empty()) para += ' ';
      para += util::trim(lines[i]);
    }
    if (para.empty()) continue;
    std::smatch m;
    if (!std::regex_search(para, m, k_gone)) continue;
    std::string name = m[2].str();
    std::string rest = m.suffix().str();
    PortingNote note;
    note.where = fmt::format("{}:{}", rel, start + 1);
    auto dot = para.find(". ", static_cast<std::size_t>(m.position(0)));
    note.sentence = para.substr(0, dot == std::string::npos ? para.size() : dot + 1);
    std::smatch u;
    // The replacement must be named in the same sentence as the removal.
    std::string sentence_rest = rest.substr(0, rest.find(". "));
    if (std::regex_search(sentence_rest, u, k_use) && u[1].str() != name) note.use = u[1].str();
    note.drop = std::regex_search(sentence_rest, k_drop);
    if (note.use.empty() && !note.drop) continue;
    m_notes.emplace(name, std::move(note));
  }
  return m_notes;
}

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The functions a text names as `f()` (reStructuredText's way), in order, each once.
std::vector<std::string> called_names(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t at = text.find("()"); at != std::string_view::npos; at = text.find("()", at + 2)) {
    std::size_t b = at;
    while (b > 0 && word_char(text[b - 1])) --b;
    if (b == at || std::isdigit(static_cast<unsigned char>(text[b]))) continue;
    std::string n(text.substr(b, at - b));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

/// Whether the text speaks of replacing something: the words documentation uses for it.
std::size_t replacement_cue(std::string_view text) {
  static const char* const k_cues[] = {"replacement", "replaced by", "replace it",   "instead", "superseded",
                                       "switch to",   "convert to",  "converted to", "use "};
  std::string low;
  for (char c : text) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t first = std::string::npos;
  for (const char* cue : k_cues)
    for (auto at = low.find(cue); at != std::string::npos; at = low.find(cue, at + 1))
      if (at == 0 || !word_char(low[at - 1])) {
        first = std::min(first, at);
        break;
      }
  return first;
}

/// The sentence of `text` around position `at`.
std::string sentence_at(const std::string& text, std::size_t at) {
  std::size_t b = text.rfind(". ", at);
  b = b == std::string::npos ? 0 : b + 2;
  std::size_t e = text.find(". ", at);
  return text.substr(b, e == std::string::npos ? std::string::npos : e + 1 - b);
}

} // namespace

std::optional<TargetIndex::DocReplacement> TargetIndex::documented_replacement(const std::string& name) {
  if (m_src.empty() || name.size() < 3) return std::nullopt;
  kernel::SourceGrep q;
  q.options = {"-nw"};
  q.includes = {"*.rst", "*.txt"};
  q.pattern = name;
  q.dirs = {"Documentation"};
  q.timeout = std::chrono::seconds(60);
  q.output_cap = 256 * 1024;
  auto hits = kernel::grep_source(m_src, q);
  std::map<std::string, std::vector<std::string>> files;
  std::size_t tried = 0;
  for (const auto& hit : hits) {
    if (++tried > 40) break;
    auto c1 = hit.find(':');
    auto c2 = c1 == std::string::npos ? std::string::npos : hit.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string rel = hit.substr(0, c1);
    std::size_t line = 0;
    try {
      line = std::stoul(hit.substr(c1 + 1, c2 - c1 - 1));
    } catch (const std::exception&) {
      continue;
    }
    auto it = files.find(rel);
    if (it == files.end()) {
      std::vector<std::string> lines;
      if (auto t = util::read_file(m_src / rel))
        for (auto l : util::split_lines(*t)) lines.emplace_back(l);
      it = files.emplace(rel, std::move(lines)).first;
    }
    const auto& lines = it->second;
    if (line == 0 || line > lines.size()) continue;
    auto blank = [&](std::size_t i) { return util::trim(lines[i]).empty(); };
    std::size_t first = line - 1;
    while (first > 0 && !blank(first - 1)) --first;
    std::size_t end = line - 1;
    while (end < lines.size() && !blank(end)) ++end;
    // A directive listing older interfaces: the names it lists are the old ones, its indented
    // body says what replaces them.
    std::string head, text;
    const bool directive = util::trim(lines[first]).starts_with(".. c:");
    for (std::size_t i = first; i < end; ++i) head += std::string(util::trim(lines[i])) + ' ';
    if (directive) {
      std::size_t i = end;
      while (i < lines.size() && (blank(i) || std::isspace(static_cast<unsigned char>(lines[i][0])))) {
        if (!blank(i)) text += std::string(util::trim(lines[i])) + ' ';
        else if (!text.empty() && i + 1 < lines.size() && !blank(i + 1) &&
                 !std::isspace(static_cast<unsigned char>(lines[i + 1][0])))
          break;
        ++i;
      }
    } else {
      text = head;
    }
    auto cue = replacement_cue(text);
    if (cue == std::string::npos) continue;
    auto old_names = directive ? called_names(head) : std::vector<std::string>{};
    // In a directive's head the old interfaces are prototypes (`void f( struct x * )`), not `f()`:
    // every identifier followed by '(' there is one of them.
    if (directive)
      for (std::size_t k = head.find('('); k != std::string::npos; k = head.find('(', k + 1)) {
        std::size_t e = k;
        while (e > 0 && head[e - 1] == ' ') --e;
        std::size_t b = e;
        while (b > 0 && word_char(head[b - 1])) --b;
        if (b < e) old_names.push_back(head.substr(b, e - b));
      }
    DocReplacement r;
    for (auto& n : called_names(text))
      if (n != name && std::find(old_names.begin(), old_names.end(), n) == old_names.end()) r.names.push_back(std::move(n));
    if (r.names.empty()) continue;
    r.where = fmt::format("{}:{}", rel, line);
    r.sentence = sentence_at(text, cue);
    return r;
  }
  return std::nullopt;
}

/// A plain integer type ("int", "size_t", "unsigned long", "u8"): no pointer, struct or array.
bool integer_type(const std::string& type) {
  static const std::regex k_int(
      R"(^\s*(const\s+)?((unsigned|signed)\s+)?(int|long|long\s+long|short|char|size_t|ssize_t|loff_t|[us](8|16|32|64)|__[us](8|16|32|64)|unsigned|signed)(\s+int)?\s*$)");
  return std::regex_match(type, k_int);
}

std::vector<std::string> name_words(const std::string& n) {
  std::vector<std::string> w;
  std::size_t b = 0;
  while (b <= n.size()) {
    auto e = n.find('_', b);
    if (e == std::string::npos) e = n.size();
    if (e > b) w.push_back(n.substr(b, e - b));
    b = e + 1;
  }
  return w;
}

} // namespace autodriver::propose
