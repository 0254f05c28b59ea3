// The convolution kernels the CPU layout passes annotate (plait-conv-image-blocks,
// plait-conv-grouped-direct), walked as one kind.
#pragma once

#include "ir/PlaitDialect.h"

#include "mlir/IR/Operation.h"

namespace plait {

/// Calls fn(op, w, y) for each plait.conv2d, conv2d_grad_input and conv2d_grad_weight under
/// `root`, `op` typed, `w` its weight (or weight gradient) [F, C/group, kH, kW] and `y` its
/// output (or output gradient) [N, F, OH, OW].
template <typename Fn> void forEachConvolution(mlir::Operation *root, Fn &&fn) {
  root->walk([&](mlir::Operation *op) {
    if (auto conv = mlir::dyn_cast<Conv2dOp>(op))
      fn(conv, conv.getW(), conv.getResult());
    else if (auto grad = mlir::dyn_cast<Conv2dGradInputOp>(op))
      fn(grad, grad.getW(), grad.getGrad());
    else if (auto grad = mlir::dyn_cast<Conv2dGradWeightOp>(op))
      fn(grad, grad.getResult(), grad.getGrad());
  });
}

} // namespace plait
