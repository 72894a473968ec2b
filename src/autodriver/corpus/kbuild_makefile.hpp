#pragma once
// A reader for the small part of kbuild Makefile syntax that declares loadable modules:
// `obj-$(CONFIG_X) += foo.o`, composite objects `foo-y`, `foo-objs`, `foo-$(CONFIG_Y)`,
// plain variables, and ccflags. Conditionals (ifdef/ifeq) are ignored: every branch counts.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::corpus {

/// A CONFIG_ symbol's value in a kernel .config: "y", "m" or "" (not set).
using ConfigLookup = std::function<std::string(std::string_view symbol)>;

/// One `obj-...` module declaration, resolved against a .config.
struct ModuleDecl {
  std::string name;                  ///< module name, "e1000e"
  std::string config;                ///< "CONFIG_E1000E"; empty for obj-m
  bool composite = false;            ///< has foo-y / foo-objs lists
  std::vector<std::string> objects;  ///< "82571.o", "sub/x.o" (relative to the Makefile's dir)
  std::vector<std::string> problems; ///< why the declaration cannot be used as written (unresolved $(...))
};

struct KbuildMakefile {
  std::vector<ModuleDecl> modules;                 ///< loadable-module candidates (obj-m and obj-$(CONFIG_X)), in file order
  std::vector<std::string> ccflags;                ///< simple flags kept for an out-of-tree build (-D, -U, -W, -I$(src)...)
  std::vector<std::string> dropped_flags;          ///< flags that point into the kernel tree ($(srctree)/...), not kept
  std::map<std::string, std::string> object_flags; ///< CFLAGS_foo.o values (simple flags only)
};

/// Parses a Makefile/Kbuild text. `config` decides `foo-$(CONFIG_Y)` lists (y or m: included).
KbuildMakefile parse_kbuild_makefile(std::string_view text, const ConfigLookup& config);

/// Reads a kernel .config into a lookup ("CONFIG_X=m" -> "m").
std::map<std::string, std::string> parse_dot_config(std::string_view text);

} // namespace autodriver::corpus
