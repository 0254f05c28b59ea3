// The optimizer updates of flat shards (plait-shard): the update op of one unit's shard, and
// the sums over the whole unit that LAMB's and Adafactor's sharded updates take from every
// rank of the shard group (plait.lamb_norms; plait.adafactor_stats and adafactor_norms),
// added once clipping is done.
#pragma once

#include "ir/PlaitDialect.h"

#include "mlir/IR/Builders.h"

namespace plait {

/// The update op of one flat shard, with `like`'s hyper-parameters (a copy of it on the
/// shard's param, gradient and states).
mlir::Operation *buildShardUpdate(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *like,
                                  mlir::Value param, mlir::Value grad,
                                  llvm::ArrayRef<mlir::Value> states);

/// An Adafactor update's second-moment states: its row and column, or its exp_avg_sq (not
/// exp_avg, nor a sharded update's stats and norms).
inline mlir::OperandRange secondMoments(AdafactorUpdateOp update) {
  return update.getMomentStates().drop_front(update.getBeta1() ? 1 : 0);
}

/// A flat shard's Adafactor update, with the hyper-parameters of `perParam` (the unit's
/// params' updates, in flat-buffer order): exp_avg (with beta1) sharded as `states` holds it,
/// and each param's second moment whole on every rank, its own state ops kept (the names and
/// shapes ddp gives them, so that checkpoints move between placements); `segments`,
/// `factors` and `groups` describe the shard (codegen/schema/AdafactorShard.h), and
/// materializeAdafactorSums adds its stats and norms. The moments are appended to `states`,
/// which then lists every state in the update's order.
mlir::Operation *buildAdafactorShardUpdate(mlir::OpBuilder &b, mlir::Location loc,
                                           llvm::ArrayRef<AdafactorUpdateOp> perParam,
                                           mlir::Value param, mlir::Value grad,
                                           mlir::ArrayAttr groups,
                                           llvm::SmallVectorImpl<mlir::Value> &states);

/// Each flat shard's LAMB update in `body` takes its params' norms over the whole unit:
/// plait.lamb_norms of this rank's part of each segment, all-reduced over the shard group,
/// just before it (after clipping, so that the norms see the gradients the update reads).
void materializeLambNorms(mlir::Block &body);

/// Each flat shard's Adafactor update in `body` takes sums over the whole unit:
/// plait.adafactor_stats of this rank's elements (the params' squares, the rows', columns'
/// and vectors' g^2 + eps1), all-reduced over the shard group, then plait.adafactor_norms
/// (u^2 from the second moments those give), all-reduced; both just before the update,
/// after clipping.
void materializeAdafactorSums(mlir::Block &body);

} // namespace plait
