// Choosing how a training step is placed and what it recomputes: the data-parallel passes,
// activation recomputation and the --mem-limit search.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/PlanBuilder.h"
#include "compiler/Pipeline.h"
#include "passes/analysis/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// Parses a byte count: a plain number of bytes or one with a suffix B, KB, MB, GB, TB
/// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "24GiB" or "1.5GB".
std::optional<int64_t> parseByteSize(const std::string &text);

/// "1.50 GiB", "12.0 KiB", "512 B": a byte count for people.
std::string humanBytes(int64_t bytes);

/// Applies --recompute and the data-parallel passes to a training step in place. With a
/// memory limit: `auto` adds recomputed segments, cheapest per byte first, until the plan
/// fits; a plan that cannot fit fails with one error line followed by a table of the
/// per-rank peak of each strategy and recompute choice, marking which fit.
///
/// With --strategy auto (which needs options.cluster) the placement, recompute and ddp
/// bucket size are searched: see searchStrategy in PlanSearch.cpp. `options` is updated to
/// the choice kept (strategy, bucket bytes, recompute), so the report describes that plan.
/// A step's memory plan and lowered plan, when the search already computed them for the
/// candidate it kept (so the pipeline does not plan the same step twice).
struct PlacedStep {
  MemoryPlan memory;
  plan::PlanDesc plan;
};
mlir::LogicalResult placeTrainStep(mlir::ModuleOp module, CompileOptions &options,
                                   std::optional<PlacedStep> *placed = nullptr);

/// The per-rank bytes the memory limit is checked against: everything the step allocates,
/// the arena plus the kernels' workspace (from lowering `step` with `memory`).
mlir::FailureOr<int64_t> perRankPeak(mlir::func::FuncOp step, const MemoryPlan &memory);

} // namespace plait
