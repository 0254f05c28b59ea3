// Elementwise kernels: the unary and binary families, where, cast, strided copies (transpose,
// broadcast_to, slice), a collective's mean and the dropout mask. One grid-stride kernel per family, the op a
// runtime argument of a per-element switch (ElementMath.h) so that each family compiles once
// per dtype. Run on an H200 by tests/gpu/run.sh (every sample against the CPU backend).
#include <cstring>

#include "codegen/schema/DropoutMask.h"
#include "codegen/schema/RandomDraw.h"

#include "runtime/cuda/kernels/Device.cuh"
#include "runtime/cuda/kernels/ElementMath.h"

namespace plait::rt::cuda {
namespace {

template <typename S>
__global__ void unaryKernel(UnaryOp op, const S *x, S *y, int64_t n, UnaryParams p) {
  PLAIT_GRID_STRIDE(i, n) { store(y, i, math::unary(op, load(x, i), p)); }
}

__global__ void notKernel(const uint8_t *x, uint8_t *y, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) { y[i] = x[i] == 0; }
}

template <typename S>
__global__ void binaryKernel(BinaryOp op, const S *a, const S *b, void *out, StridedGeometry g,
                             int64_t n) {
  PLAIT_GRID_STRIDE(i, n) {
    Compute<S> va = load(a, stridedOffset(g, 0, i)), vb = load(b, stridedOffset(g, 1, i));
    if constexpr (std::is_same_v<S, uint8_t>) // i1 operands: equal and the logic ops only
      static_cast<uint8_t *>(out)[i] = math::predicate(op, va, vb);
    else if (math::isPredicate(op))
      static_cast<uint8_t *>(out)[i] = math::predicate(op, va, vb);
    else
      store(static_cast<S *>(out), i, math::arithmetic(op, va, vb));
  }
}

template <typename U>
__global__ void shiftKernel(bool left, const U *a, const U *b, U *out, StridedGeometry g,
                            int64_t n) {
  PLAIT_GRID_STRIDE(i, n) {
    U va = a[stridedOffset(g, 0, i)], vb = b[stridedOffset(g, 1, i)];
    out[i] = vb >= U(sizeof(U) * 8) ? U(0) : left ? U(va << vb) : U(va >> vb);
  }
}

template <typename E>
__global__ void whereKernel(const uint8_t *c, const E *x, const E *y, E *out, StridedGeometry g,
                            int64_t n) {
  PLAIT_GRID_STRIDE(i, n) {
    out[i] = c[stridedOffset(g, 0, i)] ? x[stridedOffset(g, 1, i)] : y[stridedOffset(g, 2, i)];
  }
}

template <typename E>
__global__ void stridedCopyKernel(const E *x, E *y, StridedGeometry g, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) { y[i] = x[stridedOffset(g, 0, i)]; }
}

template <typename E>
__global__ void padKernel(const E *x, E *y, PadGeometry g, E fill, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) {
    int64_t source = indexing::padSource(g, i);
    y[i] = source >= 0 ? x[source] : fill;
  }
}

template <typename E>
__global__ void triluKernel(const E *x, E *y, int64_t total, int64_t rows, int64_t cols,
                            bool upper, int64_t k) {
  PLAIT_GRID_STRIDE(i, total) { y[i] = indexing::triluKeeps(i, rows, cols, upper, k) ? x[i] : E{}; }
}

/// Calls fn(E{}) with an opaque element type of `bytes` bytes.
template <typename Fn> bool dispatchBySize(int bytes, Fn &&fn) {
  switch (bytes) {
  case 1: fn(uint8_t{}); return true;
  case 2: fn(uint16_t{}); return true;
  case 4: fn(uint32_t{}); return true;
  case 8: fn(uint64_t{}); return true;
  default: return false;
  }
}

