// Gradient kernels of the training ops (ir/PlaitTrainOps.td): gather_grad and the conv2d and
// pooling adjoints (the loss gradients are beside their losses, in LossKernels.cpp). Each is
// the exact adjoint of its forward kernel in this folder (same window geometry, same argmax,
// same divisor).
//
// Except where a comment says otherwise, outputs must not share bytes with inputs (the memory
// plan guarantees it: an op's results never overlap its operands).
// Float compares in branch-free selects (max_pool2d_grad's window maxima, PoolSupport.h) only
// vectorise when the compiler may assume FP operations do not trap; plait never unmasks FP
// exceptions, so this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "runtime/cpu/ConvSupport.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolSupport.h"
#include "runtime/cpu/Winograd.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

//===----------------------------------------------------------------------===//
// gather_grad
//===----------------------------------------------------------------------===//

/// result = 0; result[o, indices[q], :] += grad[o, q, :] with o over result[:axis] and ':'
/// over result[axis+1:]. Repeated indices accumulate.
Status gatherGradKernel(const KernelCall &call) {
  constexpr std::string_view kName = "gather_grad";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  const TensorView &grad = call.inputs[0], &indices = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kName, grad, out));
  PLAIT_RETURN_IF_ERROR(checkIndexDtype(kName, "indices", indices));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis(kName, call.attrs.getInt("axis", 0), out.rank(), axis));
  ShapeRef outShape = out.shape;
  Dims expected(outShape.slice(0, axis));
  expected.append(indices.shape);
  expected.append(outShape.slice(axis + 1, out.shape.size()));
  if (expected.size() != out.shape.size() - 1 + indices.shape.size())
    return Status::errorf("{}: grad would have more than {} dimensions", kName, kMaxRank);
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "grad", grad.shape, expected));
  // Validate every index before writing anything, so an error leaves no half-done result.
  int64_t size = out.shape[axis], count = indices.numel();
  Scratch scratch(call, kName);
  int64_t *rows; // workspace: the normalised indices
  PLAIT_RETURN_IF_ERROR(scratch.take(count, rows));
  PLAIT_RETURN_IF_ERROR(normalizeIndices(kName, indices, axis, size, rows));
  int64_t outer = product(out.shape, 0, axis);
  int64_t inner = product(out.shape, axis + 1, out.shape.size());
  if (isHalf(out.dtype)) {
    // bf16/f16: the result a block of gatherGradTileRows rows at a time, summed in an f32 tile
    // (the next workspace chunk) in index order from 0 and rounded once: the bits of the f32
    // kernel on a widened grad, without an f32 copy of the whole result (an embedding's
    // [vocabulary, width]) or of the grad.
    const int64_t tileRows = gatherGradTileRows(size, inner);
    float *tile;
    PLAIT_RETURN_IF_ERROR(scratch.take(std::max<int64_t>(tileRows * inner, 1), tile));
    const uint16_t *src = grad.as<uint16_t>();
    uint16_t *dst = out.as<uint16_t>();
    const DType dtype = out.dtype;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r0 = 0; r0 < size; r0 += tileRows) {
        const int64_t r1 = std::min(size, r0 + tileRows);
        // Columns split across the kernels' threads, each scanning every index for the
        // block's rows.
        parallelFor(inner, grainFor(kElementGrain, count + r1 - r0),
                    [&](int64_t, int64_t k0, int64_t k1) {
          for (int64_t r = r0; r < r1; ++r)
            std::fill(tile + (r - r0) * inner + k0, tile + (r - r0) * inner + k1, 0.0f);
          auto accumulate = [&](auto widen) { // the dtype's conversion, chosen once
            const uint16_t *terms = src + o * count * inner;
            for (int64_t q = 0; q < count; ++q, terms += inner) {
              if (rows[q] < r0 || rows[q] >= r1)
                continue;
              float *row = tile + (rows[q] - r0) * inner;
              for (int64_t k = k0; k < k1; ++k)
                row[k] += widen(terms[k]);
            }
          };
          if (dtype == DType::BF16)
            accumulate([](uint16_t v) { return widenBf16(v); });
          else
            accumulate([](uint16_t v) { return widenF16(v); });
          for (int64_t r = r0; r < r1; ++r)
            narrowFromF32(tile + (r - r0) * inner + k0, dst + (o * size + r) * inner + k0,
                          dtype, k1 - k0);
        });
      }
    return Status();
  }
  return dispatchF32F64(kName, out.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *src = grad.as<T>();
    T *dst = out.as<T>();
    parallelFor(out.numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      std::fill(dst + begin, dst + end, T(0));
    });
    // Columns (o, k) split across the kernels' threads: each column of the result gathers
    // its rows' terms on one thread in index order (repeated indices accumulate), so the
    // result has the same bits on any thread count.
    parallelFor(outer * inner, grainFor(kElementGrain, count),
                [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t o = begin / inner; o * inner < end; ++o) {
        int64_t k0 = std::max(begin - o * inner, int64_t(0));
        int64_t k1 = std::min(end - o * inner, inner);
        T *block = dst + o * size * inner;
        const T *terms = src + o * count * inner;
        for (int64_t q = 0; q < count; ++q, terms += inner) {
          T *row = block + rows[q] * inner;
          for (int64_t k = k0; k < k1; ++k)
            row[k] += terms[k];
        }
      }
    });
    return Status();
  });
}

