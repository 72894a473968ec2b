// The port loop's decisions on scripted builds (issue 20 item 1): a fake Builder reads the tree and
// answers with the diagnostics a compiler would give, fake proposers offer fixed edits, the kernel
// is a folder of its own. No kbuild, no kernel sources, no QEMU.

#include "autodriver/loop/builder.hpp"
#include "autodriver/loop/port.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"
#include "fake_model.hpp"
#include "llm_case.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <regex>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

/// "Compiles" drv.c line by line: a call of old_X() is an implicit declaration, a line holding
/// BROKEN an undeclared identifier, a "(long)" cast an int-conversion warning. The enclosing
/// function is the last "static int NAME(void)" above the line.
class ScriptedBuilder final : public loop::Builder {
public:
  int builds = 0;
  util::Expected<loop::BuildState> build(const core::Kernel&, const fs::path& tree, const loop::BuildLimit& limit,
                                         const std::vector<std::string>&) override {
    ++builds;
    auto text = util::read_file(tree / "drv.c");
    if (!text) return util::unexpected(text.error());
    std::vector<core::Diagnostic> diags;
    static const std::regex k_fn(R"(^static int (\w+)\(void\))"), k_old(R"(\b(old_\w+)\()");
    std::string function;
    int line = 0;
    for (auto l : util::split_lines(*text)) {
      ++line;
      std::string s(l);
      std::smatch m;
      if (std::regex_search(s, m, k_fn)) function = m[1];
      if (s == "}") function.clear();
      auto add = [&](core::Severity sev, core::DiagKind kind, std::string msg, std::string sym) {
        core::Diagnostic d;
        d.file = "drv.c";
        d.line = line;
        d.severity = sev;
        d.kind = kind;
        d.message = std::move(msg);
        d.symbols = {std::move(sym)};
        d.function = function;
        diags.push_back(std::move(d));
      };
      if (std::regex_search(s, m, k_old))
        add(core::Severity::error, core::DiagKind::implicit_function_declaration,
            "implicit declaration of function '" + m[1].str() + "'", m[1]);
      if (s.find("BROKEN") != std::string::npos)
        add(core::Severity::error, core::DiagKind::undeclared_identifier, "'BROKEN' undeclared", "BROKEN");
      if (s.find("(long)") != std::string::npos)
        add(core::Severity::warning, core::DiagKind::int_conversion,
            "returning 'long' from a function with return type "
            "'int' makes integer from pointer without a cast",
            "");
    }
    bool errors = std::any_of(diags.begin(), diags.end(), [](const auto& d) { return d.severity == core::Severity::error; });
    auto s = loop::state_of(diags, !errors);
    s.limit = limit.timeout;
    s.ms = 1;
    if (s.ok) s.modules = {"drv"};
    return s;
  }
  bool single_objects() const override { return false; }
};

/// Offers the same edits every iteration (the loop settles what it accepted or rejected).
class FixedProposer final : public propose::Proposer {
public:
  explicit FixedProposer(std::vector<propose::Edit> edits) : m_edits(std::move(edits)) {}
  std::string_view id() const override { return "fixed"; }
  std::vector<propose::Edit> propose(const std::vector<core::Diagnostic>&, const propose::PortContext&) override {
    ++asked;
    return m_edits;
  }
  int asked = 0;

private:
  std::vector<propose::Edit> m_edits;
};

/// Replace line `line` of drv.c by `text` (no newline), as change `id`.
propose::Edit line_edit(const std::string& id, int line, const std::string& text, int rank = 0) {
  propose::Edit e;
  e.proposer = "fixed";
  e.change_id = id;
  e.title = id;
  e.description = "test edit " + id;
  e.rank = rank;
  e.text_edits.push_back({"drv.c", line, 1, text + "\n", std::nullopt});
  return e;
}

// The calls of old_a..old_d are on lines 5, 10, 15 and 20; e's constant on line 25.
const char* k_driver = R"(#include <linux/module.h>

static int a(void)
{
	return old_a();
}

static int b(void)
{
	return old_b();
}

static int c(void)
{
	return old_c();
}

static int d(void)
{
	return old_d();
}

static int e(void)
{
	return 5;
}
MODULE_LICENSE("GPL");
)";

struct PortSessionTest : ::testing::Test {
  std::optional<util::TempDir> tmp;
  fs::path drv, kdir, out;
  std::shared_ptr<ScriptedBuilder> builder = std::make_shared<ScriptedBuilder>();
  FixedProposer* proposer = nullptr;

