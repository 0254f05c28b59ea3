// Round trip of the training ops (ir/PlaitTrainOps.td): the custom form parses, verifies
// and prints back; the generic form does the same.
// RUN: plait-opt %s | plait-opt | FileCheck %s
// RUN: plait-opt --mlir-print-op-generic %s | plait-opt | FileCheck %s

// CHECK-LABEL: func.func @train(
// CHECK-NEXT: %0 = plait.param "fc.weight" {init = "normal:0.02"} : tensor<8xf32>
// CHECK-NEXT: %1 = plait.state "fc.weight.exp_avg" : tensor<8xf32>
// CHECK-NEXT: %2 = plait.state "fc.weight.exp_avg_sq" : tensor<8xf32>
// CHECK-NEXT: %3 = plait.state "fc.weight.momentum_buffer" : tensor<8xf32>
// CHECK-NEXT: %4 = plait.hyper "lr" : tensor<f32>
// CHECK-NEXT: %5 = plait.hyper "step" : tensor<f32>
// CHECK-NEXT: %6 = plait.gather_grad %arg5, %arg6 : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
// CHECK-NEXT: %7 = plait.conv2d_grad_input %arg1, %arg2 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %8 = plait.conv2d_grad_weight %arg0, %arg1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NEXT: %9 = plait.max_pool2d_grad %arg4, %arg3 {dilations = array<i64: 1, 1>, kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT: %10 = plait.avg_pool2d_grad %arg3 {kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT: %11 = plait.softmax_cross_entropy_grad %arg7, %arg8, %arg9 : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
// CHECK-NEXT: %12 = plait.nll_loss_grad %arg7, %arg8, %arg11, %arg10 {ignore_index = -100 : i64, reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<8xf32>, tensor<10xf32>) -> tensor<8x10xf32>
// CHECK-NEXT: %new_param, %new_buffer = plait.sgd_update %0, %arg11, %4, %5, %3 {momentum = 9.000000e-01 : f64, nesterov = true} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_0 = plait.sgd_update %0, %arg11, %4, %5 {weight_decay = 1.000000e-04 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
// CHECK-NEXT: %new_param_1, %new_exp_avg, %new_exp_avg_sq = plait.adamw_update %0, %arg11, %1, %2, %4, %5 {beta1 = 8.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_2, %new_sum = plait.adagrad_update %0, %arg11, %4, %5, %2 {lr_decay = 1.000000e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_3, %new_states:3 = plait.rmsprop_update %0, %arg11, %4, %5, %2, %1, %3 {alpha = 9.000000e-01 : f64, centered = true, momentum = 5.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_4, %new_exp_avg_5, %new_exp_avg_sq_6, %new_max_exp_avg_sq = plait.adamw_update %0, %arg11, %1, %2, %4, %5, %3 {amsgrad = true} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_7, %new_exp_avg_8 = plait.lion_update %0, %arg11, %4, %5, %1 {beta2 = 0.97999999999999998 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_9, %new_exp_avg_10, %new_exp_inf = plait.adamax_update %0, %arg11, %4, %5, %1, %2 {beta1 = 8.000000e-01 : f64, weight_decay = 1.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_11, %new_exp_avg_12, %new_exp_avg_sq_13 = plait.nadam_update %0, %arg11, %4, %5, %1, %2 {momentum_decay = 1.000000e-02 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_14, %new_exp_avg_15, %new_exp_avg_sq_16 = plait.radam_update %0, %arg11, %4, %5, %1, %2 {beta2 = 0.98999999999999999 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_17, %new_square_avg, %new_acc_delta = plait.adadelta_update %0, %arg11, %4, %5, %2, %3 {eps = 1.000000e-05 : f64, rho = 0.94999999999999996 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_18, %new_sum_19 = plait.adagrad_update %0, %arg11, %4, %5, %2 {initial_accumulator_value = 1.000000e-01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_20, %new_ax = plait.asgd_update %0, %arg11, %4, %5, %1 {lambd = 1.000000e-03 : f64, t0 = 1.000000e+01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %new_param_21, %new_prev, %new_step_size = plait.rprop_update %0, %arg11, %4, %5, %1, %2 {etaminus = 4.000000e-01 : f64, step_size_max = 1.000000e+01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: plait.assign %0, %new_param_1 : tensor<8xf32>
// CHECK-NEXT: plait.assign %1, %new_exp_avg : tensor<8xf32>
// CHECK-NEXT: plait.assign %3, %new_buffer : tensor<8xf32>
// CHECK-NEXT: return
func.func @train(%x: tensor<1x3x8x8xf32>, %g4: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>, %pg: tensor<1x1x2x2xf32>, %px: tensor<1x1x4x4xf32>, %eg: tensor<2x8x16xf32>, %ids: tensor<2x8xi64>, %logits: tensor<8x10xf32>, %labels: tensor<8xi64>, %l: tensor<f32>, %cw: tensor<10xf32>, %ln: tensor<8xf32>) {
  %p = plait.param "fc.weight" {init = "normal:0.02"} : tensor<8xf32>
  %m = plait.state "fc.weight.exp_avg" : tensor<8xf32>
  %v = plait.state "fc.weight.exp_avg_sq" : tensor<8xf32>
  %b = plait.state "fc.weight.momentum_buffer" : tensor<8xf32>
  %lr = plait.hyper "lr" : tensor<f32>
  %step = plait.hyper "step" : tensor<f32>
  %0 = plait.gather_grad %eg, %ids : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
  %1 = plait.conv2d_grad_input %g4, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  %2 = plait.conv2d_grad_weight %x, %g4 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  %3 = plait.max_pool2d_grad %px, %pg {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  %4 = plait.avg_pool2d_grad %pg {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
  %5 = plait.softmax_cross_entropy_grad %logits, %labels, %l : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  %6 = plait.nll_loss_grad %logits, %labels, %ln, %cw {reduction = "none", ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>, tensor<8xf32>, tensor<10xf32>) -> tensor<8x10xf32>
  %7:2 = plait.sgd_update %p, %ln, %lr, %step, %b {momentum = 0.9 : f64, nesterov = true} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %8 = plait.sgd_update %p, %ln, %lr, %step {weight_decay = 1.0e-04 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
  %9:3 = plait.adamw_update %p, %ln, %m, %v, %lr, %step {beta1 = 0.8 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %10:2 = plait.adagrad_update %p, %ln, %lr, %step, %v {lr_decay = 1.0e-03 : f64, eps = 1.0e-10 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %11:4 = plait.rmsprop_update %p, %ln, %lr, %step, %v, %m, %b {alpha = 0.9 : f64, centered = true, momentum = 0.5 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %12:4 = plait.adamw_update %p, %ln, %m, %v, %lr, %step, %b {amsgrad = true} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %13:2 = plait.lion_update %p, %ln, %lr, %step, %m {beta2 = 0.98 : f64, weight_decay = 0.1 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %14:3 = plait.adamax_update %p, %ln, %lr, %step, %m, %v {beta1 = 0.8 : f64, weight_decay = 0.1 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %15:3 = plait.nadam_update %p, %ln, %lr, %step, %m, %v {momentum_decay = 0.01 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %16:3 = plait.radam_update %p, %ln, %lr, %step, %m, %v {beta2 = 0.99 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %17:3 = plait.adadelta_update %p, %ln, %lr, %step, %v, %b {rho = 0.95 : f64, eps = 1.0e-05 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %18:2 = plait.adagrad_update %p, %ln, %lr, %step, %v {initial_accumulator_value = 0.1 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %20:2 = plait.asgd_update %p, %ln, %lr, %step, %m {t0 = 10.0 : f64, lambd = 1.0e-03 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %19:3 = plait.rprop_update %p, %ln, %lr, %step, %m, %v {etaminus = 0.4 : f64, step_size_max = 10.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  plait.assign %p, %9#0 : tensor<8xf32>
  plait.assign %m, %9#1 : tensor<8xf32>
  plait.assign %b, %7#1 : tensor<8xf32>
  return
}

// CHECK-LABEL: func.func @stop(
// CHECK-NEXT: %0 = plait.stop_gradient %arg0 : tensor<2x3xf32>
func.func @stop(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = plait.stop_gradient %x : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @weight_ema(
// CHECK-NEXT: %0 = plait.weight_ema %arg0, %arg1, %arg2 {decay = 0.99899999999999999 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT: %1 = plait.weight_ema %arg0, %0, %arg2 {decay = 5.000000e-01 : f64, warmup = true}
func.func @weight_ema(%p: tensor<2x3xf32>, %e: tensor<2x3xf32>, %step: tensor<f32>) -> tensor<2x3xf32> {
  %0 = plait.weight_ema %p, %e, %step {decay = 0.999 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = plait.weight_ema %p, %0, %step {decay = 0.5 : f64, warmup = true} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
