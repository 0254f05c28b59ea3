// Gradient clipping on one rank and on several (GradientClipping.h).
#include "passes/GradientClipping.h"

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include <sstream>

using namespace mlir;

namespace plait {
namespace {

/// A scalar constant of element type `element`.
Value scalar(OpBuilder &b, Location loc, Type element, double v) {
  auto type = RankedTensorType::get({}, element);
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, b.getFloatAttr(element, v)));
}

bool isInfinityNorm(double normType) { return std::isinf(normType); }

/// A p-norm's measure of one gradient, as an f32 scalar: the sum of its squares (p = 2), of
/// |g|^p, or its largest |g| (infinity). Measures combine by addition (max for infinity).
Value normMeasure(OpBuilder &b, Location loc, Value g, double normType) {
  auto axes = b.getDenseI64ArrayAttr({});
  auto keep = b.getBoolAttr(false);
  Value m;
  if (normType == 2) {
    m = b.create<ReduceSumOp>(loc, b.create<MulOp>(loc, g, g), axes, keep);
  } else {
    Value a = b.create<AbsOp>(loc, g);
    if (isInfinityNorm(normType)) {
      m = b.create<ReduceMaxOp>(loc, a, axes, keep);
    } else {
      Type element = cast<RankedTensorType>(g.getType()).getElementType();
      if (normType != 1)
        a = b.create<PowOp>(loc, a, scalar(b, loc, element, normType));
      m = b.create<ReduceSumOp>(loc, a, axes, keep);
    }
  }
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  return m.getType() == f32 ? m : Value(b.create<CastOp>(loc, f32, m));
}

/// Two measures combined: their sum, or their max for the infinity norm.
Value combined(OpBuilder &b, Location loc, Value total, Value m, double normType) {
  if (!total)
    return m;
  if (isInfinityNorm(normType))
    return b.create<MaxOp>(loc, total, m);
  return b.create<AddOp>(loc, total, m);
}

/// The norm from the combined measures: sqrt(total) (p = 2), total^(1 / p), or total (p = 1,
/// infinity).
Value normOf(OpBuilder &b, Location loc, Value total, double normType) {
  if (normType == 2)
    return b.create<SqrtOp>(loc, total);
  if (normType != 1 && !isInfinityNorm(normType))
    return b.create<PowOp>(loc, total, scalar(b, loc, b.getF32Type(), 1.0 / normType));
  return total;
}

/// min(1, maxNorm / (norm + 1e-6)), its ops built in that order (the denominator, then the
/// numerator: one op order whatever the compiler's argument order).
Value normCoefficient(OpBuilder &b, Location loc, Value norm, double maxNorm) {
  auto f32 = b.getF32Type();
  Value epsilon = scalar(b, loc, f32, 1e-6);
  Value denominator = b.create<AddOp>(loc, norm, epsilon);
  Value numerator = scalar(b, loc, f32, maxNorm);
  Value coef = b.create<DivOp>(loc, numerator, denominator);
  Value one = scalar(b, loc, f32, 1.0);
  return b.create<MinOp>(loc, coef, one);
}

/// g * coef, the f32 coefficient cast to g's element type.
Value scaled(OpBuilder &b, Location loc, Value g, Value coef) {
  Type element = cast<RankedTensorType>(g.getType()).getElementType();
  if (!element.isF32())
    coef = b.create<CastOp>(loc, RankedTensorType::get({}, element), coef);
  return b.create<MulOp>(loc, g, coef);
}

Value clamped(OpBuilder &b, Location loc, Value g, double value) {
  return b.create<ClampOp>(loc, g, b.getF64FloatAttr(-value), b.getF64FloatAttr(value));
}

/// Sets plait.train's `key` to `value` on the module of `body`.
void recordTrainEntry(Block &body, StringRef key, Attribute value) {
  auto module = body.getParentOp()->getParentOfType<ModuleOp>();
  if (auto train = module->getAttrOfType<DictionaryAttr>("plait.train")) {
    NamedAttrList entries(train);
    entries.set(key, value);
    module->setAttr("plait.train", entries.getDictionary(module.getContext()));
  }
}

void recordTrainEntry(Block &body, StringRef key, double value) {
  recordTrainEntry(body, key,
                   FloatAttr::get(Float64Type::get(body.getParentOp()->getContext()), value));
}

/// The optimizer updates of `body`, in order, with every gradient they read defined before
/// the first: clipping reads them all there. bf16-mixed casts each gradient up to f32 just
/// before its update; those casts move up to the first update.
SmallVector<Operation *> gradientsBeforeUpdates(Block &body) {
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (isOptimizerUpdate(&op))
      updates.push_back(&op);
  for (Operation *update : updates)
    if (auto up = update->getOperand(1).getDefiningOp<CastOp>();
        up && updates.front()->isBeforeInBlock(up))
      up->moveBefore(updates.front());
  return updates;
}

