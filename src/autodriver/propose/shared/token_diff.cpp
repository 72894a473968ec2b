#include "autodriver/propose/shared/token_diff.hpp"

#include <cstdint>

namespace autodriver::propose {

std::vector<TokenHunk> diff_tokens(const std::vector<Token>& a, std::size_t a0, std::size_t a1, const std::vector<Token>& b,
                                   std::size_t b0, std::size_t b1, std::size_t cap) {
  std::vector<TokenHunk> out;
  if (a1 < a0 || b1 < b0) return out;
  std::size_t n = a1 - a0 + 1, m = b1 - b0 + 1;
  // The common head and tail are no part of any hunk: a long function changed in one line is
  // diffed over that line (the LCS of the rest is unchanged by taking them out).
  std::size_t head = 0, tail = 0;
  while (head < n && head < m && a[a0 + head].text == b[b0 + head].text) ++head;
  while (tail < n - head && tail < m - head && a[a1 - tail].text == b[b1 - tail].text) ++tail;
  if (head == n && head == m) return out;
  if (head + tail == n || head + tail == m) {
    out.push_back({a0 + head, n - head - tail, b0 + head, m - head - tail});
    return out;
  }
  a0 += head, b0 += head, a1 -= tail, b1 -= tail;
  n -= head + tail, m -= head + tail;
  if (n > cap || m > cap) return out;
  // Suffix LCS table; uint16 is enough for the cap.
  std::vector<std::uint16_t> t((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint16_t& { return t[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = a[a0 + i].text == b[b0 + j].text ? static_cast<std::uint16_t>(at(i + 1, j + 1) + 1)
                                                  : std::max(at(i + 1, j), at(i, j + 1));
  std::size_t i = 0, j = 0;
  TokenHunk cur;
  bool open = false;
  auto flush = [&]() {
    if (open && (cur.a_count || cur.b_count)) out.push_back(cur);
    open = false;
  };
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i].text == b[b0 + j].text) {
      flush();
      ++i, ++j;
      continue;
    }
    if (!open) {
      cur = {a0 + i, 0, b0 + j, 0};
      open = true;
    }
    if (j < m && (i == n || at(i, j + 1) >= at(i + 1, j))) {
      ++cur.b_count;
      ++j;
    } else {
      ++cur.a_count;
      ++i;
    }
  }
  flush();
  return out;
}

} // namespace autodriver::propose