//===----------------------------------------------------------------------===//
// conv2d_grad_input, conv2d_grad_weight
//===----------------------------------------------------------------------===//

/// dx[n, group g] = col2im(W_g^T dy[n, g]) with W_g the group's [F/group, patch] filters, one
/// GEMM per group of a block of images (image_block), their gathered dy side by side.
template <typename T> Status convGradInput(const KernelCall &call, const ConvShape &s) {
  const T *dy = call.inputs[0].as<T>(), *w = call.inputs[1].as<T>();
  T *dx = call.outputs[0].as<T>();
  Scratch scratch(call, "conv2d_grad_input");
  if (s.depthwise()) // no columns, no GEMM (Workspace.cpp depthwiseBytes: channel blocks)
    return depthwiseConv2dGradInput(dy, w, s, dx, scratch);
  if (s.groupedDirect) // no columns, no GEMM (Workspace.cpp groupedBytes: a group at a time)
    return groupedConv2dGradInput(dy, w, s, dx, scratch);
  int64_t filtersPerGroup = s.filtersPerGroup(), patch = s.patch(), outPlane = s.outPlane();
  if (s.winograd) { // dx: dy correlated with w turned, padded by 2 - pad (Winograd.h)
    return winogradConv3x3(dy, w, winogradConvOf(s, true), scratch, dx);
  }
  // workspace: the columns of one unit per chunk of units, and with blocks of several images
  // a staging matrix for their dy (Workspace.cpp convColumns)
  ColumnMatrix<T> col(s);
  PLAIT_RETURN_IF_ERROR(col.allocate(scratch, s.unitSlots()));
  return forEachConvUnit(s, [&](int64_t slot, int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t block = u / s.group, g = u % s.group;
      const int64_t first = block * s.imageBlock, count = s.blockImages(block);
      const int64_t width = count * outPlane; // the block's columns
      const T *grad = col.gradOf(dy, first, count, g, slot);
      // A pointwise convolution's one image: its column matrix is dx itself.
      T *image = dx + s.inputOffset(first, g);
      const bool direct = s.pointwise() && count == 1;
      T *columns = direct ? image : col.slot(slot);
      PLAIT_RETURN_IF_ERROR(gemmRowMajor<T>(true, false, patch, width, filtersPerGroup, 1.0,
                                            w + g * filtersPerGroup * patch, patch, grad, width,
                                            0.0, columns, width));
      if (!direct)
        for (int64_t i = 0; i < count; ++i)
          col2im(columns + i * outPlane, s, width, dx + s.inputOffset(first + i, g));
    }
    return Status();
  });
}

