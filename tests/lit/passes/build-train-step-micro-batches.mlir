// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd micro-batches=2' %s | FileCheck %s
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adamw micro-batches=4' %s | FileCheck %s --check-prefix=FOUR

// micro-batches=2: the function is one micro-batch of 2 samples, the step takes 4. Each
// micro-batch slices its rows of every input, runs the forward and the backward, and adds its
// gradients to the running sums right where they are produced; the sums are divided by 2 and
// applied by one update per param. The step's loss is the mean of the two losses.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {plait.name = "x"}, %[[Y:.*]]: tensor<4xi64> {plait.name = "y"})
// CHECK-SAME: -> (tensor<f32> {plait.name = "loss"})
// CHECK: %[[K:.*]] = plait.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[W:.*]] = plait.param "fc.weight"
// CHECK: %[[B:.*]] = plait.param "fc.bias"
// Micro-batch 0: rows [0, 2).
// CHECK: %[[X0:.*]] = plait.slice %[[X]] {ends = array<i64: 2, 4>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[Y0:.*]] = plait.slice %[[Y]] {ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<2xi64>
// CHECK: %[[H0:.*]] = plait.gemm %[[X0]], %[[W]], %[[B]]
// CHECK: %[[L0:.*]] = plait.softmax_cross_entropy %[[H0]], %[[Y0]]
// CHECK: plait.softmax_cross_entropy_grad %[[H0]], %[[Y0]]
// CHECK: %[[DW0:.*]] = plait.transpose %{{.*}} {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK: %[[DB0:.*]] = plait.reshape %{{.*}} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK-NOT: plait.sgd_update
// Micro-batch 1: rows [2, 4); the loss mean follows its loss, each gradient's sum and mean
// follow the gradient.
// CHECK: %[[X1:.*]] = plait.slice %[[X]] {ends = array<i64: 4, 4>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>}
// CHECK: %[[Y1:.*]] = plait.slice %[[Y]] {ends = array<i64: 4>, starts = array<i64: 2>, steps = array<i64: 1>}
// CHECK: %[[H1:.*]] = plait.gemm %[[X1]], %[[W]], %[[B]]
// CHECK: %[[L1:.*]] = plait.softmax_cross_entropy %[[H1]], %[[Y1]]
// CHECK-NEXT: %[[LS:.*]] = plait.add %[[L0]], %[[L1]]
// CHECK-NEXT: %[[LOSS:.*]] = plait.div %[[LS]], %[[K]]
// CHECK: %[[DW1:.*]] = plait.transpose %{{.*}} {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[SW:.*]] = plait.add %[[DW0]], %[[DW1]]
// CHECK-NEXT: %[[MW:.*]] = plait.div %[[SW]], %[[K]]
// CHECK: %[[DB1:.*]] = plait.reshape %{{.*}} : (tensor<1x3xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[SB:.*]] = plait.add %[[DB0]], %[[DB1]]
// CHECK-NEXT: %[[MB:.*]] = plait.div %[[SB]], %[[K]]
// CHECK-NOT: plait.slice
// One optimizer update per param, on the mean gradients.
// CHECK: plait.sgd_update %[[W]], %[[MW]]
// CHECK-NEXT: plait.sgd_update %[[B]], %[[MB]]
// CHECK-NOT: plait.sgd_update
// CHECK: return %[[LOSS]] : tensor<f32>
func.func @main(%x: tensor<2x4xf32> {plait.name = "x"}, %y: tensor<2xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}, tensor<2x3xf32> {plait.name = "logits"}) {
  %w = plait.param "fc.weight" {init = "normal:0.02"} : tensor<3x4xf32>
  %b = plait.param "fc.bias" {init = "zeros"} : tensor<3xf32>
  %h = plait.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = plait.softmax_cross_entropy %h, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l, %h : tensor<f32>, tensor<2x3xf32>
}

// FOUR-LABEL: module attributes
// FOUR-SAME: plait.train = {clip_grad_norm = 0.000000e+00 : f64, micro_batches = 4 : i64, optimizer = "adamw"
// FOUR: func.func @main(%[[X:.*]]: tensor<8x4xf32> {plait.name = "x"}, %{{.*}}: tensor<8xi64> {plait.name = "y"})
// FOUR: plait.constant dense<4.000000e+00> : tensor<f32>
// FOUR: plait.slice %[[X]] {ends = array<i64: 2, 4>, starts = array<i64: 0, 0>
// FOUR-NOT: plait.add %{{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>)
// FOUR: plait.slice %[[X]] {ends = array<i64: 4, 4>, starts = array<i64: 2, 0>
// FOUR: %[[S1:.*]] = plait.add %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>)
// FOUR: plait.slice %[[X]] {ends = array<i64: 6, 4>, starts = array<i64: 4, 0>
// FOUR: %[[S2:.*]] = plait.add %[[S1]], %{{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>)
// FOUR: plait.slice %[[X]] {ends = array<i64: 8, 4>, starts = array<i64: 6, 0>
// FOUR: %[[S3:.*]] = plait.add %[[S2]], %{{.*}} : (tensor<3x4xf32>, tensor<3x4xf32>)
// FOUR-NEXT: plait.div %[[S3]]
// FOUR-NOT: plait.slice
// FOUR-COUNT-2: plait.adamw_update
// FOUR-NOT: plait.adamw_update
// FOUR: return

// -----

// The fused attention's dropout draws per micro-batch as the mask it replaced would: the first
// micro-batch's attention and its gradient keep the stream, the second's take
// microBatchStream(42, 1).
// CHECK-LABEL: func.func @main
// CHECK: plait.attention {{.*}}stream = 42 : i64
// CHECK: plait.attention_grad {{.*}}stream = 42 : i64
// CHECK: plait.attention {{.*}}stream = -7046029254386353089 : i64
// CHECK: plait.attention_grad {{.*}}stream = -7046029254386353089 : i64
func.func @main(%x: tensor<2x3x1x4xf32> {plait.name = "x"}) -> (tensor<f32> {plait.name = "loss"}) {
  %w = plait.param "w" {value = dense<0.5> : tensor<4xf32>} : tensor<4xf32>
  %q = plait.mul %x, %w : (tensor<2x3x1x4xf32>, tensor<4xf32>) -> tensor<2x3x1x4xf32>
  %step = plait.hyper "step" : tensor<f32>
  %o, %l = plait.attention %q, %q, %q, %step {scale = 0.5 : f64, dropout = 0.1 : f64, seed = 0 : i64, stream = 42 : i64} : (tensor<2x3x1x4xf32>, tensor<2x3x1x4xf32>, tensor<2x3x1x4xf32>, tensor<f32>) -> (tensor<2x3x1x4xf32>, tensor<2x1x3xf32>)
  %loss = plait.reduce_sum %o {axes = array<i64>, keepdims = false} : (tensor<2x3x1x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
