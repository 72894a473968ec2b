#pragma once
// Access to tests/fixtures (real captured tool output).

#include "autodriver/util/files.hpp"

#include <gtest/gtest.h>

#include <string>

inline std::string fixture(const std::string& rel) {
  auto text = autodriver::util::read_file(std::string(AD_FIXTURES) + "/" + rel);
  if (!text) ADD_FAILURE() << "missing fixture " << rel;
  return text ? *text : std::string();
}
