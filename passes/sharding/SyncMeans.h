// Synchronised BatchNorm: plait.sync_mean lowered for a world size.
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// Module attribute: {all_reduces, elements} of the lowered plait.sync_means, for the report.
inline constexpr const char *kSyncMeansAttr = "plait.sync_means";

/// Each plait.sync_mean in `func` becomes an all_reduce (mean) over ranks 0..worldSize-1, or
/// its operand when worldSize is 1. A float scalar constant marked `plait.unbiased_ranks`
/// (with `plait.unbiased_count = n`: it is n / (n - 1) for a statistic over this rank's n
/// values) is rescaled to the global count, m / (m - 1) with m = n * worldSize, and the mark
/// dropped. With any sync_mean, records kSyncMeansAttr on `module`. Fails with a diagnostic
/// at a marked constant that is not such a scalar.
mlir::LogicalResult lowerSyncMeans(mlir::ModuleOp module, mlir::func::FuncOp func,
                                   int64_t worldSize);

} // namespace plait
