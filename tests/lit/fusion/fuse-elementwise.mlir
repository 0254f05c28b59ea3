// RUN: plait-opt --plait-fuse-elementwise --split-input-file %s | FileCheck %s

// The erf-GELU: five ops, one kernel. Registers 0-2 are the inputs (x, 1/sqrt(2), 1 and 0.5
// come in as they are first read); the result is the last instruction's register.
// CHECK: module attributes {plait.fuse_elementwise = {kernels = 1 : i64, ops = 5 : i64, reductions = 0 : i64}}
// CHECK-LABEL: func.func @gelu
// CHECK-NEXT: %[[Y:.*]] = plait.fused_elementwise %arg0, %arg1, %arg2, %arg3 {outputs = array<i64: 8>, program = array<i64: 2, 0, 1, -1, 6, 4, -1, -1, 0, 5, 2, -1, 2, 0, 3, -1, 2, 7, 6, -1>} : (tensor<4x8xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
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
// shift) are inputs like any other. The centred value's row sums are taken as it is computed:
// a second, reduced result.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 5 : i64, reductions = 1 : i64}
// CHECK-LABEL: func.func @norm
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %arg1, %arg2, %arg3, %arg4 {outputs = array<i64: 8, 5>, program = array<i64: 1, 0, 1, -1, 3, 5, 2, -1, 2, 6, 3, -1, 0, 7, 4, -1>, reductions = array<i64: 0, 1>} : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>)
// CHECK-NEXT: return %[[F]]#0, %[[F]]#1
func.func @norm(%x: tensor<4x8xf32>, %mean: tensor<4x1xf32>, %std: tensor<4x1xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %0 = plait.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %1 = plait.div %0, %std : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = plait.mul %1, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = plait.add %2, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = plait.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %3, %4 : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// A layer norm, decomposed as exported: the mean's sum is taken by the kernel that computes
// the residual add, the variance's by the one centring it; the per-row statistics (a smaller
// group nothing else reads) are computed again per element by the normalising kernel.
// CHECK: plait.fuse_elementwise = {kernels = 3 : i64, ops = 9 : i64, reductions = 2 : i64}
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT: %[[S:.*]]:2 = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 2, 3>, program = array<i64: 0, 0, 1, -1, 9, 2, -1, -1>, reductions = array<i64: 0, 2>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>)
// CHECK-NEXT: %[[V:.*]]:2 = plait.fused_elementwise %[[S]]#0, %[[S]]#1, %arg2 {outputs = array<i64: 3, 4>, program = array<i64: 1, 0, 1, -1, 8, 3, 2, -1>, reductions = array<i64: 0, 2>} : (tensor<4x8xf32>, tensor<4x1xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x1xf32>)
// CHECK-NEXT: %[[Y:.*]] = plait.fused_elementwise %[[V]]#1, %arg3, %[[V]]#0, %arg4 {outputs = array<i64: 7>, program = array<i64: 0, 0, 1, -1, 7, 4, -1, -1, 3, 2, 5, -1, 2, 6, 3, -1>} : (tensor<4x1xf32>, tensor<f32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S]]#0, %[[Y]]
func.func @layer_norm(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %two: tensor<f32>, %eps: tensor<f32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %x = plait.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %mean = plait.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = plait.sub %x, %mean : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %sq = plait.pow %d, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %var = plait.reduce_mean %sq {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = plait.add %var, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %std = plait.sqrt %ve : tensor<4x1xf32>
  %n = plait.div %d, %std : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %y = plait.mul %n, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A norm's weight and bias gradients: the bias gradient's sum of dy (read before the group
// forms) joins the kernel that sums dy * xhat, which takes its place, before the first reader
// of either sum. broadcast_to is an instruction like the others.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 5 : i64, reductions = 2 : i64}
// CHECK-LABEL: func.func @norm_grads
// CHECK-NEXT: %[[G:.*]]:3 = plait.fused_elementwise %arg0, %arg1, %arg2 {outputs = array<i64: 3, 4, 6>, program = array<i64: 9, 0, -1, -1, 2, 0, 1, -1, 9, 2, -1, -1, 2, 4, 5, -1>, reductions = array<i64: 1, 1, 0>} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: %[[N:.*]] = plait.neg %[[G]]#0
// CHECK-NEXT: return %[[N]], %[[G]]#1, %[[G]]#2
func.func @norm_grads(%dy: tensor<4x8xf32>, %xhat: tensor<4x8xf32>, %r: tensor<4x1xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<4x8xf32>) {
  %db = plait.reduce_sum %dy {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %db2 = plait.neg %db : tensor<1x8xf32>
  %p = plait.mul %dy, %xhat : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dw = plait.reduce_sum %p {axes = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %rb = plait.broadcast_to %r : (tensor<4x1xf32>) -> tensor<4x8xf32>
  %dx = plait.mul %p, %rb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %db2, %dw, %dx : tensor<1x8xf32>, tensor<1x8xf32>, tensor<4x8xf32>
}

// -----

// Not fused: an op reading its group's own sum (complete only after the group), a value read
// outside before an input the joining op needs is computed, a reduction over the innermost and
// another dimension, a reduction over a trailing 1, reduce_max, f64, and single ops.
// CHECK: plait.fuse_elementwise = {kernels = 2 : i64, ops = 4 : i64, reductions = 1 : i64}
// CHECK-LABEL: func.func @kept
// CHECK-NEXT: %[[E:.*]]:2 = plait.fused_elementwise %arg0 {outputs = array<i64: 1, 2>, program = array<i64: 5, 0, -1, -1, 9, 1, -1, -1>, reductions = array<i64: 0, 1>}
// CHECK-NEXT: plait.sub %[[E]]#0, %[[E]]#1
// CHECK-NEXT: plait.neg %arg0
// CHECK-NEXT: plait.softmax
// CHECK-NEXT: plait.add
// CHECK-NEXT: plait.reduce_sum {{.*}}axes = array<i64: 0, 1>
// CHECK-NEXT: %[[U:.*]] = plait.fused_elementwise %arg1 {outputs = array<i64: 2>, program = array<i64: 4, 0, -1, -1, 5, 1, -1, -1>}
// CHECK-NEXT: plait.reduce_sum %[[U]]
// CHECK-NEXT: plait.reduce_max %[[U]]
// CHECK-NEXT: plait.neg %arg2
// CHECK-NEXT: plait.exp
func.func @kept(%x: tensor<4x8xf32>, %u: tensor<4x1xf32>, %z: tensor<2xf64>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<2xf64>) {
  %0 = plait.exp %x : tensor<4x8xf32>
  %1 = plait.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %2 = plait.sub %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %3 = plait.neg %x : tensor<4x8xf32>
  %4 = plait.softmax %3 {axis = -1 : i64} : tensor<4x8xf32>
  %5 = plait.add %3, %4 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = plait.reduce_sum %5 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<1x1xf32>
  %7 = plait.neg %u : tensor<4x1xf32>
  %8 = plait.exp %7 : tensor<4x1xf32>
  %9 = plait.reduce_sum %8 {axes = array<i64: 0>} : (tensor<4x1xf32>) -> tensor<1x1xf32>
  %10 = plait.reduce_max %8 {axes = array<i64: 0>} : (tensor<4x1xf32>) -> tensor<1x1xf32>
  %11 = plait.neg %z : tensor<2xf64>
  %12 = plait.exp %11 : tensor<2xf64>
  return %2, %5, %6, %9, %10, %12 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<2xf64>
}

// -----

// A chain nothing reads (an ONNX loss left out of a forward plan) is erased, not fused into a
// kernel without results; the live chain beside it is fused.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 2 : i64, reductions = 0 : i64}
// CHECK-LABEL: func.func @dead
// CHECK-NEXT: %[[Y:.*]] = plait.fused_elementwise %arg0
// CHECK-NEXT: return %[[Y]]
func.func @dead(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = plait.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = plait.exp %0 : tensor<4x8xf32>
  %2 = plait.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<4x8xf32>) -> tensor<1x1xf32>
  %3 = plait.neg %x : tensor<4x8xf32>
  %4 = plait.exp %3 : tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// The gradient of a broadcast_to, summed back (found by e2e.random_models): every member is
// smaller than the group's shape, and the broadcast value is read only by the sum. A fused op
// iterates over its inputs' and results' shapes broadcast together, [2, 3, 1] here, so the
// sum would miss the broadcast's 4 repetitions: the reduction stays an op of its own and the
// group stores the broadcast value it reads.
// CHECK-LABEL: func.func @broadcast_then_sum
// CHECK: %[[B:.*]] = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 3>, program = array<i64: 2, 0, 1, -1, 9, 2, -1, -1>} : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[S:.*]] = plait.reduce_sum %[[B]] {axes = array<i64: 2>}
// CHECK-NEXT: return %[[S]]
func.func @broadcast_then_sum(%d: tensor<2x1x1xf32>, %c: tensor<f32>) -> tensor<2x3x1xf32> {
  %0 = plait.mul %d, %c : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %1 = plait.broadcast_to %0 : (tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %2 = plait.reduce_sum %1 {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return %2 : tensor<2x3x1xf32>
}

// The same sum where an input has the group's shape: the fused op's shape is the group's,
// and the sum is fused.
// CHECK-LABEL: func.func @broadcast_then_sum_anchored
// CHECK: plait.fused_elementwise %arg0, %arg1, %arg2 {{.*}}reductions = array<i64: 1>{{.*}} -> tensor<2x3x1xf32>
// CHECK-NOT: plait.reduce_sum
func.func @broadcast_then_sum_anchored(%d: tensor<2x1x1xf32>, %c: tensor<f32>, %x: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %0 = plait.mul %d, %c : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
  %1 = plait.broadcast_to %0 : (tensor<2x1x1xf32>) -> tensor<2x3x4xf32>
  %2 = plait.mul %1, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = plait.reduce_sum %2 {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return %3 : tensor<2x3x1xf32>
}
