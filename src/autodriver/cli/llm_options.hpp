#pragma once
// The --llm options port and bench share: added to a subcommand, then checked once parsed.

#include "autodriver/llm/client.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace autodriver::cli {

/// --llm URL, --model, --llm-budget, --llm-max-cost, --llm-price, --llm-attempts, --llm-key-env;
/// `per` says what a budget is for ("the run", "each case"). `price` receives --llm-price's text.
void add_llm_options(CLI::App& sub, llm::Options& o, std::string& price, const std::string& per);

/// Empty when the options are usable (prices parsed into `o`), else one line saying what is wrong.
std::string finish_llm_options(llm::Options& o, const std::string& price);

} // namespace autodriver::cli
