#include "autodriver/util/cpio.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>

namespace autodriver::util {

namespace {

la_ssize_t append(struct archive*, void* out, const void* buf, size_t n) {
  static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
  return static_cast<la_ssize_t>(n);
}

} // namespace

CpioWriter::CpioWriter() : m_archive(archive_write_new()) {
  if (!m_archive || archive_write_set_format_cpio_newc(m_archive) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(m_archive, 0) != ARCHIVE_OK ||
      archive_write_open(m_archive, &m_out, nullptr, append, nullptr) != ARCHIVE_OK)
    m_error = m_archive ? archive_error_string(m_archive) : "libarchive could not start an archive";
}

CpioWriter::~CpioWriter() {
  if (m_archive) archive_write_free(m_archive);
}

void CpioWriter::add_entry(std::string_view path, std::uint32_t type_and_mode, std::string_view data, std::uint32_t rmajor,
                           std::uint32_t rminor, std::string_view symlink) {
  if (!m_error.empty()) return;
  struct archive_entry* e = archive_entry_new();
  archive_entry_copy_pathname(e, std::string(path).c_str());
  archive_entry_set_filetype(e, type_and_mode & AE_IFMT);
  archive_entry_set_perm(e, type_and_mode & 07777);
  archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
  archive_entry_set_nlink(e, (type_and_mode & AE_IFMT) == AE_IFDIR ? 2 : 1);
  if ((type_and_mode & AE_IFMT) == AE_IFCHR) archive_entry_set_rdevmajor(e, rmajor), archive_entry_set_rdevminor(e, rminor);
  if (!symlink.empty()) archive_entry_copy_symlink(e, std::string(symlink).c_str());
  if (archive_write_header(m_archive, e) != ARCHIVE_OK ||
      (!data.empty() && archive_write_data(m_archive, data.data(), data.size()) != static_cast<la_ssize_t>(data.size())))
    m_error = fmt::format("{}: {}", path, archive_error_string(m_archive));
  archive_entry_free(e);
}

void CpioWriter::add_directory(std::string_view path, std::uint32_t mode) { add_entry(path, AE_IFDIR | mode, {}); }
void CpioWriter::add_file(std::string_view path, std::string_view content, std::uint32_t mode) {
  add_entry(path, AE_IFREG | mode, content);
}
void CpioWriter::add_symlink(std::string_view path, std::string_view target) {
  add_entry(path, AE_IFLNK | 0777, {}, 0, 0, target);
}
void CpioWriter::add_char_device(std::string_view path, std::uint32_t major, std::uint32_t minor, std::uint32_t mode) {
  add_entry(path, AE_IFCHR | mode, {}, major, minor);
}

Expected<std::string> CpioWriter::finish() {
  if (m_error.empty() && archive_write_close(m_archive) != ARCHIVE_OK) m_error = archive_error_string(m_archive);
  if (!m_error.empty()) return unexpected(ErrorKind::internal, "cannot write the initramfs archive: " + m_error);
  return std::move(m_out);
}

} // namespace autodriver::util
