// store-kb (KB entries replayed by signature, leave-out, data-only entries), checkpoints and
// explain's counterfactual replays with a fake build.

#include "autodriver/loop/replay.hpp"
#include "autodriver/propose/proposer.hpp"
#include "autodriver/store/explain.hpp"
#include "autodriver/store/kb.hpp"
#include "autodriver/store/run_store.hpp"
#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  util::TempDir dir = util::TempDir::create(util::scratch_root(), "store-kb-test-").value();
  Fixture() { fs::create_directories(tree()); }
  fs::path db() const { return dir.path() / "runs.sqlite"; }
  fs::path tree() const { return dir.path() / "tree"; }
  store::RunStore open() {
    auto st = store::RunStore::open(db());
    EXPECT_TRUE(st) << (st ? "" : st.error().message);
    return std::move(*st);
  }
};

core::Diagnostic error(const std::string& file, int line, core::DiagKind kind, const std::string& msg) {
  core::Diagnostic d;
  d.file = file;
  d.line = line;
  d.kind = kind;
  d.message = msg;
  return d;
}

const std::string k_smpl = "@@\nexpression E0, E1;\n@@\n- class_create(E0, E1)\n+ class_create(E1)\n";

store::KbEntry entry(const core::Diagnostic& solved, nlohmann::json edit, nlohmann::json evidence = nlohmann::json::object()) {
  store::KbEntry e;
  e.signature = store::diagnostic_signature(core::to_json(solved));
  e.change_id = "call:class_create";
  e.label = "arguments-changed";
  e.title = "class_create() lost an argument";
  e.proposer = "target-api";
  edit["change_id"] = e.change_id;
  edit["proposer"] = e.proposer;
  edit["symbols"] = {"class_create"};
  e.edit = edit;
  e.evidence = evidence;
  return e;
}

std::vector<propose::Edit> propose_with(const fs::path& store, const std::vector<core::Diagnostic>& diags, const fs::path& tree,
                                        const std::string& case_id = "", std::vector<std::string> leave_out = {}) {
  propose::PortContext ctx;
  ctx.store = store;
  ctx.tree = tree;
  ctx.case_id = case_id;
  ctx.leave_out = std::move(leave_out);
  return propose::make_store_kb()->propose(diags, ctx);
}

const auto k_too_many = error("drva.c", 9, core::DiagKind::too_many_arguments, "too many arguments to function 'class_create'");

} // namespace

TEST(StoreKbSignature, IndependentOfPathsAndPositions) {
  auto a = error("drva.c", 9, core::DiagKind::too_many_arguments, "too many arguments to function \u2018class_create\u2019");
  auto b = error("sub/bravo.c", 120, core::DiagKind::too_many_arguments, "too many  arguments to function 'class_create'");
  EXPECT_EQ(store::diagnostic_signature(core::to_json(a)), store::diagnostic_signature(core::to_json(b)));
  auto c = error("x.c", 1, core::DiagKind::other, "conflicting types for 'f'; see /usr/src/linux/include/linux/f.h:42:3");
  EXPECT_EQ(store::diagnostic_signature(core::to_json(c)), "other: conflicting types for 'f'; see f.h");
  auto other = error("drva.c", 9, core::DiagKind::too_many_arguments, "too many arguments to function 'class_destroy'");
  EXPECT_NE(store::diagnostic_signature(core::to_json(a)), store::diagnostic_signature(core::to_json(other)));
}

