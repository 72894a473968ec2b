#include "autodriver/propose/llm_agent.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/llm/answer.hpp"
#include "autodriver/llm/prompt.hpp"
#include "autodriver/propose/llm_tools.hpp"
#include "autodriver/util/diff.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;

struct LlmAgent::Attempt {
  int n = 0;
  std::string role; ///< generator, refiner, reflection
  std::optional<Edit> edit;
  fs::path copy;               ///< the round's tree with this answer (and the answer it refined)
  std::set<std::string> files; ///< files it changed, against the round's tree
  std::string diff;            ///< unified diff against the round's tree, capped
  Review review;
  bool reviewed = false;
  std::string error; ///< the model failed, or its answer could not be used
  bool fatal = false;
  llm::Message reply;
};

struct LlmAgent::Round {
  const PortContext& ctx;
  int n = 0;
  std::set<std::string> editable;
  std::vector<const core::Diagnostic*> errs;
  int tool_calls = 0;
  int builds = 0;
  nlohmann::json call_log = nlohmann::json::array(); ///< per call: tokens in/out, ms, attempts, tool calls asked
  const ToolEnv* env = nullptr;
  const Attempt* base = nullptr; ///< what answers now apply to (a near miss being refined), else the tree
};

namespace {

/// The errors to show: in the driver's files, one per place, at most `max`.
std::vector<const core::Diagnostic*> errors_in_tree(const std::vector<core::Diagnostic>& diags, const fs::path& tree, int max) {
  std::vector<const core::Diagnostic*> out;
  std::set<std::string> seen;
  std::error_code ec;
  for (const auto& d : diags) {
    if (d.severity != core::Severity::error && d.severity != core::Severity::fatal) continue;
    if (d.file.empty() || d.line <= 0 || !fs::is_regular_file(tree / d.file, ec)) continue;
    if (!seen.insert(d.file + ":" + std::to_string(d.line)).second) continue;
    out.push_back(&d);
    if (static_cast<int>(out.size()) >= max) break;
  }
  return out;
}

/// The target's header lines declaring the symbols the errors name (a few per symbol).
std::string declarations(const fs::path& new_src, const std::vector<const core::Diagnostic*>& errs) {
  std::set<std::string> symbols;
  for (const auto* d : errs)
    for (const auto& s : d->symbols)
      if (symbols.size() < 6) symbols.insert(s);
  if (new_src.empty()) return "(the target's source is not available)";
  std::string out;
  for (const auto& s : symbols) out += kernel_lines(new_src, s, true, 4);
  return out.empty() ? "(no declaration found in the headers)" : out;
}

/// A function of the driver: where it is and the lines of its head.
struct DriverFunction {
  std::string file;
  int first = 0, body = 0, last = 0;
};

std::map<std::string, DriverFunction> driver_functions(const fs::path& tree, const std::set<std::string>& editable) {
  std::map<std::string, DriverFunction> out;
  for (const auto& rel : editable) {
    auto text = util::read_file(tree / rel);
    if (!text) continue;
    auto toks = csrc::tokenize(*text);
    for (const auto& u : csrc::find_units(toks))
      if (u.kind == csrc::UnitKind::function && !out.count(u.name))
        out[u.name] = {rel, toks[u.first].line, toks[u.body].line, toks[u.last].line};
  }
  return out;
}

/// Candidate places for an error beside its own line (bounded): the heads of the driver's
/// functions that the error names or that its line mentions (a callback whose type no longer
/// fits is assigned on the error's line but defined elsewhere).
std::vector<std::string> related_places(const core::Diagnostic& d, const fs::path& tree,
                                        const std::map<std::string, DriverFunction>& functions, std::set<std::string>& shown) {
  std::vector<std::string> names(d.symbols.begin(), d.symbols.end());
  for (std::size_t q = d.message.find('\''); q != std::string::npos; q = d.message.find('\'', q + 1)) {
    auto end = d.message.find('\'', q + 1);
    if (end == std::string::npos) break;
    names.push_back(d.message.substr(q + 1, end - q - 1));
    q = end;
  }
  if (auto text = util::read_file(tree / d.file)) {
    auto lines = util::split_lines(*text);
    if (d.line > 0 && d.line <= static_cast<int>(lines.size()))
      for (const auto& t : csrc::tokenize(std::string(lines[static_cast<std::size_t>(d.line) - 1])))
        if (t.kind == csrc::TokKind::ident) names.push_back(t.text);
  }
  std::vector<std::string> out;
  for (const auto& name : names) {
    auto it = functions.find(name);
    if (it == functions.end() || out.size() >= 2) continue;
    const auto& f = it->second;
    if (f.file == d.file && f.first <= d.line && d.line <= f.last) continue; // the error's own function
    if (!shown.insert(name).second) continue;
    const int last = std::min(f.body + 2, f.first + 12);
    out.push_back(numbered_lines(tree, f.file, (f.first + last) / 2, (last - f.first + 1) / 2));
  }
  return out;
}

/// The driver's C files and headers, relative: what an answer may edit.
std::set<std::string> driver_files(const fs::path& tree) {
  std::set<std::string> out;
  for (const auto& rel : util::list_files(tree))
    if (rel.extension() == ".c" || rel.extension() == ".h") out.insert(rel.string());
  return out;
}

std::string capped_lines(const std::string& text, std::size_t max_lines) {
  auto lines = util::split_lines(text);
  std::string out;
  for (std::size_t i = 0; i < lines.size() && i < max_lines; ++i) out += std::string(lines[i]) + "\n";
  if (lines.size() > max_lines) out += fmt::format("... ({} more lines)\n", lines.size() - max_lines);
  return out;
}

void append(std::vector<llm::Message>& to, std::vector<llm::Message> more) {
  for (auto& m : more) to.push_back(std::move(m));
}

} // namespace

