// Run store: schema and migrations, step recording, concurrency (processes and threads),
// crash safety (kill -9 mid-run), explain on recorded runs with known causes, KB round trip.

#include "autodriver/store/explain.hpp"
#include "autodriver/store/kb.hpp"
#include "autodriver/store/run_store.hpp"
#include "autodriver/store/sha256.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>

#include <csignal>
#include <sqlite3.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace autodriver;
namespace fs = std::filesystem;

namespace {

struct StoreDir {
  util::TempDir dir = util::TempDir::create(util::scratch_root(), "store-test-").value();
  fs::path db() const { return dir.path() / "runs.sqlite"; }
};

store::RunStore open_ok(const fs::path& p) {
  auto st = store::RunStore::open(p);
  EXPECT_TRUE(st) << (st ? "" : st.error().message);
  return std::move(*st);
}

void raw_exec(const fs::path& p, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

// The steps the port loop reports for a run (shape of run_port's step lambda).
nlohmann::json diag(const std::string& file, int line, const std::string& msg) {
  return {{"file", file}, {"line", line}, {"kind", "other"}, {"message", msg}};
}

std::int64_t record(store::RunStore& st, const std::vector<nlohmann::json>& steps, store::RunStatus status,
                    const nlohmann::json& summary) {
  auto id = st.begin_run({"port", {{"budget_s", 60}}, "/tmp/drv", "", std::nullopt});
  EXPECT_TRUE(id);
  for (const auto& s : steps) EXPECT_TRUE(st.add_loop_step(*id, s));
  EXPECT_TRUE(st.end_run(*id, status, summary));
  return *id;
}

nlohmann::json explain(store::RunStore& st, std::int64_t id, const nlohmann::json& verdict = nullptr) {
  auto run = st.run(id);
  auto steps = st.steps(id);
  EXPECT_TRUE(run && *run && steps);
  return store::explain_run(**run, *steps, verdict, &st).doc;
}

} // namespace

TEST(StoreSha256, KnownVectors) {
  EXPECT_EQ(store::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(store::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(store::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(store::sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(StoreSchema, NewFileIsCurrentVersionInWalMode) {
  StoreDir d;
  auto st = open_ok(d.db());
  EXPECT_EQ(st.schema_version(), store::k_store_schema_version);
  auto q = st.db().prepare("PRAGMA journal_mode");
  ASSERT_TRUE(q);
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->text_col(0), "wal");
}

TEST(StoreSchema, MigratesAVersion1File) {
  StoreDir d;
  // A store as version 1 wrote it (tables and one finished run, no kb_entries).
  raw_exec(d.db(), R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL);
INSERT INTO schema_version VALUES(1);
CREATE TABLE runs(id INTEGER PRIMARY KEY AUTOINCREMENT, parent_run INTEGER REFERENCES runs(id), command TEXT NOT NULL,
  args TEXT NOT NULL DEFAULT '{}', tree TEXT NOT NULL DEFAULT '', case_id TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL CHECK(status IN ('running','ok','failed','interrupted','error')), started_at TEXT NOT NULL,
  ended_at TEXT, host TEXT NOT NULL, pid INTEGER NOT NULL, pid_start INTEGER NOT NULL DEFAULT 0, summary TEXT);
CREATE TABLE steps(run_id INTEGER NOT NULL REFERENCES runs(id), seq INTEGER NOT NULL, kind TEXT NOT NULL,
  component TEXT NOT NULL DEFAULT '', input TEXT, output TEXT, diagnostics TEXT, started_at TEXT NOT NULL,
  elapsed_ms INTEGER NOT NULL DEFAULT 0, tokens_in INTEGER NOT NULL DEFAULT 0, tokens_out INTEGER NOT NULL DEFAULT 0,
  argv TEXT, PRIMARY KEY(run_id, seq));
CREATE TABLE blobs(hash TEXT PRIMARY KEY, size INTEGER NOT NULL, content BLOB NOT NULL);
CREATE TABLE artifacts(run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, kind TEXT NOT NULL,
  hash TEXT NOT NULL REFERENCES blobs(hash), PRIMARY KEY(run_id, name));
INSERT INTO runs(command, status, started_at, ended_at, host, pid, summary)
  VALUES('port', 'ok', '2025-01-01T00:00:00.000Z', '2025-01-01T00:01:00.000Z', 'old-host', 1, '{"outcome":"ported"}');
INSERT INTO steps(run_id, seq, kind, component, started_at, elapsed_ms) VALUES(1, 1, 'build-target', 'kbuild', '2025-01-01T00:00:01.000Z', 900);
)sql");
  auto st = open_ok(d.db());
  EXPECT_EQ(st.schema_version(), 2);
  auto run = st.run(1);
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->status, "ok");
  EXPECT_EQ((*run)->summary.value("outcome", ""), "ported");
  auto steps = st.steps(1);
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].elapsed_ms, 900);
  // The v2 table works on the migrated file.
  store::KbEntry e;
  e.signature = "other: x";
  e.change_id = "call:x";
  auto added = store::add_kb_entry(st, e);
  ASSERT_TRUE(added);
  EXPECT_TRUE(*added);
}

TEST(StoreSchema, RefusesANewerVersionWithOneLine) {
  StoreDir d;
  { auto st = open_ok(d.db()); }
  raw_exec(d.db(), "UPDATE schema_version SET version = 99");
  auto st = store::RunStore::open(d.db());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, util::ErrorKind::config);
  EXPECT_NE(st.error().message.find("schema version 99 is newer"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find(d.db().string()), std::string::npos);
  EXPECT_EQ(st.error().message.find('\n'), std::string::npos);
}

TEST(StoreSteps, LoopStepsKeepKindComponentDiagnosticsAndTiming) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto id = st.begin_run({"port", {{"to", "6.12"}}, "/tmp/drv", "", std::nullopt});
  ASSERT_TRUE(id);
  ASSERT_TRUE(st.add_loop_step(*id, {{"step", "build-target"},
                                     {"t_ms", 1500},
                                     {"kernel", "6.12"},
                                     {"ok", false},
                                     {"errors", {diag("a.c", 3, "too many arguments to function 'class_create'")}}}));
  ASSERT_TRUE(st.add_loop_step(
      *id, {{"step", "propose"}, {"t_ms", 1700}, {"iteration", 1}, {"proposer", "learned-rewrite"}, {"edits", 2}, {"ms", 150}}));
  ASSERT_TRUE(st.add_loop_step(*id, {{"step", "try"},
                                     {"t_ms", 2900},
                                     {"change", "call:class_create"},
                                     {"errors_before", 1},
                                     {"errors_after", 0},
                                     {"proposer", "learned-rewrite"}}));
  auto steps = st.steps(*id);
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 3u);
  EXPECT_EQ((*steps)[0].seq, 1);
  EXPECT_EQ((*steps)[0].kind, "build-target");
  EXPECT_EQ((*steps)[0].component, "kbuild");
  EXPECT_EQ((*steps)[0].elapsed_ms, 1500);
  EXPECT_EQ((*steps)[0].diagnostics.size(), 1u);
  EXPECT_EQ((*steps)[0].input.value("kernel", ""), "6.12");
  EXPECT_EQ((*steps)[0].output.value("ok", true), false);
  EXPECT_EQ((*steps)[1].component, "learned-rewrite");
  EXPECT_EQ((*steps)[1].elapsed_ms, 150);
  EXPECT_EQ((*steps)[1].output.value("edits", 0), 2);
  EXPECT_EQ((*steps)[2].elapsed_ms, 1200);
  EXPECT_EQ((*steps)[2].output.value("errors_after", -1), 0);
  auto run = st.run(*id);
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->status, "running"); // this process is alive
  EXPECT_EQ((*run)->steps, 3);
}

