// A model at batch B rewritten to one micro-batch of B / K: the batch followed through the
// body by each op's shape rule, or by the dimension that carries it.
#include "passes/autodiff/DivideBatch.h"

#include <string>

#include "ir/PlaitDialect.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace plait {
namespace {

using Shape = SmallVector<int64_t>;

/// Follows the batch through one function.
class BatchDivider {
public:
  BatchDivider(int64_t microBatches, int64_t batch) : k_(microBatches), batch_(batch) {}

  /// Gives `v` its micro-batch `shape` (the element type stays). The one dimension that
  /// changes must be the batch's, the old size divided by K (recorded as `v`'s batch
  /// dimension); a shape that does not change means the op reduced the batch away.
  LogicalResult retype(Operation *op, Value v, ArrayRef<int64_t> shape) {
    auto old = cast<RankedTensorType>(v.getType());
    auto now = RankedTensorType::get(shape, old.getElementType());
    if (now == old)
      return success();
    int64_t dim = -1;
    bool batchOnly = old.getRank() == now.getRank();
    for (int64_t d = 0; batchOnly && d < old.getRank(); ++d) {
      if (old.getDimSize(d) == now.getDimSize(d))
        continue;
      batchOnly = dim < 0 && now.getDimSize(d) * k_ == old.getDimSize(d);
      dim = d;
    }
    if (!batchOnly)
      return refuse(op) << ": a result would change from " << old << " to " << now
                        << ", not by one dimension divided by " << k_;
    before_[v] = old;
    batchDim_[v] = dim;
    v.setType(now);
    return success();
  }

  /// Whether `v` carries the batch (in the dimension `batchDim_` records).
  bool batched(Value v) const { return batchDim_.count(v) != 0; }

  /// The type `v` had at batch B.
  RankedTensorType oldType(Value v) const {
    auto it = before_.find(v);
    return it != before_.end() ? it->second : cast<RankedTensorType>(v.getType());
  }

  /// The error for an op that cannot take the micro-batch.
  InFlightDiagnostic refuse(Operation *op) const {
    return op->emitOpError("cannot run on micro-batches of ")
           << batch_ / k_ << " (--micro-batches " << k_ << " of the batch " << batch_ << ")";
  }

