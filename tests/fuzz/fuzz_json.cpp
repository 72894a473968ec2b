// libFuzzer target: diagnostics read back from JSON others wrote (a run store an older version or
// a hand edit left, read by RunStore::steps): any JSON value must give a Diagnostic, never an exception.
#include "autodriver/core/diagnostic.hpp"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto d = autodriver::core::diagnostic_from_json(j);
  if (j.is_array())
    for (const auto& x : j) (void)autodriver::core::diagnostic_from_json(x);
  (void)autodriver::core::to_json(d).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
