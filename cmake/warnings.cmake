# One interface target that every autodriver library links, so warning flags live in one place.
add_library(ad_warnings INTERFACE)
target_compile_options(ad_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wno-missing-field-initializers)
