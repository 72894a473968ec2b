// The LLM generator against the loopback model: a good answer becomes a whole-line edit of the
// driver; a malformed answer is fed back once; an answer reaching outside the driver is refused.
#include "autodriver/propose/llm_agent.hpp"
#include "autodriver/util/files.hpp"
#include "fake_model.hpp"
#include "llm_case.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>

using namespace autodriver;
using autodriver::testing::FakeModel;
using autodriver::testing::LlmCase;
using autodriver::testing::reply;

namespace {

const char* k_good = "x.c\n<<<<<<< SEARCH\n\treturn foo(1);\n=======\n\treturn foo(1, 0);\n>>>>>>> REPLACE\n";

} // namespace

TEST(LlmAgent, AGoodAnswerBecomesAWholeLineEditOfTheDriver) {
  LlmCase c;
  FakeModel m([](const httplib::Request& req, httplib::Response& res) {
    // The prompt shows the error, the numbered lines around it.
    EXPECT_NE(req.body.find("too few arguments"), std::string::npos);
    EXPECT_NE(req.body.find("    5 \\treturn foo(1);"), std::string::npos) << req.body;
    res.set_content(reply(k_good), "application/json");
  });
  propose::LlmAgent agent({m.endpoint(), 0, 3});
  auto edits = agent.propose(c.diags, c.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].proposer, "llm");
  ASSERT_EQ(edits[0].text_edits.size(), 1u);
  const auto& te = edits[0].text_edits[0];
  EXPECT_EQ(te.file, "x.c");
  EXPECT_EQ(te.line, 5);
  EXPECT_EQ(te.remove, 1);
  EXPECT_EQ(te.text, "\treturn foo(1, 0);\n");
  EXPECT_EQ(agent.log().calls, 1);
  EXPECT_EQ(agent.log().prompt_tokens + agent.log().completion_tokens, 120);
  // The driver's tree is never written.
  auto text = util::read_file(c.ctx.tree / "x.c");
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("return foo(1);"), std::string::npos);
}

TEST(LlmAgent, AMalformedAnswerIsFedBackOnceThenTheRoundFails) {
  LlmCase c;
  std::atomic<int> n{0};
  FakeModel m([&n](const httplib::Request& req, httplib::Response& res) {
    if (++n == 1) {
      res.set_content(reply("Just add a zero."), "application/json");
    } else {
      EXPECT_NE(req.body.find("could not be used"), std::string::npos);
      res.set_content(reply(k_good), "application/json");
    }
  });
  propose::LlmAgent agent({m.endpoint(), 0, 3});
  EXPECT_EQ(agent.propose(c.diags, c.ctx).size(), 1u);
  EXPECT_EQ(agent.log().calls, 2);
  // An answer that reaches outside the driver, twice: refused, no edit, the reason logged.
  FakeModel bad([](const httplib::Request&, httplib::Response& res) {
    res.set_content(reply("../../etc/passwd\n<<<<<<< SEARCH\nroot\n=======\nx\n>>>>>>> REPLACE\n"), "application/json");
  });
  propose::LlmAgent agent2({bad.endpoint(), 0, 3});
  EXPECT_TRUE(agent2.propose(c.diags, c.ctx).empty());
  ASSERT_EQ(agent2.log().rounds.size(), 1u);
  EXPECT_NE(agent2.log().rounds[0]["error"].get<std::string>().find("not a file of the driver"), std::string::npos);
}

TEST(LlmAgent, AnUnreachableModelOrASpentBudgetLeavesNoEdit) {
  LlmCase c;
  llm::Endpoint nowhere;
  nowhere.base_url = "http://127.0.0.1:1/v1";
  nowhere.model = "m";
  nowhere.retries = 0;
  propose::LlmAgent agent({nowhere, 0, 3});
  EXPECT_TRUE(agent.propose(c.diags, c.ctx).empty());
  EXPECT_NE(agent.log().rounds[0]["error"].get<std::string>().find("network"), std::string::npos);
  FakeModel m(
      [](const httplib::Request&, httplib::Response& res) { res.set_content(reply("nothing useful"), "application/json"); });
  propose::LlmAgent poor({m.endpoint(), 100, 3});
  EXPECT_TRUE(poor.propose(c.diags, c.ctx).empty()); // 120 tokens: over after the first answer
  EXPECT_TRUE(poor.spent());
  EXPECT_EQ(m.requests, 1);
}

TEST(LlmAgent, LineEditsKeepTheCommonLines) {
  auto e = propose::line_edit("a.c", "a\nb\nc\nd\n", "a\nB\nB2\nd\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 2);
  EXPECT_EQ(e->remove, 2);
  EXPECT_EQ(e->text, "B\nB2\n");
  EXPECT_FALSE(propose::line_edit("a.c", "x\n", "x\n"));
}

TEST(LlmAgent, ToolCallsReadTheDriverButNothingOutsideIt) {
  LlmCase c;
  std::atomic<int> n{0};
  FakeModel m([&n](const httplib::Request& req, httplib::Response& res) {
    if (++n == 1) {
      EXPECT_NE(req.body.find("\"read_function\""), std::string::npos); // the tools are offered
      nlohmann::json calls = nlohmann::json::array(
          {{{"id", "c1"},
            {"type", "function"},
            {"function", {{"name", "read_function"}, {"arguments", R"({"name":"x_probe"})"}}}},
           {{"id", "c2"},
            {"type", "function"},
            {"function", {{"name", "read_lines"}, {"arguments", R"({"path":"../../etc/passwd","first":1,"last":5})"}}}},
           {{"id", "c3"}, {"type", "function"}, {"function", {{"name", "read_lines"}, {"arguments", "not json"}}}}});
      nlohmann::json j = {
          {"choices",
           {{{"finish_reason", "tool_calls"}, {"message", {{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}}}}}},
          {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 10}}}};
      res.set_content(j.dump(), "application/json");
      return;
    }
    auto body = nlohmann::json::parse(req.body);
    std::string tools;
    for (const auto& msg : body["messages"])
      if (msg["role"] == "tool") tools += msg["tool_call_id"].get<std::string>() + ":" + msg["content"].get<std::string>() + "\n";
    EXPECT_NE(tools.find("c1:x.c:\nint x_probe(void)\n{\n\treturn foo(1);\n}"), std::string::npos) << tools;
    EXPECT_NE(tools.find("c2:refused"), std::string::npos) << tools;
    EXPECT_NE(tools.find("c3:error: the arguments are not a JSON object"), std::string::npos) << tools;
    res.set_content(reply(k_good), "application/json");
  });
  propose::LlmAgent agent({m.endpoint(), 0, 3});
  auto edits = agent.propose(c.diags, c.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(agent.log().calls, 2);
  EXPECT_EQ(agent.log().rounds[0]["tool_calls"], 3);
}
