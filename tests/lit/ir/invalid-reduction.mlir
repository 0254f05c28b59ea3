// Diagnostics of reductions, argmax/argmin, softmax and the normalisations.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.reduce_sum' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'plait.reduce_sum' op failed to infer returned types}}
  %0 = plait.reduce_sum %x {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_negative_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.reduce_max' op axis -3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.reduce_max %x {axes = array<i64: -3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @reduce_repeated_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.reduce_mean' op axis -1 is repeated}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.reduce_mean %x {axes = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @reduce_of_scalar_with_axis(%x: tensor<f32>) {
  // expected-error @+2 {{'plait.reduce_prod' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.reduce_prod %x {axes = array<i64: 0>} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @reduce_missing_axes(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.reduce_min' op requires attribute 'axes'}}
  %0 = "plait.reduce_min"(%x) : (tensor<2x3xf32>) -> tensor<1x1xf32>
  return
}

// -----

func.func @reduce_of_bools(%x: tensor<2xi1>) {
  // expected-error @+1 {{'plait.reduce_sum' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<2xi1>'}}
  %0 = plait.reduce_sum %x {axes = array<i64>} : (tensor<2xi1>) -> tensor<1xi1>
  return
}

// -----

func.func @reduce_keepdims_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @argmax_axis_out_of_range(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.argmax' op axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'plait.argmax' op failed to infer returned types}}
  %0 = plait.argmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @argmin_of_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{'plait.argmin' op axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'plait.argmin' op failed to infer returned types}}
  %0 = plait.argmin %x {axis = 0 : i64} : (tensor<f32>) -> tensor<i64>
  return
}

// -----

func.func @top_k_beyond_the_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'plait.top_k' op k 4 is not in [0, 3], the size of the last axis}}
  // expected-error @+1 {{'plait.top_k' op failed to infer returned types}}
  %0 = plait.top_k %x {k = 4 : i64} : (tensor<2x3xf32>) -> tensor<2x4xi64>
  return
}

// -----

func.func @top_k_negative(%x: tensor<5xf32>) {
  // expected-error @+2 {{'plait.top_k' op k -1 is not in [0, 5], the size of the last axis}}
  // expected-error @+1 {{'plait.top_k' op failed to infer returned types}}
  %0 = plait.top_k %x {k = -1 : i64} : (tensor<5xf32>) -> tensor<5xi64>
  return
}

// -----

func.func @top_k_of_scalar(%x: tensor<f32>) {
  // expected-error @+2 {{'plait.top_k' op x must have rank >= 1}}
  // expected-error @+1 {{'plait.top_k' op failed to infer returned types}}
  %0 = plait.top_k %x {k = 1 : i64} : (tensor<f32>) -> tensor<1xi64>
  return
}

// -----

func.func @top_k_of_bools(%x: tensor<4xi1>) {
  // expected-error @+1 {{'plait.top_k' op operand #0 must be}}
  %0 = plait.top_k %x {k = 1 : i64} : (tensor<4xi1>) -> tensor<1xi64>
  return
}

// -----

func.func @argmax_of_empty_axis(%x: tensor<2x0xf32>) {
  // expected-error @+2 {{'plait.argmax' op axis 1 has size 0, so there is no index to return}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.argmax %x {axis = 1 : i64} : (tensor<2x0xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @argmin_of_empty_axis(%x: tensor<0x3xf32>) {
  // expected-error @+2 {{'plait.argmin' op axis -2 has size 0, so there is no index to return}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = plait.argmin %x {axis = -2 : i64, keepdims = false} : (tensor<0x3xf32>) -> tensor<3xi64>
  return
}

// -----

func.func @argmax_result_element(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.argmax' op result #0 must be statically shaped tensor of 64-bit signless integer values, but got 'tensor<2x1xi32>'}}
  %0 = plait.argmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xi32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.softmax' op axis 2 is out of range for rank 2}}
  %0 = plait.softmax %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @log_softmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'plait.log_softmax' op axis -3 is out of range for rank 2}}
  %0 = plait.log_softmax %x {axis = -3 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @softmax_of_integers(%x: tensor<2x3xi64>) {
  // expected-error @+1 {{'plait.softmax' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<2x3xi64>'}}
  %0 = plait.softmax %x {axis = 1 : i64} : tensor<2x3xi64>
  return
}

// -----

func.func @layer_norm_result_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op result type 'tensor<2x8xf16>' differs from input type 'tensor<2x8xf32>'}}
  %0 = plait.layer_norm %x, %g {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf16>
  return
}

// -----

