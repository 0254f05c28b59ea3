// Importer of ONNX GridSample (opset 16: 2-D, modes bilinear, nearest and bicubic, padding
// zeros, border and reflection, align_corners) as plait ops that exist already: the sampling
// positions are computed from the grid at run time, each tap is a gather of the input's pixels
// (viewed as rows [N * H * W, C]) at those positions, weighted and summed. The gathers' VJP
// (a scatter-add) gives the input's gradient, and the weights, computed from the grid by
// differentiable ops, the grid's: a spatial transformer trains through it.
//
// Per axis of size n, a grid value g in [-1, 1] maps to the pixel coordinate
//   c = (g + 1) / 2 * (n - 1)          (align_corners = 1)
//   c = ((g + 1) * n - 1) / 2          (align_corners = 0)
// as PyTorch's grid_sample (whose outputs the ONNX test data are) computes it. Bilinear and
// nearest apply the padding to c (border: clamped to [0, n - 1]; reflection: reflected at the
// borders, then clamped), bicubic to each tap's coordinate. Bilinear takes floor(c) and
// floor(c) + 1 with weights 1 - t and t (t = c - floor(c)); nearest round(c) (ties to even);
// bicubic floor(c) - 1 .. floor(c) + 2 with the cubic convolution weights of A = -0.75. A tap
// outside the input reads zero (its weight is masked); the gather reads a clamped position.
#include "compiler/import/onnx/Importer.h"

#include <algorithm>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// One tap along one axis: the pixel coordinate it reads (float, [N, P], in range) and its
/// weight ([N, P]; zero where the tap falls outside the input; null for a weight of 1).
struct Tap {
  Value coord, weight;
};

/// Builds the elementwise arithmetic of one GridSample node on [N, P] float values.
class Sampler : public ElementArith {
public:
  using ElementArith::ElementArith;

  /// c reflected at the borders of an axis of size n (PyTorch's reflect_coordinates over
  /// [0, n - 1] with align_corners, else [-0.5, n - 0.5]), then clamped to [0, n - 1].
  Value reflect(Value c, int64_t n, bool alignCorners) {
    double lo = alignCorners ? 0.0 : -0.5, span = alignCorners ? double(n - 1) : double(n);
    if (span <= 0) // one pixel, corners aligned: every position is pixel 0
      return mul(c, 0.0);
    Value a = sub(c, scalar(lo));
    a = a ? ctx_.create<AbsOp>({a}) : a;
    Value flips = floor(div(a, scalar(span)));
    Value extra = sub(a, mul(flips, span));
    // An even number of flips keeps the direction: extra + lo, else span - extra + lo.
    Value parity = sub(flips, mul(floor(mul(flips, 0.5)), 2.0));
    Value even = parity ? ctx_.create<EqualOp>({parity, scalar(0.0)}) : Value();
    Value forward = add(extra, lo), backward = add(sub(scalar(span), extra), lo);
    Value r = even && forward && backward ? ctx_.create<WhereOp>({even, forward, backward})
                                          : Value();
    return clamp(r, 0.0, double(n - 1));
  }

  /// The padding of `padding` applied to coordinate c of an axis of size n.
  Value pad(Value c, llvm::StringRef padding, int64_t n, bool alignCorners) {
    if (padding == "border")
      return clamp(c, 0.0, double(n - 1));
    if (padding == "reflection")
      return reflect(c, n, alignCorners);
    return c;
  }

  /// A tap at coordinate c (integral) with weight w (null: 1): with zeros padding, w masked
  /// to zero and c clamped where c is outside [0, n - 1]; else c padded as the mode says
  /// (`padTaps`), or clamped unless it is in range already (`inRange`).
  std::optional<Tap> tap(Value c, Value w, llvm::StringRef padding, int64_t n,
                         bool alignCorners, bool padTaps, bool inRange) {
    if (!c)
      return std::nullopt;
    if (padding == "zeros") {
      Value inside = ctx_.create<GreaterEqualOp>({c, scalar(0.0)});
      Value below = inside ? ctx_.create<LessEqualOp>({c, scalar(double(n - 1))}) : Value();
      Value both = below ? ctx_.create<AndOp>({inside, below}) : Value();
      Value mask = both ? ctx_.cast(both, type_) : Value();
      w = w ? mul(w, mask) : mask;
      c = clamp(c, 0.0, double(n - 1));
      if (!w)
        return std::nullopt;
    } else if (padTaps) {
      c = pad(c, padding, n, alignCorners);
    } else if (!inRange) {
      c = clamp(c, 0.0, double(n - 1));
    }
    if (!c)
      return std::nullopt;
    return Tap{c, w};
  }

