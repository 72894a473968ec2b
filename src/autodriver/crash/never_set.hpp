#pragma once
// A value read back through a getter that the driver never stores (`edev = dev_get_drvdata(dev)`
// in remove while no function of the driver calls a `*set_drvdata()`): the getter returns NULL and
// the teardown dereferences it. The setter is the getter's name with `get` -> `set`, taking the
// getter's arguments and the value (the kernel's accessor pairs: pci_/dev_/platform_get_drvdata,
// i2c_get_clientdata, usb_get_intfdata, ...); it goes in the function that makes the value: the
// driver function bound in the same table as the one that faulted (`.probe` beside `.remove`)
// with a parameter of the type the getter's argument comes from, right after it assigns a local
// of the value's type from a call (and the test of that result).

#include "autodriver/crash/driver_files.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace autodriver::crash {

struct NeverSet {
  std::string getter;    ///< "dev_get_drvdata"
  std::string setter;    ///< "dev_set_drvdata"
  std::string file;      ///< where the setter goes, relative to the tree
  std::string function;  ///< the function it goes in ("esb_probe")
  int after_line = 0;    ///< the last line of the statement it follows
  int made_line = 0;     ///< the assignment of the value
  std::string statement; ///< "dev_set_drvdata(&pdev->dev, edev);"
};

/// For `var = getter(args)` in function `fn` of `file` (one of `driver`): the setter the driver
/// never calls and where it goes; nullopt when the driver calls a setter of that family anywhere,
/// or no function of the same table makes such a value.
std::optional<NeverSet> never_set(const std::vector<DriverFile>& driver, const std::string& file, const std::string& fn,
                                  const std::string& var, const std::string& getter);

/// A pointer member of one of the driver's own structs that the driver reads and never assigns (no
/// `x->m =`, `.m =` in an initializer, or `&x->m` handed anywhere): zeroed memory keeps it NULL. The
/// usual shape is a back-pointer (`nic->netdev`) that probe no longer stores. It goes where the
/// object is made: after the function that assigns a local of the struct's type from a call
/// (`nic = netdev_priv(netdev)`) and has exactly one other local or parameter of the member's type
/// (`netdev`), itself made there from a call or handed to a `.probe` function.
struct UnsetMember {
  std::string member;    ///< "netdev"
  std::string owner;     ///< "struct nic"
  std::string file;      ///< where the assignment goes, relative to the tree
  std::string function;  ///< "e100_probe"
  int made_line = 0;     ///< the assignment of the object (`nic = netdev_priv(netdev);`)
  int after_line = 0;    ///< the last line of the statement the assignment follows
  int read_line = 0;     ///< where `readers` read it first
  std::string reader;    ///< the function of `readers` that reads it
  std::string statement; ///< "nic->netdev = netdev;"
};

/// The first such member read by one of `readers` (function names, innermost first), with where
/// it goes; nullopt when none is read there or no function makes the object with a value to store.
std::optional<UnsetMember> member_never_set(const std::vector<DriverFile>& driver, const std::vector<std::string>& readers);

/// How the target kernel's drivers initialise a member they hand by address to `callee` as its
/// argument `arg` (`list_add(&n, &x->head)`, `schedule_work(&x->work)`): in the files that do,
/// the call most often made with `&y->m` (the same member name) as its first argument whose name
/// holds the kernel's word for it, "init" or "setup" (INIT_LIST_HEAD, INIT_WORK, timer_setup).
struct MemberInit {
  std::string init;     ///< "INIT_WORK"
  int arity = 0;        ///< its most common argument count
  bool handler = false; ///< its second argument is most often a function of the same file
  int files = 0;        ///< files handing such a member to callee
  int initialised = 0;  ///< of those, files calling `init` on it
  /// At least 5 files, and at least half of them.
  bool learned() const { return !init.empty() && initialised >= 5 && initialised * 2 >= files; }
};
MemberInit member_init(const std::filesystem::path& kernel_src, const std::string& callee, std::size_t arg);

using InitOracle = std::function<MemberInit(const std::string& callee, std::size_t arg)>;
/// member_init over `kernel_src`; an empty oracle when it is empty.
InitOracle init_oracle(const std::filesystem::path& kernel_src);

/// A member of one of the driver's structs handed by address (`&adapter->cmd_pool`) to a call on
/// `line` of `fn` that nothing in the driver initialises (no `init(&y->m, ...)` of the learned
/// initialiser, nor any call with "init"/"setup" in its name, nor a store to it): zeroed memory is
/// no initialised list head, work or lock. The initialiser goes where the object is made (as
/// for a member never set); a handler it takes is the driver function that gets the object back
/// from the member (`container_of(work, struct virtnet_info, rx_mode_work)`).
struct UninitMember {
  std::string member;    ///< "cmd_pool"
  std::string owner;     ///< "struct pvscsi_adapter"
  std::string used_by;   ///< the call handing it: "list_add"
  std::string file;      ///< where the initialiser goes
  std::string function;  ///< "pvscsi_probe"
  int made_line = 0;     ///< the assignment of the object
  int after_line = 0;    ///< the last line of the statement the initialiser follows
  std::string statement; ///< "INIT_LIST_HEAD(&adapter->cmd_pool);"
  MemberInit how;
};
std::vector<UninitMember> members_never_initialised(const std::vector<DriverFile>& driver, const std::string& file,
                                                    const std::string& fn, int line, const InitOracle& inits);

} // namespace autodriver::crash
