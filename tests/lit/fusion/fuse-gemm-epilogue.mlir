// RUN: plait-opt --plait-fuse-gemm-epilogue --split-input-file %s | FileCheck %s

// A linear layer: the bias add (either operand order) becomes the product's bias, its
// transpose flag kept; the product's unit mark carries over.
// CHECK: module attributes {plait.fuse_gemm_epilogue = {biases = 2 : i64, left_cast = 0 : i64}}
// CHECK-LABEL: func.func @linear
// CHECK-NOT: plait.add
// CHECK: %[[Y:.*]] = plait.matmul %arg0, %arg1, %arg2 {plait.unit = 3 : i64, transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
// CHECK: %[[Z:.*]] = plait.matmul %arg3, %arg4, %arg5 : (tensor<6x5xbf16>, tensor<5x7xbf16>, tensor<7xbf16>) -> tensor<6x7xbf16>
// CHECK: return %[[Y]], %[[Z]]
func.func @linear(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>,
                  %h: tensor<6x5xbf16>, %v: tensor<5x7xbf16>, %c: tensor<7xbf16>)
    -> (tensor<2x3x5xf32>, tensor<6x7xbf16>) {
  %p = plait.matmul %x, %w {transpose_rhs = true, plait.unit = 3 : i64} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %y = plait.add %b, %p : (tensor<5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %q = plait.matmul %h, %v : (tensor<6x5xbf16>, tensor<5x7xbf16>) -> tensor<6x7xbf16>
  %z = plait.add %q, %c : (tensor<6x7xbf16>, tensor<7xbf16>) -> tensor<6x7xbf16>
  return %y, %z : tensor<2x3x5xf32>, tensor<6x7xbf16>
}

// -----

// Left alone: a product read twice, a bias that is not a vector of the columns (a row of
// [1, N], a column [M, 1]), a batched rhs, a product stored permuted, integers, an add
// that broadcasts the product itself, and a bias that is a cast only the add reads
// (bf16-mixed's: the elementwise fusion computes it in the add's kernel).
// CHECK: module attributes {plait.fuse_gemm_epilogue = {biases = 0 : i64, left_cast = 1 : i64}}
// CHECK-LABEL: func.func @left
// CHECK-COUNT-8: plait.add
// CHECK-NOT: plait.add
func.func @left(%x: tensor<6x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>,
                %row: tensor<1x5xf32>, %col: tensor<6x1xf32>, %x3: tensor<2x6x4xf32>,
                %w3: tensor<2x4x5xf32>, %i: tensor<6x4xi64>, %wi: tensor<4x5xi64>,
                %bi: tensor<5xi64>, %v: tensor<4xf32>, %bv: tensor<3x5xf32>,
                %h: tensor<6x4xbf16>, %wh: tensor<4x5xbf16>)
    -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<2x6x5xf32>,
        tensor<6x2x5xf32>, tensor<6x5xi64>, tensor<3x5xf32>, tensor<6x5xbf16>) {
  %p1 = plait.matmul %x, %w : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y1 = plait.add %p1, %b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %p2 = plait.matmul %x, %w : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y2 = plait.add %p2, %row : (tensor<6x5xf32>, tensor<1x5xf32>) -> tensor<6x5xf32>
  %p3 = plait.matmul %x, %w : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y3 = plait.add %p3, %col : (tensor<6x5xf32>, tensor<6x1xf32>) -> tensor<6x5xf32>
  %p4 = plait.matmul %x3, %w3 : (tensor<2x6x4xf32>, tensor<2x4x5xf32>) -> tensor<2x6x5xf32>
  %y4 = plait.add %p4, %b : (tensor<2x6x5xf32>, tensor<5xf32>) -> tensor<2x6x5xf32>
  %p5 = plait.matmul %x3, %w3 {result_perm = array<i64: 1, 0, 2>} : (tensor<2x6x4xf32>, tensor<2x4x5xf32>) -> tensor<6x2x5xf32>
  %y5 = plait.add %p5, %b : (tensor<6x2x5xf32>, tensor<5xf32>) -> tensor<6x2x5xf32>
  %p6 = plait.matmul %i, %wi : (tensor<6x4xi64>, tensor<4x5xi64>) -> tensor<6x5xi64>
  %y6 = plait.add %p6, %bi : (tensor<6x5xi64>, tensor<5xi64>) -> tensor<6x5xi64>
  %p7 = plait.matmul %v, %w : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  %y7 = plait.add %p7, %bv : (tensor<5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %p8 = plait.matmul %h, %wh : (tensor<6x4xbf16>, tensor<4x5xbf16>) -> tensor<6x5xbf16>
  %b8 = plait.cast %b : (tensor<5xf32>) -> tensor<5xbf16>
  %y8 = plait.add %p8, %b8 : (tensor<6x5xbf16>, tensor<5xbf16>) -> tensor<6x5xbf16>
  return %y1, %p1, %y2, %y3, %y4, %y5, %y6, %y7, %y8 : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<2x6x5xf32>, tensor<6x2x5xf32>, tensor<6x5xi64>, tensor<3x5xf32>, tensor<6x5xbf16>
}
