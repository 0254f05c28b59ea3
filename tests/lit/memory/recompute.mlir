// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-recompute | FileCheck %s
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-recompute='mode=none' | FileCheck %s --check-prefix=NONE
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-recompute='mode=segments segments=1' | FileCheck %s --check-prefix=LAST

// Two segments, one per unit (layers.0: matmul, tanh, sigmoid; layers.1: matmul, loss). The
// backward of layers.0 needs tanh's output; only the sigmoid output crosses into layers.1, so
// it is the checkpoint. With recompute, matmul and tanh run again right before the
// backward's first use of tanh's output, and the backward reads the replayed values: the
// forward's tanh output dies at the sigmoid.
// CHECK: plait.recompute = {granularity = "unit", mode = "all", ops_added = 2 : i64, recomputed = 1 : i64, saved_bytes = 48 : i64, segments = 2 : i64}
// CHECK: %[[H:.*]] = plait.matmul %arg0, %[[W0:.*]] :
// CHECK-NEXT: %[[T:.*]] = plait.tanh %[[H]]
// CHECK-NEXT: %[[S:.*]] = plait.sigmoid %[[T]]
// CHECK-NOT: %[[T]]{{$|[^0-9]}}
// CHECK: %[[H2:.*]] = plait.matmul %arg0, %[[W0]] :
// CHECK-NEXT: %[[T2:.*]] = plait.tanh %[[H2]]
// CHECK-NEXT: plait.mul %[[T2]], %[[T2]]
// CHECK-NOT: %[[T]]{{$|[^0-9]}}
// CHECK: return

// NONE: plait.recompute = {granularity = "unit", mode = "none", ops_added = 0 : i64, recomputed = 0 : i64
// NONE-COUNT-1: plait.tanh
// NONE-NOT: plait.tanh

// The last segment's backward starts at once: nothing to replay.
// LAST: ops_added = 0 : i64
func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}, %y: tensor<4xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w0 = plait.param "layers.0.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %w1 = plait.param "layers.1.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %h = plait.matmul %x, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %t = plait.tanh %h : tensor<4x3xf32>
  %s = plait.sigmoid %t : tensor<4x3xf32>
  %o = plait.matmul %s, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %l = plait.softmax_cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