TEST(StoreBlobs, ContentAddressedAndDeduplicated) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto id = st.begin_run({"port", {}, "", "", std::nullopt});
  ASSERT_TRUE(id);
  ASSERT_TRUE(st.add_artifact(*id, "patches/0001.patch", "patch", "--- a\n+++ b\n"));
  ASSERT_TRUE(st.add_artifact(*id, "patches/copy.patch", "patch", "--- a\n+++ b\n"));
  auto arts = st.artifacts(*id);
  ASSERT_TRUE(arts);
  ASSERT_EQ(arts->size(), 2u);
  EXPECT_EQ((*arts)[0].hash, store::sha256_hex("--- a\n+++ b\n"));
  EXPECT_EQ((*arts)[0].hash, (*arts)[1].hash);
  auto q = st.db().prepare("SELECT COUNT(*) FROM blobs");
  ASSERT_TRUE(q && *q->step());
  EXPECT_EQ(q->int_col(0), 1);
  auto b = st.blob((*arts)[0].hash);
  ASSERT_TRUE(b && *b);
  EXPECT_EQ(**b, "--- a\n+++ b\n");
}

// Several processes and several threads per process write one store at once: no lost rows,
// no duplicate step numbers, integrity_check ok.
TEST(StoreConcurrency, ProcessesAndThreadsWriteOneStore) {
  StoreDir d;
  { auto st = open_ok(d.db()); }
  constexpr int k_procs = 4, k_threads = 3, k_runs = 8, k_steps = 6;
  auto writer = [&](int tag) -> bool {
    auto st = store::RunStore::open(d.db());
    if (!st) return false;
    for (int r = 0; r < k_runs; ++r) {
      auto id = st->begin_run({"bench", {{"tag", tag}}, "", "case-" + std::to_string(tag), std::nullopt});
      if (!id) return false;
      for (int s = 0; s < k_steps; ++s)
        if (!st->add_loop_step(*id, {{"step", "try"}, {"t_ms", s * 10}, {"change", "c"}})) return false;
      if (!st->add_artifact(*id, "log", "log", "shared log text")) return false;
      if (!st->end_run(*id, store::RunStatus::ok, {{"outcome", "ported"}})) return false;
    }
    return true;
  };
  std::vector<pid_t> kids;
  for (int p = 0; p < k_procs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::vector<std::thread> ts;
      std::atomic<bool> ok{true};
      for (int t = 0; t < k_threads; ++t)
        ts.emplace_back([&, t] {
          if (!writer(p * 10 + t)) ok = false;
        });
      for (auto& t : ts) t.join();
      _exit(ok ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (auto pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer process failed";
  }
  auto st = open_ok(d.db());
  auto ic = st.integrity_check();
  ASSERT_TRUE(ic);
  EXPECT_EQ(*ic, "ok");
  auto count = [&](const char* sql) {
    auto q = st.db().prepare(sql);
    EXPECT_TRUE(q && *q->step());
    return q->int_col(0);
  };
  EXPECT_EQ(count("SELECT COUNT(*) FROM runs WHERE status = 'ok'"), k_procs * k_threads * k_runs);
  EXPECT_EQ(count("SELECT COUNT(*) FROM steps"), k_procs * k_threads * k_runs * k_steps);
  // seq is 1..k_steps in every run.
  EXPECT_EQ(count("SELECT COUNT(*) FROM (SELECT run_id FROM steps GROUP BY run_id HAVING MIN(seq) = 1 AND MAX(seq) = 6 "
                  "AND COUNT(DISTINCT seq) = 6)"),
            k_procs * k_threads * k_runs);
  EXPECT_EQ(count("SELECT COUNT(*) FROM blobs"), 1);
}

// kill -9 while a run is writing steps: the store opens, integrity_check is ok, every step
// written before the kill is there, and the run reads `interrupted`.
TEST(StoreCrash, KillNineMidRunLeavesAConsistentInterruptedRun) {
  StoreDir d;
  { auto st = open_ok(d.db()); }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto st = store::RunStore::open(d.db());
    if (!st) _exit(1);
    auto id = st->begin_run({"port", {}, "/tmp/drv", "", std::nullopt});
    if (!id) _exit(1);
    for (int s = 0;; ++s) {
      if (!st->add_loop_step(*id, {{"step", "try"}, {"t_ms", s}, {"change", "c"}, {"blob", std::string(4096, 'x')}})) _exit(1);
      (void)st->put_blob(std::string(8192, static_cast<char>('a' + s % 26)) + std::to_string(s));
      if (s == 20) {
        std::int64_t v = *id;
        if (write(fds[1], &v, sizeof v) != sizeof v) _exit(1);
      }
    }
  }
  close(fds[1]);
  std::int64_t id = 0;
  ASSERT_EQ(read(fds[0], &id, sizeof id), static_cast<ssize_t>(sizeof id));
  close(fds[0]);
  usleep(50 * 1000); // let it be mid-write
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));

  auto st = open_ok(d.db());
  auto ic = st.integrity_check();
  ASSERT_TRUE(ic);
  EXPECT_EQ(*ic, "ok");
  auto run = st.run(id);
  ASSERT_TRUE(run && *run);
  EXPECT_EQ((*run)->status, "interrupted");
  EXPECT_GE((*run)->steps, 21);
  auto steps = st.steps(id);
  ASSERT_TRUE(steps);
  for (std::size_t i = 0; i < steps->size(); ++i) EXPECT_EQ((*steps)[i].seq, static_cast<std::int64_t>(i + 1));
  // The verdict is recorded, so other readers see it too.
  auto st2 = open_ok(d.db());
  store::RunFilter f;
  f.status = "interrupted";
  auto rows = st2.list_runs(f);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].id, id);
  auto q = st2.db().prepare("SELECT status FROM runs WHERE id = ?");
  ASSERT_TRUE(q);
  q->bind(1, id);
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->text_col(0), "interrupted");
}

