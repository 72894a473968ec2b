// libFuzzer target: the QEMU serial console as the boot gate parses it (oopses, KASAN reports,
// the init script's markers), then rendered as JSON the way verdicts carry it.
#include "autodriver/gate/console_parser.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view log(reinterpret_cast<const char*>(data), size);
  auto r = autodriver::gate::parse_console(log);
  for (const auto& f : r.findings)
    (void)autodriver::gate::to_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
