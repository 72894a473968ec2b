#pragma once
// `bench`: run the port loop over DriveBench cases and measure compile rate, load rate,
// integrity rejections, similarity to the golden and time, side by side with the paper.

#include "autodriver/llm/client.hpp"
#include "autodriver/util/expected.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace autodriver::bench {

inline constexpr int k_bench_schema_version = 1;

struct BenchRequest {
  std::filesystem::path corpus; ///< a corpus dir (cases/<id>/metadata.json)
  std::string split;            ///< "dev", "test" or empty for all
  int jobs = 1;
  int limit = 0;                                ///< 0 = all
  bool boot = true;                             ///< load/probe runtime-testable cases
  bool use_from = true;                         ///< pass --from (the case's old kernel)
  std::filesystem::path out;                    ///< results dir: results.jsonl (resumable), ports/<id>/, report.json
  std::vector<std::string> only;                ///< case id prefixes
  std::chrono::seconds budget{300};             ///< per case
  std::chrono::seconds build_timeout{0};        ///< per build (port --build-timeout); 0: the loop's default
  std::filesystem::path store;                  ///< run store; empty = the default
  bool reference = true;                        ///< with use_from false: the loop's reference kernel (port --no-reference)
  bool store_kb = true;                         ///< store-kb: replay KB entries recorded from other cases' runs
  bool rule_packs = true;                       ///< rule-pack: the shipped rules (port --no-rule-packs)
  std::vector<std::filesystem::path> rule_dirs; ///< rule-pack: user rule folders (port --rules)
  llm::Options llm;                             ///< port --llm ... for each case (the budgets are per case)
};

struct CaseResult {
  std::string id;
  nlohmann::json row; ///< one results.jsonl line
};

using BenchProgressFn = std::function<void(const std::string&)>;

util::Expected<nlohmann::json> run_bench(const BenchRequest& request, const BenchProgressFn& progress);

/// Markdown table of a report (with the AutoDriver paper's published figures beside ours).
std::string report_markdown(const nlohmann::json& report);

/// Token-normalised text of C source: comments and whitespace removed (for golden comparison).
std::string normalize_c(const std::string& text);

} // namespace autodriver::bench
