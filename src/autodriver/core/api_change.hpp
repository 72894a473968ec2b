#pragma once
// ApiChange: one difference between two kernels' declarations of a symbol a driver uses.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace autodriver::core {

/// Closed set of change classes. Numbers are stored on disk (JSON, run store) and never reused.
enum class ChangeKind : int {
  removed = 1,      ///< declared in FROM, nowhere in TO (and no rename candidate)
  renamed = 2,      ///< removed, and a new TO symbol of the same kind with a similar name fits
  args_added = 3,   ///< function or function-like macro takes more arguments
  args_removed = 4, ///< ... fewer arguments
  arg_retyped = 5,  ///< same count, some parameter type differs
  return_type_changed = 6,
  member_removed = 7,         ///< struct/union member the driver names is gone
  member_renamed = 8,         ///< ... and a new member of the same type with a similar name exists
  member_retyped = 9,         ///< data member type changed
  callback_type_changed = 10, ///< function-pointer member (ops callback) has another type
  macro_arity_changed = 11,   ///< function-like macro takes another number of parameters
  moved_header = 12,          ///< declared in another header
  kind_changed = 13,          ///< e.g. a macro became a function, a function became a macro
  typedef_changed = 14,       ///< typedef names another type
  added = 15,                 ///< not declared in FROM, declared in TO (driver compat code)
};

std::string_view to_string(ChangeKind kind);

struct ApiChange {
  std::string symbol; ///< "class_create", "struct i2c_driver", "ETH_RSS_HASH_TOP"
  std::string member; ///< member name for member_* and callback_type_changed, else empty
  ChangeKind kind = ChangeKind::removed;
  std::string from;        ///< FROM's declaration (prototype, member type, macro signature); empty if none
  std::string to;          ///< TO's declaration; for renames the new name's declaration
  std::string new_name;    ///< renamed / member_renamed: the candidate's name
  std::string header_from; ///< "linux/i2c.h" (relative to an include dir), empty if none
  std::string header_to;
  std::string summary; ///< one line for humans
};

nlohmann::json to_json(const ApiChange& c);

} // namespace autodriver::core
