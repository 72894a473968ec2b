#pragma once
// What the agent tests share: a model's plain answer, and a one-file driver with one error
// (x.c:5, `foo(1)` lacks an argument) in a scratch folder.

#include "autodriver/propose/proposer.hpp"
#include "autodriver/util/files.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::testing {

/// A non-streamed chat-completions answer with `content` (100 prompt, 20 completion tokens).
inline std::string reply(const std::string& content) {
  nlohmann::json j = {{"choices", {{{"finish_reason", "stop"}, {"message", {{"role", "assistant"}, {"content", content}}}}}},
                      {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 20}}}};
  return j.dump();
}

struct LlmCase {
  std::optional<util::TempDir> dir;
  propose::PortContext ctx;
  std::vector<core::Diagnostic> diags;
  LlmCase() {
    auto d = util::TempDir::create(std::filesystem::temp_directory_path(), "ad-llm-case");
    if (!d) return;
    dir.emplace(std::move(*d));
    std::filesystem::create_directories(dir->path() / "tree");
    std::filesystem::create_directories(dir->path() / "scratch");
    (void)util::write_file(dir->path() / "tree/x.c", "#include <linux/x.h>\n\nint x_probe(void)\n{\n\treturn foo(1);\n}\n");
    ctx.tree = dir->path() / "tree";
    ctx.scratch = dir->path() / "scratch";
    core::Diagnostic e;
    e.file = "x.c";
    e.line = 5;
    e.message = "too few arguments to function 'foo'";
    e.symbols = {"foo"};
    e.raw = "x.c:5:9: error: too few arguments to function 'foo'";
    diags = {e};
  }
};

} // namespace autodriver::testing
