// Activation recomputation: segments of the forward pass, what each keeps for the backward,
// and the rewrite that replays a segment right before its backward instead.
#pragma once

#include <set>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace plait {

/// The forward of a training step (the ops the loss is computed from), cut into segments: a
/// new segment starts where the forward first reads a param of a unit it has not read before
/// in this forward phase (units as plait-shard finds them by default: blocks.3.* is one
/// unit). With micro-batches each micro-batch's forward is a phase of its own.
/// What a segment is, and what stays alive for the backward:
/// - Unit: a segment per parameter unit; values crossing segments are kept.
/// - Layer: a segment per layer (X.weight, X.bias share layer X); values crossing layers kept.
/// - Nested: a segment per layer, but only values crossing units are kept; a layer's replay
///   recomputes the unit's earlier layers it needs from the unit's input again.
enum class RecomputeGranularity { Unit, Layer, Nested };

struct RecomputeAnalysis {
  std::vector<std::vector<mlir::Operation *>> segmentOps;
  llvm::DenseMap<mlir::Operation *, size_t> segmentOf;
  llvm::DenseMap<mlir::Operation *, int64_t> position; // program order
  llvm::DenseSet<mlir::Operation *> forward;           // the ops the loss is computed from
  std::set<size_t> lastOfPhase; // the last segment of each forward phase (micro-batch)
  std::vector<mlir::Operation *> forwardOrder;          // forward ops in program order
  llvm::DenseMap<mlir::Operation *, int64_t> groupOf;  // checkpoint group of a forward op
  std::set<int64_t> lastGroupOfPhase; // groups whose backward starts at once (kept)
  std::vector<int64_t> savedBytes; // bytes of activations the backward reads, per segment
  std::vector<double> flops;       // rough cost of replaying the segment

  /// A value kept whatever is recomputed: arguments, params and constants, values that
  /// cross into a later segment, values of the last segment, and results of ops with
  /// memory effects.
  bool isCheckpoint(mlir::Value v) const;
  /// An op of the step that the loss does not depend on (backward or optimizer).
  bool isBackward(mlir::Operation *op) const;
};

mlir::FailureOr<RecomputeAnalysis>
analyzeRecompute(mlir::func::FuncOp func,
                 RecomputeGranularity grain = RecomputeGranularity::Unit);

/// Replays each segment in `segments` (indices into segmentOps; the last is skipped) right
/// before the first backward op that reads one of its activations, and points the backward
/// at the replayed values, so the forward's copies die at the end of their segment.
/// Returns the number of ops added. Invalidates `analysis`.
int64_t recomputeSegments(mlir::func::FuncOp func, const RecomputeAnalysis &analysis,
                          llvm::ArrayRef<size_t> segments);

} // namespace plait
