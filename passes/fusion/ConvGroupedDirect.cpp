// -plait-conv-grouped-direct: CPU grouped convolutions of narrow groups computed directly.
//
// The CPU conv2d and its adjoints are im2col and one OpenBLAS GEMM per image and group. A
// grouped convolution of narrow groups (RegNet's width 8, ResNeXt's 4 to 16) makes those
// GEMMs at most 16 rows tall with a 9x larger column matrix to build each time: RegNetY-400MF's
// grouped 3x3 convolutions ran at 7-10 GFLOP/s where its dense 1x1 ones ran at 50-60. With
// `direct` the kernels compute such a convolution a group at a time, its planes transposed to
// [pixel][lane] (runtime/cpu/ConvSupport.h groupedConv2d; Workspace.h groupedDirectShape, the
// shapes it takes: a depthwise one is computed directly anyway; groupedDirectPays, those where
// it is faster: planes of at most 256 pixels, or 16 filters a group). Decided here so that the plan
// states it, the memory plan counts its workspace, and --no-direct-grouped-conv can leave it
// out. The module records `plait.conv_grouped_direct` {grouped, direct} for the report.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"
#include "passes/fusion/Convolutions.h"
#include "runtime/cpu/Workspace.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_CONVGROUPEDDIRECTPASS
#include "passes/Passes.h.inc"

namespace {

struct ConvGroupedDirectPass : impl::ConvGroupedDirectPassBase<ConvGroupedDirectPass> {
  void runOnOperation() final {
    int64_t grouped = 0, direct = 0;
    Builder b(&getContext());
    auto mark = [&](auto op, Value w, Value y) {
      const int64_t group = op.getGroup();
      auto type = dyn_cast<RankedTensorType>(w.getType());
      auto yType = dyn_cast<RankedTensorType>(y.getType());
      if (group <= 1 || !type || type.getRank() != 4 || !type.hasStaticShape() || !yType ||
          yType.getRank() != 4 || !yType.hasStaticShape())
        return;
      const int64_t filters = type.getDimSize(0), groupChannels = type.getDimSize(1);
      if (groupChannels == 1 && filters == group) // depthwise: direct anyway
        return;
      ++grouped;
      if (filters % group != 0 || !rt::groupedDirectShape(group, groupChannels, filters / group) ||
          !rt::groupedDirectPays(filters / group, yType.getDimSize(2) * yType.getDimSize(3)))
        return;
      op->setAttr("direct", b.getBoolAttr(true));
      ++direct;
    };
    forEachConvolution(getOperation(), mark);
    getOperation()->setAttr(
        "plait.conv_grouped_direct",
        b.getDictionaryAttr({b.getNamedAttr("grouped", b.getI64IntegerAttr(grouped)),
                             b.getNamedAttr("direct", b.getI64IntegerAttr(direct))}));
  }
};

} // namespace
} // namespace plait
