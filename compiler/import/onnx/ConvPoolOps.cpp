// Importers of ONNX's convolutions and windowed pooling: Conv, ConvTranspose, MaxPool (and its
// Indices output) and AveragePool, in 1-D (a unit height), 2-D (plait's conv2d, conv2d_grad_input
// and pools) and 3-D (the same 2-D ops over depth-stacked or reshaped views); MaxUnpool.
#include "compiler/import/onnx/Importer.h"

#include <limits>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// Window parameters of a Conv or pooling node, per spatial dimension. `pads` holds all begins,
/// then all ends (ONNX and plait agree on this order).
struct Window {
  llvm::SmallVector<int64_t> kernel, strides, dilations, pads;
};

/// Reads strides, dilations and pads (resolving auto_pad) for a window of `kernel` over the
/// spatial dimensions `spatial`.
std::optional<Window> readWindow(NodeContext &ctx, llvm::ArrayRef<int64_t> spatial,
                                 llvm::ArrayRef<int64_t> kernel, bool hasDilations) {
  size_t n = spatial.size();
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = ctx.hasAttr("strides") ? ctx.intsAttr("strides") : llvm::SmallVector<int64_t>(n, 1);
  w.dilations = hasDilations && ctx.hasAttr("dilations") ? ctx.intsAttr("dilations")
                                                         : llvm::SmallVector<int64_t>(n, 1);
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n) {
    (void)ctx.error("kernel_shape, strides and dilations need " + llvm::Twine(n) + " entries");
    return std::nullopt;
  }
  constexpr int64_t kMaxWindow = int64_t(1) << 31; // keeps the window arithmetic in range
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] > kMaxWindow ||
        w.strides[i] > kMaxWindow || w.dilations[i] > kMaxWindow) {
      (void)ctx.error("kernel_shape, strides and dilations must be in [1, 2^31]");
      return std::nullopt;
    }
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  w.pads.assign(2 * n, 0);
  if (autoPad == "NOTSET") {
    if (ctx.hasAttr("pads")) {
      w.pads = ctx.intsAttr("pads");
      if (w.pads.size() != 2 * n) {
        (void)ctx.error("pads needs " + llvm::Twine(2 * n) + " entries");
        return std::nullopt;
      }
      if (llvm::any_of(w.pads, [&](int64_t p) { return p < 0 || p > kMaxWindow; })) {
        (void)ctx.error("pads must be in [0, 2^31]");
        return std::nullopt;
      }
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + span - spatial[i]);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "VALID") {
    (void)ctx.unsupported("attribute auto_pad='" + autoPad + "'");
    return std::nullopt;
  }
  return w;
}

/// Lifts a 1-D window to plait's 2-D form (a height of 1).
Window liftTo2d(const Window &w) {
  return Window{{1, w.kernel[0]}, {1, w.strides[0]}, {1, w.dilations[0]}, {0, w.pads[0], 0, w.pads[1]}};
}

/// Shape with a unit dimension inserted before the last one ([N, C, W] -> [N, C, 1, W]).
llvm::SmallVector<int64_t> insertUnitHeight(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> out(shape);
  out.insert(out.end() - 1, 1);
  return out;
}

/// The (H, W) part of a 3-D window: what the 2-D op over each depth slice takes.
Window planeOf(const Window &w) {
  return Window{{w.kernel[1], w.kernel[2]},
                {w.strides[1], w.strides[2]},
                {w.dilations[1], w.dilations[2]},
                {w.pads[1], w.pads[2], w.pads[4], w.pads[5]}};
}

/// A 2-D window and group as plait.conv2d and conv2d_grad_input take them.
llvm::SmallVector<NamedAttribute> convAttrs(NodeContext &ctx, const Window &w, int64_t group) {
  return {ctx.arrayAttr("strides", w.strides), ctx.arrayAttr("pads", w.pads),
          ctx.arrayAttr("dilations", w.dilations), ctx.i64Attr("group", group)};
}

/// [N, C, D, H, W] <-> [N, D, C, H, W] (null stays null): the depth next to the batch.
Value swapChannelsAndDepth(NodeContext &ctx, Value v) {
  return v ? ctx.create<TransposeOp>({v}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})}) : v;
}

/// A 3-D weight [A, B, kD, kH, kW] as the 2-D [A, kD * B, kH, kW] whose input channels are
/// [tap, channel]: the weight of the conv2d over depth-stacked slices, and of its adjoint.
Value depthStackedWeight(NodeContext &ctx, Value w) {
  llvm::ArrayRef<int64_t> ws = shapeOf(w);
  Value moved = swapChannelsAndDepth(ctx, w);
  return moved ? ctx.reshape(moved, {ws[0], ws[2] * ws[1], ws[3], ws[4]}) : Value();
}