  /// The taps of one axis for pixel coordinate c (unpadded).
  std::optional<llvm::SmallVector<Tap>> taps(Value c, llvm::StringRef mode,
                                             llvm::StringRef padding, int64_t n,
                                             bool alignCorners) {
    llvm::SmallVector<Tap> out;
    auto push = [&](Value coord, Value weight, bool padTaps, bool inRange = false) {
      if (!coord || (mode != "nearest" && !weight)) // a builder failed (and reported)
        return false;
      std::optional<Tap> t = tap(coord, weight, padding, n, alignCorners, padTaps, inRange);
      if (t)
        out.push_back(*t);
      return bool(t);
    };
    if (mode == "nearest") {
      // Border and reflection padding put the rounded coordinate in range already.
      Value p = pad(c, padding, n, alignCorners);
      Value r = p ? ctx_.create<RoundOp>({p}) : p;
      if (!push(r, Value(), false, /*inRange=*/true))
        return std::nullopt;
      return out;
    }
    if (mode == "bilinear") {
      Value p = pad(c, padding, n, alignCorners);
      Value lo = floor(p);
      Value t = sub(p, lo);
      if (!push(lo, sub(scalar(1.0), t), false) || !push(add(lo, 1.0), t, false))
        return std::nullopt;
      return out;
    }
    // Bicubic: the padding applies to each tap.
    constexpr double A = -0.75;
    Value lo = floor(c);
    Value t = sub(c, lo);
    auto outer = [&](Value x) { // ((A x - 5A) x + 8A) x - 4A, for 1 < x < 2
      return add(mul(add(mul(add(mul(x, A), -5 * A), x), 8 * A), x), -4 * A);
    };
    auto inner = [&](Value x) { // ((A + 2) x - (A + 3)) x x + 1, for x <= 1
      return add(mul(mul(add(mul(x, A + 2), -(A + 3)), x), x), 1.0);
    };
    Value oneMinus = sub(scalar(1.0), t);
    Value weights[4] = {outer(add(t, 1.0)), inner(t), inner(oneMinus),
                        outer(sub(scalar(2.0), t))};
    for (int k = 0; k < 4; ++k)
      if (!push(add(lo, double(k - 1)), weights[k], true))
        return std::nullopt;
    return out;
  }

};

