// -plait-conv-image-blocks: CPU convolutions with small output planes multiply several images'
// columns in one GEMM.
//
// The CPU conv2d and its adjoints are im2col and one OpenBLAS GEMM per image and group. A deep
// layer's output planes are small (ResNet-18's layer4 at 96x96 is 3x3), so those GEMMs are a
// few columns wide, where OpenBLAS runs at half its speed on wide ones. With
// `image_block` B the kernels put B images' columns side by side and multiply them at once
// (runtime/cpu/ConvSupport.h ColumnMatrix). B is a function of the shapes alone
// (Workspace.h convImageBlock), decided here so that the plan states it, the memory plan
// counts its workspace, and --no-conv-image-blocks can leave it out. The module records
// `plait.conv_image_blocks` {convolutions, blocked, most} for the report.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"
#include "passes/fusion/Convolutions.h"
#include "runtime/cpu/Workspace.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_CONVIMAGEBLOCKSPASS
#include "passes/Passes.h.inc"

namespace {

/// The image block of a convolution whose weight (or weight gradient) is `w` and whose output
/// (or output gradient) is `y`: 1 where the shapes are not static 4-D ones or the convolution
/// is grouped. A depthwise one has no columns (ConvShape::depthwise); another grouped one's
/// weight gradient splits across threads by image, which a block of the whole batch would
/// leave on one thread (RegNetY-400MF's grouped 3x3 convolutions: a step 1.03x as long on
/// two threads with blocks, bench/README.md).
template <typename Op> int64_t imageBlockOf(Op op, Value w, Value y) {
  if (op->hasAttr("winograd")) // no columns (plait-conv-winograd)
    return 1;
  auto wType = dyn_cast<RankedTensorType>(w.getType());
  auto yType = dyn_cast<RankedTensorType>(y.getType());
  if (!wType || !yType || !wType.hasStaticShape() || !yType.hasStaticShape() ||
      wType.getRank() != 4 || yType.getRank() != 4 || op.getGroup() != 1)
    return 1;
  auto all = [](ArrayRef<int64_t> values, int64_t v) {
    return llvm::all_of(values, [&](int64_t x) { return x == v; });
  };
  bool pointwise = wType.getDimSize(2) == 1 && wType.getDimSize(3) == 1 &&
                   all(op.getStrides(), 1) && all(op.getPads(), 0);
  return rt::convImageBlock(yType.getDimSize(0), yType.getDimSize(2) * yType.getDimSize(3),
                            pointwise);
}

struct ConvImageBlocksPass : impl::ConvImageBlocksPassBase<ConvImageBlocksPass> {
  void runOnOperation() final {
    int64_t convolutions = 0, blocked = 0, most = 1;
    Builder b(&getContext());
    auto mark = [&](auto op, Value w, Value y) {
      ++convolutions;
      const int64_t block = imageBlockOf(op, w, y);
      if (block <= 1)
        return;
      op->setAttr("image_block", b.getI64IntegerAttr(block));
      ++blocked;
      most = std::max(most, block);
    };
    forEachConvolution(getOperation(), mark);
    getOperation()->setAttr(
        "plait.conv_image_blocks",
        b.getDictionaryAttr({b.getNamedAttr("convolutions", b.getI64IntegerAttr(convolutions)),
                             b.getNamedAttr("blocked", b.getI64IntegerAttr(blocked)),
                             b.getNamedAttr("most", b.getI64IntegerAttr(most))}));
  }
};

} // namespace
} // namespace plait
