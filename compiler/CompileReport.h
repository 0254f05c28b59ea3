// plait-compile's report (--report JSON, and the plan's copy of it) and its --explain summary:
// what the passes recorded, memory, collectives, and the cost model's prediction.
#pragma once

#include <nlohmann/json.hpp>

#include "codegen/PlanBuilder.h"
#include "compiler/Pipeline.h"
#include "passes/analysis/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace plait {

/// The report of a compiled plan: model, memory, passes' records, units, collectives.
nlohmann::json buildReport(mlir::ModuleOp module, const MemoryPlan &memory,
                           const plan::PlanDesc &plan, const CompileOptions &options);

/// The --explain summary of `report`.
void printExplain(const nlohmann::json &report, llvm::raw_ostream &os);

/// Adds the cost model's prediction for `plan` on --cluster to `report` (predicted_step_ms,
/// predicted {..., instructions_us}, cluster {...}); nothing without --cluster. Returns an
/// exit code (1: the cluster cannot run the plan, reported).
int addPrediction(const plan::PlanDesc &plan, const CompileOptions &options,
                  nlohmann::json &report);

} // namespace plait