/// The reduction a sharded update's gradient comes from: its sync_grad, seen through the
/// cast up (bf16-mixed), the value clipping's clamp and, with sharded accumulation, the mean
/// of the micro-batches' shards (the last one's). Null for a gradient reduced whole.
SyncGradOp shardReduction(Value grad) {
  while (Operation *def = grad.getDefiningOp()) {
    if (auto sync = dyn_cast<SyncGradOp>(def))
      return sync;
    if (isa<CastOp, DivOp, ClampOp>(def))
      grad = def->getOperand(0);
    else if (isa<AddOp>(def))
      grad = def->getOperand(1);
    else
      return {};
  }
  return {};
}

} // namespace

void clampGradients(OpBuilder &b, Location loc, llvm::MapVector<Value, Value> &grads,
                    double value) {
  for (auto &[param, grad] : grads)
    grad = clamped(b, loc, grad, value);
}

std::string normTypeName(double normType) {
  if (isInfinityNorm(normType))
    return "inf";
  std::ostringstream value;
  value << normType;
  return value.str();
}

std::string invalidNormType(double normType) {
  if (normType > 0) // NaN fails this too
    return "";
  // As written (a diagnostic prints doubles as %e).
  return "clip-grad-norm-type must be > 0 or inf, got " + normTypeName(normType);
}

Value clipByGlobalNorm(OpBuilder &b, Location loc, llvm::MapVector<Value, Value> &grads,
                       double maxNorm, double normType) {
  Value total;
  for (auto &[param, grad] : grads)
    total = combined(b, loc, total, normMeasure(b, loc, grad, normType), normType);
  if (!total)
    return {};
  Value norm = normOf(b, loc, total, normType);
  if (maxNorm == 0)
    return norm;
  Value coef = normCoefficient(b, loc, norm, maxNorm);
  for (auto &[param, grad] : grads)
    grad = scaled(b, loc, grad, coef);
  return norm;
}

void clampSyncedGradients(Block &body, double value) {
  SmallVector<Operation *> updates = gradientsBeforeUpdates(body);
  if (updates.empty())
    return;
  OpBuilder b(updates.front()); // where norm clipping, if any, then reads them
  for (Operation *update : updates)
    update->setOperand(1, clamped(b, update->getLoc(), update->getOperand(1), value));
  recordTrainEntry(body, "clip_grad_value", value);
}

Value clipSyncedGradients(Block &body, double maxNorm, double normType) {
  SmallVector<Operation *> updates = gradientsBeforeUpdates(body);
  if (updates.empty())
    return {};
  OpBuilder b(updates.front());
  Location loc = updates.front()->getLoc();
  Value local;
  llvm::MapVector<Attribute, Value> sharded; // shard groups -> this rank's partial measure
  for (Operation *update : updates) {
    Value g = update->getOperand(1);
    SyncGradOp sync = shardReduction(g);
    Attribute groups = sync ? sync.getShardGroupsAttr() : Attribute();
    Value &partial = groups ? sharded[groups] : local;
    partial = combined(b, loc, partial, normMeasure(b, loc, g, normType), normType);
  }
  Value total = local;
  for (auto &[groups, partial] : sharded) {
    auto rankGroups = cast<ArrayAttr>(groups);
    Value whole;
    if (isInfinityNorm(normType)) {
      // No max all-reduce: each rank's largest |g| gathered over the group, then their max.
      int64_t size = cast<DenseI64ArrayAttr>(rankGroups[0]).size();
      auto f32 = b.getF32Type();
      Value one = b.create<ReshapeOp>(loc, RankedTensorType::get({1}, f32), partial);
      Value all = b.create<AllGatherOp>(loc, RankedTensorType::get({size}, f32), one, rankGroups);
      whole = b.create<ReduceMaxOp>(loc, all, b.getDenseI64ArrayAttr({}), b.getBoolAttr(false));
    } else {
      whole = b.create<AllReduceOp>(loc, partial, rankGroups, b.getStringAttr("sum"));
    }
    total = combined(b, loc, total, whole, normType);
  }
  Value norm = normOf(b, loc, total, normType);
  if (normType != 2)
    recordTrainEntry(body, "clip_grad_norm_type",
                     StringAttr::get(body.getParentOp()->getContext(), normTypeName(normType)));
  if (maxNorm == 0)
    return norm;
  Value coef = normCoefficient(b, loc, norm, maxNorm);
  for (Operation *update : updates)
    update->setOperand(1, scaled(b, loc, update->getOperand(1), coef));
  recordTrainEntry(body, "clip_grad_norm", maxNorm);
  return norm;
}

void appendGradNormOutput(func::FuncOp func, Value norm) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  ret->insertOperands(ret->getNumOperands(), norm);
  SmallVector<DictionaryAttr> attrs;
  func.getAllResultAttrs(attrs);
  Builder b(func.getContext());
  attrs.push_back(b.getDictionaryAttr(b.getNamedAttr("plait.name", b.getStringAttr("grad_norm"))));
  func.setType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), ret.getOperandTypes()));
  func.setAllResultAttrs(attrs);
  recordTrainEntry(func.getBody().front(), "log_grad_norm", BoolAttr::get(func.getContext(), true));
}

} // namespace plait
