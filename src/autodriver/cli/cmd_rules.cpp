// `autodriver rules list | show NAME | check DIR...`: the rule packs (knowledge stated by hand).

#include "autodriver/cli/commands.hpp"
#include "autodriver/propose/rules/rules.hpp"
#include "autodriver/util/json_text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace autodriver::cli {

namespace fs = std::filesystem;

namespace {

nlohmann::json rule_json(const propose::Rule& r, bool body) {
  nlohmann::json j = {{"name", r.name},     {"kind", r.kind},       {"file", r.file},
                      {"kernel", r.kernel}, {"source", r.source},   {"kernel_definition", r.kernel_definition},
                      {"why", r.why},       {"symbols", r.symbols}, {"fields", r.fields}};
  if (body) j["body"] = r.body;
  return j;
}

} // namespace

Command rules_command() {
  return {"rules", "List, show and check rule packs: kernel-API knowledge stated by hand, one file per change, with provenance",
          [](CLI::App& sub) -> std::function<int()> {
            sub.require_subcommand(1);
            struct Opts {
              bool json = false;
              bool no_shipped = false;
              std::vector<fs::path> dirs;
              std::string name;
            };
            auto o = std::make_shared<Opts>();
            auto* list = sub.add_subcommand("list", "The rules a port would use: the shipped ones and your --rules folders");
            auto* show = sub.add_subcommand("show", "One rule: its provenance and its body");
            auto* check =
                sub.add_subcommand("check", "Check rule files (every *.rule of each folder); exit 2 naming the first bad one");
            for (auto* c : {list, show}) {
              c->add_option("--rules", o->dirs, "A folder of your own rule files (repeatable)")->check(CLI::ExistingDirectory);
              c->add_flag("--no-rule-packs", o->no_shipped, "Leave out the shipped rules");
            }
            show->add_option("name", o->name, "Rule name (the file's stem)")->required();
            check->add_option("dirs", o->dirs, "Folders of rule files")->required()->check(CLI::ExistingDirectory);
            for (auto* c : {list, show, check}) c->add_flag("--json", o->json, "Machine-readable output");
            return [o, list, show, check]() -> int {
              bool shipped = !o->no_shipped && !check->parsed();
              auto rules = propose::load_rules(shipped, o->dirs);
              if (!rules) {
                std::fprintf(stderr, "autodriver: error: %s\n", rules.error().message.c_str());
                return k_exit_error;
              }
              if (show->parsed()) {
                for (const auto& r : *rules)
                  if (r.name == o->name) {
                    if (o->json) std::cout << rule_json(r, true).dump(2, ' ', false, util::json_bytes) << "\n";
                    else
                      fmt::print("{}\nkind: {}\nprovenance: {}\n{}{}---\n{}", r.name, r.kind, r.provenance(),
                                 r.why.empty() ? "" : "why: " + r.why + "\n",
                                 r.symbols.empty() ? "" : fmt::format("symbols: {}\n", fmt::join(r.symbols, " ")), r.body);
                    return k_exit_ok;
                  }
                std::fprintf(stderr, "autodriver: error: no rule named '%s' (autodriver rules list)\n", o->name.c_str());
                return k_exit_error;
              }
              if (o->json) {
                nlohmann::json a = nlohmann::json::array();
                for (const auto& r : *rules) a.push_back(rule_json(r, false));
                std::cout << a.dump(2, ' ', false, util::json_bytes) << "\n";
                return k_exit_ok;
              }
              if (check->parsed()) {
                fmt::print("{} rule file(s) ok\n", rules->size());
                return k_exit_ok;
              }
              (void)list;
              for (const auto& r : *rules)
                fmt::print("{:<28} {:<18} Linux {:<7} {}{}\n", r.name, r.kind, r.kernel, r.file,
                           r.kernel_definition ? "" : "  (stated by hand)");
              return k_exit_ok;
            };
          }};
}

} // namespace autodriver::cli