TEST(StoreExplain, SuccessfulRunHasNothingToAttribute) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto id = record(st, {{{"step", "build-target"}, {"t_ms", 10}, {"ok", true}, {"errors", nlohmann::json::array()}}},
                   store::RunStatus::ok, {{"outcome", "already-builds"}});
  auto doc = explain(st, id);
  ASSERT_EQ(doc["attribute"].size(), 1u);
  EXPECT_EQ(doc["attribute"][0]["cause"], "none");
}

TEST(StoreExplain, ErrorNoAlternativeFixedIsAWrongMapping) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto e = diag("a.c", 10, "too many arguments to function 'class_create'");
  auto id = record(st,
                   {{{"step", "build-target"}, {"t_ms", 1000}, {"ok", false}, {"errors", {e}}},
                    {{"step", "propose"}, {"t_ms", 1100}, {"proposer", "learned-rewrite"}, {"edits", 2}, {"ms", 100}},
                    {{"step", "try"},
                     {"t_ms", 2000},
                     {"change", "call:class_create"},
                     {"rank", 0},
                     {"proposer", "learned-rewrite"},
                     {"errors_before", 1},
                     {"errors_after", 2}},
                    {{"step", "try"},
                     {"t_ms", 3000},
                     {"change", "call:class_create"},
                     {"rank", 1},
                     {"proposer", "learned-rewrite"},
                     {"errors_before", 1},
                     {"errors_after", 1}},
                    {{"step", "reject"}, {"t_ms", 3001}, {"change", "call:class_create"}}},
                   store::RunStatus::failed, {{"outcome", "no-progress"}});
  auto doc = explain(st, id);
  ASSERT_EQ(doc["attribute"].size(), 1u);
  EXPECT_EQ(doc["attribute"][0]["cause"], "wrong-mapping");
  EXPECT_EQ(doc["attribute"][0]["step"]["kind"], "reject");
  EXPECT_EQ(doc["attribute"][0]["evidence"]["tries"].size(), 2u);
  EXPECT_EQ(doc["detect"]["step"]["seq"], 5);
}

