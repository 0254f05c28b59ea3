// The plait dialect: declarations shared by every layer of the compiler.
#pragma once

#include <optional>

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ir/PlaitDialect.h.inc"
#include "ir/PlaitTraits.h"

#define GET_OP_CLASSES
#include "ir/PlaitOps.h.inc"

#define GET_OP_CLASSES
#include "ir/PlaitTrainOps.h.inc"

#define GET_OP_CLASSES
#include "ir/PlaitDistOps.h.inc"

#include "ir/VJPInterface.h.inc"

namespace mlir {
class DialectRegistry;
}

namespace plait {
/// The float value of a splat plait.constant (a scalar or any shape of one value), or nullopt.
std::optional<double> splatValue(mlir::Value v);

/// Attaches the VJP interface (ir/VJP.cpp) to every differentiable plait op.
void registerVJPInterfaces(mlir::DialectRegistry &registry);

/// Rewrites every plait.layer_norm_grad and plait.rms_norm_grad under `root` into the
/// reductions and elementwise ops that compute the same gradients (--no-fused-norm).
void expandNormGrads(mlir::Operation *root);

/// Replaces every plait.stop_gradient under `root` by its operand: once the training step is
/// built (or in a forward plan) it has done its work, and no kernel runs it.
void eraseStopGradients(mlir::Operation *root);

/// Checks a norm op's (and its gradient's) `param` (scale, bias): [axis, rank) of `x` is
/// normalisable and `param` has that trailing shape and x's element type.
mlir::LogicalResult verifyNormParam(mlir::Operation *op, mlir::Value x, int64_t axis,
                                    mlir::Value param, llvm::StringRef paramName);
/// A norm's epsilon, added to a variance before its square root: finite and > 0.
mlir::LogicalResult verifyEpsilon(mlir::Operation *op, double epsilon);
/// batch_norm / batch_norm_grad: x of rank >= 2 with C = x.shape[1] channels, and each of
/// `perChannel` (named by `names`) of shape [C] and x's element type.
mlir::LogicalResult verifyBatchNormOperands(mlir::Operation *op, mlir::Value x,
                                            mlir::ValueRange perChannel,
                                            llvm::ArrayRef<llvm::StringRef> names);

/// The type a training-mode BatchNorm computes its statistics in: f32 for bf16/f16, else
/// `element`.
mlir::Type batchNormComputeType(mlir::Type element);
/// A SyncBatchNorm's per-rank vector `vector` (named `name`) of x's 2C statistics or sums:
/// 1-D of 2C values (W * 2C with `multiple`, W >= 1) in batchNormComputeType.
mlir::LogicalResult verifyBatchNormVector(mlir::Operation *op, mlir::Value x, mlir::Value vector,
                                          llvm::StringRef name, bool multiple);

/// Checks plait.attention's (and attention_grad's) q [B, S, H, D], k [B, T, H, D],
/// v [B, T, H, E], scale, output `out` [B, S, H, E] and log-sum-exp `lse` [B, H, S] (f32),
/// emitting the error on `op`.
mlir::LogicalResult verifyAttentionOperands(mlir::Operation *op, mlir::Value q, mlir::Value k,
                                            mlir::Value v, double scale, mlir::Value out,
                                            mlir::Value lse);

/// Checks plait.attention's (and attention_grad's) `dropout` in [0, 1) and its `step`: a
/// scalar, present exactly when dropout > 0.
mlir::LogicalResult verifyAttentionDropout(mlir::Operation *op, double dropout, mlir::Value step);
} // namespace plait
