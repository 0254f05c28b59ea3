// Diagnostics of the training ops (ir/PlaitTrainOps.*): hyper, assign, the gradient
// kernels and sgd_update.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @hyper_unknown_name() {
  // expected-error @+1 {{'plait.hyper' op unknown hyper-parameter 'momentum' (expected lr, step or prev_lr)}}
  %0 = plait.hyper "momentum" : tensor<f32>
  return
}

// -----

func.func @hyper_not_scalar() {
  // expected-error @+1 {{'plait.hyper' op must be a scalar tensor}}
  %0 = plait.hyper "lr" : tensor<1xf32>
  return
}

// -----

func.func @hyper_not_float() {
  // expected-error @+1 {{'plait.hyper' op result #0 must be statically shaped tensor of 32-bit float or 64-bit float values, but got 'tensor<i32>'}}
  %0 = plait.hyper "lr" : tensor<i32>
  return
}

// -----

func.func @hyper_step_f64() {
  // expected-error @+1 {{'plait.hyper' op step must be a tensor<f32>, got 'tensor<f64>'}}
  %0 = plait.hyper "step" : tensor<f64>
  return
}

// -----

func.func @assign_to_an_argument(%x: tensor<4xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{'plait.assign' op target must be a plait.param, plait.param_shard or plait.state}}
  plait.assign %x, %v : tensor<4xf32>
  return
}

// -----

func.func @assign_to_an_activation(%v: tensor<4xf32>) {
  %w = plait.param "w" {init = "zeros"} : tensor<4xf32>
  %a = plait.exp %w : tensor<4xf32>
  // expected-error @+1 {{'plait.assign' op target must be a plait.param, plait.param_shard or plait.state}}
  plait.assign %a, %v : tensor<4xf32>
  return
}

// -----

func.func @assign_type(%v: tensor<2x2xf32>) {
  %w = plait.param "w" {init = "zeros"} : tensor<4xf32>
  // expected-error @+1 {{'plait.assign' op failed to verify that all of {target, value} have same type}}
  "plait.assign"(%w, %v) : (tensor<4xf32>, tensor<2x2xf32>) -> ()
  return
}

// -----

func.func @gather_grad_axis(%g: tensor<2x8x16xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'plait.gather_grad' op axis -3 is out of range for rank 2}}
  %0 = plait.gather_grad %g, %i {axis = -3 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
  return
}

// -----

func.func @gather_grad_shape(%g: tensor<2x8x16xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'plait.gather_grad' op grad has shape 2x8x16, expected 100x2x8}}
  %0 = plait.gather_grad %g, %i {axis = 1 : i64} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
  return
}

// -----

func.func @gather_grad_element_type(%g: tensor<2x8x16xf32>, %i: tensor<2x8xi64>) {
  // expected-error @+1 {{'plait.gather_grad' op changes the element type}}
  %0 = plait.gather_grad %g, %i : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf16>
  return
}

// -----

func.func @conv_grad_input_shape(%g: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // Without padding, a 3x3 conv of a 8x8 input gives 6x6, not the 8x8 gradient.
  // expected-error @+1 {{'plait.conv2d_grad_input' op grad has type 'tensor<1x4x8x8xf32>', but the forward op gives 'tensor<1x4x6x6xf32>'}}
  %0 = plait.conv2d_grad_input %g, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  return
}

// -----

func.func @conv_grad_input_forward_rule(%g: tensor<1x4x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // The forward op's shape rule reports its own errors.
  // expected-error @+1 {{'plait.conv2d' op w has 3 input channels per group, expected 5 (5 channels / group 1)}}
  %0 = plait.conv2d_grad_input %g, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x5x8x8xf32>
  return
}

// -----