TEST(StoreExplain, ErrorNobodyProposedIsAMissingMapping) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto e = diag("a.c", 7, "implicit declaration of function 'foo_bar'");
  auto id = record(st,
                   {{{"step", "build-target"}, {"t_ms", 1000}, {"ok", false}, {"errors", {e}}},
                    {{"step", "propose"}, {"t_ms", 1100}, {"proposer", "learned-rewrite"}, {"edits", 0}, {"ms", 100}}},
                   store::RunStatus::failed, {{"outcome", "no-progress"}});
  auto doc = explain(st, id);
  ASSERT_EQ(doc["attribute"].size(), 1u);
  EXPECT_EQ(doc["attribute"][0]["cause"], "missing-mapping");
  EXPECT_EQ(doc["detect"]["step"]["seq"], 1);
}

TEST(StoreExplain, ErrorThatAppearedAfterAnAcceptIsThatEditsRegression) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto old_e = diag("a.c", 10, "'no_llseek' undeclared");
  auto new_e = diag("a.c", 12, "'struct file_operations' has no member named 'llseek_x'");
  auto id = record(st,
                   {{{"step", "build-target"}, {"t_ms", 1000}, {"ok", false}, {"errors", {old_e}}},
                    {{"step", "propose"}, {"t_ms", 1100}, {"proposer", "target-api"}, {"edits", 1}, {"ms", 100}},
                    {{"step", "try"},
                     {"t_ms", 2000},
                     {"change", "ident:no_llseek"},
                     {"proposer", "target-api"},
                     {"errors_before", 1},
                     {"errors_after", 1}},
                    {{"step", "accept"},
                     {"t_ms", 2001},
                     {"change", "ident:no_llseek"},
                     {"proposer", "target-api"},
                     {"title", "rename no_llseek"}},
                    {{"step", "build-target"}, {"t_ms", 2002}, {"iteration", 1}, {"ok", false}, {"errors", {new_e}}}},
                   store::RunStatus::failed, {{"outcome", "no-progress"}});
  auto doc = explain(st, id);
  ASSERT_EQ(doc["attribute"].size(), 1u);
  EXPECT_EQ(doc["attribute"][0]["cause"], "proposer-regression");
  EXPECT_EQ(doc["attribute"][0]["step"]["seq"], 4);
  EXPECT_EQ(doc["attribute"][0]["step"]["component"], "target-api");
  ASSERT_EQ(doc["recover"].size(), 1u);
  EXPECT_EQ(doc["recover"][0]["command"], fmt::format("autodriver rerun {} --from-step 0", id));
}

