#include "autodriver/cli/llm_options.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>

namespace autodriver::cli {

// Why `url` cannot be an endpoint (scheme, host, port), or empty: checked before any request.
static std::string endpoint_error(std::string_view url) {
  std::string_view rest;
  if (url.starts_with("http://")) rest = url.substr(7);
  else if (url.starts_with("https://")) rest = url.substr(8);
  else return fmt::format("'{}' is not an http:// or https:// URL", url);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos) authority = authority.substr(authority.rfind('@') + 1);
  std::string_view host = authority, port;
  if (authority.starts_with("[")) { // [::1]:8080
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fmt::format("'{}': the IPv6 host has no closing ']'", url);
    host = authority.substr(0, close + 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return fmt::format("'{}': text after the host", url);
      port = authority.substr(close + 2);
    }
  } else if (auto colon = authority.find(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty() || host == "[]") return fmt::format("'{}' names no host", url);
  for (char c : host)
    if (std::isspace(static_cast<unsigned char>(c))) return fmt::format("'{}': a space in the host", url);
  if (authority.find(':') != std::string_view::npos && !authority.starts_with("[") && port.empty())
    return fmt::format("'{}': an empty port", url);
  if (!port.empty()) {
    long n = 0;
    for (char c : port) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || n > 65535) return fmt::format("'{}': the port is not 1-65535", url);
      n = n * 10 + (c - '0');
    }
    if (n < 1 || n > 65535) return fmt::format("'{}': the port is not 1-65535", url);
  }
  return "";
}

void add_llm_options(CLI::App& sub, llm::Options& o, std::string& price, const std::string& per) {
  sub.add_option("--llm", o.url,
                 "An OpenAI-compatible endpoint (http://127.0.0.1:8080/v1: llama.cpp, vLLM, Ollama, a hosted API) "
                 "asked for the errors the rule proposers leave; its answers are data, tried and gated like any edit "
                 "(scheme, host and port checked before any request)");
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
  if (auto why = endpoint_error(o.url); !why.empty()) return "--llm: " + why;
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