  /// The op's results at the micro-batch, from whichever rule applies to it.
  LogicalResult divide(Operation *op) {
    retypeDropoutMasks(op);
    if (llvm::none_of(op->getOperands(), [&](Value v) { return batched(v); }))
      return success(); // params, constants, and what only they feed
    if (auto slice = dyn_cast<SliceOp>(op))
      followWholeBatch(slice);
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      SmallVector<Type> inferred;
      if (failed(infer.inferReturnTypes(op->getContext(), std::nullopt, op->getOperands(),
                                        op->getRawDictionaryAttrs(),
                                        op->getPropertiesStorage(), op->getRegions(),
                                        inferred))) {
        InFlightDiagnostic diag = refuse(op);
        diag << ": its shape rule refuses the operands ";
        llvm::interleave(
            op->getOperandTypes(), [&](Type type) { diag << type; }, [&] { diag << ","; });
        return diag << " (a constant or an attribute of the model pins the batch)";
      }
      for (auto [result, type] : llvm::zip(op->getResults(), inferred))
        if (failed(retype(op, result, cast<RankedTensorType>(type).getShape())))
          return failure();
      return success();
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return divideReshape(reshape);
    if (auto broadcast = dyn_cast<BroadcastToOp>(op)) {
      Value x = broadcast->getOperand(0);
      auto result = cast<RankedTensorType>(broadcast.getType());
      Shape shape(result.getShape());
      shape[batchDim_.lookup(x) + result.getRank() - oldType(x).getRank()] /= k_;
      return retype(op, broadcast.getResult(), shape);
    }
    if (auto bn = dyn_cast<BatchNormOp>(op)) { // y follows x; the statistics are per channel
      if (!batched(bn.getX()))
        return refuse(op) << ": its scale or bias carries the batch but its input does not";
      return retype(op, bn.getY(), cast<RankedTensorType>(bn.getX().getType()).getShape());
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (!batched(attention.getQ()))
        return refuse(op) << ": its keys and values carry the batch but its queries do not";
      auto q = cast<RankedTensorType>(attention.getQ().getType()); // [B, S, H, D]
      if (failed(retype(op, attention.getOut(), q.getShape())))
        return failure();
      return retype(op, attention.getLse(),
                    {q.getDimSize(0), q.getDimSize(2), q.getDimSize(1)}); // [B, H, S]
    }
    // Elementwise ops (one type for operands and results), casts and the norms: each result
    // is shaped as a batched operand was.
    for (Value result : op->getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      auto same = llvm::find_if(op->getOperands(), [&](Value v) {
        return batched(v) && oldType(v).getShape() == type.getShape();
      });
      if (same == op->operand_end())
        return refuse(op) << ": it has no rule for a batched operand and no operand shaped as "
                             "its result "
                          << type;
      if (failed(retype(op, result, cast<RankedTensorType>((*same).getType()).getShape())))
        return failure();
    }
    return success();
  }

private:
  /// A dropout mask (or plait.random's draw) is drawn at the shape it is declared with, and
  /// has no batched operand to follow: it takes the micro-batch shape of the batched operand
  /// it is combined with.
  void retypeDropoutMasks(Operation *op) {
    for (Value mask : op->getOperands()) {
      if (!(mask.getDefiningOp<DropoutMaskOp>() || mask.getDefiningOp<RandomOp>()) || batched(mask))
        continue;
      auto shape = cast<RankedTensorType>(mask.getType()).getShape();
      for (Value other : op->getOperands())
        if (batched(other) && oldType(other).getShape() == shape) {
          (void)retype(mask.getDefiningOp(), mask,
                       cast<RankedTensorType>(other.getType()).getShape());
          break;
        }
    }
  }

  /// A slice that takes the whole batch dimension ([0, B), step 1: rotary embeddings' halves)
  /// takes the whole micro-batch: its end follows the batch.
  void followWholeBatch(SliceOp slice) {
    Value x = slice.getX();
    if (!batched(x))
      return;
    int64_t dim = batchDim_.lookup(x);
    SmallVector<int64_t> ends(slice.getEnds());
    if (slice.getStarts()[dim] == 0 && slice.getSteps()[dim] == 1 &&
        ends[dim] == oldType(x).getDimSize(dim)) {
      ends[dim] = cast<RankedTensorType>(x.getType()).getDimSize(dim);
      slice.setEnds(ends);
    }
  }

  /// A reshape keeps the elements in order, so the batch (with the P elements of the dims
  /// before it) is a factor of one result dimension: the first j whose dims before it hold a
  /// divisor of P and whose dims up to it a multiple of P * B. That dimension is divided.
  LogicalResult divideReshape(ReshapeOp op) {
    Value x = op->getOperand(0);
    RankedTensorType in = oldType(x);
    auto out = cast<RankedTensorType>(op.getType());
    int64_t dim = batchDim_.lookup(x), prefix = 1;
    for (int64_t d = 0; d < dim; ++d)
      prefix *= in.getDimSize(d);
    const int64_t withBatch = prefix * in.getDimSize(dim);
    int64_t before = 1;
    for (int64_t j = 0; j < out.getRank() && before > 0 && prefix % before == 0; ++j) {
      int64_t upTo = before * out.getDimSize(j);
      if (upTo > 0 && upTo % withBatch == 0) {
        Shape shape(out.getShape());
        shape[j] /= k_;
        return retype(op, op.getResult(), shape);
      }
      before = upTo;
    }
    return refuse(op) << ": it splits the batch dimension " << dim << " of " << in
                      << " across the dimensions of " << out;
  }

  int64_t k_, batch_;
  llvm::DenseMap<Value, RankedTensorType> before_; // the batch-B types of retyped values
  llvm::DenseMap<Value, int64_t> batchDim_;        // values that carry the batch: where
};

} // namespace