func.func @conv_grad_weight_shape(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x8x8xf32>) {
  // expected-error @+1 {{'plait.conv2d_grad_weight' op grad has type 'tensor<1x4x8x8xf32>', but the forward op gives 'tensor<1x4x4x4xf32>'}}
  %0 = plait.conv2d_grad_weight %x, %g {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x3x3x3xf32>
  return
}

// -----

func.func @max_pool_grad_result(%x: tensor<1x1x4x4xf32>, %g: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{'plait.max_pool2d_grad' op result type must equal x's type}}
  %0 = plait.max_pool2d_grad %x, %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf64>
  return
}

// -----

func.func @max_pool_grad_shape(%x: tensor<1x1x5x5xf32>, %g: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{'plait.max_pool2d_grad' op grad has type 'tensor<1x1x3x3xf32>', but the forward op gives 'tensor<1x1x2x2xf32>'}}
  %0 = plait.max_pool2d_grad %x, %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @avg_pool_grad_shape(%g: tensor<1x1x2x2xf32>) {
  // expected-error @+1 {{'plait.avg_pool2d_grad' op grad has type 'tensor<1x1x2x2xf32>', but the forward op gives 'tensor<1x1x3x3xf32>'}}
  %0 = plait.avg_pool2d_grad %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x6x6xf32>
  return
}

// -----

func.func @loss_grad_half_type(%x: tensor<8x10xbf16>, %t: tensor<8xi64>, %g: tensor<f16>) {
  // bf16 logits take a gradient of their type or f32 (plait-fuse-loss-cast), not f16.
  // expected-error @+1 {{'plait.softmax_cross_entropy_grad' op grad has type 'tensor<f16>', but the forward op gives 'tensor<bf16>'}}
  %0 = plait.softmax_cross_entropy_grad %x, %t, %g : (tensor<8x10xbf16>, tensor<8xi64>, tensor<f16>) -> tensor<8x10xbf16>
  return
}

// -----

func.func @loss_grad_f32_of_f64(%x: tensor<8x10xf64>, %t: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'plait.softmax_cross_entropy_grad' op grad has type 'tensor<f32>', but the forward op gives 'tensor<f64>'}}
  %0 = plait.softmax_cross_entropy_grad %x, %t, %g : (tensor<8x10xf64>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf64>
  return
}

// -----

func.func @loss_grad_shape(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %g: tensor<8xf32>) {
  // With reduction = mean the loss, and so its gradient, is a scalar.
  // expected-error @+1 {{'plait.softmax_cross_entropy_grad' op grad has type 'tensor<8xf32>', but the forward op gives 'tensor<f32>'}}
  %0 = plait.softmax_cross_entropy_grad %x, %t, %g : (tensor<8x10xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<8x10xf32>
  return
}

// -----

func.func @nll_grad_forward_rule(%x: tensor<8x10xf32>, %t: tensor<4xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'plait.nll_loss' op target has shape 4, expected 8}}
  %0 = plait.nll_loss_grad %x, %t, %g {reduction = "sum"} : (tensor<8x10xf32>, tensor<4xi64>, tensor<f32>) -> tensor<8x10xf32>
  return
}

// -----

