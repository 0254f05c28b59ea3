// The scheduler behind Emulation.h: a block's threads as fibers on one OS thread.
#include "tests/cuda_emulation/Emulation.h"

#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "runtime/Tensor.h"

dim3 blockIdx, threadIdx, blockDim, gridDim;

namespace plait_emu {
namespace {

constexpr unsigned kMaxThreads = 1024;
constexpr size_t kDefaultShared = 48 * 1024, kMaxShared = 227 * 1024;
// Each fiber's stack, with a guard page below it: the kernels keep small register arrays.
constexpr size_t kStackBytes = 128 * 1024;

enum class Wait { None, Block, Warp, Done };

struct Fiber {
  ucontext_t context; // where the thread starts, but on x86-64 (startThread)
  jmp_buf jump;       // where it resumes once started
  bool started = false;
  char *stack = nullptr;
  Wait wait = Wait::None;
  dim3 index;
  unsigned linear = 0;
};

struct Scheduler {
  jmp_buf home; // the scheduler's loop, where a suspended or finished thread returns to
  std::vector<Fiber> fibers;
  Fiber *current = nullptr;
  const std::function<void()> *thread = nullptr;
  std::vector<unsigned char> shared;
  std::vector<std::array<unsigned char, 16>> slots; // per thread: its warp-exchange value
  char *stacks = nullptr;                           // kMaxThreads stacks, mapped once
  size_t page = 0;
};

Scheduler &scheduler() {
  static Scheduler s;
  return s;
}

cudaError_t lastError = cudaSuccess;
std::string failure;
std::map<const void *, int> maxShared;

void fail(cudaError_t error, std::string why) {
  lastError = error;
  failure = std::move(why);
}

/// printf into a string (no fmt here: the codegen test compiles this file into each of its
/// host-built kernel libraries, and fmt's headers would slow every compile).
std::string format(const char *pattern, ...) {
  char text[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

// A thread starts on its own stack once (startThread); every later switch is a
// _setjmp/_longjmp pair, which unlike swapcontext makes no system call.
void threadEntry() {
  Scheduler &s = scheduler();
  (*s.thread)();
  s.current->wait = Wait::Done;
  _longjmp(s.home, 1); // never resumed
}

/// Starts the current thread on its own stack; never returns (the thread ends in a _longjmp
/// home). On x86-64 by moving the stack pointer and calling threadEntry, with no system
/// call; elsewhere through the thread's ucontext (setcontext restores the signal mask, one
/// system call per thread).
[[noreturn]] void startThread(Fiber &f) {
#if defined(__x86_64__)
  char *top = f.stack + kStackBytes; // 16-byte aligned: the call pushes the return address
  asm volatile("mov %0, %%rsp\n\t"
               "call *%1\n\t"
               "ud2"
               :
               : "r"(top), "r"(&threadEntry)
               : "memory");
  __builtin_unreachable();
#else
  setcontext(&f.context);
  __builtin_unreachable();
#endif
}

/// Suspends the running thread until the scheduler releases its wait.
void suspend(Wait wait) {
  Scheduler &s = scheduler();
  s.current->wait = wait;
  if (_setjmp(s.current->jump) == 0)
    _longjmp(s.home, 1);
}

/// The stacks, mapped once (untouched pages cost nothing), a guard page below each.
bool mapStacks(Scheduler &s) {
  if (s.stacks)
    return true;
  s.page = size_t(sysconf(_SC_PAGESIZE));
  size_t each = kStackBytes + s.page;
  void *p = mmap(nullptr, each * kMaxThreads, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  s.stacks = static_cast<char *>(p);
  for (unsigned t = 0; t < kMaxThreads; ++t)
    mprotect(s.stacks + t * each, s.page, PROT_NONE);
  return true;
}

/// Whether blocks, and a block's ready threads, run last first (PLAIT_CUDA_EMULATION_ORDER=
/// reverse): a kernel whose results depend on the order its threads run in between barriers
/// (a missing barrier, a race on shared or global memory) gives other results one way round.
bool reversed() {
  static const bool reverse = [] {
    const char *order = std::getenv("PLAIT_CUDA_EMULATION_ORDER");
    return order && std::string(order) == "reverse";
  }();
  return reverse;
}

/// Runs one block to completion; false (and the failure recorded) on a deadlock.
bool runBlock(Scheduler &s, const char *kernelName) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  s.fibers.assign(threads, Fiber());
  std::fill(s.shared.begin(), s.shared.end(), 0xff);
  for (unsigned t = 0; t < threads; ++t) {
    Fiber &f = s.fibers[t];
    f.linear = t;
    f.index = dim3(t % blockDim.x, t / blockDim.x % blockDim.y, t / (blockDim.x * blockDim.y));
    f.stack = s.stacks + t * (kStackBytes + s.page) + s.page;
#if !defined(__x86_64__)
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, threadEntry, 0);
#endif
  }
  const unsigned warps = (threads + warpSize - 1) / warpSize;
  for (;;) {
    for (unsigned k = 0; k < threads; ++k) {
      Fiber &f = s.fibers[reversed() ? threads - 1 - k : k];
      if (f.wait != Wait::None)
        continue;
      s.current = &f;
      threadIdx = f.index;
          if (_setjmp(s.home) == 0) {
        if (!f.started) {
          f.started = true;
          startThread(f);
        }
        _longjmp(f.jump, 1);
      }
    }
    s.current = nullptr;
    // Every thread now waits or has exited: release a barrier every live thread of its
    // scope reached.
    unsigned live = 0, atBlock = 0, atWarp = 0;
    for (const Fiber &f : s.fibers) {
      live += f.wait != Wait::Done;
      atBlock += f.wait == Wait::Block;
      atWarp += f.wait == Wait::Warp;
    }
    if (live == 0)
      return true;
    bool released = false;
    if (atBlock == live) {
      for (Fiber &f : s.fibers)
        if (f.wait == Wait::Block)
          f.wait = Wait::None;
      released = true;
    }
    for (unsigned w = 0; w < warps && !released; ++w) {
      unsigned begin = w * warpSize, end = std::min(threads, begin + warpSize);
      bool all = true, any = false;
      for (unsigned t = begin; t < end; ++t) {
        all = all && (s.fibers[t].wait == Wait::Warp || s.fibers[t].wait == Wait::Done);
        any = any || s.fibers[t].wait == Wait::Warp;
      }
      if (all && any) {
        for (unsigned t = begin; t < end; ++t)
          if (s.fibers[t].wait == Wait::Warp)
            s.fibers[t].wait = Wait::None;
        released = true;
      }
    }
    if (!released) {
      fail(cudaErrorLaunchFailure,
           format("%s: block (%u, %u, %u) deadlocks: of %u threads, %u wait at "
                  "__syncthreads, %u at a warp shuffle, %u have exited",
                  kernelName, blockIdx.x, blockIdx.y, blockIdx.z, threads, atBlock, atWarp,
                  threads - live));
      return false;
    }
  }
}

} // namespace

int laneId() {
  Scheduler &s = scheduler();
  return s.current ? int(s.current->linear % warpSize) : 0;
}

unsigned liveLanes() {
  Scheduler &s = scheduler();
  unsigned warp = s.current->linear / warpSize * warpSize, mask = 0;
  for (unsigned lane = 0; lane < unsigned(warpSize) && warp + lane < s.fibers.size(); ++lane)
    if (s.fibers[warp + lane].wait != Wait::Done)
      mask |= 1u << lane;
  return mask;
}

unsigned warpGather(const void *value, size_t bytes, void *out) {
  Scheduler &s = scheduler();
  Fiber *self = s.current;
  std::memcpy(s.slots[self->linear].data(), value, bytes);
  suspend(Wait::Warp); // every live lane has written
  unsigned warp = self->linear / warpSize * warpSize, live = liveLanes();
  for (unsigned lane = 0; lane < unsigned(warpSize); ++lane)
    if (live >> lane & 1u)
      std::memcpy(static_cast<char *>(out) + lane * bytes, s.slots[warp + lane].data(), bytes);
  suspend(Wait::Warp); // every live lane has read
  return live;
}

void warpExchange(const void *value, size_t bytes, int source, void *out) {
  unsigned char all[32 * 16];
  unsigned live = warpGather(value, bytes, all);
  bool from = source >= 0 && source < warpSize && (live >> source & 1u);
  std::memcpy(out, from ? all + size_t(source) * bytes : value, bytes);
}

void *dynamicSharedBytes() { return scheduler().shared.data(); }

void setMaxDynamicShared(const void *kernel, int bytes) { maxShared[kernel] = bytes; }

void run(dim3 grid, dim3 block, size_t sharedBytes, const void *kernel,
         const std::function<void()> &thread) {
  Scheduler &s = scheduler();
  const std::string name = format("kernel %p", kernel);
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  failure.clear();
  if (threads == 0 || threads > kMaxThreads || block.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    fail(cudaErrorInvalidConfiguration,
         format("%s: grid (%u, %u, %u) of blocks (%u, %u, %u) cannot launch", name.c_str(),
                grid.x, grid.y, grid.z, block.x, block.y, block.z));
    return;
  }
  auto raised = maxShared.find(kernel);
  size_t limit = raised == maxShared.end() ? kDefaultShared
                                           : std::min(kMaxShared, size_t(raised->second));
  if (sharedBytes > limit) {
    fail(cudaErrorInvalidValue,
         format("%s: %zu bytes of dynamic shared memory, more than its %zu", name.c_str(),
                sharedBytes, limit));
    return;
  }
  if (!mapStacks(s)) {
    fail(cudaErrorLaunchFailure, "could not map the emulated threads' stacks");
    return;
  }
  gridDim = grid;
  blockDim = block;
  s.thread = &thread;
  s.shared.assign(sharedBytes, 0xff);
  s.slots.assign(threads, {});
  const uint64_t blocks = uint64_t(grid.x) * grid.y * grid.z;
  for (uint64_t k = 0; k < blocks; ++k) {
    uint64_t b = reversed() ? blocks - 1 - k : k;
    blockIdx = dim3(unsigned(b % grid.x), unsigned(b / grid.x % grid.y),
                    unsigned(b / (uint64_t(grid.x) * grid.y)));
    if (!runBlock(s, name.c_str()))
      return;
  }
}

std::string lastFailure() { return failure; }

} // namespace plait_emu

cudaError_t cudaGetLastError() {
  cudaError_t e = plait_emu::lastError;
  plait_emu::lastError = cudaSuccess;
  return e;
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorLaunchFailure: return "unspecified launch failure";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  }
  return "unknown error";
}

