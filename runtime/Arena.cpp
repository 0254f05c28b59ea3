// Arena allocation with an up-front check against physical memory (a bad plan must not
// get the process OOM-killed halfway through zero-filling).
#include "runtime/Arena.h"

#include <sys/mman.h>
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
  // Page-aligned (so kAlignment-aligned) and zero-filled by the kernel; never 0 bytes long.
  size_t length = static_cast<size_t>(bytes == 0 ? 1 : bytes);
  void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Status::errorf("cannot allocate the {} ({} bytes)", what, bytes);
  out.base_ = std::unique_ptr<uint8_t, ArenaUnmap>(static_cast<uint8_t *>(p), ArenaUnmap{length});
  out.size_ = bytes;
  return {};
}

void ArenaUnmap::operator()(uint8_t *p) const { munmap(p, length); }

} // namespace plait::rt