TEST(StoreKbProposer, ReplaysTheRecordedEditOfTheSameSignatureFirst) {
  Fixture f;
  {
    auto st = f.open();
    nlohmann::json call = {{"from", "class_create"}, {"arity", 2}, {"to", "class_create"}, {"args", {"$1"}}};
    ASSERT_TRUE(store::add_kb_entry(
        st, entry(k_too_many,
                  {{"smpl", k_smpl}, {"call", call}, {"renames", nlohmann::json::array({nlohmann::json::array({"a", "b"})})}})));
  }
  // Another driver, another file and line: the same signature.
  auto other = error("bravo.c", 15, core::DiagKind::too_many_arguments, "too many arguments to function 'class_create'");
  auto edits = propose_with(f.db(), {other}, f.tree());
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].proposer, "store-kb");
  EXPECT_EQ(edits[0].change_id, "call:class_create");
  EXPECT_EQ(edits[0].smpl, k_smpl);
  ASSERT_TRUE(edits[0].call);
  EXPECT_EQ(edits[0].call->arity, 2u);
  EXPECT_EQ(edits[0].call->args, std::vector<std::string>{"$1"});
  ASSERT_EQ(edits[0].renames.size(), 1u);
  EXPECT_EQ(edits[0].symbols, std::vector<std::string>{"class_create"});
  EXPECT_LT(edits[0].rank, 0) << "KB replays sort before every proposer's best (rank 0)";
  // Nothing for another diagnostic, nothing without a store.
  EXPECT_TRUE(propose_with(f.db(), {error("a.c", 1, core::DiagKind::other, "'x' undeclared")}, f.tree()).empty());
  EXPECT_TRUE(propose_with("", {other}, f.tree()).empty());
}

TEST(StoreKbProposer, OneAlternativePerEditWithEveryEntryAsSupport) {
  Fixture f;
  {
    auto st = f.open();
    auto e1 = entry(k_too_many, {{"smpl", k_smpl}});
    e1.patch = "patch of drva";
    auto e2 = entry(k_too_many, {{"smpl", k_smpl}});
    e2.patch = "patch of bravo";
    ASSERT_TRUE(store::add_kb_entry(st, e1));
    ASSERT_TRUE(store::add_kb_entry(st, e2));
  }
  auto edits = propose_with(f.db(), {k_too_many}, f.tree());
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].support, 2);
}

TEST(StoreKbProposer, SupportCountsDriversNotRuns) {
  Fixture f;
  {
    auto st = f.open();
    // Three runs of one driver and one run of another: two sites of evidence.
    int run = 0;
    for (const char* tree : {"/home/a/drva", "/home/a/drva", "/home/a/drva", "/home/b/bravo"}) {
      auto e = entry(k_too_many, {{"smpl", k_smpl}});
      e.patch = "patch of run " + std::to_string(++run); // distinct entries, not one deduplicated
      e.evidence = {{"tree", tree}, {"errors_before", 1}, {"errors_after", 0}};
      ASSERT_TRUE(store::add_kb_entry(st, e));
    }
  }
  auto edits = propose_with(f.db(), {k_too_many}, f.tree());
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].support, 2);
}

TEST(StoreKbProposer, LeavesOutEntriesOfTheSameCaseFilesOrRuns) {
  Fixture f;
  {
    auto st = f.open();
    auto run = st.begin_run({"bench", nlohmann::json::object(), "/cases/c1/before", "c1", std::nullopt});
    ASSERT_TRUE(run);
    auto by_run = entry(k_too_many, {{"smpl", k_smpl}});
    by_run.run_id = *run; // recorded by a run of case c1
    ASSERT_TRUE(store::add_kb_entry(st, by_run));
    auto by_case = entry(k_too_many, {{"smpl", k_smpl + "\n"}}, {{"case", "c2"}});
    by_case.change_id = "call:class_create/b"; // three changes: at most two alternatives per change
    ASSERT_TRUE(store::add_kb_entry(st, by_case));
    auto by_file = entry(k_too_many, {{"smpl", k_smpl + "\n\n"}}, {{"unit_files", {"drivers/char/drva.c"}}});
    by_file.change_id = "call:class_create/c";
    ASSERT_TRUE(store::add_kb_entry(st, by_file));
  }
  EXPECT_EQ(propose_with(f.db(), {k_too_many}, f.tree()).size(), 3u);
  // Bench case c1 never gets the entry of its own run; c2 not its own; the drva files not theirs.
  auto c1 = propose_with(f.db(), {k_too_many}, f.tree(), "c1");
  ASSERT_EQ(c1.size(), 2u);
  for (const auto& e : c1) EXPECT_NE(e.smpl, k_smpl);
  EXPECT_EQ(propose_with(f.db(), {k_too_many}, f.tree(), "c2").size(), 2u);
  EXPECT_EQ(propose_with(f.db(), {k_too_many}, f.tree(), "c3", {"drivers/char/drva.c"}).size(), 2u);
  EXPECT_EQ(propose_with(f.db(), {k_too_many}, f.tree(), "c1", {"drivers/char/drva.c"}).size(), 1u);
}

