// libFuzzer target: what a model's server sends back is untrusted bytes. Any bytes must give a
// reply or a parse error (whole or streamed), and an answer's edits or a parse error; never an
// exception, a crash or a hang.
#include "autodriver/llm/answer.hpp"
#include "autodriver/llm/client.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto r = autodriver::llm::parse_reply(text); r) (void)autodriver::llm::parse_answer(r->message.content);
  if (auto r = autodriver::llm::parse_stream(text); r) (void)autodriver::llm::parse_answer(r->message.content);
  if (auto a = autodriver::llm::parse_answer(text); a)
    for (const auto& d : a->diffs) (void)autodriver::llm::diff_paths(d);
  return 0;
}
