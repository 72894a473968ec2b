#pragma once
// Small string helpers without kernel knowledge.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::util {

/// FNV-1a of the bytes of `s`: the same on every run, machine and build (std::hash is not), for
/// keys that are stored or must order things alike everywhere.
constexpr std::uint64_t fnv1a_64(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}
constexpr std::uint32_t fnv1a_32(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::vector<std::string_view> split_lines(std::string_view text);

/// How much of one line of untrusted output (compiler, sparse, guest console) the parsers read:
/// libstdc++'s regex recurses per character and overflows the stack on lines of ~32 KiB.
inline constexpr std::size_t k_max_parsed_line = 8192;

/// A line of untrusted output as its parsers read it: at most k_max_parsed_line bytes (a longer
/// line is a Makefile's $(info) of a huge variable or junk, never a diagnostic's own text).
inline std::string_view parsed_line(std::string_view line) { return line.substr(0, k_max_parsed_line); }
std::vector<std::string> split_words(std::string_view text);
std::string_view trim(std::string_view s);
bool contains(std::string_view haystack, std::string_view needle);
/// Replace every "{key}" in `text` by its value.
std::string substitute(std::string text, const std::vector<std::pair<std::string, std::string>>& vars);
/// Keep the last `cap` bytes, prefixed with a marker when cut.
std::string tail_capped(std::string_view text, std::size_t cap);
/// Split a command line into words: whitespace separated, '..' and ".." quoting, no expansion.
std::vector<std::string> split_command(std::string_view cmd);

} // namespace autodriver::util
