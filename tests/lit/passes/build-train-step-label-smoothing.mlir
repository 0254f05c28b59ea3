// --label-smoothing: every softmax_cross_entropy of the step smooths its targets (torch's
// CrossEntropyLoss(label_smoothing), which ONNX cannot express), its gradient too.
// RUN: plait-opt --split-input-file --verify-diagnostics --plait-build-train-step='optimizer=sgd label-smoothing=0.1' %s | FileCheck %s
// RUN: not plait-opt --split-input-file --plait-build-train-step='label-smoothing=1.5' %s 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: 'func.func' op label-smoothing must be in [0, 1], got 1.5

// CHECK: plait.train = {clip_grad_norm = 0.000000e+00 : f64, label_smoothing = 1.000000e-01 : f64, optimizer = "sgd"
// CHECK: %[[L:.*]] = plait.softmax_cross_entropy %[[R:.*]], %arg1 {label_smoothing = 1.000000e-01 : f64}
// CHECK: plait.softmax_cross_entropy_grad %[[R]], %arg1, %{{.*}} {label_smoothing = 1.000000e-01 : f64}
func.func @main(%x: tensor<2x4xf32> {plait.name = "x"}, %y: tensor<2xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w = plait.param "fc.weight" {init = "normal:0.02"} : tensor<4x3xf32>
  %h = plait.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = plait.softmax_cross_entropy %h, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op label-smoothing smooths a softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss, torch's cross_entropy); the model has none}}
func.func @main(%x: tensor<2x4xf32> {plait.name = "x"}) -> (tensor<f32> {plait.name = "loss"}) {
  %w = plait.param "fc.weight" {init = "normal:0.02"} : tensor<4x3xf32>
  %h = plait.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = plait.reduce_mean %h {axes = array<i64>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// With class weights (torch weighs the smoothed term's classes too): the loss and its
// gradient keep them.
// CHECK: plait.train = {clip_grad_norm = 0.000000e+00 : f64, label_smoothing = 1.000000e-01 : f64
// CHECK: %[[CW:.*]] = plait.constant dense<[1.000000e+00, 2.000000e+00, 5.000000e-01]>
// CHECK: plait.softmax_cross_entropy %[[R:.*]], %arg1, %[[CW]] {label_smoothing = 1.000000e-01 : f64}
// CHECK: plait.softmax_cross_entropy_grad %[[R]], %arg1, %{{.*}}, %[[CW]] {label_smoothing = 1.000000e-01 : f64}
func.func @main(%x: tensor<2x4xf32> {plait.name = "x"}, %y: tensor<2xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w = plait.param "fc.weight" {init = "normal:0.02"} : tensor<4x3xf32>
  %cw = plait.constant dense<[1.0, 2.0, 0.5]> : tensor<3xf32>
  %h = plait.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = plait.softmax_cross_entropy %h, %y, %cw : (tensor<2x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