/// dw_g = sum over the image blocks (image_block) of dy[block, g] im2col(x[block, g])^T, the
/// block's images side by side in one GEMM, added to dw with `accumulate` (a bf16/f16 call's
/// later slices of images: halfConvGradWeight). Two forms (Workspace.h convGradWeightRuns),
/// each with the same bits on any number of threads:
///  - row panels (more filters per group than a block's output pixels): the blocks in order
///    into dw itself, each block's columns built once and its GEMM split across threads into
///    fixed panels of convGradWeightPanelRows filters (each panel's GEMM whole on one thread);
///  - runs: the blocks cut into convColumnSlots(blocks, one block's multiply-adds) fixed runs
///    (a function of the shapes alone: 1 for small convolutions, which then split their
///    GEMMs), each summed in order by GEMMs accumulating into its own dw (run 0 into dw
///    itself, the others into workspace copies), and the copies added into dw in run order.
///    The runs split across threads, one column matrix each, and each GEMM reads columns its
///    own thread built.
template <typename T>
Status convGradWeight(const KernelCall &call, const ConvShape &s, bool accumulate = false) {
  const T *x = call.inputs[0].as<T>(), *dy = call.inputs[1].as<T>();
  T *dw = call.outputs[0].as<T>();
  int64_t filtersPerGroup = s.filtersPerGroup(), patch = s.patch(), outPlane = s.outPlane();
  const int64_t size = s.filters * patch;
  if (s.batch == 0) {
    if (!accumulate)
      std::fill(dw, dw + size, T(0));
    return Status();
  }
  Scratch scratch(call, "conv2d_grad_weight");
  if (s.depthwise()) // no columns, no GEMM (Workspace.cpp depthwiseBytes: channel blocks)
    return depthwiseConv2dGradWeight(x, dy, s, dw, accumulate, scratch);
  if (s.groupedDirect) // no columns, no GEMM (Workspace.cpp groupedBytes: a group at a time)
    return groupedConv2dGradWeight(x, dy, s, dw, accumulate, scratch);
  if (s.winograd) // the transpose of F(2x2, 3x3) (Winograd.h)
    return winogradConvGradWeight3x3(x, dy, winogradConvOf(s, false), scratch, dw, accumulate);
  // workspace: a column matrix (and with blocks of several images a staging matrix for their
  // dy) per run, and the dw of every run but the first (Workspace.cpp computeBytes)
  const int64_t blocks = s.blocks(), blockWork = s.unitWork() * s.group; // multiply-adds
  const int64_t runs = convGradWeightRuns(blocks, blockWork, filtersPerGroup, s.blockColumns());
  ColumnMatrix<T> columns(s);
  PLAIT_RETURN_IF_ERROR(columns.allocate(scratch, runs));
  // Block b's group g: its columns and dy (gathered when it has several images), in `slot`.
  auto operands = [&](int64_t b, int64_t g, int64_t slot, const T *&cols, const T *&grad) {
    const int64_t first = b * s.imageBlock, count = s.blockImages(b);
    cols = columns.of(x, first, count, g, slot);
    grad = columns.gradOf(dy, first, count, g, slot);
    return count * outPlane; // the block's columns
  };
  if (convGradWeightRowPanels(filtersPerGroup, s.blockColumns())) {
    // The panels' GEMMs fail only on a dimension over BLAS's limit: checked once, here.
    for (int64_t v : {patch, s.blockColumns()})
      if (v > INT_MAX)
        return Status::errorf("gemm: dimension {} exceeds the BLAS limit {}", v, INT_MAX);
    const int64_t panelRows = convGradWeightPanelRows(filtersPerGroup);
    const int64_t panels = (filtersPerGroup + panelRows - 1) / panelRows;
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t g = 0; g < s.group; ++g) {
        const T *cols, *grad;
        const int64_t width = operands(b, g, 0, cols, grad);
        const double beta = b == 0 && !accumulate ? 0.0 : 1.0;
        parallelFor(panels, 1, [&](int64_t, int64_t first, int64_t last) {
          for (int64_t p = first; p < last; ++p) {
            const int64_t row = p * panelRows;
            const int64_t rows = std::min(panelRows, filtersPerGroup - row);
            (void)gemmRowMajor<T>(false, true, rows, patch, width, 1.0, grad + row * width, width,
                                  cols, width, beta, dw + (g * filtersPerGroup + row) * patch,
                                  patch);
          }
        });
      }
    return Status();
  }
  T *copies = nullptr;
  if (runs > 1)
    PLAIT_RETURN_IF_ERROR(scratch.take(size * (runs - 1), copies));
  const int64_t grain = grainFor(kMultiplyAddGrain, blockWork * ((blocks + runs - 1) / runs));
  PLAIT_RETURN_IF_ERROR(parallelForSlots(runs, grain, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t run = first; run < last; ++run) {
      T *sum = run == 0 ? dw : copies + (run - 1) * size;
      const int64_t begin = run * blocks / runs, end = (run + 1) * blocks / runs;
      for (int64_t b = begin; b < end; ++b)
        for (int64_t g = 0; g < s.group; ++g) {
          const T *cols, *grad;
          const int64_t width = operands(b, g, run, cols, grad);
          PLAIT_RETURN_IF_ERROR(gemmRowMajor<T>(false, true, filtersPerGroup, patch, width, 1.0,
                                                grad, width, cols, width,
                                                b == begin && !(accumulate && run == 0) ? 0.0 : 1.0,
                                                sum + g * filtersPerGroup * patch, patch));
        }
    }
    return Status();
  }));
  for (int64_t run = 1; run < runs; ++run) {
    const T *copy = copies + (run - 1) * size;
    for (int64_t i = 0; i < size; ++i)
      dw[i] += copy[i];
  }
  return Status();
}