LogicalResult divideBatch(func::FuncOp func, int64_t microBatches) {
  if (microBatches < 1)
    return func.emitError("micro-batches must be at least 1, got ") << microBatches;
  if (microBatches == 1)
    return success();
  Block &body = func.getBody().front();
  if (body.getNumArguments() == 0)
    return func.emitError("no argument to divide into ") << microBatches << " micro-batches";
  auto nameOf = [&](BlockArgument arg) {
    if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "plait.name"))
      return "'" + name.str() + "'";
    return "#" + std::to_string(arg.getArgNumber());
  };
  // Every argument leads with the batch, as the micro-batches slice each one (MicroBatches.h).
  BlockArgument first = body.getArgument(0);
  int64_t batch = 0;
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0)
      return func.emitError("--micro-batches: argument ")
             << nameOf(arg) << " has no leading dimension (the batch) to split";
    if (arg == first)
      batch = type.getDimSize(0);
    else if (type.getDimSize(0) != batch)
      return func.emitError("--micro-batches: argument ")
             << nameOf(arg) << " has leading dimension " << type.getDimSize(0) << " but argument "
             << nameOf(first) << " has " << batch << "; every argument must lead with the batch";
  }
  if (batch % microBatches != 0)
    return func.emitError("--micro-batches ")
           << microBatches << " does not divide the batch " << batch
           << " (the leading dimension of argument " << nameOf(first) << ")";
  // A constant marked plait.unbiased_count = N is n / (n - 1) for a statistic over N values
  // that the batch multiplies (a BatchNorm's unbiased running variance): it follows the batch
  // to N / K values.
  for (auto constant : body.getOps<ConstantOp>()) {
    auto count = constant->getAttrOfType<IntegerAttr>("plait.unbiased_count");
    if (!count)
      continue;
    int64_t n = count.getInt();
    auto type = dyn_cast<RankedTensorType>(constant.getType());
    if (n % microBatches != 0 || n / microBatches < 2 || !type ||
        !isa<FloatType>(type.getElementType()) || type.getNumElements() != 1)
      return constant.emitOpError("plait.unbiased_count ")
             << n << " does not divide into " << microBatches
             << " micro-batches of at least 2 values each (or the constant is not a float "
                "scalar)";
    double m = double(n / microBatches);
    constant.setValueAttr(DenseElementsAttr::get(
        type, FloatAttr::get(type.getElementType(), m / (m - 1)).getValue()));
    constant->setAttr("plait.unbiased_count",
                      IntegerAttr::get(count.getType(), n / microBatches));
  }
  BatchDivider divider(microBatches, batch);
  for (BlockArgument arg : body.getArguments()) {
    Shape shape(cast<RankedTensorType>(arg.getType()).getShape());
    shape[0] /= microBatches;
    (void)divider.retype(func, arg, shape); // only the leading dimension changes
  }
  for (Operation &op : body.without_terminator())
    if (failed(divider.divide(&op)))
      return failure();
  func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                 body.getTerminator()->getOperandTypes()));
  // What the rules above let through, the verifiers catch: say why the shapes changed.
  ScopedDiagnosticHandler context(func.getContext(), [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      diag << " (after dividing the batch " << batch << " into " << microBatches
           << " micro-batches: a shape in the model pins the batch)";
    return failure(); // on to the handler that prints it
  });
  return verify(func);
}

} // namespace plait

//===--- the pass (plait-opt --plait-divide-batch) ------------------------------------===//

namespace plait {

#define GEN_PASS_DEF_DIVIDEBATCHPASS
#include "passes/Passes.h.inc"

namespace {

struct DivideBatchPass : impl::DivideBatchPassBase<DivideBatchPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<func::FuncOp> func = entryFunction(getOperation(), "divide its batch");
    if (failed(func) || failed(divideBatch(*func, microBatches)))
      signalPassFailure();
  }
};

} // namespace
} // namespace plait
