// RUN: plait-opt --plait-fuse-elementwise --split-input-file %s | FileCheck %s

// --precision bf16-mixed: a chain between casts fuses (groups join across f32 <-> bf16). The
// program computes in f32 and rounds (10, round_bf16) where the unfused ops store bf16: at the
// cast to bf16 and after each bf16 op; the cast back to f32 is the rounded value itself.
// Registers: 0 x, 1 c, 2 b; 3 round(x), 4 mul, 5 round, 6 erf, 7 round, 8 add.
// CHECK: module attributes {plait.fuse_elementwise = {kernels = 1 : i64, ops = 5 : i64, reductions = 0 : i64, roundings = 3 : i64}}
// CHECK-LABEL: func.func @mixed_chain
// CHECK-NEXT: %[[Y:.*]] = plait.fused_elementwise %arg0, %arg1, %arg2 {outputs = array<i64: 8>, program = array<i64: 10, 0, -1, -1, 2, 3, 1, -1, 10, 4, -1, -1, 6, 5, -1, -1, 10, 6, -1, -1, 0, 7, 2, -1>} : (tensor<4x8xf32>, tensor<bf16>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @mixed_chain(%x: tensor<4x8xf32>, %c: tensor<bf16>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = plait.cast %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %1 = plait.mul %0, %c : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %2 = plait.erf %1 : tensor<4x8xbf16>
  %3 = plait.cast %2 : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %4 = plait.add %3, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// All bf16, with a bf16 reduced result: the row sums of the rounded product (register 3),
// stored as bf16.
// CHECK: plait.fuse_elementwise = {kernels = 1 : i64, ops = 3 : i64, reductions = 1 : i64, roundings = 2 : i64}
// CHECK-LABEL: func.func @bf16_sum
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 5, 3>, program = array<i64: 2, 0, 1, -1, 10, 2, -1, -1, 4, 3, -1, -1, 10, 4, -1, -1>, reductions = array<i64: 0, 1>} : (tensor<4x8xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x1xbf16>)
// CHECK-NEXT: return %[[F]]#0, %[[F]]#1
func.func @bf16_sum(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x1xbf16>) {
  %0 = plait.mul %x, %w : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = plait.neg %0 : tensor<4x8xbf16>
  %2 = plait.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x8xbf16>) -> tensor<4x1xbf16>
  return %1, %2 : tensor<4x8xbf16>, tensor<4x1xbf16>
}

// -----

// For --device cuda (plait.device = "cuda") a bf16 reduction stays unfused (CUDA's fused sums
// are float atomics); the elementwise ops still fuse.
// CHECK: plait.device = "cuda", plait.fuse_elementwise = {kernels = 1 : i64, ops = 2 : i64, reductions = 0 : i64, roundings = 2 : i64}
// CHECK-LABEL: func.func @bf16_sum_cuda
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 3, 5>, program = array<i64: 2, 0, 1, -1, 10, 2, -1, -1, 4, 3, -1, -1, 10, 4, -1, -1>} : (tensor<4x8xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>)
// CHECK-NEXT: plait.reduce_sum %[[F]]#0
module attributes {plait.device = "cuda"} {
func.func @bf16_sum_cuda(%x: tensor<4x8xbf16>, %w: tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x1xbf16>) {
  %0 = plait.mul %x, %w : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
  %1 = plait.neg %0 : tensor<4x8xbf16>
  %2 = plait.reduce_sum %0 {axes = array<i64: 1>} : (tensor<4x8xbf16>) -> tensor<4x1xbf16>
  return %1, %2 : tensor<4x8xbf16>, tensor<4x1xbf16>
}
}

// -----

// A cast to f32 of an input, read outside too: its value is the input's register, so the
// result it stores is a copy (9, broadcast_to) of it.
// CHECK-LABEL: func.func @cast_of_input
// CHECK-NEXT: %[[F:.*]]:2 = plait.fused_elementwise %arg0, %arg1 {outputs = array<i64: 2, 3>, program = array<i64: 9, 0, -1, -1, 2, 0, 1, -1>} : (tensor<4x8xbf16>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
func.func @cast_of_input(%x: tensor<4x8xbf16>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = plait.cast %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %1 = plait.mul %0, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Casts to other types (f16) do not fuse, nor f16 ops.
// CHECK-LABEL: func.func @f16_cast
// CHECK-NEXT: plait.cast
// CHECK-NEXT: plait.neg
func.func @f16_cast(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %0 = plait.cast %x : (tensor<4x8xf32>) -> tensor<4x8xf16>
  %1 = plait.neg %0 : tensor<4x8xf16>
  return %1 : tensor<4x8xf16>
}