func.func @sgd_momentum_without_buffer(%p: tensor<8xf32>, %g: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<f32>) {
  // expected-error @+1 {{'plait.sgd_update' op needs a momentum buffer exactly when momentum is non-zero}}
  %0 = plait.sgd_update %p, %g, %lr, %s {momentum = 0.9 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> tensor<8xf32>
  return
}

// -----

func.func @sgd_buffer_without_new_buffer(%p: tensor<8xf32>, %g: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<f32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'plait.sgd_update' op produces a new buffer exactly when it takes one}}
  %0 = plait.sgd_update %p, %g, %lr, %s, %b {momentum = 0.9 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @sgd_buffer_type(%p: tensor<8xf32>, %g: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<f32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'plait.sgd_update' op momentum buffer type differs from the param's}}
  %0:2 = plait.sgd_update %p, %g, %lr, %s, %b {momentum = 0.9 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_nesterov(%p: tensor<8xf32>, %g: tensor<8xf32>, %lr: tensor<f32>, %s: tensor<f32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'plait.sgd_update' op nesterov needs momentum > 0 and zero dampening}}
  %0:2 = plait.sgd_update %p, %g, %lr, %s, %b {momentum = 0.9 : f64, dampening = 0.1 : f64, nesterov = true} : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @grouped_kind(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op update must be adamw_update, sgd_update, adagrad_update, rmsprop_update, lion_update, adamax_update, nadam_update, radam_update, adadelta_update, rprop_update, asgd_update or lamb_update, got "lbfgs"}}
  %0 = plait.grouped_update %p, %p, %lr, %lr {update = "lbfgs", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @grouped_arity(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op adamw_update takes 6 operands and gives 3 results with these attributes, not 4 and 1}}
  %0 = plait.grouped_update %p, %p, %lr, %lr {update = "adamw_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @grouped_counts(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op has 6 operands and 2 results, not groups of 4 and 1}}
  %0:2 = plait.grouped_update %p, %p, %lr, %lr, %p, %p {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @grouped_momentum(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op sgd_update takes 5 operands and gives 2 results with these attributes, not 4 and 1}}
  %0 = plait.grouped_update %p, %p, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64, momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @grouped_rmsprop(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op rmsprop_update takes 6 operands and gives 3 results with these attributes, not 5 and 2}}
  %0:2 = plait.grouped_update %p, %p, %lr, %lr, %p {update = "rmsprop_update", operands_per_update = 5 : i64, results_per_update = 2 : i64, centered = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @amsgrad_state(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adamw_update' op takes max_exp_avg_sq exactly when amsgrad is set}}
  %0:3 = plait.adamw_update %p, %p, %p, %p, %lr, %lr {amsgrad = true} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @amsgrad_result(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adamw_update' op gives new_max_exp_avg_sq exactly when amsgrad is set}}
  %0:3 = plait.adamw_update %p, %p, %p, %p, %lr, %lr, %p {amsgrad = true} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @amsgrad_type(%p: tensor<4xf32>, %q: tensor<4xf64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adamw_update' op max_exp_avg_sq type differs from the param's}}
  %0:4 = plait.adamw_update %p, %p, %p, %p, %lr, %lr, %q {amsgrad = true} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf64>)
  return
}

// -----

func.func @grouped_amsgrad(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op adamw_update takes 7 operands and gives 4 results with these attributes, not 6 and 3}}
  %0:3 = plait.grouped_update %p, %p, %p, %p, %lr, %lr {update = "adamw_update", operands_per_update = 6 : i64, results_per_update = 3 : i64, amsgrad = true} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lion_betas(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.lion_update' op needs 0 <= betas < 1}}
  %0:2 = plait.lion_update %p, %p, %lr, %lr, %p {beta2 = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adagrad_eps(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adagrad_update' op needs eps > 0, lr_decay >= 0 and initial_accumulator_value >= 0}}
  %0:2 = plait.adagrad_update %p, %p, %lr, %lr, %p {eps = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adagrad_types(%p: tensor<4xf32>, %s: tensor<4xf64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adagrad_update' op failed to verify that all of {param, grad, sum, new_param, new_sum} have same type}}
  %0:2 = plait.adagrad_update %p, %p, %lr, %lr, %s : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>)
  return
}

// -----

func.func @rmsprop_alpha(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rmsprop_update' op needs 0 <= alpha < 1, eps > 0 and momentum >= 0}}
  %0:2 = plait.rmsprop_update %p, %p, %lr, %lr, %p {alpha = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rmsprop_states(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rmsprop_update' op takes 3 states (square_avg, grad_avg, momentum_buffer), not 2}}
  %0:3 = plait.rmsprop_update %p, %p, %lr, %lr, %p, %p {centered = true, momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rmsprop_results(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rmsprop_update' op gives a new value of each of its 2 states, not 1}}
  %0:2 = plait.rmsprop_update %p, %p, %lr, %lr, %p, %p {centered = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rmsprop_state_type(%p: tensor<4xf32>, %q: tensor<4xf64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rmsprop_update' op state type 'tensor<4xf64>' differs from the param's 'tensor<4xf32>'}}
  %0:2 = plait.rmsprop_update %p, %p, %lr, %lr, %q : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>)
  return
}

// -----

func.func @grouped_types(%p: tensor<4xf32>, %q: tensor<2xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op update 1: 'tensor<4xf32>' differs from its param's 'tensor<2xf32>'}}
  %0:2 = plait.grouped_update %p, %p, %lr, %lr, %q, %q, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @grouped_grad_shape(%p: tensor<4xf32>, %g: tensor<2xbf16>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op update 0: grad 'tensor<2xbf16>' is neither its param's 'tensor<4xf32>' nor that shape in bf16 or f16}}
  %0 = plait.grouped_update %p, %g, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<2xbf16>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @grouped_grad_type(%p: tensor<4xf32>, %g: tensor<4xi32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op update 0: grad 'tensor<4xi32>' is neither its param's 'tensor<4xf32>' nor that shape in bf16 or f16}}
  %0 = plait.grouped_update %p, %g, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @grouped_half(%p: tensor<4xbf16>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op update 0: param type 'tensor<4xbf16>' is not f32 or f64}}
  %0 = plait.grouped_update %p, %p, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<f32>) -> tensor<4xbf16>
  return
}

// -----

func.func @grouped_scalars(%p: tensor<4xf32>, %lr: tensor<1xf32>) {
  // expected-error @+1 {{'plait.grouped_update' op update 0: operand 2 (lr) must be tensor<f64> or tensor<f32>}}
  %0 = plait.grouped_update %p, %p, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @grouped_step_f64(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'plait.grouped_update' op update 0: operand 3 (step) must be tensor<f32>}}
  %0 = plait.grouped_update %p, %p, %lr, %lr {update = "sgd_update", operands_per_update = 4 : i64, results_per_update = 1 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

func.func @layer_norm_grad_dy(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x4xf32>) {
  // expected-error @+1 {{'plait.layer_norm_grad' op 'dy' has type 'tensor<2x4xf32>', expected 'tensor<2x8xf32>'}}
  %0:2 = plait.layer_norm_grad %x, %g, %dy {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_dx(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm_grad' op 'dx' has type 'tensor<2x8xbf16>', expected 'tensor<2x8xf32>'}}
  %0:2 = plait.layer_norm_grad %x, %g, %x {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xbf16>, tensor<8xf32>)
  return
}

// -----

func.func @layer_norm_grad_dbias(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm_grad' op parameter gradients must have the scale's type 'tensor<8xf32>', got 'tensor<2x8xf32>'}}
  %0:3 = plait.layer_norm_grad %x, %g, %x {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @layer_norm_grad_scale(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'plait.layer_norm_grad' op 'scale' has shape 4, expected the normalised shape 8}}
  %0:2 = plait.layer_norm_grad %x, %g, %x {axis = -1 : i64} : (tensor<2x8xf32>, tensor<4xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rms_norm_grad_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.rms_norm_grad' op epsilon must be a finite number > 0, got 0}}
  %0:2 = plait.rms_norm_grad %x, %g, %x {axis = -1 : i64, epsilon = 0.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @rms_norm_grad_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.rms_norm_grad' op axis 2 is out of range for rank 2}}
  %0:2 = plait.rms_norm_grad %x, %g, %x {axis = 2 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adamax_betas(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adamax_update' op needs 0 <= betas < 1 and eps >= 0}}
  %0:3 = plait.adamax_update %p, %p, %lr, %lr, %p, %p {beta1 = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @nadam_momentum_decay(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.nadam_update' op needs momentum_decay >= 0}}
  %0:3 = plait.nadam_update %p, %p, %lr, %lr, %p, %p {momentum_decay = -1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @nadam_eps(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.nadam_update' op needs 0 <= betas < 1 and eps >= 0}}
  %0:3 = plait.nadam_update %p, %p, %lr, %lr, %p, %p {eps = -1.0e-08 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @radam_betas(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.radam_update' op needs 0 <= betas < 1 and eps >= 0}}
  %0:3 = plait.radam_update %p, %p, %lr, %lr, %p, %p {beta2 = -0.5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adadelta_rho(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adadelta_update' op needs 0 <= rho <= 1 and eps >= 0}}
  %0:3 = plait.adadelta_update %p, %p, %lr, %lr, %p, %p {rho = 1.5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adadelta_state_type(%p: tensor<4xf32>, %q: tensor<4xf64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adadelta_update' op failed to verify that all of {param, grad, square_avg, acc_delta, new_param, new_square_avg, new_acc_delta} have same type}}
  %0:3 = plait.adadelta_update %p, %p, %lr, %lr, %p, %q : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rprop_etas(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rprop_update' op needs 0 < etaminus < 1 < etaplus}}
  %0:3 = plait.rprop_update %p, %p, %lr, %lr, %p, %p {etaplus = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rprop_step_sizes(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rprop_update' op needs 0 <= step_size_min <= step_size_max}}
  %0:3 = plait.rprop_update %p, %p, %lr, %lr, %p, %p {step_size_min = 2.0 : f64, step_size_max = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @asgd_t0(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.asgd_update' op needs lambd, alpha, t0 and weight_decay >= 0}}
  %0:2 = plait.asgd_update %p, %p, %lr, %lr, %p {t0 = -1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @asgd_state_type(%p: tensor<4xf32>, %q: tensor<4xf64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.asgd_update' op failed to verify that all of {param, grad, ax, new_param, new_ax} have same type}}
  %0:2 = plait.asgd_update %p, %p, %lr, %lr, %q : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @rprop_state_type(%p: tensor<4xf32>, %q: tensor<4xf64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.rprop_update' op failed to verify that all of {param, grad, prev, step_size, new_param, new_prev, new_step_size} have same type}}
  %0:3 = plait.rprop_update %p, %p, %lr, %lr, %p, %q : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adagrad_initial_accumulator(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adagrad_update' op needs eps > 0, lr_decay >= 0 and initial_accumulator_value >= 0}}
  %0:2 = plait.adagrad_update %p, %p, %lr, %lr, %p {initial_accumulator_value = -0.1 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @grouped_two_states(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op nadam_update takes 6 operands and gives 3 results with these attributes, not 5 and 2}}
  %0:2 = plait.grouped_update %p, %p, %lr, %lr, %p {update = "nadam_update", operands_per_update = 5 : i64, results_per_update = 2 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lr_scale(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.sgd_update' op needs lr_scale >= 0}}
  %0 = plait.sgd_update %p, %p, %lr, %lr {lr_scale = -0.5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @lamb_betas(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.lamb_update' op needs 0 <= betas < 1 and eps >= 0}}
  %0:3 = plait.lamb_update %p, %p, %lr, %lr, %p, %p {beta1 = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lamb_norms_without_segments(%p: tensor<4xf32>, %lr: tensor<f32>, %n: tensor<1x2xf32>) {
  // expected-error @+1 {{'plait.lamb_update' op takes norms only with segments (a flat shard)}}
  %0:3 = plait.lamb_update %p, %p, %lr, %lr, %p, %p, %n : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<1x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lamb_segments_without_norms(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.lamb_update' op with segments needs norms (plait.lamb_norms summed over the group)}}
  %0:3 = plait.lamb_update %p, %p, %lr, %lr, %p, %p {segments = array<i64: 3, 1>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @lamb_segments_too_long(%p: tensor<4xf32>, %lr: tensor<f32>, %n: tensor<2x2xf32>) {
    // expected-error @+1 {{'plait.lamb_update' op segments (9 elements) must be at least one and fit the flat buffer (4 x 2 ranks)}}
    %0:3 = plait.lamb_update %p, %p, %lr, %lr, %p, %p, %n {segments = array<i64: 6, 3>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @lamb_norms_shape(%p: tensor<4xf32>, %lr: tensor<f32>, %n: tensor<3x2xf32>) {
    // expected-error @+1 {{'plait.lamb_update' op norms must be 2x2 (one row per segment), got 'tensor<3x2xf32>'}}
    %0:3 = plait.lamb_update %p, %p, %lr, %lr, %p, %p, %n {segments = array<i64: 6, 1>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<3x2xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
    return
  }
}

// -----

func.func @lamb_groups_without_segments(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.lamb_update' op has groups but no segments}}
  %0:3 = plait.lamb_update %p, %p, %lr, %lr, %p, %p {groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @lamb_norms_2d(%p: tensor<2x2xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'plait.lamb_norms' op with segments works on a flat (1-D) shard, got 'tensor<2x2xf32>'}}
  %0 = plait.lamb_norms %p, %p, %s, %p, %p {segments = array<i64: 4>} : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<f32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2xf32>
  return
}

// -----

func.func @lamb_norms_state_type(%p: tensor<4xf32>, %q: tensor<4xf64>, %s: tensor<f32>) {
  // expected-error @+1 {{'plait.lamb_norms' op operand type 'tensor<4xf64>' differs from the param's 'tensor<4xf32>'}}
  %0 = plait.lamb_norms %p, %p, %s, %q, %p {segments = array<i64: 4>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf64>, tensor<4xf32>) -> tensor<1x2xf32>
  return
}

// -----

func.func @grouped_lamb_segments(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op groups whole tensors only; a lamb_update with segments (a flat shard) stands alone}}
  %0:3 = plait.grouped_update %p, %p, %lr, %lr, %p, %p {update = "lamb_update", operands_per_update = 6 : i64, results_per_update = 3 : i64, segments = array<i64: 4>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @stop_gradient_of_integers(%x: tensor<4xi64>) {
  // expected-error @+1 {{'plait.stop_gradient' op operand #0 must be}}
  %0 = plait.stop_gradient %x : tensor<4xi64>
  return
}

// -----

func.func @weight_ema_decay(%p: tensor<4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op needs 0 < decay < 1, got 1}}
  %0 = plait.weight_ema %p, %p, %step {decay = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_types(%p: tensor<4xf32>, %e: tensor<4xf64>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op average 0: param, average and result must have one type, got 'tensor<4xf32>', 'tensor<4xf64>' and 'tensor<4xf32>'}}
  %0 = plait.weight_ema %p, %e, %step {decay = 0.9 : f64} : (tensor<4xf32>, tensor<4xf64>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_count(%p: tensor<4xf32>, %q: tensor<2xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op needs N params, their N averages and the step for its N results, got 4 operands and 2 results}}
  %0:2 = plait.weight_ema %p, %q, %p, %step {decay = 0.9 : f64} : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @weight_ema_second(%p: tensor<4xf32>, %q: tensor<2xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op average 1: param, average and result must have one type, got 'tensor<2xf32>', 'tensor<4xf32>' and 'tensor<2xf32>'}}
  %0:2 = plait.weight_ema %p, %q, %p, %p, %step {decay = 0.9 : f64} : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>)
  return
}

// -----

func.func @weight_ema_integer(%p: tensor<4xi32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op result #0 must be variadic of statically shaped tensor of}}
  %0 = plait.weight_ema %p, %p, %step {decay = 0.9 : f64} : (tensor<4xi32>, tensor<4xi32>, tensor<f32>) -> tensor<4xi32>
  return
}

// -----

func.func @weight_ema_power(%p: tensor<4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op needs power >= 0 and inv_gamma > 0, got -1.000000e+00 and 1.000000e+00}}
  %0 = plait.weight_ema %p, %p, %step {decay = 0.9 : f64, power = -1.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_two_warmups(%p: tensor<4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op takes one warm-up: warmup or power}}
  %0 = plait.weight_ema %p, %p, %step {decay = 0.9 : f64, power = 0.5 : f64, warmup = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_floor(%p: tensor<4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op needs 0 <= min_decay <= decay, got 9.500000e-01}}
  %0 = plait.weight_ema %p, %p, %step {decay = 0.9 : f64, min_decay = 0.95 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_every(%p: tensor<4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op needs start >= 0 and every >= 1, got 0 and 0}}
  %0 = plait.weight_ema %p, %p, %step {decay = 0.9 : f64, every = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_step(%p: tensor<4xf32>, %step: tensor<2xf32>) {
  // expected-error @+1 {{'plait.weight_ema' op step must be an f32 scalar}}
  %0 = plait.weight_ema %p, %p, %step {decay = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @weight_ema_no_decay(%p: tensor<4xf32>, %step: tensor<f32>) {
  // expected-error @+1 {{'plait.weight_ema' op requires attribute 'decay'}}
  %0 = plait.weight_ema %p, %p, %step : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @momentum_cycle_on_adagrad(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adagrad_update' op has no momentum or first beta to cycle (momentum_cycle)}}
  %0:2 = plait.adagrad_update %p, %p, %lr, %lr, %p {momentum_cycle = array<f64: 1.0, 0.85, 0.95, 10.0, 0.3, 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_cycle_length(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adamw_update' op needs momentum_cycle as 7 f64 numbers [kind, base, max, ...]}}
  %0:3 = plait.adamw_update %p, %p, %p, %p, %lr, %lr {momentum_cycle = array<f64: 1.0, 0.85, 0.95>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_cycle_kind(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.lion_update' op momentum_cycle's kind must be 1 (one cycle) or 2 (cyclic), got 3}}
  %0:2 = plait.lion_update %p, %p, %lr, %lr, %p {momentum_cycle = array<f64: 3.0, 0.85, 0.95, 10.0, 0.3, 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_cycle_momenta(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.sgd_update' op momentum_cycle's momenta must be in (0, 1), got 8.500000e-01 and 1.000000e+00}}
  %0:2 = plait.sgd_update %p, %p, %lr, %lr, %p {momentum = 0.9 : f64, momentum_cycle = array<f64: 1.0, 0.85, 1.0, 10.0, 0.3, 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_cycle_one_cycle(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.radam_update' op momentum_cycle's one cycle needs total steps > 0, pct_start in [0, 1] and 0/1 flags}}
  %0:3 = plait.radam_update %p, %p, %lr, %lr, %p, %p {momentum_cycle = array<f64: 1.0, 0.85, 0.95, 10.0, 1.3, 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_cycle_cyclic(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.adamax_update' op momentum_cycle's cyclic schedule needs step sizes > 0, a mode of 0, 1 or 2 and gamma > 0}}
  %0:3 = plait.adamax_update %p, %p, %lr, %lr, %p, %p {momentum_cycle = array<f64: 2.0, 0.8, 0.9, 4.0, 0.0, 0.0, 1.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @momentum_cycle_without_buffer(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.sgd_update' op cycles its momentum (momentum_cycle) but has momentum 0: it would keep no buffer}}
  %0 = plait.sgd_update %p, %p, %lr, %lr {momentum_cycle = array<f64: 1.0, 0.85, 0.95, 10.0, 0.3, 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @momentum_cycle_grouped(%p: tensor<4xf32>, %lr: tensor<f32>) {
  // expected-error @+1 {{'plait.grouped_update' op has no momentum or first beta to cycle (momentum_cycle)}}
  %0:2 = plait.grouped_update %p, %p, %lr, %lr, %p {update = "adagrad_update", operands_per_update = 5 : i64, results_per_update = 2 : i64, momentum_cycle = array<f64: 1.0, 0.85, 0.95, 10.0, 0.3, 0.0, 0.0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adafactor_state_count(%p: tensor<4x8xf32>, %lr: tensor<f64>, %t: tensor<f32>, %r: tensor<4xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'plait.adafactor_update' op takes 3 states (exp_avg, exp_avg_sq_row, exp_avg_sq_col), not 2}}
  %0:3 = plait.adafactor_update %p, %p, %lr, %t, %r, %c {beta1 = 0.9 : f64} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f64>, tensor<f32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adafactor_row_shape(%p: tensor<4x8xf32>, %lr: tensor<f64>, %t: tensor<f32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{'plait.adafactor_update' op state exp_avg_sq_row must be 'tensor<4xf32>', got 'tensor<8xf32>' -> 'tensor<8xf32>'}}
  %0:3 = plait.adafactor_update %p, %p, %lr, %t, %c, %c : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f64>, tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @adafactor_vector_state(%p: tensor<6xf32>, %lr: tensor<f64>, %t: tensor<f32>) {
  // expected-error @+1 {{'plait.adafactor_update' op gives a new value of each of its 1 states, not 0}}
  %0 = plait.adafactor_update %p, %p, %lr, %t, %p : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @adafactor_beta1(%p: tensor<6xf32>, %lr: tensor<f64>, %t: tensor<f32>) {
  // expected-error @+1 {{'plait.adafactor_update' op needs 0 <= beta1 < 1, got 1}}
  %0:3 = plait.adafactor_update %p, %p, %lr, %t, %p, %p {beta1 = 1.0 : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @adafactor_warmup(%p: tensor<6xf32>, %lr: tensor<f64>, %t: tensor<f32>) {
  // expected-error @+1 {{'plait.adafactor_update' op warmup_init applies to a relative step only (relative_step)}}
  %0:2 = plait.adafactor_update %p, %p, %lr, %t, %p {warmup_init = true} : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @adafactor_hyper(%p: tensor<6xf32>, %lr: tensor<f64>, %t: tensor<f32>) {
  // expected-error @+1 {{'plait.adafactor_update' op needs eps1, eps2 and weight_decay >= 0, clip_threshold > 0 and decay_rate <= 0}}
  %0:2 = plait.adafactor_update %p, %p, %lr, %t, %p {clip_threshold = 0.0 : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

// The sharded Adafactor ops (codegen/schema/AdafactorShard.h): a 6-element matrix 2x3 and a
// 2-element vector on two ranks of 4 elements.

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_stats_factors(%p: tensor<4xf32>) {
    // expected-error @+1 {{'plait.adafactor_stats' op needs 2 factors (rows and cols, or 0 and 0) per segment: 2 segments, 2 factors}}
    %0 = plait.adafactor_stats %p, %p {segments = array<i64: 6, 2>, factors = array<i64: 2, 3>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<9xf64>
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_stats_divide(%p: tensor<4xf32>) {
    // expected-error @+1 {{'plait.adafactor_stats' op segment 0's factors 4 x 3 do not divide its 6 elements}}
    %0 = plait.adafactor_stats %p, %p {segments = array<i64: 6, 2>, factors = array<i64: 4, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<9xf64>
    return
  }
}

// -----

func.func @adafactor_stats_fit(%p: tensor<4xf32>) {
  // expected-error @+1 {{'plait.adafactor_stats' op segments (8 elements) must fit the flat buffer (4 x 1 ranks)}}
  %0 = plait.adafactor_stats %p, %p {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<9xf64>
  return
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_stats_length(%p: tensor<4xf32>) {
    // expected-error @+1 {{'plait.adafactor_stats' op stats must be tensor<9xf64>, got 'tensor<8xf64>'}}
    %0 = plait.adafactor_stats %p, %p {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf64>
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_stats_flat(%p: tensor<2x2xf32>) {
    // expected-error @+1 {{'plait.adafactor_stats' op works on a flat (1-D) shard, got 'tensor<2x2xf32>'}}
    %0 = plait.adafactor_stats %p, %p {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<9xf64>
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_norms_states(%p: tensor<4xf32>, %t: tensor<f32>, %s: tensor<9xf64>, %r: tensor<2xf32>, %c: tensor<3xf32>) {
    // expected-error @+1 {{'plait.adafactor_norms' op takes 3 second-moment states for its 2 segments, not 2}}
    %0 = plait.adafactor_norms %p, %p, %t, %s, %r, %c {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<9xf64>, tensor<2xf32>, tensor<3xf32>) -> tensor<2xf64>
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_norms_column(%p: tensor<4xf32>, %t: tensor<f32>, %s: tensor<9xf64>, %r: tensor<2xf32>) {
    // expected-error @+1 {{'plait.adafactor_norms' op state 1 (exp_avg_sq_col) must hold 3 'f32' elements, got 'tensor<2xf32>'}}
    %0 = plait.adafactor_norms %p, %p, %t, %s, %r, %r, %r {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<9xf64>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf64>
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_norms_result(%p: tensor<4xf32>, %t: tensor<f32>, %s: tensor<9xf64>, %r: tensor<2xf32>, %c: tensor<3xf32>) {
    // expected-error @+1 {{'plait.adafactor_norms' op norms must be tensor<2xf64>, got 'tensor<1xf64>'}}
    %0 = plait.adafactor_norms %p, %p, %t, %s, %r, %c, %r {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<9xf64>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>) -> tensor<1xf64>
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_update_no_factors(%p: tensor<4xf32>, %lr: tensor<f64>, %t: tensor<f32>, %s: tensor<9xf64>, %n: tensor<2xf64>, %r: tensor<2xf32>, %c: tensor<3xf32>) {
    // expected-error @+1 {{'plait.adafactor_update' op with segments needs factors (each segment's rows and cols)}}
    %0:4 = plait.adafactor_update %p, %p, %lr, %t, %r, %c, %r, %s, %n {segments = array<i64: 6, 2>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<f32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<9xf64>, tensor<2xf64>) -> (tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>)
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_update_no_sums(%p: tensor<4xf32>, %lr: tensor<f64>, %t: tensor<f32>, %r: tensor<2xf32>, %c: tensor<3xf32>) {
    // expected-error @+1 {{'plait.adafactor_update' op with segments takes its states, then stats and norms (3 operands after the step for 3 new states)}}
    %0:4 = plait.adafactor_update %p, %p, %lr, %t, %r, %c, %r {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<f32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>)
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_update_stats(%p: tensor<4xf32>, %lr: tensor<f64>, %t: tensor<f32>, %s: tensor<8xf64>, %n: tensor<2xf64>, %r: tensor<2xf32>, %c: tensor<3xf32>) {
    // expected-error @+1 {{'plait.adafactor_update' op stats must be tensor<9xf64>, got 'tensor<8xf64>'}}
    %0:4 = plait.adafactor_update %p, %p, %lr, %t, %r, %c, %r, %s, %n {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<f32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<8xf64>, tensor<2xf64>) -> (tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>)
    return
  }
}

// -----

module attributes {plait.world_size = 2 : i64} {
  func.func @adafactor_update_new_state(%p: tensor<4xf32>, %lr: tensor<f64>, %t: tensor<f32>, %s: tensor<9xf64>, %n: tensor<2xf64>, %r: tensor<2xf32>, %c: tensor<3xf32>) {
    // expected-error @+1 {{'plait.adafactor_update' op new state 1 (exp_avg_sq_col) must be 'tensor<3xf32>', got 'tensor<2xf32>'}}
    %0:4 = plait.adafactor_update %p, %p, %lr, %t, %r, %c, %r, %s, %n {segments = array<i64: 6, 2>, factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<f32>, tensor<2xf32>, tensor<3xf32>, tensor<2xf32>, tensor<9xf64>, tensor<2xf64>) -> (tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    return
  }
}

// -----

func.func @adafactor_update_groups_alone(%p: tensor<6xf32>, %lr: tensor<f64>, %t: tensor<f32>) {
  // expected-error @+1 {{'plait.adafactor_update' op has factors or groups but no segments}}
  %0:2 = plait.adafactor_update %p, %p, %lr, %t, %p {factors = array<i64: 0, 0>} : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @batch_norm_grad_dy(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %dy: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad' op 'dy' and 'dx' must have the input's type 'tensor<2x3x4xf32>'}}
  %0:3 = plait.batch_norm_grad %x, %g, %g, %g, %dy : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_grad_mean(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad' op 'mean' has shape 4, expected 3 (x's channels)}}
  %0:3 = plait.batch_norm_grad %x, %g, %m, %g, %x : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_grad_dbias(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad' op 'dbias' element type 'bf16' differs from the input's 'f32'}}
  %0:3 = plait.batch_norm_grad %x, %g, %g, %g, %x : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xbf16>)
  return
}

// -----

func.func @batch_norm_grad_sums_and_sync(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %s: tensor<6xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad' op 'sync' and 'sums' exclude each other (plait-shard lowers 'sync' to 'sums')}}
  %0:3 = plait.batch_norm_grad %x, %g, %g, %g, %x, %s {sync} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<6xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_grad_sums_shape(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %s: tensor<12xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad' op 'sums' has shape 12, expected [6] (2 values per channel of x)}}
  %0:3 = plait.batch_norm_grad %x, %g, %g, %g, %x, %s : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>, tensor<12xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_grad_sums_dy(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %dy: tensor<2x3x5xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad_sums' op 'dy' has type 'tensor<2x3x5xf32>', expected 'tensor<2x3x4xf32>'}}
  %s = plait.batch_norm_grad_sums %x, %g, %g, %dy : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x5xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @batch_norm_grad_sums_type(%x: tensor<2x3x4xf16>, %g: tensor<3xf16>) {
  // expected-error @+1 {{'plait.batch_norm_grad_sums' op 'sums' element type 'f16' is not the compute type 'f32' of x's 'f16'}}
  %s = plait.batch_norm_grad_sums %x, %g, %g, %x : (tensor<2x3x4xf16>, tensor<3xf16>, tensor<3xf16>, tensor<2x3x4xf16>) -> tensor<6xf16>
  return
}

// -----

func.func @batch_norm_grad_sums_eps(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'plait.batch_norm_grad_sums' op epsilon must be a finite number > 0, got 0}}
  %s = plait.batch_norm_grad_sums %x, %g, %g, %x {epsilon = 0.0 : f64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<6xf32>
  return
}
