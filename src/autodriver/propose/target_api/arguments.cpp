// target-api strategy "arguments": a call with too many or too few arguments matched to the
// target's prototype by type and name; missing ones get the value the target's own callers pass most often.

#include "autodriver/csrc/tokens.hpp"
#include "autodriver/kernel/source_grep.hpp"
#include "autodriver/propose/shared/adapter_macro.hpp"
#include "autodriver/propose/shared/apply.hpp"
#include "autodriver/propose/shared/result_test.hpp"
#include "autodriver/propose/shared/target_decls.hpp"
#include "autodriver/propose/target_api/strategies.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/log.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace autodriver::propose::target_api {

using namespace csrc; // the C reader shared with gate/
namespace fs = std::filesystem;
using core::DiagKind;

namespace {

/// Best order-preserving assignment of `slots` items out of `n` (combinations), by score.
std::vector<std::size_t> best_subset(std::size_t n, std::size_t k,
                                     const std::function<int(const std::vector<std::size_t>&)>& score) {
  std::vector<std::size_t> best, cur;
  int best_score = -1000000;
  std::function<void(std::size_t)> rec = [&](std::size_t start) {
    if (cur.size() == k) {
      int s = score(cur);
      if (s > best_score) best_score = s, best = cur;
      return;
    }
    for (std::size_t i = start; i < n && n - i >= k - cur.size(); ++i) {
      cur.push_back(i);
      rec(i + 1);
      cur.pop_back();
    }
  };
  if (n <= 12) rec(0);
  return best;
}

bool is_gfp(const Param& p) { return p.type.find("gfp") != std::string::npos; }

std::string default_value(const Param& p) {
  const std::string& t = p.type;
  if (is_gfp(p)) return "GFP_KERNEL";
  if (t.find('*') != std::string::npos) return "NULL";
  if (t.find("bool") != std::string::npos) return "false";
  return "0";
}

const Call* call_at(const std::vector<Token>& toks, const std::vector<Call>& calls, const std::string& name, int line) {
  const Call* best = nullptr;
  for (const auto& c : calls)
    if (c.callee == name && (!best || std::abs(toks[c.name_tok].line - line) < std::abs(toks[best->name_tok].line - line)))
      best = &c;
  return best;
}

std::string smpl_call(const std::string& from, std::size_t arity, const std::string& to,
                      const std::vector<std::string>& new_args) {
  std::string metas, olds, news;
  for (std::size_t i = 0; i < arity; ++i) {
    metas += (i ? ", " : "") + fmt::format("E{}", i);
    olds += (i ? ", " : "") + fmt::format("E{}", i);
  }
  for (std::size_t i = 0; i < new_args.size(); ++i) news += (i ? ", " : "") + new_args[i];
  std::string head = arity ? fmt::format("@@\nexpression {};\n@@\n", metas) : "@@\n@@\n";
  return head + fmt::format("- {}({})\n+ {}({})\n", from, olds, to, news);
}

} // namespace

void arguments(TargetIndex& idx, const PortContext& ctx, const core::Diagnostic& d, std::vector<Edit>& out) {
  const std::string& name = d.symbols[0];
  auto proto = idx.prototype(name, &d);
  if (!proto || proto->variadic) return;
  auto text = util::read_file(ctx.tree / d.file);
  if (!text) return;
  auto toks = tokenize(*text);
  auto calls = find_calls(toks, 0, toks.empty() ? 0 : toks.size() - 1);
  const Call* c = call_at(toks, calls, name, d.line);
  if (!c) return;
  std::size_t n = c->args.size(), m = proto->params.size();
  std::vector<std::string> new_args;
  std::string what;
  std::size_t gfp_at = std::string::npos; // the added allocation-flags argument, if any
  if (n > m) {
    auto keep = best_subset(n, m, [&](const std::vector<std::size_t>& ks) {
      int s = 0;
      for (std::size_t j = 0; j < ks.size(); ++j) s += compat(c->args[ks[j]], proto->params[j]);
      return s;
    });
    if (keep.size() != m) return;
    for (auto i : keep) new_args.push_back(fmt::format("E{}", i));
    what = fmt::format("{}() takes {} argument(s) instead of {}", name, m, n);
  } else if (n < m) {
    int ncalls = 0;
    auto callers = idx.caller_args(name, m, &ncalls);
    auto slots = best_subset(m, n, [&](const std::vector<std::size_t>& ps) {
      int s = 0;
      for (std::size_t j = 0; j < ps.size(); ++j) s += compat(c->args[j], proto->params[ps[j]]);
      // Prefer keeping the existing arguments first (new parameters are usually appended).
      for (std::size_t j = 0; j < ps.size(); ++j) s -= static_cast<int>(ps[j] - j);
      return s;
    });
    if (slots.size() != n) return;
    std::size_t next = 0;
    for (std::size_t p = 0; p < m; ++p) {
      if (next < slots.size() && slots[next] == p) {
        new_args.push_back(fmt::format("E{}", next++));
        continue;
      }
      std::string value = default_value(proto->params[p]);
      if (is_gfp(proto->params[p]) && gfp_at == std::string::npos) gfp_at = new_args.size();
      int best = 0;
      for (const auto& [v, cnt] : callers[p])
        if (cnt > best && ncalls > 0 && cnt * 10 >= ncalls * 3) best = cnt, value = v;
      new_args.push_back(value);
    }
    what = fmt::format("{}() takes {} argument(s) instead of {}", name, m, n);
  } else {
    return;
  }
  Edit e;
  e.proposer = "target-api";
  e.change_id = "call:" + name;
  e.label = "arguments-changed";
  e.title = what;
  e.description = fmt::format("{}; the target declares it as `{}` ({}). Arguments were matched to the parameters by "
                              "type and name; new ones take the value the target's own callers pass most often.",
                              what, util::trim(proto->text), proto->header);
  e.smpl = smpl_call(name, n, name, new_args);
  if (gfp_at != std::string::npos) {
    // A call inside a function that is itself given allocation flags passes those on: the
    // context it runs in is its caller's to say (an atomic one included), not the default's.
    auto in_scope = new_args;
    in_scope[gfp_at] = "g";
    std::vector<std::string> olds;
    for (std::size_t i = 0; i < n; ++i) olds.push_back(fmt::format("E{}", i));
    e.smpl = fmt::format("@@\nidentifier f, g;\n{}@@\nf(..., gfp_t g, ...)\n{{\n<...\n- {}({})\n+ {}({})\n...>\n}}\n\n",
                         n ? fmt::format("expression {};\n", fmt::join(olds, ", ")) : "", name, fmt::join(olds, ", "), name,
                         fmt::join(in_scope, ", ")) +
             e.smpl;
    e.description += " A call inside a function that takes allocation flags (gfp_t) passes those.";
  }
  CallRewrite cr{name, n, name, {}};
  for (const auto& a : new_args) cr.args.push_back(std::regex_replace(a, std::regex(R"(\bE(\d+)\b)"), "$$$1"));
  e.call = cr;
  e.symbols = {name};
  e.support = 1;
  e.rank = 1; // learned rules, when available, go first
  // A function that changed its arguments often changed what it returns on failure too
  // (blk_alloc_disk: NULL, then an ERR_PTR). The driver's tests of its result in the target's
  // convention are a change of their own that follows the call's (whichever proposer's rewrite
  // the loop keeps): it builds either way, so it is never tried alone.
  if (auto r = result_follow_up(idx, ctx.tree, name, name, e.change_id)) out.push_back(std::move(*r));
  out.push_back(std::move(e));
}

} // namespace autodriver::propose::target_api