func.func @layer_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op axis 2 is out of range for rank 2}}
  %0 = plait.layer_norm %x, %g {axis = 2 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op 'scale' has shape 8, expected the normalised shape 2x8}}
  %0 = plait.layer_norm %x, %g {axis = 0 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op 'bias' has shape 1x8, expected the normalised shape 8}}
  %0 = plait.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_scale_element(%x: tensor<2x8xf32>, %g: tensor<8xbf16>) {
  // expected-error @+1 {{'plait.layer_norm' op 'scale' element type 'bf16' differs from the input's 'f32'}}
  %0 = plait.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xbf16>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_zero_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op epsilon must be a finite number > 0, got 0.000000e+00}}
  %0 = plait.layer_norm %x, %g {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op epsilon must be a finite number > 0, got -1.000000e-05}}
  %0 = plait.layer_norm %x, %g {axis = 1 : i64, epsilon = -1.0e-05 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_nan_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.layer_norm' op epsilon must be a finite number > 0}}
  %0 = plait.layer_norm %x, %g {axis = 1 : i64, epsilon = 0x7FF8000000000000 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_of_integers(%x: tensor<2x8xi32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{'plait.layer_norm' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<2x8xi32>'}}
  %0 = plait.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  return
}

// -----

func.func @rms_norm_result_type(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.rms_norm' op result type 'tensor<8xf32>' differs from input type 'tensor<2x8xf32>'}}
  %0 = plait.rms_norm %x, %g {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @rms_norm_axis(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.rms_norm' op axis -3 is out of range for rank 2}}
  %0 = plait.rms_norm %x, %g {axis = -3 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_scale_shape(%x: tensor<2x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'plait.rms_norm' op 'scale' has shape 4, expected the normalised shape 8}}
  %0 = plait.rms_norm %x, %g {axis = 1 : i64} : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @rms_norm_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.rms_norm' op epsilon must be a finite number > 0, got INF}}
  %0 = plait.rms_norm %x, %g {axis = 1 : i64, epsilon = 0x7FF0000000000000 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @add_layer_norm_broadcast(%x: tensor<2x8xf32>, %r: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.add_layer_norm' op 'residual' has type 'tensor<8xf32>', expected 'tensor<2x8xf32>' (no broadcasting)}}
  %y, %s = plait.add_layer_norm %x, %r, %g {axis = -1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @add_rms_norm_result(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'plait.add_rms_norm' op results must have the input's type 'tensor<2x8xf32>', got 'tensor<2x8xbf16>'}}
  %y, %s = plait.add_rms_norm %x, %x, %g {axis = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xbf16>)
  return
}

// -----

func.func @add_layer_norm_bias(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'plait.add_layer_norm' op 'bias' has shape 4, expected the normalised shape 8}}
  %y, %s = plait.add_layer_norm %x, %x, %g, %b {axis = -1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<6xf32>, %g: tensor<6xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op 'x' must have rank >= 2 ([N, C, ...]), got 'tensor<6xf32>'}}
  %y, %m, %v = plait.batch_norm %x, %g, %g : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @batch_norm_scale(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op 'scale' has shape 4, expected 3 (x's channels)}}
  %y, %m, %v = plait.batch_norm %x, %g, %b : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_bias_type(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %b: tensor<3xf64>) {
  // expected-error @+1 {{'plait.batch_norm' op 'bias' element type 'f64' differs from the input's 'f32'}}
  %y, %m, %v = plait.batch_norm %x, %g, %b : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf64>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_y(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op 'y' has type 'tensor<2x3x4xbf16>', expected the input's 'tensor<2x3x4xf32>'}}
  %y, %m, %v = plait.batch_norm %x, %g, %g : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xbf16>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_var(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op 'var' has shape 1x3, expected 3 (x's channels)}}
  %y, %m, %v = plait.batch_norm %x, %g, %g : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<1x3xf32>)
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<2x3xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op epsilon must be a finite number > 0, got -1}}
  %y, %m, %v = plait.batch_norm %x, %g, %g {epsilon = -1.0 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_stats_and_sync(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %s: tensor<12xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op 'sync' and 'stats' exclude each other (plait-shard lowers 'sync' to 'stats')}}
  %y, %m, %v = plait.batch_norm %x, %g, %g, %s {sync} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<12xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_stats_shape(%x: tensor<2x3x4xf32>, %g: tensor<3xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'plait.batch_norm' op 'stats' has shape 8, expected [W * 6] (each rank's 2 values per channel of x)}}
  %y, %m, %v = plait.batch_norm %x, %g, %g, %s : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_stats_bf16(%x: tensor<2x3x4xbf16>, %g: tensor<3xbf16>, %s: tensor<12xbf16>) {
  // expected-error @+1 {{'plait.batch_norm' op 'stats' element type 'bf16' is not the compute type 'f32' of x's 'bf16'}}
  %y, %m, %v = plait.batch_norm %x, %g, %g, %s : (tensor<2x3x4xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<12xbf16>) -> (tensor<2x3x4xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  return
}

// -----

func.func @batch_norm_local_stats(%x: tensor<2x3x4xf64>) {
  // expected-error @+1 {{'plait.batch_norm_stats' op 'stats' has shape 12, expected [6] (2 values per channel of x)}}
  %s = plait.batch_norm_stats %x : (tensor<2x3x4xf64>) -> tensor<12xf64>
  return
}

// -----

func.func @batch_norm_local_stats_type(%x: tensor<2x3x4xf64>) {
  // expected-error @+1 {{'plait.batch_norm_stats' op 'stats' element type 'f32' is not the compute type 'f64' of x's 'f64'}}
  %s = plait.batch_norm_stats %x : (tensor<2x3x4xf64>) -> tensor<6xf32>
  return
}
