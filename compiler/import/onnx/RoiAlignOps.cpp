// Importer of ONNX RoiAlign (opset 16; opset 10's, which has no coordinate_transformation_mode,
// behaves as its output_half_pixel) as plait ops that exist already, as GridSample is
// imported: each region's sampling positions are computed from `rois` at run time, each of a
// sample's four bilinear taps is a gather of the input's pixels (viewed as rows
// [N * H * W, C]) weighted by elementwise products, and the bins are reduced. The gathers'
// VJP (a scatter-add) gives X's gradient, so a detection head trains through it.
//
// As ONNX's reference (and onnxruntime, Detectron's RoIAlign) computes it, per region r of
// batch image b = batch_indices[r], along each axis of size n:
//   start = roi_start * spatial_scale - offset (offset 0.5 for half_pixel, else 0);
//   extent = roi_end * spatial_scale - offset - start (at least 1 for output_half_pixel);
//   bin = extent / pooled; a bin's g = sampling_ratio samples at
//   c = start + p * bin + (i + 0.5) * bin / g      (p < pooled, i < g);
//   a sample with c < -1 or c > n (on either axis) reads 0; else c = max(c, 0),
//   lo = floor(c), and where lo >= n - 1: lo = hi = c = n - 1, else hi = lo + 1; the taps
//   lo and hi weigh 1 - (c - lo) and c - lo.
// mode avg: a bin's value is the sum of its samples' bilinear values over g_h * g_w; mode
// max: the largest weighted tap over its samples (the reference's and onnxruntime's rule).
// sampling_ratio 0 (adaptive: ceil(extent / pooled) samples, which depends on each region's
// size, known only at run time) is refused: plait plans static shapes.
#include "compiler/import/onnx/Importer.h"

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// The bilinear taps of one axis: positions (i64 [R, S]) and weights ([R, S], zero where the
/// sample is outside the axis) of the low and high tap of each of its S samples.
struct AxisTaps {
  Value lo, hi, wLo, wHi;
};

class RoiSampler : public ElementArith {
public:
  using ElementArith::ElementArith;

  /// The taps of the S = pooled * g samples per region along an axis of size n, from the
  /// regions' start and extent ([R, 1]).
  std::optional<AxisTaps> taps(Value start, Value extent, int64_t pooled, int64_t g, int64_t n) {
    // The sample positions p * bin + (i + 0.5) * bin / g as the reference orders them.
    std::vector<double> bins, offsets;
    for (int64_t p = 0; p < pooled; ++p)
      for (int64_t i = 0; i < g; ++i) {
        bins.push_back(double(p));
        offsets.push_back(double(i) + 0.5);
      }
    const int64_t s = pooled * g;
    ElemKind kind = *kindOf(type_);
    Value p = ctx_.constant(HostTensor::fromDoubles(kind, {1, s}, bins));
    Value i = ctx_.constant(HostTensor::fromDoubles(kind, {1, s}, offsets));
    Value bin = div(extent, scalar(double(pooled)));
    Value c = add(add(start, mul(p, bin)), div(mul(i, bin), scalar(double(g)))); // [R, S]
    if (!c)
      return std::nullopt;
    Value inside =
        op<AndOp>(op<GreaterEqualOp>(c, scalar(-1.0)), op<LessEqualOp>(c, scalar(double(n))));
    Value clamped = op<MaxOp>(c, scalar(0.0));
    Value low = floor(clamped);
    Value edge = op<GreaterEqualOp>(low, scalar(double(n - 1)));
    Value last = scalar(double(n - 1));
    Value atEdge = edge ? ctx_.create<WhereOp>({edge, last, clamped}) : Value();
    Value lowAt = edge ? ctx_.create<WhereOp>({edge, last, low}) : Value();
    Value high = op<MinOp>(add(lowAt, scalar(1.0)), last);
    Value l = sub(atEdge, lowAt);
    Value mask = inside ? ctx_.cast(inside, type_) : Value();
    Value wHi = mul(l, mask), wLo = mul(sub(scalar(1.0), l), mask);
    Type i64 = IntegerType::get(ctx_.context(), 64);
    Value lo = lowAt ? ctx_.cast(lowAt, i64) : Value(), hi = high ? ctx_.cast(high, i64) : Value();
    if (!wLo || !wHi || !lo || !hi)
      return std::nullopt;
    return AxisTaps{lo, hi, wLo, wHi};
  }

};

