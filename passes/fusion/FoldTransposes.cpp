// -plait-fold-transposes: GEMMs read their operands transposed instead of a transposed copy.
//
// A training step is full of transposes that exist only to feed a matrix product: a linear
// layer's weight W^T in the forward, (W^T)^T and X^T in its backward, and a weight gradient
// computed as X^T dY and then transposed back to W's layout. BLAS reads either operand
// transposed for free (a flag and a leading dimension), so each such transpose is a copy of
// a whole matrix that need not exist. Three rewrites, in program order:
//   transpose(transpose(x)) -> one transpose with the composed permutation, or x itself;
//   transpose(matmul(a, b)) -> matmul(a, b) storing its result permuted (result_perm) when
//       its rows stay rows, else matmul(b, a) with both operands' last two swapped,
//       (AB)^T = B^T A^T, when the product has no other reader;
//   matmul(transpose(x), ...) -> matmul(x, ...) reading x with the composed permutation: a
//       transpose flag for a swap of the last two (likewise gemm's trans_a / trans_b), else
//       lhs_perm / rhs_perm when BLAS can read the permuted matrices through strides (an
//       attention head's [B, T, H, D] read as [B, H, T, D]).
// Transposes left without readers are erased. Results are bit-identical: the same products
// accumulate in the same order, only the memory layout BLAS reads differs. The module
// records the counts in `plait.fold_transposes` for the report.
#include "passes/Passes.h"

#include "codegen/schema/MatmulLayout.h"
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

/// The names of the attributes that say how `op` (matmul or gemm) reads operand `index`: its
/// transpose flag and (matmul only) its permutation; empty when it reads it as stored.
std::pair<StringRef, StringRef> layoutAttrs(Operation *op, unsigned index) {
  if (isa<MatmulOp>(op) && index < 2)
    return index == 0 ? std::pair<StringRef, StringRef>("transpose_lhs", "lhs_perm")
                      : std::pair<StringRef, StringRef>("transpose_rhs", "rhs_perm");
  if (isa<GemmOp>(op) && index < 2)
    return {index == 0 ? "trans_a" : "trans_b", ""};
  return {"", ""};
}

