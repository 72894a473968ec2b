#pragma once
// struct-convert: the target removed the struct type a driver object is declared with, and the
// kernel's own drivers that declared such an object in the old tree declare it with another type
// in the target tree (7.x removed `struct acpi_driver`: its users became platform drivers). Those
// pairs of files teach the conversion, nothing is stated by hand:
//  - which member each initializer member became, matched by value (`.ids = x` -> `.driver.
//    acpi_match_table = x`) or, for a renamed callback, by the function that replaced it;
//  - the calls that took the object (`acpi_bus_register_driver(&d)` -> `platform_driver_register`);
//  - each new callback's type, read from the converted drivers' definitions, and how a new
//    callback reaches the old parameter: a local of the old type initialised from a new parameter
//    (`struct acpi_device *adev = ACPI_COMPANION(&pdev->dev);`);
//  - where a callback member with no counterpart went: the call that hands the same function to
//    the kernel in the new probe and the one that takes it back in remove
//    (`acpi_dev_install_notify_handler(adev, ACPI_DEVICE_NOTIFY, f, data)`), with the function's
//    new type;
//  - the #includes the converted files gained.
// The driver's callbacks stay as they are: small adapters with the new types call them, so no line
// of the driver's logic changes and the patch reads as what it is.

#include "autodriver/csrc/tokens.hpp"

#include <map>
#include <string>
#include <vector>

namespace autodriver::propose {

using namespace csrc; // the C reader shared with gate/

/// One designated member of an initializer, nested members flattened: `.ops = { .add = f }` and
/// `.drv.pm = &x` give paths ".ops.add" and ".drv.pm". Members in later #elif/#else branches are
/// skipped (the first branch stands for the file).
struct MemberPath {
  std::string path;               ///< ".ops.add"
  std::vector<std::string> value; ///< the value's tokens
};

/// The flattened members of the braces opening at `open` (a '{' token).
std::vector<MemberPath> member_paths(const std::vector<Token>& toks, std::size_t open);

} // namespace autodriver::propose
