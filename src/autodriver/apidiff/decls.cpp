#include "autodriver/apidiff/decls.hpp"

#include <clang-c/Index.h>
#include <fmt/format.h>

#include <cctype>
#include <memory>
#include <system_error>

namespace fs = std::filesystem;

namespace autodriver::apidiff {

std::string_view to_string(DeclKind kind) {
  switch (kind) {
  case DeclKind::function: return "function";
  case DeclKind::macro_function: return "macro-function";
  case DeclKind::macro_object: return "macro";
  case DeclKind::record: return "record";
  case DeclKind::enum_constant: return "enum-constant";
  case DeclKind::typedef_name: return "typedef";
  case DeclKind::variable: return "variable";
  }
  return "unknown";
}

std::string Decl::signature() const {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  };
  std::string args = join(params);
  if (variadic) args += params.empty() ? "..." : ", ...";
  switch (kind) {
  case DeclKind::function: return fmt::format("{} {}({})", result, name, args.empty() ? "void" : args);
  case DeclKind::macro_function: return fmt::format("#define {}({})", name, args);
  case DeclKind::macro_object: return fmt::format("#define {} {}", name, type);
  case DeclKind::record: return fmt::format("{} {{ {} members }}", name, members.size());
  case DeclKind::enum_constant: return fmt::format("{} = {}", name, type);
  case DeclKind::typedef_name: return fmt::format("typedef {} {}", type, name);
  case DeclKind::variable: return fmt::format("{} {}", type, name);
  }
  return name;
}

const Member* Decl::member(std::string_view member_name) const {
  for (const auto& m : members)
    if (m.name == member_name) return &m;
  return nullptr;
}

const Decl* DeclSet::find(const std::string& identifier) const {
  for (const auto& key : {identifier, "struct " + identifier, "union " + identifier})
    if (auto it = decls.find(key); it != decls.end()) return &it->second;
  return nullptr;
}

bool DeclSet::reaches(const std::string& from_header, const std::string& to_header) const {
  std::set<std::string> seen{from_header};
  std::vector<std::string> todo{from_header};
  while (!todo.empty()) {
    auto h = std::move(todo.back());
    todo.pop_back();
    if (h == to_header) return true;
    if (auto it = includes.find(h); it != includes.end())
      for (const auto& next : it->second)
        if (seen.insert(next).second) todo.push_back(next);
  }
  return false;
}

std::string header_key(std::string_view path) {
  auto pos = path.rfind("/include/");
  std::string_view rest = pos == std::string_view::npos ? path.substr(path.rfind('/') + 1) : path.substr(pos + 9);
  if (rest.starts_with("generated/")) rest.remove_prefix(10);
  return std::string(rest);
}

std::string normalize_type(std::string type) {
  // "(unnamed struct at /usr/src/x.h:12:3)" / "(anonymous union at ...)": the path differs per tree.
  for (std::size_t pos = 0; (pos = type.find(" at ", pos)) != std::string::npos;) {
    auto open = type.rfind('(', pos);
    auto close = type.find(')', pos);
    if (open == std::string::npos || close == std::string::npos ||
        (type.compare(open, 8, "(unnamed") != 0 && type.compare(open, 10, "(anonymous") != 0)) {
      pos += 4;
      continue;
    }
    type.erase(pos, close - pos);
  }
  return type;
}

