// libFuzzer target: gcc / kbuild / modpost / objtool / assembler / make output, and sparse's, as
// the build gate parses it. Build output is the driver's doing (its sources, its Makefile).
#include "autodriver/gate/gcc_parser.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  autodriver::gate::ParseOptions o;
  o.tree_root = "/autodriver/tree";
  if (data[0] & 1) o.tool = "sparse";
  auto ds = autodriver::gate::parse_build_output(text, o);
  for (const auto& d : ds) (void)autodriver::core::to_json(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
