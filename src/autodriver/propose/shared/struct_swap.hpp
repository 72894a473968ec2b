#pragma once
// A callback's parameter changed from `struct A *` to `struct B *` (ethtool_ops.get_eee:
// ethtool_eee -> ethtool_keee): the driver's values of struct A flow through its own helpers,
// locals and struct members, so the whole driver moves to struct B. Members of B that hold a
// different representation than A's (A's u32 mask became a link-mode bitmap) are converted
// the way the target's own code converts between the two structs (net/ethtool/ioctl.c's
// eee_to_keee/keee_to_eee: `F(b->m, a->m)` into B, `G(&a->m, b->m)` out of it).

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace autodriver::propose {

/// How one member is converted between the two structs.
struct MemberBridge {
  std::string into;   ///< F(new->m, scalar): writes a scalar into B's member
  std::string out_of; ///< G(&scalar, new->m): reads B's member as a scalar
  std::string scalar; ///< the scalar's type ("u32"), from G's first parameter
};

/// The member conversions the target's own code makes between `struct from_tag` and `struct
/// to_tag`, learned from the functions of `text` that hold both (parameters or locals). Only
/// calls with the member on both sides count. A direction learned for one member stands in
/// for the others when only that one was seen (the same struct pair, the same representation).
std::map<std::string, MemberBridge> learn_member_bridges(const std::string& text, const std::string& from_tag,
                                                         const std::string& to_tag);

/// learn_member_bridges over the target source files naming both tags (grep of the target's
/// drivers, net, fs, kernel and include dirs; capped, timed out). `scalar_type_of` maps a
/// conversion function to its scalar type (the pointee of G's first parameter); bridges
/// without one are dropped.
std::map<std::string, MemberBridge> target_member_bridges(const std::filesystem::path& new_src, const std::string& from_tag,
                                                          const std::string& to_tag,
                                                          const std::function<std::string(const std::string&)>& scalar_type_of);

/// Names declared with `struct tag` (variables, parameters, struct members) in `text`.
std::set<std::string> names_of_struct_type(const std::string& text, const std::set<std::string>& tags);

/// `text` with every `struct from_tag` spelled `struct to_tag`, and each use of a bridged member
/// through one of `names` rewritten in its function: `x->m = E;` -> `F(x->m, E);`, a read of
/// `x->m` -> a local scalar filled by `G(&tmp, x->m);` just before its statement (declared at
/// the top of the function). Statements it cannot rewrite safely (a read in a loop condition or
/// in an unbraced branch) are left as they were: the build then rejects the result.
std::string swap_struct(const std::string& text, const std::string& from_tag, const std::string& to_tag,
                        const std::map<std::string, MemberBridge>& bridges, const std::set<std::string>& names);

} // namespace autodriver::propose