/// A 3-D convolution as one plait.conv2d over depth-stacked slices, so that it trains (and runs on
/// CUDA) as conv2d does. x [N, C, D, H, W], padded along depth, is viewed as [N, D', C, H, W];
/// the kD depth taps of every output depth are stacked into the channels as [group, kD, C/group]
/// ([N * Do, kD * C, H, W]) and the weight [M, C/group, kD, kH, kW] as [M, kD * C/group, kH, kW],
/// which makes each output channel's sum the 3-D window's. The conv2d's [N * Do, M, Ho, Wo] is
/// the output with its depth moved back. The stacked input is kD / stride_D times x's size.
Value conv3dAsConv2d(NodeContext &ctx, Value x, Value w, Value bias, const Window &win,
                     int64_t group) {
  llvm::ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w);
  const int64_t n = xs[0], c = xs[1], h = xs[3], wd = xs[4], m = ws[0], cg = ws[1], kd = ws[2];
  if (group < 1 || c % group != 0 || cg * group != c || m % group != 0) {
    (void)ctx.error("w's " + llvm::Twine(cg) + " input channels per group times group (" +
                    llvm::Twine(group) + ") must be x's " + llvm::Twine(c) +
                    ", and group divide w's " + llvm::Twine(m) + " output channels");
    return {};
  }
  const int64_t padded = xs[2] + win.pads[0] + win.pads[3];
  const int64_t span = win.dilations[0] * (kd - 1) + 1;
  if (padded < span) {
    (void)ctx.error("the kernel's depth span (" + llvm::Twine(span) +
                    ") exceeds the padded input's depth (" + llvm::Twine(padded) + ")");
    return {};
  }
  const int64_t depthOut = (padded - span) / win.strides[0] + 1;
  if (win.pads[0] || win.pads[3])
    x = ctx.create<PadOp>({x}, {ctx.arrayAttr("pads", {0, 0, win.pads[0], 0, 0, 0, 0,
                                                       win.pads[3], 0, 0})});
  Value moved = swapChannelsAndDepth(ctx, x);
  if (!moved)
    return {};
  llvm::SmallVector<Value> taps;
  for (int64_t k = 0; k < kd; ++k) {
    const int64_t start = k * win.dilations[0];
    Value tap = sliceAlong(ctx, moved, 1, start, start + (depthOut - 1) * win.strides[0] + 1,
                           win.strides[0]);
    tap = tap ? ctx.reshape(tap, {n, depthOut, 1, group, cg, h, wd}) : Value();
    if (!tap)
      return {};
    taps.push_back(tap);
  }
  Value stacked = taps.size() == 1 ? taps[0] : ctx.create<ConcatOp>(taps, {ctx.i64Attr("axis", 2)});
  if (stacked && group > 1 && kd > 1)
    stacked = ctx.create<TransposeOp>({stacked}, {ctx.arrayAttr("perm", {0, 1, 3, 2, 4, 5, 6})});
  stacked = stacked ? ctx.reshape(stacked, {n * depthOut, kd * c, h, wd}) : Value();
  Value w2 = stacked ? depthStackedWeight(ctx, w) : Value();
  if (!w2)
    return {};
  llvm::SmallVector<Value> operands{stacked, w2};
  if (bias)
    operands.push_back(bias);
  Value y = ctx.create<Conv2dOp>(operands, convAttrs(ctx, planeOf(win), group));
  if (!y)
    return {};
  llvm::ArrayRef<int64_t> ys = shapeOf(y);
  y = ctx.reshape(y, {n, depthOut, m, ys[2], ys[3]});
  return swapChannelsAndDepth(ctx, y);
}

/// The operands a Conv or ConvTranspose (`what`) reads: float x and w of one rank with 1 to
/// 3 spatial dimensions, and w's kernel, which kernel_shape (if given) must repeat. Sets
/// xType, wType and kernel, or fails with the node's error.
LogicalResult convOperands(NodeContext &ctx, const char *what, RankedTensorType &xType,
                           RankedTensorType &wType, llvm::SmallVector<int64_t> &kernel) {
  xType = ctx.inputType(0);
  wType = xType ? ctx.inputType(1) : RankedTensorType();
  if (!wType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    return ctx.error("x and w must have the same rank >= 3");
  int64_t spatialRank = xType.getRank() - 2;
  if (spatialRank > 3)
    return ctx.unsupported(llvm::Twine(spatialRank) + "-D " + what +
                           " (plait has 1-D, 2-D and 3-D)");
  kernel.assign(wType.getShape().begin() + 2, wType.getShape().end());
  if (ctx.hasAttr("kernel_shape") && ctx.intsAttr("kernel_shape") != kernel)
    return ctx.error("kernel_shape does not match the weight's shape");
  return success();
}

} // namespace

