#pragma once
// SHA-256 (FIPS 180-4) of a byte string: the content address of run-store blobs.

#include <string>
#include <string_view>

namespace autodriver::store {

/// Lower-case hex digest, 64 characters.
std::string sha256_hex(std::string_view data);

} // namespace autodriver::store
