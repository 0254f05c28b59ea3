// Gradient accumulation inside one step: the forward and backward of one micro-batch,
// repeated on K slices of the batch, with the gradients summed and averaged.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"

namespace plait {

/// `func` computes `loss` and, after it, the `grads` (param -> gradient) of one micro-batch:
/// its arguments are the batch inputs, each leading with the micro-batch size b. Rewrites it
/// into the step over `microBatches` = K micro-batches: each argument becomes K * b long, and
/// for k = 0..K-1 in turn the body runs on the slices [k*b, (k+1)*b) of the arguments. Each
/// micro-batch's gradient is added to the running sum right where it is produced, so its
/// activations die before the next micro-batch starts; the last addition is followed by the
/// division by K. Ops without operands (params, constants) are shared by the micro-batches.
/// On return `loss` is the mean of the K losses and `grads` the mean gradients, both defined
/// in the last micro-batch. `buffers` pairs buffer params with the index of the function
/// result that carries each one's value after the step: micro-batch k + 1 reads micro-batch
/// k's value in place of the param, as PyTorch's running statistics are updated by each
/// forward, so the result ends as the last micro-batch's. Fails with a diagnostic on an
/// argument without a batch dimension.
mlir::LogicalResult accumulateMicroBatches(
    mlir::func::FuncOp func, int64_t microBatches, mlir::Value &loss,
    llvm::MapVector<mlir::Value, mlir::Value> &grads,
    llvm::ArrayRef<std::pair<mlir::Value, unsigned>> buffers = {});

} // namespace plait