Value convolution(NodeContext &ctx, Value x, Value w, Value bias) {
  RankedTensorType xType = llvm::cast<RankedTensorType>(x.getType());
  RankedTensorType wType = llvm::cast<RankedTensorType>(w.getType());
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank()) {
    (void)ctx.error("x and w must have the same rank >= 3");
    return {};
  }
  int64_t spatialRank = xType.getRank() - 2;
  if (spatialRank > 3) {
    (void)ctx.unsupported(llvm::Twine(spatialRank) +
                          "-D convolution (plait has 1-D, 2-D and 3-D)");
    return {};
  }
  llvm::SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  if (ctx.hasAttr("kernel_shape") && ctx.intsAttr("kernel_shape") != kernel) {
    (void)ctx.error("kernel_shape does not match the weight's shape");
    return {};
  }
  auto window = readWindow(ctx, xType.getShape().drop_front(2), kernel, /*hasDilations=*/true);
  if (!window)
    return {};
  Window win = *window;
  if (spatialRank == 3)
    return conv3dAsConv2d(ctx, x, w, bias, win, ctx.intAttr("group", 1));
  if (spatialRank == 1) {
    win = liftTo2d(win);
    x = ctx.reshape(x, insertUnitHeight(xType.getShape()));
    w = x ? ctx.reshape(w, insertUnitHeight(wType.getShape())) : Value();
    if (!w)
      return {};
  }
  llvm::SmallVector<Value> operands{x, w};
  if (bias)
    operands.push_back(bias);
  Value y = ctx.create<Conv2dOp>(operands, convAttrs(ctx, win, ctx.intAttr("group", 1)));
  if (y && spatialRank == 1) {
    llvm::SmallVector<int64_t> shape(shapeOf(y));
    shape.erase(shape.end() - 2);
    y = ctx.reshape(y, shape);
  }
  return y;
}

