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

/// Geometry of one conv2d: x [N, C, H, W], w [F, C/group, kH, kW], y [N, F, OH, OW], and the
/// images whose columns one GEMM multiplies (`imageBlock`, the call's `image_block`).
struct ConvShape {
  int64_t batch, channels, height, width; // x
  int64_t filters, groupChannels;         // w: [filters, groupChannels, kernel...]
  int64_t group, outHeight, outWidth;
  Window2d window;
  int64_t imageBlock = 1; // 1 to batch (1 for an empty batch)
  /// By Winograd F(2x2, 3x3) (Winograd.h; conv2d_grad_weight by its transpose): the call's
  /// `winograd` on a 3x3 window of stride 1 and dilation 1 in one group (Workspace.cpp
  /// winogradConv).
  bool winograd = false;
  /// Computed directly, a group at a time (groupedConv2d and its adjoints): the call's
  /// `direct` on a grouped shape that takes it (Workspace.h groupedDirectShape).
  bool groupedDirect = false;

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
  /// Blocks of imageBlock images (the last may hold fewer); block b starts at image
  /// b * imageBlock and holds blockImages(b).
  int64_t blocks() const { return (batch + imageBlock - 1) / imageBlock; }
  int64_t blockImages(int64_t b) const { return std::min(imageBlock, batch - b * imageBlock); }
  /// Columns of a whole block's column matrix: its images' output pixels side by side.
  int64_t blockColumns() const { return imageBlock * outPlane(); }
  /// Multiply-adds of one (image block, group) unit's GEMM.
  int64_t unitWork() const { return filtersPerGroup() * patch() * blockColumns(); }
  /// Column matrices conv2d and conv2d_grad_input keep: one per chunk of their (image block,
  /// group) units (Workspace.h convColumnSlots, which the plan's workspace declares).
  int64_t unitSlots() const { return convColumnSlots(blocks() * group, unitWork()); }
  /// A depthwise convolution (MobileNet's, ConvNeXt's): one input channel and one filter per
  /// group. Computed directly, plane by plane (depthwiseConv2d and its adjoints): as GEMMs
  /// they would be one row each, an im2col and a BLAS call per (image, channel).
  bool depthwise() const { return groupChannels == 1 && filters == group; }
  /// A 1x1 unpadded stride-1 convolution: x itself is an image's column matrix.
  bool pointwise() const {
    const Window2d &w = window;
    return w.kernel[0] == 1 && w.kernel[1] == 1 && w.stride[0] == 1 && w.stride[1] == 1 &&
           w.padBegin[0] == 0 && w.padBegin[1] == 0 && w.padEnd[0] == 0 && w.padEnd[1] == 0;
  }
};

/// Reads the geometry of conv2d(x, w) -> y from the tensors and `attrs` (group, strides,
/// pads, dilations, image_block) and checks it: one dtype, 4-D x and w, a group that fits, an
/// image block of at least 1 (more than the batch is the batch), and y shaped as conv2d
/// produces it. `yName` names y in the error ("output", or "grad" in an adjoint).
Status planConvShape(std::string_view kernel, const Attrs &attrs, const TensorView &x,
                     const TensorView &w, const TensorView &y, std::string_view yName,
                     ConvShape &s);

/// Lays out the receptive fields of one group's input planes `x` as columns, a row of the
/// column matrix every `ld` elements (outPlane() for one image's; wider when images of a block
/// sit side by side, `col` then pointing at this image's first column):
/// col[(c * kH + i) * kW + j][oh * OW + ow] = x[c][oh*sH - pT + i*dH][ow*sW - pL + j*dW],
/// zero where that position falls in the padding. `col` holds patch() rows of outPlane().
/// Its channels split across threads (Parallel.h), each channel's rows on one thread.
template <typename T> void im2col(const T *x, const ConvShape &s, T *col, int64_t ld);

/// The adjoint of im2col (the same `ld`): zeroes the group's input planes `x`, then adds every
/// column entry back to the input position it was read from (padding entries are dropped).
/// Split across threads by channel: each plane's sums keep their one-thread order.
template <typename T> void col2im(const T *col, const ConvShape &s, int64_t ld, T *x);

/// Group g's planes of images [first, first + count) of an [N, F, OH, OW] tensor (y, dy) and
/// a block's [F/group, count * outPlane] matrix (its images' planes side by side), as
/// conv2d writes its product (scatterBlock) and its adjoints read dy (gatherBlock). Split
/// across threads by filter.
template <typename T>
void gatherBlock(const T *y, const ConvShape &s, int64_t first, int64_t count, int64_t g, T *block);
template <typename T>
void scatterBlock(const T *block, const ConvShape &s, int64_t first, int64_t count, int64_t g,
                  T *y);

/// A depthwise convolution (ConvShape::depthwise), without im2col or GEMM: blocks of
/// kDepthwiseChannelBlock channels of an image transposed into the workspace as
/// [pixel][channel] (Workspace.h depthwiseBlocks), so that the loops run over the channels,
/// each block on one thread (the same bits on any number of threads); every output sums its
/// taps in kernel order. conv2d: y = x * w (+ bias). Its adjoints: dx from dy and w, each
/// tap adding onto the inputs it read in kernel order, and dw (added to dw with
/// `accumulate`) from x and dy, each channel's taps summed row by row over the images in
/// order, in double.
template <typename T>
Status depthwiseConv2d(const T *x, const T *w, const T *bias, const ConvShape &s, T *y,
                       Scratch &scratch);
