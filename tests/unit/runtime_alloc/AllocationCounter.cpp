// The allocation hooks behind AllocationCounter.h. Inside a hook nothing may allocate: call
// stacks are captured with backtrace() (warmed up before the first window, since its first
// call loads libgcc_s) into a fixed array and classified with dladdr() after the window.
// Every hook lives in one linker section, so that the frames of the hooks themselves, inlined
// or not, can be told from their callers' by address.
#include "AllocationCounter.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <cxxabi.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#define PLAIT_HOOK __attribute__((section("plait_alloc_hooks")))

extern "C" {
// GNU ld defines these around a section whose name is a C identifier.
extern const char __start_plait_alloc_hooks[], __stop_plait_alloc_hooks[];
}

extern "C" {
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
}

namespace plait::alloc_test {
namespace {

constexpr int kMaxFrames = 16;
constexpr size_t kMaxRecords = 1 << 14;

struct Record {
  bool isFree;
  int depth;
  void *frames[kMaxFrames];
};

std::atomic<bool> armed{false};
std::atomic<uint64_t> events{0};
Record records[kMaxRecords];
thread_local bool inHook = false; // backtrace() must not count (or recurse into) itself

PLAIT_HOOK __attribute__((noinline)) void countEvent(bool isFree) {
  if (!armed.load(std::memory_order_relaxed) || inHook)
    return;
  inHook = true;
  uint64_t n = events.fetch_add(1, std::memory_order_relaxed);
  if (n < kMaxRecords) {
    Record &r = records[n];
    r.isFree = isFree;
    r.depth = backtrace(r.frames, kMaxFrames);
  }
  inHook = false;
}

PLAIT_HOOK void *checkedAligned(size_t alignment, size_t size) {
  countEvent(false);
  return __libc_memalign(alignment, size);
}

// The object file a frame's code lives in, as a source name.
std::string sourceOf(void *frame, const void *mainBase, bool &passThrough) {
  Dl_info info;
  passThrough = false;
  if (!dladdr(frame, &info) || !info.dli_fname)
    return "unknown";
  if (info.dli_fbase == mainBase)
    return "plait";
  std::string path = info.dli_fname;
  std::string name = path.substr(path.rfind('/') + 1);
  // Allocating on someone else's behalf: charge the caller.
  for (const char *helper : {"libc.so", "libstdc++.so", "libgcc_s.so", "libm.so", "ld-linux"})
    if (name.rfind(helper, 0) == 0)
      passThrough = true;
  for (const char *mpi : {"libmpi", "libopen-pal", "libopen-rte", "mca_", "libpmix", "libevent",
                          "libhwloc", "libucp", "libucs", "libuct", "libfabric", "libpsm"})
    if (name.rfind(mpi, 0) == 0)
      return "MPI";
  if (name.find("openblas") != std::string::npos || name.rfind("libblas", 0) == 0 ||
      name.rfind("libgfortran", 0) == 0)
    return "OpenBLAS";
  return name;
}

bool inHooks(const void *frame) {
  const char *pc = static_cast<const char *>(frame);
  return pc >= __start_plait_alloc_hooks && pc < __stop_plait_alloc_hooks;
}

std::string classify(const Record &r, const void *mainBase) {
  std::string last = "unknown";
  for (int i = 0; i < r.depth; ++i) {
    if (inHooks(r.frames[i]))
      continue;
    bool passThrough;
    std::string source = sourceOf(r.frames[i], mainBase, passThrough);
    if (!passThrough)
      return source;
    last = source;
  }
  return last; // only libc/libstdc++ frames: e.g. a thread's start-up
}

std::string symbolise(const Record &r) {
  std::string out;
  for (int i = 0; i < r.depth; ++i) {
    if (inHooks(r.frames[i]))
      continue;
    Dl_info info{};
    out += "\n    ";
    if (dladdr(r.frames[i], &info) && info.dli_sname) {
      int status = 0;
      char *name = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
      out += status == 0 && name ? name : info.dli_sname;
      std::free(name);
    } else {
      // No symbol (the executable exports none unless linked with ENABLE_EXPORTS): the
      // offset that addr2line -e FILE resolves.
      char offset[32];
      std::snprintf(offset, sizeof offset, "+0x%zx",
                    size_t(static_cast<char *>(r.frames[i]) - static_cast<char *>(info.dli_fbase)));
      out += std::string(info.dli_fname ? info.dli_fname : "?") + offset;
    }
  }
  return out;
}

int anchor; // an object of this executable: its dladdr base is the executable's

} // namespace

uint64_t AllocationReport::allocationsBy(const std::string &source) const {
  auto it = allocations.find(source);
  return it == allocations.end() ? 0 : it->second;
}

uint64_t AllocationReport::freesBy(const std::string &source) const {
  auto it = frees.find(source);
  return it == frees.end() ? 0 : it->second;
}

uint64_t AllocationReport::totalAllocations() const {
  uint64_t n = 0;
  for (const auto &[source, count] : allocations)
    n += count;
  return n;
}

std::string AllocationReport::describe() const {
  std::string out = "allocations:";
  for (const auto &[source, count] : allocations)
    out += " " + source + " " + std::to_string(count);
  if (allocations.empty())
    out += " none";
  out += "; frees:";
  for (const auto &[source, count] : frees)
    out += " " + source + " " + std::to_string(count);
  if (frees.empty())
    out += " none";
  if (unclassified)
    out += "; " + std::to_string(unclassified) + " more events not classified";
  return out;
}

void startCounting() {
  void *warm[2];
  backtrace(warm, 2); // loads libgcc_s now, outside the window
  events.store(0);
  armed.store(true);
}

AllocationReport stopCounting() {
  armed.store(false);
  uint64_t n = events.load();
  AllocationReport report;
  Dl_info self;
  const void *mainBase = dladdr(&anchor, &self) ? self.dli_fbase : nullptr;
  for (uint64_t i = 0; i < n && i < kMaxRecords; ++i) {
    const Record &r = records[i];
    std::string source = classify(r, mainBase);
    ++(r.isFree ? report.frees : report.allocations)[source];
    std::string &first = report.firstStack[source];
    if (first.empty())
      first = (r.isFree ? "free" : "allocation") + symbolise(r);
    if (source == "plait" && report.firstPlaitStack.empty())
      report.firstPlaitStack = first;
  }
  report.unclassified = n > kMaxRecords ? n - kMaxRecords : 0;
  return report;
}

} // namespace plait::alloc_test

