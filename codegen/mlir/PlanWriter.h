// Lowers a plait function and its memory plan to a plan description (codegen/PlanBuilder.h).
#pragma once

#include "codegen/PlanBuilder.h"
#include "passes/analysis/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace plait {

/// Fills `plan` with one tensor per planned buffer and one instruction per op of `func`.
/// Fails with a diagnostic on an op that has no runtime kernel or an attribute that
/// cannot be encoded. Without `names` (the strategy search's screening, which only sizes and
/// times the plan, and never runs or writes it) activations and instructions are left
/// unnamed, and params, constants and shards carry no initial values or layouts.
mlir::LogicalResult lowerToPlan(mlir::func::FuncOp func, const MemoryPlan &memory,
                                plan::PlanDesc &plan, bool names = true);

/// Human-readable name of an op's location ("/fc1/Gemm", "model.mlir:3:5").
std::string locationName(mlir::Location loc);

} // namespace plait
