// Data-parallel ops of the plait dialect: sharded parameter storage, the collectives the
// runtime executes over MPI (CPU) or NCCL (CUDA), and the two placement-level ops that
// plait-shard writes and plait-insert-collectives lowers.
//
// Groups: `groups` is a list of rank lists (like StableHLO's replica_groups), e.g.
// [array<i64: 0, 1>, array<i64: 2, 3>]. Groups of one op have equal sizes and no rank twice;
// a rank in no group skips the op. Ranks are below the module's `plait.world_size`.
#ifndef PLAIT_DIST_OPS_TD
#define PLAIT_DIST_OPS_TD

include "ir/PlaitDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Plait_Flat : StaticShapeTensorOf<[F32, F64, BF16, F16, I64, I32]>;

//===----------------------------------------------------------------------===//
// Sharded storage
//===----------------------------------------------------------------------===//

def Plait_ParamShardOp : Plait_Op<"param_shard", [Pure]> {
  let summary = "this rank's shard of a flat parameter unit";
  let description = [{
    The params listed in `pieces` laid end to end in a flat buffer of `padded_numel`
    elements (zeros after the last piece), cut into as many equal shards as a group has
    ranks. The result is the shard of this rank: shard i, where i is the rank's position in
    its group. Each piece is a dictionary {name, shape, offset} plus the param's initial
    value (`value`) or initializer spec (`init`), as `plait.param` has them.

    ```mlir
    %s = plait.param_shard "blocks.0" {groups = [array<i64: 0, 1>], padded_numel = 8 : i64,
        pieces = [{name = "w", shape = array<i64: 2, 3>, offset = 0 : i64, init = "ones"} ]}
        : tensor<4xf32>
    ```
  }];
  let arguments = (ins StrAttr:$unit, Plait_RankGroups:$groups, I64Attr:$padded_numel,
                       DictArrayAttr:$pieces);
  let results = (outs Plait_Flat:$result);
  let assemblyFormat = "$unit attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Plait_LocalShardOp : Plait_Op<"local_shard", [Pure]> {
  let summary = "this rank's chunk of a flat buffer (no communication)";
  let description = [{
    Chunk i of `input` (split into group-size equal chunks), where i is this rank's position
    in its group. Every rank must be in a group.

    ```mlir
    %c = plait.local_shard %flat {groups = [array<i64: 0, 1>]} : tensor<8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_Flat:$input, Plait_RankGroups:$groups);
  let results = (outs Plait_Flat:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Collectives (start non-blocking where they stand, complete before the first user)
//===----------------------------------------------------------------------===//

def Plait_AllReduceOp : Plait_Op<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "sum or mean of a tensor over each group";
  let description = [{
    ```mlir
    %g = plait.all_reduce %x {groups = [array<i64: 0, 1, 2, 3>], reduce = "mean"} : tensor<16xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$input, Plait_RankGroups:$groups,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduce);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Plait_ReduceScatterOp : Plait_Op<"reduce_scatter"> {
  let summary = "sum or mean over each group, each rank keeping its chunk";
  let description = [{
    `input` is split into group-size equal chunks; rank i of a group receives the reduced
    chunk i.

    ```mlir
    %s = plait.reduce_scatter %g {groups = [array<i64: 0, 1>], reduce = "mean"}
        : tensor<8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$input, Plait_RankGroups:$groups,
                       DefaultValuedAttr<StrAttr, "\"sum\"">:$reduce);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Plait_AllGatherOp : Plait_Op<"all_gather"> {
  let summary = "concatenation of every group member's chunk, in group order";
  let description = [{
    ```mlir
    %f = plait.all_gather %s {groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Plait_Flat:$input, Plait_RankGroups:$groups);
  let results = (outs Plait_Flat:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Plait_BroadcastOp : Plait_Op<"broadcast", [SameOperandsAndResultType]> {
  let summary = "the tensor of each group's root, on every member";
  let description = [{
    `root` is a position within the group.

    ```mlir
    %w = plait.broadcast %x {groups = [array<i64: 0, 1>], root = 0 : i64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$input, Plait_RankGroups:$groups,
                       DefaultValuedAttr<I64Attr, "0">:$root);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Placement-level ops (written by plait-shard, lowered by plait-insert-collectives)
//===----------------------------------------------------------------------===//

def Plait_UnshardOp : Plait_Op<"unshard", [Pure]> {
  let summary = "the whole flat unit, from this rank's shard";
  let description = [{
    Says that the full unit is needed here; plait-insert-collectives turns it into an
    all_gather and decides where it starts (prefetch).

    ```mlir
    %f = plait.unshard %s {groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Plait_Flat:$input, Plait_RankGroups:$groups);
  let results = (outs Plait_Flat:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Plait_SyncGradOp : Plait_Op<"sync_grad", [Pure]> {
  let summary = "a gradient averaged over the data-parallel ranks";
  let description = [{
    With `shard_groups`, `grad` is a flat unit gradient and the result is this rank's shard of
    its mean over the shard group (a reduce-scatter); with `replica_groups`, the (sharded or
    whole) gradient is then averaged over the replica group (an all-reduce). Together the two
    average over every data-parallel rank. plait-insert-collectives lowers it, bucketing
    whole-tensor gradients.

    ```mlir
    %g = plait.sync_grad %dw {replica_groups = [array<i64: 0, 1>]} : tensor<4x8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$grad, OptionalAttr<Plait_RankGroups>:$shard_groups,
                       OptionalAttr<Plait_RankGroups>:$replica_groups);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Plait_SyncMeanOp : Plait_Op<"sync_mean", [Pure, SameOperandsAndResultType]> {
  let summary = "a statistic of this rank's batch, averaged over every data-parallel rank";
  let description = [{
    What makes a BatchNorm synchronised (PyTorch's SyncBatchNorm): each rank holds a
    statistic of its slice of the global batch (a per-channel mean over equally many values
    on every rank), and the result is its mean over all ranks, which is the statistic of the
    global batch. Its gradient is the same mean of the gradient. The ONNX importer writes it
    under --sync-batch-norm; plait-shard lowers it to an all_reduce (mean) over every rank,
    or to its operand at world size 1.

    ```mlir
    %m = plait.sync_mean %local : tensor<1x8x1x1xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$input);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

#endif // PLAIT_DIST_OPS_TD
