// -plait-fuse-gemm-epilogue: a linear layer's bias add becomes the GEMM's bias epilogue.
//
// A linear layer is matmul(x, W^T) then add(bias, product): the product is written, read back
// with the bias and written again. cuBLASLt adds a bias vector as the GEMM writes its result
// (CUBLASLT_EPILOGUE_BIAS), and a BLAS with beta = 1 accumulates onto a result that already
// holds the bias, so the add and one pass over the product disappear. Rewrites
//   add(matmul(a, b), bias) or add(bias, matmul(a, b))  ->  matmul(a, b, bias)
// when nothing else reads the product, the product is float, b is 2-D (one matrix for every
// row, as a linear layer's weight), the matmul has no result_perm and no bias yet, and bias
// is a vector [N] of the product's element type (so the add broadcasts nothing but the bias).
// Left as it is: a bias that is a cast read by nothing else (bf16-mixed casts each f32 param
// to bf16; plait-fuse-elementwise computes that cast inside the add's kernel, and taking the
// add away would leave the cast a kernel of its own). The product's discardable marks (unit,
// phase) carry over. The module records `plait.fuse_gemm_epilogue` {biases, left_cast} for
// the report.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUEPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The product `add` adds a bias vector to, with the bias in `bias`; null when `add` is not
/// such an add, or (`castLeft` set) when its bias is a cast only the add reads.
MatmulOp biasedProduct(AddOp add, Value &bias, bool &castLeft) {
  for (auto [product, vector] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())}) {
    auto mm = product.getDefiningOp<MatmulOp>();
    if (!mm || !product.hasOneUse() || mm.getBias() || mm.getResultPerm())
      continue;
    auto type = typeOf(product), rhs = typeOf(mm.getRhs()), b = typeOf(vector);
    if (!isa<FloatType>(type.getElementType()) || typeOf(add.getResult()) != type ||
        rhs.getRank() != 2 || type.getRank() < 2)
      continue;
    if (b.getElementType() != type.getElementType() || b.getRank() != 1 ||
        b.getDimSize(0) != type.getShape().back())
      continue;
    if (vector.getDefiningOp<CastOp>() && vector.hasOneUse()) {
      castLeft = true;
      continue;
    }
    bias = vector;
    return mm;
  }
  return nullptr;
}

struct FuseGemmEpiloguePass : impl::FuseGemmEpiloguePassBase<FuseGemmEpiloguePass> {
  void runOnOperation() final {
    ModuleOp module = getOperation();
    int64_t biases = 0, castsLeft = 0;
    SmallVector<AddOp> adds;
    module.walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      Value bias;
      bool castLeft = false;
      MatmulOp mm = biasedProduct(add, bias, castLeft);
      castsLeft += castLeft && !mm;
      if (!mm)
        continue;
      OpBuilder b(add); // the bias and the product's operands all come before the add
      auto fused = b.create<MatmulOp>(
          mm.getLoc(), mm.getType(), mm.getLhs(), mm.getRhs(), bias, mm.getTransposeLhsAttr(),
          mm.getTransposeRhsAttr(), mm.getLhsPermAttr(), mm.getRhsPermAttr(), nullptr);
      for (NamedAttribute attr : mm->getDiscardableAttrs())
        fused->setAttr(attr.getName(), attr.getValue());
      add.getResult().replaceAllUsesWith(fused.getResult());
      add.erase();
      mm.erase();
      ++biases;
    }
    Builder b(&getContext());
    module->setAttr("plait.fuse_gemm_epilogue",
                    b.getDictionaryAttr({b.getNamedAttr("biases", b.getI64IntegerAttr(biases)),
                                         b.getNamedAttr("left_cast", b.getI64IntegerAttr(castsLeft))}));
  }
};

} // namespace
} // namespace plait