/// The permutation taking the stored operand to the one the product reads: its perm
/// attribute, then its transpose flag (a swap of the last two).
SmallVector<int64_t> readPerm(Operation *op, StringRef flag, StringRef permName, int64_t rank) {
  SmallVector<int64_t> perm;
  if (auto attr = permName.empty() ? DenseI64ArrayAttr()
                                   : op->getAttrOfType<DenseI64ArrayAttr>(permName))
    perm.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  else
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
  auto set = op->getAttrOfType<BoolAttr>(flag);
  if (set && set.getValue() && rank >= 2)
    std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

/// Sets how `op` reads an operand to `perm`, as a transpose flag where one does, else as a
/// permutation BLAS can read through strides (matmul only). Returns false (and changes
/// nothing) when neither can.
bool setReadPerm(Operation *op, StringRef flag, StringRef permName, ArrayRef<int64_t> perm) {
  bool swap = swapsLastTwo(perm), plain = isIdentity(perm);
  if (!swap && !plain &&
      (permName.empty() || !matmul::checkPerm(perm, perm.size(), /*result=*/false).empty()))
    return false;
  op->setAttr(flag, BoolAttr::get(op->getContext(), swap));
  if (permName.empty())
    return true;
  if (swap || plain)
    op->removeAttr(permName);
  else
    op->setAttr(permName, DenseI64ArrayAttr::get(op->getContext(), perm));
  return true;
}

/// The matmul/gemm operand `operand` read through a transpose: reads the transpose's input
/// with the composed permutation instead (a flag, or strides). Returns whether it did.
bool foldOperand(OpOperand &operand, Counts &counts) {
  auto t = operand.get().getDefiningOp<TransposeOp>();
  if (!t)
    return false;
  Operation *op = operand.getOwner();
  auto [flag, permName] = layoutAttrs(op, operand.getOperandNumber());
  int64_t rank = rankOf(t.getResult());
  if (flag.empty() || rank < 2)
    return false;
  // Read as transpose(transpose(x, P), current): dimension i of x is P[current[i]].
  SmallVector<int64_t> current = readPerm(op, flag, permName, rank), composed;
  for (int64_t i : current)
    composed.push_back(t.getPerm()[i]);
  if (!setReadPerm(op, flag, permName, composed))
    return false;
  operand.set(t.getX());
  ++counts.operands;
  return true;
}

void foldMatmulOperands(Operation *op, Counts &counts) {
  for (OpOperand &operand : op->getOpOperands())
    foldOperand(operand, counts);
}

/// transpose(matmul(a, b)), the product read by nothing else: the product stores its result
/// permuted (result_perm) when its rows stay rows, or else computes (AB)^T = B^T A^T, with
/// the operands swapped and their flags toggled, when that makes them rows. Returns the new
/// product, or null.
MatmulOp foldTransposedProduct(TransposeOp t, Counts &counts) {
  auto mm = t.getX().getDefiningOp<MatmulOp>();
  if (!mm || !mm->hasOneUse() || rankOf(mm.getLhs()) < 2 || rankOf(mm.getRhs()) < 2 ||
      mm.getBias()) // a bias runs along the product's columns, which a swap would make rows
    return nullptr;
  int64_t rank = rankOf(mm.getResult());
  // Stored as transpose(transpose(product, R), Q): dimension i of the product is R[Q[i]].
  SmallVector<int64_t> stored;
  std::optional<ArrayRef<int64_t>> r = mm.getResultPerm();
  for (int64_t q : t.getPerm())
    stored.push_back(r ? (*r)[q] : q);
  bool swapOperands = stored.back() == rank - 2;
  if (stored.back() != rank - 1 && !swapOperands)
    return nullptr;
  OpBuilder b(t);
  auto product = b.create<MatmulOp>(mm.getLoc(), t.getType(),
                                    swapOperands ? mm.getRhs() : mm.getLhs(),
                                    swapOperands ? mm.getLhs() : mm.getRhs(),
                                    mm.getTransposeLhs(), mm.getTransposeRhs());
  // Unit, phase and other discardable marks of the product carry over.
  for (NamedAttribute attr : mm->getDiscardableAttrs())
    product->setAttr(attr.getName(), attr.getValue());
  bool ok = true;
  if (swapOperands) {
    // (AB)^T = B^T A^T: each operand read with its last two swapped, and the product's
    // dimensions are the transposed product's, whose last two are swapped.
    for (unsigned i = 0; i < 2; ++i) {
      auto [flag, permName] = layoutAttrs(mm, 1 - i);
      SmallVector<int64_t> perm = readPerm(mm, flag, permName, rankOf(mm->getOperand(1 - i)));
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      auto [newFlag, newPermName] = layoutAttrs(product, i);
      ok = ok && setReadPerm(product, newFlag, newPermName, perm);
    }
    for (int64_t &d : stored)
      d = d == rank - 1 ? rank - 2 : d == rank - 2 ? rank - 1 : d;
  } else {
    for (unsigned i = 0; i < 2; ++i) {
      auto [flag, permName] = layoutAttrs(mm, i);
      SmallVector<int64_t> perm = readPerm(mm, flag, permName, rankOf(mm->getOperand(i)));
      ok = ok && setReadPerm(product, flag, permName, perm);
    }
  }
  if (!ok) {
    product.erase();
    return nullptr;
  }
  if (!isIdentity(stored))
    product.setResultPermAttr(DenseI64ArrayAttr::get(product.getContext(), stored));
  t.getResult().replaceAllUsesWith(product.getResult());
  t.erase();
  mm.erase();
  ++counts.results;
  ++counts.removed;
  return product;
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