  void SetUp() override {
    auto t = util::TempDir::create(util::scratch_root(), "test-port-session-");
    ASSERT_TRUE(t);
    tmp.emplace(std::move(*t));
    drv = tmp->path() / "drv";
    kdir = tmp->path() / "kernel";
    out = tmp->path() / "out";
    fs::create_directories(drv);
    fs::create_directories(kdir);
    ASSERT_TRUE(util::write_file(drv / "Makefile", "obj-m += drv.o\n"));
    ASSERT_TRUE(util::write_file(drv / "drv.c", k_driver));
    ASSERT_TRUE(util::write_file(kdir / "Makefile", "# a kernel build directory\n"));
  }

  llm::Options llm; ///< --llm: off unless a test sets it

  util::Expected<loop::PortReport> port(std::vector<propose::Edit> edits,
                                        std::chrono::seconds budget = std::chrono::seconds(600)) {
    loop::PortRequest req;
    req.llm = llm;
    req.tree = drv;
    req.to = "test";
    req.out = out;
    req.budget = budget;
    req.reference = false;
    req.store_kb = false;
    req.author = "Test <test@example.org>";
    loop::PortDeps deps;
    deps.builder = builder;
    auto p = std::make_unique<FixedProposer>(std::move(edits));
    proposer = p.get();
    deps.proposers.emplace();
    deps.proposers->push_back({std::move(p), false});
    deps.resolve_kernel = [this](const std::string& name) -> util::Expected<core::Kernel> {
      core::Kernel k;
      k.name = name;
      k.release = "9.9.0-test";
      k.line = "9.9";
      k.build_dir = kdir;
      return k;
    };
    deps.source = [](const core::Kernel&) -> util::Expected<fs::path> {
      return util::unexpected(util::ErrorKind::not_found, "no sources in this test");
    };
    return loop::run_port(req, nullptr, std::move(deps));
  }

