// Synchronised BatchNorm: plait.sync_mean lowered for a world size.
#pragma once

#include <cstdint>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace plait {

/// Module attribute: {all_reduces, all_gathers, statistics, batch_norms, batch_norm_grads,
/// elements, world_size} of the lowered plait.sync_means and SyncBatchNorms, for the report.
inline constexpr const char *kSyncMeansAttr = "plait.sync_means";

/// Each plait.sync_mean in `func` becomes an all_reduce (mean) over ranks 0..worldSize-1, or
/// its operand when worldSize is 1. A float scalar constant marked `plait.unbiased_ranks`
/// (with `plait.unbiased_count = n`: it is n / (n - 1) for a statistic over this rank's n
/// values) is rescaled to the global count, m / (m - 1) with m = n * worldSize, and the mark
/// dropped. A fused SyncBatchNorm, plait.batch_norm {sync}, becomes batch_norm_stats, an
/// all_gather of every rank's and the batch_norm reading them (`stats`); its gradient,
/// batch_norm_grad {sync}, batch_norm_grad_sums, an all_reduce (mean) of them and the
/// batch_norm_grad reading them (`sums`); at world size 1 both lose `sync`. With any of
/// them, records kSyncMeansAttr on `module`. Fails with a diagnostic at a marked constant
/// that is not such a scalar.
mlir::LogicalResult lowerSyncMeans(mlir::ModuleOp module, mlir::func::FuncOp func,
                                   int64_t worldSize);

} // namespace plait
