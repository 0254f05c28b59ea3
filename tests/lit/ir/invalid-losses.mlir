// Diagnostics of softmax_cross_entropy and nll_loss.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @loss_input_rank(%x: tensor<10xf32>, %t: tensor<i64>) {
  // expected-error @+2 {{'plait.softmax_cross_entropy' op input must be [N, C, ...], got rank 1}}
  // expected-error @+1 {{'plait.softmax_cross_entropy' op failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t : (tensor<10xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @loss_target_shape(%x: tensor<8x10xf32>, %t: tensor<8x1xi64>) {
  // expected-error @+2 {{'plait.softmax_cross_entropy' op target has shape 8x1, expected 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t : (tensor<8x10xf32>, tensor<8x1xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_spatial_target_shape(%x: tensor<2x10x4x4xf32>, %t: tensor<2x4xi64>) {
  // expected-error @+2 {{'plait.nll_loss' op target has shape 2x4, expected 2x4x4}}
  // expected-error @+1 {{'plait.nll_loss' op failed to infer returned types}}
  %0 = plait.nll_loss %x, %t : (tensor<2x10x4x4xf32>, tensor<2x4xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight_shape(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<8xf32>) {
  // expected-error @+2 {{'plait.softmax_cross_entropy' op weight must have shape 10, got 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t, %w : (tensor<8x10xf32>, tensor<8xi64>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight_rank(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<1x10xf32>) {
  // expected-error @+2 {{'plait.nll_loss' op weight must have shape 10, got 1x10}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.nll_loss %x, %t, %w : (tensor<8x10xf32>, tensor<8xi64>, tensor<1x10xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight_element_type(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %w: tensor<10xf16>) {
  // expected-error @+2 {{'plait.softmax_cross_entropy' op weight has element type 'f16', input has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t, %w : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf16>) -> tensor<f32>
  return
}

// -----

// The weights of bf16 logits are bf16, or f32 (plait-fuse-loss-cast's form), not f16; the
// f32 form verifies (the loss below it alone would be an error).
func.func @half_loss_weight_element_type(%x: tensor<8x10xbf16>, %t: tensor<8xi64>, %w: tensor<10xf32>, %h: tensor<10xf16>) {
  %0 = plait.softmax_cross_entropy %x, %t, %w : (tensor<8x10xbf16>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32>
  // expected-error @+2 {{'plait.nll_loss' op weight has element type 'f16', input has 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %1 = plait.nll_loss %x, %t, %h : (tensor<8x10xbf16>, tensor<8xi64>, tensor<10xf16>) -> tensor<f32>
  return
}

// -----

func.func @loss_reduction(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+2 {{'plait.softmax_cross_entropy' op reduction must be mean, sum or none, got 'avg'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t {reduction = "avg"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_reduction_none_result(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+2 {{'plait.nll_loss' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.nll_loss %x, %t {reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_float_target(%x: tensor<8x10xf32>, %t: tensor<8xf32>) {
  // Targets are class indices; probability targets are not supported.
  // expected-error @+1 {{'plait.softmax_cross_entropy' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = plait.softmax_cross_entropy %x, %t : (tensor<8x10xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_integer_input(%x: tensor<8x10xi32>, %t: tensor<8xi64>) {
  // expected-error @+1 {{'plait.nll_loss' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<8x10xi32>'}}
  %0 = plait.nll_loss %x, %t : (tensor<8x10xi32>, tensor<8xi64>) -> tensor<i32>
  return
}

// -----

func.func @half_loss_result(%x: tensor<8x10xbf16>, %t: tensor<8xi64>) {
  // The loss of bf16 logits is bf16, or f32 (plait-fuse-loss-cast's form), not f16.
  // expected-error @+2 {{'plait.softmax_cross_entropy' op inferred type(s) 'tensor<bf16>' are incompatible with return type(s) of operation 'tensor<f16>'}}
  // expected-error @+1 {{'plait.softmax_cross_entropy' op failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t : (tensor<8x10xbf16>, tensor<8xi64>) -> tensor<f16>
  return
}

// -----

func.func @label_smoothing_range(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+2 {{'plait.softmax_cross_entropy' op label_smoothing must be in [0, 1], got 1.5}}
  // expected-error @+1 {{'plait.softmax_cross_entropy' op failed to infer returned types}}
  %0 = plait.softmax_cross_entropy %x, %t {label_smoothing = 1.5 : f64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @label_smoothing_nll(%x: tensor<8x10xf32>, %t: tensor<8xi64>) {
  // expected-error @+2 {{'plait.nll_loss' op label_smoothing is softmax_cross_entropy's (torch's NLLLoss has none)}}
  // expected-error @+1 {{'plait.nll_loss' op failed to infer returned types}}
  %0 = plait.nll_loss %x, %t {label_smoothing = 0.1 : f64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @label_smoothing_grad(%x: tensor<8x10xf32>, %t: tensor<8xi64>, %g: tensor<f32>) {
  // The gradient checks the forward's rules (named after it).
  // expected-error @+1 {{'plait.softmax_cross_entropy' op label_smoothing must be in [0, 1], got -0.5}}
  %0 = plait.softmax_cross_entropy_grad %x, %t, %g {label_smoothing = -0.5 : f64} : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
  return
}