  std::vector<std::string> accepted(const loop::PortReport& r) {
    std::vector<std::string> ids;
    for (const auto& a : r.accepted) ids.push_back(a.edit.change_id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }
  std::string result_line(int n) {
    auto text = util::read_file(out / "tree" / "drv.c");
    if (!text) return "";
    auto lines = util::split_lines(*text);
    return n <= static_cast<int>(lines.size()) ? std::string(lines[static_cast<std::size_t>(n) - 1]) : "";
  }
};

using Ids = std::vector<std::string>;

TEST_F(PortSessionTest, EditsThatRemoveErrorsAreKeptAndWrittenOut) {
  auto r = port({line_edit("a", 5, "\treturn new_a();"), line_edit("b", 10, "\treturn new_b();"),
                 line_edit("c", 15, "\treturn new_c();"), line_edit("d", 20, "\treturn new_d();")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, "ported");
  EXPECT_TRUE(r->ok);
  EXPECT_EQ(r->initial_errors, 4);
  EXPECT_EQ(r->final_errors, 0);
  EXPECT_EQ(accepted(*r), (Ids{"a", "b", "c", "d"}));
  EXPECT_EQ(result_line(5), "\treturn new_a();");
  EXPECT_EQ(r->patches.size(), 4u);
  for (const auto& p : r->patches) EXPECT_TRUE(fs::exists(p)) << p;
  // The original tree is never written.
  EXPECT_EQ(*util::read_file(drv / "drv.c"), k_driver);
  // No staging folder is left in OUT.
  EXPECT_FALSE(fs::exists(out / ".tree.partial"));
  EXPECT_FALSE(fs::exists(out / ".patches.partial"));
}

TEST_F(PortSessionTest, AnEditThatMovesAnErrorIsRefused) {
  // old_a() -> old_a2(): the error is gone and a new one stands on its line.
  auto r = port({line_edit("a", 5, "\treturn old_a2();")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->accepted.empty());
  EXPECT_EQ(r->status, "no-progress");
  EXPECT_EQ(r->final_errors, 4);
}

TEST_F(PortSessionTest, AnEditThatAddsATypeWarningIsRefused) {
  // The error goes, an int-conversion warning comes: a wrong rename that only compiles.
  auto r = port({line_edit("a", 5, "\treturn (long)new_a();")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->accepted.empty());
  EXPECT_EQ(r->final_errors, 4);
}

TEST_F(PortSessionTest, TheBetterAlternativeOfAChangeWins) {
  auto r = port({line_edit("a", 5, "\treturn (long)new_a();", 0), line_edit("a", 5, "\treturn new_a();", 1)});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(accepted(*r), (Ids{"a"}));
  EXPECT_EQ(result_line(5), "\treturn new_a();");
}

TEST_F(PortSessionTest, HalvingFindsTheGoodHalf) {
  // Four changes at once: three fix their call, one adds a file-scope error that no edit's
  // function holds, so the near-miss retry cannot single it out; the halves can.
  propose::Edit bad;
  bad.proposer = "fixed";
  bad.change_id = "zbad";
  bad.title = "bad";
  bad.text_edits.push_back({"drv.c", 20, 1, "\treturn new_d();\n", std::nullopt});
  bad.text_edits.push_back({"drv.c", 2, 0, "BROKEN;\n", std::nullopt});
  auto r = port({line_edit("a", 5, "\treturn new_a();"), line_edit("b", 10, "\treturn new_b();"),
                 line_edit("c", 15, "\treturn new_c();"), bad});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(accepted(*r), (Ids{"a", "b", "c"}));
  bool half_accepted = false;
  for (const auto& s : r->steps)
    if (s.value("step", "") == "try" && s.value("combined", false) && s.value("depth", 0) == 1 &&
        s.value("errors_after", -1) < s.value("errors_before", 0) && s.value("changes", 0) == 2)
      half_accepted = half_accepted || s.value("errors_after", -1) == 2;
  EXPECT_TRUE(half_accepted) << r->steps.dump(1);
  EXPECT_EQ(r->final_errors, 1); // old_d() stays: its only fix is the bad edit
}

TEST_F(PortSessionTest, TheLoopStopsWhenNothingHelps) {
  auto r = port({line_edit("a", 5, "\treturn old_a2();"), line_edit("b", 10, "\treturn old_b2();")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, "no-progress");
  EXPECT_EQ(proposer->asked, 1);
  // The baseline, the combined trial and one trial per change: nothing more.
  EXPECT_EQ(builder->builds, 4);
}

TEST_F(PortSessionTest, TheBudgetStopsTheLoop) {
  auto r = port({line_edit("a", 5, "\treturn new_a();")}, std::chrono::seconds(0));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, "budget");
  EXPECT_TRUE(r->accepted.empty());
  EXPECT_EQ(builder->builds, 1);
}

TEST_F(PortSessionTest, TheIntegrityGatesBlameDropsAnEditAndRebuildsTheSeries) {
  // Accepted together: four fixes and a change no diagnostic points at (e's constant), second in
  // the series (the repair drops at most three edits in turn, in series order).
  auto r = port({line_edit("a", 5, "\treturn new_a();"), line_edit("a-tidy", 25, "\treturn 6;"),
                 line_edit("b", 10, "\treturn new_b();"), line_edit("c", 15, "\treturn new_c();"),
                 line_edit("d", 20, "\treturn new_d();")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, "ported") << r->integrity.dump(1);
  EXPECT_EQ(accepted(*r), (Ids{"a", "b", "c", "d"}));
  EXPECT_EQ(result_line(25), "\treturn 5;");
  bool repaired = false;
  for (const auto& s : r->steps)
    if (s.value("step", "") == "integrity-repair" && s.value("dropped", "") == "a-tidy")
      repaired = s.value("integrity_ok", false);
  EXPECT_TRUE(repaired) << r->steps.dump(1);
  EXPECT_EQ(r->patches.size(), 4u);
}

TEST_F(PortSessionTest, AnOutputThatCannotBeWrittenIsAnErrorNotAPort) {
  // OUT cannot take the tree: a file stands where OUT must be created.
  ASSERT_TRUE(util::write_file(tmp->path() / "blocker", "x"));
  out = tmp->path() / "blocker" / "out";
  auto r = port({line_edit("a", 5, "\treturn new_a();")});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("writing"), std::string::npos) << r.error().message;
}

} // namespace

namespace {

/// A SEARCH/REPLACE block of drv.c replacing a `return X` line.
std::string return_block(const std::string& from, const std::string& to) {
  return "drv.c\n<<<<<<< SEARCH\n\treturn " + from + "\n=======\n\treturn " + to + "\n>>>>>>> REPLACE\n";
}

} // namespace

TEST_F(PortSessionTest, TheAgentsNearMissIsRefinedAndItsReviewedBuildIsReused) {
  std::atomic<int> n{0};
  autodriver::testing::FakeModel m([&n](const httplib::Request&, httplib::Response& res) {
    const int k = ++n;
    if (k == 1) // fixes old_a, old_b and old_c, but writes BROKEN: 4 -> 2 errors, one of them new
      res.set_content(autodriver::testing::reply(return_block("old_a();", "new_a(BROKEN);") +
                                                 return_block("old_b();", "new_b();") + return_block("old_c();", "new_c();")),
                      "application/json");
    else if (k == 2) // the refiner, against the near miss's text
      res.set_content(autodriver::testing::reply(return_block("new_a(BROKEN);", "new_a();")), "application/json");
    else res.set_content(autodriver::testing::reply("nothing more"), "application/json");
  });
  llm.url = m.endpoint().base_url;
  llm.model = "fake";
  llm.attempts = 2;
  auto r = port({});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->accepted.size(), 1u) << r->llm.dump(1);
  EXPECT_EQ(r->accepted[0].edit.proposer, "llm");
  EXPECT_EQ(result_line(5), "\treturn new_a();");
  EXPECT_EQ(result_line(10), "\treturn new_b();");
  EXPECT_EQ(result_line(15), "\treturn new_c();");
  EXPECT_EQ(r->final_errors, 1); // old_d: the next round's answers were unusable
  // The baseline, then one build per reviewed answer; the loop's own try of the kept answer
  // took the review's build.
  EXPECT_EQ(builder->builds, 3);
  const auto& rounds = r->llm["rounds"];
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0]["attempts"][0]["review"]["new_errors"], 1);
  EXPECT_EQ(rounds[0]["attempts"][0]["review"]["progressed"], true);
  EXPECT_EQ(rounds[0]["attempts"][1]["role"], "refiner");
  EXPECT_EQ(rounds[1]["edits"], 0);
}