const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
  case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
  }
  return "cudaErrorUnknown";
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *to, const void *from, size_t bytes, cudaMemcpyKind,
                            cudaStream_t) {
  std::memmove(to, from, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpy2DAsync(void *to, size_t toPitch, const void *from, size_t fromPitch,
                              size_t width, size_t rows, cudaMemcpyKind, cudaStream_t) {
  if (width > toPitch || width > fromPitch)
    return cudaErrorInvalidValue;
  for (size_t r = 0; r < rows; ++r)
    std::memmove(static_cast<char *>(to) + r * toPitch,
                 static_cast<const char *>(from) + r * fromPitch, width);
  return cudaSuccess;
}

float __bfloat162float(__nv_bfloat16 v) { return plait::rt::bf16ToFloat(v.__x); }
__nv_bfloat16 __float2bfloat16_rn(float v) {
  return __nv_bfloat16::fromBits(plait::rt::floatToBf16(v));
}
float __half2float(__half v) { return plait::rt::f16ToFloat(v.__x); }
__half __float2half_rn(float v) { return __half::fromBits(plait::rt::floatToF16(v)); }

void __syncthreads() { plait_emu::suspend(plait_emu::Wait::Block); }

unsigned __activemask() {
  // Every live lane of the warp arrives first, so that the mask is the lanes that will go on
  // together (the generated kernels' flush matches and shuffles right after it).
  plait_emu::suspend(plait_emu::Wait::Warp);
  return plait_emu::liveLanes();
}
