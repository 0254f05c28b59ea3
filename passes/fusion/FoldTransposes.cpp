// -plait-fold-transposes: GEMMs read their operands transposed instead of a transposed copy.
//
// A training step is full of transposes that exist only to feed a matrix product: a linear
// layer's weight W^T in the forward, (W^T)^T and X^T in its backward, and a weight gradient
// computed as X^T dY and then transposed back to W's layout. BLAS reads either operand
// transposed for free (a flag and a leading dimension), so each such transpose is a copy of
// a whole matrix that need not exist. Three rewrites, in program order:
//   transpose(transpose(x)) -> one transpose with the composed permutation, or x itself;
//   transpose(matmul(a, b)) -> matmul(b, a) with both transpose flags toggled, (AB)^T = B^T A^T,
//       when the product has no other reader;
//   matmul(transpose(x), ...) -> matmul(x, ...) with transpose_lhs toggled (likewise the rhs,
//       and gemm's trans_a / trans_b), for a transpose that swaps the last two dimensions.
// Transposes left without readers are erased. Results are bit-identical: the same products
// accumulate in the same order, only the memory layout BLAS reads differs. The module
// records the counts in `plait.fold_transposes` for the report.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FOLDTRANSPOSESPASS
#include "passes/Passes.h.inc"

namespace {

/// True when `perm` swaps the last two dimensions and keeps the others.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  size_t r = perm.size();
  if (r < 2 || perm[r - 1] != int64_t(r - 2) || perm[r - 2] != int64_t(r - 1))
    return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

bool isIdentity(ArrayRef<int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

struct Counts {
  int64_t operands = 0;   // GEMM operands read transposed instead of copied
  int64_t results = 0;    // products computed transposed instead of transposed after
  int64_t composed = 0;   // transpose(transpose(x)) merged
  int64_t removed = 0;    // transpose ops erased
};

/// The matmul/gemm operand `operand` read through a last-two transpose: reads its input with
/// the flag toggled instead. Returns whether it did.
bool foldOperand(OpOperand &operand, Counts &counts) {
  auto t = operand.get().getDefiningOp<TransposeOp>();
  if (!t || !swapsLastTwo(t.getPerm()))
    return false;
  Operation *op = operand.getOwner();
  unsigned index = operand.getOperandNumber();
  StringRef flag;
  if (isa<MatmulOp>(op))
    flag = index == 0 ? "transpose_lhs" : "transpose_rhs";
  else if (isa<GemmOp>(op) && index < 2)
    flag = index == 0 ? "trans_a" : "trans_b";
  else
    return false;
  auto current = op->getAttrOfType<BoolAttr>(flag);
  bool set = current && current.getValue();
  op->setAttr(flag, BoolAttr::get(op->getContext(), !set));
  operand.set(t.getX());
  ++counts.operands;
  return true;
}

void foldMatmulOperands(Operation *op, Counts &counts) {
  for (OpOperand &operand : op->getOpOperands())
    foldOperand(operand, counts);
}

/// transpose(matmul(a, b)) over the last two dimensions, the product read by nothing else:
/// matmul(b, a) with the flags toggled and swapped. Returns the new product, or null.
MatmulOp foldTransposedProduct(TransposeOp t, Counts &counts) {
  auto mm = t.getX().getDefiningOp<MatmulOp>();
  if (!mm || !swapsLastTwo(t.getPerm()) || !mm->hasOneUse() || rankOf(mm.getLhs()) < 2 ||
      rankOf(mm.getRhs()) < 2)
    return nullptr;
  OpBuilder b(t);
  auto swapped = b.create<MatmulOp>(mm.getLoc(), t.getType(), mm.getRhs(), mm.getLhs(),
                                    !mm.getTransposeRhs(), !mm.getTransposeLhs());
  // Unit, phase and other discardable marks of the product carry over.
  for (NamedAttribute attr : mm->getDiscardableAttrs())
    swapped->setAttr(attr.getName(), attr.getValue());
  t.getResult().replaceAllUsesWith(swapped.getResult());
  t.erase();
  mm.erase();
  ++counts.results;
  ++counts.removed;
  return swapped;
}

/// transpose(transpose(x)): one transpose with the composed permutation, or x when the two
/// cancel. Returns whether `t` was erased.
bool composeTransposes(TransposeOp t, Counts &counts) {
  auto inner = t.getX().getDefiningOp<TransposeOp>();
  if (!inner)
    return false;
  ArrayRef<int64_t> outer = t.getPerm(), first = inner.getPerm();
  SmallVector<int64_t> perm(outer.size());
  for (size_t i = 0; i < outer.size(); ++i)
    perm[i] = first[outer[i]];
  ++counts.composed;
  if (isIdentity(perm)) {
    t.getResult().replaceAllUsesWith(inner.getX());
    t.erase();
    ++counts.removed;
    return true;
  }
  t.getXMutable().assign(inner.getX());
  t.setPerm(perm);
  return false;
}

struct FoldTransposesPass : impl::FoldTransposesPassBase<FoldTransposesPass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    Counts counts;
    module.walk([&](func::FuncOp func) {
      for (Block &block : func.getBody()) {
        for (Operation &op : llvm::make_early_inc_range(block)) {
          if (auto t = dyn_cast<TransposeOp>(op)) {
            if (composeTransposes(t, counts))
              continue;
            if (MatmulOp swapped = foldTransposedProduct(t, counts))
              foldMatmulOperands(swapped, counts);
          } else if (isa<MatmulOp, GemmOp>(op)) {
            foldMatmulOperands(&op, counts);
          }
        }
        // Transposes nothing reads any more, last first so that chains go too.
        for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
          if (isa<TransposeOp>(op) && op.use_empty()) {
            op.erase();
            ++counts.removed;
          }
      }
    });
    Builder b(module.getContext());
    module->setAttr("plait.fold_transposes",
                    b.getDictionaryAttr({b.getNamedAttr("operands", b.getI64IntegerAttr(counts.operands)),
                                         b.getNamedAttr("results", b.getI64IntegerAttr(counts.results)),
                                         b.getNamedAttr("composed", b.getI64IntegerAttr(counts.composed)),
                                         b.getNamedAttr("removed", b.getI64IntegerAttr(counts.removed))}));
  }
};

} // namespace
} // namespace plait
