// RUN: plait-opt --plait-fuse-attention --split-input-file %s | FileCheck %s

// The importer's causal attention (samples/gpt): heads split by transposes, scaled scores,
// a constant causal mask filled with -inf, softmax, the product with v, heads merged back.
// All of it becomes one plait.attention on the [B, S, H, D] operands, whose output the
// merging transpose's reader takes directly.
// CHECK: module attributes {plait.fuse_attention = {causal = 1 : i64, dropout = 0 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @causal
// CHECK-NOT: plait.constant
// CHECK-NEXT: %[[O:.*]], %[[L:.*]] = plait.attention %arg0, %arg1, %arg2 {causal = true, scale = 0.35355338454246521 : f64} : (tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>) -> (tensor<2x4x2x8xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: %[[Y:.*]] = plait.reshape %[[O]] : (tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @causal(%q: tensor<2x4x2x8xf32>, %k: tensor<2x4x2x8xf32>, %v: tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32> {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x8x4xf32>
  %s = plait.matmul %qh, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %c = plait.constant dense<0.353553385> : tensor<f32>
  %ss = plait.mul %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %mask = plait.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %inf = plait.constant dense<0xFF800000> : tensor<f32>
  %m = plait.where %mask, %inf, %ss : (tensor<4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = plait.softmax %m {axis = -1 : i64} : tensor<2x2x4x4xf32>
  %o = plait.matmul %p, %vh : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  %ot = plait.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x8xf32>) -> tensor<2x4x2x8xf32>
  %y = plait.reshape %ot : (tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// Unmasked attention scaled by a division, k split into heads by two transposes, more keys
// than queries and a value width of its own; the [B, H, S, E] result's reader gets it
// transposed back from the attention's output.
// CHECK: module attributes {plait.fuse_attention = {causal = 0 : i64, dropout = 0 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @unmasked
// CHECK-NEXT: %[[O:.*]], %{{.*}} = plait.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f64} : (tensor<1x3x2x16xf32>, tensor<1x5x2x16xf32>, tensor<1x5x2x4xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x2x3xf32>)
// CHECK-NEXT: %[[H:.*]] = plait.transpose %[[O]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT: return %[[H]]
func.func @unmasked(%q: tensor<1x3x2x16xf32>, %k: tensor<1x5x2x16xf32>, %v: tensor<1x5x2x4xf32>) -> tensor<1x2x3x4xf32> {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x16xf32>) -> tensor<1x2x3x16xf32>
  %kh = plait.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x16xf32>) -> tensor<1x2x5x16xf32>
  %kt = plait.transpose %kh {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x5x16xf32>) -> tensor<1x2x16x5xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x5x4xf32>
  %s = plait.matmul %qh, %kt : (tensor<1x2x3x16xf32>, tensor<1x2x16x5xf32>) -> tensor<1x2x3x5xf32>
  %c = plait.constant dense<4.0> : tensor<f32>
  %ss = plait.div %s, %c : (tensor<1x2x3x5xf32>, tensor<f32>) -> tensor<1x2x3x5xf32>
  %p = plait.softmax %ss {axis = 3 : i64} : tensor<1x2x3x5xf32>
  %o = plait.matmul %p, %vh : (tensor<1x2x3x5xf32>, tensor<1x2x5x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// plait-zoo's causal mask: the triangle above the diagonal of a constant all true.
// CHECK: module attributes {plait.fuse_attention = {causal = 1 : i64, dropout = 0 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @trilu_mask
// CHECK-NOT: plait.trilu
// CHECK: plait.attention %arg0, %arg1, %arg2 {causal = true, scale = 5.000000e-01 : f64}
func.func @trilu_mask(%q: tensor<1x3x1x4xf32>, %k: tensor<1x3x1x4xf32>, %v: tensor<1x3x1x4xf32>) -> tensor<1x3x1x4xf32> {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x3x4xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x3x4xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x4x3xf32>
  %s = plait.matmul %qh, %kt : (tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32>) -> tensor<1x1x3x3xf32>
  %c = plait.constant dense<0.5> : tensor<f32>
  %ss = plait.mul %s, %c : (tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %ones = plait.constant dense<true> : tensor<3x3xi1>
  %mask = plait.trilu %ones {upper = true, k = 1 : i64} : tensor<3x3xi1>
  %inf = plait.constant dense<0xFF800000> : tensor<f32>
  %m = plait.where %mask, %inf, %ss : (tensor<3x3xi1>, tensor<f32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %p = plait.softmax %m {axis = -1 : i64} : tensor<1x1x3x3xf32>
  %o = plait.matmul %p, %vh : (tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %ot = plait.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32>
  return %ot : tensor<1x3x1x4xf32>
}

// -----

// The mask as Hugging Face writes it: where(seen, scores, lowest float), seen the lower
// triangle with the diagonal (trilu, lower, k = 0).
// CHECK: module attributes {plait.fuse_attention = {causal = 1 : i64, dropout = 0 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @seen_mask
// CHECK-NOT: plait.where
// CHECK: plait.attention %arg0, %arg1, %arg2 {causal = true, scale = 5.000000e-01 : f64}
func.func @seen_mask(%q: tensor<1x3x1x4xf32>, %k: tensor<1x3x1x4xf32>, %v: tensor<1x3x1x4xf32>) -> tensor<1x3x1x4xf32> {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x3x4xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x3x4xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x1x4xf32>) -> tensor<1x1x4x3xf32>
  %s = plait.matmul %qh, %kt : (tensor<1x1x3x4xf32>, tensor<1x1x4x3xf32>) -> tensor<1x1x3x3xf32>
  %c = plait.constant dense<0.5> : tensor<f32>
  %ss = plait.mul %c, %s : (tensor<f32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %ones = plait.constant dense<true> : tensor<1x1x3x3xi1>
  %seen = plait.trilu %ones {upper = false, k = 0 : i64} : tensor<1x1x3x3xi1>
  %low = plait.constant dense<-3.40282347E+38> : tensor<f32>
  %m = plait.where %seen, %ss, %low : (tensor<1x1x3x3xi1>, tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %p = plait.softmax %m {axis = -1 : i64} : tensor<1x1x3x3xf32>
  %o = plait.matmul %p, %vh : (tensor<1x1x3x3xf32>, tensor<1x1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %ot = plait.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32>
  return %ot : tensor<1x3x1x4xf32>
}

// -----

// A mask that is not causal (it hides the diagonal too) stays decomposed, as does a softmax
// whose probabilities are also returned; the report gets a count per reason.
// CHECK: module attributes {plait.fuse_attention = {causal = 0 : i64, dropout = 0 : i64, fused = 0 : i64, left = 2 : i64, reasons = {"the mask is not a causal mask" = 1 : i64, "the probabilities have other readers" = 1 : i64}}}
// CHECK-LABEL: func.func @left
// CHECK-NOT: plait.attention
// CHECK: plait.softmax
// CHECK: plait.softmax
func.func @left(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>) -> (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>, tensor<1x1x2x2xf32>) {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x1x4xf32>) -> tensor<1x1x2x4xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x1x4xf32>) -> tensor<1x1x4x2xf32>
  %s = plait.matmul %qh, %kt : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  %mask = plait.constant dense<[[true, true], [false, true]]> : tensor<2x2xi1>
  %inf = plait.constant dense<0xFF800000> : tensor<f32>
  %m = plait.where %mask, %inf, %s : (tensor<2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = plait.softmax %m {axis = -1 : i64} : tensor<1x1x2x2xf32>
  %o = plait.matmul %p, %vh : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %s2 = plait.matmul %qh, %kt : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  %p2 = plait.softmax %s2 {axis = -1 : i64} : tensor<1x1x2x2xf32>
  %o2 = plait.matmul %p2, %vh : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  return %o, %o2, %p2 : tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>, tensor<1x1x2x2xf32>
}

// -----

// For --device cuda a head longer than the CUDA kernels take (256) stays decomposed.
// CHECK: module attributes {plait.device = "cuda", plait.fuse_attention = {causal = 0 : i64, dropout = 0 : i64, fused = 0 : i64, left = 1 : i64, reasons = {"a head dimension exceeds the CUDA kernel's 256" = 1 : i64}}}
// CHECK-LABEL: func.func @cuda_long_head
// CHECK-NOT: plait.attention
module attributes {plait.device = "cuda"} {
func.func @cuda_long_head(%q: tensor<1x2x1x512xf32>, %k: tensor<1x2x1x512xf32>, %v: tensor<1x2x1x512xf32>) -> tensor<1x1x2x512xf32> {
  %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x1x512xf32>) -> tensor<1x1x2x512xf32>
  %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x1x512xf32>) -> tensor<1x1x2x512xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x1x512xf32>) -> tensor<1x1x512x2xf32>
  %s = plait.matmul %qh, %kt : (tensor<1x1x2x512xf32>, tensor<1x1x512x2xf32>) -> tensor<1x1x2x2xf32>
  %p = plait.softmax %s {axis = -1 : i64} : tensor<1x1x2x2xf32>
  %o = plait.matmul %p, %vh : (tensor<1x1x2x2xf32>, tensor<1x1x2x512xf32>) -> tensor<1x1x2x512xf32>
  return %o : tensor<1x1x2x512xf32>
}
}

// -----

// nn.MultiheadAttention as PyTorch exports it (torchvision's ViT): the [S, N, D] slices of
// the in-projection (N = batch x heads) split into rank-3 heads by transposes, q divided by
// the scale before the product, the [N, S, E] output transposed back to [S, N, E]. The op
// reads the sources through reshapes to [1, S, N, D] (the reshape of a reshape folded), and
// the transposing reader takes its output through one reshape.
// CHECK: module attributes {plait.fuse_attention = {causal = 0 : i64, dropout = 0 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @multihead_seq_major
// CHECK-NEXT: %[[Q:.*]] = plait.reshape %arg0 : (tensor<3x2x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: %[[K:.*]] = plait.reshape %arg1 : (tensor<5x4x4xf32>) -> tensor<1x5x4x4xf32>
// CHECK-NEXT: %[[V:.*]] = plait.reshape %arg2 : (tensor<5x4x2xf32>) -> tensor<1x5x4x2xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = plait.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64} : (tensor<1x3x4x4xf32>, tensor<1x5x4x4xf32>, tensor<1x5x4x2xf32>) -> (tensor<1x3x4x2xf32>, tensor<1x4x3xf32>)
// CHECK-NEXT: %[[Y:.*]] = plait.reshape %[[O]] : (tensor<1x3x4x2xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[Y]]
func.func @multihead_seq_major(%q: tensor<3x2x8xf32>, %k: tensor<5x4x4xf32>, %v: tensor<5x4x2xf32>) -> tensor<3x4x2xf32> {
  %qr = plait.reshape %q : (tensor<3x2x8xf32>) -> tensor<3x4x4xf32>
  %qh = plait.transpose %qr {perm = array<i64: 1, 0, 2>} : (tensor<3x4x4xf32>) -> tensor<4x3x4xf32>
  %c = plait.constant dense<2.0> : tensor<f32>
  %qs = plait.div %qh, %c : (tensor<4x3x4xf32>, tensor<f32>) -> tensor<4x3x4xf32>
  %kt = plait.transpose %k {perm = array<i64: 1, 2, 0>} : (tensor<5x4x4xf32>) -> tensor<4x4x5xf32>
  %vh = plait.transpose %v {perm = array<i64: 1, 0, 2>} : (tensor<5x4x2xf32>) -> tensor<4x5x2xf32>
  %s = plait.matmul %qs, %kt : (tensor<4x3x4xf32>, tensor<4x4x5xf32>) -> tensor<4x3x5xf32>
  %p = plait.softmax %s {axis = -1 : i64} : tensor<4x3x5xf32>
  %o = plait.matmul %p, %vh : (tensor<4x3x5xf32>, tensor<4x5x2xf32>) -> tensor<4x3x2xf32>
  %ot = plait.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<4x3x2xf32>) -> tensor<3x4x2xf32>
  return %ot : tensor<3x4x2xf32>
}

// -----

// Rank-3 heads read as [N, S, D] tensors (k^T a transpose of one), k multiplied by a scalar
// and the scores scaled too (both folded), a causal mask: the op reads them as [N, S, 1, D]
// and its output is the [N, S, E] result; the scaling of q that another op also reads stays.
// CHECK: module attributes {plait.fuse_attention = {causal = 1 : i64, dropout = 0 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @multihead_batch_major
// CHECK-DAG: %[[Q:.*]] = plait.reshape %arg0 : (tensor<2x4x8xf32>) -> tensor<2x4x1x8xf32>
// CHECK-DAG: %[[K:.*]] = plait.reshape %arg1 : (tensor<2x4x8xf32>) -> tensor<2x4x1x8xf32>
// CHECK-DAG: %[[V:.*]] = plait.reshape %arg2 : (tensor<2x4x8xf32>) -> tensor<2x4x1x8xf32>
// CHECK: %[[O:.*]], %{{.*}} = plait.attention %[[Q]], %[[K]], %[[V]] {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT: %[[Y:.*]] = plait.reshape %[[O]] : (tensor<2x4x1x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[Y]], %{{.*}}
func.func @multihead_batch_major(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %half = plait.constant dense<0.5> : tensor<f32>
  %qs = plait.mul %q, %half : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %quarter = plait.constant dense<0.25> : tensor<f32>
  %ks = plait.mul %quarter, %kt : (tensor<f32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %s = plait.matmul %qs, %ks : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %c = plait.constant dense<2.0> : tensor<f32>
  %ss = plait.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %ones = plait.constant dense<true> : tensor<4x4xi1>
  %mask = plait.trilu %ones {upper = true, k = 1 : i64} : tensor<4x4xi1>
  %inf = plait.constant dense<0xFF800000> : tensor<f32>
  %m = plait.where %mask, %inf, %ss : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = plait.softmax %m {axis = 2 : i64} : tensor<2x4x4xf32>
  %o = plait.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o, %qs : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// Rank-3 heads whose q and k lie in different layouts ([S, N, D] and [N, T, D]) stay
// decomposed, as does a rank-2 softmax.
// CHECK: module attributes {plait.fuse_attention = {causal = 0 : i64, dropout = 0 : i64, fused = 0 : i64, left = 2 : i64, reasons = {"q, k and v are not [seq, heads, dim] or [heads, seq, dim] tensors" = 1 : i64, "softmax is not over the last axis of a rank-3 or rank-4 tensor" = 1 : i64}}}
// CHECK-LABEL: func.func @multihead_mixed
// CHECK-NOT: plait.attention
func.func @multihead_mixed(%q: tensor<3x2x4xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>, %x: tensor<2x3xf32>) -> (tensor<2x3x4xf32>, tensor<2x3xf32>) {
  %qh = plait.transpose %q {perm = array<i64: 1, 0, 2>} : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = plait.matmul %qh, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %p = plait.softmax %s {axis = -1 : i64} : tensor<2x3x3xf32>
  %o = plait.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %px = plait.softmax %x {axis = -1 : i64} : tensor<2x3xf32>
  return %o, %px : tensor<2x3x4xf32>, tensor<2x3xf32>
}

// -----

// PyTorch's float causal mask (generate_square_subsequent_mask: 0 where a key is seen, -inf
// where it is hidden) added to the scores, as MultiheadAttention's baddbmm exports it, after a
// multiply by 1: a causal attention. A mask that is not causal (it hides the diagonal) stays
// decomposed.
// CHECK: module attributes {plait.fuse_attention = {causal = 1 : i64, dropout = 0 : i64, fused = 1 : i64, left = 1 : i64, reasons = {"the scores are added to something other than a causal mask" = 1 : i64}}}
// CHECK-LABEL: func.func @additive_mask
// CHECK: plait.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.000000e+00 : f64}
// CHECK-NOT: plait.attention
// CHECK: plait.softmax
func.func @additive_mask(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = plait.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %one = plait.constant dense<1.0> : tensor<f32>
  %s1 = plait.mul %s, %one : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  %mask = plait.constant dense<[[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]]> : tensor<1x3x3xf32>
  %m = plait.add %mask, %s1 : (tensor<1x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p = plait.softmax %m {axis = -1 : i64} : tensor<2x3x3xf32>
  %o = plait.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %s2 = plait.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %strict = plait.constant dense<[[0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000]]> : tensor<3x3xf32>
  %m2 = plait.add %s2, %strict : (tensor<2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x3x3xf32>
  %p2 = plait.softmax %m2 {axis = -1 : i64} : tensor<2x3x3xf32>
  %o2 = plait.matmul %p2, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o, %o2 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Dropout on the probabilities (p * dropout_mask, as the importer writes an exported Dropout):
// the attention draws that mask itself, from the same step, ratio, seed and stream.
// CHECK: module attributes {plait.fuse_attention = {causal = 0 : i64, dropout = 1 : i64, fused = 1 : i64, left = 0 : i64, reasons = {}}}
// CHECK-LABEL: func.func @dropout
// CHECK: %[[STEP:.*]] = plait.hyper "step"
// CHECK-NOT: plait.dropout_mask
// CHECK: plait.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[STEP]] {dropout = 1.000000e-01 : f64, scale = 5.000000e-01 : f64, seed = 3 : i64, stream = 42 : i64}
// CHECK-NOT: plait.dropout_mask
func.func @dropout(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = plait.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %half = plait.constant dense<0.5> : tensor<f32>
  %ss = plait.mul %s, %half : (tensor<2x3x3xf32>, tensor<f32>) -> tensor<2x3x3xf32>
  %p = plait.softmax %ss {axis = -1 : i64} : tensor<2x3x3xf32>
  %step = plait.hyper "step" : tensor<f32>
  %mask = plait.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 3 : i64, stream = 42 : i64} : (tensor<f32>) -> tensor<2x3x3xf32>
  %pd = plait.mul %p, %mask : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o = plait.matmul %pd, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}

// -----

// For --device cuda the dropout stays decomposed: the CUDA kernels take none.
// CHECK: module attributes {plait.device = "cuda", plait.fuse_attention = {causal = 0 : i64, dropout = 0 : i64, fused = 0 : i64, left = 1 : i64, reasons = {"dropout on the probabilities (the CUDA kernels take none)" = 1 : i64}}}
// CHECK-LABEL: func.func @cuda_dropout
// CHECK-NOT: plait.attention
module attributes {plait.device = "cuda"} {
func.func @cuda_dropout(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>, %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %kt = plait.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = plait.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %p = plait.softmax %s {axis = -1 : i64} : tensor<2x3x3xf32>
  %step = plait.hyper "step" : tensor<f32>
  %mask = plait.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 0 : i64, stream = 1 : i64} : (tensor<f32>) -> tensor<2x3x3xf32>
  %pd = plait.mul %mask, %p : (tensor<2x3x3xf32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %o = plait.matmul %pd, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}
}
