// One rank's arena: the single block of memory every tensor of the plan lives in (the same
// class holds the rank's kernel workspace, the other block a plan sizes).
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/Status.h"

namespace plait::rt {

/// Unmaps an arena's pages.
struct ArenaUnmap {
  size_t length = 0;
  void operator()(uint8_t *p) const;
};

class Arena {
public:
  /// Alignment of the arena's base; the compiler aligns tensor offsets relative to it.
  static constexpr size_t kAlignment = 64;

  /// A zero-filled arena of `bytes` bytes (zero-filled so that a plan reading memory
  /// before writing it still behaves deterministically). The zeros are the kernel's fresh
  /// anonymous pages, committed when first touched, so a part of the arena the run has not
  /// reached yet (activations before the first step) does not count towards peak RSS while
  /// the plan's initial weights are still in memory. Fails cleanly, without touching
  /// memory, when `bytes` exceeds the machine's physical memory or cannot be mapped;
  /// `what` names the block in the message ("arena", "workspace").
  static Status allocate(uint64_t bytes, Arena &out, const char *what = "arena");

  uint8_t *data() const { return base_.get(); }
  uint64_t size() const { return size_; }

private:
  std::unique_ptr<uint8_t, ArenaUnmap> base_;
  uint64_t size_ = 0;
};

} // namespace plait::rt