namespace {

LogicalResult importConv(NodeContext &ctx) {
  RankedTensorType xType, wType;
  llvm::SmallVector<int64_t> kernel;
  if (failed(convOperands(ctx, "convolution", xType, wType, kernel)))
    return failure();
  Value x = ctx.input(0), w = ctx.input(1);
  if (!x || !w)
    return failure();
  Value bias;
  if (ctx.hasInput(2) && !(bias = ctx.input(2)))
    return failure();
  return ctx.setResult(convolution(ctx, x, w, bias));
}

/// ConvTranspose is the adjoint of the convolution with the same window and weight (the weight
/// [C, M/group, k...] is that convolution's [out, in/group, k...]), which is what
/// plait.conv2d_grad_input computes; its gradients are that convolution and conv2d_grad_weight,
/// so the transposed convolution trains as the convolution does. The output is
///   out = stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1 - pad_begin - pad_end,
/// or output_shape when given (SAME_UPPER/SAME_LOWER: in * stride), whose total padding ONNX
/// splits as the spec and the conformance data say: the smaller half first for SAME_UPPER, last
/// otherwise. A negative total (an output_shape beyond the last window) becomes output padding.
/// A 3-D transposed convolution as the adjoint of conv3dAsConv2d for the convolution whose weight
/// is w ([C, M/group, kD, kH, kW]): x's depth moves next to the batch ([N * Din, C, H, W]), and
/// plait.conv2d_grad_input with the depth-stacked weight [C, kD * M/group, kH, kW] gives each input
/// depth's contribution to every depth tap ([N * Din, kD * M, Ho, Wo], channels as [group, kD,
/// M/group]). Tap k of input depth j lands at padded depth j * stride + k * dilation: the taps are
/// spread by the stride (zeros between), shifted by k * dilation and summed, and the padded depth
/// is cropped to `out[0]`. No work is spent on the zeros a strided input would be dilated with.
Value convTranspose3d(NodeContext &ctx, Value x, Value w, const Window &win,
                      llvm::ArrayRef<int64_t> out, int64_t group) {
  llvm::ArrayRef<int64_t> xs = shapeOf(x), ws = shapeOf(w);
  const int64_t n = xs[0], c = xs[1], din = xs[2], mg = ws[1], kd = ws[2], m = mg * group;
  const int64_t stride = win.strides[0], dilation = win.dilations[0];
  const int64_t spread = (din - 1) * stride + 1;
  const int64_t full = out[0] + win.pads[0] + win.pads[3]; // >= spread + (kd - 1) * dilation
  Value z = swapChannelsAndDepth(ctx, x);
  z = z ? ctx.reshape(z, {n * din, c, xs[3], xs[4]}) : Value();
  Value w2 = z ? depthStackedWeight(ctx, w) : Value();
  if (!w2)
    return {};
  Value u = ctx.create<Conv2dGradInputOp>(
      {z, w2}, convAttrs(ctx, planeOf(win), group),
      RankedTensorType::get({n * din, kd * m, out[1], out[2]}, elementTypeOf(x)));
  const int64_t plane = out[1] * out[2];
  u = u ? ctx.reshape(u, {n, din, group, kd, mg * plane}) : Value();
  if (u && group > 1 && kd > 1)
    u = ctx.create<TransposeOp>({u}, {ctx.arrayAttr("perm", {0, 1, 3, 2, 4})});
  if (u && stride > 1) {
    u = ctx.reshape(u, {n, din, 1, kd * m * plane});
    u = u ? ctx.create<PadOp>({u}, {ctx.arrayAttr("pads", {0, 0, 0, 0, 0, 0, stride - 1, 0})})
          : Value();
    u = u ? ctx.reshape(u, {n, din * stride, kd, m * plane}) : Value();
    u = u ? sliceAlong(ctx, u, 1, 0, spread, 1) : Value();
  }
  u = u ? ctx.reshape(u, {n, spread, kd, m * plane}) : Value();
  Value sum;
  for (int64_t k = 0; u && k < kd; ++k) {
    Value tap = kd == 1 ? u : sliceAlong(ctx, u, 2, k, k + 1, 1);
    tap = tap ? ctx.reshape(tap, {n, spread, m * plane}) : Value();
    const int64_t before = k * dilation, after = full - before - spread;
    if (tap && (before || after))
      tap = ctx.create<PadOp>({tap}, {ctx.arrayAttr("pads", {0, before, 0, 0, after, 0})});
    if (!tap)
      return {};
    sum = sum ? ctx.create<AddOp>({sum, tap}) : tap;
    if (!sum)
      return {};
  }
  if (sum && (win.pads[0] || win.pads[3]))
    sum = sliceAlong(ctx, sum, 1, win.pads[0], win.pads[0] + out[0], 1);
  sum = sum ? ctx.reshape(sum, {n, out[0], m, out[1], out[2]}) : Value();
  return swapChannelsAndDepth(ctx, sum);
}

LogicalResult importConvTranspose(NodeContext &ctx) {
  RankedTensorType xType, wType;
  llvm::SmallVector<int64_t> kernel;
  if (failed(convOperands(ctx, "transposed convolution", xType, wType, kernel)))
    return failure();
  const int64_t spatialRank = xType.getRank() - 2;
  const size_t n = size_t(spatialRank);
  const int64_t group = ctx.intAttr("group", 1);
  const int64_t channels = xType.getDimSize(1);
  if (group < 1 || channels % group != 0 || wType.getDimSize(0) != channels)
    return ctx.error("w must have x's " + llvm::Twine(channels) +
                     " channels first, and group (" + llvm::Twine(group) + ") divide them");
  // Strides, dilations and kernel as Conv takes them; pads and auto_pad are ConvTranspose's own.
  auto window = readWindow(ctx, xType.getShape().drop_front(2), kernel, /*hasDilations=*/true);
  if (!window)
    return failure();
  Window win = *window;
  llvm::SmallVector<int64_t> outputPadding =
      ctx.hasAttr("output_padding") ? ctx.intsAttr("output_padding")
                                    : llvm::SmallVector<int64_t>(n, 0);
  if (outputPadding.size() != n)
    return ctx.error("output_padding needs " + llvm::Twine(n) + " entries");
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  const bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  llvm::SmallVector<int64_t> outShape;
  if (ctx.hasAttr("output_shape")) {
    outShape = ctx.intsAttr("output_shape");
    if (outShape.size() == n + 2) // the whole shape, as some exporters write it
      outShape.erase(outShape.begin(), outShape.begin() + 2);
    if (outShape.size() != n)
      return ctx.error("output_shape needs " + llvm::Twine(n) + " entries");
  }
  llvm::SmallVector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = xType.getDimSize(int64_t(i) + 2), stride = win.strides[i];
    if (outputPadding[i] < 0 || outputPadding[i] >= stride)
      return ctx.unsupported("output_padding " + llvm::Twine(outputPadding[i]) +
                             " (plait takes 0 to stride - 1 = " + llvm::Twine(stride - 1) + ")");
    // The window's span and the output stay far from int64's range (readWindow bounds the
    // window to 2^31, output_shape is bounded here), but the input's extent need not.
    int64_t natural = 0, spread = 0, sameOut = 0;
    if (__builtin_mul_overflow(stride, in - 1, &spread) ||
        __builtin_add_overflow(spread, (kernel[i] - 1) * win.dilations[i] + 1, &natural) ||
        __builtin_mul_overflow(in, stride, &sameOut) || natural > (int64_t(1) << 62))
      return ctx.error("the output's axis " + llvm::Twine(i + 2) + " would be too large");
    if (!outShape.empty() || same) {
      out[i] = outShape.empty() ? sameOut : outShape[i];
      if (out[i] < 1 || out[i] > (int64_t(1) << 62))
        return ctx.error("output_shape " + llvm::Twine(out[i]) + " on axis " +
                         llvm::Twine(i + 2) + " is not a size");
      const int64_t total = natural + outputPadding[i] - out[i];
      const int64_t small = total / 2, large = total - small;
      win.pads[i] = total < 0 ? 0 : autoPad == "SAME_UPPER" ? small : large;
      win.pads[i + n] = total < 0 ? 0 : autoPad == "SAME_UPPER" ? large : small;
      if (total < 0 && out[i] - natural >= stride)
        return ctx.unsupported("output_shape " + llvm::Twine(out[i]) + " on axis " +
                               llvm::Twine(i + 2) + ": more than stride - 1 beyond the last "
                               "window's end (" + llvm::Twine(natural) + ")");
    } else {
      out[i] = natural + outputPadding[i] - win.pads[i] - win.pads[i + n];
    }
    if (out[i] < 1)
      return ctx.error("the output's axis " + llvm::Twine(i + 2) + " would have " +
                       llvm::Twine(out[i]) + " elements (pads larger than the window's span)");
  }
  Value x = ctx.input(0), w = x ? ctx.input(1) : Value();
  if (!w)
    return failure();
  Value bias;
  if (ctx.hasInput(2) && !(bias = ctx.input(2)))
    return failure();
  llvm::SmallVector<int64_t> yShape{xType.getDimSize(0), wType.getDimSize(1) * group};
  yShape.append(out.begin(), out.end());
  if (spatialRank == 3) {
    Value y = convTranspose3d(ctx, x, w, win, out, group);
    if (y && bias) {
      Value b = ctx.reshape(bias, {yShape[1], 1, 1, 1});
      y = b ? ctx.create<AddOp>({y, b}) : Value();
    }
    return ctx.setResult(y);
  }
  if (spatialRank == 1) {
    win = liftTo2d(win);
    yShape = insertUnitHeight(yShape);
    x = ctx.reshape(x, insertUnitHeight(xType.getShape()));
    w = x ? ctx.reshape(w, insertUnitHeight(wType.getShape())) : Value();
    if (!w)
      return failure();
  }
  Value y = ctx.create<Conv2dGradInputOp>(
      {x, w}, convAttrs(ctx, win, group), RankedTensorType::get(yShape, xType.getElementType()));
  if (y && bias) {
    Value b = ctx.reshape(bias, {yShape[1], 1, 1});
    y = b ? ctx.create<AddOp>({y, b}) : Value();
  }
  if (y && spatialRank == 1) {
    llvm::SmallVector<int64_t> shape(shapeOf(y));
    shape.erase(shape.end() - 2);
    y = ctx.reshape(y, shape);
  }
  return ctx.setResult(y);
}