namespace {

std::string take(CXString s) {
  const char* c = clang_getCString(s);
  std::string out = c ? c : "";
  clang_disposeString(s);
  return out;
}

std::string type_text(CXType t) { return normalize_type(take(clang_getTypeSpelling(t))); }

struct Visit {
  CXTranslationUnit tu = nullptr;
  DeclSet* set = nullptr;
  std::string exclude_prefix;
  std::map<std::string, std::string> file_text; ///< headers read to look for #undef
};

/// libclang keeps no #undef in its preprocessing record: a macro that its own header #undefs after
/// defining it (asm/apicdef.h's temporary `#define u32 unsigned int`) is not visible to the driver.
bool undefined_later(Visit& v, CXCursor c, const std::string& name) {
  CXFile file = nullptr;
  unsigned line = 0, col = 0, off = 0;
  clang_getExpansionLocation(clang_getCursorLocation(c), &file, &line, &col, &off);
  if (!file) return false;
  std::string path = take(clang_getFileName(file));
  auto [it, fresh] = v.file_text.try_emplace(path);
  if (fresh) {
    std::size_t size = 0;
    const char* text = clang_getFileContents(v.tu, file, &size);
    if (text) it->second.assign(text, size);
  }
  const std::string& t = it->second;
  for (auto pos = t.find("undef", off); pos != std::string::npos; pos = t.find("undef", pos + 5)) {
    auto hash = t.rfind('#', pos);
    if (hash == std::string::npos || t.find_first_not_of(" \t", hash + 1) != pos) continue;
    auto n = t.find_first_not_of(" \t", pos + 5);
    if (n != std::string::npos && t.compare(n, name.size(), name) == 0 &&
        (n + name.size() == t.size() ||
         !(std::isalnum(static_cast<unsigned char>(t[n + name.size()])) || t[n + name.size()] == '_')))
      return true;
  }
  return false;
}

struct Where {
  bool skip = true;
  std::string header;
  unsigned line = 0;
};

Where locate(const Visit& v, CXCursor c) {
  CXSourceLocation loc = clang_getCursorLocation(c);
  if (clang_Location_isFromMainFile(loc)) return {};
  CXFile file = nullptr;
  unsigned line = 0, col = 0, off = 0;
  clang_getExpansionLocation(loc, &file, &line, &col, &off);
  if (!file) return {}; // command line / built-in
  std::string path = take(clang_getFileName(file));
  if (!v.exclude_prefix.empty() && path.starts_with(v.exclude_prefix)) return {};
  return {false, header_key(path), line};
}

bool is_macro(DeclKind k) { return k == DeclKind::macro_function || k == DeclKind::macro_object; }

void insert(DeclSet& set, Decl d) {
  auto [it, fresh] = set.decls.try_emplace(d.name, d);
  if (fresh) return;
  // A macro shadows a declaration of the same name; otherwise the first declaration stays.
  if (is_macro(d.kind) && !is_macro(it->second.kind)) it->second = std::move(d);
}

std::vector<std::string> tokens_of(CXTranslationUnit tu, CXSourceRange range) {
  CXToken* toks = nullptr;
  unsigned n = 0;
  clang_tokenize(tu, range, &toks, &n);
  std::vector<std::string> out;
  out.reserve(n);
  for (unsigned i = 0; i < n; ++i) out.push_back(take(clang_getTokenSpelling(tu, toks[i])));
  clang_disposeTokens(tu, toks, n);
  return out;
}

void read_macro(Visit& v, CXCursor c, Where w) {
  if (clang_Cursor_isMacroBuiltin(c)) return;
  Decl d;
  d.name = take(clang_getCursorSpelling(c));
  d.header = w.header;
  d.line = w.line;
  bool function_like = clang_Cursor_isMacroFunctionLike(c);
  d.kind = function_like ? DeclKind::macro_function : DeclKind::macro_object;
  bool used = v.set->used.count(d.name) > 0;
  if (used && undefined_later(v, c, d.name)) return;
  if (function_like || used) {
    auto toks = tokens_of(v.tu, clang_getCursorExtent(c));
    std::size_t i = 1;
    if (function_like && toks.size() > 1 && toks[1] == "(") {
      for (i = 2; i < toks.size() && toks[i] != ")"; ++i) {
        if (toks[i] == ",") continue;
        if (toks[i] == "...") d.variadic = true;
        else if (i + 1 < toks.size() && toks[i + 1] == "...") d.params.push_back(toks[i]), d.variadic = true, ++i;
        else d.params.push_back(toks[i]);
      }
      ++i;
    }
    if (used)
      for (; i < toks.size() && d.type.size() < 160; ++i) d.type += (d.type.empty() ? "" : " ") + toks[i];
  }
  insert(*v.set, std::move(d));
}

void read_members(CXCursor record, std::vector<Member>& out) {
  clang_visitChildren(
      record,
      [](CXCursor c, CXCursor, CXClientData data) {
        auto& members = *static_cast<std::vector<Member>*>(data);
        auto kind = clang_getCursorKind(c);
        if ((kind == CXCursor_StructDecl || kind == CXCursor_UnionDecl) && clang_Cursor_isAnonymous(c)) {
          read_members(c, members); // members of an anonymous struct/union are the outer struct's
        } else if (kind == CXCursor_FieldDecl) {
          Member m;
          m.name = take(clang_getCursorSpelling(c));
          if (m.name.empty()) return CXChildVisit_Continue;
          CXType t = clang_getCursorType(c);
          m.type = type_text(t);
          CXType canon = clang_getCanonicalType(t);
          if (canon.kind == CXType_Pointer) {
            auto pk = clang_getPointeeType(canon).kind;
            m.callback = pk == CXType_FunctionProto || pk == CXType_FunctionNoProto;
          }
          members.push_back(std::move(m));
        }
        return CXChildVisit_Continue;
      },
      &out);
}

void read_function(Visit& v, CXCursor c, Where w) {
  Decl d;
  d.name = take(clang_getCursorSpelling(c));
  d.kind = DeclKind::function;
  d.header = w.header;
  d.line = w.line;
  CXType t = clang_getCursorType(c);
  d.result = type_text(clang_getResultType(t));
  int n = clang_getNumArgTypes(t);
  for (int i = 0; i < n; ++i) d.params.push_back(type_text(clang_getArgType(t, static_cast<unsigned>(i))));
  d.variadic = clang_isFunctionTypeVariadic(t) != 0;
  insert(*v.set, std::move(d));
}

CXChildVisitResult visit_top(CXCursor c, CXCursor, CXClientData data) {
  auto& v = *static_cast<Visit*>(data);
  auto kind = clang_getCursorKind(c);
  switch (kind) {
  case CXCursor_MacroDefinition:
  case CXCursor_FunctionDecl:
  case CXCursor_StructDecl:
  case CXCursor_UnionDecl:
  case CXCursor_EnumDecl:
  case CXCursor_TypedefDecl:
  case CXCursor_VarDecl: break;
  case CXCursor_InclusionDirective: {
    CXFile included = clang_getIncludedFile(c);
    CXFile includer = nullptr;
    unsigned line = 0, col = 0, off = 0;
    clang_getExpansionLocation(clang_getCursorLocation(c), &includer, &line, &col, &off);
    if (included && includer)
      v.set->includes[header_key(take(clang_getFileName(includer)))].insert(header_key(take(clang_getFileName(included))));
    return CXChildVisit_Continue;
  }
  default: return CXChildVisit_Continue;
  }
  Where w = locate(v, c);
  if (w.skip) return CXChildVisit_Continue;
  if (kind == CXCursor_MacroDefinition) {
    read_macro(v, c, w);
  } else if (kind == CXCursor_FunctionDecl) {
    read_function(v, c, w);
  } else if (kind == CXCursor_StructDecl || kind == CXCursor_UnionDecl) {
    std::string name = take(clang_getCursorSpelling(c));
    if (!clang_isCursorDefinition(c) || clang_Cursor_isAnonymous(c) || name.empty()) return CXChildVisit_Continue;
    Decl d;
    d.name = (kind == CXCursor_StructDecl ? "struct " : "union ") + name;
    d.kind = DeclKind::record;
    d.header = w.header;
    d.line = w.line;
    read_members(c, d.members);
    v.set->decls.try_emplace(d.name, std::move(d));
  } else if (kind == CXCursor_EnumDecl) {
    clang_visitChildren(
        c,
        [](CXCursor e, CXCursor, CXClientData inner) {
          auto& vv = *static_cast<Visit*>(inner);
          if (clang_getCursorKind(e) != CXCursor_EnumConstantDecl) return CXChildVisit_Continue;
          Where ew = locate(vv, e);
          Decl d;
          d.name = take(clang_getCursorSpelling(e));
          d.kind = DeclKind::enum_constant;
          d.header = ew.header;
          d.line = ew.line;
          d.type = std::to_string(clang_getEnumConstantDeclValue(e));
          insert(*vv.set, std::move(d));
          return CXChildVisit_Continue;
        },
        &v);
  } else if (kind == CXCursor_TypedefDecl) {
    Decl d;
    d.name = take(clang_getCursorSpelling(c));
    d.kind = DeclKind::typedef_name;
    d.header = w.header;
    d.line = w.line;
    d.type = type_text(clang_getTypedefDeclUnderlyingType(c));
    insert(*v.set, std::move(d));
  } else if (kind == CXCursor_VarDecl) {
    Decl d;
    d.name = take(clang_getCursorSpelling(c));
    d.kind = DeclKind::variable;
    d.header = w.header;
    d.line = w.line;
    d.type = type_text(clang_getCursorType(c));
    insert(*v.set, std::move(d));
  }
  return CXChildVisit_Continue;
}

struct IndexDeleter {
  void operator()(void* p) const { clang_disposeIndex(p); }
};
struct TuDeleter {
  void operator()(CXTranslationUnitImpl* p) const { clang_disposeTranslationUnit(p); }
};

} // namespace

