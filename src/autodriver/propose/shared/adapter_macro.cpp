#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/csrc/tokens.hpp"
#include "autodriver/propose/shared/target_decls.hpp"

#include <map>
#include <regex>
#include <set>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

namespace {

struct OneParamMacro {
  std::string param;
  std::string body; ///< continuation backslashes removed
};

std::map<std::string, OneParamMacro> one_param_macros(const std::string& text) {
  static const std::regex k_def(R"(^#\s*define\s+([A-Za-z_]\w*)\(\s*([A-Za-z_]\w*)\s*\)([\s\S]*)$)");
  std::map<std::string, OneParamMacro> out;
  for (const auto& t : tokenize(text)) {
    if (t.kind != TokKind::pp_line) continue;
    std::smatch m;
    if (!std::regex_match(t.text, m, k_def)) continue;
    std::string body = m[3].str();
    for (std::size_t p = body.find("\\\n"); p != std::string::npos; p = body.find("\\\n")) body.replace(p, 2, " ");
    out[m[1].str()] = {m[2].str(), body};
  }
  return out;
}

} // namespace

std::vector<AdapterMacro> adapter_macros(const std::string& header_text) {
  std::vector<AdapterMacro> out;
  auto macros = one_param_macros(header_text);
  for (const auto& [name, mac] : macros) {
    auto toks = tokenize(mac.body);
    // One level of the header's own one-parameter macros called with the parameter.
    std::vector<Token> expanded;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (i + 3 < toks.size() && toks[i].kind == TokKind::ident && toks[i + 1].text == "(" && toks[i + 2].text == mac.param &&
          toks[i + 3].text == ")" && macros.count(toks[i].text) && toks[i].text != name) {
        const auto& inner = macros.at(toks[i].text);
        for (auto t : tokenize(inner.body)) {
          if (t.text == inner.param) t.text = mac.param;
          expanded.push_back(std::move(t));
        }
        i += 3;
        continue;
      }
      expanded.push_back(toks[i]);
    }
    // `param ## suffix` pastes: declared (followed by '[' or '=') or used.
    std::set<std::string> used;
    std::map<std::string, std::string> declared; // suffix -> its value type
    for (std::size_t i = 0; i + 2 < expanded.size(); ++i) {
      if (expanded[i].text != mac.param || expanded[i + 1].text != "##" || expanded[i + 2].kind != TokKind::ident) continue;
      const std::string suffix = expanded[i + 2].text;
      const std::string next = i + 3 < expanded.size() ? expanded[i + 3].text : "";
      bool decl =
          (next == "[" || next == "=") && i > 0 && (expanded[i - 1].kind == TokKind::ident || expanded[i - 1].text == "*");
      if (!decl) {
        used.insert(suffix);
        continue;
      }
      // The type: the tokens back to the statement's start, storage class dropped.
      std::size_t s = i;
      while (s > 0 && expanded[s - 1].text != ";" && expanded[s - 1].text != "}" && expanded[s - 1].text != "{") --s;
      std::vector<std::string> words;
      for (std::size_t k = s; k < i; ++k)
        if (expanded[k].text != "static") words.push_back(expanded[k].text);
      if (next == "[") words.push_back("*"); // the array, as a value
      std::string type = type_text(words);
      declared[suffix] = type;
    }
    std::vector<std::string> ins, outs;
    for (const auto& u : used)
      if (!declared.count(u)) ins.push_back(u);
    for (const auto& [d, t] : declared)
      if (!used.count(d)) outs.push_back(d);
    if (ins.size() != 1 || outs.size() != 1) continue;
    out.push_back({name, ins[0], outs[0], declared[outs[0]]});
  }
  return out;
}

} // namespace autodriver::propose
