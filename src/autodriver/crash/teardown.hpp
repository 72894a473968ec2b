#pragma once
// Work, timers and registrations a driver's remove or exit leaves behind (issue 36: a timer still
// armed after rmmod fires into the module's freed text, in softirq, with no driver frame). What
// ends, on a teardown path, what `setup(&x->m, ...)` began is learned from the kernel's own
// drivers: the call made most often, in the file's teardown functions (module_exit, the driver
// struct's .remove* member and the static functions they call), with an argument naming the same
// member m (timer_setup(&p->timer, ...) and timer_delete_sync(&p->timer)).

#include "autodriver/crash/driver_files.hpp"
#include "autodriver/crash/lock.hpp"
#include "autodriver/csrc/tokens.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace autodriver::crash {

/// The file's entry functions of one side: module_init(f) / .probe (`setup`) or module_exit(f) /
/// .remove* (teardown), with the file's own functions they call, `levels` levels down.
std::set<std::string> entry_functions(const std::vector<csrc::Token>& t, const std::vector<csrc::Unit>& units, bool teardown,
                                      int levels = 2);

/// How the target kernel's drivers tear down what `setup(x, ...)` begins in their setup functions
/// (x taking an address: `&p->timer`, or a variable of a struct pointer type: `dev`): `release` the
/// call most often made in a teardown function of the same file with a first argument naming x's
/// last member (a variable of x's type); `calls` the setups read in the
/// setup functions of files with teardown functions, `released` those torn down so. Read from at most 1500 driver files naming `setup`; kept for the process.
ScopedPair teardown_pair(const std::filesystem::path& kernel_src, const std::string& setup);
/// At least 8 setups torn down by the same call, at least a third of those read (6.12: timers 92
/// of 230, work 260 of 566, delayed work 213 of 344, tasklets 32 of 56; mutex_destroy() after
/// mutex_init() 129 of 591 and what follows spin_lock_init() 58 of 674 do not qualify).
inline bool torn_down(const ScopedPair& p) { return !p.release.empty() && p.released >= 8 && p.released * 3 >= p.calls; }
/// A registration pair the kernel's headers state: `#define module_pci_driver(__pci_driver)
/// module_driver(__pci_driver, pci_register_driver, pci_unregister_driver)`. A driver using the
/// macro registers in its init and unregisters in its exit; teardown_pair counts each use.
struct ModuleDriverMacro {
  std::string macro;    ///< module_pci_driver
  std::string setup;    ///< pci_register_driver
  std::string teardown; ///< pci_unregister_driver
};
/// The module_driver() macros of `kernel_src`'s headers (include/, arch/x86/include); kept for the process.
std::vector<ModuleDriverMacro> module_driver_macros(const std::filesystem::path& kernel_src);
/// One `#define` directive's text read as such a macro, or nullopt.
std::optional<ModuleDriverMacro> module_driver_macro(std::string_view directive);
/// The target kernel's driver files that use `macro(...)` (at the start of a line).
int macro_uses(const std::filesystem::path& kernel_src, const std::string& macro);

/// teardown_pair over `kernel_src`; an empty oracle when it is empty.
PairOracle teardown_oracle(const std::filesystem::path& kernel_src);

/// A setup of the driver whose teardown is missing from its teardown functions.
struct MissingTeardown {
  std::string file;             ///< relative to the tree
  std::string setup;            ///< the setup call's function ("timer_setup")
  int setup_line = 0;           ///< where the setup function calls it
  std::string release;          ///< the teardown call the kernel's drivers make
  std::string teardown;         ///< the teardown function that should make it
  std::string call;             ///< the call as C, with the teardown function's own names: "timer_delete_sync(&p->timer)"
  std::string object_type;      ///< a registration of a variable (`register_netdev(dev)`): its type; empty for a member
  bool ended_elsewhere = false; ///< some other function of the file (a .ndo_stop) ends the member
  bool in_entry = false;        ///< the setup is in the probe or init function itself, not a helper
  bool armed = false;           ///< armed again outside setup, ended in the arming function's counterpart
  int insert_line = 0;          ///< the line it goes before (after the function's leading declarations)
  ScopedPair evidence;
};

/// Every setup in `files` (the driver's C files) that the kernel's drivers tear down (`teardowns`)
/// and whose member no call of that kind names in any teardown function of its file, with where
/// the call goes: the base of the setup's argument (`p` of `&p->timer`) found in the teardown
/// function as a variable of the same declared type (or a global, named as is). Setups of a
/// variable (`register_netdev(dev)`) count when its declared type is one of `types` ("struct
/// net_device *"; "*" any struct pointer) and no teardown function makes the kernel's call on a
/// variable of that type. A member armed again outside setup (`mod_timer(&nic->watchdog, ...)` in
/// the helper `.ndo_open` calls) is ended first in that function's counterpart: the function
/// making the most distinct calls that undo it (its own unwind ladder's, and with `undos` the
/// kernel drivers' undo calls of its calls: `request_irq` -> `free_irq`), the `.ndo_stop` helper.
std::vector<MissingTeardown> missing_teardowns(const std::vector<DriverFile>& files, const PairOracle& teardowns,
                                               const std::set<std::string>& types = {}, const PairOracle& undos = {});

/// Two statements of a teardown function in the wrong order: `later` undoes a setup step made
/// after the one `first` undoes, so it must come first (teardown reverses setup). Which step a
/// teardown statement undoes is read from the driver's own unwind ladder (the same statement
/// under an error label of the setup function: the step is the one whose failure first jumps
/// there) or from the kernel's teardown pairs (a setup call of the function, torn_down()).
struct OutOfOrder {
  int first_line = 0;   ///< the statement that ran too early (where the crash is)
  int later_line = 0;   ///< the one that should precede it
  std::string callee;   ///< later's call
  std::string setup_fn; ///< the setup function whose order it is
  std::string why;      ///< how later's step was found to be the later one
};
/// In teardown function `fn` of `f`, a top-level call statement after the one holding `line` that
/// undoes a later setup step than it.
std::optional<OutOfOrder> teardown_out_of_order(const DriverFile& f, const csrc::Unit& fn, int line, const PairOracle& teardowns);

/// The struct pointer types of the variables a function names on `line`.
std::set<std::string> object_types_at(const std::vector<csrc::Token>& t, const csrc::Unit& fn, int line);
/// The struct pointer types of a function's parameters ("struct net_device *").
std::set<std::string> parameter_types(const std::vector<csrc::Token>& t, const csrc::Unit& fn);

} // namespace autodriver::crash