util::Expected<DeclSet> read_declarations(const fs::path& source, const std::vector<std::string>& clang_args,
                                          const ParseOptions& options) {
  std::error_code ec;
  auto size = fs::file_size(source, ec);
  if (ec) return util::unexpected(util::ErrorKind::io, fmt::format("{}: {}", source.string(), ec.message()));
  if (size > options.max_source_bytes)
    return util::unexpected(util::ErrorKind::config, fmt::format("{}: {} bytes is over the {} byte parse limit", source.string(),
                                                                 size, options.max_source_bytes));
  std::unique_ptr<void, IndexDeleter> index(clang_createIndex(0, 0));
  std::vector<const char*> argv;
  for (const auto& a : clang_args) argv.push_back(a.c_str());
  CXTranslationUnit raw = nullptr;
  unsigned flags =
      CXTranslationUnit_DetailedPreprocessingRecord | CXTranslationUnit_SkipFunctionBodies | CXTranslationUnit_KeepGoing;
  auto rc = clang_parseTranslationUnit2(index.get(), source.c_str(), argv.data(), static_cast<int>(argv.size()), nullptr, 0,
                                        flags, &raw);
  if (rc != CXError_Success || !raw)
    return util::unexpected(util::ErrorKind::parse,
                            fmt::format("libclang could not parse {} (error {})", source.string(), static_cast<int>(rc)));
  std::unique_ptr<CXTranslationUnitImpl, TuDeleter> tu(raw);

  DeclSet set;
  unsigned nd = clang_getNumDiagnostics(raw);
  for (unsigned i = 0; i < nd; ++i) {
    CXDiagnostic d = clang_getDiagnostic(raw, i);
    if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
      ++set.parse_errors;
      if (set.error_samples.size() < 5)
        set.error_samples.push_back(
            take(clang_formatDiagnostic(d, CXDiagnostic_DisplaySourceLocation | CXDiagnostic_DisplayColumn)));
    }
    clang_disposeDiagnostic(d);
  }

  // The driver's own identifiers, from its raw tokens (also inside #if branches and macro bodies).
  CXFile main_file = clang_getFile(raw, source.c_str());
  if (main_file) {
    CXSourceRange all = clang_getRange(clang_getLocationForOffset(raw, main_file, 0),
                                       clang_getLocationForOffset(raw, main_file, static_cast<unsigned>(size)));
    CXToken* toks = nullptr;
    unsigned n = 0;
    clang_tokenize(raw, all, &toks, &n);
    for (unsigned i = 0; i < n; ++i)
      if (clang_getTokenKind(toks[i]) == CXToken_Identifier) set.used.insert(take(clang_getTokenSpelling(raw, toks[i])));
    clang_disposeTokens(raw, toks, n);
  }

  Visit v{raw, &set, options.exclude_root.empty() ? std::string() : options.exclude_root.string() + "/"};
  clang_visitChildren(clang_getTranslationUnitCursor(raw), visit_top, &v);
  return set;
}

} // namespace autodriver::apidiff