TEST(StoreKbProposer, IncludesAreReanchoredAndDriverLineEditsAreNotReplayed) {
  Fixture f;
  ASSERT_TRUE(util::write_file(f.tree() / "b.c", "#include <linux/module.h>\n#include <linux/fs.h>\n\nint x;\n"));
  auto implicit = error("b.c", 4, core::DiagKind::implicit_function_declaration, "implicit declaration of function 'kmalloc'");
  {
    auto st = f.open();
    // Recorded in another driver at its line 7.
    nlohmann::json te = {{{"file", "a.c"}, {"line", 7}, {"remove", 0}, {"text", "#include <linux/slab.h>\n"}}};
    auto inc = entry(implicit, {{"text_edits", te}});
    inc.change_id = "header:linux/slab.h";
    ASSERT_TRUE(store::add_kb_entry(st, inc));
    // A line edit of another driver's own function cannot be replayed.
    nlohmann::json body = {{{"file", "a.c"}, {"line", 20}, {"remove", 1}, {"text", "static void a_remove(struct device *d)\n"}}};
    auto local = entry(implicit, {{"text_edits", body}});
    local.change_id = "callback:remove";
    ASSERT_TRUE(store::add_kb_entry(st, local));
  }
  auto edits = propose_with(f.db(), {implicit}, f.tree());
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_EQ(edits[0].change_id, "header:linux/slab.h");
  ASSERT_EQ(edits[0].text_edits.size(), 1u);
  EXPECT_EQ(edits[0].text_edits[0].file, "b.c");
  EXPECT_EQ(edits[0].text_edits[0].line, 3) << "after the last #include of the diagnostic's file";
  EXPECT_EQ(edits[0].text_edits[0].remove, 0);
  // Already included: nothing to replay.
  ASSERT_TRUE(util::write_file(f.tree() / "b.c", "#include <linux/slab.h>\nint x;\n"));
  EXPECT_TRUE(propose_with(f.db(), {implicit}, f.tree()).empty());
}

