// -plait-conv-winograd: CPU 3x3 stride-1 convolutions and their gradients by Winograd's
// F(2x2, 3x3) (runtime/cpu/Winograd.h).
//
// The CPU conv2d is im2col and a GEMM of 9 multiply-adds per input channel and output pixel.
// Winograd's minimal filtering computes a 2x2 block of outputs with 16 per input channel
// instead of 36, as 16 GEMMs over the blocks between cheap transforms; the input gradient of
// a stride-1 convolution is the same kind of correlation (of dy with the weights turned), and
// the weight gradient the algorithm's transpose (16 GEMMs summing over the blocks). Where
// it pays is a function of the shapes alone (Workspace.h winogradPays), decided here so that
// the plan states it, the memory plan counts its workspace (Workspace.cpp winogradBytes), and
// --no-winograd can leave it out. The module records `plait.conv_winograd` {convolutions,
// winograd} for the report.
#include "passes/Passes.h"

#include "ir/PlaitDialect.h"
#include "runtime/cpu/Workspace.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_CONVWINOGRADPASS
#include "passes/Passes.h.inc"

namespace {

/// Whether the convolution whose weight is `w` [F, C, 3, 3], reading planes of `in` channels
/// and writing `out` [N, outChannels, H, W] (the weight gradient: summing over dy's tiles),
/// runs by Winograd: static shapes, a 3x3 window of stride 1 and dilation 1, one group, and
/// shapes that pay.
template <typename Op> bool winogradOf(Op op, Value w, int64_t inChannels, Value out) {
  auto wType = dyn_cast<RankedTensorType>(w.getType());
  auto outType = dyn_cast<RankedTensorType>(out.getType());
  if (!wType || !outType || !wType.hasStaticShape() || !outType.hasStaticShape() ||
      wType.getRank() != 4 || outType.getRank() != 4 || op.getStrides().size() != 2 ||
      op.getDilations().size() != 2 ||
      !rt::winogradWindow(wType.getDimSize(2), wType.getDimSize(3), op.getStrides()[0],
                          op.getStrides()[1], op.getDilations()[0], op.getDilations()[1],
                          op.getGroup()))
    return false;
  return rt::winogradPays(inChannels, outType.getDimSize(1), outType.getDimSize(2),
                          outType.getDimSize(3));
}

int64_t channels(Value v, int64_t dim) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == 4 ? type.getDimSize(dim) : 0;
}

struct ConvWinogradPass : impl::ConvWinogradPassBase<ConvWinogradPass> {
  void runOnOperation() final {
    int64_t convolutions = 0, winograd = 0;
    Builder b(&getContext());
    auto mark = [&](Operation *op, bool pays) {
      ++convolutions;
      if (!pays)
        return;
      op->setAttr("winograd", b.getBoolAttr(true));
      ++winograd;
    };
    getOperation().walk([&](Operation *op) {
      if (auto conv = dyn_cast<Conv2dOp>(op)) // x's channels in, y's out
        mark(op, winogradOf(conv, conv.getW(), channels(conv.getW(), 1), conv.getResult()));
      else if (auto grad = dyn_cast<Conv2dGradInputOp>(op)) // dy's channels in, dx's out
        mark(op, winogradOf(grad, grad.getW(), channels(grad.getW(), 0), grad.getResult()));
      else if (auto grad = dyn_cast<Conv2dGradWeightOp>(op)) // the forward's, over dy's tiles
        mark(op, winogradOf(grad, grad.getResult(), channels(grad.getResult(), 1), grad.getGrad()));
    });
    getOperation()->setAttr(
        "plait.conv_winograd",
        b.getDictionaryAttr({b.getNamedAttr("convolutions", b.getI64IntegerAttr(convolutions)),
                             b.getNamedAttr("winograd", b.getI64IntegerAttr(winograd))}));
  }
};

} // namespace
} // namespace plait
