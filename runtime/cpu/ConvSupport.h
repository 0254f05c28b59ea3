// conv2d geometry and its column layout (im2col, col2im), shared by conv2d and its adjoints
// so that the forward and the gradients read the same input positions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "runtime/Kernel.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Workspace.h"
#include "runtime/cpu/Window.h"

namespace plait::rt::cpu {

/// Geometry of one conv2d: x [N, C, H, W], w [F, C/group, kH, kW], y [N, F, OH, OW].
struct ConvShape {
  int64_t batch, channels, height, width; // x
  int64_t filters, groupChannels;         // w: [filters, groupChannels, kernel...]
  int64_t group, outHeight, outWidth;
  Window2d window;

  int64_t inPlane() const { return height * width; }
  int64_t filtersPerGroup() const { return filters / group; }
  /// Element offsets of group g of image n in x (and dx) and in y (and dy).
  int64_t inputOffset(int64_t n, int64_t g) const {
    return (n * channels + g * groupChannels) * inPlane();
  }
  int64_t outputOffset(int64_t n, int64_t g) const {
    return (n * filters + g * filtersPerGroup()) * outPlane();
  }
  int64_t outPlane() const { return outHeight * outWidth; }
  /// Rows of the column matrix: one per (channel of the group, kernel position).
  int64_t patch() const { return groupChannels * window.kernel[0] * window.kernel[1]; }
  /// Multiply-adds of one (image, group) unit's GEMM.
  int64_t unitWork() const { return filtersPerGroup() * patch() * outPlane(); }
  /// Column matrices conv2d and conv2d_grad_input keep: one per chunk of their (image, group)
  /// units (Workspace.h convColumnSlots, which the plan's workspace declares).
  int64_t unitSlots() const { return convColumnSlots(batch * group, unitWork()); }
  /// A depthwise convolution (MobileNet's, ConvNeXt's): one input channel and one filter per
  /// group. Computed directly, plane by plane (depthwiseConv2d and its adjoints): as GEMMs
  /// they would be one row each, an im2col and a BLAS call per (image, channel).
  bool depthwise() const { return groupChannels == 1 && filters == group; }
  /// A 1x1 unpadded stride-1 convolution: x itself is the column matrix.
  bool pointwise() const {
    const Window2d &w = window;
    return w.kernel[0] == 1 && w.kernel[1] == 1 && w.stride[0] == 1 && w.stride[1] == 1 &&
           w.padBegin[0] == 0 && w.padBegin[1] == 0 && w.padEnd[0] == 0 && w.padEnd[1] == 0;
  }
};

/// Reads the geometry of conv2d(x, w) -> y from the tensors and `attrs` (group, strides,
/// pads, dilations) and checks it: one dtype, 4-D x and w, a group that fits, and y shaped
/// as conv2d produces it. `yName` names y in the error ("output", or "grad" in an adjoint).
Status planConvShape(std::string_view kernel, const Attrs &attrs, const TensorView &x,
                     const TensorView &w, const TensorView &y, std::string_view yName,
                     ConvShape &s);

/// Lays out the receptive fields of one group's input planes `x` as columns:
/// col[(c * kH + i) * kW + j][oh * OW + ow] = x[c][oh*sH - pT + i*dH][ow*sW - pL + j*dW],
/// zero where that position falls in the padding. `col` holds patch() x outPlane() entries.
/// Its channels split across threads (Parallel.h), each channel's rows on one thread.
template <typename T> void im2col(const T *x, const ConvShape &s, T *col);

/// The adjoint of im2col: zeroes the group's input planes `x`, then adds every column entry
/// back to the input position it was read from (padding entries are dropped). Split across
/// threads by channel: each plane's sums keep their one-thread order.
template <typename T> void col2im(const T *col, const ConvShape &s, T *x);

/// A depthwise convolution (ConvShape::depthwise), without im2col or GEMM, each (image,
/// channel) plane on one thread (the same bits on any number of threads); every output sums
/// its taps in kernel order. conv2d: y = x * w (+ bias). Its adjoints: dx from dy and w,
/// and dw (added to dw with `accumulate`) from x and dy, each channel's taps summed over the
/// images in order, in double.
template <typename T>
void depthwiseConv2d(const T *x, const T *w, const T *bias, const ConvShape &s, T *y);
template <typename T>
void depthwiseConv2dGradInput(const T *dy, const T *w, const ConvShape &s, T *dx);
template <typename T>
void depthwiseConv2dGradWeight(const T *x, const T *dy, const ConvShape &s, T *dw, bool accumulate);

/// The column matrices (patch() x outPlane()) of groups' input planes, as conv2d and its
/// adjoints multiply them: the planes themselves for a pointwise convolution, else their
/// im2col in workspace buffers, one per slot (a chunk of forEachConvUnit), each reused from
/// unit to unit.
template <typename T> class ColumnMatrix {
public:
  explicit ColumnMatrix(const ConvShape &s) : shape_(s), pointwise_(s.pointwise()) {}

  /// Takes `slots` im2col buffers (none when pointwise) from `scratch`; call once, before
  /// of() or slot().
  Status allocate(Scratch &scratch, int64_t slots = 1) {
    return pointwise_ ? Status() : scratch.take(size() * slots, buffer_);
  }

  /// The columns of the group whose planes start at `image`, built in buffer `slot`; valid
  /// until that slot's next use.
  const T *of(const T *image, int64_t slot = 0) {
    if (pointwise_)
      return image;
    im2col(image, shape_, this->slot(slot));
    return this->slot(slot);
  }

  /// Buffer `slot` itself (null when pointwise).
  T *slot(int64_t slot) const { return pointwise_ ? nullptr : buffer_ + slot * size(); }

private:
  int64_t size() const { return shape_.patch() * shape_.outPlane(); }

  const ConvShape &shape_;
  bool pointwise_;
  T *buffer_ = nullptr;
};

/// parallelFor(n, grain, ...) for a body that returns a Status: body(chunk, begin, end) in at
/// most kConvColumnSlots chunks (the grain must make no more); the first chunk's error, if any.
template <typename Body> Status parallelForSlots(int64_t n, int64_t grain, Body &&body) {
  Status errors[kConvColumnSlots];
  parallelFor(n, grain, [&](int64_t chunk, int64_t begin, int64_t end) {
    errors[chunk] = body(chunk, begin, end);
  });
  for (const Status &e : errors)
    if (!e.ok())
      return e;
  return Status();
}

/// Runs body(slot, begin, end) -> Status over a convolution's units, its (image, group) pairs
/// in order (unit u: image u / group, group u % group). With at least as many units as
/// threads they split across threads (Parallel.h), whole units of about kMultiplyAddGrain a
/// chunk and at most unitSlots() chunks, chunk k using column slot k: each unit's im2col and
/// GEMM then run whole on one thread, the same bits as on one thread, and no core reads
/// columns another wrote. With fewer units, on this thread in slot 0, their GEMMs and im2col
/// splitting themselves. Returns the first error of a chunk.
template <typename Body> Status forEachConvUnit(const ConvShape &s, Body &&body) {
  const int64_t units = s.batch * s.group, slots = s.unitSlots();
  if (units < kernelThreads())
    return body(int64_t(0), int64_t(0), units);
  return parallelForSlots(
      units, std::max(grainFor(kMultiplyAddGrain, s.unitWork()), (units + slots - 1) / slots),
      body);
}

} // namespace plait::rt::cpu
