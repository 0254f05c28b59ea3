// Shape rules (type inference) and verifiers of the plait ops.
#include "ir/PlaitDialect.h"
#include "ir/OpShapeRule.h"
#include "ir/ShapeRules.h"
#include "codegen/schema/FusedElementwise.h"
#include "codegen/schema/MatmulLayout.h"
#include "llvm/ADT/StringExtras.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;

namespace plait {
namespace {

LogicalResult inferBroadcast(const ShapeRule &rule, Value lhs, Value rhs, Type resultElement,
                             SmallVectorImpl<Type> &results) {
  auto a = rankedType(lhs), b = rankedType(rhs);
  if (a.getElementType() != b.getElementType())
    return rule.fail("operands have different element types ", a.getElementType(), " and ",
                     b.getElementType());
  auto shape = broadcastShapes(a.getShape(), b.getShape());
  if (!shape)
    return rule.fail("shapes ", shapeToString(a.getShape()), " and ",
                     shapeToString(b.getShape()), " do not broadcast");
  results.push_back(RankedTensorType::get(*shape, resultElement ? resultElement
                                                                : a.getElementType()));
  return success();
}

LogicalResult inferReduce(const ShapeRule &rule, Value x, ArrayRef<int64_t> axes,
                          bool keepdims, Type element, SmallVectorImpl<Type> &results) {
  auto type = rankedType(x);
  int64_t rank = type.getRank();
  llvm::SmallVector<bool> reduced(rank, axes.empty());
  for (int64_t axis : axes) {
    auto norm = normalizeAxis(axis, rank);
    if (!norm)
      return rule.fail("axis ", axis, " is out of range for rank ", rank);
    if (reduced[*norm])
      return rule.fail("axis ", axis, " is repeated");
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

} // namespace

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

LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (!(std::isfinite(epsilon) && epsilon > 0))
    return op->emitOpError("epsilon must be a finite number > 0, got ") << epsilon;
  return success();
}

LogicalResult verifyBatchNormOperands(Operation *op, Value x, ValueRange perChannel,
                                      ArrayRef<StringRef> names) {
  auto type = rankedType(x);
  if (type.getRank() < 2)
    return op->emitOpError("'x' must have rank >= 2 ([N, C, ...]), got ") << type;
  const int64_t channels = type.getDimSize(1);
  for (auto [value, name] : llvm::zip(perChannel, names)) {
    auto got = rankedType(value);
    if (got.getRank() != 1 || got.getDimSize(0) != channels)
      return op->emitOpError("'") << name << "' has shape " << shapeToString(got.getShape())
                                  << ", expected " << shapeToString({channels})
                                  << " (x's channels)";
    if (got.getElementType() != type.getElementType())
      return op->emitOpError("'") << name << "' element type " << got.getElementType()
                                  << " differs from the input's " << type.getElementType();
  }
  return success();
}

Type batchNormComputeType(Type element) {
  if (isa<BFloat16Type, Float16Type>(element))
    return Float32Type::get(element.getContext());
  return element;
}

LogicalResult verifyBatchNormVector(Operation *op, Value x, Value vector, StringRef name,
                                    bool multiple) {
  auto type = rankedType(x);
  const int64_t pair = 2 * type.getDimSize(1);
  Type compute = batchNormComputeType(type.getElementType());
  auto got = rankedType(vector);
  const bool shapeOk = got.getRank() == 1 && (multiple ? got.getDimSize(0) >= pair && pair > 0 &&
                                                             got.getDimSize(0) % pair == 0
                                                       : got.getDimSize(0) == pair);
  if (!shapeOk)
    return op->emitOpError("'") << name << "' has shape " << shapeToString(got.getShape())
                                << ", expected " << (multiple ? "[W * " : "[") << pair << "] ("
                                << (multiple ? "each rank's " : "") << "2 values per channel of x)";
  if (got.getElementType() != compute)
    return op->emitOpError("'") << name << "' element type " << got.getElementType()
                                << " is not the compute type " << compute << " of x's "
                                << type.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

namespace {
/// Parses the number after "normal:" or "uniform:" as runtime/ParamInit.cpp does: the whole
/// rest of the spec, finite and >= 0.
bool parseInitScale(StringRef text) {
  double value;
  // getAsDouble returns true on error; it rejects trailing characters.
  return !text.empty() && !text.getAsDouble(value) && std::isfinite(value) && value >= 0;
}
} // namespace

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
    bool known = spec == "zeros" || spec == "ones" ||
                 (spec.starts_with("normal:") && parseInitScale(spec.drop_front(7))) ||
                 (spec.starts_with("uniform:") && parseInitScale(spec.drop_front(8)));
    if (!known)
      return emitOpError("unknown initializer '")
             << spec << "' (expected zeros, ones, normal:STD or uniform:BOUND with a finite "
                        "number >= 0)";
    if (!llvm::isa<FloatType>(getType().getElementType()) && spec != "zeros" && spec != "ones")
      return emitOpError("initializer '") << spec << "' needs a float element type, got "
                                          << getType().getElementType();
  }
  // Params of one name denote one tensor (one plan slot, one checkpoint entry, one random
  // stream), so copies (e.g. made by recomputation) must agree. Checking against the nearest
  // earlier namesake suffices: that one was checked against its own predecessors. Params
  // usually lead the block, so the backward scan is short.
  for (Operation *prev = getOperation()->getPrevNode(); prev; prev = prev->getPrevNode()) {
    auto earlier = llvm::dyn_cast<ParamOp>(prev);
    if (!earlier || earlier.getNameAttr() != getNameAttr())
      continue;
    if (earlier.getType() != getType() || earlier.getValueAttr() != getValueAttr() ||
        earlier.getInitAttr() != getInitAttr())
      return (emitOpError("'") << getName()
                               << "' differs in type or initial value from an earlier param "
                                  "of the same name")
                 .attachNote(earlier.getLoc())
             << "the earlier param";
    break;
  }
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  results.push_back(adaptor.getValue().getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

std::optional<double> splatValue(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult ClampOp::verify() {
  if ((getMin() && getMin()->isNaN()) || (getMax() && getMax()->isNaN()))
    return emitOpError("bounds must not be NaN");
  return success();
}

#define PLAIT_BINARY_INFER(OP, RESULT_ELEMENT)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,        \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {         \
    if (failed(checkShapeRuleInputs(context, loc, adaptor)))                                    \
      return failure();                                                                         \
    return inferBroadcast(ShapeRule(loc, getOperationName()), adaptor.getLhs(),                 \
                          adaptor.getRhs(), RESULT_ELEMENT, results);                           \
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
PLAIT_BINARY_INFER(ShiftLeftOp, Type())
PLAIT_BINARY_INFER(ShiftRightOp, Type())
PLAIT_BINARY_INFER(OrOp, Type())
PLAIT_BINARY_INFER(XorOp, Type())
PLAIT_BINARY_INFER(EqualOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(LessOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(LessEqualOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(GreaterOp, IntegerType::get(context, 1))
PLAIT_BINARY_INFER(GreaterEqualOp, IntegerType::get(context, 1))
#undef PLAIT_BINARY_INFER

LogicalResult WhereOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto cond = rankedType(adaptor.getCond());
  auto x = rankedType(adaptor.getX()), y = rankedType(adaptor.getY());
  if (x.getElementType() != y.getElementType())
    return rule.fail("x and y have different element types ", x.getElementType(), " and ",
                     y.getElementType());
  auto xy = broadcastShapes(x.getShape(), y.getShape());
  auto all = xy ? broadcastShapes(cond.getShape(), *xy) : std::nullopt;
  if (!all)
    return rule.fail("shapes ", shapeToString(cond.getShape()), " (cond), ",
                     shapeToString(x.getShape()), " (x) and ", shapeToString(y.getShape()),
                     " (y) do not broadcast");
  results.push_back(RankedTensorType::get(*all, x.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

#define PLAIT_REDUCE_INFER(OP)                                                                 \
  LogicalResult OP::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,       \
                                     Adaptor adaptor, SmallVectorImpl<Type> &results) {        \
    if (failed(checkShapeRuleInputs(context, loc, adaptor)))                                   \
      return failure();                                                                        \
    return inferReduce(ShapeRule(loc, getOperationName()), adaptor.getX(), adaptor.getAxes(),  \
                       adaptor.getKeepdims(), Type(), results);                                \
  }
PLAIT_REDUCE_INFER(ReduceSumOp)
PLAIT_REDUCE_INFER(ReduceMeanOp)
PLAIT_REDUCE_INFER(ReduceMaxOp)
PLAIT_REDUCE_INFER(ReduceMinOp)
PLAIT_REDUCE_INFER(ReduceProdOp)
#undef PLAIT_REDUCE_INFER

namespace {
/// argmax / argmin: a reduction over one axis to i64 indices. An empty axis has no index to
/// return, so it is rejected unless the result is empty too.
template <typename Adaptor>
LogicalResult inferArg(const ShapeRule &rule, MLIRContext *context, Adaptor adaptor,
                       SmallVectorImpl<Type> &results) {
  int64_t axis = adaptor.getAxis(); // I64Attr getters return uint64_t
  if (failed(inferReduce(rule, adaptor.getX(), ArrayRef<int64_t>(axis), adaptor.getKeepdims(),
                         IntegerType::get(context, 64), results)))
    return failure();
  auto x = rankedType(adaptor.getX());
  int64_t norm = *normalizeAxis(axis, x.getRank());
  if (x.getDimSize(norm) == 0 && llvm::cast<RankedTensorType>(results.back()).getNumElements())
    return rule.fail("axis ", axis, " has size 0, so there is no index to return");
  return success();
}
} // namespace

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  return inferArg(ShapeRule(loc, getOperationName()), context, adaptor, results);
}

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  return inferArg(ShapeRule(loc, getOperationName()), context, adaptor, results);
}

/// top_k: the last axis becomes k (in [0, n]), the indices i64.
LogicalResult TopKOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto x = rankedType(adaptor.getX());
  if (x.getRank() == 0)
    return rule.fail("x must have rank >= 1");
  int64_t k = adaptor.getK(); // I64Attr getters return uint64_t
  int64_t n = x.getShape().back();
  if (k < 0 || k > n)
    return rule.fail("k ", k, " is not in [0, ", n, "], the size of the last axis");
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = k;
  results.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

/// Why `x` does not hold square, non-empty matrices in its last two axes (det, cofactors);
/// empty when it does.
static std::string squareMatricesError(RankedTensorType x) {
  if (x.getRank() < 2)
    return "x must have rank >= 2 (matrices in its last two axes)";
  int64_t rows = x.getShape()[x.getRank() - 2], n = x.getShape().back();
  if (rows != n || n < 1)
    return "the matrices of x must be square and not empty, got " + std::to_string(rows) + " x " +
           std::to_string(n);
  return "";
}

/// det: [..., n, n] -> [...].
LogicalResult DetOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  auto x = rankedType(adaptor.getX());
  if (std::string error = squareMatricesError(x); !error.empty())
    return ShapeRule(loc, getOperationName()).fail(error);
  results.push_back(RankedTensorType::get(x.getShape().drop_back(2), x.getElementType()));
  return success();
}

LogicalResult CofactorsOp::verify() {
  std::string error = squareMatricesError(cast<RankedTensorType>(getX().getType()));
  return error.empty() ? success() : emitOpError(error);
}

namespace {
LogicalResult verifySoftmaxAxis(Operation *op, int64_t axis, int64_t rank) {
  if (!normalizeAxis(axis, rank))
    return op->emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}
} // namespace

LogicalResult SoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getAxis(), getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxAxis(*this, getAxis(), getType().getRank());
}

LogicalResult LayerNormOp::verify() {
  if (getResult().getType() != getX().getType())
    return emitOpError("result type ") << getResult().getType() << " differs from input type "
                                       << getX().getType();
  if (failed(verifyNormParam(*this, getX(), getAxis(), getScale(), "scale")))
    return failure();
  if (getBias() && failed(verifyNormParam(*this, getX(), getAxis(), getBias(), "bias")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult BatchNormOp::verify() {
  if (getY().getType() != getX().getType())
    return emitOpError("'y' has type ")
           << getY().getType() << ", expected the input's " << getX().getType();
  if (failed(verifyBatchNormOperands(*this, getX(), {getScale(), getBias(), getMean(), getVar()},
                                     {"scale", "bias", "mean", "var"})))
    return failure();
  if (getStats()) {
    if (getSync())
      return emitOpError("'sync' and 'stats' exclude each other (plait-shard lowers 'sync' to "
                         "'stats')");
    if (failed(verifyBatchNormVector(*this, getX(), getStats(), "stats", /*multiple=*/true)))
      return failure();
  }
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

LogicalResult BatchNormStatsOp::verify() {
  if (failed(verifyBatchNormOperands(*this, getX(), {}, {})))
    return failure();
  return verifyBatchNormVector(*this, getX(), getStats(), "stats", /*multiple=*/false);
}

LogicalResult RmsNormOp::verify() {
  if (getResult().getType() != getX().getType())
    return emitOpError("result type ") << getResult().getType() << " differs from input type "
                                       << getX().getType();
  if (failed(verifyNormParam(*this, getX(), getAxis(), getScale(), "scale")))
    return failure();
  return verifyEpsilon(*this, getEpsilon().convertToDouble());
}

/// The checks add_layer_norm and add_rms_norm share: x, residual and both results of one
/// type, the scale (and bias) of the normalised shape, epsilon.
static LogicalResult verifyAddNorm(Operation *op, Value x, Value residual, Value scale,
                                   Value bias, int64_t axis, double epsilon) {
  if (residual.getType() != x.getType())
    return op->emitOpError("'residual' has type ") << residual.getType() << ", expected "
                                                   << x.getType() << " (no broadcasting)";
  for (Value r : op->getResults())
    if (r.getType() != x.getType())
      return op->emitOpError("results must have the input's type ") << x.getType() << ", got "
                                                                     << r.getType();
  if (failed(verifyNormParam(op, x, axis, scale, "scale")))
    return failure();
  if (bias && failed(verifyNormParam(op, x, axis, bias, "bias")))
    return failure();
  return verifyEpsilon(op, epsilon);
}

LogicalResult AddLayerNormOp::verify() {
  return verifyAddNorm(*this, getX(), getResidual(), getScale(), getBias(), getAxis(),
                       getEpsilon().convertToDouble());
}

LogicalResult AddRmsNormOp::verify() {
  return verifyAddNorm(*this, getX(), getResidual(), getScale(), Value(), getAxis(),
                       getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult verifyAttentionOperands(Operation *op, Value q, Value k, Value v, double scale,
                                      Value out, Value lse) {
  auto qt = rankedType(q), kt = rankedType(k), vt = rankedType(v);
  const char *names[] = {"q", "k", "v"};
  RankedTensorType types[] = {qt, kt, vt};
  for (int i = 0; i < 3; ++i) {
    if (types[i].getRank() != 4)
      return op->emitOpError("'") << names[i] << "' must have rank 4 ([batch, seq, heads, dim]), got "
                                  << shapeToString(types[i].getShape());
    if (!types[i].getElementType().isF32() && !types[i].getElementType().isBF16())
      return op->emitOpError("'") << names[i] << "' must be f32 or bf16, got "
                                  << types[i].getElementType();
    if (types[i].getElementType() != qt.getElementType())
      return op->emitOpError("'") << names[i] << "' element type " << types[i].getElementType()
                                  << " differs from q's " << qt.getElementType();
    for (int64_t d : types[i].getShape())
      if (d == 0)
        return op->emitOpError("'") << names[i] << "' has an empty dimension: "
                                    << shapeToString(types[i].getShape());
  }
  auto qs = qt.getShape(), ks = kt.getShape(), vs = vt.getShape();
  if (ks[0] != qs[0] || ks[2] != qs[2] || ks[3] != qs[3])
    return op->emitOpError("'k' has shape ") << shapeToString(ks) << ", expected " << qs[0]
                                             << "xTx" << qs[2] << "x" << qs[3]
                                             << " to match q " << shapeToString(qs);
  if (vs[0] != qs[0] || vs[1] != ks[1] || vs[2] != qs[2])
    return op->emitOpError("'v' has shape ") << shapeToString(vs) << ", expected " << qs[0]
                                             << "x" << ks[1] << "x" << qs[2]
                                             << "xE to match q and k";
  if (!(std::isfinite(scale) && scale > 0))
    return op->emitOpError("scale must be a finite number > 0, got ") << scale;
  auto outType = RankedTensorType::get({qs[0], qs[1], qs[2], vs[3]}, qt.getElementType());
  auto lseType = RankedTensorType::get({qs[0], qs[2], qs[1]}, Float32Type::get(op->getContext()));
  if (out.getType() != outType)
    return op->emitOpError("'out' has type ") << out.getType() << ", expected " << outType;
  if (lse.getType() != lseType)
    return op->emitOpError("'lse' has type ") << lse.getType() << ", expected " << lseType;
  return success();
}

LogicalResult verifyAttentionDropout(Operation *op, double dropout, Value step) {
  if (!(dropout >= 0.0 && dropout < 1.0))
    return op->emitOpError("dropout ") << dropout << " is not in [0, 1)";
  if ((dropout > 0) != bool(step))
    return op->emitOpError(dropout > 0 ? "dropout needs the step operand"
                                       : "a step operand needs dropout > 0");
  if (step && rankedType(step).getRank() != 0)
    return op->emitOpError("step must be a scalar");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this, getQ(), getK(), getV(), getScale().convertToDouble(),
                                     getOut(), getLse())))
    return failure();
  return verifyAttentionDropout(*this, getDropout().convertToDouble(), getStep());
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto a = rankedType(adaptor.getLhs()), b = rankedType(adaptor.getRhs());
  if (a.getElementType() != b.getElementType())
    return rule.fail("operands have different element types ", a.getElementType(), " and ",
                     b.getElementType());
  if (a.getRank() == 0 || b.getRank() == 0)
    return rule.fail("operands must have rank >= 1, got ranks ", a.getRank(), " and ",
                     b.getRank());
  SmallVector<int64_t> as(a.getShape()), bs(b.getShape());
  // Permuted operands first (then the transpose flags), as the kernel reads them.
  for (auto [name, perm, shape] :
       {std::tuple("lhs_perm", adaptor.getLhsPerm(), &as),
        std::tuple("rhs_perm", adaptor.getRhsPerm(), &bs)}) {
    if (!perm)
      continue;
    std::string wrong = matmul::checkPerm(*perm, shape->size(), /*result=*/false);
    if (!wrong.empty())
      return rule.fail(name, " [", llvm::join(llvm::map_range(*perm, [](int64_t d) {
                         return std::to_string(d);
                       }), ", "), "] ", wrong);
    std::vector<int64_t> logical = matmul::permuted(*shape, *perm);
    shape->assign(logical.begin(), logical.end());
  }
  bool transA = adaptor.getTransposeLhs(), transB = adaptor.getTransposeRhs();
  if ((transA && as.size() < 2) || (transB && bs.size() < 2))
    return rule.fail("transpose_lhs/transpose_rhs need an operand of rank >= 2, got ranks ",
                     a.getRank(), " and ", b.getRank());
  if (transA)
    std::swap(as[as.size() - 1], as[as.size() - 2]);
  if (transB)
    std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
  bool promoteA = as.size() == 1, promoteB = bs.size() == 1;
  if (promoteA)
    as.insert(as.begin(), 1);
  if (promoteB)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], n = bs.back();
  if (k != k2)
    return rule.fail("contracting dimensions differ: ", shapeToString(a.getShape()), " times ",
                     shapeToString(b.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(as).drop_back(2),
                               ArrayRef<int64_t>(bs).drop_back(2));
  if (!batch)
    return rule.fail("batch dimensions of ", shapeToString(a.getShape()), " and ",
                     shapeToString(b.getShape()), " do not broadcast");
  SmallVector<int64_t> shape(*batch);
  if (!promoteA)
    shape.push_back(m);
  if (!promoteB)
    shape.push_back(n);
  if (auto perm = adaptor.getResultPerm()) {
    if (promoteA || promoteB)
      return rule.fail("result_perm needs operands of rank >= 2");
    std::string wrong = matmul::checkPerm(*perm, shape.size(), /*result=*/true);
    if (!wrong.empty())
      return rule.fail("result_perm [", llvm::join(llvm::map_range(*perm, [](int64_t d) {
                         return std::to_string(d);
                       }), ", "), "] ", wrong);
    std::vector<int64_t> stored = matmul::permuted(shape, *perm);
    shape.assign(stored.begin(), stored.end());
  }
  if (Value bias = adaptor.getBias()) {
    auto c = rankedType(bias);
    if (c.getElementType() != a.getElementType())
      return rule.fail("bias element type ", c.getElementType(), " differs from the operands' ",
                       a.getElementType());
    if (promoteB || bs.size() != 2 || adaptor.getResultPerm())
      return rule.fail("a bias needs a 2-D rhs and no result_perm");
    if (c.getRank() != 1 || c.getDimSize(0) != n)
      return rule.fail("bias must be [", n, "] (the product's columns), got ",
                       shapeToString(c.getShape()));
  }
  results.push_back(RankedTensorType::get(shape, a.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto a = rankedType(adaptor.getA()), b = rankedType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return rule.fail("a and b must be 2-D, got ranks ", a.getRank(), " and ", b.getRank());
  if (a.getElementType() != b.getElementType())
    return rule.fail("operands have different element types ", a.getElementType(), " and ",
                     b.getElementType());
  int64_t m = adaptor.getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t k = adaptor.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t k2 = adaptor.getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  int64_t n = adaptor.getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  if (k != k2)
    return rule.fail("contracting dimensions differ (", k, " vs ", k2, ")");
  if (Value c = adaptor.getC()) {
    auto ct = rankedType(c);
    if (ct.getElementType() != a.getElementType())
      return rule.fail("c has element type ", ct.getElementType(), ", a and b have ",
                       a.getElementType());
    if (!broadcastsTo(ct.getShape(), {m, n}))
      return rule.fail("c of shape ", shapeToString(ct.getShape()), " does not broadcast to ",
                       shapeToString({m, n}));
  }
  results.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  ShapeRule rule(loc, getOperationName());
  auto x = rankedType(adaptor.getX()), w = rankedType(adaptor.getW());
  if (x.getRank() != 4 || w.getRank() != 4)
    return rule.fail("x and w must be 4-D (NCHW and MCkHkW), got ranks ", x.getRank(), " and ",
                     w.getRank());
  if (x.getElementType() != w.getElementType())
    return rule.fail("x and w have different element types ", x.getElementType(), " and ",
                     w.getElementType());
  int64_t group = adaptor.getGroup();
  if (group < 1 || x.getDimSize(1) % group || w.getDimSize(0) % group)
    return rule.fail("group ", group, " must be >= 1 and divide channels ", x.getDimSize(1),
                     " and filters ", w.getDimSize(0));
  if (x.getDimSize(1) / group != w.getDimSize(1))
    return rule.fail("w has ", w.getDimSize(1), " input channels per group, expected ",
                     x.getDimSize(1) / group, " (", x.getDimSize(1), " channels / group ", group,
                     ")");
  if (failed(checkArray(rule, "strides", adaptor.getStrides(), 2, 1)) ||
      failed(checkArray(rule, "pads", adaptor.getPads(), 4, 0)) ||
      failed(checkArray(rule, "dilations", adaptor.getDilations(), 2, 1)))
    return failure();
  if (Value bias = adaptor.getBias()) {
    auto bt = rankedType(bias);
    if (bt.getRank() != 1 || bt.getDimSize(0) != w.getDimSize(0))
      return rule.fail("bias must have shape ", w.getDimSize(0), ", got ",
                       shapeToString(bt.getShape()));
    if (bt.getElementType() != x.getElementType())
      return rule.fail("bias has element type ", bt.getElementType(), ", x has ",
                       x.getElementType());
  }
  auto s = adaptor.getStrides(), p = adaptor.getPads(), d = adaptor.getDilations();
  int64_t h = windowOutputSize(x.getDimSize(2), w.getDimSize(2), s[0], p[0], p[2], d[0], false);
  int64_t wd = windowOutputSize(x.getDimSize(3), w.getDimSize(3), s[1], p[1], p[3], d[1], false);
  if (h < 1 || wd < 1)
    return rule.fail("the ", w.getDimSize(2), "x", w.getDimSize(3),
                     " kernel (dilated) does not fit the padded ", x.getDimSize(2), "x",
                     x.getDimSize(3), " input");
  results.push_back(
      RankedTensorType::get({x.getDimSize(0), w.getDimSize(0), h, wd}, x.getElementType()));
  return success();
}

namespace {
LogicalResult inferPool(const ShapeRule &rule, Value xv, ArrayRef<int64_t> kernel,
                        ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                        ArrayRef<int64_t> dilations, bool ceilMode,
                        SmallVectorImpl<Type> &results) {
  auto x = rankedType(xv);
  if (x.getRank() != 4)
    return rule.fail("x must be 4-D (NCHW), got rank ", x.getRank());
  if (failed(checkArray(rule, "kernel", kernel, 2, 1)) ||
      failed(checkArray(rule, "strides", strides, 2, 1)) ||
      failed(checkArray(rule, "pads", pads, 4, 0)) ||
      failed(checkArray(rule, "dilations", dilations, 2, 1)))
    return failure();
  // A window lying entirely in the padding would have nothing to pool.
  for (int i = 0; i < 2; ++i) {
    auto span = windowSpan(kernel[i], dilations[i]);
    if (span && (pads[i] >= *span || pads[i + 2] >= *span))
      return rule.fail("pads of spatial dimension ", i, " must be smaller than the window (",
                       *span, ")");
  }
  int64_t h = windowOutputSize(x.getDimSize(2), kernel[0], strides[0], pads[0], pads[2],
                               dilations[0], ceilMode);
  int64_t w = windowOutputSize(x.getDimSize(3), kernel[1], strides[1], pads[1], pads[3],
                               dilations[1], ceilMode);
  if (h < 1 || w < 1)
    return rule.fail("the window does not fit the padded ", x.getDimSize(2), "x",
                     x.getDimSize(3), " input");
  results.push_back(
      RankedTensorType::get({x.getDimSize(0), x.getDimSize(1), h, w}, x.getElementType()));
  return success();
}
} // namespace

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  return inferPool(ShapeRule(loc, getOperationName()), adaptor.getX(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
                   adaptor.getCeilMode(), results);
}

LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *context, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (failed(checkShapeRuleInputs(context, loc, adaptor)))
    return failure();
  int64_t ones[2] = {1, 1};
  return inferPool(ShapeRule(loc, getOperationName()), adaptor.getX(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPads(), ones, adaptor.getCeilMode(),
                   results);
}

LogicalResult FusedElementwiseOp::verify() {
  if (getResults().empty())
    return emitOpError("has no results");
  // f32 or bf16 elements (codegen/schema/FusedElementwise.h): the program computes in f32,
  // bf16 inputs widen as they are loaded and bf16 results round as they are stored; an input
  // may also be i1, loaded as 1.0f or 0.0f.
  auto elementOk = [](RankedTensorType t) {
    return t.getElementType().isF32() || t.getElementType().isBF16();
  };
  // The iteration shape: every result and input broadcast together (a stored result has it,
  // a reduced one has 1 where it sums).
  SmallVector<int64_t> shape;
  for (Value r : getResults()) {
    auto type = cast<RankedTensorType>(r.getType());
    auto joined = broadcastShapes(shape, type.getShape());
    if (!elementOk(type) || !joined)
      return emitOpError("results must all be f32 or bf16 tensors whose shapes broadcast "
                         "together");
    shape = *joined;
  }
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(v.getType());
    auto joined = broadcastShapes(shape, type.getShape());
    if ((!elementOk(type) && !type.getElementType().isInteger(1)) || !joined ||
        joined->size() != shape.size())
      return emitOpError("input ") << i << " is " << type << "; inputs must be f32, bf16 or i1 "
                                   << "and broadcast to the results' shape "
                                   << shapeToString(shape);
    shape = *joined;
  }
  std::vector<int64_t> program(getProgram().begin(), getProgram().end());
  std::vector<int64_t> outputs(getOutputs().begin(), getOutputs().end());
  if (outputs.size() != getResults().size())
    return emitOpError("has ") << getResults().size() << " results but " << outputs.size()
                               << " output registers";
  std::string problem = fused::checkProgram(program, getInputs().size(), outputs);
  if (!problem.empty())
    return emitOpError(problem);
  std::optional<ArrayRef<int64_t>> reductions = getReductions();
  if (reductions && reductions->size() != outputs.size())
    return emitOpError("has ") << reductions->size() << " reductions for " << outputs.size()
                               << " results";
  for (auto [o, r] : llvm::enumerate(getResults())) {
    ArrayRef<int64_t> resultShape = cast<RankedTensorType>(r.getType()).getShape();
    std::string wrong = fused::checkReducedShape(
        reductions ? (*reductions)[o] : int64_t(fused::Store), ArrayRef<int64_t>(shape),
        resultShape);
    if (!wrong.empty())
      return emitOpError("result ") << o << " (" << shapeToString(resultShape) << ", iteration "
                                    << shapeToString(shape) << "): " << wrong;
  }
  return success();
}

} // namespace plait

#define GET_OP_CLASSES
#include "ir/PlaitOps.cpp.inc"
