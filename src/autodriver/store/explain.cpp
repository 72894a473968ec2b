#include "autodriver/store/explain.hpp"

#include "autodriver/store/kb.hpp"
#include "autodriver/util/json_text.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace autodriver::store {

namespace {

nlohmann::json step_ref(const StepRow& s) { return {{"seq", s.seq}, {"kind", s.kind}, {"component", s.component}}; }

/// The symbol a change id names ("call:class_create" -> "class_create").
std::string change_symbol(const std::string& change) {
  auto colon = change.rfind(':');
  return colon == std::string::npos ? change : change.substr(colon + 1);
}

bool mentions(const std::string& message, const std::string& sym) {
  if (sym.empty()) return false;
  for (auto pos = message.find(sym); pos != std::string::npos; pos = message.find(sym, pos + 1)) {
    auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    bool left = pos == 0 || !ident(message[pos - 1]);
    bool right = pos + sym.size() >= message.size() || !ident(message[pos + sym.size()]);
    if (left && right) return true;
  }
  return false;
}

std::string rerun_cmd(std::int64_t run, std::int64_t from_step, const std::string& extra) {
  return fmt::format("autodriver rerun {} --from-step {}{}{}", run, from_step, extra.empty() ? "" : " ", extra);
}

/// The seq of the last accept before `seq` (the checkpoint to restart from), 0 = the start.
std::int64_t checkpoint_before(const std::vector<StepRow>& steps, std::int64_t seq) {
  std::int64_t cp = 0;
  for (const auto& s : steps)
    if (s.seq < seq && s.kind == "accept") cp = s.seq;
  return cp;
}

} // namespace

namespace {

/// One explanation being written: detect (where the failure showed), attribute (its causes) and
/// recover (what to do), filled by the first check that recognizes the run's ending.
struct Explainer {
  const RunRow& run;
  const std::vector<StepRow>& steps;
  const nlohmann::json& verdict;
  RunStore* kb;
  std::string outcome;
  nlohmann::json doc;
  const StepRow* last = nullptr;
  std::vector<const StepRow*> accepts;

  Explainer(const RunRow& r, const std::vector<StepRow>& s, const nlohmann::json& v, RunStore* k)
      : run(r), steps(s), verdict(v), kb(k) {
    outcome = run.summary.is_object() ? run.summary.value("outcome", run.status) : run.status;
    doc = {{"schema", "autodriver.explain"},
           {"schema_version", 1},
           {"run", run.id},
           {"status", run.status},
           {"outcome", outcome},
           {"detect", nullptr},
           {"attribute", nlohmann::json::array()},
           {"recover", nlohmann::json::array()}};
    last = steps.empty() ? nullptr : &steps.back();
    for (const auto& st : steps)
      if (st.kind == "accept") accepts.push_back(&st);
  }

  void cause(const std::string& c, const StepRow* s, const std::string& why, nlohmann::json evidence = nullptr) {
    doc["attribute"].push_back(
        {{"cause", c}, {"step", s ? step_ref(*s) : nlohmann::json(nullptr)}, {"why", why}, {"evidence", evidence}});
  }
  void detect(const StepRow* s, const std::string& what) {
    if (doc["detect"].is_null()) doc["detect"] = {{"step", s ? step_ref(*s) : nlohmann::json(nullptr)}, {"what", what}};
  }
  void recover(nlohmann::json r) { doc["recover"].push_back(std::move(r)); }

  /// ok, still running, interrupted or an internal error.
  bool by_status() {
    if (run.status == "ok") {
      cause("none", nullptr, "the run passed every gate it ran");
      return true;
    }
    if (run.status == "running") {
      detect(last, "the run is still going");
      return true;
    }
    if (run.status != "interrupted" && run.status != "error") return false;
    std::string err = run.summary.is_object() ? run.summary.value("error", run.summary.value("detected", "")) : "";
    detect(last, last ? fmt::format("the run stopped after step {} ({})", last->seq, last->kind)
                      : "the run stopped before its first step");
    cause(run.status == "interrupted" ? "interrupted" : "infrastructure", last, err.empty() ? "the run did not finish" : err);
    recover({{"action", "rerun"},
             {"command", rerun_cmd(run.id, checkpoint_before(steps, last ? last->seq + 1 : 0), "")},
             {"why", "resume from the last accepted edit"}});
    return true;
  }

