// plait.stop_gradient: its operand in the forward, no gradient through it. The loss is
// w * w + w * stop_gradient(w), so w's gradient is 2w + stop_gradient(w) = 3w: the product's
// VJP sends w * dy to its first operand and (w * dy) nowhere through the stop. Once the step
// is built the stop is gone (its operand is used in its place).
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' | FileCheck %s

// CHECK-NOT:  plait.stop_gradient
// CHECK:      %[[W:.*]] = plait.param "w"
// CHECK:      %[[DY:.*]] = plait.broadcast_to
// Three terms of dy * w (two from w * w, one from w * stop_gradient(w)), not four.
// CHECK-NEXT: %[[A:.*]] = plait.mul %[[DY]], %[[W]]
// CHECK-NEXT: %[[B:.*]] = plait.mul %[[DY]], %[[W]]
// CHECK-NEXT: %[[C:.*]] = plait.mul %[[DY]], %[[W]]
// CHECK-NEXT: %[[AB:.*]] = plait.add %[[A]], %[[B]]
// CHECK-NEXT: %[[G:.*]] = plait.add %[[AB]], %[[C]]
// CHECK-NOT:  plait.mul
// CHECK:      plait.sgd_update %[[W]], %[[G]]
// CHECK-NOT:  plait.stop_gradient
module {
  func.func @main() -> tensor<f32> {
    %w = plait.param "w" {init = "normal:1.0"} : tensor<4xf32>
    %s = plait.stop_gradient %w : tensor<4xf32>
    %sq = plait.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %d = plait.mul %w, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = plait.add %sq, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = plait.reduce_sum %t {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
