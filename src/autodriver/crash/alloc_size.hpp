#pragma once
// Allocations sized by the pointer they are stored into (`p->ring = kcalloc(n, sizeof(p->ring),
// ...)`, the size of a pointer where the object was meant: scripts/coccinelle/misc/badty.cocci).
// The object is then smaller than what the driver writes into it, and the allocator's checks
// (SLUB's red zones, KFENCE, KASAN) report the overrun where the object is next checked: usually
// its release, far from the allocation. Read from the driver's own C files.

#include "autodriver/crash/driver_files.hpp"

#include <optional>
#include <string>
#include <vector>

namespace autodriver::crash {

/// One `sizeof(p)` of a driver file where p is a path the driver assigns a call's result to (a
/// pointer to memory), in a statement that sizes an allocation (`p = call(..., sizeof(p), ...)`,
/// `vdev->priv = p = kzalloc(sizeof(p), ...)`) or keeps a size in a local (`int size =
/// sizeof(p);`, then `kzalloc(size, ...)`).
struct PointerSizedAlloc {
  std::string file;        ///< relative to the tree
  std::string function;    ///< the function holding it ("" at file scope)
  int line = 0;            ///< of the sizeof (the assignment may span lines)
  std::string target;      ///< the sizeof's operand, a pointer ("adapter->tx_ring")
  std::string callee;      ///< the statement's allocation call ("kcalloc"), "" for a size kept in a local
  std::size_t size_at = 0; ///< the byte offset of the sizeof operand in the file's text
};

/// Every such assignment of the driver's C files, in file and line order.
std::vector<PointerSizedAlloc> pointer_sized_allocs(const std::vector<DriverFile>& driver);

} // namespace autodriver::crash