TEST(StoreExplain, IntegrityRejectionIsAttributedToTheEditNamedByTheViolation) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto id =
      record(st,
             {{{"step", "build-target"}, {"t_ms", 1000}, {"ok", false}, {"errors", {diag("a.c", 1, "x")}}},
              {{"step", "accept"}, {"t_ms", 2000}, {"change", "call:class_create"}, {"proposer", "learned-rewrite"}},
              {{"step", "accept"}, {"t_ms", 2001}, {"change", "member:struct i2c_driver.probe_new"}, {"proposer", "target-api"}},
              {{"step", "build-target"}, {"t_ms", 3000}, {"ok", true}, {"errors", nlohmann::json::array()}},
              {{"step", "integrity"}, {"t_ms", 3001}, {"ok", false}, {"violations", 1}}},
             store::RunStatus::failed, {{"outcome", "integrity-rejected"}});
  nlohmann::json verdict = {
      {"integrity",
       {{"ok", false},
        {"violations", {{{"rule", "removed-call"}, {"file", "a.c"}, {"line", 5}, {"detail", "call to class_create removed"}}}}}}};
  auto doc = explain(st, id, verdict);
  ASSERT_EQ(doc["attribute"].size(), 1u);
  EXPECT_EQ(doc["attribute"][0]["cause"], "integrity");
  EXPECT_EQ(doc["attribute"][0]["step"]["seq"], 2);
  EXPECT_EQ(doc["detect"]["step"]["kind"], "integrity");
}

TEST(StoreExplain, DriverNotBuildingOnItsOwnKernelIsTheInput) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto id = record(st, {{{"step", "build-from"}, {"t_ms", 1000}, {"ok", false}, {"errors", {diag("a.c", 1, "syntax error")}}}},
                   store::RunStatus::failed, {{"outcome", "from-fails"}});
  EXPECT_EQ(explain(st, id)["attribute"][0]["cause"], "input");
}