TEST(StoreKbData, ScriptRulesAreRefusedOnImportAndNeverReplayed) {
  Fixture f;
  std::string script = "@script:python@\n@@\nimport os\nos.system('touch /tmp/pwned')\n";
  EXPECT_FALSE(store::kb_edit_is_data({{"smpl", script}}));
  EXPECT_FALSE(store::kb_edit_is_data({{"smpl", "@ initialize : ocaml @\n@@\n"}}));
  EXPECT_FALSE(store::kb_edit_is_data({{"smpl", "using \"other.iso\"\n@@\n@@\n- f()\n"}}));
  EXPECT_TRUE(store::kb_edit_is_data({{"smpl", k_smpl}}));
  auto st = f.open();
  nlohmann::json bundle = {{"schema", "autodriver.kb-bundle"},
                           {"schema_version", 1},
                           {"entries",
                            {{{"signature", store::diagnostic_signature(core::to_json(k_too_many))},
                              {"change_id", "call:class_create"},
                              {"edit", {{"smpl", script}}}}}}};
  auto r = store::import_kb_bundle(st, bundle, "evil.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("script"), std::string::npos) << r.error().message;
  // Written to the store some other way, it is still not replayed.
  ASSERT_TRUE(store::add_kb_entry(st, entry(k_too_many, {{"smpl", script}})));
  EXPECT_TRUE(propose_with(f.db(), {k_too_many}, f.tree()).empty());
}

TEST(StoreKbData, ImportedEntriesAreRetrievable) {
  Fixture f;
  auto st = f.open();
  auto e = entry(k_too_many, {{"smpl", k_smpl}});
  auto bundle = store::export_kb_bundle({e});
  auto added = store::import_kb_bundle(st, bundle, "team.json");
  ASSERT_TRUE(added);
  EXPECT_EQ(*added, 1);
  auto edits = propose_with(f.db(), {k_too_many}, f.tree());
  ASSERT_EQ(edits.size(), 1u);
  EXPECT_NE(edits[0].description.find("import:team.json"), std::string::npos) << edits[0].description;
}

namespace {

/// A recorded run of `tree` whose accepted edit (step 4) introduced `new_e`.
std::int64_t regression_run(store::RunStore& st, const fs::path& tree, const nlohmann::json& old_e, const nlohmann::json& new_e) {
  auto id = st.begin_run({"port", {{"tree", tree.string()}, {"to", "6.12"}}, tree.string(), "", std::nullopt});
  EXPECT_TRUE(id);
  std::vector<nlohmann::json> steps = {
      {{"step", "build-target"}, {"t_ms", 1}, {"ok", false}, {"errors", {old_e}}},
      {{"step", "propose"}, {"t_ms", 2}, {"proposer", "store-kb"}, {"edits", 1}, {"ms", 1}},
      {{"step", "try"},
       {"t_ms", 3},
       {"change", "call:class_create"},
       {"proposer", "store-kb"},
       {"errors_before", 1},
       {"errors_after", 1}},
      {{"step", "accept"}, {"t_ms", 4}, {"change", "call:class_create"}, {"proposer", "store-kb"}, {"title", "t"}},
      {{"step", "build-target"}, {"t_ms", 5}, {"iteration", 1}, {"ok", false}, {"errors", {new_e}}}};
  for (const auto& s : steps) EXPECT_TRUE(st.add_loop_step(*id, s));
  auto h = st.put_blob("int f(void) { return bogus(); }\n");
  EXPECT_TRUE(h);
  nlohmann::json acc = {{"edit", nlohmann::json::object()}, {"files", {{"d.c", *h}}}};
  EXPECT_TRUE(st.add_artifact(*id, "accepted/001.json", "accepted", acc.dump()));
  EXPECT_TRUE(st.end_run(*id, store::RunStatus::failed, {{"outcome", "no-progress"}}));
  return *id;
}

/// A fake kbuild: the error `sig` whenever the tree's d.c calls bogus().
loop::ReplayBuildFn fake_build(const std::string& sig, int& builds) {
  return [sig, &builds](const fs::path& tree) -> util::Expected<std::set<std::string>> {
    ++builds;
    auto text = util::read_file(tree / "d.c");
    if (!text) return util::unexpected(text.error());
    if (text->find("bogus") != std::string::npos) return std::set<std::string>{sig};
    return std::set<std::string>{};
  };
}

} // namespace

TEST(StoreReplay, CheckpointsRebuildTheTreeAfterEachAcceptedEdit) {
  Fixture f;
  ASSERT_TRUE(util::write_file(f.tree() / "d.c", "int f(void) { return 0; }\n"));
  auto st = f.open();
  auto id = regression_run(st, f.tree(), {{"kind", "other"}, {"message", "a"}}, {{"kind", "other"}, {"message", "b"}});
  fs::path copy = f.dir.path() / "copy";
  ASSERT_TRUE(util::copy_tree(f.tree(), copy, util::SkipBuildProducts::yes));
  int applied = 0;
  auto before = loop::write_checkpoint(st, id, 3, copy, applied);
  ASSERT_TRUE(before);
  EXPECT_EQ(applied, 0);
  EXPECT_EQ(*util::read_file(copy / "d.c"), "int f(void) { return 0; }\n");
  auto after = loop::write_checkpoint(st, id, 4, copy, applied);
  ASSERT_TRUE(after);
  EXPECT_EQ(*after, 4);
  EXPECT_EQ(applied, 1);
  EXPECT_NE(util::read_file(copy / "d.c")->find("bogus"), std::string::npos);
}

TEST(StoreReplay, RegressionConfirmedWhenTheErrorComesWithTheEdit) {
  Fixture f;
  ASSERT_TRUE(util::write_file(f.tree() / "d.c", "int f(void) { return 0; }\n"));
  auto st = f.open();
  nlohmann::json old_e = {
      {"file", "d.c"}, {"line", 1}, {"kind", "too-many-arguments"}, {"message", "too many arguments to function 'class_create'"}};
  nlohmann::json new_e = {{"file", "d.c"},
                          {"line", 1},
                          {"kind", "implicit-function-declaration"},
                          {"message", "implicit declaration of function 'bogus'"}};
  auto id = regression_run(st, f.tree(), old_e, new_e);
  auto run = st.run(id).value().value();
  auto ex = store::explain_run(run, st.steps(id).value(), nullptr, &st);
  ASSERT_EQ(ex.doc["attribute"].size(), 1u);
  ASSERT_EQ(ex.doc["attribute"][0]["cause"], "proposer-regression");
  int builds = 0;
  loop::replay_attributions(st, run, ex.doc, {}, fake_build(store::diagnostic_signature(new_e), builds));
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(ex.doc["replays"], 1);
  EXPECT_EQ(ex.doc["attribute"][0]["replay"]["result"], "confirmed") << ex.doc.dump(2);
  EXPECT_EQ(ex.doc["attribute"][0]["replay"]["builds"][0]["has_error"], false);
  EXPECT_EQ(ex.doc["attribute"][0]["replay"]["builds"][1]["has_error"], true);
  EXPECT_NE(store::render_explanation(ex.doc).find("replay: confirmed"), std::string::npos);
  // The edit is innocent when the error is there before it too.
  auto ex2 = store::explain_run(run, st.steps(id).value(), nullptr, &st);
  std::string sig = store::diagnostic_signature(new_e);
  loop::replay_attributions(st, run, ex2.doc, {},
                            [&](const fs::path&) -> util::Expected<std::set<std::string>> { return std::set<std::string>{sig}; });
  EXPECT_EQ(ex2.doc["attribute"][0]["replay"]["result"], "refuted");
  // Bounded: no replay at all with max_replays 0, and nothing when the tree is gone.
  auto ex3 = store::explain_run(run, st.steps(id).value(), nullptr, &st);
  loop::ReplayOptions none;
  none.max_replays = 0;
  builds = 0;
  loop::replay_attributions(st, run, ex3.doc, none, fake_build(sig, builds));
  EXPECT_EQ(builds, 0);
  EXPECT_EQ(ex3.doc["attribute"][0]["replay"]["result"], "skipped");
  fs::remove_all(f.tree());
  auto ex4 = store::explain_run(run, st.steps(id).value(), nullptr, &st);
  loop::replay_attributions(st, run, ex4.doc, {}, fake_build(sig, builds));
  EXPECT_EQ(builds, 0);
  EXPECT_EQ(ex4.doc["attribute"][0]["replay"]["result"], "skipped");
}

TEST(StoreKbExplain, AnEntryStoreKbAlreadyTriedIsNotSuggestedAgain) {
  Fixture f;
  auto st = f.open();
  auto d = core::to_json(k_too_many);
  ASSERT_TRUE(store::add_kb_entry(st, entry(k_too_many, {{"smpl", k_smpl}})));
  auto other = entry(k_too_many, {{"smpl", k_smpl + "\n"}});
  other.change_id = "call:class_create/other";
  ASSERT_TRUE(store::add_kb_entry(st, other));
  auto id = st.begin_run({"port", {{"to", "6.12"}}, "/tmp/drv", "", std::nullopt});
  ASSERT_TRUE(id);
  for (const auto& s :
       std::vector<nlohmann::json>{{{"step", "build-target"}, {"t_ms", 1}, {"ok", false}, {"errors", {d}}},
                                   {{"step", "propose"}, {"t_ms", 2}, {"proposer", "store-kb"}, {"edits", 1}, {"ms", 1}},
                                   {{"step", "try"},
                                    {"t_ms", 3},
                                    {"change", "call:class_create"},
                                    {"proposer", "store-kb"},
                                    {"errors_before", 1},
                                    {"errors_after", 1}},
                                   {{"step", "reject"}, {"t_ms", 4}, {"change", "call:class_create"}}})
    ASSERT_TRUE(st.add_loop_step(*id, s));
  ASSERT_TRUE(st.end_run(*id, store::RunStatus::failed, {{"outcome", "no-progress"}}));
  auto ex = store::explain_run(st.run(*id).value().value(), st.steps(*id).value(), nullptr, &st);
  std::vector<std::string> suggested;
  for (const auto& r : ex.doc["recover"])
    if (r.value("action", "") == "kb") suggested.push_back(r.value("change_id", ""));
  EXPECT_EQ(suggested, std::vector<std::string>{"call:class_create/other"}) << ex.doc.dump(2);
}
