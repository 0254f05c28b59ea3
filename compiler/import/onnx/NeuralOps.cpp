// Importers of ONNX's neural-network ops: MatMul, Gemm, convolution and pooling, normalisations,
// softmax, reductions, ArgMax/ArgMin and the losses.
#include "compiler/import/onnx/Importer.h"
#include "ir/ShapeRules.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult importMatMul(NodeContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  return ctx.setResult(ctx.create<MatmulOp>({a, b}));
}

LogicalResult importGemm(NodeContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  llvm::SmallVector<Value> operands{a, b};
  if (ctx.hasInput(2)) {
    Value c = ctx.input(2);
    if (!c)
      return failure();
    operands.push_back(c);
  }
  return ctx.setResult(ctx.create<GemmOp>(
                            operands, {ctx.boolAttr("trans_a", ctx.intAttr("transA", 0) != 0),
                                       ctx.boolAttr("trans_b", ctx.intAttr("transB", 0) != 0),
                                       ctx.f64Attr("alpha", ctx.floatAttr("alpha", 1.0)),
                                       ctx.f64Attr("beta", ctx.floatAttr("beta", 1.0))}));
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

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
  Value moved = x ? ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})})
                  : Value();
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
  Value w2 = stacked ? ctx.create<TransposeOp>({w}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})})
                     : Value();
  w2 = w2 ? ctx.reshape(w2, {m, kd * cg, ws[3], ws[4]}) : Value();
  if (!w2)
    return {};
  llvm::SmallVector<Value> operands{stacked, w2};
  if (bias)
    operands.push_back(bias);
  Value y = ctx.create<Conv2dOp>(
      operands, {ctx.arrayAttr("strides", {win.strides[1], win.strides[2]}),
                 ctx.arrayAttr("pads", {win.pads[1], win.pads[2], win.pads[4], win.pads[5]}),
                 ctx.arrayAttr("dilations", {win.dilations[1], win.dilations[2]}),
                 ctx.i64Attr("group", group)});
  if (!y)
    return {};
  llvm::ArrayRef<int64_t> ys = shapeOf(y);
  y = ctx.reshape(y, {n, depthOut, m, ys[2], ys[3]});
  return y ? ctx.create<TransposeOp>({y}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})}) : Value();
}

LogicalResult importConv(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0), wType = xType ? ctx.inputType(1) : RankedTensorType();
  if (!wType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    return ctx.error("x and w must have the same rank >= 3");
  int64_t spatialRank = xType.getRank() - 2;
  if (spatialRank > 3)
    return ctx.unsupported(llvm::Twine(spatialRank) +
                           "-D convolution (plait has 1-D, 2-D and 3-D)");
  llvm::SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  if (ctx.hasAttr("kernel_shape") && ctx.intsAttr("kernel_shape") != kernel)
    return ctx.error("kernel_shape does not match the weight's shape");
  auto window = readWindow(ctx, xType.getShape().drop_front(2), kernel, /*hasDilations=*/true);
  if (!window)
    return failure();
  Value x = ctx.input(0), w = ctx.input(1);
  if (!x || !w)
    return failure();
  Value bias;
  if (ctx.hasInput(2) && !(bias = ctx.input(2)))
    return failure();
  Window win = *window;
  if (spatialRank == 3)
    return ctx.setResult(conv3dAsConv2d(ctx, x, w, bias, win, ctx.intAttr("group", 1)));
  if (spatialRank == 1) {
    win = liftTo2d(win);
    x = ctx.reshape(x, insertUnitHeight(xType.getShape()));
    w = x ? ctx.reshape(w, insertUnitHeight(wType.getShape())) : Value();
    if (!w)
      return failure();
  }
  llvm::SmallVector<Value> operands{x, w};
  if (bias)
    operands.push_back(bias);
  Value y = ctx.create<Conv2dOp>(operands, {ctx.arrayAttr("strides", win.strides),
                                            ctx.arrayAttr("pads", win.pads),
                                            ctx.arrayAttr("dilations", win.dilations),
                                            ctx.i64Attr("group", ctx.intAttr("group", 1))});
  if (y && spatialRank == 1) {
    llvm::SmallVector<int64_t> shape(shapeOf(y));
    shape.erase(shape.end() - 2);
    y = ctx.reshape(y, shape);
  }
  return ctx.setResult(y);
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
  Value z = ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})});
  z = z ? ctx.reshape(z, {n * din, c, xs[3], xs[4]}) : Value();
  Value w2 = z ? ctx.create<TransposeOp>({w}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})}) : Value();
  w2 = w2 ? ctx.reshape(w2, {c, kd * mg, ws[3], ws[4]}) : Value();
  if (!w2)
    return {};
  Value u = ctx.create<Conv2dGradInputOp>(
      {z, w2},
      {ctx.arrayAttr("strides", {win.strides[1], win.strides[2]}),
       ctx.arrayAttr("pads", {win.pads[1], win.pads[2], win.pads[4], win.pads[5]}),
       ctx.arrayAttr("dilations", {win.dilations[1], win.dilations[2]}),
       ctx.i64Attr("group", group)},
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
  return sum ? ctx.create<TransposeOp>({sum}, {ctx.arrayAttr("perm", {0, 2, 1, 3, 4})}) : Value();
}

