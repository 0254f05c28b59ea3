// Gradient clipping as torch's clip_grad_value_ and clip_grad_norm_: on one rank
// (plait-build-train-step, each param's gradient) and on several (plait-shard, the averaged
// gradients the optimizer updates read, whole or this rank's shard). Value clipping comes
// first where both are asked for, as a script calling clip_grad_value_ then clip_grad_norm_.
#pragma once

#include "mlir/IR/Block.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace plait {

/// Clamps every gradient of `grads` (param -> gradient) to [-value, value].
void clampGradients(mlir::OpBuilder &b, mlir::Location loc,
                    llvm::MapVector<mlir::Value, mlir::Value> &grads, double value);

/// Scales every gradient of `grads` by min(1, maxNorm / (||g||_2 + 1e-6)).
void clipByGlobalNorm(mlir::OpBuilder &b, mlir::Location loc,
                      llvm::MapVector<mlir::Value, mlir::Value> &grads, double maxNorm);

/// The averaged gradient each optimizer update of `body` reads clamped to [-value, value]
/// (elementwise: a shard needs no collective); recorded as plait.train's clip_grad_value.
void clampSyncedGradients(mlir::Block &body, double value);

/// The averaged gradients scaled as clipByGlobalNorm scales them: whole (ddp) gradients are on
/// every rank, a sharded unit's squares are summed over its shard group first (one all-reduce
/// per group). Recorded as plait.train's clip_grad_norm.
void clipSyncedGradients(mlir::Block &body, double maxNorm);

} // namespace plait
