// A model whose reshape pins the batch of 4 (rows 0-1 and 2-3 merged): no micro-batches.
func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}) -> (tensor<f32> {plait.name = "loss"}) {
  %w = plait.param "w" {init = "ones"} : tensor<6xf32>
  // Line 5: the op the error names.
  %y = plait.reshape %x : (tensor<4x3xf32>) -> tensor<2x6xf32>
  %p = plait.mul %y, %w : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  %l = plait.reduce_mean %p {axes = array<i64>, keepdims = false} : (tensor<2x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
