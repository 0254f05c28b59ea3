// Importer of ONNX Resize: each resized axis becomes gathers of constant indices and
// weighted sums, with the taps and weights of ONNX's reference implementation.
#include "compiler/import/onnx/Importer.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace plait::onnx_import {
namespace {

/// One axis of a Resize: each output coordinate's taps (data indices, edge-clamped) and their
/// weights, `taps` per coordinate, and whether it takes the extrapolation value instead.
struct ResizeAxis {
  int64_t taps = 0;
  llvm::SmallVector<int64_t> index;  // out x taps
  llvm::SmallVector<double> weight;  // out x taps
  llvm::SmallVector<bool> extrapolate; // out
};

/// `v` as printf's %g writes it (for diagnostics).
std::string shortDouble(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

struct ResizeMode {
  std::string mode, transform, nearest;
  double cubicA = -0.75, extrapolation = 0;
  bool excludeOutside = false;
};

/// The taps of one axis of `in` elements resized to `out` at `scale`, as ONNX's reference
/// (onnx/backend/test/case/node/resize.py, which made the conformance data) computes each
/// output coordinate: its source coordinate x by the transformation mode (with the resized
/// length scale * in, not rounded); ratio = x - floor(x), or 1 when x is whole; the mode's
/// coefficients of that ratio (nearest: 0/1, linear: 2, cubic: 4); and the coefficients'
/// points: the nearest indices to x in the data edge-padded by ceil(taps / 2), ties to the
/// smaller. exclude_outside zeroes the coefficients of padding and renormalises.
ResizeAxis resizeAxis(const ResizeMode &m, int64_t in, int64_t out, double scale,
                      double roiStart, double roiEnd) {
  ResizeAxis axis;
  const int64_t n = m.mode == "cubic" ? 4 : 2, pad = (n + 1) / 2, limit = in + 2 * pad;
  axis.taps = n;
  const double resized = scale * double(in), last = double(in - 1);
  for (int64_t o = 0; o < out; ++o) {
    const double y = double(o);
    double x = 0;
    if (m.transform == "align_corners")
      x = resized == 1 ? 0 : y * last / (resized - 1);
    else if (m.transform == "asymmetric")
      x = y / scale;
    else if (m.transform == "tf_crop_and_resize")
      x = (resized == 1 ? (roiEnd - roiStart) * last / 2
                        : y * (roiEnd - roiStart) * last / (resized - 1)) +
          roiStart * last;
    else if (m.transform == "pytorch_half_pixel")
      x = resized == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
    else if (m.transform == "tf_half_pixel_for_nn")
      x = (y + 0.5) / scale;
    else // half_pixel
      x = (y + 0.5) / scale - 0.5;
    const bool outside = m.transform == "tf_crop_and_resize" && (x < 0 || x > last);
    axis.extrapolate.push_back(outside);
    const double ratio = x == std::floor(x) ? 1.0 : x - std::floor(x);
    double coeff[4] = {};
    if (m.mode == "cubic") {
      const double a = m.cubicA, r = ratio, s = 1 - ratio;
      coeff[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
      coeff[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
      coeff[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
      coeff[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
    } else if (m.mode == "linear") {
      coeff[0] = 1 - ratio;
      coeff[1] = ratio;
    } else {
      bool up = true; // a whole x and ceil: the upper neighbour, which is x itself
      if (ratio != 1.0) {
        if (m.nearest == "round_prefer_floor")
          up = ratio > 0.5;
        else if (m.nearest == "round_prefer_ceil")
          up = ratio >= 0.5;
        else if (m.nearest == "floor")
          up = false;
      }
      coeff[0] = up ? 0 : 1;
      coeff[1] = up ? 1 : 0;
    }
    // The n nearest padded indices to x + pad: they lie within n of x clamped to the range.
    const double xp = x + double(pad);
    const double clamped = std::min(std::max(xp, 0.0), double(limit - 1));
    const int64_t from = std::max<int64_t>(0, int64_t(std::floor(clamped)) - n);
    const int64_t to = std::min<int64_t>(limit - 1, int64_t(std::floor(clamped)) + n);
    llvm::SmallVector<int64_t, 16> near;
    for (int64_t c = from; c <= to; ++c)
      near.push_back(c);
    std::stable_sort(near.begin(), near.end(), [&](int64_t a, int64_t b) {
      return std::fabs(xp - double(a)) < std::fabs(xp - double(b));
    });
    near.resize(size_t(n));
    std::sort(near.begin(), near.end());
    double sum = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = near[size_t(k)] - pad;
      if (m.excludeOutside && (idx < 0 || idx >= in))
        coeff[k] = 0;
      sum += coeff[k];
    }
    for (int64_t k = 0; k < n; ++k) {
      axis.index.push_back(std::min(std::max<int64_t>(near[size_t(k)] - pad, 0), in - 1));
      axis.weight.push_back(outside ? 0.0 : m.excludeOutside ? coeff[k] / sum : coeff[k]);
    }
  }
  return axis;
}

/// Applies one axis's taps to x along `axis`: one gather when every coordinate takes one
/// point whole (nearest, or whole source coordinates), else the sum of a gather per tap
/// times its weights, then the extrapolation value where it applies. Null after an error.
Value applyResizeAxis(NodeContext &ctx, Value x, int64_t axis, const ResizeAxis &r,
                      double extrapolation) {
  RankedTensorType type = llvm::cast<RankedTensorType>(x.getType());
  const int64_t out = int64_t(r.extrapolate.size()), rank = type.getRank();
  std::optional<ElemKind> kind = kindOf(type.getElementType());
  if (!kind) {
    (void)ctx.unsupported("element type of the data");
    return Value();
  }
  llvm::SmallVector<int64_t> along(size_t(rank), 1);
  along[size_t(axis)] = out;
  auto gatherAt = [&](llvm::ArrayRef<int64_t> index) {
    return ctx.create<GatherOp>({x, ctx.constant(HostTensor::fromInts(ElemKind::I64, {out},
                                                                       index))},
                                {ctx.i64Attr("axis", axis)});
  };
  // Each coordinate's one point taken whole, if it has one.
  llvm::SmallVector<int64_t> single;
  for (int64_t o = 0; o < out; ++o) {
    int64_t pick = -1;
    for (int64_t k = 0; k < r.taps; ++k) {
      double w = r.weight[size_t(o * r.taps + k)];
      if (w == 0)
        continue;
      pick = pick == -1 && w == 1 ? r.index[size_t(o * r.taps + k)] : -2;
    }
    if (pick < 0 && !r.extrapolate[size_t(o)])
      break;
    single.push_back(std::max<int64_t>(pick, 0));
  }
  Value y;
  if (int64_t(single.size()) == out) {
    y = gatherAt(single);
  } else {
    for (int64_t k = 0; k < r.taps; ++k) {
      llvm::SmallVector<int64_t> index;
      llvm::SmallVector<double> weight;
      bool any = false, ones = true;
      for (int64_t o = 0; o < out; ++o) {
        index.push_back(r.index[size_t(o * r.taps + k)]);
        weight.push_back(r.weight[size_t(o * r.taps + k)]);
        any |= weight.back() != 0;
        ones &= weight.back() == 1;
      }
      if (!any)
        continue;
      Value term = gatherAt(index);
      if (term && !ones)
        term = ctx.create<MulOp>({term, ctx.constant(HostTensor::fromDoubles(*kind, along,
                                                                             weight))});
      y = !term ? Value() : y ? ctx.create<AddOp>({y, term}) : term;
      if (!y)
        return Value();
    }
    if (!y) // every coordinate extrapolated
      y = gatherAt(llvm::SmallVector<int64_t>(size_t(out), 0));
  }
  if (y && llvm::is_contained(r.extrapolate, true)) {
    llvm::SmallVector<int64_t> mask(r.extrapolate.begin(), r.extrapolate.end());
    Value where = ctx.constant(HostTensor::fromInts(ElemKind::Bool, along, mask));
    y = ctx.create<WhereOp>({where, ctx.scalar(extrapolation, type.getElementType()), y});
  }
  return y;
}

/// Resize (opset 13): nearest, linear and cubic, every coordinate transformation mode,
/// scales or sizes (and roi) as compile-time constants. Each resized axis becomes gathers of
/// constant indices and weighted sums (ResizeAxis), innermost axis first as ONNX's reference
/// computes; its gradient is the gathers' scatter-adds of the weighted gradient.
LogicalResult importResize(NodeContext &ctx) {
  RankedTensorType type = ctx.inputType(0);
  if (!type)
    return failure();
  ResizeMode m;
  m.mode = ctx.stringAttr("mode", "nearest");
  m.transform = ctx.stringAttr("coordinate_transformation_mode", "half_pixel");
  m.nearest = ctx.stringAttr("nearest_mode", "round_prefer_floor");
  m.cubicA = ctx.floatAttr("cubic_coeff_a", -0.75);
  m.excludeOutside = ctx.intAttr("exclude_outside", 0) != 0;
  m.extrapolation = ctx.floatAttr("extrapolation_value", 0.0);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    return ctx.unsupported("mode '" + m.mode + "'");
  static const char *const kTransforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                            "asymmetric", "tf_half_pixel_for_nn",
                                            "tf_crop_and_resize"};
  if (!llvm::is_contained(kTransforms, m.transform))
    return ctx.unsupported("coordinate_transformation_mode '" + m.transform + "'");
  if (m.nearest != "round_prefer_floor" && m.nearest != "round_prefer_ceil" &&
      m.nearest != "floor" && m.nearest != "ceil")
    return ctx.unsupported("nearest_mode '" + m.nearest + "'");
  if (m.mode != "nearest" && failed(ctx.requireFloatInput(0)))
    return failure();
  const int64_t rank = type.getRank();
  llvm::SmallVector<double> scales;
  if (ctx.hasInput(2)) {
    const HostTensor *t = ctx.requireConstInput(2, "scales");
    if (!t)
      return failure();
    for (int64_t i = 0; i < t->numElements(); ++i)
      scales.push_back(t->getDouble(i));
  }
  llvm::SmallVector<int64_t> sizes;
  if (ctx.hasInput(3)) {
    auto t = ctx.requireIntsInput(3, "sizes");
    if (!t)
      return failure();
    sizes = *t;
  }
  if (scales.empty() == sizes.empty())
    return ctx.error("exactly one of scales and sizes must be given");
  if ((!scales.empty() && int64_t(scales.size()) != rank) ||
      (!sizes.empty() && int64_t(sizes.size()) != rank))
    return ctx.error((scales.empty() ? "sizes" : "scales") + llvm::Twine(" needs ") +
                     llvm::Twine(rank) + " entries, one per dimension");
  llvm::SmallVector<double> roi(size_t(2 * rank), 0.0);
  for (int64_t d = 0; d < rank; ++d)
    roi[size_t(rank + d)] = 1.0;
  if (m.transform == "tf_crop_and_resize") {
    const HostTensor *t = ctx.hasInput(1) ? ctx.requireConstInput(1, "roi") : nullptr;
    if (!t)
      return ctx.hasInput(1) ? failure() : ctx.error("tf_crop_and_resize needs roi");
    if (t->numElements() != 2 * rank)
      return ctx.error("roi needs " + llvm::Twine(2 * rank) + " entries (starts, then ends)");
    for (int64_t i = 0; i < 2 * rank; ++i)
      roi[size_t(i)] = t->getDouble(i);
  }
  constexpr int64_t kMaxAxis = int64_t(1) << 20; // the taps are constants in the plan
  llvm::SmallVector<int64_t> outShape;
  llvm::SmallVector<double> scale;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t in = type.getDimSize(d);
    double s = 0;
    int64_t out = 0;
    if (!sizes.empty()) {
      out = sizes[size_t(d)];
      s = in > 0 ? double(out) / double(in) : 0;
    } else {
      s = scales[size_t(d)];
      if (!(s > 0) || !(s * double(in) < double(kMaxAxis)))
        return ctx.error("scale " + llvm::Twine(shortDouble(s)) + " of dimension " + llvm::Twine(d) +
                         " must be > 0 and give at most 2^20 elements");
      out = int64_t(s * double(in));
    }
    if (out < 1 || out > kMaxAxis || in < 1)
      return ctx.error("dimension " + llvm::Twine(d) + " would resize " + llvm::Twine(in) +
                       " elements to " + llvm::Twine(out) + " (1 to 2^20 each)");
    outShape.push_back(out);
    scale.push_back(s);
  }
  Value y = ctx.input(0);
  for (int64_t d = rank - 1; d >= 0 && y; --d) {
    const int64_t in = type.getDimSize(d), out = outShape[size_t(d)];
    ResizeAxis r = resizeAxis(m, in, out, scale[size_t(d)], roi[size_t(d)],
                              roi[size_t(rank + d)]);
    bool identity = out == in && !llvm::is_contained(r.extrapolate, true);
    for (int64_t o = 0; identity && o < out; ++o)
      for (int64_t k = 0; k < r.taps; ++k) {
        double w = r.weight[size_t(o * r.taps + k)];
        identity &= w == 0 || (w == 1 && r.index[size_t(o * r.taps + k)] == o);
      }
    if (!identity)
      y = applyResizeAxis(ctx, y, d, r, m.extrapolation);
  }
  return ctx.setResult(y);
}

} // namespace

void registerResizeOps(OpImporterMap &map) { map["Resize"] = importResize; }

} // namespace plait::onnx_import