LogicalResult importGridSample(NodeContext &ctx) {
  if (failed(ctx.requireFloatInput(0)) || failed(ctx.requireFloatInput(1)))
    return failure();
  RankedTensorType xType = ctx.inputType(0), gridType = ctx.inputType(1);
  if (!xType || !gridType)
    return failure();
  std::string mode = ctx.stringAttr("mode", "bilinear");
  std::string padding = ctx.stringAttr("padding_mode", "zeros");
  bool alignCorners = ctx.intAttr("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return ctx.error("mode must be bilinear, nearest or bicubic, not '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return ctx.error("padding_mode must be zeros, border or reflection, not '" + padding + "'");
  if (xType.getRank() != 4)
    return xType.getRank() == 5 ? ctx.unsupported("5-D GridSample (plait samples 2-D inputs)")
                                : ctx.error("X must be 4-D [N, C, H, W], not rank " +
                                            llvm::Twine(xType.getRank()));
  const int64_t n = xType.getDimSize(0), c = xType.getDimSize(1), h = xType.getDimSize(2),
                w = xType.getDimSize(3);
  if (gridType.getRank() != 4 || gridType.getDimSize(0) != n || gridType.getDimSize(3) != 2)
    return ctx.error("grid must be [" + llvm::Twine(n) + ", H_out, W_out, 2]");
  const int64_t ho = gridType.getDimSize(1), wo = gridType.getDimSize(2), p = ho * wo;
  if (n < 1 || c < 1 || h < 1 || w < 1 || p < 1)
    return ctx.error("X and grid must not be empty");
  if (std::max(h, w) > (int64_t(1) << 24))
    return ctx.unsupported("inputs of more than 2^24 pixels along an axis (the sampling "
                           "positions are computed in f32)");
  // Positions and weights in f32 (f64 for f64 inputs; bf16 could not even tell the pixels of
  // a 512-wide image apart), the weights cast to the input's type for the products.
  Type type = xType.getElementType();
  Type coordType = type.isF64() ? type : Float32Type::get(ctx.context());
  Value x = ctx.input(0), grid = ctx.input(1);
  grid = grid ? ctx.cast(grid, coordType) : grid;
  if (!x || !grid)
    return failure();
  // Grid values per axis as [N, P]: x (width) is component 0, y (height) component 1.
  Sampler s(ctx, coordType);
  auto component = [&](int64_t k) {
    Value v = sliceAlong(ctx, grid, 3, k, k + 1, 1);
    return v ? ctx.reshape(v, {n, p}) : v;
  };
  auto pixel = [&](Value g, int64_t size) {
    return alignCorners ? s.mul(s.add(g, 1.0), 0.5 * double(size - 1))
                        : s.mul(s.add(s.mul(s.add(g, 1.0), double(size)), -1.0), 0.5);
  };
  Value cx = pixel(component(0), w), cy = pixel(component(1), h);
  auto xs = cx ? s.taps(cx, mode, padding, w, alignCorners) : std::nullopt;
  auto ys = xs && cy ? s.taps(cy, mode, padding, h, alignCorners) : std::nullopt;
  if (!ys)
    return failure();
  Value rows = pixelRows(ctx, x);
  llvm::SmallVector<int64_t> bases;
  for (int64_t b = 0; b < n; ++b)
    bases.push_back(b * h * w);
  Type i64 = IntegerType::get(ctx.context(), 64);
  Value base = ctx.constant(HostTensor::fromInts(ElemKind::I64, {n, 1}, bases));
  Value sum;
  for (const Tap &ty : *ys) {
    Value row = ctx.cast(ty.coord, i64);
    row = row ? ctx.create<MulOp>({row, ctx.scalar(double(w), i64)}) : row;
    row = row ? ctx.create<AddOp>({row, base}) : row;
    for (const Tap &tx : *xs) {
      Value at = row ? ctx.cast(tx.coord, i64) : Value();
      at = at ? ctx.create<AddOp>({row, at}) : at;
      Value picked = at && rows ? ctx.create<GatherOp>({rows, at}, {ctx.i64Attr("axis", 0)})
                                : Value(); // [N, P, C]
      Value weight = ty.weight && tx.weight ? s.mul(ty.weight, tx.weight)
                                            : ty.weight ? ty.weight : tx.weight;
      Value term = picked;
      if (picked && weight) {
        weight = ctx.cast(weight, type);
        weight = weight ? ctx.reshape(weight, {n, p, 1}) : weight;
        term = weight ? ctx.create<MulOp>({picked, weight}) : weight;
      }
      sum = sum && term ? ctx.create<AddOp>({sum, term}) : term;
      if (!sum)
        return failure();
    }
  }
  Value y = ctx.create<TransposeOp>({sum}, {ctx.arrayAttr("perm", {0, 2, 1})});
  return ctx.setResult(y ? ctx.reshape(y, {n, c, ho, wo}) : y);
}

} // namespace

Value pixelRows(NodeContext &ctx, Value x) {
  auto shape = shapeOf(x);
  Value rows = ctx.create<TransposeOp>({x}, {ctx.arrayAttr("perm", {0, 2, 3, 1})});
  return rows ? ctx.reshape(rows, {shape[0] * shape[2] * shape[3], shape[1]}) : rows;
}

void registerGridSampleOps(OpImporterMap &map) { map["GridSample"] = importGridSample; }

} // namespace plait::onnx_import
