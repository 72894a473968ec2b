#include "autodriver/propose/llm_agent.hpp"

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/llm/answer.hpp"
#include "autodriver/llm/prompt.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/json_text.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;

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

/// Lines [line - radius, line + radius] of the file, numbered.
std::string excerpt(const fs::path& tree, const std::string& file, int line, int radius) {
  auto text = util::read_file(tree / file);
  if (!text) return "";
  auto lines = util::split_lines(*text);
  std::string out = file + ":\n";
  for (int l = std::max(1, line - radius); l <= std::min<int>(static_cast<int>(lines.size()), line + radius); ++l)
    out += fmt::format("{:5} {}\n", l, lines[static_cast<std::size_t>(l) - 1]);
  return out;
}

bool symbol_name(const std::string& s) {
  if (s.empty() || s.size() > 80 || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

/// Lines of the target's source naming `symbol`: its declarations in include/ (`declaration`), or
/// calls of it in drivers/ (else), at most `max`, each capped.
std::string kernel_lines(const fs::path& new_src, const std::string& symbol, bool declaration, int max) {
  if (new_src.empty() || !symbol_name(symbol)) return "";
  kernel::SourceGrep q;
  q.options = {"-nwE", "-m", "2"};
  q.all_of = {symbol};
  if (declaration) {
    q.includes = {"*.h"};
    q.dirs = {"include"};
    q.pattern = "(struct|union|enum)[[:space:]]+" + symbol + "[[:space:]]*\\{|[[:space:]*]" + symbol +
                "[[:space:]]*\\(|#define[[:space:]]+" + symbol;
  } else {
    q.includes = {"*.c"};
    q.dirs = {"drivers"};
    q.pattern = symbol + "[[:space:]]*\\(";
  }
  std::string out;
  int n = 0;
  for (const auto& line : kernel::grep_source(new_src, q)) {
    if (++n > max) break;
    out += line.substr(0, 300) + "\n";
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
  return out.empty() ? "(no declaration found in include/)" : out;
}

/// The tools the generator may call: reading more of the driver and of the target kernel.
std::vector<llm::Tool> agent_tools() {
  auto one = [](const char* name, const char* what) {
    return nlohmann::json{
        {"type", "object"}, {"properties", {{name, {{"type", "string"}, {"description", what}}}}}, {"required", {name}}};
  };
  nlohmann::json lines = {
      {"type", "object"},
      {"properties", {{"path", {{"type", "string"}}}, {"first", {{"type", "integer"}}}, {"last", {{"type", "integer"}}}}},
      {"required", {"path", "first", "last"}}};
  return {
      {"read_function", "The whole definition of a function of the driver, by name", one("name", "the function's name")},
      {"read_lines", "Lines first..last (at most 200) of one of the driver's C files", lines},
      {"kernel_declaration", "How the target kernel's headers declare a function, type or macro", one("symbol", "an identifier")},
      {"kernel_callers", "Calls of a function in the target kernel's own drivers (a few)", one("symbol", "a function name")},
  };
}

/// Runs one tool call; its answer is text for the model (an error too, never an exception).
std::string run_tool(const llm::ToolCall& call, const PortContext& ctx, const std::set<std::string>& editable) {
  auto args = nlohmann::json::parse(call.arguments, nullptr, false);
  if (args.is_discarded() || !args.is_object()) return "error: the arguments are not a JSON object";
  auto str = [&](const char* k) { return util::json_get(args, k, std::string()); };
  if (call.name == "read_function") {
    const std::string name = str("name");
    for (const auto& rel : editable) {
      auto text = util::read_file(ctx.tree / rel);
      if (!text || !csrc::has_word(*text, name)) continue;
      auto toks = csrc::tokenize(*text);
      for (const auto& u : csrc::find_units(toks))
        if (u.kind == csrc::UnitKind::function && u.name == name)
          return rel + ":\n" +
                 text->substr(toks[u.first].begin, std::min<std::size_t>(toks[u.last].end - toks[u.first].begin, 8000));
    }
    return "no function " + name + " in the driver";
  }
  if (call.name == "read_lines") {
    const std::string path = str("path");
    if (!llm::editable_path(ctx.tree, path, editable)) return "refused: " + path + " is not a file of the driver";
    const int first = std::max(1, util::json_get(args, "first", 1));
    const int last = std::clamp(util::json_get(args, "last", first + 50), first, first + 200);
    return excerpt(ctx.tree, fs::path(path).lexically_normal().string(), (first + last) / 2, (last - first) / 2 + 1);
  }
  if (call.name == "kernel_declaration" || call.name == "kernel_callers") {
    auto found = kernel_lines(ctx.new_src, str("symbol"), call.name == "kernel_declaration", 8);
    return found.empty() ? "nothing found in the target kernel" : found;
  }
  return "error: no tool " + call.name;
}

/// The C sources and headers of the tree, relative: what an answer may edit.
std::set<std::string> driver_files(const fs::path& tree) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(tree, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto ext = it->path().extension();
    if ((ext == ".c" || ext == ".h") && it->is_regular_file(ec)) out.insert(fs::relative(it->path(), tree).string());
  }
  return out;
}

} // namespace

nlohmann::json AgentLog::to_json() const {
  return {{"calls", calls},
          {"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"ms", ms},
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

LlmAgent::LlmAgent(AgentSettings s) : m_settings(std::move(s)) { m_budget.max_tokens = m_settings.budget_tokens; }

util::Expected<llm::Reply> LlmAgent::converse(llm::Client& client, std::vector<llm::Message>& messages, const PortContext& ctx,
                                              const std::set<std::string>& editable, int& tool_calls) {
  static const std::vector<llm::Tool> tools = agent_tools();
  for (int turn = 0; turn <= m_settings.max_tool_turns; ++turn) {
    auto reply = client.chat(messages, turn < m_settings.max_tool_turns ? tools : std::vector<llm::Tool>{});
    if (!reply) return reply;
    ++m_log.calls;
    m_log.prompt_tokens += reply->usage.prompt_tokens;
    m_log.completion_tokens += reply->usage.completion_tokens;
    m_log.ms += reply->elapsed.count();
    if (reply->message.tool_calls.empty()) return reply;
    messages.push_back(reply->message);
    for (const auto& call : reply->message.tool_calls) {
      ++tool_calls;
      messages.push_back(llm::Message{"tool", run_tool(call, ctx, editable), {}, call.id});
    }
  }
  return util::unexpected(util::ErrorKind::parse,
                          fmt::format("the model kept calling tools ({} turns) without an answer", m_settings.max_tool_turns));
}

std::vector<Edit> LlmAgent::propose(const std::vector<core::Diagnostic>& diagnostics, const PortContext& ctx) {
  ++m_round;
  nlohmann::json round = {{"round", m_round}};
  const auto t0 = std::chrono::steady_clock::now();
  const int calls0 = m_log.calls;
  const long tokens0 = m_log.prompt_tokens + m_log.completion_tokens;
  const long prompt0 = m_log.prompt_tokens;
  std::vector<Edit> out;
  auto done = [&](std::string error) {
    round["calls"] = m_log.calls - calls0;
    round["tokens"] = m_log.prompt_tokens + m_log.completion_tokens - tokens0;
    round["tokens_in"] = m_log.prompt_tokens - prompt0;
    round["tokens_out"] = m_log.completion_tokens - (tokens0 - prompt0);
    round["ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    round["edits"] = out.size();
    if (!error.empty()) round["error"] = error;
    m_log.rounds.push_back(round);
    return out;
  };
  auto errs = errors_in_tree(diagnostics, ctx.tree, m_settings.max_locations);
  if (errs.empty()) return done("no error in the driver's files to show");
  std::string diags, locations;
  for (const auto* d : errs) {
    diags += util::trim(d->raw.empty() ? fmt::format("{}:{}: error: {}", d->file, d->line, d->message) : d->raw);
    diags += "\n";
    locations += excerpt(ctx.tree, d->file, d->line, 12) + "\n";
  }
  auto messages =
      llm::render_prompt("port-generator.v1", {{"from", ctx.from ? ctx.from->release : std::string("an older kernel")},
                                               {"target", ctx.to ? ctx.to->release : std::string("the target kernel")},
                                               {"diagnostics", diags},
                                               {"locations", locations},
                                               {"declarations", declarations(ctx.new_src, errs)}});
  if (!messages) return done(messages.error().describe());
  llm::Client client(m_settings.endpoint, &m_budget);
  const std::set<std::string> editable = driver_files(ctx.tree);
  int tool_calls = 0;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto reply = converse(client, *messages, ctx, editable, tool_calls);
    round["tool_calls"] = tool_calls;
    if (!reply) return done(reply.error().describe());
    std::string why;
    auto answer = llm::parse_answer(reply->message.content);
    if (answer) {
      const fs::path copy = ctx.scratch / fmt::format("llm-{}-{}", m_round, attempt);
      std::error_code ec;
      fs::remove_all(copy, ec);
      if (auto c = util::copy_tree(ctx.tree, copy, util::SkipBuildProducts::yes); !c) return done(c.error().describe());
      auto changed = llm::apply_answer(*answer, copy, editable);
      if (changed) {
        Edit e;
        e.proposer = "llm";
        e.change_id = fmt::format("llm:{}:{}", m_round, errs.front()->signature());
        e.label = "other";
        e.title = errs.front()->symbols.empty() ? "adapt to the target kernel" : "adapt to " + errs.front()->symbols.front();
        e.description = fmt::format("proposed by the model {} (round {}, answer {}), read as SEARCH/REPLACE edits of the "
                                    "driver's files",
                                    m_settings.endpoint.model, m_round, attempt);
        for (const auto& f : std::set<std::string>(changed->begin(), changed->end())) {
          auto before = util::read_file(ctx.tree / f);
          auto after = util::read_file(copy / f);
          if (!before || !after) continue;
          if (auto te = line_edit(f, *before, *after)) e.text_edits.push_back(std::move(*te));
        }
        fs::remove_all(copy, ec);
        if (!e.text_edits.empty()) out.push_back(std::move(e));
        return done(out.empty() ? "the answer changed nothing" : "");
      }
      fs::remove_all(copy, ec);
      why = changed.error().message;
    } else {
      why = answer.error().message;
    }
    if (attempt == 2) return done("the answer could not be used twice: " + why);
    auto retry = llm::render_prompt("port-retry.v1", {{"error", why}});
    if (!retry) return done(retry.error().describe());
    messages->push_back(reply->message);
    for (auto& m : *retry) messages->push_back(std::move(m));
  }
  return done("");
}

} // namespace autodriver::propose
