// Gradient clipping on one rank and on several (GradientClipping.h).
#include "passes/GradientClipping.h"

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"

using namespace mlir;

namespace plait {
namespace {

/// The f32 scalar sum of g's squares.
Value sumOfSquares(OpBuilder &b, Location loc, Value g) {
  Value sq = b.create<ReduceSumOp>(loc, b.create<MulOp>(loc, g, g), b.getDenseI64ArrayAttr({}),
                                   b.getBoolAttr(false));
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  return sq.getType() == f32 ? sq : Value(b.create<CastOp>(loc, f32, sq));
}

/// min(1, maxNorm / (sqrt(total) + 1e-6)), its ops built in that order (the norm, then the
/// denominator, then the numerator: one op order whatever the compiler's argument order).
Value normCoefficient(OpBuilder &b, Location loc, Value total, double maxNorm) {
  auto f32 = b.getF32Type();
  auto scalarType = RankedTensorType::get({}, f32);
  auto scalar = [&](double v) -> Value {
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(scalarType, b.getFloatAttr(f32, v)));
  };
  Value norm = b.create<SqrtOp>(loc, total);
  Value epsilon = scalar(1e-6);
  Value denominator = b.create<AddOp>(loc, norm, epsilon);
  Value numerator = scalar(maxNorm);
  Value coef = b.create<DivOp>(loc, numerator, denominator);
  Value one = scalar(1.0);
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
void recordTrainEntry(Block &body, StringRef key, double value) {
  auto module = body.getParentOp()->getParentOfType<ModuleOp>();
  if (auto train = module->getAttrOfType<DictionaryAttr>("plait.train")) {
    NamedAttrList entries(train);
    entries.set(key, FloatAttr::get(Float64Type::get(module.getContext()), value));
    module->setAttr("plait.train", entries.getDictionary(module.getContext()));
  }
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

void clipByGlobalNorm(OpBuilder &b, Location loc, llvm::MapVector<Value, Value> &grads,
                      double maxNorm) {
  Value total;
  for (auto &[param, grad] : grads) {
    Value sq = sumOfSquares(b, loc, grad);
    total = total ? Value(b.create<AddOp>(loc, total, sq)) : sq;
  }
  Value coef = normCoefficient(b, loc, total, maxNorm);
  for (auto &[param, grad] : grads)
    grad = scaled(b, loc, grad, coef);
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

void clipSyncedGradients(Block &body, double maxNorm) {
  SmallVector<Operation *> updates = gradientsBeforeUpdates(body);
  if (updates.empty())
    return;
  OpBuilder b(updates.front());
  Location loc = updates.front()->getLoc();
  Value local;
  llvm::MapVector<Attribute, Value> sharded; // shard groups -> partial sum of squares
  for (Operation *update : updates) {
    Value g = update->getOperand(1);
    Value sq = sumOfSquares(b, loc, g);
    SyncGradOp sync = shardReduction(g);
    Attribute groups = sync ? sync.getShardGroupsAttr() : Attribute();
    Value &sum = groups ? sharded[groups] : local;
    sum = sum ? Value(b.create<AddOp>(loc, sum, sq)) : sq;
  }
  Value total = local;
  for (auto &[groups, sum] : sharded) {
    Value whole = b.create<AllReduceOp>(loc, sum, cast<ArrayAttr>(groups), b.getStringAttr("sum"));
    total = total ? Value(b.create<AddOp>(loc, total, whole)) : whole;
  }
  Value coef = normCoefficient(b, loc, total, maxNorm);
  for (Operation *update : updates)
    update->setOperand(1, scaled(b, loc, update->getOperand(1), coef));
  recordTrainEntry(body, "clip_grad_norm", maxNorm);
}

} // namespace plait
