// A host emulation of the part of CUDA that the CUDA backend's kernels use (runtime/cuda/
// Cuda*Kernels.cpp and kernels/*.cu), so that they run without a GPU against the CPU kernels
// (tests/cuda_emulation). translate.py turns each .cu into C++ (a launch
// `k<<<g, b, s, t>>>(args)` into `::plait_emu::Launch(g, b, s, t)(k, args)`,
// `extern __shared__ T name[]` into a pointer to the launch's dynamic shared memory), and
// include/ stands in for CUDA's headers.
//
// A launch runs its blocks one after another (in order, or last first with
// PLAIT_CUDA_EMULATION_ORDER=reverse, which the tests also run: a kernel whose results depend
// on the order of its threads between barriers has a race). A block's threads are fibers on
// this one OS thread, switched only where a thread must wait for others: __syncthreads (every
// live thread of the block) and the warp shuffles (every live thread of the warp, twice: all
// write, then all read). So what one thread writes to shared memory before a barrier, the
// others see after it, as on a device, and a barrier some thread never reaches is reported
// as a deadlock instead of hanging. Atomics are plain adds (one thread runs at a time).
// __shared__ variables are statics, shared by the block's fibers (blocks do not overlap);
// dynamic shared memory is filled with 0xff bytes (NaN floats) before each block, so a read
// of shared memory no thread wrote shows in the results.
//
// What this does not check: timing, the memory model between blocks, occupancy and register
// limits, and CUDA's own math (expf, erff ... are the host's). A launch whose configuration a
// device refuses (more than 1024 threads a block, an empty grid, more dynamic shared memory
// than 48 KiB without cudaFuncSetAttribute or 227 KiB with it) fails as it would there:
// nothing runs and cudaGetLastError() returns the error.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;
// CUDA's 16-byte float vector (the generated fused kernels' loads and stores).
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

// The running thread's indices, set by the scheduler at every switch.
extern dim3 blockIdx, threadIdx, blockDim, gridDim;
constexpr int warpSize = 32;

enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorLaunchFailure = 4,
  cudaErrorInvalidConfiguration = 9,
};
typedef enum cudaError cudaError_t;
typedef struct CUstream_st *cudaStream_t;
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

/// The error of the last launch since the last call (cleared by the call), as CUDA's.
cudaError_t cudaGetLastError();
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
// Memory is the host's: set and copied at once (one stream, in order).
enum cudaMemcpyKind { cudaMemcpyDeviceToDevice = 3 };
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaMemcpyAsync(void *to, const void *from, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy2DAsync(void *to, size_t toPitch, const void *from, size_t fromPitch,
                              size_t width, size_t rows, cudaMemcpyKind kind,
                              cudaStream_t stream = nullptr);

// bf16 and fp16 as their bits, converted as CUDA converts them (round to nearest even), to
// and from float implicitly as CUDA's types are on the host.
float __bfloat162float(struct __nv_bfloat16 v);
struct __nv_bfloat16 __float2bfloat16_rn(float v);
float __half2float(struct __half v);
struct __half __float2half_rn(float v);
struct __nv_bfloat16 {
  uint16_t __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float v) : __x(__float2bfloat16_rn(v).__x) {}
  operator float() const { return __bfloat162float(*this); }
  static __nv_bfloat16 fromBits(uint16_t bits) {
    __nv_bfloat16 b;
    b.__x = bits;
    return b;
  }
};
struct __half {
  uint16_t __x;
  __half() = default;
  __half(float v) : __x(__float2half_rn(v).__x) {}
  operator float() const { return __half2float(*this); }
  static __half fromBits(uint16_t bits) {
    __half h;
    h.__x = bits;
    return h;
  }
};

void __syncthreads();

