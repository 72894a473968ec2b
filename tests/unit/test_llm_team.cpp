// The agents' team against the loopback model and a scripted reviewer (the loop's trial stands
// behind it in a port): a near miss is refined rather than regenerated, a cheat the integrity gate
// finds is fed back and not kept, a last attempt starts over with the lessons of the failed ones,
// the model may build a change before it answers, and the cost budget is enforced.
#include "autodriver/propose/llm_agent.hpp"
#include "autodriver/util/files.hpp"
#include "fake_model.hpp"
#include "llm_case.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <optional>

using namespace autodriver;
using autodriver::testing::FakeModel;
using autodriver::testing::LlmCase;
using autodriver::testing::reply;

namespace {

std::string block(const std::string& search, const std::string& replace) {
  return "x.c\n<<<<<<< SEARCH\n" + search + "\n=======\n" + replace + "\n>>>>>>> REPLACE\n";
}

/// The text of line 5 after an edit (every edit here rewrites that line).
std::string line5(const propose::Edit& e) { return e.text_edits.empty() ? "" : e.text_edits.front().text; }

/// A reviewer scripted by the text the edit writes on line 5.
propose::Review scripted(const propose::Edit& e) {
  propose::Review r;
  r.applied = true;
  r.errors_before = 1;
  const std::string t = line5(e);
  if (t == "\treturn foo(1, 0);\n") { // a near miss: the call fits, `0` is no pointer
    r.progressed = true;
    r.score = 1;
    r.errors_after = 1;
    r.new_errors = {"x.c:5:21: error: passing argument 2 of 'foo' makes pointer from integer"};
  } else if (t == "\treturn foo(1, NULL);\n") {
    r.progressed = true;
    r.ok = true;
  } else if (t.find("#if 0") != std::string::npos) {
    r.progressed = true;
    r.ok = true;
    r.findings = {"code-disabled x.c:5: the failing call is under #if 0"};
  } else {
    r.errors_after = 1;
    r.score = 2;
    r.remaining = {"x.c:5:9: error: too few arguments to function 'foo'"};
  }
  return r;
}

/// The user messages of a request, in order.
std::vector<std::string> user_messages(const std::string& body) {
  std::vector<std::string> out;
  const auto j = nlohmann::json::parse(body);
  for (const auto& m : j["messages"])
    if (m["role"] == "user") out.push_back(m["content"].get<std::string>());
  return out;
}

} // namespace

