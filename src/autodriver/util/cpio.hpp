#pragma once
// The "newc" cpio archive the kernel unpacks as an initramfs, written by libarchive (character
// devices included, with no root needed and nothing written to disk).

#include "autodriver/util/expected.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct archive;

namespace autodriver::util {

class CpioWriter {
public:
  CpioWriter();
  ~CpioWriter();
  CpioWriter(const CpioWriter&) = delete;
  CpioWriter& operator=(const CpioWriter&) = delete;

  void add_directory(std::string_view path, std::uint32_t mode = 0755);
  void add_file(std::string_view path, std::string_view content, std::uint32_t mode = 0644);
  void add_symlink(std::string_view path, std::string_view target);
  void add_char_device(std::string_view path, std::uint32_t major, std::uint32_t minor, std::uint32_t mode = 0600);
  /// Closes the archive (its TRAILER!!! record) and returns it; the first error libarchive
  /// reported, if any.
  Expected<std::string> finish();

private:
  void add_entry(std::string_view path, std::uint32_t type_and_mode, std::string_view data, std::uint32_t rmajor = 0,
                 std::uint32_t rminor = 0, std::string_view symlink = {});
  std::string m_out;
  struct archive* m_archive = nullptr;
  std::string m_error; ///< the first failure, reported by finish()
};

} // namespace autodriver::util
