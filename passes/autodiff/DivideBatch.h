// A plait-dialect model written at batch B, rewritten to compute one micro-batch of B / K, so
// that --micro-batches (gradient accumulation, MicroBatches.h) applies to .mlir models as it
// does to ONNX models (whose importer divides the batch before it imports).
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace plait {

/// Rewrites `func` from batch B to batch B / `microBatches`. B is the leading dimension of
/// the arguments, which must all lead with it (the micro-batches slice each); they lead with
/// B / K afterwards. The new shapes follow the batch through the body in program order: an
/// op's results are inferred again from its operands (the ops with a shape rule), take their
/// batched operand's shape (elementwise ops, casts, the norms), or have the dimension that
/// carries the batch divided by K (reshape: the dimension holding the whole batch factor;
/// broadcast_to; attention's lse; a dropout mask, by the operand it multiplies); a slice over
/// the whole batch dimension keeps taking all of it. Ops that read nothing batched (params,
/// constants) are unchanged. Fails with a diagnostic at the op that cannot follow the batch (a
/// constant or attribute that pins it, a reshape that splits it), when an argument does not
/// lead with B, or when K does not divide B. A scalar float constant marked
/// `plait.unbiased_count = N` is n / (n - 1) for a statistic over N values of the batch (a
/// BatchNorm's unbiased running variance, as plait-zoo writes it): it becomes that of N / K.
mlir::LogicalResult divideBatch(mlir::func::FuncOp func, int64_t microBatches);

} // namespace plait
