// Gradient clipping as torch's clip_grad_value_ and clip_grad_norm_: on one rank
// (plait-build-train-step, each param's gradient) and on several (plait-shard, the averaged
// gradients the optimizer updates read, whole or this rank's shard). Value clipping comes
// first where both are asked for, as a script calling clip_grad_value_ then clip_grad_norm_.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <string>

namespace plait {

/// Clamps every gradient of `grads` (param -> gradient) to [-value, value].
void clampGradients(mlir::OpBuilder &b, mlir::Location loc,
                    llvm::MapVector<mlir::Value, mlir::Value> &grads, double value);

/// Why `normType` cannot be clip_grad_norm_'s norm_type (it must be > 0, or infinity), or "".
std::string invalidNormType(double normType);

/// `normType` as plait.train's clip_grad_norm_type records it: "inf", or the number ("1").
std::string normTypeName(double normType);

/// Scales every gradient of `grads` by min(1, maxNorm / (||g||_p + 1e-6)), ||g||_p the
/// p-norm of all of them together, p = `normType` (the largest |g| for infinity), and returns
/// that norm (an f32 scalar; null without gradients), as torch's clip_grad_norm_. maxNorm 0
/// only measures the norm.
mlir::Value clipByGlobalNorm(mlir::OpBuilder &b, mlir::Location loc,
                             llvm::MapVector<mlir::Value, mlir::Value> &grads, double maxNorm,
                             double normType);

/// The averaged gradient each optimizer update of `body` reads clamped to [-value, value]
/// (elementwise: a shard needs no collective); recorded as plait.train's clip_grad_value.
void clampSyncedGradients(mlir::Block &body, double value);

/// The averaged gradients scaled as clipByGlobalNorm scales them: whole (ddp) gradients are on
/// every rank, a sharded unit's |g|^p are summed over its shard group first (one all-reduce
/// per group; for the infinity norm, an all-gather of each rank's largest |g| and their
/// max). Returns the norm (null without updates); maxNorm 0 only measures it. Recorded as
/// plait.train's clip_grad_norm (and clip_grad_norm_type where p is not 2).
mlir::Value clipSyncedGradients(mlir::Block &body, double maxNorm, double normType);

/// --log-grad-norm, or the norm --clip-grad-norm computes: `norm` becomes the step's
/// last output, named grad_norm (plait-run logs it each step); plait.train's log_grad_norm.
void appendGradNormOutput(mlir::func::FuncOp func, mlir::Value norm);

} // namespace plait
