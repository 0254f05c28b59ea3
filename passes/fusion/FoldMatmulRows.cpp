// -plait-fold-matmul-rows: CPU permuted matmuls of one shared matrix as GEMMs over chunks of
// their rows (codegen/schema/MatmulLayout.h foldedChunkRows).
//
// plait-fold-transposes reads a transposed operand through strides instead of copying it:
// the CPU kernel then runs one GEMM per batch entry. Where the permutation moved the batch
// next to K, as nn.MultiheadAttention's [B, T, D] -> [T, B, D] around its in-projection
// does, each entry's GEMM has B rows (8 in a batch of 8 images) against the whole weight:
// 0.4x the GEMM rate of one GEMM of B x T rows on this VM. When the rhs is one matrix for
// every entry, the product is row by row the same for any order of the rows, so the kernel
// can take the result's stored rows in order, gather their lhs rows into its workspace a
// chunk at a time, and run one GEMM per chunk. Where that applies is a function of the
// shapes alone, decided here so that the plan states it, the memory plan counts the gathered
// chunk (runtime/cpu/Workspace.cpp gemmBytes), the cost model times the fewer GEMMs, and
// --no-fold-matmul-rows can leave it out. The module records `plait.fold_matmul_rows`
// {permuted, folded} for the report.
#include "passes/Passes.h"

#include "codegen/schema/MatmulLayout.h"
#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FOLDMATMULROWSPASS
#include "passes/Passes.h.inc"

namespace {

/// A static shape's dimensions, or empty.
SmallVector<int64_t> staticShape(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return {};
  return SmallVector<int64_t>(type.getShape());
}

/// The logical operand (`perm` applied, then the last two swapped with `swap`), or empty.
SmallVector<int64_t> logical(Value v, std::optional<ArrayRef<int64_t>> perm, bool swap) {
  SmallVector<int64_t> shape = staticShape(v);
  if (shape.size() < 2)
    return {};
  if (perm) {
    if (!matmul::isPermutation(*perm, shape.size()))
      return {};
    std::vector<int64_t> p = matmul::permuted(shape, *perm);
    shape.assign(p.begin(), p.end());
  }
  if (swap)
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  return shape;
}

/// Whether the permuted `op` folds: one rhs matrix for every batch entry and entries of few
/// rows (matmul::foldedChunkRows, the runtime's own rule).
bool folds(MatmulOp op) {
  SmallVector<int64_t> lhs = logical(op.getLhs(), op.getLhsPerm(), op.getTransposeLhs());
  SmallVector<int64_t> rhs = logical(op.getRhs(), op.getRhsPerm(), op.getTransposeRhs());
  if (lhs.empty() || rhs.empty())
    return false;
  int64_t entries = 1, rhsEntries = 1;
  for (size_t d = 0; d + 2 < lhs.size(); ++d)
    entries *= lhs[d];
  for (size_t d = 0; d + 2 < rhs.size(); ++d)
    rhsEntries *= rhs[d];
  return rhsEntries == 1 && matmul::foldedChunkRows(entries, lhs[lhs.size() - 2], lhs.back()) > 0;
}

struct FoldMatmulRowsPass : impl::FoldMatmulRowsPassBase<FoldMatmulRowsPass> {
  void runOnOperation() final {
    int64_t permuted = 0, folded = 0;
    Builder b(&getContext());
    getOperation().walk([&](MatmulOp op) {
      if (!op.getLhsPerm() && !op.getRhsPerm() && !op.getResultPerm())
        return;
      ++permuted;
      if (!folds(op))
        return;
      op->setAttr("fold_rows", b.getBoolAttr(true));
      ++folded;
    });
    getOperation()->setAttr(
        "plait.fold_matmul_rows",
        b.getDictionaryAttr({b.getNamedAttr("permuted", b.getI64IntegerAttr(permuted)),
                             b.getNamedAttr("folded", b.getI64IntegerAttr(folded))}));
  }
};

} // namespace
} // namespace plait
