// Shape rules (type inference) and verifiers of the plait ops.
#include "ir/PlaitDialect.h"
#include "ir/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace plait {
namespace {

RankedTensorType rankedType(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// Emits an error at `loc` (when present) and returns failure.
LogicalResult inferError(std::optional<Location> loc, const llvm::Twine &message) {
  return emitOptionalError(loc, message);
}

LogicalResult inferBroadcast(std::optional<Location> loc, Value lhs, Value rhs,
                             Type resultElement, SmallVectorImpl<Type> &results) {
  auto a = rankedType(lhs), b = rankedType(rhs);
  if (a.getElementType() != b.getElementType())
    return inferError(loc, "operands have different element types " +
                               llvm::Twine(typeString(a.getElementType())) + " and " +
                               typeString(b.getElementType()));
  auto shape = broadcastShapes(a.getShape(), b.getShape());
  if (!shape)
    return inferError(loc, "shapes " + shapeToString(a.getShape()) + " and " +
                               shapeToString(b.getShape()) + " do not broadcast");
  results.push_back(RankedTensorType::get(*shape, resultElement ? resultElement
                                                                : a.getElementType()));
  return success();
}

/// Checks that `attr` has `count` entries, each >= `minValue`.
LogicalResult checkArray(std::optional<Location> loc, StringRef name, ArrayRef<int64_t> attr,
                         size_t count, int64_t minValue) {
  if (attr.size() != count)
    return inferError(loc, "'" + name + "' must have " + llvm::Twine(count) + " entries, got " +
                               llvm::Twine(attr.size()));
  for (int64_t v : attr)
    if (v < minValue)
      return inferError(loc, "'" + name + "' entries must be >= " + llvm::Twine(minValue));
  return success();
}

LogicalResult inferReduce(std::optional<Location> loc, Value x, ArrayRef<int64_t> axes,
                          bool keepdims, Type element, SmallVectorImpl<Type> &results) {
  auto type = rankedType(x);
  int64_t rank = type.getRank();
  llvm::SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    auto norm = normalizeAxis(axis, rank);
    if (!norm)
      return inferError(loc, "axis " + llvm::Twine(axis) + " is out of range for rank " +
                                 llvm::Twine(rank));
    if (reduced[*norm])
      return inferError(loc, "axis " + llvm::Twine(axis) + " is repeated");
    reduced[*norm] = true;
  }
  llvm::SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      shape.push_back(type.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  results.push_back(RankedTensorType::get(shape, element ? element : type.getElementType()));
  return success();
}

/// Verifies that [axis, rank) of `x` is normalisable and that `param` has that trailing shape.
LogicalResult verifyNormParam(Operation *op, Value x, int64_t axis, Value param,
                              StringRef paramName) {
  auto type = rankedType(x);
  auto norm = normalizeAxis(axis, type.getRank());
  if (!norm)
    return op->emitOpError("axis ") << axis << " is out of range for rank " << type.getRank();
  auto expected = type.getShape().drop_front(*norm);
  auto got = rankedType(param);
  if (got.getShape() != expected)
    return op->emitOpError("'") << paramName << "' has shape " << shapeToString(got.getShape())
                                << ", expected the normalised shape " << shapeToString(expected);
  if (got.getElementType() != type.getElementType())
    return op->emitOpError("'") << paramName << "' element type " << got.getElementType()
                                << " differs from the input's " << type.getElementType();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  if (getValue() && getInit())
    return emitOpError("has both 'value' and 'init'; give one");
  if (!getValue() && !getInit())
    return emitOpError("'") << getName() << "' has neither 'value' nor 'init'";
  if (auto value = getValueAttr(); value && value.getType() != getType())
    return emitOpError("value type ") << value.getType() << " differs from result type "
                                      << getType();
  if (auto init = getInit()) {
    StringRef spec = *init;
    if (spec != "zeros" && spec != "ones" && !spec.starts_with("normal:") &&
        !spec.starts_with("uniform:"))
      return emitOpError("unknown initializer '")
             << spec << "' (expected zeros, ones, normal:STD or uniform:BOUND)";
    if (!llvm::isa<FloatType>(getType().getElementType()) && spec != "zeros" && spec != "ones")
      return emitOpError("initializer '") << spec << "' needs a float element type";
  }
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                           Adaptor adaptor, SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getValue().getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

#define PLAIT_BINARY_INFER(OP, RESULT_ELEMENT)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,        \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {         \
    (void)context;                                                                              \
    return inferBroadcast(loc, adaptor.getLhs(), adaptor.getRhs(), RESULT_ELEMENT, results);    \
  }
PLAIT_BINARY_INFER(AddOp, Type())
PLAIT_BINARY_INFER(SubOp, Type())
PLAIT_BINARY_INFER(MulOp, Type())
PLAIT_BINARY_INFER(DivOp, Type())
PLAIT_BINARY_INFER(PowOp, Type())
PLAIT_BINARY_INFER(MaxOp, Type())
PLAIT_BINARY_INFER(MinOp, Type())
PLAIT_BINARY_INFER(ModOp, Type())
PLAIT_BINARY_INFER(AndOp, Type())
PLAIT_BINARY_INFER(OrOp, Type())
PLAIT_BINARY_INFER(XorOp, Type())
PLAIT_BINARY_INFER(EqualOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(LessOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(LessEqualOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(GreaterOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(GreaterEqualOp, IntegerType::get(context, 1))
#undef PLAIT_BINARY_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX()), y = rankedType(adaptor.getY());
  if (x.getElementType() != y.getElementType())
    return inferError(loc, "x and y have different element types");
  auto xy = broadcastShapes(x.getShape(), y.getShape());
  auto all = xy ? broadcastShapes(rankedType(adaptor.getCond()).getShape(), *xy) : std::nullopt;
  if (!all)
    return inferError(loc, "cond, x and y shapes do not broadcast");
  results.push_back(RankedTensorType::get(*all, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

#define PLAIT_REDUCE_INFER(OP)                                                                 \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc,              \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {        \
    return inferReduce(loc, adaptor.getX(), adaptor.getAxes(), adaptor.getKeepdims(), Type(),  \
                       results);                                                               \
  }
PLAIT_REDUCE_INFER(ReduceSumOp)
PLAIT_REDUCE_INFER(ReduceMeanOp)
PLAIT_REDUCE_INFER(ReduceMaxOp)
PLAIT_REDUCE_INFER(ReduceMinOp)
PLAIT_REDUCE_INFER(ReduceProdOp)
#undef PLAIT_REDUCE_INFER

#define PLAIT_ARG_INFER(OP)                                                                    \
  LogicalResult OP::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,       \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {        \
    int64_t axis = adaptor.getAxis();                                                          \
    return inferReduce(loc, adaptor.getX(), ArrayRef<int64_t>(axis), adaptor.getKeepdims(),    \
                       IntegerType::get(context, 64), results);                                \
  }
PLAIT_ARG_INFER(ArgMaxOp)
PLAIT_ARG_INFER(ArgMinOp)
#undef PLAIT_ARG_INFER

LogicalResult SoftmaxOp::verify() {
  if (!normalizeAxis(getAxis(), getType().getRank()))
    return emitOpError("axis ") << getAxis() << " is out of range for rank "
                                << getType().getRank();
  return success();
}

LogicalResult LogSoftmaxOp::verify() {
  if (!normalizeAxis(getAxis(), getType().getRank()))
    return emitOpError("axis ") << getAxis() << " is out of range for rank "
                                << getType().getRank();
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (getResult().getType() != getX().getType())
    return emitOpError("result type ") << getResult().getType() << " differs from input type "
                                       << getX().getType();
  if (failed(verifyNormParam(*this, getX(), getAxis(), getScale(), "scale")))
    return failure();
  if (getBias() && failed(verifyNormParam(*this, getX(), getAxis(), getBias(), "bias")))
    return failure();
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (getResult().getType() != getX().getType())
    return emitOpError("result type ") << getResult().getType() << " differs from input type "
                                       << getX().getType();
  return verifyNormParam(*this, getX(), getAxis(), getScale(), "scale");
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto a = rankedType(adaptor.getLhs()), b = rankedType(adaptor.getRhs());
  if (a.getElementType() != b.getElementType())
    return inferError(loc, "operands have different element types");
  if (a.getRank() == 0 || b.getRank() == 0)
    return inferError(loc, "operands must have rank >= 1");
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  bool promoteA = as.size() == 1, promoteB = bs.size() == 1;
  if (promoteA)
    as.insert(as.begin(), 1);
  if (promoteB)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], n = bs.back();
  if (k != k2)
    return inferError(loc, "contracting dimensions differ: " + shapeToString(a.getShape()) +
                               " times " + shapeToString(b.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2));
  if (!batch)
    return inferError(loc, "batch dimensions do not broadcast");
  SmallVector<int64_t> shape(*batch);
  if (!promoteA)
    shape.push_back(m);
  if (!promoteB)
    shape.push_back(n);
  results.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return inferError(loc, "a and b must be 2-D");
  if (a.getElementType() != b.getElementType())
    return inferError(loc, "operands have different element types");
  int64_t m = adaptor.getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t k = adaptor.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t k2 = adaptor.getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = adaptor.getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  if (k != k2)
    return inferError(loc, "contracting dimensions differ (" + llvm::Twine(k) + " vs " +
                               llvm::Twine(k2) + ")");
  if (Value c = adaptor.getC()) {
    auto ct = rankedType(c);
    if (ct.getElementType() != a.getElementType())
      return inferError(loc, "c has a different element type");
    if (!broadcastsTo(ct.getShape(), {m, n}))
      return inferError(loc, "c of shape " + shapeToString(ct.getShape()) +
                                 " does not broadcast to " + shapeToString({m, n}));
  }
  results.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX()), w = rankedType(adaptor.getW());
  if (x.getRank() != 4 || w.getRank() != 4)
    return inferError(loc, "x and w must be 4-D (NCHW and MCkHkW)");
  if (x.getElementType() != w.getElementType())
    return inferError(loc, "x and w have different element types");
  int64_t group = adaptor.getGroup();
  if (group < 1 || x.getDimSize(1) % group || w.getDimSize(0) % group)
    return inferError(loc, "group " + llvm::Twine(group) + " must divide channels " +
                               llvm::Twine(x.getDimSize(1)) + " and filters " +
                               llvm::Twine(w.getDimSize(0)));
  if (x.getDimSize(1) / group != w.getDimSize(1))
    return inferError(loc, "w expects " + llvm::Twine(w.getDimSize(1) * group) +
                               " input channels, x has " + llvm::Twine(x.getDimSize(1)));
  if (failed(checkArray(loc, "strides", adaptor.getStrides(), 2, 1)) ||
      failed(checkArray(loc, "pads", adaptor.getPads(), 4, 0)) ||
      failed(checkArray(loc, "dilations", adaptor.getDilations(), 2, 1)))
    return failure();
  if (Value bias = adaptor.getBias()) {
    auto bt = rankedType(bias);
    if (bt.getRank() != 1 || bt.getDimSize(0) != w.getDimSize(0))
      return inferError(loc, "bias must have shape [" + llvm::Twine(w.getDimSize(0)) + "]");
  }
  auto s = adaptor.getStrides(), p = adaptor.getPads(), d = adaptor.getDilations();
  int64_t h = windowOutputSize(x.getDimSize(2), w.getDimSize(2), s[0], p[0], p[2], d[0], false);
  int64_t wd = windowOutputSize(x.getDimSize(3), w.getDimSize(3), s[1], p[1], p[3], d[1], false);
  if (h < 1 || wd < 1)
    return inferError(loc, "the kernel does not fit the padded input");
  results.push_back(
      RankedTensorType::get({x.getDimSize(0), w.getDimSize(0), h, wd}, x.getElementType()));
  return success();
}

namespace {
LogicalResult inferPool(std::optional<Location> loc, Value xv, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                        ArrayRef<int64_t> dilations, bool ceilMode,
                        SmallVectorImpl<Type> &results) {
  auto x = rankedType(xv);
  if (x.getRank() != 4)
    return inferError(loc, "x must be 4-D (NCHW)");
  if (failed(checkArray(loc, "kernel", kernel, 2, 1)) ||
      failed(checkArray(loc, "strides", strides, 2, 1)) ||
      failed(checkArray(loc, "pads", pads, 4, 0)) ||
      failed(checkArray(loc, "dilations", dilations, 2, 1)))
    return failure();
  for (int i = 0; i < 2; ++i)
    if (pads[i] >= dilations[i] * (kernel[i] - 1) + 1 ||
        pads[i + 2] >= dilations[i] * (kernel[i] - 1) + 1)
      return inferError(loc, "padding must be smaller than the window");
  int64_t h = windowOutputSize(x.getDimSize(2), kernel[0], strides[0], pads[0], pads[2],
                               dilations[0], ceilMode);
  int64_t w = windowOutputSize(x.getDimSize(3), kernel[1], strides[1], pads[1], pads[3],
                               dilations[1], ceilMode);
  if (h < 1 || w < 1)
    return inferError(loc, "the window does not fit the padded input");
  results.push_back(
      RankedTensorType::get({x.getDimSize(0), x.getDimSize(1), h, w}, x.getElementType()));
  return success();
}
} // namespace

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  return inferPool(loc, adaptor.getX(), adaptor.getKernel(), adaptor.getStrides(),
                   adaptor.getPads(), adaptor.getDilations(), adaptor.getCeilMode(), results);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  int64_t ones[2] = {1, 1};
  return inferPool(loc, adaptor.getX(), adaptor.getKernel(), adaptor.getStrides(),
                   adaptor.getPads(), ones, adaptor.getCeilMode(), results);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  auto in = getX().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type from ") << in.getElementType() << " to "
                                                         << out.getElementType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ") << shapeToString(in.getShape()) << " ("
                                          << in.getNumElements() << " elements) to "
                                          << shapeToString(out.getShape()) << " ("
                                          << out.getNumElements() << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  auto perm = adaptor.getPerm();
  if ((int64_t)perm.size() != x.getRank())
    return inferError(loc, "perm has " + llvm::Twine(perm.size()) + " entries for rank " +
                               llvm::Twine(x.getRank()));
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.getRank() || seen[p])
      return inferError(loc, "perm is not a permutation of 0.." + llvm::Twine(x.getRank() - 1));
    seen[p] = true;
    shape.push_back(x.getDimSize(p));
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  auto in = getX().getType(), out = getType();
  if (in.getElementType() != out.getElementType())
    return emitOpError("changes the element type");
  if (!broadcastsTo(in.getShape(), out.getShape()))
    return emitOpError("cannot broadcast ") << shapeToString(in.getShape()) << " to "
                                            << shapeToString(out.getShape());
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  auto starts = adaptor.getStarts(), ends = adaptor.getEnds(), steps = adaptor.getSteps();
  size_t rank = x.getRank();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return inferError(loc, "starts, ends and steps need one entry per dimension (" +
                               llvm::Twine(rank) + ")");
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = x.getDimSize(d), b = starts[d], e = ends[d], s = steps[d];
    if (s == 0)
      return inferError(loc, "step of dimension " + llvm::Twine(d) + " is zero");
    bool ok = s > 0 ? (0 <= b && b <= e && e <= n) : (-1 <= e && e <= b && b <= n - 1);
    if (!ok)
      return inferError(loc, "slice [" + llvm::Twine(b) + ":" + llvm::Twine(e) + ":" +
                                 llvm::Twine(s) + "] of dimension " + llvm::Twine(d) +
                                 " (size " + llvm::Twine(n) + ") is not normalised");
    shape.push_back(s > 0 ? (e - b + s - 1) / s : (b - e + (-s) - 1) / (-s));
  }
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  auto pads = adaptor.getPads();
  if (failed(checkArray(loc, "pads", pads, 2 * x.getRank(), 0)))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < x.getRank(); ++d)
    shape.push_back(x.getDimSize(d) + pads[d] + pads[d + x.getRank()]);
  results.push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto inputs = adaptor.getInputs();
  if (inputs.empty())
    return inferError(loc, "needs at least one input");
  auto first = rankedType(inputs[0]);
  auto axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (!axis)
    return inferError(loc, "axis " + llvm::Twine(adaptor.getAxis()) + " is out of range");
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    auto t = rankedType(v);
    if (t.getElementType() != first.getElementType() || t.getRank() != first.getRank())
      return inferError(loc, "inputs differ in element type or rank");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != *axis && t.getDimSize(d) != first.getDimSize(d))
        return inferError(loc, "inputs differ in dimension " + llvm::Twine(d));
    shape[*axis] += t.getDimSize(*axis);
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto x = rankedType(adaptor.getX());
  auto axis = normalizeAxis(adaptor.getAxis(), x.getRank());
  if (!axis)
    return inferError(loc, "axis " + llvm::Twine(adaptor.getAxis()) + " is out of range");
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return inferError(loc, "sizes must be >= 0");
    total += size;
  }
  if (total != x.getDimSize(*axis))
    return inferError(loc, "sizes add up to " + llvm::Twine(total) + ", dimension is " +
                               llvm::Twine(x.getDimSize(*axis)));
  for (int64_t size : adaptor.getSizes()) {
    SmallVector<int64_t> shape(x.getShape());
    shape[*axis] = size;
    results.push_back(RankedTensorType::get(shape, x.getElementType()));
  }
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  auto data = rankedType(adaptor.getData()), indices = rankedType(adaptor.getIndices());
  if (data.getRank() == 0)
    return inferError(loc, "data must have rank >= 1");
  auto axis = normalizeAxis(adaptor.getAxis(), data.getRank());
  if (!axis)
    return inferError(loc, "axis " + llvm::Twine(adaptor.getAxis()) + " is out of range");
  SmallVector<int64_t> shape(data.getShape().take_front(*axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(*axis + 1));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult CastOp::verify() {
  if (getX().getType().getShape() != getType().getShape())
    return emitOpError("changes the shape from ") << shapeToString(getX().getType().getShape())
                                                  << " to " << shapeToString(getType().getShape());
  return success();
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("needs rank >= 2, got ") << getType().getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {
template <typename Adaptor>
LogicalResult inferLoss(std::optional<Location> loc, Adaptor adaptor,
                        SmallVectorImpl<Type> &results) {
  auto input = rankedType(adaptor.getInput()), target = rankedType(adaptor.getTarget());
  if (input.getRank() < 2)
    return inferError(loc, "input must be [N, C, ...], got rank " + llvm::Twine(input.getRank()));
  SmallVector<int64_t> expected{input.getDimSize(0)};
  llvm::append_range(expected, input.getShape().drop_front(2));
  if (target.getShape() != ArrayRef<int64_t>(expected))
    return inferError(loc, "target has shape " + shapeToString(target.getShape()) +
                               ", expected " + shapeToString(expected));
  if (Value weight = adaptor.getWeight()) {
    auto wt = rankedType(weight);
    if (wt.getRank() != 1 || wt.getDimSize(0) != input.getDimSize(1))
      return inferError(loc, "weight must have shape [" + llvm::Twine(input.getDimSize(1)) + "]");
  }
  StringRef reduction = adaptor.getReduction();
  if (reduction == "none")
    results.push_back(RankedTensorType::get(expected, input.getElementType()));
  else if (reduction == "mean" || reduction == "sum")
    results.push_back(RankedTensorType::get({}, input.getElementType()));
  else
    return inferError(loc, "reduction must be mean, sum or none, got '" + reduction + "'");
  return success();
}
} // namespace

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                      Adaptor adaptor,
                                                      SmallVectorImpl<Type> &results) {
  return inferLoss(loc, adaptor, results);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &results) {
  return inferLoss(loc, adaptor, results);
}

} // namespace plait

#define GET_OP_CLASSES
#include "ir/PlaitOps.cpp.inc"
