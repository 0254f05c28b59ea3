// RUN: plait-opt --plait-fuse-elementwise --split-input-file %s | FileCheck %s

// The erf-GELU: five ops, one kernel. Registers 0-2 are the inputs (x, 1/sqrt(2), 1 and 0.5
// come in as they are first read); the result is the last instruction's register.
// CHECK: module attributes {plait.fuse_elementwise = {kernels = 1 : i64, ops = 5 : i64}}
// CHECK-LABEL: func.func @gelu
// CHECK-NEXT: %[[Y:.*]] = plait.fused_elementwise %arg0, %arg1, %arg2, %arg3 {outputs = array<i64: 8>, program = array<i64: 2, 0, 1, 6, 4, -1, 0, 5, 2, 2, 0, 3, 2, 7, 6>} : (tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu(%x: tensor<4x8xf32>, %r: tensor<f32>, %one: tensor<f32>, %half: tensor<f32>) -> tensor<4x8xf32> {
  %0 = plait.mul %x, %r : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = plait.erf %0 : tensor<4x8xf32>
  %2 = plait.add %1, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = plait.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %4 = plait.mul %3, %2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// A layer norm's tail: broadcast operands (the per-row statistics, the per-column scale and
// shift) are inputs like any other. The centred value is also read after the group by a
// reduction, so it is a second result.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 4 : i64}
// CHECK-LABEL: func.func @norm
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %arg1, %arg2, %arg3, %arg4 {outputs = array<i64: 5, 8>, program = array<i64: 1, 0, 1, 3, 5, 2, 2, 6, 3, 0, 7, 4>} : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: plait.reduce_sum %[[F]]#0
// CHECK: return %[[F]]#1
func.func @norm(%x: tensor<4x8xf32>, %mean: tensor<4x1xf32>, %std: tensor<4x1xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %0 = plait.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %1 = plait.div %0, %std : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = plait.mul %1, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = plait.add %2, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = plait.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %3, %4 : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Not fused: a value of the group read before the op that would join it (the fused op would
// come after that reader), ops of another result shape, f64, and single ops.
// CHECK: plait.fuse_elementwise = {kernels = 0 : i64, ops = 0 : i64}
// CHECK-LABEL: func.func @kept
// CHECK-NOT: plait.fused_elementwise
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<4xf32>, %z: tensor<2xf64>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<2xf64>) {
  %0 = plait.exp %x : tensor<4x8xf32>
  %1 = plait.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %2 = plait.add %0, %0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = plait.neg %y : tensor<4xf32>
  %4 = plait.neg %z : tensor<2xf64>
  %5 = plait.exp %4 : tensor<2xf64>
  return %2, %1, %3, %5 : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4xf32>, tensor<2xf64>
}
