// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' | FileCheck %s --check-prefix=STEP
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=ddp' | FileCheck %s --check-prefix=W2
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=4 strategy=zero3' | FileCheck %s --check-prefix=W4
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=1' | FileCheck %s --check-prefix=W1

// A fused SyncBatchNorm (plait-fuse-norm's batch_norm {sync}): its gradient is batch_norm_grad
// {sync}, and plait-shard lowers both for the world size. Forward: this rank's statistics
// (batch_norm_stats, [mean(C), var(C)]), one all_gather of every rank's and the batch_norm that
// combines them; backward: this rank's sums (batch_norm_grad_sums, [sum(dy), sum(dy xhat)]),
// one all_reduce (mean) and the batch_norm_grad that reads them for dx. On one rank, the plain
// kernels.

// STEP: %[[Y:.*]], %[[MEAN:.*]], %[[VAR:.*]] = plait.batch_norm %{{.*}} {epsilon = 1.000000e-03 : f64, sync}
// STEP: plait.batch_norm_grad %{{.*}}, %[[MEAN]], %[[VAR]], %{{[^,]*}} {epsilon = 1.000000e-03 : f64, sync}

// W2: plait.sync_means = {all_gathers = 1 : i64, all_reduces = 1 : i64, batch_norm_grads = 1 : i64, batch_norms = 1 : i64, elements = 12 : i64, statistics = 0 : i64, world_size = 2 : i64}
// W2: %[[H:.*]] = plait.matmul
// W2-NEXT: %[[STATS:.*]] = plait.batch_norm_stats %[[H]] : (tensor<4x3xf32>) -> tensor<6xf32>
// W2-NEXT: %[[ALL:.*]] = plait.all_gather %[[STATS]] {groups = [array<i64: 0, 1>]} : tensor<6xf32> -> tensor<12xf32>
// W2-NEXT: %{{.*}}, %[[MEAN:.*]], %[[VAR:.*]] = plait.batch_norm %[[H]], %{{.*}}, %{{.*}}, %[[ALL]] {epsilon = 1.000000e-03 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<12xf32>)
// W2: %[[SUMS:.*]] = plait.batch_norm_grad_sums %[[H]], %[[MEAN]], %[[VAR]], %[[DY:.*]] {epsilon = 1.000000e-03 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<6xf32>
// W2-NEXT: %[[RANKS:.*]] = plait.all_reduce %[[SUMS]] {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<6xf32>
// W2-NEXT: plait.batch_norm_grad %[[H]], %{{.*}}, %[[MEAN]], %[[VAR]], %[[DY]], %[[RANKS]] {epsilon = 1.000000e-03 : f64}
// W2-NOT: sync}

// Every rank takes part, whatever the placement (zero3 shards the params, not the batch).
// W4: plait.all_gather %{{.*}} {groups = [array<i64: 0, 1, 2, 3>]} : tensor<6xf32> -> tensor<24xf32>
// W4: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1, 2, 3>], reduce = "mean"} : tensor<6xf32>

// W1: plait.sync_means = {all_gathers = 0 : i64, all_reduces = 0 : i64, batch_norm_grads = 1 : i64, batch_norms = 1 : i64, elements = 12 : i64, statistics = 0 : i64, world_size = 1 : i64}
// W1-NOT: plait.batch_norm_stats
// W1-NOT: plait.all_gather
// W1: plait.batch_norm %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) ->
// W1-NOT: plait.batch_norm_grad_sums
// W1: plait.batch_norm_grad %{{.*}} {epsilon = 1.000000e-03 : f64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) ->
module {
  func.func @main(%x: tensor<4x2xf32>, %y: tensor<4x3xf32>) -> tensor<f32> {
    %w = plait.param "fc.weight" {init = "normal:0.5"} : tensor<2x3xf32>
    %g = plait.param "bn.weight" {init = "ones"} : tensor<3xf32>
    %b = plait.param "bn.bias" {init = "zeros"} : tensor<3xf32>
    %h = plait.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %n, %m, %v = plait.batch_norm %h, %g, %b {epsilon = 1.0e-3 : f64, sync} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
    %d = plait.sub %n, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %d2 = plait.mul %d, %d : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %loss = plait.reduce_mean %d2 {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
