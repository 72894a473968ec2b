#include "autodriver/gate/scratch.hpp"

#include "autodriver/util/files.hpp"

namespace autodriver::gate {

util::Expected<util::TempDir> make_scratch(std::string_view prefix) {
  return util::TempDir::create(util::scratch_root(), prefix);
}

} // namespace autodriver::gate