// cast: the value of a stored element, and its conversion (CastKernels.cpp's rules: floats to
// integers truncate and saturate, NaN becomes 0; to i1 is != 0; f64 to a half goes through f32;
// integers to integers wrap). An i1 element is a Truth, since ui8 is stored as uint8_t too.
struct Truth {
  uint8_t bits;
};
template <typename S> __device__ __forceinline__ auto castValue(const S *p, int64_t i) {
  if constexpr (std::is_same_v<S, Truth>)
    return uint8_t(p[i].bits != 0);
  else
    return load(p, i);
}
template <typename I, typename F> __device__ __forceinline__ I truncateToInteger(F v) {
  if (v != v)
    return 0;
  if (v <= F(std::numeric_limits<I>::lowest()))
    return std::numeric_limits<I>::lowest();
  if (v >= F(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return I(v);
}
template <typename D, typename V> __device__ __forceinline__ void castStore(D *p, int64_t i, V v) {
  if constexpr (std::is_same_v<D, Truth>)
    p[i] = Truth{uint8_t(v != V(0))};
  else if constexpr (std::is_same_v<D, __nv_bfloat16> || std::is_same_v<D, __half>)
    store(p, i, float(v));
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>)
    p[i] = truncateToInteger<D>(v);
  else
    p[i] = D(v);
}
template <typename S, typename D> __global__ void castKernel(const S *x, D *y, int64_t n) {
  PLAIT_GRID_STRIDE(i, n) { castStore(y, i, castValue(x, i)); }
}
using CastList = TensorList<CastTensor, kMaxCastTensors>;
template <typename S, typename D> __global__ void groupedCastKernel(CastList list) {
  forEachListChunk(list, [&](int t, int64_t first) {
    const CastTensor &c = list.tensors[t];
    const S *x = static_cast<const S *>(c.x);
    D *y = static_cast<D *>(c.y);
    const int64_t end = first + kListChunk < c.n ? first + kListChunk : c.n;
    for (int64_t i = first + threadIdx.x; i < end; i += blockDim.x)
      castStore(y, i, castValue(x, i));
  });
}
template <typename Fn> bool dispatchStorage(int dtype, Fn &&fn) {
  switch (dtype) {
  case kI1: fn(Truth{}); return true;
  case kI8: fn(int8_t{}); return true;
  case kU8: fn(uint8_t{}); return true;
  case kI16: fn(int16_t{}); return true;
  case kU16: fn(uint16_t{}); return true;
  case kU32: fn(uint32_t{}); return true;
  case kU64: fn(uint64_t{}); return true;
  default: return dispatchNumeric(dtype, fn);
  }
}

template <typename S> __global__ void divideKernel(S *x, int64_t n, float divisor) {
  PLAIT_GRID_STRIDE(i, n) {
    if constexpr (std::is_same_v<S, double>)
      x[i] = x[i] / double(divisor);
    else
      store(x, i, load(x, i) / divisor);
  }
}

} // namespace