/// conv2d_grad_weight of bf16/f16 x and dy: a few images at a time (batchStageEntries)
/// widened into the workspace, their dw summed by convGradWeight into one f32 dw (added to
/// after the first slice), rounded into the result at the end. The workspace: the slices of
/// x and dy, the f32 dw, then the f32 kernel's for a slice (Workspace.cpp). The images are
/// summed in another grouping than one f32 call on the whole batch would use (within the
/// result's rounding).
Status halfConvGradWeight(const KernelCall &call, const ConvShape &s) {
  auto &inputs = const_cast<std::vector<TensorView> &>(call.inputs);
  TensorView &x = inputs[0], &dy = inputs[1], &dw = call.outputs[0];
  const int64_t batch = s.batch;
  const int64_t xEntry = batch == 0 ? 0 : x.numel() / batch;
  const int64_t dyEntry = batch == 0 ? 0 : dy.numel() / batch;
  const int64_t entries = batchStageEntries(batch, std::max(xEntry, dyEntry));
  Scratch scratch(call, "conv2d_grad_weight");
  float *xs = nullptr, *dys = nullptr, *acc = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(std::max<int64_t>(entries * xEntry, 1), xs));
  PLAIT_RETURN_IF_ERROR(scratch.take(std::max<int64_t>(entries * dyEntry, 1), dys));
  PLAIT_RETURN_IF_ERROR(scratch.take(std::max<int64_t>(dw.numel(), 1), acc));
  // The views point at the f32 slices for the inner calls (no allocation), then back.
  const TensorView saved[3] = {x, dy, dw};
  auto restore = [&] {
    for (TensorView *v : {&x, &dy, &dw}) {
      const TensorView &was = saved[v == &x ? 0 : v == &dy ? 1 : 2];
      v->data = was.data;
      v->dtype = was.dtype;
      v->shape[0] = was.shape[0];
    }
  };
  std::fill(acc, acc + dw.numel(), 0.0f);
  Status status;
  for (int64_t b0 = 0; b0 < batch && status.ok(); b0 += entries) {
    const int64_t n = std::min(entries, batch - b0);
    widenToF32(static_cast<const uint16_t *>(saved[0].data) + b0 * xEntry, saved[0].dtype, xs,
               n * xEntry);
    widenToF32(static_cast<const uint16_t *>(saved[1].data) + b0 * dyEntry, saved[1].dtype, dys,
               n * dyEntry);
    x.data = xs, x.dtype = DType::F32, x.shape[0] = n;
    dy.data = dys, dy.dtype = DType::F32, dy.shape[0] = n;
    dw.data = acc, dw.dtype = DType::F32;
    ConvShape slice = s;
    slice.batch = n;
    slice.imageBlock = std::min(s.imageBlock, n);
    uint64_t innerUsed = 0;
    KernelCall inner{inputs,         call.outputs,   call.attrs,          call.rank,
                     call.worldSize, scratch.rest(), scratch.restBytes(), &innerUsed};
    status = convGradWeight<float>(inner, slice, b0 > 0);
    scratch.addNested(innerUsed);
  }
  restore();
  if (status.ok())
    narrowFromF32(acc, dw.data, dw.dtype, dw.numel());
  return status;
}

