#include "autodriver/util/cpio.hpp"

#include <fmt/format.h>

namespace autodriver::util {

static void pad4(std::string& s) {
  while (s.size() % 4 != 0) s.push_back('\0');
}

void CpioWriter::add_entry(std::string_view path, std::uint32_t mode, std::string_view data, std::uint32_t rmajor,
                           std::uint32_t rminor) {
  std::uint32_t nlink = (mode & 0170000) == 0040000 ? 2 : 1;
  m_out += fmt::format("070701{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}{:08X}", m_ino++, mode, 0,
                       0, nlink, 0, data.size(), 0, 0, rmajor, rminor, path.size() + 1, 0);
  m_out.append(path);
  m_out.push_back('\0');
  pad4(m_out);
  m_out.append(data);
  pad4(m_out);
}

void CpioWriter::add_directory(std::string_view path, std::uint32_t mode) { add_entry(path, 0040000 | mode, {}); }
void CpioWriter::add_file(std::string_view path, std::string_view content, std::uint32_t mode) {
  add_entry(path, 0100000 | mode, content);
}
void CpioWriter::add_symlink(std::string_view path, std::string_view target) { add_entry(path, 0120000 | 0777, target); }
void CpioWriter::add_char_device(std::string_view path, std::uint32_t major, std::uint32_t minor, std::uint32_t mode) {
  add_entry(path, 0020000 | mode, {}, major, minor);
}

std::string CpioWriter::finish() {
  add_entry("TRAILER!!!", 0, {});
  std::string out = std::move(m_out);
  m_out.clear();
  return out;
}

} // namespace autodriver::util
