// Counts heap allocations made while armed, and says who made them. Linking this file into a
// test executable replaces malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
// memalign, valloc, pvalloc and every operator new/delete for the whole process (the
// definitions forward to glibc's __libc_* functions), so allocations inside shared libraries
// (libstdc++, OpenBLAS, MPI) are seen too.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace plait::alloc_test {

/// What one counted window saw, by source: "plait" (code in this executable: the runtime is
/// linked statically), "MPI" (libmpi, Open MPI's support libraries and plugins), "OpenBLAS",
/// or the name of another library. An allocation made by libstdc++ or libc on someone's behalf
/// is charged to the first caller outside them.
struct AllocationReport {
  std::map<std::string, uint64_t> allocations, frees;
  uint64_t unclassified = 0; // counted, but past the first kMaxRecords: no call stack kept
  std::string firstPlaitStack; // symbolised call stack of plait's first allocation, if any
  std::map<std::string, std::string> firstStack; // the same for every source

  uint64_t allocationsBy(const std::string &source) const;
  uint64_t freesBy(const std::string &source) const;
  uint64_t totalAllocations() const;
  /// "plait 0, MPI 12 (frees: MPI 12)" style summary.
  std::string describe() const;
};

/// Starts a window: clears the counters and counts every allocation and free (of a non-null
/// pointer) from any thread until stopCounting(). Windows do not nest.
void startCounting();
/// Ends the window and classifies what it counted.
AllocationReport stopCounting();

} // namespace plait::alloc_test
