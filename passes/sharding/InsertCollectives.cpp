// -plait-insert-collectives: sync_grad and unshard become collectives on flat buffers,
// bucketed (ddp) and placed so that communication overlaps computation.
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/analysis/MemoryPlan.h"
#include "passes/sharding/FlatUnit.h"

#include "ir/OpKinds.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace plait {
#define GEN_PASS_DEF_INSERTCOLLECTIVESPASS
#include "passes/Passes.h.inc"

namespace {

DenseMap<Operation *, int64_t> positions(Block &body) {
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body)
    position[&op] = position.size();
  return position;
}

/// The earliest user of `v` in the block, or nullptr.
Operation *firstUser(Value v, DenseMap<Operation *, int64_t> &position) {
  Operation *first = nullptr;
  for (Operation *user : v.getUsers())
    if (!first || position.lookup(user) < position.lookup(first))
      first = user;
  return first;
}

struct InsertCollectivesPass : impl::InsertCollectivesPassBase<InsertCollectivesPass> {
  using Base::Base;

  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto func = entryFunction(module, "insert collectives into");
    if (failed(func))
      return signalPassFailure();
    if (bucketBytes < 1 || prefetch < 0 || reduceScattersInFlight < 0) {
      module.emitError("bucket-bytes must be positive, and prefetch and "
                       "reduce-scatters-in-flight non-negative");
      return signalPassFailure();
    }
    module->setAttr(kReduceScattersInFlightAttr,
                    IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                     int64_t(reduceScattersInFlight)));
    Block &body = func->getBody().front();
    int64_t world = worldSizeOf(module);
    MLIRContext *ctx = &getContext();

    // The logged loss is the global-batch loss: the mean of the ranks' losses.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (world > 1 && module->hasAttr("plait.train") && ret.getNumOperands() > 0) {
      Value loss = ret.getOperand(0);
      OpBuilder b(ret);
      if (loss.getDefiningOp())
        b.setInsertionPointAfterValue(loss);
      Value mean = b.create<AllReduceOp>(loss.getLoc(), loss, groupsAttr(ctx, worldGroup(world)),
                                         b.getStringAttr("mean"));
      ret->setOperand(0, mean);
    }

    lowerBucketedGrads(body);
    lowerFlatGrads(body);
    lowerGathers(body, ret.getOperand(0));
  }

  /// ddp: whole-tensor gradients, packed into buckets in the order they are produced.
  void lowerBucketedGrads(Block &body) {
    DenseMap<Operation *, int64_t> position = positions(body);
    SmallVector<SyncGradOp> syncs;
    for (auto sync : body.getOps<SyncGradOp>())
      if (!sync.getShardGroups())
        syncs.push_back(sync);
    SmallVector<SmallVector<SyncGradOp>> buckets;
    int64_t bytes = 0;
    for (SyncGradOp sync : syncs) {
      int64_t size = tensorBytes(sync.getGrad().getType());
      bool fits = !buckets.empty() && bytes + size <= bucketBytes &&
                  buckets.back().front().getReplicaGroupsAttr() == sync.getReplicaGroupsAttr() &&
                  buckets.back().front().getGrad().getType().getElementType() ==
                      sync.getGrad().getType().getElementType();
      if (!fits) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(sync);
      bytes += size;
    }
    for (auto &bucket : buckets) {
      SyncGradOp last = bucket.back();
      Location loc = last.getLoc();
      OpBuilder b(last);
      b.setInsertionPointAfter(last);
      if (bucket.size() == 1) {
        Value reduced = b.create<AllReduceOp>(loc, last.getGrad(), last.getReplicaGroupsAttr(),
                                              b.getStringAttr("mean"));
        last.replaceAllUsesWith(reduced);
        last->erase();
        continue;
      }
      SmallVector<Value> grads;
      SmallVector<Type> types;
      Operation *firstUse = nullptr;
      for (SyncGradOp sync : bucket) {
        grads.push_back(sync.getGrad());
        types.push_back(sync.getType());
        Operation *use = firstUser(sync, position);
        if (use && (!firstUse || position.lookup(use) < position.lookup(firstUse)))
          firstUse = use;
      }
      Value flat = flattenInto(b, loc, grads, 0);
      Value reduced = b.create<AllReduceOp>(loc, flat, last.getReplicaGroupsAttr(),
                                            b.getStringAttr("mean"));
      // Unpacked where the optimizer first needs a piece, so the all-reduce runs meanwhile.
      if (firstUse)
        b.setInsertionPoint(firstUse);
      for (auto [sync, piece] : llvm::zip(bucket, unflatten(b, loc, reduced, types))) {
        sync.replaceAllUsesWith(piece);
        sync->erase();
      }
    }
  }

  /// zero/fsdp/hsdp: reduce-scatter in the shard group, then all-reduce across replicas.
  void lowerFlatGrads(Block &body) {
    for (SyncGradOp sync : llvm::to_vector(body.getOps<SyncGradOp>())) {
      OpBuilder b(sync);
      Value v = sync.getGrad();
      auto mean = b.getStringAttr("mean");
      if (auto shards = sync.getShardGroupsAttr())
        v = b.create<ReduceScatterOp>(sync.getLoc(), sync.getType(), v, shards, mean);
      if (auto replicas = sync.getReplicaGroupsAttr())
        v = b.create<AllReduceOp>(sync.getLoc(), v, replicas, mean);
      sync.replaceAllUsesWith(v);
      sync->erase();
    }
  }

  /// unshard -> all_gather; in the forward and backward phases the k-th gather starts
  /// before the first use of the (k - prefetch)-th, so it overlaps that unit's compute.
  void lowerGathers(Block &body, Value loss) {
    DenseMap<Operation *, int64_t> position = positions(body);
    int64_t forwardEnd = loss.getDefiningOp() ? position.lookup(loss.getDefiningOp()) : 0;
    int64_t backwardEnd = position.size();
    for (Operation &op : body)
      if (isa<HyperOp, AssignOp>(op) || isOptimizerUpdate(&op)) {
        backwardEnd = position.lookup(&op);
        break;
      }
    SmallVector<AllGatherOp> forward, backward;
    for (UnshardOp unshard : llvm::to_vector(body.getOps<UnshardOp>())) {
      OpBuilder b(unshard);
      auto gather = b.create<AllGatherOp>(unshard.getLoc(), unshard.getType(),
                                          unshard.getInput(), unshard.getGroupsAttr());
      int64_t at = position.lookup(unshard);
      position[gather] = at;
      unshard.replaceAllUsesWith(gather.getResult());
      unshard->erase();
      // Gathers of updated params (zero1/2, after the optimizer) depend on the update.
      if (at < forwardEnd)
        forward.push_back(gather);
      else if (at < backwardEnd)
        backward.push_back(gather);
    }
    for (auto *phase : {&forward, &backward})
      for (size_t k = 1; k < phase->size(); ++k) {
        size_t ahead = k > (size_t)prefetch ? k - prefetch : 0;
        if (ahead == k)
          continue;
        Operation *start = firstUser((*phase)[ahead], position);
        if (start && position.lookup(start) < position.lookup((*phase)[k])) {
          // bf16-mixed gathers the shard's bf16 cast: it moves along.
          if (auto c = (*phase)[k].getInput().getDefiningOp<CastOp>(); c && c->hasOneUse())
            c->moveBefore(start);
          (*phase)[k]->moveBefore(start);
        }
      }
  }
};

} // namespace
} // namespace plait
