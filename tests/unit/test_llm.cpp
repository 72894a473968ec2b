// The model client against a loopback server that speaks the protocol (cpp-httplib): answers,
// tool calls, streams, retries, refusals, stalls and junk. No real model is involved.
#include "autodriver/llm/client.hpp"

#include "fake_model.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <thread>

using namespace autodriver;
using namespace std::chrono_literals;
using autodriver::testing::FakeModel;

namespace {

const char* k_answer = R"({"id":"x","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop",
  "message":{"role":"assistant","content":"--- a/x.c\n+++ b/x.c\n"}}],"usage":{"prompt_tokens":120,"completion_tokens":30}})";

std::vector<llm::Message> ask() { return {{"system", "You port drivers.", {}, ""}, {"user", "Fix x.c", {}, ""}}; }

} // namespace

TEST(LlmClient, AnAnswerWithItsUsageAndTheRequestItCameFrom) {
  FakeModel m([](const httplib::Request&, httplib::Response& res) { res.set_content(k_answer, "application/json"); });
  setenv("AD_TEST_LLM_KEY", "sk-secret-123", 1);
  llm::Budget budget{1000};
  llm::Client c(m.endpoint(), &budget);
  llm::Tool read{"read_function", "Read a driver function", {{"type", "object"}}};
  auto r = c.chat(ask(), {read});
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->message.content, "--- a/x.c\n+++ b/x.c\n");
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(r->usage.total(), 150);
  EXPECT_EQ(r->attempts, 1);
  EXPECT_EQ(budget.used, 150);
  EXPECT_EQ(budget.calls, 1);
  auto body = nlohmann::json::parse(m.last_body);
  EXPECT_EQ(body["model"], "fake");
  EXPECT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["tools"][0]["function"]["name"], "read_function");
  EXPECT_EQ(m.last_auth, "Bearer sk-secret-123");
  // The key is in the header only.
  EXPECT_EQ(m.last_body.find("sk-secret"), std::string::npos);
  unsetenv("AD_TEST_LLM_KEY");
  EXPECT_TRUE(c.chat(ask()));
  EXPECT_EQ(m.last_auth, "");
}

TEST(LlmClient, ToolCallsComeBackAsData) {
  FakeModel m([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"choices":[{"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
      {"id":"call_1","type":"function","function":{"name":"read_function","arguments":"{\"name\": \"x_probe\"}"}},
      {"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"../../etc/passwd\"}"}}]}}]})",
                    "application/json");
  });
  llm::Client c(m.endpoint(), nullptr);
  auto r = c.chat(ask());
  ASSERT_TRUE(r) << r.error().describe();
  ASSERT_EQ(r->message.tool_calls.size(), 2u);
  EXPECT_EQ(r->message.tool_calls[0].id, "call_1");
  EXPECT_EQ(r->message.tool_calls[0].name, "read_function");
  EXPECT_EQ(r->message.tool_calls[0].arguments, R"({"name": "x_probe"})");
  EXPECT_EQ(r->message.tool_calls[1].arguments, R"({"path": "../../etc/passwd"})");
  EXPECT_EQ(r->finish_reason, "tool_calls");
  // An answer to a tool call goes back with its id.
  llm::Message back{"tool", "static int x_probe(...)", {}, "call_1"};
  auto body = llm::request_body(m.endpoint(), {back}, {}, false);
  EXPECT_EQ(body["messages"][0]["tool_call_id"], "call_1");
}

TEST(LlmClient, AStreamedAnswerIsMerged) {
  FakeModel m([](const httplib::Request& req, httplib::Response& res) {
    EXPECT_NE(req.body.find("\"stream\":true"), std::string::npos);
    res.set_content("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n"
                    "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
                    "data: "
                    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"build\","
                    "\"arguments\":\"{\\\"a\"}}]}}]}\n\n"
                    "data: "
                    "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\":1}\"}}]},\"finish_"
                    "reason\":\"tool_calls\"}]}\n\n"
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\n\n"
                    "data: [DONE]\n\n",
                    "text/event-stream");
  });
  llm::Client c(m.endpoint(), nullptr);
  auto r = c.chat(ask(), {}, true);
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->message.content, "Hello");
  ASSERT_EQ(r->message.tool_calls.size(), 1u);
  EXPECT_EQ(r->message.tool_calls[0].name, "build");
  EXPECT_EQ(r->message.tool_calls[0].arguments, "{\"a\":1}");
  EXPECT_EQ(r->usage.total(), 15);
  // A stream cut before its end is no answer.
  EXPECT_FALSE(llm::parse_stream("data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"));
  EXPECT_FALSE(llm::parse_stream("data: {\"choices\":[{\"del"));
}