using plait::alloc_test::checkedAligned;
using plait::alloc_test::countEvent;

extern "C" {

PLAIT_HOOK void *malloc(size_t size) {
  countEvent(false);
  return __libc_malloc(size);
}
PLAIT_HOOK void *calloc(size_t count, size_t size) {
  countEvent(false);
  return __libc_calloc(count, size);
}
PLAIT_HOOK void *realloc(void *ptr, size_t size) {
  countEvent(false);
  return __libc_realloc(ptr, size);
}
PLAIT_HOOK void free(void *ptr) {
  if (ptr)
    countEvent(true);
  __libc_free(ptr);
}
PLAIT_HOOK int posix_memalign(void **out, size_t alignment, size_t size) {
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
    return EINVAL;
  void *p = checkedAligned(alignment, size);
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}
PLAIT_HOOK void *aligned_alloc(size_t alignment, size_t size) {
  return checkedAligned(alignment, size);
}
PLAIT_HOOK void *memalign(size_t alignment, size_t size) { return checkedAligned(alignment, size); }
PLAIT_HOOK void *valloc(size_t size) {
  countEvent(false);
  return __libc_valloc(size);
}
PLAIT_HOOK void *pvalloc(size_t size) {
  countEvent(false);
  return __libc_pvalloc(size);
}

} // extern "C"

namespace {
PLAIT_HOOK void *newOrThrow(size_t size) {
  countEvent(false);
  void *p = __libc_malloc(size ? size : 1);
  if (!p)
    throw std::bad_alloc();
  return p;
}
PLAIT_HOOK void *newAlignedOrThrow(size_t size, std::align_val_t alignment) {
  countEvent(false);
  void *p = __libc_memalign(static_cast<size_t>(alignment), size ? size : 1);
  if (!p)
    throw std::bad_alloc();
  return p;
}
PLAIT_HOOK void deleteCounted(void *ptr) {
  if (ptr)
    countEvent(true);
  __libc_free(ptr);
}
} // namespace

PLAIT_HOOK void *operator new(size_t size) { return newOrThrow(size); }
PLAIT_HOOK void *operator new[](size_t size) { return newOrThrow(size); }
PLAIT_HOOK void *operator new(size_t size, const std::nothrow_t &) noexcept {
  countEvent(false);
  return __libc_malloc(size ? size : 1);
}
PLAIT_HOOK void *operator new[](size_t size, const std::nothrow_t &) noexcept {
  countEvent(false);
  return __libc_malloc(size ? size : 1);
}
PLAIT_HOOK void *operator new(size_t size, std::align_val_t alignment) {
  return newAlignedOrThrow(size, alignment);
}
PLAIT_HOOK void *operator new[](size_t size, std::align_val_t alignment) {
  return newAlignedOrThrow(size, alignment);
}
PLAIT_HOOK void *operator new(size_t size, std::align_val_t alignment,
                              const std::nothrow_t &) noexcept {
  countEvent(false);
  return __libc_memalign(static_cast<size_t>(alignment), size ? size : 1);
}
PLAIT_HOOK void *operator new[](size_t size, std::align_val_t alignment,
                                const std::nothrow_t &) noexcept {
  countEvent(false);
  return __libc_memalign(static_cast<size_t>(alignment), size ? size : 1);
}
PLAIT_HOOK void operator delete(void *ptr) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete[](void *ptr) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete(void *ptr, size_t) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete[](void *ptr, size_t) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete(void *ptr, const std::nothrow_t &) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete[](void *ptr, const std::nothrow_t &) noexcept {
  deleteCounted(ptr);
}
PLAIT_HOOK void operator delete(void *ptr, std::align_val_t) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete[](void *ptr, std::align_val_t) noexcept { deleteCounted(ptr); }
PLAIT_HOOK void operator delete(void *ptr, size_t, std::align_val_t) noexcept {
  deleteCounted(ptr);
}
PLAIT_HOOK void operator delete[](void *ptr, size_t, std::align_val_t) noexcept {
  deleteCounted(ptr);
}
PLAIT_HOOK void operator delete(void *ptr, std::align_val_t, const std::nothrow_t &) noexcept {
  deleteCounted(ptr);
}
PLAIT_HOOK void operator delete[](void *ptr, std::align_val_t, const std::nothrow_t &) noexcept {
  deleteCounted(ptr);
}
