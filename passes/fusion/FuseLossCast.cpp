// -plait-fuse-loss-cast: a bf16-mixed loss and its gradient computed from the bf16 logits.
//
// Under bf16-mixed the model's logits are bf16, and the loss runs in f32 on a cast of them:
//   %l = plait.cast %logits (bf16 -> f32)        the f32 copy
//   %v = plait.softmax_cross_entropy %l, %target                  the f32 loss
//   %d = plait.softmax_cross_entropy_grad %l, %target, %g          an f32 gradient
//   %b = plait.cast %d (f32 -> bf16)             the gradient the backward takes
// For a language model these are the step's largest tensors ([tokens, vocab]; the f32 copy
// and the f32 gradient are four times the bf16 logits together), live at the end of the
// forward and the start of the backward, where the step's peak often is. The loss is
// rewritten to read the bf16 logits and still give the f32 loss, and the gradient to read
// them and write bf16: the kernels widen a row at a time and compute it as for f32 logits
// (the gradient rounded once), the same bits as with the casts. The f32 copy and the f32
// gradient are then never stored.
//
// Rewritten: softmax_cross_entropy and softmax_cross_entropy_grad of [N, C, d...] logits,
// with or without class weights (f32, as the loss of the cast had them), whose input is a
// cast from bf16 or f16 to f32; the gradient only where its result feeds nothing but a cast
// back to the logits' type. The CPU kernels widen a position's classes at a time (D apart
// past rank 2), the CUDA kernels read the half logits as they read f32 ones. The module records `plait.fuse_loss_cast` {losses, gradients, casts,
// bytes} (casts: removed; bytes: the f32 gradients no longer stored).
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSELOSSCASTPASS
#include "passes/Passes.h.inc"

namespace {

/// The half-precision [N, C, d...] logits that `input` is a widening cast of, or null.
Value halfLogits(Value input) {
  auto widen = input.getDefiningOp<CastOp>();
  if (!widen)
    return nullptr;
  auto half = cast<RankedTensorType>(widen.getX().getType());
  Type element = half.getElementType();
  if (half.getRank() < 2 || !(element.isBF16() || element.isF16()) ||
      !cast<RankedTensorType>(widen.getType()).getElementType().isF32())
    return nullptr;
  return widen.getX();
}

/// `op` again with operand 0 `input` and result type `type`, in its place.
Operation *recreate(Operation *op, Value input, Type type) {
  OpBuilder builder(op);
  OperationState state(op->getLoc(), op->getName());
  SmallVector<Value> operands(op->getOperands());
  operands[0] = input;
  state.addOperands(operands);
  state.addAttributes(op->getAttrs());
  state.addTypes(type);
  return builder.create(state);
}

struct FuseLossCastPass : impl::FuseLossCastPassBase<FuseLossCastPass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t losses = 0, gradients = 0, casts = 0, bytes = 0;
    SmallVector<Operation *> candidates;
    module.walk([&](Operation *op) {
      if (isa<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyGradOp>(op))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      Value logits = halfLogits(op->getOperand(0));
      Operation *widen = op->getOperand(0).getDefiningOp();
      if (!logits)
        continue;
      if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op)) {
        // The loss of the widened logits, computed in f32 from the half ones.
        op->getResult(0).replaceAllUsesWith(recreate(op, logits, loss.getType())->getResult(0));
        op->erase();
        ++losses;
      } else {
        auto grad = cast<SoftmaxCrossEntropyGradOp>(op);
        if (!op->hasOneUse())
          continue;
        auto narrow = dyn_cast<CastOp>(*op->getUsers().begin());
        if (!narrow || narrow.getType() != logits.getType())
          continue;
        Operation *fused = recreate(op, logits, logits.getType());
        narrow.getResult().replaceAllUsesWith(fused->getResult(0));
        auto wide = cast<RankedTensorType>(grad.getType());
        bytes += wide.getNumElements() * (wide.getElementTypeBitWidth() / 8);
        ++gradients;
        ++casts;
        narrow->erase();
        op->erase();
      }
      if (widen->use_empty()) {
        widen->erase();
        ++casts;
      }
    }
    Builder b(&getContext());
    module->setAttr("plait.fuse_loss_cast",
                    b.getDictionaryAttr({b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
                                         b.getNamedAttr("casts", b.getI64IntegerAttr(casts)),
                                         b.getNamedAttr("gradients",
                                                        b.getI64IntegerAttr(gradients)),
                                         b.getNamedAttr("losses", b.getI64IntegerAttr(losses))}));
  }
};

} // namespace
} // namespace plait
