// RUN: plait-opt --plait-fuse-elementwise --split-input-file %s | FileCheck %s

// Comparisons, where and the other opcodes of plan version 6 (codegen/schema/FusedElementwise.h:
// log 11, tanh 12, sigmoid 13, silu 14, rsqrt 15, reciprocal 16, sin 17, cos 18, abs 19,
// relu 20, max 21, min 22, greater 23 ... equal 27, not 28, and 29, or 30, where 31).

// A ReLU's backward and its bias gradient: where(x > 0, g, 0) and its column sums, one
// kernel. The i1 value x > 0 is register 4, never stored; where reads all three operands.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 3 : i64, reductions = 1 : i64}
// CHECK-LABEL: func.func @relu_backward
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %arg1, %arg2 {outputs = array<i64: 4, 5>, program = array<i64: 23, 0, 1, -1, 31, 3, 2, 1, 9, 4, -1, -1>, reductions = array<i64: 0, 1>} : (tensor<8x32xf32>, tensor<f32>, tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<1x32xf32>)
// CHECK-NEXT: return %[[F]]#0, %[[F]]#1
func.func @relu_backward(%x: tensor<8x32xf32>, %zero: tensor<f32>, %g: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<1x32xf32>) {
  %0 = plait.greater %x, %zero : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xi1>
  %1 = plait.where %0, %g, %zero : (tensor<8x32xi1>, tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %2 = plait.reduce_sum %1 {axes = array<i64: 0>} : (tensor<8x32xf32>) -> tensor<1x32xf32>
  return %1, %2 : tensor<8x32xf32>, tensor<1x32xf32>
}

// -----

// A masked, clipped activation: unary, min / max, logic on i1 values and a cast of an i1 value
// to f32 (no instruction: the register holds 1.0f or 0.0f already).
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 12 : i64, reductions = 0 : i64}
// CHECK-LABEL: func.func @masked
// CHECK-NEXT: %[[F:.*]] = plait.fused_elementwise %arg0, %arg1, %arg2 {outputs = array<i64: 13>, program = array<i64: 12, 0, -1, -1, 13, 3, -1, -1, 21, 4, 1, -1, 22, 5, 2, -1, 25, 0, 1, -1, 28, 7, -1, -1, 27, 0, 2, -1, 30, 8, 9, -1, 2, 6, 10, -1, 19, 11, -1, -1, 11, 12, -1, -1>} : (tensor<4x8xf32>, tensor<f32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[F]]
func.func @masked(%x: tensor<4x8xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<4x8xf32> {
  %0 = plait.tanh %x : tensor<4x8xf32>
  %1 = plait.sigmoid %0 : tensor<4x8xf32>
  %2 = plait.max %1, %lo : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = plait.min %2, %hi : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %4 = plait.less %x, %lo : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %5 = plait.not %4 : tensor<4x8xi1>
  %6 = plait.equal %x, %hi : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %7 = plait.or %5, %6 : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  %8 = plait.cast %7 : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %9 = plait.mul %3, %8 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %10 = plait.abs %9 : tensor<4x8xf32>
  %11 = plait.log %10 : tensor<4x8xf32>
  return %11 : tensor<4x8xf32>
}

// -----

// An i1 value read outside stays an op of its own (a kernel's results are f32 or bf16): the
// greater joins its where's group while the return could still join, and is taken out again;
// its where then reads it as an input, as the second where reads the mask argument (an i1
// input is loaded as 1.0f or 0.0f). The where beside them, whose condition it computes
// itself, is a kernel of its own.
// CHECK: plait.fuse_elementwise = {kernels = 2 : i64, ops = 4 : i64, reductions = 0 : i64}
// CHECK-LABEL: func.func @escapes
// CHECK-NEXT: %[[C:.*]] = plait.greater %arg0, %arg1
// CHECK-NEXT: %[[M:.*]] = plait.fused_elementwise %[[C]], %arg0, %arg1, %arg2 {outputs = array<i64: 5>, program = array<i64: 31, 0, 1, 2, 31, 3, 4, 2>} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>, tensor<4x8xi1>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[F:.*]] = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 3>, program = array<i64: 26, 0, 1, -1, 31, 2, 1, 0>}
// CHECK-NEXT: return %[[C]], %[[M]], %[[F]]
func.func @escapes(%x: tensor<4x8xf32>, %zero: tensor<f32>, %mask: tensor<4x8xi1>) -> (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = plait.greater %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %1 = plait.where %0, %x, %zero : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = plait.where %mask, %1, %zero : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = plait.less_equal %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %4 = plait.where %3, %zero, %x : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %2, %4 : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// bf16: a comparison of bf16 values computes on their f32 widening (exact); where, max and
// relu pick a bf16 value, and the program rounds after them as after every op with a bf16
// result (round_bf16, 10: it changes nothing there, as storing changes nothing unfused).
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 4 : i64, reductions = 0 : i64, roundings = 3 : i64}
// CHECK-LABEL: func.func @bf16
// CHECK-NEXT: %[[F:.*]] = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 8>, program = array<i64: 24, 0, 1, -1, 20, 0, -1, -1, 10, 3, -1, -1, 31, 2, 4, 1, 10, 5, -1, -1, 21, 6, 1, -1, 10, 7, -1, -1>} : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
func.func @bf16(%x: tensor<4x8xbf16>, %t: tensor<bf16>) -> tensor<4x8xbf16> {
  %0 = plait.greater_equal %x, %t : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xi1>
  %1 = plait.relu %x : tensor<4x8xbf16>
  %2 = plait.where %0, %1, %t : (tensor<4x8xi1>, tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %3 = plait.max %2, %t : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  return %3 : tensor<4x8xbf16>
}

// -----

// Taken out with the i1 value: the comparison's threshold %s, a per-row value computed again
// per element inside the group, is read outside once the comparison is; a kernel stores only
// results of its iteration shape. What is left, the product and the where that reads the
// comparison as an input, is one kernel.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 2 : i64, reductions = 0 : i64}
// CHECK-LABEL: func.func @row_threshold
// CHECK-NEXT: %[[S:.*]] = plait.sub %arg1, %arg2
// CHECK-NEXT: %[[T:.*]] = plait.greater %arg0, %[[S]]
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %[[T]], %arg3 {outputs = array<i64: 3, 4>, program = array<i64: 2, 0, 0, -1, 31, 1, 3, 2>}
// CHECK-NEXT: return %[[T]], %[[F]]#1, %[[F]]#0
func.func @row_threshold(%x: tensor<4x8xf32>, %a: tensor<4x1xf32>, %b: tensor<4x1xf32>, %zero: tensor<f32>) -> (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = plait.sub %a, %b : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %m = plait.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = plait.greater %x, %s : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xi1>
  %w = plait.where %t, %m, %zero : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %t, %w, %m : tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>
}
