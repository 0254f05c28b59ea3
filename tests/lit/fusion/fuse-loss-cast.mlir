// RUN: plait-opt --plait-fuse-loss-cast --split-input-file %s | FileCheck %s

// bf16-mixed: the logits are cast to f32 for the loss, whose gradient is cast back. The loss
// is rewritten to read the bf16 logits and still give f32, the gradient to read them with
// the f32 loss gradient and give bf16; both casts are gone.
// CHECK: plait.fuse_loss_cast = {bytes = 320 : i64, casts = 2 : i64, gradients = 1 : i64, losses = 1 : i64}
// CHECK-LABEL: func.func @loss
// CHECK-NEXT: %[[L:.*]] = plait.softmax_cross_entropy %arg0, %arg1 {ignore_index = -100 : i64} : (tensor<8x10xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: %[[D:.*]] = plait.softmax_cross_entropy_grad %arg0, %arg1, %arg2 {ignore_index = -100 : i64} : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xbf16>
// CHECK-NEXT: return %[[L]], %[[D]]
func.func @loss(%x: tensor<8x10xbf16>, %t: tensor<8xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<8x10xbf16>) {
  %w = plait.cast %x : (tensor<8x10xbf16>) -> tensor<8x10xf32>
  %l = plait.softmax_cross_entropy %w, %t {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %d = plait.softmax_cross_entropy_grad %w, %t, %g {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %b = plait.cast %d : (tensor<8x10xf32>) -> tensor<8x10xbf16>
  return %l, %b : tensor<f32>, tensor<8x10xbf16>
}

// -----

// Class weights and logits of rank 3 ([N, C, D]) too: the weights stay f32, as the loss of
// the cast had them. bytes: the f32 gradient of [8, 10, 3].
// CHECK: plait.fuse_loss_cast = {bytes = 960 : i64, casts = 3 : i64, gradients = 1 : i64, losses = 2 : i64}
// CHECK-LABEL: func.func @weighted
// CHECK-NEXT: plait.softmax_cross_entropy %arg0, %arg2, %arg4 {reduction = "sum"} : (tensor<8x10xbf16>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32>
// CHECK-NEXT: plait.softmax_cross_entropy %arg1, %arg3, %arg4 : (tensor<8x10x3xbf16>, tensor<8x3xi64>, tensor<10xf32>) -> tensor<f32>
// CHECK-NEXT: plait.softmax_cross_entropy_grad %arg1, %arg3, %arg5, %arg4 : (tensor<8x10x3xbf16>, tensor<8x3xi64>, tensor<f32>, tensor<10xf32>) -> tensor<8x10x3xbf16>
// CHECK-NOT: plait.cast
func.func @weighted(%x: tensor<8x10xbf16>, %y: tensor<8x10x3xbf16>, %t: tensor<8xi64>, %u: tensor<8x3xi64>, %c: tensor<10xf32>, %g: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<8x10x3xbf16>) {
  %w = plait.cast %x : (tensor<8x10xbf16>) -> tensor<8x10xf32>
  %l = plait.softmax_cross_entropy %w, %t, %c {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32>
  %w3 = plait.cast %y : (tensor<8x10x3xbf16>) -> tensor<8x10x3xf32>
  %l3 = plait.softmax_cross_entropy %w3, %u, %c : (tensor<8x10x3xf32>, tensor<8x3xi64>, tensor<10xf32>) -> tensor<f32>
  %d3 = plait.softmax_cross_entropy_grad %w3, %u, %g, %c : (tensor<8x10x3xf32>, tensor<8x3xi64>, tensor<f32>, tensor<10xf32>) -> tensor<8x10x3xf32>
  %b3 = plait.cast %d3 : (tensor<8x10x3xf32>) -> tensor<8x10x3xbf16>
  return %l, %l3, %b3 : tensor<f32>, tensor<f32>, tensor<8x10x3xbf16>
}

// -----

// Kept: an f32 gradient read by more than the cast back, and a cast back to another type
// than the logits'. The loss of %w reads the bf16 logits; the cast stays for the gradients.
// CHECK: plait.fuse_loss_cast = {bytes = 0 : i64, casts = 0 : i64, gradients = 0 : i64, losses = 1 : i64}
// CHECK-LABEL: func.func @kept
// CHECK: plait.softmax_cross_entropy %arg0, %arg1 : (tensor<8x10xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK-COUNT-2: plait.softmax_cross_entropy_grad %{{.*}} : (tensor<8x10xf32>
func.func @kept(%x: tensor<8x10xbf16>, %t: tensor<8xi64>, %g: tensor<f32>) -> (tensor<8x10xbf16>, tensor<8x10xf32>, tensor<8x10xf16>, tensor<f32>) {
  %w = plait.cast %x : (tensor<8x10xbf16>) -> tensor<8x10xf32>
  %l = plait.softmax_cross_entropy %w, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %d2 = plait.softmax_cross_entropy_grad %w, %t, %g : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %b2 = plait.cast %d2 : (tensor<8x10xf32>) -> tensor<8x10xbf16>
  %d3 = plait.softmax_cross_entropy_grad %w, %t, %g : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %b3 = plait.cast %d3 : (tensor<8x10xf32>) -> tensor<8x10xf16>
  return %b2, %d2, %b3, %l : tensor<8x10xbf16>, tensor<8x10xf32>, tensor<8x10xf16>, tensor<f32>
}