LogicalResult importConvTranspose(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0), wType = xType ? ctx.inputType(1) : RankedTensorType();
  if (!wType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3 || wType.getRank() != xType.getRank())
    return ctx.error("x and w must have the same rank >= 3");
  const int64_t spatialRank = xType.getRank() - 2;
  if (spatialRank > 3)
    return ctx.unsupported(llvm::Twine(spatialRank) +
                           "-D transposed convolution (plait has 1-D, 2-D and 3-D)");
  const size_t n = size_t(spatialRank);
  llvm::SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  if (ctx.hasAttr("kernel_shape") && ctx.intsAttr("kernel_shape") != kernel)
    return ctx.error("kernel_shape does not match the weight's shape");
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
      {x, w},
      {ctx.arrayAttr("strides", win.strides), ctx.arrayAttr("pads", win.pads),
       ctx.arrayAttr("dilations", win.dilations), ctx.i64Attr("group", group)},
      RankedTensorType::get(yShape, xType.getElementType()));
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
  Window plane{{win.kernel[1], win.kernel[2]},
               {win.strides[1], win.strides[2]},
               {win.dilations[1], win.dilations[2]},
               {win.pads[1], win.pads[2], win.pads[4], win.pads[5]}};
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

template <bool IsMax>
LogicalResult importPool(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  int64_t spatialRank = xType.getRank() - 2;
  if (spatialRank > 3)
    return ctx.unsupported(llvm::Twine(spatialRank) + "-D pooling (plait has 1-D, 2-D and 3-D)");
  if (!ctx.hasAttr("kernel_shape"))
    return ctx.error("missing attribute kernel_shape");
  if (IsMax && ctx.intAttr("storage_order", 0) != 0 && ctx.hasOutput(1))
    return ctx.unsupported("attribute storage_order=1");
  if (IsMax && spatialRank == 3 && ctx.hasOutput(1))
    return ctx.unsupported("Indices output of a 3-D MaxPool");
  auto window = readWindow(ctx, xType.getShape().drop_front(2), ctx.intsAttr("kernel_shape"),
                           /*hasDilations=*/IsMax || ctx.opset() >= 19);
  if (!window)
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Window win = *window;
  bool ceilMode = ctx.intAttr("ceil_mode", 0) != 0;
  bool countIncludePad = !IsMax && ctx.intAttr("count_include_pad", 0) != 0;
  if (spatialRank == 3)
    return ctx.setResult(pool3dAsPool2d<IsMax>(ctx, x, win, ceilMode, countIncludePad));
  if (spatialRank == 1) {
    win = liftTo2d(win);
    x = ctx.reshape(x, insertUnitHeight(xType.getShape()));
    if (!x)
      return failure();
  }
  Value y = pool2d<IsMax>(ctx, x, win, ceilMode, countIncludePad);
  if (y && spatialRank == 1) {
    llvm::SmallVector<int64_t> shape(shapeOf(y));
    shape.erase(shape.end() - 2);
    y = ctx.reshape(y, shape);
  }
  return ctx.setResult(y);
}

