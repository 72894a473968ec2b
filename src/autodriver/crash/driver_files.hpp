#pragma once
// The driver's C files read once for the analyses that look across the whole driver (a tail
// call's lost frame, a lock another function leaves held).

#include "autodriver/csrc/tokens.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::crash {

struct DriverFile {
  std::string rel; ///< relative to the tree
  std::vector<csrc::Token> toks;
  std::vector<csrc::Unit> units;
};

/// Every .c file under `tree`, in path order.
std::vector<DriverFile> read_driver(const std::filesystem::path& tree);

} // namespace autodriver::crash