TEST(StoreExplain, DiagnosticsOfAnyShapeInTheStoreAreReadBackAsDiagnostics) {
  // A store written by an older version, or edited by hand: a step's diagnostics with wrong types.
  StoreDir d;
  auto st = open_ok(d.db());
  auto id = record(st, {{{"step", "build-target"}, {"t_ms", 1000}, {"ok", false}, {"errors", {diag("a.c", 1, "x")}}}},
                   store::RunStatus::failed, {{"outcome", "no-progress"}});
  raw_exec(d.db(), fmt::format(R"sql(UPDATE steps SET diagnostics = '[{{"file": 3, "line": "x", "message": ["m"]}}, 7,
    {{"message": "implicit declaration of function ''foo''", "kind": "implicit-function"}}]' WHERE run_id = {})sql",
                               id));
  auto steps = st.steps(id);
  ASSERT_TRUE(steps);
  ASSERT_EQ(steps->size(), 1u);
  const auto& ds = (*steps)[0].diagnostics;
  ASSERT_EQ(ds.size(), 3u);
  for (const auto& x : ds) {
    ASSERT_TRUE(x.is_object()) << x.dump();
    EXPECT_TRUE(x["file"].is_string() && x["message"].is_string() && x["line"].is_number()) << x.dump();
  }
  EXPECT_EQ(ds[2]["message"], "implicit declaration of function 'foo'");
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = explain(st, id));
  EXPECT_FALSE(doc["attribute"].empty());
}

TEST(StoreKb, ExportScrubsAndImportRoundTrips) {
  StoreDir d;
  auto st = open_ok(d.db());
  const char* user = std::getenv("USER");
  std::string who = user && std::string(user).size() > 1 && std::string(user) != "root" ? user : "";
  store::KbEntry e;
  e.signature =
      store::diagnostic_signature(diag("/home/alice/drv/ppdev.c", 3, "too many  arguments to function \u2018class_create\u2019"));
  EXPECT_EQ(e.signature, "other: too many arguments to function 'class_create'");
  e.change_id = "call:class_create";
  e.label = "arguments-changed";
  e.title = "class_create() lost an argument";
  e.proposer = "learned-rewrite";
  e.edit = {{"smpl", "- class_create(E0, E1)\n+ class_create(E1)\n"},
            {"description", "learned from /usr/src/linux-source-6.12/drivers/base/core.c" + (who.empty() ? "" : " by " + who)}};
  e.patch = "--- a/ppdev.c\n+++ b/ppdev.c\n# api_key=sk-abcdefghijklmnopqrstuvwx\n";
  e.evidence = {{"errors_before", 4}, {"errors_after", 0}, {"tree", "/home/alice/drv"}};
  auto added = store::add_kb_entry(st, e);
  ASSERT_TRUE(added && *added);
  auto again = store::add_kb_entry(st, e);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);

  auto entries = store::kb_entries(st);
  ASSERT_TRUE(entries);
  auto bundle = store::export_kb_bundle(*entries);
  std::string text = bundle.dump();
  EXPECT_EQ(text.find("/home/alice"), std::string::npos) << text;
  EXPECT_EQ(text.find("/usr/src"), std::string::npos);
  EXPECT_EQ(text.find("sk-abcdefghijklmnop"), std::string::npos);
  if (!who.empty()) {
    EXPECT_EQ(text.find(" by " + who), std::string::npos);
  }
  EXPECT_NE(text.find("learned from core.c"), std::string::npos); // absolute paths keep their file name
  EXPECT_EQ(bundle["schema_version"], store::k_kb_bundle_version);

  StoreDir other;
  auto st2 = open_ok(other.db());
  auto n = store::import_kb_bundle(st2, nlohmann::json::parse(text), "team.json");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 1);
  auto hits = store::kb_entries(st2, "other: too many arguments to function 'class_create'");
  ASSERT_TRUE(hits);
  ASSERT_EQ(hits->size(), 1u);
  EXPECT_EQ((*hits)[0].change_id, "call:class_create");
  EXPECT_EQ((*hits)[0].origin, "import:team.json");
  EXPECT_NE((*hits)[0].patch.find("+++ b/ppdev.c"), std::string::npos);
  auto n2 = store::import_kb_bundle(st2, nlohmann::json::parse(text), "team.json");
  ASSERT_TRUE(n2);
  EXPECT_EQ(*n2, 0);

  auto newer = bundle;
  newer["schema_version"] = 99;
  auto bad = store::import_kb_bundle(st2, newer, "x.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("newer"), std::string::npos);
  auto broken = bundle;
  broken["entries"][0].erase("signature");
  EXPECT_FALSE(store::import_kb_bundle(st2, broken, "x.json"));
}