llvm::SmallVector<int64_t> spatialAxes(int64_t rank) {
  llvm::SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  return axes;
}

template <typename ReduceOpT>
LogicalResult importGlobalPool(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<ReduceOpT>({x}, {ctx.arrayAttr("axes", spatialAxes(xType.getRank())),
                                                        ctx.boolAttr("keepdims", true)})
                          : Value());
}

//===----------------------------------------------------------------------===//
// Normalisations
//===----------------------------------------------------------------------===//

/// [C] -> [C, 1, ..., 1] so a per-channel vector broadcasts against [N, C, ...].
Value perChannel(NodeContext &ctx, Value v, int64_t rank) {
  llvm::SmallVector<int64_t> shape(shapeOf(v));
  shape.append(rank - 2, 1);
  return ctx.reshape(v, shape);
}

/// mean and (biased) variance of `x` over `axes`, kept as size-1 dimensions; returns x - mean and
/// the variance.
std::optional<std::pair<Value, Value>> centredAndVariance(NodeContext &ctx, Value x,
                                                          llvm::ArrayRef<int64_t> axes);

/// Training-mode BatchNormalization: normalises with the batch's statistics, and computes the
/// running statistics (outputs 1 and 2) as input * momentum + batch * (1 - momentum).
LogicalResult importBatchNormTraining(NodeContext &ctx, RankedTensorType xType) {
  int64_t rank = xType.getRank(), channels = xType.getDimSize(1);
  double eps = ctx.floatAttr("epsilon", 1e-5), momentum = ctx.floatAttr("momentum", 0.9);
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (!x || !scale || !bias)
    return failure();
  llvm::SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  auto stats = centredAndVariance(ctx, x, axes);
  if (!stats)
    return failure();
  Type t = xType.getElementType();
  Value ve = ctx.create<AddOp>({stats->second, ctx.scalar(eps, t)});
  Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
  Value n = inv ? ctx.create<MulOp>({stats->first, inv}) : Value();
  Value sc = n ? perChannel(ctx, scale, rank) : Value();
  Value bc = sc ? perChannel(ctx, bias, rank) : Value();
  Value y = bc ? ctx.create<MulOp>({n, sc}) : Value();
  y = y ? ctx.create<AddOp>({y, bc}) : Value();
  if (!y)
    return failure();
  ctx.setOutput(0, y);
  for (unsigned out : {1u, 2u}) {
    if (!ctx.hasOutput(out))
      continue;
    Value running = ctx.constantInput(out + 2); // input_mean, input_var
    Value batch;
    if (out == 1) {
      batch = ctx.create<ReduceMeanOp>({x}, {ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", false)});
    } else {
      batch = ctx.reshape(stats->second, {channels});
    }
    Value kept = running ? ctx.create<MulOp>({running, ctx.scalar(momentum, t)}) : Value();
    Value fresh = batch && kept ? ctx.create<MulOp>({batch, ctx.scalar(1.0 - momentum, t)}) : Value();
    Value updated = fresh ? ctx.create<AddOp>({kept, fresh}) : Value();
    if (!updated)
      return failure();
    ctx.setOutput(out, updated);
  }
  return success();
}

LogicalResult importBatchNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  if (ctx.intAttr("training_mode", 0) != 0)
    return importBatchNormTraining(ctx, xType);
  double eps = ctx.floatAttr("epsilon", 1e-5);
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  // Running statistics are not trained: initializers become constants, not params.
  Value mean = ctx.constantInput(3), var = ctx.constantInput(4);
  if (!x || !scale || !bias || !mean || !var)
    return failure();
  int64_t channels = xType.getDimSize(1);
  for (Value v : {scale, bias, mean, var})
    if (shapeOf(v) != llvm::ArrayRef<int64_t>{channels})
      return ctx.error("scale, B, mean and var must have shape [" + llvm::Twine(channels) + "]");
  Type t = xType.getElementType();
  // y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a.
  Value ve = ctx.create<AddOp>({var, ctx.scalar(eps, t)});
  Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
  Value a = inv ? ctx.create<MulOp>({scale, inv}) : Value();
  Value ma = a ? ctx.create<MulOp>({mean, a}) : Value();
  Value b = ma ? ctx.create<SubOp>({bias, ma}) : Value();
  Value ac = b ? perChannel(ctx, a, xType.getRank()) : Value();
  Value bc = ac ? perChannel(ctx, b, xType.getRank()) : Value();
  Value xa = bc ? ctx.create<MulOp>({x, ac}) : Value();
  return ctx.setResult(xa ? ctx.create<AddOp>({xa, bc}) : Value());
}

/// mean and (biased) variance of `x` over `axes`, kept as size-1 dimensions; returns x - mean and
/// the variance.
std::optional<std::pair<Value, Value>> centredAndVariance(NodeContext &ctx, Value x,
                                                          llvm::ArrayRef<int64_t> axes) {
  llvm::SmallVector<NamedAttribute> attrs{ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", true)};
  Value mean = ctx.create<ReduceMeanOp>({x}, attrs);
  Value d = mean ? ctx.create<SubOp>({x, mean}) : Value();
  Value sq = d ? ctx.create<MulOp>({d, d}) : Value();
  Value var = sq ? ctx.create<ReduceMeanOp>({sq}, attrs) : Value();
  if (!var)
    return std::nullopt;
  return std::make_pair(d, var);
}

LogicalResult importInstanceNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 3)
    return ctx.error("input must have rank >= 3");
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (!x || !scale || !bias)
    return failure();
  Type t = xType.getElementType();
  auto stats = centredAndVariance(ctx, x, spatialAxes(xType.getRank()));
  if (!stats)
    return failure();
  Value ve = ctx.create<AddOp>({stats->second, ctx.scalar(ctx.floatAttr("epsilon", 1e-5), t)});
  Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
  Value n = inv ? ctx.create<MulOp>({stats->first, inv}) : Value();
  Value sc = n ? perChannel(ctx, scale, xType.getRank()) : Value();
  Value bc = sc ? perChannel(ctx, bias, xType.getRank()) : Value();
  Value y = bc ? ctx.create<MulOp>({n, sc}) : Value();
  return ctx.setResult(y ? ctx.create<AddOp>({y, bc}) : Value());
}