  /// A build cut short (its timeout or the budget): no verdict about the driver.
  bool cut_short() {
    for (const auto& s : steps) {
      if (!s.kind.starts_with("build") || !s.output.value("timed_out", false)) continue;
      auto limit = s.input.value("timeout_s", 0);
      detect(&s, fmt::format("the build on {} did not finish within {} s", s.input.value("kernel", "the target"), limit));
      bool budget = outcome == "budget";
      cause(budget ? "budget" : "timeout", &s,
            budget ? "the time left in the budget ran out during the build"
                   : "the build took longer than --build-timeout allows: nothing is known about the driver yet");
      recover({{"action", "rerun"},
               {"command", rerun_cmd(run.id, 0,
                                     budget ? fmt::format("--budget-s {}", 2 * run.args.value("budget_s", 900))
                                            : fmt::format("--with build-timeout={}", std::max(600, 2 * limit)))},
               {"why", "the same port with more time for its builds"}});
      return true;
    }
    return false;
  }

  /// The unchanged tree does not build on its own kernel.
  bool from_fails() {
    for (const auto& s : steps)
      if (s.kind == "build-from" && !s.output.value("ok", true)) {
        detect(&s, "the unchanged driver does not build on its own kernel");
        cause("input", &s, "errors before any edit: fix the driver (or --from) first", s.diagnostics);
        return true;
      }
    return false;
  }

  /// An accepted edit was rejected by the anti-cheat gate.
  bool integrity() {
    const StepRow* integ = nullptr;
    for (const auto& s : steps)
      if (s.kind == "integrity" && !s.output.value("ok", true)) integ = &s;
    if (!integ) return false;
    detect(integ, "the integrity gate rejected the ported tree");
    nlohmann::json violations = verdict.is_object() && verdict["integrity"].is_object()
                                    ? verdict["integrity"].value("violations", nlohmann::json::array())
                                    : nlohmann::json::array();
    // The violation's symbols name the edit; without them, the last accepted edit is the suspect.
    const StepRow* culprit = accepts.empty() ? nullptr : accepts.back();
    for (const auto* a : accepts)
      for (const auto& v : violations)
        if (mentions(v.dump(-1, ' ', false, util::json_bytes), change_symbol(a->input.value("change", "")))) culprit = a;
    cause("integrity", culprit,
          culprit ? fmt::format("edit {} ({}) changed what the API change does not explain", culprit->input.value("change", ""),
                                culprit->component)
                  : "the tree changed outside the API changes",
          violations);
    if (culprit)
      recover({{"action", "rerun"},
               {"command", rerun_cmd(run.id, checkpoint_before(steps, culprit->seq), "")},
               {"why", "restart before the rejected edit and let the loop pick another alternative"}});
    return true;
  }

  /// The boot/load gate failed.
  bool gates() {
    const StepRow* gates = nullptr;
    for (const auto& s : steps)
      if (s.kind == "gates" && !s.output.value("ok", true)) gates = &s;
    if (!gates) return false;
    std::string boot_outcome;
    if (verdict.is_object() && verdict["gates"].is_object())
      for (const auto& [k, g] : verdict["gates"]["gates"]["boot"]["by_kernel"].items())
        if (g.is_object() && g["details"].is_object()) boot_outcome = g["details"].value("outcome", "");
    static const std::set<std::string> k_infra = {"qemu-failed", "no-boot", "timeout", "kernel-panic-early", "infrastructure"};
    detect(gates, fmt::format("the boot/load gate failed{}", boot_outcome.empty() ? "" : " (" + boot_outcome + ")"));
    if (k_infra.count(boot_outcome))
      cause("gate-false-positive", gates, "the guest failed before the driver was loaded", boot_outcome);
    else
      cause("runtime", accepts.empty() ? gates : accepts.back(), "the ported driver builds but fails when loaded", boot_outcome);
    recover({{"action", "check"},
             {"command", "autodriver check OUT/tree --to TARGET --boot"},
             {"why", "reproduce the gate on the ported tree"}});
    return true;
  }

