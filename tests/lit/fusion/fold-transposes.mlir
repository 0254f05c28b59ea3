// RUN: plait-opt --plait-fold-transposes --split-input-file %s | FileCheck %s

// A linear layer's weight read transposed: the forward product takes W with transpose_rhs,
// and the backward's (W^T)^T is W itself, so both transposes go.
// CHECK: module attributes {plait.fold_transposes = {composed = 1 : i64, operands = 1 : i64, removed = 2 : i64, results = 0 : i64}}
// CHECK-LABEL: func.func @linear
// CHECK-NOT: plait.transpose
// CHECK: %[[Y:.*]] = plait.matmul %arg0, %arg1 {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
// CHECK: %[[DX:.*]] = plait.matmul %arg2, %arg1 : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
// CHECK: return %[[Y]], %[[DX]]
func.func @linear(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>, %dy: tensor<6x5xf32>) -> (tensor<2x3x5xf32>, tensor<6x4xf32>) {
  %wt = plait.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = plait.matmul %x, %wt : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %w2 = plait.transpose %wt {perm = array<i64: 1, 0>} : (tensor<4x5xf32>) -> tensor<5x4xf32>
  %dx = plait.matmul %dy, %w2 : (tensor<6x5xf32>, tensor<5x4xf32>) -> tensor<6x4xf32>
  return %y, %dx : tensor<2x3x5xf32>, tensor<6x4xf32>
}

// -----

// A weight gradient computed as X^T dY, then transposed to W's layout: (X^T dY)^T = dY^T X,
// one product with both operands read transposed-as-stored, and no transpose at all.
// CHECK: module attributes {plait.fold_transposes = {composed = 0 : i64, operands = 1 : i64, removed = 2 : i64, results = 1 : i64}}
// CHECK-LABEL: func.func @weight_grad
// CHECK-NOT: plait.transpose
// CHECK: %[[G:.*]] = plait.matmul %arg1, %arg0 {transpose_lhs = true} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK: return %[[G]]
func.func @weight_grad(%x: tensor<6x4xf32>, %dy: tensor<6x5xf32>) -> tensor<5x4xf32> {
  %xt = plait.transpose %x {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %g = plait.matmul %xt, %dy : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %gt = plait.transpose %g {perm = array<i64: 1, 0>} : (tensor<4x5xf32>) -> tensor<5x4xf32>
  return %gt : tensor<5x4xf32>
}

// -----

// An attention head: q, k and v are [B, T, H, D] and the heads' products are batched over
// [B, H]. The head transposes (0, 2, 1, 3) and k's (0, 2, 3, 1) become strided reads
// (lhs_perm, rhs_perm), and the context's way back to [B, T, H, D] a strided write
// (result_perm); a product read twice keeps its transpose, and a permutation that moves the
// innermost dimension away from the last two is a real copy and stays.
// CHECK: module attributes {plait.fold_transposes = {composed = 0 : i64, operands = 3 : i64, removed = 4 : i64, results = 1 : i64}}
// CHECK-LABEL: func.func @heads
// CHECK-NEXT: %[[S:.*]] = plait.matmul %arg0, %arg1 {lhs_perm = array<i64: 0, 2, 1, 3>, rhs_perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x8xf32>, tensor<2x5x4x8xf32>) -> tensor<2x4x3x5xf32>
// CHECK-NEXT: %[[ST:.*]] = plait.transpose %[[S]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK-NEXT: %[[C:.*]] = plait.matmul %[[S]], %arg2 {result_perm = array<i64: 0, 2, 1, 3>, rhs_perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x3x5xf32>, tensor<2x5x4x8xf32>) -> tensor<2x3x4x8xf32>
// CHECK-NEXT: %[[X:.*]] = plait.transpose %arg0 {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT: plait.matmul %[[X]], %[[X]] {transpose_rhs = true}
// CHECK: return %[[C]], %[[S]], %[[ST]]
func.func @heads(%q: tensor<2x3x4x8xf32>, %k: tensor<2x5x4x8xf32>, %v: tensor<2x5x4x8xf32>) -> (tensor<2x3x4x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4x5x3xf32>, tensor<2x4x3x3xf32>) {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x8xf32>) -> tensor<2x4x3x8xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x8x5xf32>
  %s = plait.matmul %qh, %kt : (tensor<2x4x3x8xf32>, tensor<2x4x8x5xf32>) -> tensor<2x4x3x5xf32>
  %st = plait.transpose %s {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x3x5xf32>) -> tensor<2x4x5x3xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %c = plait.matmul %s, %vh : (tensor<2x4x3x5xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x3x8xf32>
  %ct = plait.transpose %c {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x3x8xf32>) -> tensor<2x3x4x8xf32>
  %x = plait.transpose %q {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x3x4x8xf32>) -> tensor<2x8x3x4xf32>
  %xx = plait.matmul %x, %x {transpose_rhs = true} : (tensor<2x8x3x4xf32>, tensor<2x8x3x4xf32>) -> tensor<2x8x3x3xf32>
  %y = plait.reshape %xx : (tensor<2x8x3x3xf32>) -> tensor<2x4x3x6xf32>
  %z = plait.slice %y {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 2, 4, 3, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<2x4x3x6xf32>) -> tensor<2x4x3x3xf32>
  return %ct, %s, %st, %z : tensor<2x3x4x8xf32>, tensor<2x4x3x5xf32>, tensor<2x4x5x3xf32>, tensor<2x4x3x3xf32>
}

// -----

// Two transposes that do not cancel merge into one; gemm's flags toggle, including one
// already set (false is the default and is not printed); a vector times a transposed
// matrix folds too.
// CHECK: module attributes {plait.fold_transposes = {composed = 1 : i64, operands = 3 : i64, removed = 3 : i64, results = 0 : i64}}
// CHECK-LABEL: func.func @others
// CHECK: %[[M:.*]] = plait.transpose %arg0 {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK: %[[G:.*]] = plait.gemm %arg1, %arg2 {trans_a = true} : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<3x3xf32>
// CHECK: %[[V:.*]] = plait.matmul %arg3, %arg2 {transpose_rhs = true} : (tensor<3xf32>, tensor<5x3xf32>) -> tensor<5xf32>
// CHECK-NOT: plait.transpose
func.func @others(%x: tensor<2x3x4xf32>, %a: tensor<5x3xf32>, %b: tensor<5x3xf32>, %v: tensor<3xf32>) -> (tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<5xf32>) {
  %t1 = plait.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %t2 = plait.transpose %t1 {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %at = plait.transpose %a {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %bt = plait.transpose %b {perm = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %g = plait.gemm %at, %bt {trans_b = true} : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x3xf32>
  %vt = plait.matmul %v, %bt : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  return %t2, %g, %vt : tensor<4x2x3xf32>, tensor<3x3xf32>, tensor<5xf32>
}
