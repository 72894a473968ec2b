// The tools the agents call: how the kernel's own drivers changed a symbol between the two trees
// (left-out paths never read), the API change from the two kernels' headers or apidiff's entry,
// the compat KB's rewrites, and building on demand only when the loop can build.
#include "autodriver/propose/kb/kb_file.hpp"
#include "autodriver/propose/llm_tools.hpp"
#include "autodriver/propose/shared/site_index.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <optional>

using namespace autodriver;

namespace {

struct Trees {
  std::optional<util::TempDir> dir;
  propose::PortContext ctx;
  std::set<std::string> editable = {"d.c"};
  Trees() {
    auto d = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-llm-tools");
    if (!d) return;
    dir.emplace(std::move(*d));
    const auto& p = dir->path();
    auto put = [&](const std::string& rel, const std::string& text) {
      std::filesystem::create_directories((p / rel).parent_path());
      (void)util::write_file(p / rel, text);
    };
    put("old/include/linux/x.h", "int old_api(struct device *dev, int n);\n");
    put("new/include/linux/x.h", "int new_api(struct device *dev);\n");
    const std::string head = "#include <linux/x.h>\n\nstatic int a_probe(struct device *dev)\n{\n\tint x;\n\n";
    const std::string tail = "\treturn x;\n}\n\nstatic int a_other(void)\n{\n\treturn 0;\n}\n";
    put("old/drivers/a/a.c", head + "\tx = old_api(dev, 1);\n" + tail);
    put("new/drivers/a/a.c", head + "\tx = new_api(dev);\n" + tail);
    put("old/drivers/b/b.c", head + "\tx = old_api(dev, 2);\n" + tail);
    put("new/drivers/b/b.c", head + "\tx = new_api(dev);\n" + tail);
    put("driver/d.c", "int d_probe(struct device *dev)\n{\n\treturn old_api(dev, 3);\n}\n");
    ctx.old_src = p / "old";
    ctx.new_src = p / "new";
    ctx.tree = p / "driver";
    ctx.original_tree = p / "driver";
    ctx.scratch = p;
    ctx.kb_path = p / "no-kb.json";
  }
  std::string call(const std::string& tool, const nlohmann::json& args, propose::SiteIndexCache& sites,
                   std::function<std::string(const std::string&)> build = nullptr) {
    static const nlohmann::json no_changes;
    propose::ToolEnv env{ctx, editable, no_changes, sites, std::move(build)};
    return propose::run_tool({"id", tool, args.dump()}, env);
  }
};

} // namespace

TEST(LlmTools, KernelHistoryShowsHowTheKernelsDriversChangedASymbol) {
  Trees t;
  propose::SiteIndexCache sites;
  auto h = t.call("kernel_history", {{"symbol", "old_api"}}, sites);
  EXPECT_NE(h.find("--- drivers/a/a.c"), std::string::npos) << h;
  EXPECT_NE(h.find("-\tx = old_api(dev, 1);"), std::string::npos) << h;
  EXPECT_NE(h.find("+\tx = new_api(dev);"), std::string::npos) << h;
  EXPECT_NE(h.find("--- drivers/b/b.c"), std::string::npos) << h;
  // A left-out path (a benchmark case's own answer) is never read.
  t.ctx.leave_out = {"drivers/a"};
  propose::SiteIndexCache fresh;
  h = t.call("kernel_history", {{"symbol", "old_api"}}, fresh);
  EXPECT_EQ(h.find("drivers/a/a.c"), std::string::npos) << h;
  EXPECT_NE(h.find("drivers/b/b.c"), std::string::npos) << h;
  EXPECT_NE(t.call("kernel_history", {{"symbol", "a_other"}}, fresh).find("no driver of the kernel changed"), std::string::npos);
  EXPECT_NE(t.call("kernel_history", {{"symbol", "../x"}}, fresh).find("error"), std::string::npos);
  t.ctx.old_src.clear();
  EXPECT_NE(t.call("kernel_history", {{"symbol", "old_api"}}, fresh).find("no older kernel source"), std::string::npos);
}

