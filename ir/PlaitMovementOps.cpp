// Shape rules (type inference) and verifiers of the data-movement ops (PlaitMovementOps.td):
// reshapes, transposes, broadcasts, slices, pads, concatenation and splits, gathers, casts and
// the ops that fill a tensor (dropout masks, random draws, trilu).
#include <cmath>

#include "ir/OpShapeRule.h"
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace plait {
namespace {

/// Whether the f64 attribute `value` is exactly representable in integer type `type`
/// (i1: 0 or 1; other widths: a whole number in the signed range).
bool fitsInteger(double value, IntegerType type) {
  if (!std::isfinite(value) || std::trunc(value) != value)
    return false;
  if (type.getWidth() == 1)
    return value == 0 || value == 1;
  double limit = std::ldexp(1.0, type.getWidth() - 1); // 2^(w-1), exact in double
  return value >= -limit && value < limit;
}

} // namespace

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getX().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  auto inCount = numElements(in.getShape()), outCount = numElements(out.getShape());
  if (!inCount || !outCount)
    return emitOpError("has a shape with more than 2^63 - 1 elements");
  if (*inCount != *outCount)
    return emitOpError("cannot reshape ")
           << shapeToString(in.getShape()) << " (" << *inCount << " elements) to "
           << shapeToString(out.getShape()) << " (" << *outCount << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto x = rankedType(adaptor.getX());
  auto perm = adaptor.getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return rule.fail("perm has ", perm.size(), " entries for rank ", x.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return rule.fail("perm is not a permutation of 0..", x.getRank() - 1);
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = getX().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (!broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError("cannot broadcast ")
           << shapeToString(in.getShape()) << " to " << shapeToString(out.getShape());
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto x = rankedType(adaptor.getX());
  auto starts = adaptor.getStarts(), ends = adaptor.getEnds(), steps = adaptor.getSteps();
  size_t rank = x.getRank();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return rule.fail("starts, ends and steps need one entry per dimension (", rank, "), got ",
                     starts.size(), ", ", ends.size(), " and ", steps.size());
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = x.getDimSize(d), b = starts[d], e = ends[d], s = steps[d];
    if (s == 0)
      return rule.fail("step of dimension ", d, " is zero");
    bool ok = s > 0 ? (0 <= b && b <= e && e <= n) : (-1 <= e && e <= b && b <= n - 1);
    if (!ok)
      return rule.fail("slice [", b, ":", e, ":", s, "] of dimension ", d, " (size ", n,
                       ") is not normalised");
    // ceil(|e - b| / |s|), written so that no step (not even INT64_MIN) overflows.
    uint64_t distance = s > 0 ? uint64_t(e - b) : uint64_t(b - e);
    uint64_t stride = s > 0 ? uint64_t(s) : uint64_t(0) - uint64_t(s);
    shape.push_back(int64_t(distance == 0 ? 0 : (distance - 1) / stride + 1));
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto x = rankedType(adaptor.getX());
  auto pads = adaptor.getPads();
  if (failed(checkArray(rule, "pads", pads, 2 * x.getRank(), 0)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d) {
    int64_t size;
    if (llvm::AddOverflow(x.getDimSize(d), pads[d], size) ||
        llvm::AddOverflow(size, pads[d + x.getRank()], size))
      return rule.fail("padded dimension ", d, " overflows int64");
    shape.push_back(size);
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult PadOp::verify() {
  auto element = llvm::dyn_cast<IntegerType>(getType().getElementType());
  double value = getValue().convertToDouble();
  if (element && !fitsInteger(value, element))
    return emitOpError("pad value ") << value << " is not representable in " << element;
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return rule.fail("needs at least one input");
  auto first = rankedType(inputs[0]);
  int64_t axisAttr = adaptor.getAxis(); // I64Attr getters return uint64_t
  auto axis = normalizeAxis(axisAttr, first.getRank());
  if (!axis)
    return rule.fail("axis ", axisAttr, " is out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (auto [i, v] : llvm::enumerate(inputs.drop_front())) {
    auto t = rankedType(v);
    if (t.getElementType() != first.getElementType())
      return rule.fail("input ", i + 1, " has element type ", t.getElementType(), ", input 0 has ",
                       first.getElementType());
    if (t.getRank() != first.getRank())
      return rule.fail("input ", i + 1, " has rank ", t.getRank(), ", input 0 has rank ",
                       first.getRank());
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != *axis && t.getDimSize(d) != first.getDimSize(d))
        return rule.fail("input ", i + 1, " has shape ", shapeToString(t.getShape()),
                         ", input 0 has ", shapeToString(first.getShape()),
                         "; they may differ only in dimension ", *axis);
    if (llvm::AddOverflow(shape[*axis], t.getDimSize(*axis), shape[*axis]))
      return rule.fail("concatenated dimension overflows int64");
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto x = rankedType(adaptor.getX());
  int64_t axisAttr = adaptor.getAxis(); // I64Attr getters return uint64_t
  auto axis = normalizeAxis(axisAttr, x.getRank());
  if (!axis)
    return rule.fail("axis ", axisAttr, " is out of range for rank ", x.getRank());
  auto sizes = adaptor.getSizes();
  if (sizes.empty())
    return rule.fail("needs at least one size");
  int64_t dim = x.getDimSize(*axis), total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return rule.fail("sizes must be >= 0, got ", size);
    // total <= dim here, so neither side of the comparison overflows.
    if (size > dim - total)
      return rule.fail("sizes add up to more than dimension ", *axis, " (size ", dim, ")");
    total += size;
  }
  if (total != dim)
    return rule.fail("sizes add up to ", total, ", dimension ", *axis, " has size ", dim);
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(x.getShape());
    shape[*axis] = size;
    results.push_back(RankedTensorType::get(shape, x.getElementType()));
  }
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto data = rankedType(adaptor.getData()), indices = rankedType(adaptor.getIndices());
  if (data.getRank() == 0)
    return rule.fail("data must have rank >= 1");
  int64_t axisAttr = adaptor.getAxis(); // I64Attr getters return uint64_t
  auto axis = normalizeAxis(axisAttr, data.getRank());
  if (!axis)
    return rule.fail("axis ", axisAttr, " is out of range for rank ", data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherOp::verify() {
  if (!getPaddingIdx())
    return success();
  auto padding = static_cast<int64_t>(*getPaddingIdx()); // I64Attr getters return uint64_t
  auto data = cast<RankedTensorType>(getData().getType());
  auto axis = static_cast<int64_t>(getAxis());
  if (normalizeAxis(axis, data.getRank()) != 0)
    return emitOpError("padding_idx needs axis 0 (an embedding table's rows), got axis ") << axis;
  int64_t rows = data.getDimSize(0);
  if (padding < -rows || padding >= rows)
    return emitOpError("padding_idx ") << padding << " is not a row of a table of " << rows;
  return success();
}

LogicalResult CastOp::verify() {
  if (getX().getType().getShape() != getType().getShape())
    return emitOpError("changes the shape from ") << shapeToString(getX().getType().getShape())
                                                  << " to " << shapeToString(getType().getShape());
  return success();
}

LogicalResult GroupedCastOp::verify() {
  if (getInputs().empty() || getInputs().size() != getResults().size())
    return emitOpError("has ") << getInputs().size() << " operands and " << getResults().size()
                               << " results, not one result per operand";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getInputs(), getResults()))) {
    auto from = cast<RankedTensorType>(std::get<0>(pair).getType());
    auto to = cast<RankedTensorType>(std::get<1>(pair).getType());
    if (from.getShape() != to.getShape())
      return emitOpError("cast ") << i << " changes the shape from "
                                  << shapeToString(from.getShape()) << " to "
                                  << shapeToString(to.getShape());
    if (!isa<FloatType>(from.getElementType()) || !isa<FloatType>(to.getElementType()))
      return emitOpError("cast ") << i << " from " << from.getElementType() << " to "
                                  << to.getElementType() << " is not between floats";
  }
  return success();
}

LogicalResult DropoutMaskOp::verify() {
  if (getStep().getType().getRank() != 0)
    return emitOpError("step must be a scalar");
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio ") << ratio << " is not in [0, 1)";
  return success();
}

LogicalResult RandomOp::verify() {
  if (getStep().getType().getRank() != 0)
    return emitOpError("step must be a scalar");
  // `a` and `b` are low and high for "uniform", mean and scale for "normal".
  const double a = getA().convertToDouble(), b = getB().convertToDouble();
  const bool finite = std::isfinite(a) && std::isfinite(b);
  if (getDistribution() == "uniform") {
    if (!finite || !(a <= b))
      return emitOpError("uniform bounds [") << a << ", " << b << ") are not finite and ordered";
  } else if (getDistribution() == "normal") {
    if (!finite || b < 0)
      return emitOpError("normal mean ")
             << a << " and scale " << b << " are not finite with scale >= 0";
  } else {
    return emitOpError("distribution '") << getDistribution() << "' is not uniform or normal";
  }
  return success();
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("needs rank >= 2, got ") << getType().getRank();
  return success();
}

} // namespace plait
