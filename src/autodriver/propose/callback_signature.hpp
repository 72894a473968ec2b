#pragma once
// callback-signature internals shared with its tests: how a callback's parameter list is
// reshaped when the kernel's callback type gains, loses or folds parameters.

#include "autodriver/propose/shared/target_decls.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::propose {

struct ParamReshape {
  std::vector<std::string> params;   ///< the new parameter list, each "type name"
  std::vector<std::string> prologue; ///< declarations opening the body, binding folded names
  std::vector<std::string> unused;   ///< dropped parameters: the body must not use them
  std::vector<std::string> added;    ///< names of parameters the target adds
  std::vector<Param> dropped;        ///< the dropped parameters (type and name)
  std::vector<std::string> names;    ///< the new parameters' names, by position
};

/// Plans the move from `old_params` (the driver's definition) to the target's `to_types`.
/// Kept prefix/suffix parameters keep their names (retyped, e.g. gaining const); the old
/// parameters in between are either folded into a `struct S *` parameter of the target whose
/// members have their names and types (`u8 *hfunc` -> `u8 *hfunc = &rxfh->hfunc;`), or dropped
/// (they must then be unused). New parameters are named `to_names[i]` (what the target's own
/// implementations call them) or after their struct tag. When parameters were only added, an old
/// parameter goes where its name went among `to_names`, else to `old_to_new[i]` (where the kernel's
/// own implementations moved position i). Nullopt when no such plan exists.
std::optional<ParamReshape> plan_param_reshape(const std::vector<Param>& old_params, const std::vector<std::string>& to_types,
                                               const std::vector<std::string>& to_names,
                                               const std::function<std::vector<Param>(const std::string&)>& members,
                                               const std::vector<std::size_t>& old_to_new = {});

/// The driver's direct calls `fn(a, b)` in `text` after a plan that only added parameters
/// (`old_at[i]`: the new position of old parameter i, increasing): each added parameter gets
/// NULL when it is a pointer, else 0 (the body, written without it, never reads it). Nullopt when
/// an added parameter is a struct or union by value or a call does not have the old arity.
std::optional<std::string> pass_added_arguments(const std::string& text, const std::string& fn,
                                                const std::vector<std::size_t>& old_at, const std::vector<std::string>& to_types);

} // namespace autodriver::propose
