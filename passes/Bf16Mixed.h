// --precision bf16-mixed's rewrite of a model's forward (plait-build-train-step runs it
// before the backward is built).
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"

namespace plait {

/// --precision bf16-mixed: rewrites the forward to compute in bf16 while every param stays an
/// f32 master that the optimizer updates. Each float param, float graph input and float
/// constant is cast to bf16 where it is defined; every op producing f32 then produces bf16,
/// except the losses and the ops that reduce to a scalar, which read f32 (their bf16 operands
/// cast up) and produce f32. Autodiff then differentiates through the casts, so each
/// param's gradient arrives in f32 (cast from the bf16 gradient of its working copy); the
/// data-parallel passes move that cast after the gradient's collective, so gradients travel
/// in bf16. Returns the number of ops whose results became bf16.
mlir::FailureOr<int64_t> convertToBf16Mixed(mlir::func::FuncOp func);

} // namespace plait
