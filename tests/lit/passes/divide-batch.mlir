// RUN: plait-opt --plait-divide-batch='micro-batches=2' %s | FileCheck %s
// RUN: plait-opt --plait-divide-batch='micro-batches=1' %s | FileCheck %s --check-prefix=ONE

// A GPT-like block at batch 4 divided into micro-batches of 2: arguments, inferred shapes
// (gather, matmul, transpose, softmax, loss), reshapes that merge and split the batch,
// broadcast_to, the fused attention's lse, a dropout mask by the value it multiplies, layer
// norm and cast; params, constants and the [S, S] mask keep their shapes.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg0: tensor<2x8xi64> {plait.name = "idx"}, %arg1: tensor<2x8xi64> {plait.name = "targets"}) -> (tensor<f32> {plait.name = "loss"}, tensor<2x8x16xf32> {plait.name = "hidden"})
// ONE: %arg0: tensor<4x8xi64> {plait.name = "idx"}, %arg1: tensor<4x8xi64> {plait.name = "targets"}) -> (tensor<f32> {plait.name = "loss"}, tensor<4x8x16xf32> {plait.name = "hidden"})
func.func @main(%idx: tensor<4x8xi64> {plait.name = "idx"}, %targets: tensor<4x8xi64> {plait.name = "targets"})
    -> (tensor<f32> {plait.name = "loss"}, tensor<4x8x16xf32> {plait.name = "hidden"}) {
  // CHECK: plait.param "wte" {init = "normal:0.02"} : tensor<10x16xf32>
  %wte = plait.param "wte" {init = "normal:0.02"} : tensor<10x16xf32>
  // CHECK: plait.gather %{{.*}}, %arg0 : (tensor<10x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %x = plait.gather %wte, %idx : (tensor<10x16xf32>, tensor<4x8xi64>) -> tensor<4x8x16xf32>
  %g = plait.param "ln.weight" {init = "ones"} : tensor<16xf32>
  // CHECK: plait.layer_norm {{.*}} -> tensor<2x8x16xf32>
  %n = plait.layer_norm %x, %g {axis = -1 : i64} : (tensor<4x8x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
  // CHECK: plait.reshape %{{.*}} : (tensor<2x8x16xf32>) -> tensor<2x8x2x8xf32>
  %q = plait.reshape %n : (tensor<4x8x16xf32>) -> tensor<4x8x2x8xf32>
  // CHECK: plait.attention {{.*}} -> (tensor<2x8x2x8xf32>, tensor<2x2x8xf32>)
  %o, %lse = plait.attention %q, %q, %q {scale = 0.35355339059327373 : f64, causal = true}
      : (tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>, tensor<4x8x2x8xf32>) -> (tensor<4x8x2x8xf32>, tensor<4x2x8xf32>)
  // A slice over the whole batch (rotary embeddings' halves) follows it; its end along the
  // last dimension stays.
  // CHECK: plait.slice %{{.*}} {ends = array<i64: 2, 8, 2, 4>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<2x8x2x8xf32>) -> tensor<2x8x2x4xf32>
  %rot = plait.slice %o {ends = array<i64: 4, 8, 2, 4>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>} : (tensor<4x8x2x8xf32>) -> tensor<4x8x2x4xf32>
  // CHECK: plait.transpose {{.*}} -> tensor<2x2x8x8xf32>
  %t = plait.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x8x2x8xf32>) -> tensor<4x2x8x8xf32>
  %scores = plait.matmul %t, %t : (tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
  %mask = plait.constant dense<true> : tensor<8x8xi1>
  %hidden = plait.trilu %mask {k = 1 : i64} : tensor<8x8xi1>
  %ninf = plait.constant dense<0xFF800000> : tensor<f32>
  // CHECK: plait.where {{.*}} : (tensor<8x8xi1>, tensor<f32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %masked = plait.where %hidden, %ninf, %scores : (tensor<8x8xi1>, tensor<f32>, tensor<4x2x8x8xf32>) -> tensor<4x2x8x8xf32>
  // CHECK: plait.softmax {{.*}} : tensor<2x2x8x8xf32>
  %p = plait.softmax %masked {axis = -1 : i64} : tensor<4x2x8x8xf32>
  // CHECK: plait.transpose {{.*}} -> tensor<2x8x2x8xf32>
  %back = plait.transpose %p {perm = array<i64: 0, 2, 1, 3>} : (tensor<4x2x8x8xf32>) -> tensor<4x8x2x8xf32>
  // CHECK: plait.reshape %{{.*}} : (tensor<2x8x2x8xf32>) -> tensor<2x8x16xf32>
  %merged = plait.reshape %back : (tensor<4x8x2x8xf32>) -> tensor<4x8x16xf32>
  %step = plait.hyper "step" : tensor<f32>
  // CHECK: plait.dropout_mask {{.*}} -> tensor<2x8x16xf32>
  %keep = plait.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 0 : i64, stream = 3 : i64} : (tensor<f32>) -> tensor<4x8x16xf32>
  // CHECK: plait.mul {{.*}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %dropped = plait.mul %merged, %keep : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  // CHECK: plait.cast {{.*}} : (tensor<2x8x16xf32>) -> tensor<2x8x16xbf16>
  %half = plait.cast %dropped : (tensor<4x8x16xf32>) -> tensor<4x8x16xbf16>
  // CHECK: plait.cast {{.*}} : (tensor<2x8x16xbf16>) -> tensor<2x8x16xf32>
  %full = plait.cast %half : (tensor<4x8x16xbf16>) -> tensor<4x8x16xf32>
  // A [1, B, S] view of the batch, broadcast over a leading 3.
  // CHECK: plait.reshape %{{.*}} : (tensor<2x8xi64>) -> tensor<1x2x8xi64>
  %row = plait.reshape %targets : (tensor<4x8xi64>) -> tensor<1x4x8xi64>
  // CHECK: plait.broadcast_to {{.*}} : (tensor<1x2x8xi64>) -> tensor<3x2x8xi64>
  %rows = plait.broadcast_to %row : (tensor<1x4x8xi64>) -> tensor<3x4x8xi64>
  // CHECK: plait.reshape %{{.*}} : (tensor<3x2x8xi64>) -> tensor<48xi64>
  %flat_rows = plait.reshape %rows : (tensor<3x4x8xi64>) -> tensor<96xi64>
  // The batch merged with the sequence for the loss.
  // CHECK: plait.reshape %{{.*}} : (tensor<2x8x16xf32>) -> tensor<16x16xf32>
  %logits = plait.reshape %full : (tensor<4x8x16xf32>) -> tensor<32x16xf32>
  // CHECK: plait.reshape %arg1 : (tensor<2x8xi64>) -> tensor<16xi64>
  %flat = plait.reshape %targets : (tensor<4x8xi64>) -> tensor<32xi64>
  // CHECK: plait.softmax_cross_entropy {{.*}} : (tensor<16x16xf32>, tensor<16xi64>) -> tensor<f32>
  %loss = plait.softmax_cross_entropy %logits, %flat : (tensor<32x16xf32>, tensor<32xi64>) -> tensor<f32>
  return %loss, %n : tensor<f32>, tensor<4x8x16xf32>
}
