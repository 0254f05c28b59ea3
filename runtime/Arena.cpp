// Arena allocation with an up-front check against physical memory (a bad plan must not
// get the process OOM-killed halfway through zero-filling).
#include "runtime/Arena.h"

#include <cstring>
#include <unistd.h>

namespace plait::rt {

namespace {
uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return UINT64_MAX; // unknown: let the allocator decide
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}
} // namespace

Status Arena::allocate(uint64_t bytes, Arena &out, const char *what) {
  uint64_t physical = physicalMemoryBytes();
  if (bytes > physical)
    return Status::errorf("{} needs {} bytes, this machine has {} bytes of memory", what, bytes,
                          physical);
  // aligned_alloc wants a size that is a multiple of the alignment, and never 0.
  uint64_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0)
    rounded = kAlignment;
  void *p = std::aligned_alloc(kAlignment, static_cast<size_t>(rounded));
  if (!p)
    return Status::errorf("cannot allocate the {} ({} bytes)", what, bytes);
  std::memset(p, 0, static_cast<size_t>(rounded));
  out.base_.reset(static_cast<uint8_t *>(p));
  out.size_ = bytes;
  return {};
}

} // namespace plait::rt
