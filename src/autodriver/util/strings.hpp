#pragma once
// Small string helpers without kernel knowledge.

#include <string>
#include <string_view>
#include <vector>

namespace autodriver::util {

std::vector<std::string_view> split_lines(std::string_view text);
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
