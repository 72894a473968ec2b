#pragma once
// A client for OpenAI-compatible chat completions (`POST {base}/chat/completions`), the protocol
// llama.cpp's server, vLLM, Ollama and hosted APIs speak (issue 19). Messages, tool definitions
// and tool calls in and out; non-streaming or streamed (server-sent events, deltas merged);
// retries with backoff on 429, 5xx and connection failures, honouring Retry-After; a token budget
// per run (tokens, and cost at the user's prices) that is enforced before each call. The API key is read from an environment variable at
// each request and goes only into the Authorization header: never into a message, a log line, an
// error, a verdict or the run store.

#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::llm {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments; ///< JSON text as the model wrote it (may be invalid: data)
};

struct Message {
  std::string role; ///< "system", "user", "assistant", "tool"
  std::string content;
  std::vector<ToolCall> tool_calls; ///< assistant messages
  std::string tool_call_id;         ///< tool messages: the call they answer
};

/// A function the model may call: its name, what it does, and its parameters' JSON schema.
struct Tool {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();
};

struct Usage {
  long prompt_tokens = 0;
  long completion_tokens = 0;
  long total() const { return prompt_tokens + completion_tokens; }
};

struct Reply {
  Message message;
  std::string finish_reason; ///< "stop", "tool_calls", "length", ...
  Usage usage;
  std::chrono::milliseconds elapsed{0}; ///< wall time over all attempts
  int attempts = 0;
};

struct Endpoint {
  std::string base_url;                       ///< "http://127.0.0.1:8080/v1"
  std::string model;                          ///< "qwen2.5-coder-32b"
  std::string key_env = "AUTODRIVER_LLM_KEY"; ///< the variable holding the key; unset: no Authorization
  std::chrono::seconds timeout{300};          ///< per request
  std::chrono::seconds stall{60};             ///< a connection that sends nothing for this long is dropped
  int retries = 4;                            ///< after the first attempt
  std::chrono::milliseconds backoff{1000};    ///< first wait; doubles per attempt, at most 60 s
  double temperature = 0.2;
};

/// What the user asked of the model (port/bench --llm ...): where, which, and what it may spend.
struct Options {
  std::string url;                            ///< the endpoint's base URL; empty: no model
  std::string model;                          ///< required with a URL
  std::string key_env = "AUTODRIVER_LLM_KEY"; ///< the variable holding the key
  long budget_tokens = 0;                     ///< tokens per run; 0: no limit
  double max_cost = 0;                        ///< cost per run at the prices below; 0: no limit
  double price_in = 0;                        ///< per million prompt tokens
  double price_out = 0;                       ///< per million completion tokens
  int attempts = 3;                           ///< answers built and reviewed per round (generator, refiners, reflection)
  bool stream = false;                        ///< ask for streamed answers (server-sent events)
  bool on() const { return !url.empty(); }
};

/// What a run may spend, in tokens and in money (the endpoint's prices per million prompt and
/// completion tokens, in the user's currency); 0: no limit. Shared by the calls of one run.
struct Budget {
  long max_tokens = 0;
  double max_cost = 0;
  double price_in = 0;  ///< per million prompt tokens
  double price_out = 0; ///< per million completion tokens
  /// The run's wall-time budget ends then (port --budget-s): no call starts after it, and a call's
  /// connect, stall and total timeouts and its retries' waits never reach past it. Unset: none.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  long used = 0;
  double cost = 0;
  int calls = 0;
  bool exhausted() const { return (max_tokens > 0 && used >= max_tokens) || (max_cost > 0 && cost >= max_cost); }
  /// What a call with this usage costs at the budget's prices.
  double cost_of(long prompt_tokens, long completion_tokens) const {
    return (static_cast<double>(prompt_tokens) * price_in + static_cast<double>(completion_tokens) * price_out) / 1e6;
  }
};

/// The request's JSON body (model, messages, tools, stream).
nlohmann::json request_body(const Endpoint& e, const std::vector<Message>& messages, const std::vector<Tool>& tools, bool stream);

/// A non-streamed answer's body; a parse error for anything that is not one (truncated JSON, no choices).
util::Expected<Reply> parse_reply(const std::string& body);

/// A streamed answer (server-sent events, `data: {...}` lines up to `data: [DONE]`): content and
/// tool-call deltas merged in order; usage from the chunk that carries it.
util::Expected<Reply> parse_stream(const std::string& events);

/// How long to wait before retry `attempt` (1-based): Retry-After's seconds when the server gave
/// them (at most 60 s), else backoff * 2^(attempt-1) (at most 60 s).
std::chrono::milliseconds retry_delay(const Endpoint& e, int attempt, const std::optional<std::string>& retry_after);

class Client {
public:
  /// `budget` may be null (no limit); it must outlive the client.
  Client(Endpoint e, Budget* budget);

  /// One chat completion. Errors: `config` for a budget already spent; `http` for an answer the
  /// server refused (401, 404, 400: not retried; 429 and 5xx after the retries), naming the status
  /// and the server's own message; `network` / `timeout` for connections that failed or stalled
  /// after the retries; `parse` for an answer that is not the protocol's.
  util::Expected<Reply> chat(const std::vector<Message>& messages, const std::vector<Tool>& tools = {}, bool stream = false);

  const Endpoint& endpoint() const { return m_endpoint; }

private:
  Endpoint m_endpoint;
  Budget* m_budget;
};

} // namespace autodriver::llm
