#include "autodriver/llm/client.hpp"

#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

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

struct Transfer {
  std::string body;
  std::optional<std::string> retry_after;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->body.append(data, size * n);
  return size * n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  std::string name(line.substr(0, std::min<std::size_t>(line.size(), 12)));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (line.size() > 12 && name == "retry-after:") t->retry_after = std::string(util::trim(line.substr(12)));
  return size * n;
}

int on_progress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return util::interrupted() ? 1 : 0; }

/// The server's own message in an error body (`{"error": {"message": ...}}`), capped, the key
/// taken out if the server echoed it.
std::string server_message(const std::string& body, const std::string& key) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  std::string msg;
  if (!j.is_discarded() && j.is_object()) {
    if (auto e = j.find("error"); e != j.end())
      msg = e->is_object() ? text_of(*e, "message") : e->is_string() ? e->get<std::string>() : "";
  }
  if (msg.empty()) msg = std::string(util::trim(body.substr(0, 200)));
  if (!key.empty())
    for (std::size_t at; (at = msg.find(key)) != std::string::npos;) msg.replace(at, key.size(), "[key]");
  if (msg.size() > 200) msg = msg.substr(0, 200) + "...";
  return msg;
}

struct Attempt {
  long status = 0; ///< HTTP status; 0: no answer
  CURLcode code = CURLE_OK;
  Transfer t;
};

Attempt post(const Endpoint& e, const std::string& body, bool stream, const std::string& key) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  Attempt a;
  CURL* c = curl_easy_init();
  if (!c) {
    a.code = CURLE_FAILED_INIT;
    return a;
  }
  std::string url = e.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/chat/completions";
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  if (stream) headers = curl_slist_append(headers, "Accept: text/event-stream");
  std::string auth = key.empty() ? "" : "Authorization: Bearer " + key;
  if (!auth.empty()) headers = curl_slist_append(headers, auth.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &a.t);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &a.t);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(e.timeout.count()));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(e.stall.count()));
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  a.code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  // The header list held the key; its copy in `auth` goes with this frame.
  std::fill(auth.begin(), auth.end(), '\0');
  return a;
}

bool retryable(const Attempt& a) {
  if (a.code == CURLE_ABORTED_BY_CALLBACK) return false; // the user interrupted
  if (a.code != CURLE_OK) return true;                   // connection refused, reset, stalled, timed out
  return a.status == 429 || a.status >= 500;
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

Client::Client(Endpoint e, Budget* budget) : m_endpoint(std::move(e)), m_budget(budget) {}

util::Expected<Reply> Client::chat(const std::vector<Message>& messages, const std::vector<Tool>& tools, bool stream) {
  if (m_budget && m_budget->exhausted())
    return util::unexpected(util::ErrorKind::config, fmt::format("the LLM token budget is spent ({} of {} tokens in {} call(s))",
                                                                 m_budget->used, m_budget->max_tokens, m_budget->calls));
  const char* k = m_endpoint.key_env.empty() ? nullptr : std::getenv(m_endpoint.key_env.c_str());
  const std::string key = k ? k : "";
  const std::string body = request_body(m_endpoint, messages, tools, stream).dump(-1, ' ', false, util::json_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  Attempt a;
  int attempts = 0;
  for (;;) {
    a = post(m_endpoint, body, stream, key);
    ++attempts;
    if (!retryable(a) || attempts > m_endpoint.retries) break;
    std::this_thread::sleep_for(
        retry_delay(m_endpoint, attempts, a.status == 429 || a.status == 503 ? a.t.retry_after : std::nullopt));
    if (util::interrupted()) break;
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  if (a.code == CURLE_ABORTED_BY_CALLBACK || util::interrupted())
    return util::unexpected(util::ErrorKind::interrupted, "interrupted while waiting for the model");
  if (a.code != CURLE_OK)
    return util::unexpected(a.code == CURLE_OPERATION_TIMEDOUT ? util::ErrorKind::timeout : util::ErrorKind::network,
                            fmt::format("{} after {} attempt(s): {}", m_endpoint.base_url, attempts, curl_easy_strerror(a.code)));
  if (a.status < 200 || a.status >= 300)
    return util::unexpected(util::ErrorKind::http, fmt::format("HTTP {} from {} after {} attempt(s): {}", a.status,
                                                               m_endpoint.base_url, attempts, server_message(a.t.body, key)));
  auto r = stream ? parse_stream(a.t.body) : parse_reply(a.t.body);
  if (!r) return r;
  r->elapsed = elapsed;
  r->attempts = attempts;
  if (m_budget) {
    m_budget->used += r->usage.total();
    ++m_budget->calls;
  }
  return r;
}

} // namespace autodriver::llm
