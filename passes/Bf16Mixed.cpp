// --precision bf16-mixed's rewrite of the forward (Bf16Mixed.h).
#include "passes/Bf16Mixed.h"

#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace plait {

FailureOr<int64_t> convertToBf16Mixed(func::FuncOp func) {
  Block &body = func.getBody().front();
  MLIRContext *ctx = func.getContext();
  Type f32 = Float32Type::get(ctx), bf16 = BFloat16Type::get(ctx);
  auto isF32 = [&](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    return r && r.getElementType() == f32;
  };
  auto withElement = [](Type t, Type element) {
    return RankedTensorType::get(cast<RankedTensorType>(t).getShape(), element);
  };
  // A bf16 copy of `v` just before its first user (so that a param's copy lives from where
  // it is needed, and the data-parallel passes see where each param is first read), read by
  // every user.
  auto castDown = [&](Value v, OpBuilder &b) {
    Operation *first = nullptr;
    for (Operation *user : v.getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    if (!first)
      return;
    b.setInsertionPoint(first);
    auto c = b.create<CastOp>(v.getLoc(), withElement(v.getType(), bf16), v);
    v.replaceAllUsesExcept(c, c);
  };
  OpBuilder b(ctx);
  for (BlockArgument arg : body.getArguments())
    if (isF32(arg.getType()))
      castDown(arg, b);
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  // The scalar chain that ends in the loss (the loss op and the scalar arithmetic after it)
  // stays f32.
  Value loss = cast<func::ReturnOp>(body.getTerminator()).getOperand(0);
  llvm::SmallPtrSet<Operation *, 8> lossChain;
  SmallVector<Operation *> stack;
  if (Operation *def = loss.getDefiningOp())
    stack.push_back(def);
  while (!stack.empty()) {
    Operation *op = stack.pop_back_val();
    if (!lossChain.insert(op).second || isa<ParamOp, ConstantOp>(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto t = dyn_cast<RankedTensorType>(operand.getType()); t && t.getRank() == 0)
          stack.push_back(def);
  }
  int64_t converted = 0;
  for (Operation *op : ops) {
    if (op->hasTrait<OpTrait::IsTerminator>())
      continue;
    if (isa<ParamOp, ConstantOp>(op)) {
      if (isF32(op->getResult(0).getType()))
        castDown(op->getResult(0), b);
      continue;
    }
    if (isa<CastOp>(op) && op->getNumOperands() == 1 &&
        cast<RankedTensorType>(op->getResult(0).getType()).getElementType() == bf16)
      continue; // one of ours
    if (isa<HyperOp>(op))
      continue; // the step a dropout mask reads is the runtime's f32
    if (isa<SoftmaxCrossEntropyOp, NllLossOp>(op) || lossChain.contains(op)) {
      // Read f32: cast bf16 operands up.
      b.setInsertionPoint(op);
      for (OpOperand &operand : op->getOpOperands()) {
        auto t = dyn_cast<RankedTensorType>(operand.get().getType());
        if (t && t.getElementType() == bf16)
          operand.set(b.create<CastOp>(op->getLoc(), withElement(t, f32), operand.get()));
      }
      continue;
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      // Only the output becomes bf16: the log-sum-exp stays f32 (attention_grad reads it).
      if (isF32(attention.getOut().getType())) {
        attention.getOut().setType(withElement(attention.getOut().getType(), bf16));
        ++converted;
      }
      continue;
    }
    bool changed = false;
    for (Value r : op->getResults())
      if (isF32(r.getType())) {
        r.setType(withElement(r.getType(), bf16));
        changed = true;
      }
    converted += changed;
  }
  // Outputs besides the loss (dropped by the step) now have bf16 types.
  func.setType(
      FunctionType::get(ctx, func.getArgumentTypes(), body.getTerminator()->getOperandTypes()));
  if (failed(verify(func)))
    return failure();
  return converted;
}

} // namespace plait