LogicalResult importLayerNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  int64_t rank = xType.getRank();
  int64_t axisAttr = ctx.intAttr("axis", -1);
  auto axis = normalizeAxis(axisAttr, rank);
  if (!axis)
    return ctx.error("axis " + llvm::Twine(axisAttr) + " is out of range for rank " +
                     llvm::Twine(rank));
  double eps = ctx.floatAttr("epsilon", 1e-5);
  llvm::ArrayRef<int64_t> normShape = xType.getShape().drop_front(*axis);
  Value x = ctx.input(0), scale = ctx.input(1);
  if (!x || !scale)
    return failure();
  // plait.layer_norm wants scale and bias in the normalised shape; ONNX lets them broadcast.
  scale = ctx.broadcastTo(scale, normShape);
  if (!scale)
    return failure();
  llvm::SmallVector<Value> operands{x, scale};
  if (ctx.hasInput(2)) {
    Value bias = ctx.input(2);
    bias = bias ? ctx.broadcastTo(bias, normShape) : Value();
    if (!bias)
      return failure();
    operands.push_back(bias);
  }
  Value y = ctx.create<LayerNormOp>(operands, {ctx.i64Attr("axis", *axis), ctx.f64Attr("epsilon", eps)},
                                    xType);
  if (!y)
    return failure();
  ctx.setOutput(0, y);
  if (ctx.hasOutput(1) || ctx.hasOutput(2)) {
    llvm::SmallVector<int64_t> axes;
    for (int64_t d = *axis; d < rank; ++d)
      axes.push_back(d);
    auto stats = centredAndVariance(ctx, x, axes);
    if (!stats)
      return failure();
    if (ctx.hasOutput(1)) {
      Value mean = ctx.create<ReduceMeanOp>({x}, {ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", true)});
      if (!mean)
        return failure();
      ctx.setOutput(1, mean);
    }
    if (ctx.hasOutput(2)) {
      Value ve = ctx.create<AddOp>({stats->second, ctx.scalar(eps, xType.getElementType())});
      Value inv = ve ? ctx.create<RsqrtOp>({ve}) : Value();
      if (!inv)
        return failure();
      ctx.setOutput(2, inv);
    }
  }
  return success();
}

/// MeanVarianceNormalization as ONNX's function body: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9).
LogicalResult importMeanVarianceNorm(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  llvm::SmallVector<int64_t> axes =
      ctx.hasAttr("axes") ? ctx.intsAttr("axes") : llvm::SmallVector<int64_t>{0, 2, 3};
  for (int64_t &a : axes) {
    auto norm = normalizeAxis(a, xType.getRank());
    if (!norm)
      return ctx.error("axis " + llvm::Twine(a) + " is out of range");
    a = *norm;
  }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = xType.getElementType();
  llvm::SmallVector<NamedAttribute> attrs{ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", true)};
  Value mean = ctx.create<ReduceMeanOp>({x}, attrs);
  Value meanSq = mean ? ctx.create<MulOp>({mean, mean}) : Value();
  Value sq = meanSq ? ctx.create<MulOp>({x, x}) : Value();
  Value eSq = sq ? ctx.create<ReduceMeanOp>({sq}, attrs) : Value();
  Value var = eSq ? ctx.create<SubOp>({eSq, meanSq}) : Value();
  Value std = var ? ctx.create<SqrtOp>({var}) : Value();
  Value den = std ? ctx.create<AddOp>({std, ctx.scalar(1e-9, t)}) : Value();
  Value num = den ? ctx.create<SubOp>({x, mean}) : Value();
  return ctx.setResult(num ? ctx.create<DivOp>({num, den}) : Value());
}

template <typename OpT>
LogicalResult importSoftmax(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  return ctx.setResult(x ? ctx.create<OpT>({x}, {ctx.i64Attr("axis", ctx.intAttr("axis", -1))}) : Value());
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

template <Reduction Kind>
LogicalResult importReduce(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  int64_t rank = xType.getRank();
  auto axesOr = ctx.intsInputOrAttr(1, "axes");
  if (!axesOr)
    return failure();
  llvm::SmallVector<int64_t> axes = std::move(*axesOr);
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  if (axes.empty()) {
    if (ctx.intAttr("noop_with_empty_axes", 0) != 0)
      return ctx.forwardInput(0, 0);
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  llvm::SmallVector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    auto norm = normalizeAxis(a, rank);
    if (!norm)
      return ctx.error("axis " + llvm::Twine(a) + " is out of range for rank " + llvm::Twine(rank));
    if (seen[*norm])
      return ctx.error("axis " + llvm::Twine(a) + " is repeated");
    seen[*norm] = true;
    a = *norm;
  }
  llvm::sort(axes);

  constexpr bool simple = Kind == Reduction::Sum || Kind == Reduction::Mean ||
                          Kind == Reduction::Max || Kind == Reduction::Min ||
                          Kind == Reduction::Prod;
  if constexpr (simple) {
    const HostTensor *x = ctx.foldedInput(0);
    if (x && fitsFolding(x->shape())) {
      ReduceFn fn = Kind == Reduction::Sum    ? ReduceFn::Sum
                    : Kind == Reduction::Mean ? ReduceFn::Mean
                    : Kind == Reduction::Max  ? ReduceFn::Max
                    : Kind == Reduction::Min  ? ReduceFn::Min
                                              : ReduceFn::Prod;
      ctx.setOutput(0, foldReduce(fn, *x, axes, keepdims));
      return success();
    }
  }
  bool floatOnly = Kind == Reduction::L2 || Kind == Reduction::LogSum ||
                   Kind == Reduction::LogSumExp;
  if (floatOnly && failed(ctx.requireFloatInput(0)))
    return failure();
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto attrs = [&](bool keep) {
    return llvm::SmallVector<NamedAttribute>{ctx.arrayAttr("axes", axes), ctx.boolAttr("keepdims", keep)};
  };
  switch (Kind) {
  case Reduction::Sum:
    return ctx.setResult(ctx.create<ReduceSumOp>({x}, attrs(keepdims)));
  case Reduction::Mean:
    return ctx.setResult(ctx.create<ReduceMeanOp>({x}, attrs(keepdims)));
  case Reduction::Max:
    return ctx.setResult(ctx.create<ReduceMaxOp>({x}, attrs(keepdims)));
  case Reduction::Min:
    return ctx.setResult(ctx.create<ReduceMinOp>({x}, attrs(keepdims)));
  case Reduction::Prod:
    return ctx.setResult(ctx.create<ReduceProdOp>({x}, attrs(keepdims)));
  case Reduction::L1: {
    Value a = ctx.create<AbsOp>({x});
    return ctx.setResult(a ? ctx.create<ReduceSumOp>({a}, attrs(keepdims)) : Value());
  }
  case Reduction::L2:
  case Reduction::SumSquare: {
    Value sq = ctx.create<MulOp>({x, x});
    Value s = sq ? ctx.create<ReduceSumOp>({sq}, attrs(keepdims)) : Value();
    if (Kind == Reduction::SumSquare)
      return ctx.setResult(s);
    return ctx.setResult(s ? ctx.create<SqrtOp>({s}) : Value());
  }
  case Reduction::LogSum: {
    Value s = ctx.create<ReduceSumOp>({x}, attrs(keepdims));
    return ctx.setResult(s ? ctx.create<LogOp>({s}) : Value());
  }
  case Reduction::LogSumExp: {
    // log(sum(exp(x - m))) + m with m = max(x): no overflow for large inputs.
    Value m = ctx.create<ReduceMaxOp>({x}, attrs(true));
    Value d = m ? ctx.create<SubOp>({x, m}) : Value();
    Value e = d ? ctx.create<ExpOp>({d}) : Value();
    Value s = e ? ctx.create<ReduceSumOp>({e}, attrs(true)) : Value();
    Value l = s ? ctx.create<LogOp>({s}) : Value();
    Value r = l ? ctx.create<AddOp>({l, m}) : Value();
    if (r && !keepdims) {
      llvm::SmallVector<int64_t> shape;
      for (int64_t dim = 0; dim < rank; ++dim)
        if (!seen[dim])
          shape.push_back(xType.getDimSize(dim));
      r = ctx.reshape(r, shape);
    }
    return ctx.setResult(r);
  }
  }
  return failure();
}

template <typename OpT>
LogicalResult importArg(NodeContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  return ctx.setResult(ctx.create<OpT>(
                            {x}, {ctx.i64Attr("axis", ctx.intAttr("axis", 0)),
                                  ctx.boolAttr("keepdims", ctx.intAttr("keepdims", 1) != 0),
                                  ctx.boolAttr("select_last_index",
                                               ctx.intAttr("select_last_index", 0) != 0)}));
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

template <typename OpT>
LogicalResult importLoss(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)))
    return failure();
  Value input = ctx.input(0), target = ctx.input(1);
  if (!input || !target)
    return failure();
  llvm::SmallVector<Value> operands{input, target};
  if (ctx.hasInput(2)) {
    Value weight = ctx.input(2);
    if (!weight)
      return failure();
    operands.push_back(weight);
  }
  std::string reduction = ctx.stringAttr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return ctx.error("reduction must be mean, sum or none, got '" + reduction + "'");
  llvm::SmallVector<NamedAttribute> attrs{
      ctx.attr("reduction", StringAttr::get(ctx.context(), reduction))};
  if (ctx.hasAttr("ignore_index"))
    attrs.push_back(ctx.i64Attr("ignore_index", ctx.intAttr("ignore_index", 0)));
  Value loss = ctx.create<OpT>(operands, attrs);
  if (!loss)
    return failure();
  ctx.setOutput(0, loss);
  if (ctx.hasOutput(1)) { // SoftmaxCrossEntropyLoss's log_prob
    Value logProb = ctx.create<LogSoftmaxOp>({input}, {ctx.i64Attr("axis", 1)});
    if (!logProb)
      return failure();
    ctx.setOutput(1, logProb);
  }
  return success();
}


/// Hardmax: 1 where an element is the first maximum along `axis`, else 0.
LogicalResult importHardmax(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  int64_t axisAttr = ctx.intAttr("axis", -1);
  auto axis = normalizeAxis(axisAttr, xType.getRank());
  if (!axis)
    return ctx.error("axis " + llvm::Twine(axisAttr) + " is out of range");
  Value x = ctx.input(0);
  if (!x)
    return failure();
  int64_t n = xType.getDimSize(*axis);
  if (n > kMaxFoldedElements)
    return ctx.unsupported("Hardmax over more than " + llvm::Twine(kMaxFoldedElements) +
                           " elements");
  Value am = ctx.create<ArgMaxOp>({x}, {ctx.i64Attr("axis", *axis), ctx.boolAttr("keepdims", true)});
  llvm::SmallVector<int64_t> shape(xType.getRank(), 1), iota;
  shape[*axis] = n;
  for (int64_t i = 0; i < n; ++i)
    iota.push_back(i);
  Value range = ctx.constant(HostTensor::fromInts(ElemKind::I64, shape, iota));
  Value hot = am ? ctx.create<EqualOp>({am, range}) : Value();
  return ctx.setResult(hot ? ctx.cast(hot, xType.getElementType()) : Value());
}

/// CumSum along a constant axis as a matmul with a triangular 0/1 matrix: y[j] = sum_i x[i] T[i, j].
LogicalResult importCumSum(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType)
    return failure();
  const HostTensor *axisT = ctx.requireConstInput(1, "axis");
  if (!axisT)
    return failure();
  if (axisT->numElements() != 1)
    return ctx.error("axis must be a scalar");
  int64_t rank = xType.getRank();
  auto axis = normalizeAxis(axisT->getInt(0), rank);
  if (!axis)
    return ctx.error("axis " + llvm::Twine(axisT->getInt(0)) + " is out of range");
  bool exclusive = ctx.intAttr("exclusive", 0) != 0, reverse = ctx.intAttr("reverse", 0) != 0;
  int64_t n = xType.getDimSize(*axis);
  if (!fitsFolding({n, n}))
    return ctx.unsupported("CumSum along a dimension of more than 2048 elements (plait computes "
                           "it as a matmul with an n x n constant)");
  HostTensor tri(*kindOf(xType.getElementType()), {n, n});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool take = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      tri.setInt(i * n + j, take ? 1 : 0);
    }
  Value x = ctx.input(0);
  if (!x)
    return failure();
  // Move the axis last, multiply, move it back.
  llvm::SmallVector<int64_t> perm, inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      perm.push_back(d);
  perm.push_back(*axis);
  for (int64_t d = 0; d < rank; ++d)
    inverse[perm[d]] = d;
  bool moves = *axis != rank - 1;
  Value v = moves ? ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", perm)}) : x;
  v = v ? ctx.create<MatmulOp>({v, ctx.constant(tri)}) : Value();
  if (v && moves)
    v = ctx.create<TransposeOp>({v}, {ctx.arrayAttr("perm", inverse)});
  return ctx.setResult(v);
}

