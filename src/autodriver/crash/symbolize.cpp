#include "autodriver/crash/symbolize.hpp"

#include "autodriver/util/strings.hpp"
#include "autodriver/util/subprocess.hpp"

#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>

namespace autodriver::crash {

namespace fs = std::filesystem;

namespace {

/// An open ELF file, closed with its descriptor.
class ElfFile {
public:
  explicit ElfFile(const fs::path& p) {
    elf_version(EV_CURRENT);
    m_fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd >= 0) m_elf = elf_begin(m_fd, ELF_C_READ, nullptr);
  }
  ~ElfFile() {
    if (m_elf) elf_end(m_elf);
    if (m_fd >= 0) ::close(m_fd);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  Elf* get() const { return m_elf; }

private:
  int m_fd = -1;
  Elf* m_elf = nullptr;
};

} // namespace

util::Expected<SymbolPlace> find_symbol(const fs::path& elf, const std::string& name) {
  ElfFile f(elf);
  if (!f.get() || elf_kind(f.get()) != ELF_K_ELF)
    return util::unexpected(util::ErrorKind::parse, fmt::format("{}: not an ELF file", elf.string()));
  std::size_t shstrndx = 0;
  if (elf_getshdrstrndx(f.get(), &shstrndx) != 0)
    return util::unexpected(util::ErrorKind::parse, fmt::format("{}: no section names", elf.string()));
  for (Elf_Scn* scn = elf_nextscn(f.get(), nullptr); scn; scn = elf_nextscn(f.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    std::size_t count = sh.sh_size / sh.sh_entsize;
    for (std::size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) continue;
      const char* n = elf_strptr(f.get(), sh.sh_link, sym.st_name);
      if (!n || name != n) continue;
      Elf_Scn* target = elf_getscn(f.get(), sym.st_shndx);
      GElf_Shdr tsh;
      if (!target || !gelf_getshdr(target, &tsh)) break;
      const char* sec = elf_strptr(f.get(), shstrndx, tsh.sh_name);
      SymbolPlace p;
      p.section = sec ? sec : "";
      p.value = sym.st_value;
      p.size = sym.st_size;
      // In an executable (vmlinux) values are addresses; addr2line takes them without a section.
      if (GElf_Ehdr eh; gelf_getehdr(f.get(), &eh) && eh.e_type != ET_REL) p.section.clear();
      return p;
    }
  }
  return util::unexpected(util::ErrorKind::not_found, fmt::format("{}: no function symbol {}", elf.string(), name));
}

util::Expected<std::vector<SourceLine>> symbolize(const fs::path& elf, const std::string& function, std::uint64_t offset) {
  auto place = find_symbol(elf, function);
  if (!place) return util::unexpected(place.error());
  util::RunRequest req;
  req.argv = {"addr2line", "-f", "-i", "-e", elf.string()};
  if (!place->section.empty()) req.argv.insert(req.argv.end(), {"-j", place->section});
  // The return address of a call frame points past the call: addr2line is asked about the byte
  // before it for frames that are not the faulting one (as faddr2line does); here the caller says.
  req.argv.push_back(fmt::format("0x{:x}", place->value + offset));
  req.timeout = std::chrono::seconds(60);
  auto r = util::run(req);
  if (!r) return util::unexpected(r.error());
  if (!r->ok()) return util::unexpected(util::ErrorKind::spawn, "addr2line: " + r->status_text() + ": " + r->err);
  std::vector<SourceLine> out;
  auto lines = util::split_lines(r->out);
  for (std::size_t i = 0; i + 1 < lines.size(); i += 2) {
    SourceLine s;
    s.function = std::string(lines[i]);
    std::string loc(lines[i + 1]);
    if (auto d = loc.find(" (discriminator"); d != std::string::npos) loc.resize(d);
    auto colon = loc.rfind(':');
    if (colon == std::string::npos || loc.starts_with("??")) continue;
    s.file = loc.substr(0, colon);
    const std::string num = loc.substr(colon + 1);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), s.line);
    if (ec != std::errc()) s.line = 0;
    if (s.line > 0) out.push_back(std::move(s));
  }
  return out;
}

std::string module_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

int symbolize_report(CrashReport& r, const std::vector<std::pair<std::string, fs::path>>& modules, const fs::path& vmlinux,
                     const std::string& source_root) {
  const std::string root = source_root.empty() || source_root.ends_with('/') ? source_root : source_root + "/";
  std::map<std::string, fs::path> by_name;
  for (const auto& [n, p] : modules) {
    by_name[n] = p;
    by_name[module_name(n)] = p;
  }
  int resolved = 0;
  auto one = [&](Frame& f, bool faulting) {
    if (!f.file.empty() || f.function.empty()) return;
    fs::path elf;
    if (f.module.empty()) elf = vmlinux;
    else if (auto it = by_name.find(f.module); it != by_name.end()) elf = it->second;
    if (elf.empty()) return;
    // A return address points after its call: ask about the call itself.
    std::uint64_t off = faulting || f.offset == 0 ? f.offset : f.offset - 1;
    auto lines = symbolize(elf, f.function, off);
    if (!lines || lines->empty()) return;
    const SourceLine* pick = &lines->front();
    if (!root.empty())
      for (const auto& l : *lines)
        if (l.file.starts_with(root)) {
          pick = &l;
          break;
        }
    f.file = pick->file;
    f.line = pick->line;
    ++resolved;
  };
  if (r.rip) one(*r.rip, true);
  for (auto* stack : {&r.trace, &r.alloc_stack, &r.free_stack})
    for (auto& f : *stack) one(f, false);
  for (auto& l : r.locks) one(l.at, false); // lockdep's `at:` is the lock call's return address
  return resolved;
}

} // namespace autodriver::crash
