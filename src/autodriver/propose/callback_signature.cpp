// Proposer "callback-signature": an ops/driver struct member's callback type changed (the
// incompatible-pointer-type error names both function types). When only the return type
// changed from int to void, the callback's definition is rewritten and its return statements
// fixed; the rule comes from the two types gcc prints, not from a table.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/files.hpp"
#include "autodriver/util/strings.hpp"

#include <fmt/format.h>

#include <regex>
#include <set>

namespace autodriver::propose {

namespace fs = std::filesystem;

namespace {

struct FnType {
  std::string ret;
  std::string params;
};

bool parse_fn_type(const std::string& s, FnType& out) {
  static const std::regex k_fn(R"(^(.*?)\s*\(\*\)\((.*)\)$)");
  std::smatch m;
  if (!std::regex_match(s, m, k_fn)) return false;
  out.ret = std::string(util::trim(m[1].str()));
  out.params = std::string(util::trim(m[2].str()));
  return true;
}

/// The identifier assigned on a line like "\t.remove = foo_remove," or "x->remove = foo;".
std::string assigned_identifier(const std::string& line) {
  static const std::regex k_assign(R"(=\s*&?\s*([A-Za-z_]\w*)\s*[,;]?\s*$)");
  std::smatch m;
  if (std::regex_search(line, m, k_assign)) return m[1].str();
  return {};
}

std::string void_return_smpl(const std::string& fn, const std::string& old_ret) {
  // 1) "return f(x);" keeps the call; 2) other "return E;" become "return;";
  // 3) a trailing "return;" is dropped; 4) the return type becomes void.
  return fmt::format(R"(@@
identifier f;
expression list es;
@@
{0}(...) {{
<...
- return f(es);
+ f(es);
+ return;
...>
}}

@@
expression E;
@@
{0}(...) {{
<...
- return E;
+ return;
...>
}}

@@
@@
{0}(...) {{
...
- return;
}}

@@
@@
- {1}
+ void
{0}(...) {{ ... }}
)",
                     fn, old_ret);
}

class CallbackSignature final : public Proposer {
public:
  std::string_view id() const override { return "callback-signature"; }

  std::vector<Edit> propose(const std::vector<core::Diagnostic>& diags, const PortContext& ctx) override {
    std::vector<Edit> out;
    std::set<std::string> done;
    for (const auto& d : diags) {
      if (d.kind != core::DiagKind::incompatible_pointer_type || d.symbols.size() < 2) continue;
      FnType to, from;
      if (!parse_fn_type(d.symbols[0], to) || !parse_fn_type(d.symbols[1], from)) continue;
      if (to.params != from.params || to.ret != "void" || from.ret == "void") continue;
      auto text = util::read_file(ctx.tree / d.file);
      if (!text) continue;
      auto lines = util::split_lines(*text);
      if (d.line < 1 || static_cast<std::size_t>(d.line) > lines.size()) continue;
      std::string fn = assigned_identifier(std::string(lines[static_cast<std::size_t>(d.line) - 1]));
      if (fn.empty() || !done.insert(fn).second) continue;
      Edit e;
      e.proposer = "callback-signature";
      e.change_id = "callback:" + fn;
      e.label = "callback-type-changed";
      e.title = fmt::format("callback returns void instead of {}", from.ret);
      e.description = fmt::format(
          "The kernel now expects '{}' where {}() is '{}': {}() returns void and its return statements "
          "no longer carry a value.",
          d.symbols[0], fn, d.symbols[1], fn);
      e.smpl = void_return_smpl(fn, from.ret);
      e.symbols = {fn, d.symbols[0]};
      e.support = 1;
      out.push_back(std::move(e));
    }
    return out;
  }
};

} // namespace

std::unique_ptr<Proposer> make_callback_signature() { return std::make_unique<CallbackSignature>(); }

} // namespace autodriver::propose
