#pragma once
// SHA-256 of a byte string (libcrypto's): the content address of run-store blobs.

#include <string>
#include <string_view>

namespace autodriver::store {

/// Lower-case hex digest, 64 characters.
std::string sha256_hex(std::string_view data);

} // namespace autodriver::store
