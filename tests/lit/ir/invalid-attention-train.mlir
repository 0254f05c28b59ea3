// Diagnostics of plait.attention in the training step.
// RUN: plait-opt --plait-build-train-step --verify-diagnostics %s -o /dev/null

// Only the attention's output has a gradient: a loss read from its log-sum-exp is refused
// when the training step is built.
func.func @main(%x: tensor<1x2x1x4xf32>) -> tensor<f32> {
  %q = plait.param "q" {init = "normal:0.02"} : tensor<1x2x1x4xf32>
  %qx = plait.add %q, %x : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  // expected-error @+1 {{'plait.attention' op cannot differentiate through 'lse'; only 'out' has a gradient}}
  %o, %l = plait.attention %qx, %qx, %qx {scale = 0.5 : f64} : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> (tensor<1x2x1x4xf32>, tensor<1x1x2xf32>)
  %s = plait.reduce_sum %l {axes = array<i64>, keepdims = false} : (tensor<1x1x2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