/// LRN: x / (bias + alpha / size * sum of x^2 over a window of `size` channels)^beta. The window
/// sum is an average pool over the channel dimension of [N, 1, C, rest] times `size`.
LogicalResult importLRN(NodeContext &ctx) {
  RankedTensorType xType = ctx.inputType(0);
  if (!xType || failed(ctx.requireFloatInput(0)))
    return failure();
  if (xType.getRank() < 2)
    return ctx.error("input must have rank >= 2");
  int64_t size = ctx.intAttr("size", 0);
  if (size < 1)
    return ctx.error("size must be >= 1");
  double alpha = ctx.floatAttr("alpha", 1e-4), beta = ctx.floatAttr("beta", 0.75),
         bias = ctx.floatAttr("bias", 1.0);
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Type t = xType.getElementType();
  int64_t n = xType.getDimSize(0), c = xType.getDimSize(1);
  int64_t rest = numElementsOf(xType.getShape().drop_front(2));
  Value sq = ctx.create<MulOp>({x, x});
  Value r = sq ? ctx.reshape(sq, {n, 1, c, rest}) : Value();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Value mean = r ? ctx.create<AvgPool2dOp>(
                       {r}, {ctx.arrayAttr("kernel", {size, 1}), ctx.arrayAttr("strides", {1, 1}),
                             ctx.arrayAttr("pads", {before, 0, after, 0}),
                             ctx.boolAttr("count_include_pad", true)})
                 : Value();
  Value sum = mean ? ctx.reshape(mean, xType.getShape()) : Value();
  Value scaled = sum ? ctx.create<MulOp>({sum, ctx.scalar(alpha, t)}) : Value(); // mean * size * alpha / size
  Value base = scaled ? ctx.create<AddOp>({scaled, ctx.scalar(bias, t)}) : Value();
  Value den = base ? ctx.create<PowOp>({base, ctx.scalar(beta, t)}) : Value();
  return ctx.setResult(den ? ctx.create<DivOp>({x, den}) : Value());
}

} // namespace