TEST(LlmTeam, ANearMissIsRefinedNotRegenerated) {
  LlmCase c;
  std::atomic<int> n{0};
  std::mutex mu;
  std::string second;
  FakeModel m([&](const httplib::Request& req, httplib::Response& res) {
    if (++n == 1) {
      res.set_content(reply(block("\treturn foo(1);", "\treturn foo(1, 0);")), "application/json");
      return;
    }
    {
      std::lock_guard lock(mu);
      second = req.body;
    }
    // The refiner answers against the files as the near miss left them.
    res.set_content(reply(block("\treturn foo(1, 0);", "\treturn foo(1, NULL);")), "application/json");
  });
  propose::AgentSettings s{m.endpoint(), 0, 3};
  s.review = scripted;
  propose::LlmAgent agent(s);
  auto edits = agent.propose(c.diags, c.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(line5(edits[0]), "\treturn foo(1, NULL);\n"); // against the original tree
  EXPECT_EQ(edits[0].text_edits[0].line, 5);
  EXPECT_EQ(edits[0].text_edits[0].remove, 1);
  auto users = user_messages(second);
  ASSERT_GE(users.size(), 2u);
  EXPECT_NE(users.back().find("Errors the change brought"), std::string::npos) << users.back();
  EXPECT_NE(users.back().find("makes pointer from integer"), std::string::npos);
  EXPECT_NE(users.back().find("after answer 1"), std::string::npos) << users.back();
  const auto& round = agent.log().rounds.at(0);
  ASSERT_EQ(round["attempts"].size(), 2u);
  EXPECT_EQ(round["attempts"][0]["role"], "generator");
  EXPECT_EQ(round["attempts"][1]["role"], "refiner");
  EXPECT_EQ(round["attempts"][1]["review"]["ok"], true);
  // The tree is never written; the scratch copies are gone.
  EXPECT_NE(util::read_file(c.ctx.tree / "x.c")->find("return foo(1);"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(c.ctx.scratch));
}

TEST(LlmTeam, ACheatIsFedBackAndTheLastAttemptStartsOverWithTheLessons) {
  LlmCase c;
  std::atomic<int> n{0};
  std::mutex mu;
  std::vector<std::string> bodies;
  FakeModel m([&](const httplib::Request& req, httplib::Response& res) {
    const int k = ++n;
    {
      std::lock_guard lock(mu);
      bodies.push_back(req.body);
    }
    if (k == 1)
      res.set_content(reply(block("\treturn foo(1);", "#if 0\n\treturn foo(1);\n#endif\n\treturn 0;")), "application/json");
    else if (k == 2) res.set_content(reply(block("\treturn foo(1);", "\treturn foo(2);")), "application/json");
    else res.set_content(reply(block("\treturn foo(1);", "\treturn foo(1, NULL);")), "application/json");
  });
  propose::AgentSettings s{m.endpoint(), 0, 3};
  s.review = scripted;
  propose::LlmAgent agent(s);
  auto edits = agent.propose(c.diags, c.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(line5(edits[0]), "\treturn foo(1, NULL);\n");
  ASSERT_EQ(bodies.size(), 3u);
  // The refiner hears the integrity gate; the cheat is not a near miss, so the files are as they were.
  auto refine = user_messages(bodies[1]).back();
  EXPECT_NE(refine.find("integrity gate rejects"), std::string::npos) << refine;
  EXPECT_NE(refine.find("as they were before your answers"), std::string::npos) << refine;
  // The reflection is a fresh conversation: the generator's prompt, then every failed answer and its review.
  auto body = nlohmann::json::parse(bodies[2]);
  for (const auto& msg : body["messages"]) EXPECT_NE(msg["role"], "assistant");
  auto reflect = user_messages(bodies[2]).back();
  EXPECT_NE(reflect.find("Answer 1 (generator)"), std::string::npos) << reflect;
  EXPECT_NE(reflect.find("#if 0"), std::string::npos) << reflect;
  EXPECT_NE(reflect.find("Answer 2 (refiner)"), std::string::npos) << reflect;
  EXPECT_NE(reflect.find("Errors that remain"), std::string::npos) << reflect;
  EXPECT_EQ(agent.log().rounds.at(0)["attempts"][2]["role"], "reflection");
}

TEST(LlmTeam, WithoutAnAcceptableAnswerTheBestNearMissIsOffered) {
  LlmCase c;
  FakeModel m([&](const httplib::Request&, httplib::Response& res) {
    res.set_content(reply(block("\treturn foo(1);", "\treturn foo(1, 0);")), "application/json");
  });
  propose::AgentSettings s{m.endpoint(), 0, 3};
  s.review = scripted;
  s.max_attempts = 2;
  propose::LlmAgent agent(s);
  auto edits = agent.propose(c.diags, c.ctx);
  // Answer 2 refines answer 1's near miss, whose text no longer holds the SEARCH: unusable twice.
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(line5(edits[0]), "\treturn foo(1, 0);\n");
  EXPECT_EQ(agent.log().rounds.at(0)["near_miss"], 1);
  EXPECT_NE(agent.log().rounds.at(0)["attempts"][1]["error"].get<std::string>().find("could not be used twice"),
            std::string::npos);
}

TEST(LlmTeam, TheModelMayBuildAChangeBeforeItAnswers) {
  LlmCase c;
  std::atomic<int> n{0};
  std::mutex mu;
  std::string tools;
  FakeModel m([&](const httplib::Request& req, httplib::Response& res) {
    if (++n == 1) {
      EXPECT_NE(req.body.find("\"try_build\""), std::string::npos);
      nlohmann::json args = {{"edits", block("\treturn foo(1);", "\treturn foo(1, 0);")}};
      nlohmann::json calls = nlohmann::json::array(
          {{{"id", "b1"}, {"type", "function"}, {"function", {{"name", "try_build"}, {"arguments", args.dump()}}}},
           {{"id", "b2"},
            {"type", "function"},
            {"function", {{"name", "try_build"}, {"arguments", R"({"edits":"no blocks"})"}}}}});
      nlohmann::json j = {
          {"choices",
           {{{"finish_reason", "tool_calls"}, {"message", {{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}}}}}},
          {"usage", {{"prompt_tokens", 50}, {"completion_tokens", 10}}}};
      res.set_content(j.dump(), "application/json");
      return;
    }
    const auto body = nlohmann::json::parse(req.body);
    for (const auto& msg : body["messages"])
      if (msg["role"] == "tool") {
        std::lock_guard lock(mu);
        tools += msg["tool_call_id"].get<std::string>() + ":" + msg["content"].get<std::string>() + "\n";
      }
    res.set_content(reply(block("\treturn foo(1);", "\treturn foo(1, NULL);")), "application/json");
  });
  std::atomic<int> reviews{0};
  propose::AgentSettings s{m.endpoint(), 0, 3};
  s.review = [&reviews](const propose::Edit& e) {
    ++reviews;
    return scripted(e);
  };
  propose::LlmAgent agent(s);
  auto edits = agent.propose(c.diags, c.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(reviews, 2); // the tool's build, then the answer's
  EXPECT_NE(tools.find("b1:The build has 1 error(s)"), std::string::npos) << tools;
  EXPECT_NE(tools.find("makes pointer from integer"), std::string::npos) << tools;
  EXPECT_NE(tools.find("b2:error:"), std::string::npos) << tools;
  EXPECT_EQ(agent.log().rounds.at(0)["builds"], 1);
  // Each call's usage and time: the tool-calling answer, then the final one.
  const auto& calls = agent.log().rounds.at(0)["call_log"];
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["tokens_in"], 50);
  EXPECT_EQ(calls[0]["tool_calls"], 2);
  EXPECT_EQ(calls[1]["tokens_out"], 20);
  EXPECT_TRUE(std::filesystem::is_empty(c.ctx.scratch));
}

TEST(LlmTeam, TheCostIsCountedAndItsBudgetEnforced) {
  LlmCase c;
  FakeModel m(
      [](const httplib::Request&, httplib::Response& res) { res.set_content(reply("no blocks here"), "application/json"); });
  propose::AgentSettings s{m.endpoint(), 0, 3};
  s.price_in = 2.0;   // per million prompt tokens
  s.price_out = 10.0; // per million completion tokens
  s.max_cost = 0.0005;
  propose::LlmAgent agent(s);
  EXPECT_TRUE(agent.propose(c.diags, c.ctx).empty());
  // One call costs 100 * 2e-6 + 20 * 10e-6 = 0.0004: the second is allowed, the third is not.
  EXPECT_EQ(m.requests, 2);
  EXPECT_NEAR(agent.log().cost, 0.0008, 1e-9);
  EXPECT_TRUE(agent.spent());
  EXPECT_NEAR(agent.log().rounds.at(0)["cost"].get<double>(), 0.0008, 1e-9);
  propose::AgentSettings s2{m.endpoint(), 0, 3};
  s2.max_cost = 0.0005;
  s2.price_in = 2.0;
  s2.price_out = 10.0;
  propose::LlmAgent again(s2);
  (void)again.propose(c.diags, c.ctx);
  (void)again.propose(c.diags, c.ctx);
  EXPECT_NE(again.log().rounds.at(1)["error"].get<std::string>().find("cost budget is spent"), std::string::npos)
      << again.log().rounds.at(1);
}

TEST(LlmTeam, StreamedAnswersAreAskedForAndRead) {
  LlmCase c;
  FakeModel m([](const httplib::Request& req, httplib::Response& res) {
    auto body = nlohmann::json::parse(req.body);
    EXPECT_EQ(body.value("stream", false), true);
    const std::string answer = block("\treturn foo(1);", "\treturn foo(1, NULL);");
    std::string sse;
    for (std::size_t i = 0; i < answer.size(); i += 16) {
      nlohmann::json chunk = {{"choices", {{{"index", 0}, {"delta", {{"content", answer.substr(i, 16)}}}}}}};
      sse += "data: " + chunk.dump() + "\n\n";
    }
    sse += "data: " +
           nlohmann::json({{"choices", nlohmann::json::array()}, {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3}}}})
               .dump() +
           "\n\n";
    sse += "data: [DONE]\n\n";
    res.set_content(sse, "text/event-stream");
  });
  propose::AgentSettings s{m.endpoint(), 0, 3};
  s.stream = true;
  s.review = scripted;
  propose::LlmAgent agent(s);
  auto edits = agent.propose(c.diags, c.ctx);
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(line5(edits[0]), "\treturn foo(1, NULL);\n");
  EXPECT_EQ(agent.log().prompt_tokens, 7);
  EXPECT_EQ(agent.log().completion_tokens, 3);
}