cudaError_t launchUnary(UnaryOp op, int dtype, const void *x, void *y, int64_t n,
                        const UnaryParams &params, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  if (op == UnaryOp::Not) {
    notKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint8_t *>(x),
                                                   static_cast<uint8_t *>(y), n);
    return cudaGetLastError();
  }
  bool ok = dispatchNumeric(dtype, [&](auto tag) {
    using S = decltype(tag);
    unaryKernel<S><<<gridFor(n), kThreads, 0, stream>>>(op, static_cast<const S *>(x),
                                                        static_cast<S *>(y), n, params);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchBinary(BinaryOp op, int dtype, const void *a, const void *b, void *out,
                         const StridedGeometry &g, int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  if (dtype == kI1) { // logic ops and equal on booleans
    binaryKernel<uint8_t><<<gridFor(n), kThreads, 0, stream>>>(
        op, static_cast<const uint8_t *>(a), static_cast<const uint8_t *>(b), out, g, n);
    return cudaGetLastError();
  }
  bool ok = dispatchNumeric(dtype, [&](auto tag) {
    using S = decltype(tag);
    binaryKernel<S><<<gridFor(n), kThreads, 0, stream>>>(op, static_cast<const S *>(a),
                                                         static_cast<const S *>(b), out, g, n);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchShift(bool left, int dtype, const void *a, const void *b, void *out,
                        const StridedGeometry &g, int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  auto launch = [&](auto tag) {
    using U = decltype(tag);
    shiftKernel<U><<<gridFor(n), kThreads, 0, stream>>>(left, static_cast<const U *>(a),
                                                        static_cast<const U *>(b),
                                                        static_cast<U *>(out), g, n);
    return cudaGetLastError();
  };
  switch (dtype) {
  case kU8: return launch(uint8_t{});
  case kU16: return launch(uint16_t{});
  case kU32: return launch(uint32_t{});
  case kU64: return launch(uint64_t{});
  default: return unsupported();
  }
}

cudaError_t launchWhere(int elementBytes, const void *cond, const void *x, const void *y,
                        void *out, const StridedGeometry &g, int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchBySize(elementBytes, [&](auto tag) {
    using E = decltype(tag);
    whereKernel<E><<<gridFor(n), kThreads, 0, stream>>>(
        static_cast<const uint8_t *>(cond), static_cast<const E *>(x),
        static_cast<const E *>(y), static_cast<E *>(out), g, n);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchCast(int from, int to, const void *x, void *y, int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = false;
  dispatchStorage(from, [&](auto srcTag) {
    using S = decltype(srcTag);
    ok = dispatchStorage(to, [&](auto dstTag) {
      using D = decltype(dstTag);
      castKernel<S, D><<<gridFor(n), kThreads, 0, stream>>>(static_cast<const S *>(x),
                                                            static_cast<D *>(y), n);
    });
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchGroupedCast(int from, int to, const CastTensor *tensors, int64_t count,
                              cudaStream_t stream) {
  // Floats only (grouped_cast's verifier): 16 kernels instead of every pair's 49.
  return launchLists<kMaxCastTensors>(tensors, count, [&](const CastList &list, unsigned grid) {
    bool ok = false;
    dispatchFloat(from, [&](auto srcTag) {
      using S = decltype(srcTag);
      ok = dispatchFloat(to, [&](auto dstTag) {
        using D = decltype(dstTag);
        groupedCastKernel<S, D><<<grid, kThreads, 0, stream>>>(list);
      });
    });
    return ok;
  });
}

cudaError_t launchStridedCopy(int elementBytes, const void *x, void *y, const StridedGeometry &g,
                              int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchBySize(elementBytes, [&](auto tag) {
    using E = decltype(tag);
    stridedCopyKernel<E><<<gridFor(n), kThreads, 0, stream>>>(static_cast<const E *>(x),
                                                              static_cast<E *>(y), g, n);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchPad(int elementBytes, const void *x, void *y, const PadGeometry &g,
                      uint64_t fillBits, int64_t n, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchBySize(elementBytes, [&](auto tag) {
    using E = decltype(tag);
    E fill;
    memcpy(&fill, &fillBits, sizeof fill); // little-endian: the low bytes hold the value
    padKernel<E><<<gridFor(n), kThreads, 0, stream>>>(static_cast<const E *>(x),
                                                      static_cast<E *>(y), g, fill, n);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchTrilu(int elementBytes, const void *x, void *y, int64_t matrices, int64_t rows,
                        int64_t cols, bool upper, int64_t k, cudaStream_t stream) {
  int64_t total = matrices * rows * cols;
  if (total == 0)
    return cudaSuccess;
  bool ok = dispatchBySize(elementBytes, [&](auto tag) {
    using E = decltype(tag);
    triluKernel<E><<<gridFor(total), kThreads, 0, stream>>>(
        static_cast<const E *>(x), static_cast<E *>(y), total, rows, cols, upper, k);
  });
  return ok ? cudaGetLastError() : unsupported();
}

/// The step is read on the device (plait.hyper "step", set before each step), so a captured
/// CUDA graph draws each replayed step's own mask.
template <typename S>
__global__ void dropoutMaskKernel(const float *step, S *y, int64_t n, uint64_t seed,
                                  uint64_t stream, uint64_t rank, uint64_t threshold,
                                  double scale) {
  const uint64_t key = dropout::streamKey(seed, stream, uint64_t(*step), rank);
  const Compute<S> kept = Compute<S>(scale), dropped = Compute<S>(0);
  PLAIT_GRID_STRIDE(i, n) { store(y, i, dropout::keep(key, uint64_t(i), threshold) ? kept : dropped); }
}

cudaError_t launchDropoutMask(int dtype, const float *step, void *y, int64_t n, uint64_t seed,
                              uint64_t stream, uint64_t rank, double ratio,
                              cudaStream_t cudaStream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    dropoutMaskKernel<S><<<gridFor(n), kThreads, 0, cudaStream>>>(
        step, static_cast<S *>(y), n, seed, stream, rank, dropout::threshold(ratio),
        1.0 / (1.0 - ratio));
  });
  return ok ? cudaGetLastError() : unsupported();
}

/// plait.random: the step is read on the device, as the dropout mask's.
template <typename S>
__global__ void randomKernel(const float *step, S *y, int64_t n, uint64_t seed, uint64_t stream,
                             uint64_t rank, bool normal, int bits, double a, double b) {
  const uint64_t key = dropout::streamKey(seed, stream, uint64_t(*step), rank);
  PLAIT_GRID_STRIDE(i, n) {
    const double v = normal ? random::normal(key, uint64_t(i), a, b)
                            : random::uniform(key, uint64_t(i), bits, a, b);
    store(y, i, Compute<S>(v));
  }
}

cudaError_t launchRandom(int dtype, const float *step, void *y, int64_t n, uint64_t seed,
                         uint64_t stream, uint64_t rank, bool normal, double a, double b,
                         cudaStream_t cudaStream) {
  if (n == 0)
    return cudaSuccess;
  // The element type's significand bits: a uniform draw's grid (RandomDraw.h).
  const int bits = dtype == kF64 ? 53 : dtype == kF32 ? 24 : dtype == kF16 ? 11 : 8;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    randomKernel<S><<<gridFor(n), kThreads, 0, cudaStream>>>(step, static_cast<S *>(y), n, seed,
                                                             stream, rank, normal, bits, a, b);
  });
  return ok ? cudaGetLastError() : unsupported();
}

cudaError_t launchDivideInPlace(int dtype, void *x, int64_t n, float divisor,
                                cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  bool ok = dispatchFloat(dtype, [&](auto tag) {
    using S = decltype(tag);
    divideKernel<S><<<gridFor(n), kThreads, 0, stream>>>(static_cast<S *>(x), n, divisor);
  });
  return ok ? cudaGetLastError() : unsupported();
}

} // namespace plait::rt::cuda
