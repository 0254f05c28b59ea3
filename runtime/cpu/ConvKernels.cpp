// conv2d (NCHW, grouped, dilated, optional bias) as im2col followed by one GEMM per group of
// a block of images (their columns side by side: the call's image_block, 1 by default), or a
// depthwise convolution directly, plane by plane (ConvSupport.h depthwiseConv2d); its
// (image block, group) units split across the rank's threads (forEachConvUnit; with fewer
// units than threads, the im2col and GEMMs split instead), and the bias add by output plane.
#include "runtime/cpu/ConvSupport.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Winograd.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

Status planConv(const KernelCall &call, ConvShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "conv2d", 2, 3, 1));
  const TensorView &x = call.inputs[0];
  PLAIT_RETURN_IF_ERROR(
      planConvShape("conv2d", call.attrs, x, call.inputs[1], call.outputs[0], "output", s));
  if (call.inputs.size() > 2) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype("conv2d", x, call.inputs[2]));
    PLAIT_RETURN_IF_ERROR(checkShape("conv2d", "bias", call.inputs[2].shape, {s.filters}));
  }
  return Status();
}

template <typename T> Status convolve(const KernelCall &call, const ConvShape &s) {
  const T *x = call.inputs[0].as<T>(), *w = call.inputs[1].as<T>();
  const T *bias = call.inputs.size() > 2 ? call.inputs[2].as<T>() : nullptr;
  T *out = call.outputs[0].as<T>();
  Scratch scratch(call, "conv2d");
  if (s.depthwise()) // no columns, no GEMM (Workspace.cpp depthwiseBytes: channel blocks)
    return depthwiseConv2d(x, w, bias, s, out, scratch);
  if (s.groupedDirect) // no columns, no GEMM (Workspace.cpp groupedBytes: a group at a time)
    return groupedConv2d(x, w, bias, s, out, scratch);
  int64_t filtersPerGroup = s.filtersPerGroup(), patch = s.patch(), outPlane = s.outPlane();
  if (s.winograd) { // workspace: Workspace.cpp winogradBytes
    PLAIT_RETURN_IF_ERROR(winogradConv3x3(x, w, winogradConvOf(s, false), scratch, out));
  } else {
    // workspace: the im2col columns, a matrix per chunk of units, and with blocks of several
    // images a staging matrix for each (Workspace.cpp convColumns)
    ColumnMatrix<T> columns(s);
    PLAIT_RETURN_IF_ERROR(columns.allocate(scratch, s.unitSlots()));
    PLAIT_RETURN_IF_ERROR(forEachConvUnit(s, [&](int64_t slot, int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        const int64_t block = u / s.group, g = u % s.group;
        const int64_t first = block * s.imageBlock, count = s.blockImages(block);
        const int64_t width = count * outPlane; // the block's columns
        // One image's product is its output; a block's is staged, then scattered to its images.
        T *product = count == 1 ? out + s.outputOffset(first, g) : columns.stage(slot);
        PLAIT_RETURN_IF_ERROR(gemmRowMajor<T>(
            false, false, filtersPerGroup, width, patch, 1.0, w + g * filtersPerGroup * patch,
            patch, columns.of(x, first, count, g, slot), width, 0.0, product, width));
        if (count > 1)
          scatterBlock(product, s, first, count, g, out);
      }
      return Status();
    }));
  }
  if (bias) // split across threads by output plane (image, filter)
    parallelFor(s.batch * s.filters, grainFor(kElementGrain, outPlane),
                [&](int64_t, int64_t begin, int64_t end) {
                  for (int64_t q = begin; q < end; ++q) {
                    T *plane = out + q * outPlane;
                    T b = bias[q % s.filters];
                    for (int64_t p = 0; p < outPlane; ++p)
                      plane[p] += b;
                  }
                });
  return Status();
}

Status conv2dKernel(const KernelCall &call) {
  ConvShape s;
  PLAIT_RETURN_IF_ERROR(planConv(call, s));
  if (hasHalfTensor(call)) // a few images at a time, the weight and bias whole
    return runStagedInF32Entries(call, &conv2dKernel,
                                 uint64_t(batchStagedWholeInputs("conv2d")));
  return dispatchF32F64("conv2d", call.inputs[0].dtype, [&](auto tag) -> Status {
    return convolve<decltype(tag)>(call, s);
  });
}

} // namespace

void registerConvKernels() { registerKernel("conv2d", &conv2dKernel); }

} // namespace plait::rt::cpu
