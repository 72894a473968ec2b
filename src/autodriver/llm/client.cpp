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
      msg = e->is_object() ? util::json_get(*e, "message", std::string()) : e->is_string() ? e->get<std::string>() : "";
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
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, std::min<long>(30L, static_cast<long>(e.timeout.count())));
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

Client::Client(Endpoint e, Budget* budget) : m_endpoint(std::move(e)), m_budget(budget) {}

util::Expected<Reply> Client::chat(const std::vector<Message>& messages, const std::vector<Tool>& tools, bool stream) {
  if (m_budget && m_budget->exhausted()) {
    if (m_budget->max_tokens > 0 && m_budget->used >= m_budget->max_tokens)
      return util::unexpected(util::ErrorKind::config,
                              fmt::format("the LLM token budget is spent ({} of {} tokens in {} call(s))", m_budget->used,
                                          m_budget->max_tokens, m_budget->calls));
    return util::unexpected(util::ErrorKind::config, fmt::format("the LLM cost budget is spent ({:.4f} of {:.4f} in {} call(s))",
                                                                 m_budget->cost, m_budget->max_cost, m_budget->calls));
  }
  const char* k = m_endpoint.key_env.empty() ? nullptr : std::getenv(m_endpoint.key_env.c_str());
  const std::string key = k ? k : "";
  const std::string body = request_body(m_endpoint, messages, tools, stream).dump(-1, ' ', false, util::json_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  // What is left of the run's wall-time budget (none: the endpoint's own limits).
  auto left = [&]() -> std::optional<std::chrono::seconds> {
    if (!m_budget || !m_budget->deadline) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::seconds>(*m_budget->deadline - std::chrono::steady_clock::now());
  };
  auto spent = [&](int attempts) {
    return util::unexpected(util::ErrorKind::timeout, fmt::format("the run's wall-time budget is spent ({} attempt(s) to {})",
                                                                  attempts, m_endpoint.base_url));
  };
  if (auto l = left(); l && l->count() < 1) return spent(0);
  Attempt a;
  int attempts = 0;
  for (;;) {
    Endpoint e = m_endpoint;
    if (auto l = left()) {
      e.timeout = std::max(std::chrono::seconds(1), std::min(e.timeout, *l));
      e.stall = std::max(std::chrono::seconds(1), std::min(e.stall, *l));
    }
    a = post(e, body, stream, key);
    ++attempts;
    if (!retryable(a) || attempts > m_endpoint.retries) break;
    const auto wait = retry_delay(m_endpoint, attempts, a.status == 429 || a.status == 503 ? a.t.retry_after : std::nullopt);
    if (auto l = left(); l && *l <= std::chrono::duration_cast<std::chrono::seconds>(wait) + std::chrono::seconds(1))
      return spent(attempts);
    std::this_thread::sleep_for(wait);
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
    m_budget->cost += m_budget->cost_of(r->usage.prompt_tokens, r->usage.completion_tokens);
    ++m_budget->calls;
  }
  return r;
}

} // namespace autodriver::llm
