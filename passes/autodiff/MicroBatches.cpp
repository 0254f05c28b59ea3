// Gradient accumulation over micro-batches: K slices of the batch, one forward and backward
// each, gradients summed where they are produced and divided by K once.
#include "passes/autodiff/MicroBatches.h"

#include "codegen/schema/DropoutMask.h"

#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace plait {
namespace {

/// Builds the running sums of one value over the micro-batches and their means.
class Accumulator {
public:
  Accumulator(Block &body, int64_t count) : body_(body), count_(count) {}

  /// `sum + term`, placed right after `term` is produced so that `term` dies at once. A
  /// term without a producer in this micro-batch (a shared constant) is added at the end of
  /// the micro-batch, where the running sum is certainly defined.
  Value add(Value sum, Value term) {
    if (!sum)
      return term;
    OpBuilder b(body_.getTerminator());
    if (Operation *def = term.getDefiningOp(); def && def->getNumOperands() > 0)
      b.setInsertionPointAfter(def);
    return b.create<AddOp>(term.getLoc(), sum, term);
  }

  /// `sum / K`, right after `sum` (the last micro-batch's addition) is produced.
  Value mean(Value sum) {
    OpBuilder b(body_.getTerminator());
    if (Operation *def = sum.getDefiningOp(); def && def->getNumOperands() > 0)
      b.setInsertionPointAfter(def);
    return b.create<DivOp>(sum.getLoc(), sum,
                           countOf(cast<RankedTensorType>(sum.getType()).getElementType()));
  }

private:
  /// The scalar K in `element`'s type, built once at the start of the body (constants live
  /// for the whole step wherever they stand).
  Value countOf(Type element) {
    Value &count = counts_[element];
    if (!count) {
      auto b = OpBuilder::atBlockBegin(&body_);
      auto type = RankedTensorType::get({}, element);
      count = b.create<ConstantOp>(body_.getParentOp()->getLoc(),
                                   DenseElementsAttr::get(type, b.getFloatAttr(element, count_)));
    }
    return count;
  }

  Block &body_;
  int64_t count_;
  llvm::DenseMap<Type, Value> counts_;
};

/// The slice of `arg` that micro-batch `index` of `count` reads: rows [index*b, (index+1)*b).
Value microBatchSlice(OpBuilder &b, BlockArgument arg, int64_t index, int64_t count) {
  auto type = cast<RankedTensorType>(arg.getType());
  int64_t rows = type.getDimSize(0) / count;
  SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()), steps(type.getRank(), 1);
  starts[0] = index * rows;
  ends[0] = (index + 1) * rows;
  return b.create<SliceOp>(arg.getLoc(), arg, b.getDenseI64ArrayAttr(starts),
                           b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps));
}

} // namespace

LogicalResult accumulateMicroBatches(func::FuncOp func, int64_t microBatches, Value &loss,
                                     llvm::MapVector<Value, Value> &grads,
                                     ArrayRef<std::pair<Value, unsigned>> buffers) {
  Block &body = func.getBody().front();
  if (body.getNumArguments() == 0)
    return func.emitOpError("has no batch inputs to split into ")
           << microBatches << " micro-batches";
  SmallVector<Type> stepTypes;
  for (BlockArgument arg : body.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() == 0 || type.isDynamicDim(0))
      return func.emitOpError("argument #")
             << arg.getArgNumber() << " has no leading batch dimension to split into "
             << microBatches << " micro-batches";
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= microBatches;
    stepTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
  }

  // The micro-batch's work: every op that reads something. Sources (params, constants) stay
  // where they are and are shared.
  Operation *terminator = body.getTerminator();
  SmallVector<Operation *> work;
  for (Operation &op : body)
    if (&op != terminator && op.getNumOperands() > 0)
      work.push_back(&op);

  for (auto [arg, type] : llvm::zip(body.getArguments(), stepTypes))
    arg.setType(type);
  func.setType(FunctionType::get(func.getContext(), stepTypes, func.getResultTypes()));

  // One copy of the work per micro-batch, in program order, each on its slices.
  Accumulator accumulator(body, microBatches);
  Value lossSum;
  llvm::MapVector<Value, Value> gradSums;
  IRMapping mapping;
  SmallVector<Value> bufferValues; // each buffer's value after the previous micro-batch
  for (int64_t index = 0; index < microBatches; ++index) {
    mapping.clear();
    OpBuilder b(terminator);
    for (BlockArgument arg : body.getArguments())
      mapping.map(arg, microBatchSlice(b, arg, index, microBatches));
    for (auto [buffer, value] : llvm::zip(buffers, bufferValues)) {
      Value param = buffer.first;
      if (value.getType() != param.getType()) // bf16-mixed: computed in bf16
        value = b.create<CastOp>(param.getLoc(), param.getType(), value);
      mapping.map(param, value);
    }
    for (Operation *op : work) {
      Operation *copy = b.clone(*op, mapping);
      // Each micro-batch draws its own dropout masks and random values (the first keeps the
      // node's stream).
      if (auto mask = dyn_cast<DropoutMaskOp>(copy))
        mask.setStream(dropout::microBatchStream(mask.getStream(), index));
      if (auto draw = dyn_cast<RandomOp>(copy))
        draw.setStream(dropout::microBatchStream(draw.getStream(), index));
      // The fused attention's dropout draws as the mask it replaced would.
      if (auto attention = dyn_cast<AttentionOp>(copy); attention && attention.getStep())
        attention.setStream(dropout::microBatchStream(attention.getStream(), index));
      if (auto grad = dyn_cast<AttentionGradOp>(copy); grad && grad.getStep())
        grad.setStream(dropout::microBatchStream(grad.getStream(), index));
    }
    bufferValues.clear();
    for (auto [param, result] : buffers)
      bufferValues.push_back(mapping.lookupOrDefault(terminator->getOperand(result)));
    lossSum = accumulator.add(lossSum, mapping.lookupOrDefault(loss));
    for (auto &[param, grad] : grads)
      gradSums[param] = accumulator.add(gradSums.lookup(param), mapping.lookupOrDefault(grad));
  }
  loss = accumulator.mean(lossSum);
  for (auto &[param, grad] : grads)
    grad = accumulator.mean(gradSums[param]);

  // The function's other outputs are the last micro-batch's; the originals go.
  for (OpOperand &operand : terminator->getOpOperands())
    operand.set(mapping.lookupOrDefault(operand.get()));
  for (Operation *op : llvm::reverse(work)) {
    if (!op->use_empty())
      return op->emitOpError("internal error: still used after splitting into micro-batches");
    op->erase();
  }
  return success();
}

} // namespace plait