namespace plait_emu {

/// Every live thread of the running thread's warp writes `bytes` of `value`, and then reads
/// what lane `source` wrote into `out` (its own value where `source` is not a live lane).
void warpExchange(const void *value, size_t bytes, int source, void *out);

/// The running thread's lane in its warp (its linear index in the block, modulo 32).
int laneId();

/// Every live lane of the running thread's warp writes `bytes` of `value`; each then reads
/// them all: lane k's into out + k * bytes. Returns the live lanes.
unsigned warpGather(const void *value, size_t bytes, void *out);

/// The live lanes of the running thread's warp (__activemask).
unsigned liveLanes();

/// The running launch's dynamic shared memory.
void *dynamicSharedBytes();
template <typename T> T *dynamicShared() { return static_cast<T *>(dynamicSharedBytes()); }

/// The largest dynamic shared memory a kernel asked for with cudaFuncSetAttribute, by its
/// address (0: the default 48 KiB).
void setMaxDynamicShared(const void *kernel, int bytes);

/// Runs `thread` as every thread of the grid (blocks in order, a block's threads as fibers),
/// or records why the configuration cannot launch. `kernel` names it in errors.
void run(dim3 grid, dim3 block, size_t sharedBytes, const void *kernel,
         const std::function<void()> &thread);

/// The last launch's failure in words ("" after a launch that ran), for test messages.
std::string lastFailure();

/// `kernel<<<grid, block, shared, stream>>>(args...)`: the arguments converted to the
/// kernel's parameter types once, as a launch copies them, then every thread called with them.
class Launch {
public:
  Launch(dim3 grid, dim3 block, size_t shared = 0, cudaStream_t = nullptr)
      : grid_(grid), block_(block), shared_(shared) {}
  template <typename... Params, typename... Args>
  void operator()(void (*kernel)(Params...), Args &&...args) const {
    std::tuple<std::decay_t<Params>...> params(std::forward<Args>(args)...);
    run(grid_, block_, shared_, reinterpret_cast<const void *>(kernel),
        [&] { std::apply(kernel, params); });
  }

private:
  dim3 grid_, block_;
  size_t shared_;
};

} // namespace plait_emu

template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel *kernel, cudaFuncAttribute attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize)
    plait_emu::setMaxDynamicShared(reinterpret_cast<const void *>(kernel), value);
  return cudaSuccess;
}

template <typename T> T __shfl_sync(unsigned, T value, int source, int width = warpSize) {
  static_assert(sizeof(T) <= 16, "a shuffled value is at most 16 bytes");
  int lane = plait_emu::laneId();
  T out;
  plait_emu::warpExchange(&value, sizeof value, lane / width * width + source % width, &out);
  return out;
}
template <typename T> T __shfl_xor_sync(unsigned, T value, int mask, int width = warpSize) {
  static_assert(sizeof(T) <= 16, "a shuffled value is at most 16 bytes");
  int lane = plait_emu::laneId(), source = lane ^ mask;
  if (source / width != lane / width) // outside the lane's segment: its own value
    source = lane;
  T out;
  plait_emu::warpExchange(&value, sizeof value, source, &out);
  return out;
}

/// The lanes of the running thread's warp that have not exited, after every one of them has
/// arrived here (a device may also leave out live lanes that have diverged: the emulation
/// counts every live lane as converged).
unsigned __activemask();

/// The lanes of `mask` whose `value` equals the running lane's (every live lane of the warp
/// exchanges its value).
template <typename T> unsigned __match_any_sync(unsigned mask, T value) {
  static_assert(sizeof(T) <= 16, "a matched value is at most 16 bytes");
  T values[32];
  unsigned live = plait_emu::warpGather(&value, sizeof value, values), same = 0;
  for (int lane = 0; lane < warpSize; ++lane)
    if ((mask & live) >> lane & 1u && std::memcmp(&values[lane], &value, sizeof value) == 0)
      same |= 1u << lane;
  return same;
}

template <typename T> T atomicAdd(T *address, T value) {
  T old = *address;
  *address = old + value;
  return old;
}
template <typename T> T atomicCAS(T *address, T compare, T value) {
  T old = *address;
  if (old == compare)
    *address = value;
  return old;
}
