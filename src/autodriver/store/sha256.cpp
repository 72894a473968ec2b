#include "autodriver/store/sha256.hpp"

#include <openssl/sha.h>

namespace autodriver::store {

std::string sha256_hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * SHA256_DIGEST_LENGTH);
  for (unsigned char b : md) {
    out.push_back(k_hex[b >> 4]);
    out.push_back(k_hex[b & 0xf]);
  }
  return out;
}

} // namespace autodriver::store
