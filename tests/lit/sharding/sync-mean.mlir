// plait.sync_mean (a synchronised BatchNorm's statistic): its gradient is a sync_mean of the
// gradient, and plait-shard lowers both to an all_reduce (mean) over every rank, or to their
// operand on one rank. The running variance's n/(n-1), marked plait.unbiased_ranks, is
// rescaled to the count of every rank's values.
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' | FileCheck %s --check-prefix=STEP
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=ddp' | FileCheck %s --check-prefix=W2
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=4 strategy=hsdp:2' | FileCheck %s --check-prefix=HSDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=1' | FileCheck %s --check-prefix=W1

// STEP: %[[LOCAL:.*]] = plait.reduce_mean %[[H:.*]] {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
// STEP-NEXT: %[[MEAN:.*]] = plait.sync_mean %[[LOCAL]] : tensor<1x3xf32>
// The mean's gradient (the sum of the centred value's, negated) is averaged over the ranks.
// STEP: %[[GSUM:.*]] = plait.reduce_sum {{.*}} -> tensor<1x3xf32>
// STEP: plait.sync_mean %{{.*}} : tensor<1x3xf32>

// Every rank takes part (hsdp's shard groups too: each rank holds its own slice of the batch):
// two statistics forward, their gradients backward.
// W2: plait.sync_means = {all_gathers = 0 : i64, all_reduces = 4 : i64, batch_norm_grads = 0 : i64, batch_norms = 0 : i64, elements = 12 : i64, statistics = 4 : i64, world_size = 2 : i64}
// W2-NOT: = plait.sync_mean
// W2: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<1x3xf32>
// W2: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<1x3xf32>
// W2: plait.constant dense<1.14285719> : tensor<f32> {plait.unbiased_count = 8 : i64}
// W2: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<1x3xf32>
// W2: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<1x3xf32>
// W2-NOT: = plait.sync_mean
// HSDP: plait.constant dense<1.06666672> : tensor<f32> {plait.unbiased_count = 16 : i64}
// HSDP: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1, 2, 3>], reduce = "mean"} : tensor<1x3xf32>
// One rank: the statistics are the batch's already.
// W1: plait.sync_means = {all_gathers = 0 : i64, all_reduces = 0 : i64, batch_norm_grads = 0 : i64, batch_norms = 0 : i64, elements = 12 : i64, statistics = 4 : i64, world_size = 1 : i64}
// W1-NOT: plait.all_reduce
// W1-NOT: = plait.sync_mean
// W1: plait.constant dense<1.33333337> : tensor<f32> {plait.unbiased_count = 4 : i64}
// W1-NOT: plait.all_reduce
// W1-NOT: = plait.sync_mean
module {
  func.func @main(%x: tensor<4x2xf32>, %y: tensor<4x3xf32>) -> (tensor<f32>, tensor<3xf32> {plait.buffer = "bn.running_var"}) {
    %w = plait.param "fc.weight" {init = "normal:0.5"} : tensor<2x3xf32>
    %h = plait.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %m0 = plait.reduce_mean %h {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
    %m = plait.sync_mean %m0 : tensor<1x3xf32>
    %c = plait.sub %h, %m : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
    %sq = plait.mul %c, %c : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %v0 = plait.reduce_mean %sq {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<1x3xf32>
    %v = plait.sync_mean %v0 : tensor<1x3xf32>
    %eps = plait.constant dense<1.0e-5> : tensor<f32>
    %ve = plait.add %v, %eps : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xf32>
    %inv = plait.rsqrt %ve : tensor<1x3xf32>
    %n = plait.mul %c, %inv : (tensor<4x3xf32>, tensor<1x3xf32>) -> tensor<4x3xf32>
    %d = plait.sub %n, %y : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %d2 = plait.mul %d, %d : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %loss = plait.reduce_mean %d2 {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
    %rv = plait.param "bn.running_var" {buffer, init = "ones"} : tensor<3xf32>
    %u = plait.constant dense<1.33333337> : tensor<f32> {plait.unbiased_count = 4 : i64, plait.unbiased_ranks}
    %vr = plait.reshape %v : (tensor<1x3xf32>) -> tensor<3xf32>
    %vu = plait.mul %vr, %u : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    return %loss, %vu : tensor<f32>, tensor<3xf32>
  }
}
