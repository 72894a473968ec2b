# One interface target that every autodriver library links, so warning flags live in one place.
add_library(ad_warnings INTERFACE)
target_compile_options(ad_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wno-missing-field-initializers)
# GCC 12 (Debian 12's) reports -Wrestrict inside std::string's own operator+ and replace at -O2
# (GCC bug 105651, fixed in GCC 13): a false positive in the standard library, not in this code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(ad_warnings INTERFACE -Wno-restrict)
endif()
