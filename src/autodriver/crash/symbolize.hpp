#pragma once
// Frames of a crash report to source lines: a module frame (`func+0x1c/0x60 [mod]`) through the
// module's own debug info (the gates build with -g), as the kernel's scripts/faddr2line does it:
// the symbol's section and value read from the .ko's symbol table (libelf), then addr2line on that
// section's offset. Kernel frames resolve the same way against a vmlinux with debug info.

#include "autodriver/crash/report.hpp"
#include "autodriver/util/expected.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace autodriver::crash {

/// The name a module loads under, as a report's frames name it: `-` in the file name becomes `_`
/// ("edu-oops.ko" and "edu_oops" are both "edu_oops").
std::string module_name(std::string name);

/// One source position of a frame; an address inside inlined code gives several, innermost first.
struct SourceLine {
  std::string function;
  std::string file; ///< as recorded in the debug info (absolute, or relative to the build folder)
  int line = 0;
};

/// Where a function symbol lies in an ELF file: its section's name and its value in that section.
struct SymbolPlace {
  std::string section;
  std::uint64_t value = 0;
  std::uint64_t size = 0;
};

/// The function symbol `name` of an ELF object (a .ko or vmlinux); an Error when the file cannot
/// be read or has no such symbol.
util::Expected<SymbolPlace> find_symbol(const std::filesystem::path& elf, const std::string& name);

/// The source lines of `function+offset` in `elf`; empty when the debug info has no line for it.
util::Expected<std::vector<SourceLine>> symbolize(const std::filesystem::path& elf, const std::string& function,
                                                  std::uint64_t offset);

/// Fills file/line of every frame of `r` whose module is in `modules` (module name -> .ko), and of
/// kernel frames when `vmlinux` is given, where the report did not carry them. Frames that cannot
/// be resolved stay as they are. Of an inlined chain the innermost line is taken, or with
/// `source_root` (where the modules were built) the innermost line in a file under it: a fault in
/// a kernel header's inline helper is placed on the driver line that used it. Returns how many
/// were resolved.
int symbolize_report(CrashReport& r, const std::vector<std::pair<std::string, std::filesystem::path>>& modules,
                     const std::filesystem::path& vmlinux = {}, const std::string& source_root = {});

} // namespace autodriver::crash