  /// An error that appeared after an accepted edit: that edit introduced it.
  void regression(const StepRow* first, const std::string& msg, nlohmann::json ev) {
    const StepRow* culprit = nullptr;
    for (const auto* a : accepts)
      if (a->seq < first->seq) culprit = a;
    detect(first, fmt::format("a new error appeared after an accepted edit: {}", msg));
    cause("proposer-regression", culprit ? culprit : first,
          fmt::format("accepted edit {} introduced: {}", culprit ? culprit->input.value("change", "") : "?", msg), ev);
    // A replayed KB entry would be replayed again: the rerun goes without the KB.
    if (culprit)
      recover({{"action", "rerun"},
               {"command", rerun_cmd(run.id, checkpoint_before(steps, culprit->seq),
                                     culprit->component == "store-kb" ? "--with store-kb=false" : "")},
               {"why", "restart before the edit that introduced the error"}});
  }

  /// An error present from the start: which changes were tried for it, and what the KB knows.
  void unsolved(const StepRow* first, const StepRow* final_build, const std::string& sig, const std::string& msg,
                nlohmann::json ev) {
    const StepRow* tried = nullptr;
    const StepRow* rejected = nullptr;
    for (const auto& s : steps) {
      std::string sym = change_symbol(s.input.value("change", ""));
      if (!mentions(msg, sym)) continue;
      if (s.kind == "try" && !tried) tried = &s;
      if (s.kind == "reject") rejected = &s;
    }
    if (tried) {
      detect(rejected ? rejected : tried,
             fmt::format("no alternative for {} removed: {}", tried->input.value("change", ""), msg));
      ev["tries"] = nlohmann::json::array();
      for (const auto& s : steps)
        if (s.kind == "try" && s.input.value("change", "") == tried->input.value("change", ""))
          ev["tries"].push_back({{"seq", s.seq},
                                 {"proposer", s.component},
                                 {"rank", s.input.value("rank", 0)},
                                 {"errors_before", s.input.value("errors_before", 0)},
                                 {"errors_after", s.output.value("errors_after", 0)}});
      cause("wrong-mapping", rejected ? rejected : tried,
            fmt::format("the API change {} as proposed by {} does not fit this use", tried->input.value("change", ""),
                        tried->component),
            ev);
    } else {
      detect(first ? first : final_build, fmt::format("no proposer offered an edit for: {}", msg));
      cause("missing-mapping", first ? first : final_build, fmt::format("no proposer knows the API change behind: {}", msg), ev);
    }
    if (!kb) return;
    auto hits = kb_entries(*kb, sig);
    if (!hits) return;
    // An entry store-kb already replayed for this change in this run is no recovery.
    std::set<std::string> replayed;
    for (const auto& s : steps)
      if (s.kind == "try" && s.component == "store-kb") replayed.insert(s.input.value("change", ""));
    for (const auto& h : *hits)
      if (!replayed.count(h.change_id))
        recover({{"action", "kb"},
                 {"signature", sig},
                 {"change_id", h.change_id},
                 {"title", h.title},
                 {"origin", h.origin},
                 {"why", "a recorded fix for the same diagnostic"}});
  }

  /// The model's rounds, when errors were left: what each answer's review found, or why a round
  /// gave nothing (an unreachable endpoint, a spent budget).
  void agents() {
    std::vector<const StepRow*> rounds;
    for (const auto& s : steps)
      if (s.kind == "agent") rounds.push_back(&s);
    if (rounds.empty()) return;
    nlohmann::json ev = nlohmann::json::array();
    std::string last_what;
    for (const auto* s : rounds) {
      const auto attempts = s->input.value("attempts", nlohmann::json::array());
      const std::string error = s->input.value("error", "");
      ev.push_back({{"seq", s->seq},
                    {"round", s->input.value("round", 0)},
                    {"edits", s->output.value("edits", 0)},
                    {"attempts", attempts},
                    {"error", error}});
      last_what = attempts.empty() ? error : agent_attempts_summary(attempts);
    }
    cause("agent", rounds.back(),
          fmt::format("the model was asked in {} round(s) and no answer removed the errors left; last round: {}", rounds.size(),
                      last_what.empty() ? "no answer" : last_what),
          ev);
  }

