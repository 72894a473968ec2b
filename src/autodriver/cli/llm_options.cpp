#include "autodriver/cli/llm_options.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace autodriver::cli {

void add_llm_options(CLI::App& sub, llm::Options& o, std::string& price, const std::string& per) {
  sub.add_option("--llm", o.url,
                 "An OpenAI-compatible endpoint (http://127.0.0.1:8080/v1: llama.cpp, vLLM, Ollama, a hosted API) "
                 "asked for the errors the rule proposers leave; its answers are data, tried and gated like any edit");
  sub.add_option("--model", o.model, "With --llm: the model's name");
  sub.add_option("--llm-budget", o.budget_tokens, fmt::format("With --llm: tokens {} may spend (default: no limit)", per))
      ->check(positive());
  sub.add_option("--llm-price", price,
                 "With --llm: the endpoint's prices per million prompt and completion tokens, IN,OUT (e.g. 0.5,1.5); "
                 "the verdict and the bench report then say what the calls cost");
  sub.add_option("--llm-max-cost", o.max_cost,
                 fmt::format("With --llm and --llm-price: what {} may spend at those prices (default: no limit)", per))
      ->check(positive());
  sub.add_option("--llm-attempts", o.attempts,
                 "With --llm: answers built and reviewed per round (the first, refinements of the best near miss, a last "
                 "one given the lessons of all failed ones)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10));
  sub.add_flag("--llm-stream", o.stream, "With --llm: ask for streamed answers (server-sent events)");
  sub.add_option("--llm-key-env", o.key_env, "With --llm: the environment variable holding the API key (never logged or stored)")
      ->capture_default_str();
}

std::string finish_llm_options(llm::Options& o, const std::string& price) {
  const bool asked = !o.model.empty() || o.budget_tokens > 0 || o.max_cost > 0 || !price.empty() || o.stream;
  if (!o.on()) return asked ? "--model, --llm-budget, --llm-price, --llm-max-cost and --llm-stream need --llm URL" : "";
  if (o.model.empty()) return "--llm needs --model NAME";
  if (!o.url.starts_with("http://") && !o.url.starts_with("https://"))
    return fmt::format("--llm {}: not an http:// or https:// URL", o.url);
  if (!price.empty()) {
    const auto comma = price.find(',');
    char* end1 = nullptr;
    char* end2 = nullptr;
    const std::string a = price.substr(0, comma);
    const std::string b = comma == std::string::npos ? std::string() : price.substr(comma + 1);
    o.price_in = std::strtod(a.c_str(), &end1);
    o.price_out = std::strtod(b.c_str(), &end2);
    if (comma == std::string::npos || a.empty() || b.empty() || *end1 || *end2 || o.price_in < 0 || o.price_out < 0)
      return fmt::format("--llm-price {}: expected IN,OUT, two prices per million tokens (e.g. 0.5,1.5)", price);
  }
  if (o.max_cost > 0 && price.empty()) return "--llm-max-cost needs --llm-price IN,OUT";
  return "";
}

} // namespace autodriver::cli
