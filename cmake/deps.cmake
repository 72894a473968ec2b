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

# libelf (Debian libelf-dev, elfutils): crash/ reads module symbol tables with it.
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
add_library(dep_elf INTERFACE)
target_link_libraries(dep_elf INTERFACE PkgConfig::LIBELF)

# libarchive (Debian libarchive-dev): the boot gate's initramfs (a newc cpio archive).
pkg_check_modules(LIBARCHIVE REQUIRED IMPORTED_TARGET libarchive)
add_library(dep_archive INTERFACE)
target_link_libraries(dep_archive INTERFACE PkgConfig::LIBARCHIVE)

# libcrypto (Debian libssl-dev, which kernel builds need anyway): the run store's content hashes.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
add_library(dep_crypto INTERFACE)
target_link_libraries(dep_crypto INTERFACE OpenSSL::Crypto)

find_package(SQLite3 REQUIRED)
add_library(dep_sqlite INTERFACE)
target_link_libraries(dep_sqlite INTERFACE SQLite::SQLite3)

# libclang (Debian libclang-14-dev): apidiff parses kernel headers with it.
find_path(LIBCLANG_INCLUDE_DIR clang-c/Index.h HINTS /usr/lib/llvm-14/include REQUIRED)
find_library(LIBCLANG_LIBRARY NAMES clang clang-14 libclang.so.1 HINTS /usr/lib/llvm-14/lib REQUIRED)
add_library(dep_clang INTERFACE)
target_include_directories(dep_clang SYSTEM INTERFACE ${LIBCLANG_INCLUDE_DIR})
target_link_libraries(dep_clang INTERFACE ${LIBCLANG_LIBRARY})

# libcurl (Debian libcurl4-openssl-dev): llm/ speaks to OpenAI-compatible endpoints with it.
find_package(CURL REQUIRED)
add_library(dep_curl INTERFACE)
target_link_libraries(dep_curl INTERFACE CURL::libcurl)

# cpp-httplib (Debian libcpp-httplib-dev, built as a shared library): the tests' loopback model server.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
add_library(dep_httplib INTERFACE)
target_link_libraries(dep_httplib INTERFACE PkgConfig::HTTPLIB Threads::Threads)