  /// Errors left at the end: where did each first appear, and what did the loop do about it?
  void remaining_errors() {
    const StepRow* final_build = nullptr;
    std::vector<const StepRow*> builds;
    for (const auto& s : steps)
      if (s.kind == "build-target") {
        builds.push_back(&s);
        final_build = &s;
      }
    if (!final_build) {
      detect(last, "no build of the target was recorded");
      cause("infrastructure", last, "the loop stopped before building the target");
      return;
    }
    std::set<std::string> reported;
    for (const auto& d : final_build->diagnostics) {
      std::string sig = diagnostic_signature(d);
      if (!reported.insert(sig).second) continue;
      std::string msg = d.value("message", "");
      const StepRow* first = nullptr;
      for (const auto* b : builds) {
        for (const auto& e : b->diagnostics)
          if (diagnostic_signature(e) == sig) first = b;
        if (first) break;
      }
      nlohmann::json ev = {{"diagnostic", d}, {"signature", sig}};
      if (first && first != builds.front()) regression(first, msg, ev);
      else unsolved(first, final_build, sig, msg, ev);
    }
    if (outcome == "budget") {
      cause("budget", last, "the time budget ended while the loop was still going");
      recover({{"action", "rerun"},
               {"command", rerun_cmd(run.id, checkpoint_before(steps, last ? last->seq + 1 : 0),
                                     fmt::format("--budget-s {}", 2 * run.args.value("budget_s", 900)))},
               {"why", "continue from the last accepted edit with more time"}});
    }
    agents();
    if (doc["attribute"].empty()) {
      detect(final_build, fmt::format("the loop ended with outcome {}", outcome));
      const std::string failure = util::json_get(final_build->output, "failure", std::string());
      cause("infrastructure", final_build,
            failure.empty() ? std::string("the build failed without a diagnostic the loop could read")
                            : "the build failed before the compiler ran: " + failure,
            final_build->diagnostics);
    }
  }
};

} // namespace

std::string agent_attempts_summary(const nlohmann::json& attempts) {
  std::string out;
  if (!attempts.is_array()) return out;
  for (const auto& a : attempts) {
    std::string what;
    if (a.contains("error") && a["error"].is_string()) {
      what = "no usable answer (" + a["error"].get<std::string>().substr(0, 120) + ")";
    } else if (auto r = a.find("review"); r != a.end() && r->is_object()) {
      const auto findings = r->value("findings", nlohmann::json::array());
      if (!r->value("applied", false)) what = "did not apply";
      else if (!findings.empty()) what = "rejected by the integrity gate (" + findings[0].get<std::string>().substr(0, 80) + ")";
      else if (r->value("ok", false)) what = "builds";
      else
        what = fmt::format("{} -> {} error(s){}", r->value("errors_before", 0), r->value("errors_after", 0),
                           r->value("new_errors", 0) ? fmt::format(", {} new", r->value("new_errors", 0)) : std::string());
    } else {
      what = "not reviewed";
    }
    if (!out.empty()) out += "; ";
    out += fmt::format("answer {} ({}): {}", a.value("attempt", 0), a.value("role", ""), what);
  }
  return out;
}

Explanation explain_run(const RunRow& run, const std::vector<StepRow>& steps, const nlohmann::json& verdict, RunStore* kb) {
  Explainer x(run, steps, verdict, kb);
  if (!x.by_status() && !x.cut_short() && !x.from_fails() && !x.integrity() && !x.gates()) x.remaining_errors();
  return {x.doc};
}

std::string render_explanation(const nlohmann::json& d) {
  std::string out = fmt::format("run {}: {} ({})\n", d.value("run", 0), d.value("status", ""), d.value("outcome", ""));
  if (d["detect"].is_object()) {
    const auto& s = d["detect"]["step"];
    out += fmt::format("detect:    {}{}\n",
                       s.is_object() ? fmt::format("step {} ({}): ", s.value("seq", 0), s.value("kind", "")) : "",
                       d["detect"].value("what", ""));
  }
  for (const auto& a : d["attribute"]) {
    const auto& s = a["step"];
    out += fmt::format(
        "attribute: {} at {}: {}\n", a.value("cause", ""),
        s.is_object() ? fmt::format("step {} ({}, {})", s.value("seq", 0), s.value("kind", ""), s.value("component", "")) : "-",
        a.value("why", ""));
    if (a.contains("replay") && a["replay"].is_object())
      out += fmt::format("           replay: {}: {}\n", a["replay"].value("result", ""), a["replay"].value("why", ""));
  }
  for (const auto& r : d["recover"]) {
    if (r.value("action", "") == "kb")
      out += fmt::format("recover:   KB entry for this diagnostic: {} ({}, {})\n", r.value("title", ""), r.value("change_id", ""),
                         r.value("origin", ""));
    else out += fmt::format("recover:   {}  # {}\n", r.value("command", ""), r.value("why", ""));
  }
  return out;
}

} // namespace autodriver::store
