// Helpers shared by the host side of the CUDA kernels (runtime/cuda/Cuda*Kernels.cpp):
// dtype codes, broadcast geometry for the device, workspace, launch checks.
#pragma once

#include <algorithm>
#include <string_view>
#include <vector>

#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/PoolSupport.h"
#include "runtime/cuda/CudaKernel.h"
#include "runtime/cuda/kernels/Launch.h"

namespace plait::rt::cuda {

/// The device code's dtype number (the same as DType's).
inline int code(DType t) { return static_cast<int>(t); }

/// A broadcast plan (runtime/cpu/Broadcast.h) as the device kernels read it.
template <size_t N> StridedGeometry toGeometry(const cpu::BroadcastPlan<N> &plan) {
  StridedGeometry g;
  g.rank = int32_t(plan.shape.size());
  for (size_t d = 0; d < plan.shape.size(); ++d) {
    g.shape[d] = plan.shape[d];
    for (size_t k = 0; k < N; ++k)
      g.stride[k][d] = plan.strides[k][d];
  }
  return g;
}

/// The dense copy of a strided view: result `shape`, source `strides` (elements), as
/// runtime/cpu/StridedCopy.h takes them.
StridedGeometry stridedView(cpu::ShapeRef shape, cpu::ShapeRef strides);

/// A reduction of `shape` over `axes` (empty: every axis) as the device walks it, and the
/// output shape (ReductionKernels.cpp's rules: axes normalised, none repeated).
Status planReduceGeometry(std::string_view kernel, cpu::ShapeRef shape, cpu::ShapeRef axes,
                          bool keepdims, cpu::Dims &outShape, ReduceGeometry &g);

/// One part of a concat (or split) along `axis` as a 2-D copy: `rows` rows of `width` bytes,
/// at `offset` bytes into the whole tensor whose rows are `pitch` bytes apart (the part's own
/// rows are `width` apart). What cudaMemcpy2DAsync takes.
struct SlabCopy {
  int64_t offset = 0, pitch = 0, width = 0, rows = 0;
};
/// The copies of parts of sizes `parts` along `axis` of the whole tensor `whole` (in order).
std::vector<SlabCopy> slabCopies(cpu::ShapeRef whole, int64_t axis, cpu::ShapeRef parts,
                                 size_t elementBytes);

/// Error unless the launch succeeded: "kernel: CUDA launch failed: ...".
Status launched(cudaError_t err, std::string_view kernel);

/// Device workspace of `bytes` for this call (256-byte aligned chunks taken in turn through
/// `used`); in a checking call it only records the need and sets `out` to null.
Status takeWorkspace(const CudaKernelCall &call, std::string_view kernel, uint64_t bytes,
                     uint64_t &used, void *&out);

/// Error for a dtype the CUDA kernel does not implement (the CPU kernel may):
/// "kernel: dtype f64 has no CUDA kernel".
Status noCudaDtype(std::string_view kernel, DType t);

/// Whether the CUDA kernels that compute on elements (not only move their bytes) have code for
/// `t`: the floats, i64, i32 and i1, not the small data integers (i8, ui8, i16, ui16, ui32,
/// ui64), which only the movement kernels take on the device.
inline bool hasCudaElementCode(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 || t == DType::F16 ||
         t == DType::I64 || t == DType::I32 || t == DType::I1;
}

/// The pool kernels' geometry from the CPU's plan of the pool (planPoolShape) and
/// count_include_pad (CudaMovementKernels.cpp; the host tests check it against the CPU pools).
PoolGeometry poolGeometry(const cpu::PoolShape &s, bool countPad);

/// Whether [a, a + aBytes) and [b, b + bBytes) overlap.
inline bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + bBytes && pb < pa + aBytes;
}

} // namespace plait::rt::cuda

namespace plait::rt {
/// The optimizer kernels' hyper-parameters (CudaOptimizerKernels.cpp): the host value of input
/// `index` (`what`: "lr", an f64 scalar, or "step", f32; in a checking call its type only),
/// the step number's check (skipped by a checking call), and a float dtype check.
Status readScalar(const CudaKernelCall &call, std::string_view kernel, std::string_view what,
                  size_t index, double &value);
Status checkStep(const CudaKernelCall &call, std::string_view kernel, double step);
Status checkFloat(std::string_view kernel, DType t);
/// adafactor_update with `segments` (CudaAdafactorKernels.cpp; the whole one's kernel hands it
/// over), and the registration of adafactor_stats and adafactor_norms.
Status adafactorShardUpdate(const CudaKernelCall &call);
void registerCudaAdafactorShardKernels();

// The kernel families (one source file each); registerCudaKernels() calls them all.
void registerCudaElementwiseKernels(); // unary, binary, where, cast       (CudaElementwiseKernels.cpp)
void registerCudaReductionKernels();   // reduce_*, softmax, losses        (CudaReductionKernels.cpp)
void registerCudaMovementKernels();    // movement, gather, pools          (CudaMovementKernels.cpp)
void registerCudaOptimizerKernels();   // *_update, grouped_update         (CudaOptimizerKernels.cpp)
void registerCudaLibraryKernels();     // matmul, gemm (cuBLASLt), conv2d (cuDNN), fused (CudaLibraryKernels.cpp)
void registerCudaAttentionKernels();   // attention, attention_grad        (CudaAttentionKernels.cpp)
} // namespace plait::rt