TEST(StoreKb, ExplainSuggestsAKnownFixForAnUnsolvedDiagnostic) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto e = diag("a.c", 7, "implicit declaration of function 'foo_bar'");
  store::KbEntry k;
  k.signature = store::diagnostic_signature(e);
  k.change_id = "call:foo_bar";
  k.title = "foo_bar became foo_baz";
  ASSERT_TRUE(store::add_kb_entry(st, k));
  auto id = record(st, {{{"step", "build-target"}, {"t_ms", 1000}, {"ok", false}, {"errors", {e}}}}, store::RunStatus::failed,
                   {{"outcome", "no-progress"}});
  auto doc = explain(st, id);
  ASSERT_EQ(doc["recover"].size(), 1u);
  EXPECT_EQ(doc["recover"][0]["action"], "kb");
  EXPECT_EQ(doc["recover"][0]["change_id"], "call:foo_bar");
}

// The run store's argv column comes from this observer: it sees this thread's commands only.
TEST(StoreCommands, ThreadRunObserverSeesOnlyItsThread) {
  std::vector<std::vector<std::string>> seen;
  auto prev = util::set_thread_run_observer([&](const util::RunResult& r) { seen.push_back(r.argv); });
  util::RunRequest rq;
  rq.argv = {"sh", "-c", "exit 3"};
  rq.timeout = std::chrono::seconds(10);
  ASSERT_TRUE(util::run(rq));
  std::thread other([&] { (void)util::run(rq); });
  other.join();
  util::set_thread_run_observer(std::move(prev));
  ASSERT_TRUE(util::run(rq));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], rq.argv);
}

TEST(StoreRuns, FiltersByStatusCaseAndDateNewestFirst) {
  StoreDir d;
  auto st = open_ok(d.db());
  auto a = st.begin_run({"bench", {}, "", "case-a", std::nullopt});
  auto b = st.begin_run({"bench", {}, "", "case-b", std::nullopt});
  auto c = st.begin_run({"port", {}, "/tmp/x", "", std::nullopt});
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(st.end_run(*a, store::RunStatus::ok, {{"outcome", "ported"}}));
  ASSERT_TRUE(st.end_run(*b, store::RunStatus::failed, {{"outcome", "no-progress"}}));
  // c stays running: this process is alive, so it is not reported interrupted.
  auto ids = [&](const store::RunFilter& f) {
    std::vector<std::int64_t> out;
    auto rows = st.list_runs(f);
    EXPECT_TRUE(rows);
    for (const auto& r : *rows) out.push_back(r.id);
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<std::int64_t>{*c, *b, *a}));
  store::RunFilter failed;
  failed.status = "failed";
  EXPECT_EQ(ids(failed), (std::vector<std::int64_t>{*b}));
  store::RunFilter running;
  running.status = "running";
  EXPECT_EQ(ids(running), (std::vector<std::int64_t>{*c}));
  store::RunFilter by_case;
  by_case.case_id = "case-a";
  EXPECT_EQ(ids(by_case), (std::vector<std::int64_t>{*a}));
  store::RunFilter future;
  future.since = "2999-01-01";
  EXPECT_TRUE(ids(future).empty());
  store::RunFilter past;
  past.until = "2999-01-01";
  past.limit = 2;
  EXPECT_EQ(ids(past), (std::vector<std::int64_t>{*c, *b}));
}
