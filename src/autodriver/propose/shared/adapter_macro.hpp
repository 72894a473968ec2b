#pragma once
// Adapter macros: a one-parameter macro of the target's headers that, given a driver object
// named `p<in>`, defines `p<out>` of another type (include/linux/sysfs.h's ATTRIBUTE_GROUPS(p)
// reads `p_attrs` and defines `const struct attribute_group *p_groups[]`). When the target
// wants the other type where the driver passes `p<in>` (kobj_type.default_attrs became
// .default_groups), the driver gains `M(p);` after its object and passes `p<out>`.

#include <string>
#include <vector>

namespace autodriver::propose {

struct AdapterMacro {
  std::string macro;      ///< "ATTRIBUTE_GROUPS"
  std::string in_suffix;  ///< "_attrs": pasted onto the parameter, used, not defined
  std::string out_suffix; ///< "_groups": pasted onto the parameter, defined, not used
  std::string out_type;   ///< the defined object as a value: "const struct attribute_group **"
};

/// The adapter macros `#define`d in a header's text (one level of the header's other
/// one-parameter macros expanded, as ATTRIBUTE_GROUPS uses __ATTRIBUTE_GROUPS).
std::vector<AdapterMacro> adapter_macros(const std::string& header_text);

} // namespace autodriver::propose
