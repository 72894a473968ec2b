# Precompiled headers: the heavy headers nearly every translation unit includes (nlohmann-json,
# fmt, <regex>, <filesystem> and the containers) are parsed once per library instead of once per
# file. Measured in docs/benchmarks.md ("Build time"); -DAUTODRIVER_PCH=OFF builds without them.
option(AUTODRIVER_PCH "Precompile the heavy common headers" ON)

function(ad_pch target)
  if(AUTODRIVER_PCH)
    target_precompile_headers(${target} PRIVATE
      <nlohmann/json.hpp> <fmt/format.h> <regex> <filesystem> <functional> <map> <optional> <set> <string>
      <string_view> <vector>)
  endif()
endfunction()
