#include "autodriver/llm/prompt.hpp"

#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

namespace autodriver::llm {

namespace {

/// `{{key}}` in `text` replaced by values, in one pass: a value holding "{{x}}" or a "### user"
/// line (driver text) is inserted as it is, never expanded or read as a section.
util::Expected<std::string> fill(const std::string& file, const std::string& text,
                                 const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    auto open = text.find("{{", i);
    if (open == std::string::npos) {
      out += text.substr(i);
      break;
    }
    auto close = text.find("}}", open + 2);
    if (close == std::string::npos) return util::unexpected(util::ErrorKind::parse, fmt::format("{}: an unclosed {{{{", file));
    const std::string key = text.substr(open + 2, close - open - 2);
    auto v = values.find(key);
    if (v == values.end())
      return util::unexpected(util::ErrorKind::config, fmt::format("{}: nothing fills {{{{{}}}}}", file, key));
    out += text.substr(i, open - i) + v->second;
    i = close + 2;
  }
  return out;
}

} // namespace

util::Expected<std::vector<Message>> render_prompt(const std::string& name, const std::map<std::string, std::string>& values) {
  const std::string file = "prompts/" + name + ".txt";
  std::string text;
  for (const auto& [f, t] : embedded_prompt_files())
    if (f == file) text = std::string(t);
  if (text.empty()) return util::unexpected(util::ErrorKind::not_found, fmt::format("no prompt template {}", file));
  // The template's sections first, then each one filled.
  std::vector<Message> out;
  for (auto line : util::split_lines(text)) {
    if (line == "### system" || line == "### user") out.push_back(Message{std::string(line.substr(4)), "", {}, ""});
    else if (!out.empty()) out.back().content += std::string(line) + "\n";
  }
  if (out.empty()) return util::unexpected(util::ErrorKind::parse, fmt::format("{}: no ### system or ### user section", file));
  for (auto& m : out) {
    auto f = fill(file, m.content, values);
    if (!f) return util::unexpected(f.error());
    m.content = std::string(util::trim(*f));
  }
  return out;
}

} // namespace autodriver::llm