/// One plait 2-D pooling of `x` [N, C, H, W] over `win` (2-D).
template <bool IsMax>
Value pool2d(NodeContext &ctx, Value x, const Window &win, bool ceilMode, bool countIncludePad) {
  llvm::SmallVector<NamedAttribute> attrs{
      ctx.arrayAttr("kernel", win.kernel), ctx.arrayAttr("strides", win.strides),
      ctx.arrayAttr("pads", win.pads), ctx.boolAttr("ceil_mode", ceilMode)};
  if (IsMax) {
    attrs.push_back(ctx.arrayAttr("dilations", win.dilations));
    return ctx.create<MaxPool2dOp>({x}, attrs);
  }
  attrs.push_back(ctx.boolAttr("count_include_pad", countIncludePad));
  return ctx.create<AvgPool2dOp>({x}, attrs);
}

/// A 3-D pooling as two 2-D ones: over (H, W) of every depth slice ([N, C * D, H, W]), then over
/// depth ([N, C, D, Ho * Wo] with a (kD, 1) window). Exact: a box window's max, and its mean over
/// the positions it counts (a box too, with or without the padding, clipped per axis in ceil
/// mode), separate by axis; the max's gradient goes to the first maximum in (d, h, w) order, as
/// a 3-D pooling's does.
template <bool IsMax>
Value pool3dAsPool2d(NodeContext &ctx, Value x, const Window &win, bool ceilMode,
                     bool countIncludePad) {
  llvm::ArrayRef<int64_t> xs = shapeOf(x);
  const int64_t n = xs[0], c = xs[1], d = xs[2];
  const Window plane = planeOf(win);
  Window depth{{win.kernel[0], 1}, {win.strides[0], 1}, {win.dilations[0], 1},
               {win.pads[0], 0, win.pads[3], 0}};
  Value flat = ctx.reshape(x, {n, c * d, xs[3], xs[4]});
  Value y = flat ? pool2d<IsMax>(ctx, flat, plane, ceilMode, countIncludePad) : Value();
  if (!y)
    return {};
  const int64_t ho = shapeOf(y)[2], wo = shapeOf(y)[3];
  y = ctx.reshape(y, {n, c, d, ho * wo});
  y = y ? pool2d<IsMax>(ctx, y, depth, ceilMode, countIncludePad) : Value();
  return y ? ctx.reshape(y, {n, c, shapeOf(y)[2], ho, wo}) : Value();
}

