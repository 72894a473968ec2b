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
/// sizeof(p);`, then `kzalloc(size, ...)`); or a `sizeof(T *)` sizing an allocation assigned to
/// a p the driver declares only as `T *p` (scripts/coccinelle/misc/badty.cocci's other form).
struct PointerSizedAlloc {
  std::string file;        ///< relative to the tree
  std::string function;    ///< the function holding it ("" at file scope)
  int line = 0;            ///< of the sizeof (the assignment may span lines)
  std::string target;      ///< the pointer sized by itself ("adapter->tx_ring"), or assigned the memory
  std::string callee;      ///< the statement's allocation call ("kcalloc"), "" for a size kept in a local
  std::size_t size_at = 0; ///< the byte offset of the sizeof operand in the file's text
  /// The type form: `p = kcalloc(n, sizeof(struct rx *), ...)` where p is declared `struct rx *p`
  /// (elements of p's pointee type sized as pointers to it): the byte offset of the `*` too much,
  /// and the operand as written. npos and "" for `sizeof(p)`.
  std::size_t star_at = std::string::npos;
  std::string type;
};

/// Every such assignment of the driver's C files, in file and line order.
std::vector<PointerSizedAlloc> pointer_sized_allocs(const std::vector<DriverFile>& driver);

} // namespace autodriver::crash
