#pragma once
// Writer for the "newc" cpio format the kernel unpacks as an initramfs.

#include <cstdint>
#include <string>
#include <string_view>

namespace autodriver::util {

class CpioWriter {
public:
  void add_directory(std::string_view path, std::uint32_t mode = 0755);
  void add_file(std::string_view path, std::string_view content, std::uint32_t mode = 0644);
  void add_symlink(std::string_view path, std::string_view target);
  void add_char_device(std::string_view path, std::uint32_t major, std::uint32_t minor, std::uint32_t mode = 0600);
  /// Appends the TRAILER!!! record and returns the archive.
  std::string finish();

private:
  void add_entry(std::string_view path, std::uint32_t mode, std::string_view data, std::uint32_t rmajor = 0,
                 std::uint32_t rminor = 0);
  std::string m_out;
  std::uint32_t m_ino = 1;
};

} // namespace autodriver::util