LogicalResult importRoiAlign(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)) || failed(ctx.requireFloatInput(1)))
    return failure();
  RankedTensorType xType = ctx.inputType(0), roiType = ctx.inputType(1);
  RankedTensorType batchType = roiType ? ctx.inputType(2) : RankedTensorType();
  if (!xType || !roiType || !batchType)
    return failure();
  if (xType.getRank() != 4)
    return ctx.error("X must be 4-D [N, C, H, W], not rank " + Twine(xType.getRank()));
  const int64_t n = xType.getDimSize(0), c = xType.getDimSize(1), h = xType.getDimSize(2),
                w = xType.getDimSize(3);
  if (roiType.getRank() != 2 || roiType.getDimSize(1) != 4)
    return ctx.error("rois must be [num_rois, 4] (x1, y1, x2, y2)");
  const int64_t r = roiType.getDimSize(0);
  if (batchType.getRank() != 1 || batchType.getDimSize(0) != r ||
      !batchType.getElementType().isInteger(64))
    return ctx.error("batch_indices must be int64 [" + Twine(r) + "], one per region");
  std::string mode = ctx.stringAttr("mode", "avg");
  if (mode != "avg" && mode != "max")
    return ctx.error("mode must be avg or max, not '" + mode + "'");
  // Opset 16 added the half_pixel default; opset 10's RoiAlign is output_half_pixel.
  std::string transform = ctx.stringAttr("coordinate_transformation_mode",
                                         ctx.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    return ctx.error("coordinate_transformation_mode must be half_pixel or output_half_pixel, "
                     "not '" +
                     transform + "'");
  const bool halfPixel = transform == "half_pixel";
  const int64_t oh = ctx.intAttr("output_height", 1), ow = ctx.intAttr("output_width", 1);
  const int64_t ratio = ctx.intAttr("sampling_ratio", 0);
  const double scale = ctx.floatAttr("spatial_scale", 1.0);
  if (oh < 1 || ow < 1)
    return ctx.error("output_height and output_width must be >= 1");
  if (ratio < 0)
    return ctx.error("sampling_ratio must be >= 0, got " + Twine(ratio));
  if (ratio == 0)
    return ctx.unsupported("sampling_ratio 0 (adaptive: a bin's samples depend on its "
                           "region's size, known only at run time; plait plans static shapes: "
                           "export with a sampling_ratio > 0)");
  if (n < 1 || c < 1 || h < 1 || w < 1 || r < 1)
    return ctx.error("X and rois must not be empty");
  if (std::max(h, w) > (int64_t(1) << 24) ||
      double(r) * double(oh * ratio) * double(ow * ratio) * double(c) > double(int64_t(1) << 31))
    return ctx.unsupported("RoiAlign of more than 2^31 sampled values or 2^24 pixels along an "
                           "axis");
  // Positions and weights in f32 (f64 for f64 inputs), the weights cast to X's type.
  Type type = xType.getElementType();
  Type coordType = type.isF64() ? type : Float32Type::get(ctx.context());
  Value x = ctx.input(0), rois = ctx.input(1), batch = ctx.input(2);
  rois = rois ? ctx.cast(rois, coordType) : rois;
  if (!x || !rois || !batch)
    return failure();
  RoiSampler s(ctx, coordType);
  const double offset = halfPixel ? 0.5 : 0.0;
  auto column = [&](int64_t k) { // rois[:, k] * scale - offset, [R, 1]
    Value v = sliceAlong(ctx, rois, 1, k, k + 1, 1);
    return s.sub(s.mul(v, s.scalar(scale)), s.scalar(offset));
  };
  Value x1 = column(0), y1 = column(1), x2 = column(2), y2 = column(3);
  Value width = s.sub(x2, x1), height = s.sub(y2, y1);
  if (!halfPixel) {
    width = s.op<MaxOp>(width, s.scalar(1.0));
    height = s.op<MaxOp>(height, s.scalar(1.0));
  }
  auto ys = x1 && height ? s.taps(y1, height, oh, ratio, h) : std::nullopt;
  auto xs = ys && width ? s.taps(x1, width, ow, ratio, w) : std::nullopt;
  if (!xs)
    return failure();
  const int64_t sy = oh * ratio, sx = ow * ratio;
  Value rows = pixelRows(ctx, x);
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value base = ctx.reshape(batch, {r, 1, 1});
  base = base ? ctx.create<MulOp>({base, ctx.scalar(double(h * w), i64)}) : base;
  if (!rows || !base)
    return failure();
  Value combined;
  for (auto [yAt, yWeight] : {std::pair(ys->lo, ys->wLo), std::pair(ys->hi, ys->wHi)}) {
    Value row = ctx.create<MulOp>({ctx.reshape(yAt, {r, sy, 1}), ctx.scalar(double(w), i64)});
    row = row ? ctx.create<AddOp>({row, base}) : row;
    for (auto [xAt, xWeight] : {std::pair(xs->lo, xs->wLo), std::pair(xs->hi, xs->wHi)}) {
      Value at = row ? ctx.create<AddOp>({row, ctx.reshape(xAt, {r, 1, sx})}) : Value();
      Value picked = at ? ctx.create<GatherOp>({rows, at}, {ctx.i64Attr("axis", 0)})
                        : Value(); // [R, SY, SX, C]
      Value weight = s.mul(ctx.reshape(yWeight, {r, sy, 1}), ctx.reshape(xWeight, {r, 1, sx}));
      weight = weight ? ctx.cast(weight, type) : weight;
      weight = weight ? ctx.reshape(weight, {r, sy, sx, 1}) : weight;
      Value term = picked && weight ? ctx.create<MulOp>({picked, weight}) : Value();
      combined = !combined ? term
                 : term    ? (mode == "avg" ? ctx.create<AddOp>({combined, term})
                                            : ctx.create<MaxOp>({combined, term}))
                           : Value();
      if (!combined)
        return failure();
    }
  }
  // [R, OH, g, OW, g, C] -> the bins [R, OH, OW, C] -> [R, C, OH, OW].
  Value samples = ctx.reshape(combined, {r, oh, ratio, ow, ratio, c});
  SmallVector<NamedAttribute> axes{ctx.arrayAttr("axes", {2, 4}), ctx.boolAttr("keepdims", false)};
  Value bins = !samples        ? Value()
               : mode == "avg" ? ctx.create<ReduceSumOp>({samples}, axes)
                               : ctx.create<ReduceMaxOp>({samples}, axes);
  if (bins && mode == "avg")
    bins = ctx.create<DivOp>({bins, ctx.scalar(double(ratio * ratio), type)});
  Value y = bins ? ctx.create<TransposeOp>({bins}, {ctx.arrayAttr("perm", {0, 3, 1, 2})}) : Value();
  return ctx.setResult(y);
}

} // namespace

void registerRoiAlignOps(OpImporterMap &map) { map["RoiAlign"] = importRoiAlign; }

} // namespace plait::onnx_import
