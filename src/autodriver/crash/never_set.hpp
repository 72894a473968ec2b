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

} // namespace autodriver::crash
