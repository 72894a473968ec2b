#pragma once
// Prompt templates are versioned files (prompts/NAME.vN.txt), compiled into the binary, never
// literals in code. A template has `### system` and `### user` sections; `{{key}}` placeholders
// are filled by the caller, and a placeholder the caller does not fill is an error.

#include "autodriver/llm/client.hpp"
#include "autodriver/util/expected.hpp"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autodriver::llm {

/// The shipped templates: {"prompts/port-generator.v1.txt", text}, in name order.
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_prompt_files();

/// The messages of template `name` ("port-generator.v1") with its placeholders filled.
util::Expected<std::vector<Message>> render_prompt(const std::string& name, const std::map<std::string, std::string>& values);

} // namespace autodriver::llm