TEST_F(PortSessionTest, AFailingOrCheatingModelLeavesTheRulesResultsStanding) {
  // The rules fix old_a and old_b; old_c and old_d go to the model.
  std::vector<propose::Edit> rules = {line_edit("a", 5, "\treturn new_a();"), line_edit("b", 10, "\treturn new_b();")};
  {
    autodriver::testing::FakeModel m([](const httplib::Request&, httplib::Response& res) {
      res.status = 401; // a wrong key: not retried
      res.set_content(R"({"error":{"message":"invalid api key"}})", "application/json");
    });
    llm.url = m.endpoint().base_url;
    llm.model = "fake";
    auto r = port(rules);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(accepted(*r), (Ids{"a", "b"}));
    EXPECT_EQ(r->status, "no-progress");
    EXPECT_EQ(r->final_errors, 2);
    EXPECT_NE(r->llm["rounds"][0]["error"].get<std::string>().find("HTTP 401"), std::string::npos) << r->llm;
  }
  // A model that deletes the failing functions: the reviewer's integrity gate finds it, it is never kept.
  autodriver::testing::FakeModel cheat([](const httplib::Request&, httplib::Response& res) {
    res.set_content(autodriver::testing::reply(
                        "drv.c\n<<<<<<< SEARCH\nstatic int c(void)\n{\n\treturn old_c();\n}\n=======\n>>>>>>> "
                        "REPLACE\ndrv.c\n<<<<<<< SEARCH\nstatic int d(void)\n{\n\treturn old_d();\n}\n=======\n>>>>>>> "
                        "REPLACE\n"),
                    "application/json");
  });
  llm.url = cheat.endpoint().base_url;
  fs::remove_all(out);
  auto r = port(rules);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(accepted(*r), (Ids{"a", "b"}));
  EXPECT_EQ(r->status, "no-progress");
  const auto& attempts = r->llm["rounds"][0]["attempts"];
  ASSERT_EQ(attempts.size(), 3u);
  for (const auto& a : attempts) {
    ASSERT_FALSE(a["review"]["findings"].empty()) << a;
    EXPECT_NE(a["review"]["findings"][0].get<std::string>().find("function-deleted"), std::string::npos) << a;
  }
}

TEST_F(PortSessionTest, AFollowUpGoesWithTheChangeItFollowsAndNeverAlone) {
  // A consequence elsewhere in the function (the test of a call's result) builds with or without
  // its change: it is tried on top of that change once kept, kept when nothing gets worse, and
  // never tried for a change that was not kept.
  auto follow = [](propose::Edit e, const std::string& of) {
    e.follows = of;
    return e;
  };
  auto r = port({line_edit("a", 5, "\treturn new_a();"), line_edit("b", 10, "\treturn new_b();"),
                 line_edit("c", 15, "\treturn new_c();"), line_edit("d", 20, "\treturn new_d();"),
                 follow(line_edit("a-result", 4, "{\n\tint checked = 1;"), "a"),
                 follow(line_edit("z-result", 25, "\treturn 7;"), "z"), follow(line_edit("b-result", 24, "{ BROKEN;"), "b")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, "ported");
  EXPECT_EQ(accepted(*r), (Ids{"a", "a-result", "b", "c", "d"}));
  EXPECT_EQ(result_line(5), "\tint checked = 1;");
  EXPECT_EQ(result_line(26), "\treturn 5;");
  EXPECT_EQ(result_line(25), "{");

  // One change kept alone (not in a set): its follow-up still comes with it.
  builder->builds = 0;
  fs::remove_all(out);
  r = port({line_edit("a", 5, "\treturn new_a();"), follow(line_edit("a-result", 4, "{\n\tint checked = 1;"), "a")});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(accepted(*r), (Ids{"a", "a-result"}));
  EXPECT_EQ(result_line(5), "\tint checked = 1;");
}