TEST(LlmTools, TheApiChangeComesFromBothKernelsHeaders) {
  Trees t;
  propose::SiteIndexCache sites;
  auto a = t.call("api_change", {{"symbol", "old_api"}}, sites);
  EXPECT_NE(a.find("int old_api(struct device *dev, int n);"), std::string::npos) << a;
  EXPECT_NE(a.find("(not declared in its headers)"), std::string::npos) << a;
  // Declarations with a plain return type and calls with arguments are found (grep -w would not).
  auto d = t.call("kernel_declaration", {{"symbol", "new_api"}}, sites);
  EXPECT_NE(d.find("include/linux/x.h:1:int new_api(struct device *dev);"), std::string::npos) << d;
  auto callers = t.call("kernel_callers", {{"symbol", "new_api"}}, sites);
  EXPECT_NE(callers.find("drivers/a/a.c:7:\tx = new_api(dev);"), std::string::npos) << callers;
  EXPECT_NE(t.call("kernel_callers", {{"symbol", "new_ap"}}, sites).find("nothing found"), std::string::npos);
  // With apidiff's entries (port --api-changes), those.
  nlohmann::json changes =
      nlohmann::json::array({{{"diagnostic", {{"file", "d.c"}}},
                              {"changes", {{{"symbol", "old_api"}, {"kind", "renamed"}, {"new_name", "new_api"}}}}}});
  propose::ToolEnv env{t.ctx, t.editable, changes, sites, nullptr};
  a = propose::run_tool({"id", "api_change", R"({"symbol":"old_api"})"}, env);
  EXPECT_NE(a.find("apidiff"), std::string::npos) << a;
  EXPECT_NE(a.find("new_api"), std::string::npos) << a;
}

TEST(LlmTools, KbRewritesAreReadFromTheCompatKb) {
  Trees t;
  propose::SiteIndexCache sites;
  EXPECT_NE(t.call("kb_rewrites", {{"symbol", "old_api"}}, sites).find("no compat KB"), std::string::npos);
  propose::Kb kb;
  propose::KbEntry e;
  e.id = "kb-0000000000000001";
  e.boundary = "6.4.0";
  e.change = {"call", "old_api ( $0 , $1 )", "new_api ( $0 )", {"old_api", "new_api"}};
  e.provenance = {"foo-dkms", "foo-dkms_1.0_all.deb", "foo.c", 10};
  kb.entries.push_back(e);
  t.ctx.kb_path = t.dir->path() / "kb.json";
  ASSERT_TRUE(propose::save_kb(kb, t.ctx.kb_path));
  auto r = t.call("kb_rewrites", {{"symbol", "old_api"}}, sites);
  EXPECT_NE(r.find("`old_api ( $0 , $1 )` -> `new_api ( $0 )`"), std::string::npos) << r;
  EXPECT_NE(r.find("in 1 package(s)"), std::string::npos) << r;
  t.ctx.kb_leave_out = {"foo-dkms"}; // a benchmark case's own package
  EXPECT_NE(t.call("kb_rewrites", {{"symbol", "old_api"}}, sites).find("no KB entry"), std::string::npos);
}

TEST(LlmTools, BuildingIsOfferedOnlyWhenTheLoopCanBuild) {
  Trees t;
  propose::SiteIndexCache sites;
  auto names = [](const std::vector<llm::Tool>& tools) {
    std::set<std::string> s;
    for (const auto& x : tools) s.insert(x.name);
    return s;
  };
  EXPECT_FALSE(names(propose::agent_tools(false)).count("try_build"));
  EXPECT_TRUE(names(propose::agent_tools(true)).count("try_build"));
  EXPECT_NE(t.call("try_build", {{"edits", "x"}}, sites).find("not available"), std::string::npos);
  EXPECT_EQ(t.call("try_build", {{"edits", "x"}}, sites, [](const std::string& s) { return "built " + s; }), "built x");
  EXPECT_NE(t.call("nope", nlohmann::json::object(), sites).find("no tool nope"), std::string::npos);
}
