// plait-shard with micro-batches (shard.mlir's two-layer model at batch 4, 2 micro-batches of
// 2): zero2 units reduce-scatter each micro-batch's gradients and sum the shards; with
// sharded-accumulation=false, and under zero1, the whole gradients are summed and reduced once.
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=2' --plait-build-train-step='optimizer=sgd micro-batches=2' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=SHARD
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=2' --plait-build-train-step='optimizer=sgd micro-batches=2' --plait-shard='world-size=2 strategy=zero2 sharded-accumulation=false' | FileCheck %s --check-prefix=WHOLE
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=2' --plait-build-train-step='optimizer=sgd micro-batches=2' --plait-shard='world-size=2 strategy=zero1' | FileCheck %s --check-prefix=WHOLE
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=2' --plait-build-train-step='optimizer=sgd micro-batches=2' --plait-shard='world-size=2 strategy=zero2' --plait-insert-collectives --plait-verify-collectives | FileCheck %s --check-prefix=LOWERED
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=4' --plait-build-train-step='optimizer=sgd micro-batches=4' --plait-shard='world-size=4 strategy=hsdp:2' | FileCheck %s --check-prefix=HSDP
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=4' --plait-build-train-step='optimizer=sgd micro-batches=4' --plait-shard='world-size=4 strategy=hsdp:2' --plait-insert-collectives --plait-verify-collectives | FileCheck %s --check-prefix=HSDPLOWERED
// RUN: plait-opt %S/shard.mlir --plait-divide-batch='micro-batches=4' --plait-build-train-step='optimizer=sgd micro-batches=4' --plait-shard='world-size=4 strategy=hsdp:2 defer-replica-reduce=false' --plait-insert-collectives --plait-verify-collectives | FileCheck %s --check-prefix=PERMB

// SHARD: plait.units = [{accumulate_in_shard = true, {{.*}}name = "layers.0"
// SHARD-SAME: {accumulate_in_shard = true, {{.*}}name = "layers.1"
// Micro-batch 1: layers.1's flat gradient (9 elements padded to 10), then layers.0's (12),
// each reduce-scattered where it is complete.
// SHARD: %[[G1A:.*]] = plait.concat {{.*}} -> tensor<10xf32>
// SHARD-NEXT: %[[S1A:.*]] = plait.sync_grad %[[G1A]] {shard_groups = [array<i64: 0, 1>]} : tensor<10xf32> -> tensor<5xf32>
// SHARD: %[[G0A:.*]] = plait.concat {{.*}} -> tensor<12xf32>
// SHARD-NEXT: %[[S0A:.*]] = plait.sync_grad %[[G0A]] {shard_groups = [array<i64: 0, 1>]} : tensor<12xf32> -> tensor<6xf32>
// The second micro-batch's loss, then its gradients, the same way.
// SHARD: plait.softmax_cross_entropy
// SHARD: %[[G1B:.*]] = plait.concat {{.*}} -> tensor<10xf32>
// SHARD-NEXT: %[[S1B:.*]] = plait.sync_grad %[[G1B]]
// SHARD: %[[G0B:.*]] = plait.concat {{.*}} -> tensor<12xf32>
// SHARD-NEXT: %[[S0B:.*]] = plait.sync_grad %[[G0B]]
// The shards summed and averaged over the micro-batches; no whole gradient is summed.
// SHARD-NEXT: %[[SUM0:.*]] = plait.add %[[S0A]], %[[S0B]] : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
// SHARD-NEXT: %[[MEAN0:.*]] = plait.div %[[SUM0]], %{{.*}} : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
// SHARD: %[[SUM1:.*]] = plait.add %[[S1A]], %[[S1B]] : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// SHARD-NEXT: %[[MEAN1:.*]] = plait.div %[[SUM1]]
// SHARD: plait.sgd_update %{{.*}}, %[[MEAN0]]
// SHARD: plait.sgd_update %{{.*}}, %[[MEAN1]]
// SHARD-NOT: plait.sync_grad
// SHARD-NOT: tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>

// WHOLE-NOT: accumulate_in_shard
// Both micro-batches' whole gradients summed, one reduction per unit.
// WHOLE: plait.add {{.*}} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// WHOLE: plait.sync_grad
// WHOLE: plait.sync_grad
// WHOLE-NOT: plait.sync_grad

// Four reduce-scatters, at most two in flight (recorded for the memory plan and the plan
// writer), and every rank's collective order checks.
// LOWERED: plait.in_flight_reduce_scatters = 2 : i64
// LOWERED-COUNT-4: plait.reduce_scatter
// LOWERED-NOT: plait.reduce_scatter

// hsdp:2 on 4 ranks, 4 micro-batches: each micro-batch's gradients are reduce-scattered in the
// shard group only; the first three shards are summed unreduced and their sum all-reduced
// across the replicas once, where the last micro-batch's reduction starts; the last shard is
// reduced in both (a sync_grad with replica groups); the two are added and divided by 4.
// HSDP: plait.units = [{accumulate_in_shard = true, defer_replica_reduce = true, {{.*}}name = "layers.0"
// HSDP: %[[A:.*]] = plait.sync_grad %{{.*}} {shard_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<10xf32> -> tensor<5xf32>
// HSDP: %[[B:.*]] = plait.sync_grad %{{.*}} {shard_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<10xf32> -> tensor<5xf32>
// HSDP: %[[AB:.*]] = plait.add %[[A]], %[[B]] : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// HSDP: %[[C:.*]] = plait.sync_grad %{{.*}} {shard_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<10xf32> -> tensor<5xf32>
// HSDP: %[[ABC:.*]] = plait.add %[[AB]], %[[C]] : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// HSDP-NEXT: %[[R:.*]] = plait.all_reduce %[[ABC]] {groups = [array<i64: 0, 2>, array<i64: 1, 3>], reduce = "mean"} : tensor<5xf32>
// HSDP: %[[D:.*]] = plait.sync_grad %{{.*}} {replica_groups = [array<i64: 0, 2>, array<i64: 1, 3>], shard_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<10xf32> -> tensor<5xf32>
// HSDP: %[[SUM:.*]] = plait.add %[[R]], %[[D]] : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// HSDP-NEXT: %[[MEAN:.*]] = plait.div %[[SUM]], %{{.*}} : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
// HSDP: plait.sgd_update %{{.*}}, %[[MEAN]]

// Lowered: 8 reduce-scatters (4 per unit) and 4 all-reduces (2 per unit) across the
// replicas, not 8; every rank's collective order checks.
// HSDPLOWERED-COUNT-4: plait.all_reduce {{.*}}groups = [array<i64: 0, 2>, array<i64: 1, 3>], reduce = "mean"
// HSDPLOWERED-NOT: plait.all_reduce {{.*}}groups = [array<i64: 0, 2>, array<i64: 1, 3>]

// defer-replica-reduce=false: every micro-batch's shard is all-reduced by itself, 8 in all.
// PERMB-NOT: defer_replica_reduce
// PERMB-COUNT-8: plait.all_reduce {{.*}}groups = [array<i64: 0, 2>, array<i64: 1, 3>], reduce = "mean"
// PERMB-NOT: plait.all_reduce {{.*}}groups = [array<i64: 0, 2>, array<i64: 1, 3>]