/// conv2d_grad_input(grad, w) -> dx, shaped like the forward input.
Status conv2dGradInputKernel(const KernelCall &call) {
  constexpr std::string_view kName = "conv2d_grad_input";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  // The gradient has the forward output's shape.
  ConvShape s;
  PLAIT_RETURN_IF_ERROR(planConvShape(kName, call.attrs, call.outputs[0], call.inputs[1],
                                      call.inputs[0], "grad", s));
  if (hasHalfTensor(call)) // a few images at a time, the weight whole
    return runStagedInF32Entries(call, &conv2dGradInputKernel,
                                 uint64_t(batchStagedWholeInputs("conv2d_grad_input")));
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    return convGradInput<decltype(tag)>(call, s);
  });
}

/// conv2d_grad_weight(x, grad) -> dw, shaped like the forward weight.
Status conv2dGradWeightKernel(const KernelCall &call) {
  constexpr std::string_view kName = "conv2d_grad_weight";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  ConvShape s;
  PLAIT_RETURN_IF_ERROR(planConvShape(kName, call.attrs, call.inputs[0], call.outputs[0],
                                      call.inputs[1], "grad", s));
  if (hasHalfTensor(call)) // a few images at a time into one f32 dw (one dtype: planConvShape)
    return halfConvGradWeight(call, s);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    return convGradWeight<decltype(tag)>(call, s);
  });
}

//===----------------------------------------------------------------------===//
// max_pool2d_grad, avg_pool2d_grad
//===----------------------------------------------------------------------===//

/// Checks a pooling adjoint: `x` is the forward input (or the result, shaped like it) and
/// `grad` must have the forward output's shape.
Status planPoolGrad(const KernelCall &call, std::string_view kernel, bool hasDilations,
                    const TensorView &x, const TensorView &grad, PoolShape &s) {
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, grad));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, call.outputs[0]));
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "output", call.outputs[0].shape, x.shape));
  return planPoolShape(kernel, call.attrs, hasDilations, x, grad, "grad", s);
}

/// Routes each window's gradient to the element the forward max_pool2d selects
/// (maxPoolWindow: the first maximum, or the last NaN; a window entirely in the padding
/// sends none).
/// Safe when dx aliases x: each plane's argmaxes are found before the plane is written.
/// `argmax` holds `slots` planes' worth (outHeight x outWidth) of offsets: the planes split
/// across threads in at most that many chunks, each chunk using its own.
template <typename T>
void maxPoolGrad(const T *x, const T *dy, T *dx, const PoolShape &s, int64_t *argmax,
                 int64_t slots) {
  int64_t inPlane = s.height * s.width, outPlane = s.outHeight * s.outWidth;
  int64_t grain = std::max(poolPlaneGrain(s), (s.planes + slots - 1) / slots);
  const InteriorColumns inner = interiorColumns(s);
  parallelFor(s.planes, grain, [&](int64_t chunk, int64_t begin, int64_t end) {
    int64_t *best = argmax + chunk * outPlane;
    for (int64_t p = begin; p < end; ++p) {
      const T *plane = x + p * inPlane;
      for (int64_t oh = 0; oh < s.outHeight; ++oh)
        maxPoolRow<T, true>(plane, s, inner, oh, nullptr, best + oh * s.outWidth);
      T *out = dx + p * inPlane;
      const T *g = dy + p * outPlane;
      std::fill(out, out + inPlane, T(0));
      for (int64_t o = 0; o < outPlane; ++o)
        if (best[o] >= 0)
          out[best[o]] += g[o];
    }
  });
}