std::string Review::describe() const {
  if (!applied) return "It could not be tried: " + (error.empty() ? std::string("the edit did not apply") : error);
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += "  " + x + "\n";
    return s;
  };
  std::string s = ok ? "The module builds.\n"
                     : fmt::format("The build has {} error(s) (before the change: {}).\n", errors_after, errors_before);
  if (!new_errors.empty()) s += "Errors the change brought:\n" + list(new_errors);
  if (!ok && !remaining.empty()) s += "Errors that remain:\n" + list(remaining);
  if (!findings.empty())
    s += "The integrity gate rejects it (a port must not delete, stub out or disable the failing code):\n" + list(findings);
  if (!warnings.empty()) s += "New warnings on the changed lines:\n" + list(warnings);
  return s;
}

nlohmann::json Review::to_json() const {
  nlohmann::json j = {{"applied", applied},           {"ok", ok},
                      {"progressed", progressed},     {"errors_before", errors_before},
                      {"errors_after", errors_after}, {"new_errors", new_errors.size()},
                      {"findings", findings},         {"warnings", warnings.size()}};
  if (!error.empty()) j["error"] = error;
  return j;
}

nlohmann::json AgentLog::to_json() const {
  return {
      {"calls", calls},  {"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}, {"cost", cost}, {"ms", ms},
      {"rounds", rounds}};
}

std::optional<TextEdit> line_edit(const std::string& file, const std::string& before, const std::string& after) {
  if (before == after) return std::nullopt;
  auto a = util::split_lines(before), b = util::split_lines(after);
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  TextEdit e;
  e.file = file;
  e.line = static_cast<int>(head) + 1;
  e.remove = static_cast<int>(a.size() - head - tail);
  for (std::size_t i = head; i < b.size() - tail; ++i) e.text += std::string(b[i]) + "\n";
  return e;
}

LlmAgent::LlmAgent(AgentSettings s) : m_settings(std::move(s)) {
  m_budget.max_tokens = m_settings.budget_tokens;
  m_budget.max_cost = m_settings.max_cost;
  m_budget.price_in = m_settings.price_in;
  m_budget.price_out = m_settings.price_out;
}

util::Expected<llm::Reply> LlmAgent::converse(llm::Client& client, std::vector<llm::Message>& messages, Round& r) {
  const std::vector<llm::Tool> tools = agent_tools(static_cast<bool>(r.env->try_build));
  for (int turn = 0; turn <= m_settings.max_tool_turns; ++turn) {
    auto reply = client.chat(messages, turn < m_settings.max_tool_turns ? tools : std::vector<llm::Tool>{}, m_settings.stream);
    if (!reply) return reply;
    ++m_log.calls;
    m_log.prompt_tokens += reply->usage.prompt_tokens;
    m_log.completion_tokens += reply->usage.completion_tokens;
    m_log.cost += m_budget.cost_of(reply->usage.prompt_tokens, reply->usage.completion_tokens);
    m_log.ms += reply->elapsed.count();
    r.call_log.push_back({{"tokens_in", reply->usage.prompt_tokens},
                          {"tokens_out", reply->usage.completion_tokens},
                          {"ms", reply->elapsed.count()},
                          {"http_attempts", reply->attempts},
                          {"tool_calls", reply->message.tool_calls.size()}});
    if (reply->message.tool_calls.empty()) return reply;
    messages.push_back(reply->message);
    for (const auto& call : reply->message.tool_calls) {
      ++r.tool_calls;
      messages.push_back(llm::Message{"tool", run_tool(call, *r.env), {}, call.id});
    }
  }
  return util::unexpected(util::ErrorKind::parse,
                          fmt::format("the model kept calling tools ({} turns) without an answer", m_settings.max_tool_turns));
}

std::optional<Edit> LlmAgent::edit_of(const Round& r, const fs::path& copy, const std::set<std::string>& files) const {
  Edit e;
  e.proposer = "llm";
  const auto* first = r.errs.front();
  e.change_id = fmt::format("llm:{}:{}", r.n, first->signature());
  e.label = "other";
  e.title = first->symbols.empty() ? "adapt to the target kernel" : "adapt to " + first->symbols.front();
  for (const auto& f : files) {
    auto before = util::read_file(r.ctx.tree / f);
    auto after = util::read_file(copy / f);
    if (!before || !after) continue;
    if (auto te = line_edit(f, *before, *after)) e.text_edits.push_back(std::move(*te));
  }
  if (e.text_edits.empty()) return std::nullopt;
  return e;
}

LlmAgent::Attempt LlmAgent::answer(llm::Client& client, std::vector<llm::Message>& messages, Round& r, const Attempt* base) {
  Attempt a;
  for (int tries = 1; tries <= 2; ++tries) {
    auto reply = converse(client, messages, r);
    if (!reply) {
      a.error = reply.error().describe();
      a.fatal = true;
      return a;
    }
    a.reply = reply->message;
    std::string why;
    auto parsed = llm::parse_answer(reply->message.content);
    if (parsed) {
      const fs::path copy = r.ctx.scratch / fmt::format("llm-{}-{}", r.n, m_log.calls);
      std::error_code ec;
      fs::remove_all(copy, ec);
      if (auto c = util::copy_tree(base ? base->copy : r.ctx.tree, copy, util::SkipBuildProducts::yes); !c) {
        a.error = c.error().describe();
        a.fatal = true;
        return a;
      }
      auto changed = llm::apply_answer(*parsed, copy, r.editable);
      if (changed) {
        std::set<std::string> files = base ? base->files : std::set<std::string>{};
        files.insert(changed->begin(), changed->end());
        if (auto e = edit_of(r, copy, files)) {
          a.edit = std::move(*e);
          a.copy = copy;
          a.files = std::move(files);
          std::string diff;
          for (const auto& f : a.files) diff += util::unified_diff(r.ctx.tree, copy, f);
          a.diff = capped_lines(diff, 60);
          return a;
        }
        why = "the answer changed nothing";
      } else {
        why = changed.error().message;
      }
      fs::remove_all(copy, ec);
    } else {
      why = parsed.error().message;
    }
    if (tries == 2) {
      a.error = "the answer could not be used twice: " + why;
      return a;
    }
    auto retry = llm::render_prompt("port-retry.v1", {{"error", why}});
    if (!retry) {
      a.error = retry.error().describe();
      a.fatal = true;
      return a;
    }
    messages.push_back(reply->message);
    append(messages, std::move(*retry));
  }
  return a;
}

std::string LlmAgent::try_build(Round& r, const std::string& text) {
  if (r.builds >= 2 * std::max(1, m_settings.max_attempts)) return "error: no more builds in this round; answer now";
  auto parsed = llm::parse_answer(text);
  if (!parsed) return "error: " + parsed.error().message;
  ++r.builds;
  const fs::path copy = r.ctx.scratch / fmt::format("llm-try-{}-{}", r.n, r.builds);
  std::error_code ec;
  fs::remove_all(copy, ec);
  std::string out;
  if (auto c = util::copy_tree(r.base ? r.base->copy : r.ctx.tree, copy, util::SkipBuildProducts::yes); !c) {
    out = "error: " + c.error().message;
  } else if (auto changed = llm::apply_answer(*parsed, copy, r.editable); !changed) {
    out = "error: " + changed.error().message;
  } else {
    std::set<std::string> files = r.base ? r.base->files : std::set<std::string>{};
    files.insert(changed->begin(), changed->end());
    auto e = edit_of(r, copy, files);
    out = e ? m_settings.review(*e).describe() : "these edits change nothing";
  }
  fs::remove_all(copy, ec);
  return out;
}

std::vector<Edit> LlmAgent::propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx) {
  Round r{ctx};
  r.n = ++m_round;
  nlohmann::json round = {{"round", r.n}, {"attempts", nlohmann::json::array()}};
  const auto t0 = std::chrono::steady_clock::now();
  const int calls0 = m_log.calls;
  const long prompt0 = m_log.prompt_tokens, completion0 = m_log.completion_tokens;
  const double cost0 = m_log.cost;
  std::vector<Attempt> attempts;
  std::vector<Edit> out;
  auto done = [&](std::string error) {
    round["calls"] = m_log.calls - calls0;
    round["tool_calls"] = r.tool_calls;
    round["call_log"] = r.call_log;
    round["builds"] = r.builds;
    round["tokens_in"] = m_log.prompt_tokens - prompt0;
    round["tokens_out"] = m_log.completion_tokens - completion0;
    round["tokens"] = round["tokens_in"].get<long>() + round["tokens_out"].get<long>();
    round["cost"] = m_log.cost - cost0;
    round["ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    round["edits"] = out.size();
    if (!error.empty()) round["error"] = error;
    m_log.rounds.push_back(round);
    std::error_code ec;
    for (const auto& a : attempts)
      if (!a.copy.empty()) fs::remove_all(a.copy, ec);
    return out;
  };
  r.errs = errors_in_tree(diagnostics, ctx.tree, m_settings.max_locations);
  if (r.errs.empty()) return done("no error in the driver's files to show");
  r.editable = driver_files(ctx.tree);
  const auto functions = driver_functions(ctx.tree, r.editable);
  std::string diags, locations;
  std::set<std::string> shown;
  for (const auto* d : r.errs) {
    diags += util::trim(d->raw.empty() ? fmt::format("{}:{}: error: {}", d->file, d->line, d->message) : d->raw);
    diags += "\n";
    locations += numbered_lines(ctx.tree, d->file, d->line, 12) + "\n";
    for (const auto& place : related_places(*d, ctx.tree, functions, shown))
      locations += "Related, named by this error:\n" + place + "\n";
  }
  const std::map<std::string, std::string> values = {{"from", ctx.from ? ctx.from->release : std::string("an older kernel")},
                                                     {"target", ctx.to ? ctx.to->release : std::string("the target kernel")},
                                                     {"diagnostics", diags},
                                                     {"locations", locations},
                                                     {"declarations", declarations(ctx.new_src, r.errs)}};
  auto messages = llm::render_prompt("port-generator.v1", values);
  if (!messages) return done(messages.error().describe());
  ToolEnv env{ctx, r.editable, m_settings.api_changes, m_sites, nullptr};
  if (m_settings.review) env.try_build = [this, &r](const std::string& text) { return try_build(r, text); };
  r.env = &env;
  m_budget.deadline = ctx.deadline;
  llm::Client client(m_settings.endpoint, &m_budget);
  const int max_attempts = m_settings.review ? std::max(1, m_settings.max_attempts) : 1;
  int best = -1; // the best near miss
  std::string last_error;
  for (int k = 1; k <= max_attempts; ++k) {
    const std::string role = k == 1 ? "generator" : k == max_attempts && k >= 3 ? "reflection" : "refiner";
    r.base = nullptr;
    if (role == "reflection") {
      // A fresh start from the original files with what every attempt taught.
      std::string lessons;
      for (const auto& a : attempts)
        lessons += fmt::format("Answer {} ({}):\n{}Result: {}\n", a.n, a.role, a.diff.empty() ? std::string() : a.diff,
                               a.error.empty() ? a.review.describe() : a.error + "\n");
      auto fresh = llm::render_prompt("port-generator.v1", values);
      auto reflect = llm::render_prompt("port-reflect.v1", {{"lessons", lessons}});
      if (!fresh || !reflect) break;
      *messages = std::move(*fresh);
      append(*messages, std::move(*reflect));
    } else if (role == "refiner") {
      const Attempt& prev = attempts.back();
      r.base = best >= 0 ? &attempts[static_cast<std::size_t>(best)] : nullptr;
      std::string state = r.base ? fmt::format("The driver's files now read as after answer {}, the best so far (its diff "
                                               "against the original):\n{}",
                                               r.base->n, r.base->diff)
                                 : std::string("The driver's files are as they were before your answers.");
      auto review = llm::render_prompt("port-review.v1",
                                       {{"result", prev.error.empty() ? prev.review.describe() : prev.error}, {"state", state}});
      if (!review) break;
      if (!prev.reply.content.empty()) messages->push_back(prev.reply);
      append(*messages, std::move(*review));
    }
    Attempt a = answer(client, *messages, r, r.base);
    a.n = k;
    a.role = role;
    if (a.edit && m_settings.review) {
      a.review = m_settings.review(*a.edit);
      a.reviewed = true;
    }
    nlohmann::json aj = {{"attempt", k}, {"role", role}};
    if (!a.error.empty()) aj["error"] = a.error;
    if (a.reviewed) aj["review"] = a.review.to_json();
    round["attempts"].push_back(aj);
    if (!a.error.empty()) last_error = a.error;
    attempts.push_back(std::move(a));
    const Attempt& t = attempts.back();
    if (t.fatal || (t.reviewed && t.review.stop)) break;
    if (t.edit && (!t.reviewed || t.review.acceptable())) {
      out.push_back(*t.edit);
      break;
    }
    if (t.edit && t.reviewed && t.review.near_miss() &&
        (best < 0 || t.review.score < attempts[static_cast<std::size_t>(best)].review.score))
      best = static_cast<int>(attempts.size()) - 1;
  }
  int chosen = out.empty() ? best : static_cast<int>(attempts.size()) - 1;
  if (out.empty() && best >= 0) {
    out.push_back(*attempts[static_cast<std::size_t>(best)].edit); // a near miss: the loop keeps it if it helps
    round["near_miss"] = best + 1;
  }
  if (!out.empty()) {
    const Attempt& a = attempts[static_cast<std::size_t>(chosen)];
    out.front().description = fmt::format("proposed by the model {} (round {}, answer {}: {}), read as SEARCH/REPLACE edits "
                                          "of the driver's files{}",
                                          m_settings.endpoint.model, r.n, a.n, a.role,
                                          a.reviewed ? ", built and reviewed before the loop tried it" : "");
  }
  if (out.empty()) return done(last_error.empty() ? "no answer passed the review" : last_error);
  return done("");
}

} // namespace autodriver::propose