/// The most window taps (output elements times kernel elements) MaxPool's Indices output
/// builds its position tables for: two i64 constants of this many elements.
constexpr int64_t kMaxIndexTaps = int64_t(1) << 26;

/// MaxPool's Indices output ([N, C, *O], i64): for each output element, the flat index over
/// x's [N, C, *S] of its window's first largest element, the spatial part row-major, or
/// column-major with storage_order=1, as ONNX defines it. Made of ops both backends have: x
/// as rows [N * C, P] with a -inf column appended for the padding, a gather of every window's
/// taps at positions tabulated here, an argmax over the taps (the first of equal values, as
/// PyTorch's pooling takes), a gather of the winning tap's position, and each row's offset.
/// The indices carry no gradient; the pooled values keep their own kernel.
Value maxPoolIndices(NodeContext &ctx, Value x, const Window &w, llvm::ArrayRef<int64_t> out,
                     bool columnMajor) {
  llvm::ArrayRef<int64_t> xs = shapeOf(x);
  const size_t rank = xs.size() - 2;
  llvm::ArrayRef<int64_t> spatial = xs.drop_front(2);
  const int64_t rows = xs[0] * xs[1];
  int64_t plane = 1, outputs = 1, taps = 1;
  for (size_t j = 0; j < rank; ++j) {
    plane *= spatial[j];
    outputs *= out[j];
    taps *= w.kernel[j];
  }
  if (outputs * taps > kMaxIndexTaps) {
    (void)ctx.unsupported("Indices output of a pool of " + llvm::Twine(outputs) + " outputs with " +
                          llvm::Twine(taps) + "-element windows (plait " +
                          "tabulates at most 2^26 taps)");
    return {};
  }
  // Each tap's element in x's row (plane: the appended -inf, for padding) and the index the
  // output reports for it.
  std::vector<int64_t> element(size_t(outputs * taps)), reported(size_t(outputs * taps));
  llvm::SmallVector<int64_t> o(rank), k(rank), p(rank);
  for (int64_t q = 0; q < outputs; ++q) {
    for (int64_t rest = q, j = int64_t(rank) - 1; j >= 0; --j) {
      o[j] = rest % out[j];
      rest /= out[j];
    }
    for (int64_t t = 0; t < taps; ++t) {
      for (int64_t rest = t, j = int64_t(rank) - 1; j >= 0; --j) {
        k[j] = rest % w.kernel[j];
        rest /= w.kernel[j];
      }
      bool inside = true;
      int64_t rowMajor = 0, colMajor = 0;
      for (size_t j = 0; j < rank; ++j) {
        p[j] = o[j] * w.strides[j] - w.pads[j] + k[j] * w.dilations[j];
        inside &= p[j] >= 0 && p[j] < spatial[j];
        rowMajor = rowMajor * spatial[j] + p[j];
      }
      for (int64_t j = int64_t(rank) - 1; j >= 0; --j)
        colMajor = colMajor * spatial[j] + p[j];
      element[size_t(q * taps + t)] = inside ? rowMajor : plane;
      reported[size_t(q * taps + t)] = inside ? (columnMajor ? colMajor : rowMajor) : 0;
    }
  }
  Type f = elementTypeOf(x);
  Value flat = ctx.reshape(x, {rows, plane});
  Value padding = ctx.constant(
      HostTensor::splat(*kindOf(f), {rows, 1}, -std::numeric_limits<double>::infinity()));
  Value padded = flat ? ctx.create<ConcatOp>({flat, padding}, {ctx.i64Attr("axis", 1)}) : flat;
  Value tapTable = ctx.constant(HostTensor::fromInts(ElemKind::I64, {outputs * taps}, element));
  Value windows =
      padded ? ctx.create<GatherOp>({padded, tapTable}, {ctx.i64Attr("axis", 1)}) : Value();
  windows = windows ? ctx.reshape(windows, {rows, outputs, taps}) : Value();
  Value winner = windows ? ctx.create<ArgMaxOp>(
                               {windows}, {ctx.i64Attr("axis", 2), ctx.boolAttr("keepdims", false)})
                         : Value();
  std::vector<int64_t> firstTap(static_cast<size_t>(outputs)), rowOffset(static_cast<size_t>(rows));
  for (int64_t q = 0; q < outputs; ++q)
    firstTap[size_t(q)] = q * taps;
  for (int64_t r = 0; r < rows; ++r)
    rowOffset[size_t(r)] = r * plane;
  Value tap =
      winner ? ctx.create<AddOp>(
                   {winner, ctx.constant(HostTensor::fromInts(ElemKind::I64, {outputs}, firstTap))})
             : Value();
  Value position =
      tap ? ctx.create<GatherOp>(
                {ctx.constant(HostTensor::fromInts(ElemKind::I64, {outputs * taps}, reported)),
                 tap},
                {ctx.i64Attr("axis", 0)})
          : Value();
  Value index = position ? ctx.create<AddOp>({position, ctx.constant(HostTensor::fromInts(
                                                            ElemKind::I64, {rows, 1}, rowOffset))})
                         : Value();
  llvm::SmallVector<int64_t> shape(xs.take_front(2));
  llvm::append_range(shape, out);
  return index ? ctx.reshape(index, shape) : Value();
}

