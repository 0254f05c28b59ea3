
// A subtracted param's gradint ends in a negation of its own (d(h - c)/dc = -g). It is not a
// param group's maximize (plait.maximize marks those): plait-shard leaves it where it is and
// the param in its layer's unit, with the weight.
// BUILD: %[[NEG:[0-9]+]] = plait.neg %{{.*}} : tensor<4x3xf32>
// BUILD: plait.sgd_update %{{.*}}, %[[NEG]]
func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}, %y: tensor<4xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w0 = plait.param "layers.0.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %c0 = plait.param "layeró.0.shift" {init = "zeros"} : tensor<4x3xf32>
  %h = plait.matmul %x, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %s = plait.sub %h, %c0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = plait.softmax_cross_entropy %s, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l:  tensor<f32>
}
