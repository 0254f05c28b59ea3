// A linear classifier at batch 2.
func.func @main(%x: tensor<2x4xf32> {plait.name = "x"}, %y: tensor<2xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w = plait.param "fc.weight" {init = "normal:0.02"} : tensor<3x4xf32>
  %b = plait.param "fc.bias" {init = "zeros"} : tensor<3xf32>
  %h = plait.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = plait.softmax_cross_entropy %h, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