template <bool IsMax>
LogicalResult importPool(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  // MaxPool of integers (a quantized model's uint8 activations): the max of the values cast to
  // a float type that holds every one exactly (f32 up to 16 bits, f64 for 32), cast back.
  Type element = xType.getElementType(), exact;
  if (IsMax && element.isInteger() && !element.isInteger(1) &&
      element.getIntOrFloatBitWidth() <= 32)
    exact = element.getIntOrFloatBitWidth() <= 16 ? Type(Float32Type::get(ctx.context()))
                                                   : Type(Float64Type::get(ctx.context()));
  if (!exact && failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  int64_t spatialRank = xType.getRank() - 2;
  if (spatialRank > 3)
    return ctx.unsupported(llvm::Twine(spatialRank) + "-D pooling (plait has 1-D, 2-D and 3-D)");
  if (!ctx.hasAttr("kernel_shape"))
    return ctx.error("missing attribute kernel_shape");
  auto window = readWindow(ctx, xType.getShape().drop_front(2), ctx.intsAttr("kernel_shape"),
                           /*hasDilations=*/IsMax || ctx.opset() >= 19);
  if (!window)
    return failure();
  Value x = ctx.input(0);
  if (x && exact)
    x = ctx.cast(x, exact);
  if (!x)
    return failure();
  Window win = *window;
  const Value pooled = x; // x before the 1-D form's reshape, for the Indices output
  bool ceilMode = ctx.intAttr("ceil_mode", 0) != 0;
  bool countIncludePad = !IsMax && ctx.intAttr("count_include_pad", 0) != 0;
  Value y;
  if (spatialRank == 3) {
    y = pool3dAsPool2d<IsMax>(ctx, x, win, ceilMode, countIncludePad);
  } else {
    if (spatialRank == 1) {
      win = liftTo2d(win);
      x = ctx.reshape(x, insertUnitHeight(shapeOf(x)));
      if (!x)
        return failure();
    }
    y = pool2d<IsMax>(ctx, x, win, ceilMode, countIncludePad);
    if (y && spatialRank == 1) {
      llvm::SmallVector<int64_t> shape(shapeOf(y));
      shape.erase(shape.end() - 2);
      y = ctx.reshape(y, shape);
    }
  }
  if (IsMax && y && ctx.hasOutput(1)) {
    Value indices = maxPoolIndices(ctx, pooled, *window, shapeOf(y).drop_front(2),
                                   ctx.intAttr("storage_order", 0) != 0);
    if (!indices)
      return failure();
    ctx.setOutput(1, indices);
  }
  return ctx.setResult(y && exact ? ctx.cast(y, element) : y);
}

/// MaxUnpool: X's values written at their Indices (flat over the output [N, C, *S], as
/// MaxPool's Indices output gives them) into zeros, through plait.gather_grad (a scatter-add),
/// whose gradient is the gather of the output's gradient at the indices. The output's spatial
/// size is (O - 1) * stride - pads + kernel, or the `output_shape` input's. An index out of
/// the output writes nothing; one written twice (overlapping windows) gets the sum, where
/// ONNX and PyTorch leave the outcome undefined.
LogicalResult importMaxUnpool(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  RankedTensorType iType = xType ? ctx.inputType(1) : RankedTensorType();
  if (!iType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  if (iType.getShape() != xType.getShape() || !iType.getElementType().isInteger(64))
    return ctx.error("I must be i64 of X's shape");
  const size_t rank = size_t(xType.getRank() - 2);
  llvm::SmallVector<int64_t> kernel = ctx.intsAttr("kernel_shape");
  if (kernel.size() != rank)
    return ctx.error("kernel_shape must have " + llvm::Twine(rank) + " entries");
  llvm::SmallVector<int64_t> strides = ctx.intsAttr("strides"), pads = ctx.intsAttr("pads");
  if (strides.empty())
    strides.assign(rank, 1);
  if (pads.empty())
    pads.assign(2 * rank, 0);
  if (strides.size() != rank || pads.size() != 2 * rank)
    return ctx.error("strides and pads must have one and two entries per spatial axis");
  llvm::SmallVector<int64_t> shape(xType.getShape().take_front(2));
  if (ctx.hasInput(2)) {
    auto given = ctx.requireIntsInput(2, "output_shape");
    if (!given)
      return failure();
    if (given->size() != size_t(xType.getRank()) || (*given)[0] != shape[0] ||
        (*given)[1] != shape[1])
      return ctx.error("output_shape must be [N, C, ...] of X's N and C and rank");
    shape.assign(given->begin(), given->end());
  } else {
    for (size_t j = 0; j < rank; ++j)
      shape.push_back((xType.getDimSize(int64_t(j) + 2) - 1) * strides[j] -
                      (pads[j] + pads[j + rank]) + kernel[j]);
  }
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 1)
      return ctx.error("the output's shape has an empty or negative dimension");
    total *= d;
  }
  Value x = ctx.input(0), i = x ? ctx.input(1) : Value();
  if (!i)
    return failure();
  Type i64 = IntegerType::get(ctx.context(), 64);
  const int64_t n = xType.getNumElements();
  Value row = ctx.reshape(i, {n});
  Value below = row ? ctx.create<LessOp>({row, ctx.scalar(0, i64)}) : Value();
  Value above = below ? ctx.create<GreaterEqualOp>({row, ctx.scalar(double(total), i64)}) : Value();
  Value outside = above ? ctx.create<OrOp>({below, above}) : Value();
  row = outside ? ctx.create<WhereOp>({outside, ctx.scalar(double(total), i64), row}) : Value();
  Value values = row ? ctx.reshape(x, {n, 1}) : Value();
  Value table =
      values ? ctx.create<GatherGradOp>({values, row}, {ctx.i64Attr("axis", 0)},
                                        RankedTensorType::get({total, 1}, xType.getElementType()))
             : Value();
  return ctx.setResult(table ? ctx.reshape(table, shape) : Value());
}

} // namespace

void registerConvPoolOps(OpImporterMap &map) {
  map["Conv"] = importConv;
  map["ConvTranspose"] = importConvTranspose;
  map["MaxPool"] = importPool<true>;
  map["AveragePool"] = importPool<false>;
  map["MaxUnpool"] = importMaxUnpool;
}

} // namespace plait::onnx_import