/// Adjoint of the forward avg_pool2d: the same cut windows (avgPoolSpan) and divisors
/// (avgPoolDivisor); its planes split across threads.
template <typename T> void avgPoolGrad(const T *dy, T *dx, const PoolShape &s, bool countPad) {
  const Window2d &w = s.window;
  int64_t inPlane = s.height * s.width, outPlane = s.outHeight * s.outWidth;
  parallelFor(s.planes, poolPlaneGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    std::fill(dx + begin * inPlane, dx + end * inPlane, T(0));
    const T *g = dy + begin * outPlane;
    for (int64_t p = begin; p < end; ++p) {
      T *plane = dx + p * inPlane;
      for (int64_t oh = 0; oh < s.outHeight; ++oh) {
        AvgPoolSpan rows = avgPoolSpan(w, 0, oh, s.height);
        for (int64_t ow = 0; ow < s.outWidth; ++ow) {
          AvgPoolSpan cols = avgPoolSpan(w, 1, ow, s.width);
          T share = *g++;
          int64_t count = avgPoolDivisor(rows, cols, countPad);
          if (count <= 0)
            continue;
          share = T(double(share) / double(count));
          for (int64_t ih = rows.begin; ih < rows.end; ++ih)
            for (int64_t iw = cols.begin; iw < cols.end; ++iw)
              plane[ih * s.width + iw] += share;
        }
      }
    }
  });
}

/// max_pool2d_grad(x, grad) -> dx.
Status maxPoolGradKernel(const KernelCall &call) {
  constexpr std::string_view kName = "max_pool2d_grad";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 2, 2, 1));
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPoolGrad(call, kName, true, call.inputs[0], call.inputs[1], s));
  if (hasHalfTensor(call)) // a few images at a time (batchStagedWholeInputs)
    return runStagedInF32Entries(call, &maxPoolGradKernel);
  Scratch scratch(call, kName);
  // workspace: the window argmaxes of one plane per chunk (Workspace.cpp)
  int64_t outPlane = s.outHeight * s.outWidth;
  int64_t slots = maxPoolGradSlots(s.planes, s.height * s.width + outPlane);
  int64_t *argmax;
  PLAIT_RETURN_IF_ERROR(scratch.take(outPlane * slots, argmax));
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    maxPoolGrad(call.inputs[0].as<T>(), call.inputs[1].as<T>(), call.outputs[0].as<T>(), s,
                argmax, slots);
    return Status();
  });
}

/// avg_pool2d_grad(grad) -> dx, shaped like the forward input (the output's shape).
Status avgPoolGradKernel(const KernelCall &call) {
  constexpr std::string_view kName = "avg_pool2d_grad";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPoolGrad(call, kName, false, call.outputs[0], call.inputs[0], s));
  if (hasHalfTensor(call)) // a few images at a time (batchStagedWholeInputs)
    return runStagedInF32Entries(call, &avgPoolGradKernel);
  bool countPad = call.attrs.getBool("count_include_pad", false);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    avgPoolGrad(call.inputs[0].as<T>(), call.outputs[0].as<T>(), s, countPad);
    return Status();
  });
}

} // namespace

void registerGradKernels() {
  registerKernel("gather_grad", &gatherGradKernel);
  registerKernel("conv2d_grad_input", &conv2dGradInputKernel);
  registerKernel("conv2d_grad_weight", &conv2dGradWeightKernel);
  registerKernel("max_pool2d_grad", &maxPoolGradKernel);
  registerKernel("avg_pool2d_grad", &avgPoolGradKernel);
}

} // namespace plait::rt::cpu