TEST(LlmClient, RetriesOn429And5xxHonouringRetryAfter) {
  std::atomic<int> n{0};
  FakeModel m([&n](const httplib::Request&, httplib::Response& res) {
    int i = ++n;
    if (i == 1) {
      res.status = 429;
      res.set_header("Retry-After", "0");
      res.set_content(R"({"error":{"message":"slow down"}})", "application/json");
    } else if (i == 2) {
      res.status = 503;
    } else {
      res.set_content(k_answer, "application/json");
    }
  });
  llm::Client c(m.endpoint(), nullptr);
  auto r = c.chat(ask());
  ASSERT_TRUE(r) << r.error().describe();
  EXPECT_EQ(r->attempts, 3);
  EXPECT_EQ(m.requests, 3);
  auto e = m.endpoint();
  EXPECT_EQ(llm::retry_delay(e, 1, std::string("7")), 7s);
  EXPECT_EQ(llm::retry_delay(e, 1, std::string("9999")), 60s);
  EXPECT_EQ(llm::retry_delay(e, 3, std::nullopt), 40ms);
  e.backoff = 1s;
  EXPECT_EQ(llm::retry_delay(e, 10, std::nullopt), 60s);
}

TEST(LlmClient, RefusalsAreNotRetriedAndNeverShowTheKey) {
  FakeModel m([](const httplib::Request& req, httplib::Response& res) {
    res.status = 401;
    res.set_content(R"({"error":{"message":"Incorrect API key provided: )" + req.get_header_value("Authorization").substr(7) +
                        "\"}}",
                    "application/json");
  });
  setenv("AD_TEST_LLM_KEY", "sk-secret-456", 1);
  llm::Client c(m.endpoint(), nullptr);
  auto r = c.chat(ask());
  unsetenv("AD_TEST_LLM_KEY");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, util::ErrorKind::http);
  EXPECT_EQ(m.requests, 1);
  EXPECT_NE(r.error().message.find("HTTP 401"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().message.find("sk-secret"), std::string::npos) << r.error().message;
}

TEST(LlmClient, PersistentServerErrorsGiveUpAfterTheRetries) {
  FakeModel m([](const httplib::Request&, httplib::Response& res) { res.status = 500; });
  llm::Client c(m.endpoint(), nullptr);
  auto r = c.chat(ask());
  ASSERT_FALSE(r);
  EXPECT_EQ(m.requests, 4); // 1 + 3 retries
  EXPECT_NE(r.error().message.find("HTTP 500"), std::string::npos);
}

TEST(LlmClient, JunkAndTruncatedAnswersAreParseErrors) {
  FakeModel m([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"choices":[{"message":{"role":"assis)", "application/json");
  });
  llm::Client c(m.endpoint(), nullptr);
  auto r = c.chat(ask());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, util::ErrorKind::parse);
  EXPECT_FALSE(llm::parse_reply("<html>Bad gateway</html>"));
  EXPECT_FALSE(llm::parse_reply(R"({"choices":[]})"));
  EXPECT_FALSE(llm::parse_reply(R"({"choices":[{"message":7}]})"));
}

TEST(LlmClient, AStalledConnectionAndAnUnreachableEndpointFail) {
  FakeModel m([](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(2s);
    res.set_content(k_answer, "application/json");
  });
  auto e = m.endpoint();
  e.retries = 0;
  e.timeout = 1s;
  llm::Client c(e, nullptr);
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.chat(ask());
  ASSERT_FALSE(r);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(r.error().kind == util::ErrorKind::timeout || r.error().kind == util::ErrorKind::network) << r.error().describe();
  llm::Endpoint nowhere = e;
  nowhere.base_url = "http://127.0.0.1:1/v1";
  auto u = llm::Client(nowhere, nullptr).chat(ask());
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().kind, util::ErrorKind::network);
}

TEST(LlmClient, ASpentBudgetStopsBeforeTheRequest) {
  FakeModel m([](const httplib::Request&, httplib::Response& res) { res.set_content(k_answer, "application/json"); });
  llm::Budget budget{200};
  llm::Client c(m.endpoint(), &budget);
  EXPECT_TRUE(c.chat(ask())); // 150 of 200
  EXPECT_TRUE(c.chat(ask())); // 300: over, but this call was allowed to start
  auto r = c.chat(ask());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, util::ErrorKind::config);
  EXPECT_EQ(m.requests, 2);
  EXPECT_NE(r.error().message.find("300 of 200"), std::string::npos) << r.error().message;
}

TEST(LlmClient, TheRunsWallTimeBudgetBoundsEveryCallAndItsRetries) {
  // A server that accepts the connection and answers too late: the endpoint's own limits (300 s,
  // 4 retries) would wait 25 minutes; the run's budget ends in 2 s.
  FakeModel m([](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(3s);
    res.set_content(k_answer, "application/json");
  });
  llm::Budget budget;
  budget.deadline = std::chrono::steady_clock::now() + 2s;
  llm::Client c(m.endpoint(), &budget);
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.chat(ask());
  ASSERT_FALSE(r);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3500ms);
  EXPECT_EQ(r.error().kind, util::ErrorKind::timeout) << r.error().describe();
  // Spent before the call: no request at all.
  const int before = m.requests;
  budget.deadline = std::chrono::steady_clock::now() - 1s;
  auto s = c.chat(ask());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("wall-time budget is spent"), std::string::npos) << s.error().message;
  EXPECT_EQ(m.requests, before);
}
