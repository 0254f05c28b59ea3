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

// Kept: class weights, logits of rank 3, an f32 gradient read by more than the cast back,
// and a cast back to another type than the logits'. The loss of %w (no weights, rank 2)
// reads the bf16 logits; the cast stays for the gradients.
// CHECK: plait.fuse_loss_cast = {bytes = 0 : i64, casts = 0 : i64, gradients = 0 : i64, losses = 1 : i64}
// CHECK-LABEL: func.func @kept
// CHECK: plait.softmax_cross_entropy %arg0, %arg2 : (tensor<8x10xbf16>, tensor<8xi64>) -> tensor<f32>
// CHECK-COUNT-4: plait.softmax_cross_entropy_grad %{{.*}} : (tensor<{{[0-9x]*}}xf32>
func.func @kept(%x: tensor<8x10xbf16>, %y: tensor<8x10x3xbf16>, %t: tensor<8xi64>, %u: tensor<8x3xi64>, %c: tensor<10xf32>, %g: tensor<f32>) -> (tensor<8x10xbf16>, tensor<8x10x3xbf16>, tensor<8x10xbf16>, tensor<8x10xf32>, tensor<8x10xf16>, tensor<f32>, tensor<f32>) {
  %w = plait.cast %x : (tensor<8x10xbf16>) -> tensor<8x10xf32>
  %l = plait.softmax_cross_entropy %w, %t : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %lc = plait.softmax_cross_entropy %w, %t, %c : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32>
  %d0 = plait.softmax_cross_entropy_grad %w, %t, %g, %c : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>, tensor<10xf32>) -> tensor<8x10xf32>
  %b0 = plait.cast %d0 : (tensor<8x10xf32>) -> tensor<8x10xbf16>
  %w3 = plait.cast %y : (tensor<8x10x3xbf16>) -> tensor<8x10x3xf32>
  %d1 = plait.softmax_cross_entropy_grad %w3, %u, %g : (tensor<8x10x3xf32>, tensor<8x3xi64>, tensor<f32>) -> tensor<8x10x3xf32>
  %b1 = plait.cast %d1 : (tensor<8x10x3xf32>) -> tensor<8x10x3xbf16>
  %d2 = plait.softmax_cross_entropy_grad %w, %t, %g : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %b2 = plait.cast %d2 : (tensor<8x10xf32>) -> tensor<8x10xbf16>
  %d3 = plait.softmax_cross_entropy_grad %w, %t, %g : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %b3 = plait.cast %d3 : (tensor<8x10xf32>) -> tensor<8x10xf16>
  return %b0, %b1, %b2, %d2, %b3, %l, %lc : tensor<8x10xbf16>, tensor<8x10x3xbf16>, tensor<8x10xbf16>, tensor<8x10xf32>, tensor<8x10xf16>, tensor<f32>, tensor<f32>
}
