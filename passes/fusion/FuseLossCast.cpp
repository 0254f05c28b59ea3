// -plait-fuse-loss-cast: a bf16-mixed loss gradient computed from the bf16 logits, in bf16.
//
// Under bf16-mixed the model's logits are bf16, and the loss runs in f32 on a cast of them:
//   %l = plait.cast %logits (bf16 -> f32)        the f32 copy, live until the gradient
//   %d = plait.softmax_cross_entropy_grad %l, %target, %g          an f32 gradient
//   %b = plait.cast %d (f32 -> bf16)             the gradient the backward takes
// For a language model these are the step's largest tensors ([tokens, vocab]; the f32 copy
// and the f32 gradient are four times the bf16 logits together) and they are live together
// at the start of the backward, where the step's peak often is. The gradient is rewritten to
// read the bf16 logits and write the bf16 result: the kernel widens a row at a time, computes
// the f32 gradient row, and rounds it, the same bits as the two casts around the f32 kernel.
// The f32 copy then dies at the forward loss (its other reader), and the f32 gradient is
// never stored.
//
// Rewritten: softmax_cross_entropy_grad of [N, C] logits (the rank the CPU kernel takes a
// row at a time) without class weights, whose input is a cast from bf16 or f16 and whose
// result feeds nothing but a cast back to that type. The module records
// `plait.fuse_loss_cast` {gradients, bytes} (bytes: the f32 gradients no longer stored).
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSELOSSCASTPASS
#include "passes/Passes.h.inc"

namespace {

struct FuseLossCastPass : impl::FuseLossCastPassBase<FuseLossCastPass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t gradients = 0, bytes = 0;
    SmallVector<SoftmaxCrossEntropyGradOp> candidates;
    module.walk([&](SoftmaxCrossEntropyGradOp op) { candidates.push_back(op); });
    for (SoftmaxCrossEntropyGradOp op : candidates) {
      auto widen = op.getInput().getDefiningOp<CastOp>();
      if (!widen || op.getWeight() || !op->hasOneUse())
        continue;
      auto narrow = dyn_cast<CastOp>(*op->getUsers().begin());
      auto half = cast<RankedTensorType>(widen.getX().getType());
      Type element = half.getElementType();
      if (!narrow || half.getRank() != 2 || !(element.isBF16() || element.isF16()) ||
          narrow.getType() != half)
        continue;
      OpBuilder builder(op);
      OperationState state(op->getLoc(), op->getName());
      SmallVector<Value> operands(op->getOperands());
      operands[0] = widen.getX();
      state.addOperands(operands);
      state.addAttributes(op->getAttrs());
      state.addTypes(half);
      Operation *fused = builder.create(state);
      narrow.getResult().replaceAllUsesWith(fused->getResult(0));
      auto wide = cast<RankedTensorType>(op.getType());
      bytes += wide.getNumElements() * (wide.getElementTypeBitWidth() / 8);
      ++gradients;
      narrow->erase();
      op->erase();
      if (widen->use_empty())
        widen->erase();
    }
    Builder b(&getContext());
    module->setAttr("plait.fuse_loss_cast",
                    b.getDictionaryAttr({b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
                                         b.getNamedAttr("gradients",
                                                        b.getI64IntegerAttr(gradients))}));
  }
};

} // namespace
} // namespace plait
