#include "autodriver/llm/client.hpp"

#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

// The protocol's JSON: requests built, answers (whole or streamed) read. No network here, so the
// fuzz target `llm` reads answers with exactly this code.

namespace autodriver::llm {

namespace {

using namespace std::chrono_literals;

nlohmann::json message_json(const Message& m) {
  nlohmann::json j = {{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    j["tool_calls"] = nlohmann::json::array();
    for (const auto& c : m.tool_calls)
      j["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  return j;
}

std::string text_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Usage usage_of(const nlohmann::json& j) {
  Usage u;
  auto it = j.find("usage");
  if (it == j.end() || !it->is_object()) return u;
  u.prompt_tokens = util::json_get(*it, "prompt_tokens", 0L);
  u.completion_tokens = util::json_get(*it, "completion_tokens", 0L);
  return u;
}

} // namespace

nlohmann::json request_body(const Endpoint& e, const std::vector<Message>& messages, const std::vector<Tool>& tools,
                            bool stream) {
  nlohmann::json j = {{"model", e.model}, {"temperature", e.temperature}, {"stream", stream}};
  j["messages"] = nlohmann::json::array();
  for (const auto& m : messages) j["messages"].push_back(message_json(m));
  if (!tools.empty()) {
    j["tools"] = nlohmann::json::array();
    for (const auto& t : tools)
      j["tools"].push_back(
          {{"type", "function"}, {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
  }
  if (stream) j["stream_options"] = {{"include_usage", true}};
  return j;
}

util::Expected<Reply> parse_reply(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return util::unexpected(util::ErrorKind::parse, "the answer is not JSON");
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() || !choices->front().is_object())
    return util::unexpected(util::ErrorKind::parse, "the answer has no choices");
  const auto& choice = choices->front();
  Reply r;
  r.finish_reason = text_of(choice, "finish_reason");
  auto msg = choice.find("message");
  if (msg == choice.end() || !msg->is_object())
    return util::unexpected(util::ErrorKind::parse, "the answer's choice has no message");
  r.message.role = text_of(*msg, "role");
  if (r.message.role.empty()) r.message.role = "assistant";
  r.message.content = text_of(*msg, "content");
  if (auto calls = msg->find("tool_calls"); calls != msg->end() && calls->is_array())
    for (const auto& c : *calls) {
      if (!c.is_object()) continue;
      auto fn = c.find("function");
      if (fn == c.end() || !fn->is_object()) continue;
      r.message.tool_calls.push_back({text_of(c, "id"), text_of(*fn, "name"), text_of(*fn, "arguments")});
    }
  r.usage = usage_of(j);
  return r;
}

util::Expected<Reply> parse_stream(const std::string& events) {
  Reply r;
  r.message.role = "assistant";
  std::map<long, ToolCall> calls; // by the delta's index
  bool done = false, any = false;
  for (auto line : util::split_lines(events)) {
    line = util::trim(line);
    if (!line.starts_with("data:")) continue;
    auto data = util::trim(line.substr(5));
    if (data == "[DONE]") {
      done = true;
      break;
    }
    auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return util::unexpected(util::ErrorKind::parse, "a streamed chunk is not JSON");
    any = true;
    if (auto u = usage_of(j); u.total() > 0) r.usage = u;
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty() || !choices->front().is_object()) continue;
    const auto& choice = choices->front();
    if (auto f = text_of(choice, "finish_reason"); !f.empty()) r.finish_reason = f;
    auto delta = choice.find("delta");
    if (delta == choice.end() || !delta->is_object()) continue;
    r.message.content += text_of(*delta, "content");
    if (auto tc = delta->find("tool_calls"); tc != delta->end() && tc->is_array())
      for (const auto& c : *tc) {
        if (!c.is_object()) continue;
        ToolCall& call = calls[util::json_get(c, "index", 0L)];
        if (auto id = text_of(c, "id"); !id.empty()) call.id = id;
        if (auto fn = c.find("function"); fn != c.end() && fn->is_object()) {
          call.name += text_of(*fn, "name");
          call.arguments += text_of(*fn, "arguments");
        }
      }
  }
  if (!any) return util::unexpected(util::ErrorKind::parse, "the stream has no data");
  if (!done && r.finish_reason.empty()) return util::unexpected(util::ErrorKind::parse, "the stream ended before [DONE]");
  for (auto& [i, c] : calls) r.message.tool_calls.push_back(std::move(c));
  return r;
}

std::chrono::milliseconds retry_delay(const Endpoint& e, int attempt, const std::optional<std::string>& retry_after) {
  constexpr std::chrono::milliseconds cap = 60s;
  if (retry_after) {
    char* end = nullptr;
    const long s = std::strtol(retry_after->c_str(), &end, 10);
    if (end != retry_after->c_str() && s >= 0) return std::min<std::chrono::milliseconds>(std::chrono::seconds(s), cap);
  }
  auto d = e.backoff;
  for (int i = 1; i < attempt && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

} // namespace autodriver::llm