template <typename T>
Status depthwiseConv2dGradInput(const T *dy, const T *w, const ConvShape &s, T *dx,
                                Scratch &scratch);
template <typename T>
Status depthwiseConv2dGradWeight(const T *x, const T *dy, const ConvShape &s, T *dw,
                                 bool accumulate, Scratch &scratch);

/// A grouped convolution computed directly (ConvShape::groupedDirect; Workspace.h
/// groupedBlocks), its (image, group) units split across threads: conv2d adds, from its bias
/// (or 0), each valid tap's products over the group's channels in kernel order; conv2d_grad_input
/// adds, from 0, the taps that read each input in kernel order, each over the group's filters;
/// conv2d_grad_weight (added to dw with `accumulate`) sums each tap's products over the images
/// in order, an image's in the kernel's type and the images in double.
template <typename T>
Status groupedConv2d(const T *x, const T *w, const T *bias, const ConvShape &s, T *y,
                     Scratch &scratch);
template <typename T>
Status groupedConv2dGradInput(const T *dy, const T *w, const ConvShape &s, T *dx, Scratch &scratch);
template <typename T>
Status groupedConv2dGradWeight(const T *x, const T *dy, const ConvShape &s, T *dw, bool accumulate,
                               Scratch &scratch);

/// The column matrices of image blocks' groups, as conv2d and its adjoints multiply them:
/// patch() x (images x outPlane()), each image's columns side by side. One image of a
/// pointwise convolution is its planes themselves; otherwise im2col builds them in workspace
/// buffers, one per slot (a chunk of forEachConvUnit), each reused from unit to unit. With
/// more than one image a block, each slot also has a staging matrix of F/group x
/// blockColumns(): conv2d's product before scatterBlock, the adjoints' gathered dy.
template <typename T> class ColumnMatrix {
public:
  explicit ColumnMatrix(const ConvShape &s) : shape_(s) {}

  /// Takes `slots` im2col buffers (none when pointwise, one image a block) and staging
  /// matrices (with more than one) from `scratch`; call once, before of(), slot() or stage().
  Status allocate(Scratch &scratch, int64_t slots = 1) {
    if (!(shape_.pointwise() && shape_.imageBlock == 1))
      PLAIT_RETURN_IF_ERROR(scratch.take(size() * slots, buffer_));
    if (shape_.imageBlock > 1)
      PLAIT_RETURN_IF_ERROR(scratch.take(stageSize() * slots, stage_));
    return Status();
  }

  /// The columns of group g of images [first, first + count) of x, built in buffer `slot`
  /// (count * outPlane() columns; an image of a pointwise convolution: its planes in x);
  /// valid until that slot's next use.
  const T *of(const T *x, int64_t first, int64_t count, int64_t g, int64_t slot = 0) {
    if (shape_.pointwise() && count == 1)
      return x + shape_.inputOffset(first, g);
    T *cols = this->slot(slot);
    for (int64_t i = 0; i < count; ++i)
      im2col(x + shape_.inputOffset(first + i, g), shape_, cols + i * shape_.outPlane(),
             count * shape_.outPlane());
    return cols;
  }

  /// Group g's planes of images [first, first + count) of dy as the block's [F/group,
  /// count * outPlane()] matrix: dy itself for one image, else gathered (gatherBlock) into
  /// slot `slot`'s staging matrix, valid until that slot's next use.
  const T *gradOf(const T *dy, int64_t first, int64_t count, int64_t g, int64_t slot) {
    if (count == 1)
      return dy + shape_.outputOffset(first, g);
    gatherBlock(dy, shape_, first, count, g, stage(slot));
    return stage(slot);
  }

  /// Buffer `slot` itself (null when pointwise, one image a block), and its staging matrix
  /// (null with one image a block).
  T *slot(int64_t slot) const { return buffer_ ? buffer_ + slot * size() : nullptr; }
  T *stage(int64_t slot) const { return stage_ ? stage_ + slot * stageSize() : nullptr; }

private:
  int64_t size() const { return shape_.patch() * shape_.blockColumns(); }
  int64_t stageSize() const { return shape_.filtersPerGroup() * shape_.blockColumns(); }

  const ConvShape &shape_;
  T *buffer_ = nullptr, *stage_ = nullptr;
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

/// The parallelFor grain that cuts `units` of `unitWork` multiply-adds each into chunks of
/// about kMultiplyAddGrain, at most `slots` of them (a workspace slot each).
inline int64_t slotGrain(int64_t units, int64_t unitWork, int64_t slots) {
  return std::max(grainFor(kMultiplyAddGrain, unitWork), (units + slots - 1) / slots);
}

/// Runs body(slot, begin, end) -> Status over a convolution's units, its (image block, group)
/// pairs in order (unit u: block u / group, group u % group). With at least as many units as
/// threads they split across threads (Parallel.h), whole units of about kMultiplyAddGrain a
/// chunk and at most unitSlots() chunks, chunk k using column slot k: each unit's im2col and
/// GEMM then run whole on one thread, the same bits as on one thread, and no core reads
/// columns another wrote. With fewer units, on this thread in slot 0, their GEMMs and im2col
/// splitting themselves. Returns the first error of a chunk.
template <typename Body> Status forEachConvUnit(const ConvShape &s, Body &&body) {
  const int64_t units = s.blocks() * s.group, slots = s.unitSlots();
  if (units < kernelThreads())
    return body(int64_t(0), int64_t(0), units);
  return parallelForSlots(units, slotGrain(units, s.unitWork(), slots), body);
}

} // namespace plait::rt::cpu