void registerNeuralOps(OpImporterMap &map) {
  map["MatMul"] = importMatMul;
  map["Gemm"] = importGemm;
  map["Conv"] = importConv;
  map["ConvTranspose"] = importConvTranspose;
  map["MaxPool"] = importPool<true>;
  map["AveragePool"] = importPool<false>;
  map["GlobalAveragePool"] = importGlobalPool<ReduceMeanOp>;
  map["GlobalMaxPool"] = importGlobalPool<ReduceMaxOp>;
  map["BatchNormalization"] = importBatchNorm;
  map["InstanceNormalization"] = importInstanceNorm;
  map["LayerNormalization"] = importLayerNorm;
  map["MeanVarianceNormalization"] = importMeanVarianceNorm;
  map["Softmax"] = importSoftmax<SoftmaxOp>;
  map["LogSoftmax"] = importSoftmax<LogSoftmaxOp>;
  map["ReduceSum"] = importReduce<Reduction::Sum>;
  map["ReduceMean"] = importReduce<Reduction::Mean>;
  map["ReduceMax"] = importReduce<Reduction::Max>;
  map["ReduceMin"] = importReduce<Reduction::Min>;
  map["ReduceProd"] = importReduce<Reduction::Prod>;
  map["ReduceL1"] = importReduce<Reduction::L1>;
  map["ReduceL2"] = importReduce<Reduction::L2>;
  map["ReduceLogSum"] = importReduce<Reduction::LogSum>;
  map["ReduceLogSumExp"] = importReduce<Reduction::LogSumExp>;
  map["ReduceSumSquare"] = importReduce<Reduction::SumSquare>;
  map["ArgMax"] = importArg<ArgMaxOp>;
  map["ArgMin"] = importArg<ArgMinOp>;
  map["Hardmax"] = importHardmax;
  map["CumSum"] = importCumSum;
  map["LRN"] = importLRN;
  map["SoftmaxCrossEntropyLoss"] = importLoss<SoftmaxCrossEntropyOp>;
  map["NegativeLogLikelihoodLoss"] = importLoss<NllLossOp>;
}

} // namespace plait::onnx_import
