// libFuzzer target: crash reports read from arbitrary console bytes (crash/report).
#include "autodriver/crash/report.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view log(reinterpret_cast<const char*>(data), size);
  for (const auto& r : autodriver::crash::parse_reports(log)) {
    if (r.first_line < 1 || r.last_line < r.first_line) __builtin_trap();
    (void)r.guilty();
    (void)r.first_in("mod");
    (void)autodriver::crash::to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return 0;
}
