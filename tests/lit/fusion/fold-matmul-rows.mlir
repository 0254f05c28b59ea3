// RUN: plait-opt --plait-fold-matmul-rows %s | FileCheck %s

// nn.MultiheadAttention's in-projection as plait-fold-transposes leaves it: [8, 37, 768] read
// as [37, 8, 768] against one weight, 37 GEMMs of 8 rows: folded. Its input gradient stores
// the product [8, 37, 768] from [37, 8, 2304]: folded. A product of entries with 256 rows or
// more, a batched rhs (each entry its own matrix), a single entry and an unpermuted matmul
// are left as they are; the unpermuted one is not counted.
// CHECK: module attributes {plait.fold_matmul_rows = {folded = 2 : i64, permuted = 5 : i64}}
// CHECK-LABEL: func.func @attention_projection
// CHECK: plait.matmul %{{.*}}, %{{.*}}, %{{.*}} {fold_rows = true, lhs_perm = array<i64: 1, 0, 2>, transpose_rhs = true}
// CHECK: plait.matmul %{{.*}}, %{{.*}} {fold_rows = true, result_perm = array<i64: 1, 0, 2>}
// CHECK: plait.matmul %{{.*}}, %{{.*}} {lhs_perm = array<i64: 1, 0, 2>}
// CHECK: plait.matmul %{{.*}}, %{{.*}} {lhs_perm = array<i64: 1, 0, 2>}
// CHECK: plait.matmul %{{.*}}, %{{.*}} {lhs_perm = array<i64: 1, 0>}
// CHECK: plait.matmul %{{.*}}, %{{.*}} : (tensor<8x37x64xf32>
func.func @attention_projection(%x: tensor<8x37x768xf32>, %w: tensor<2304x768xf32>,
                                %b: tensor<2304xf32>, %dy: tensor<37x8x2304xf32>,
                                %w2: tensor<2304x768xf32>, %long: tensor<300x2x64xf32>,
                                %v: tensor<64x16xf32>, %heads: tensor<37x8x64xf32>,
                                %k: tensor<8x64x16xf32>, %m: tensor<64x37xf32>,
                                %q: tensor<8x37x64xf32>) {
  %0 = plait.matmul %x, %w, %b {lhs_perm = array<i64: 1, 0, 2>, transpose_rhs = true}
      : (tensor<8x37x768xf32>, tensor<2304x768xf32>, tensor<2304xf32>) -> tensor<37x8x2304xf32>
  %1 = plait.matmul %dy, %w2 {result_perm = array<i64: 1, 0, 2>}
      : (tensor<37x8x2304xf32>, tensor<2304x768xf32>) -> tensor<8x37x768xf32>
  %2 = plait.matmul %long, %v {lhs_perm = array<i64: 1, 0, 2>}
      : (tensor<300x2x64xf32>, tensor<64x16xf32>) -> tensor<2x300x16xf32>
  %3 = plait.matmul %heads, %k {lhs_perm = array<i64: 1, 0, 2>}
      : (tensor<37x8x64xf32>, tensor<8x64x16xf32>) -> tensor<8x37x16xf32>
  %4 = plait.matmul %m, %v {lhs_perm = array<i64: 1, 0>}
      : (tensor<64x37xf32>, tensor<64x16xf32>) -> tensor<37x16xf32>
  %5 = plait.matmul %q, %v : (tensor<8x37x64xf32>, tensor<64x16xf32>) -> tensor<8x37x16xf32>
  return
}

