# One dep_* interface target per third-party dependency (all from Debian 12 packages).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

find_package(nlohmann_json 3.11 REQUIRED)
add_library(dep_json INTERFACE)
target_link_libraries(dep_json INTERFACE nlohmann_json::nlohmann_json)

find_package(fmt 9 REQUIRED)
add_library(dep_fmt INTERFACE)
target_link_libraries(dep_fmt INTERFACE fmt::fmt)

find_package(CLI11 2.1 REQUIRED)
add_library(dep_cli11 INTERFACE)
target_link_libraries(dep_cli11 INTERFACE CLI11::CLI11)

find_package(GTest REQUIRED)
add_library(dep_gtest INTERFACE)
target_link_libraries(dep_gtest INTERFACE GTest::gtest GTest::gtest_main)

pkg_check_modules(LIBGIT2 REQUIRED IMPORTED_TARGET libgit2>=1.5)
add_library(dep_git2 INTERFACE)
target_link_libraries(dep_git2 INTERFACE PkgConfig::LIBGIT2)

find_package(SQLite3 REQUIRED)
add_library(dep_sqlite INTERFACE)
target_link_libraries(dep_sqlite INTERFACE SQLite::SQLite3)
