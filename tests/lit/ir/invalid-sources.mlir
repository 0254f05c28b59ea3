// Diagnostics of the source ops: plait.param, plait.constant, plait.dropout_mask and plait.random.
// RUN: plait-opt --split-input-file --verify-diagnostics %s

func.func @param_empty_name() {
  // expected-error @+1 {{'plait.param' op needs a non-empty name}}
  %0 = plait.param "" {init = "zeros"} : tensor<2xf32>
  return
}

// -----

func.func @param_value_and_init() {
  // expected-error @+1 {{'plait.param' op has both 'value' and 'init'; give one}}
  %0 = plait.param "w" {value = dense<1.0> : tensor<2xf32>, init = "zeros"} : tensor<2xf32>
  return
}

// -----

func.func @param_no_initial_value() {
  // expected-error @+1 {{'plait.param' op 'w' has neither 'value' nor 'init'}}
  %0 = plait.param "w" : tensor<2xf32>
  return
}

// -----

func.func @param_value_type() {
  // expected-error @+1 {{'plait.param' op value type 'tensor<3xf32>' differs from result type 'tensor<2xf32>'}}
  %0 = plait.param "w" {value = dense<1.0> : tensor<3xf32>} : tensor<2xf32>
  return
}

// -----

func.func @param_value_element_type() {
  // expected-error @+1 {{'plait.param' op value type 'tensor<2xf64>' differs from result type 'tensor<2xf32>'}}
  %0 = plait.param "w" {value = dense<1.0> : tensor<2xf64>} : tensor<2xf32>
  return
}

// -----

func.func @param_unknown_init() {
  // expected-error @+1 {{'plait.param' op unknown initializer 'xavier' (expected zeros, ones, normal:STD or uniform:BOUND with a finite number >= 0)}}
  %0 = plait.param "w" {init = "xavier"} : tensor<2xf32>
  return
}

// -----

func.func @param_init_not_a_number() {
  // expected-error @+1 {{unknown initializer 'normal:abc'}}
  %0 = plait.param "w" {init = "normal:abc"} : tensor<2xf32>
  return
}

// -----

func.func @param_init_missing_number() {
  // expected-error @+1 {{unknown initializer 'uniform:'}}
  %0 = plait.param "w" {init = "uniform:"} : tensor<2xf32>
  return
}

// -----

func.func @param_init_negative() {
  // expected-error @+1 {{unknown initializer 'normal:-0.5'}}
  %0 = plait.param "w" {init = "normal:-0.5"} : tensor<2xf32>
  return
}

// -----

func.func @param_init_trailing_text() {
  // expected-error @+1 {{unknown initializer 'uniform:0.1x'}}
  %0 = plait.param "w" {init = "uniform:0.1x"} : tensor<2xf32>
  return
}

// -----

func.func @param_init_infinite() {
  // expected-error @+1 {{unknown initializer 'normal:inf'}}
  %0 = plait.param "w" {init = "normal:inf"} : tensor<2xf32>
  return
}

// -----

func.func @param_random_init_of_integers() {
  // expected-error @+1 {{'plait.param' op initializer 'normal:1' needs a float element type, got 'i64'}}
  %0 = plait.param "w" {init = "normal:1"} : tensor<2xi64>
  return
}

// -----

func.func @param_random_init_of_bools() {
  // expected-error @+1 {{initializer 'uniform:1' needs a float element type, got 'i1'}}
  %0 = plait.param "w" {init = "uniform:1"} : tensor<2xi1>
  return
}

// -----

func.func @param_dynamic_shape() {
  // expected-error @+1 {{'plait.param' op result #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<?xf32>'}}
  %0 = plait.param "w" {init = "zeros"} : tensor<?xf32>
  return
}

// -----

func.func @param_name_not_a_string() {
  // expected-error @+1 {{invalid properties {init = "zeros", name = 3 : i64} for op plait.param}}
  %0 = "plait.param"() <{name = 3 : i64, init = "zeros"}> : () -> tensor<2xf32>
  return
}

// -----

func.func @constant_element_type() {
  // expected-error @+1 {{'plait.constant' op result #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer or 8-bit signless integer or 16-bit signless integer or 8-bit unsigned integer or 16-bit unsigned integer or 32-bit unsigned integer or 64-bit unsigned integer values, but got 'tensor<2xi4>'}}
  %0 = plait.constant dense<1> : tensor<2xi4>
  return
}

// -----

func.func @constant_not_a_tensor() {
  // expected-error @+1 {{'plait.constant' op result #0 must be statically shaped tensor}}
  %0 = plait.constant dense<1.0> : vector<2xf32>
  return
}

// -----

func.func @constant_result_type() {
  // expected-error @+2 {{'plait.constant' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'plait.constant' op failed to infer returned types}}
  %0 = "plait.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return
}

// -----

func.func @param_same_name_different_type() {
  // expected-note @+1 {{the earlier param}}
  %0 = plait.param "w" {init = "zeros"} : tensor<2xf32>
  %1 = plait.param "v" {init = "zeros"} : tensor<3xf32>
  // expected-error @+1 {{'plait.param' op 'w' differs in type or initial value from an earlier param of the same name}}
  %2 = plait.param "w" {init = "zeros"} : tensor<3xf32>
  return
}

// -----

func.func @param_same_name_different_init() {
  // Identical copies are fine; the diagnostic points at the nearest earlier one.
  %0 = plait.param "w" {init = "normal:0.02"} : tensor<2xf32>
  // expected-note @+1 {{the earlier param}}
  %1 = plait.param "w" {init = "normal:0.02"} : tensor<2xf32>
  // expected-error @+1 {{'plait.param' op 'w' differs in type or initial value from an earlier param of the same name}}
  %2 = plait.param "w" {value = dense<0.0> : tensor<2xf32>} : tensor<2xf32>
  return
}

// -----

func.func @constant_without_value() {
  // expected-error @+1 {{'plait.constant' op requires attribute 'value'}}
  %0 = "plait.constant"() : () -> tensor<2xf32>
  return
}

// -----

func.func @dropout_ratio_one(%step: tensor<f32>) {
  // expected-error @+1 {{'plait.dropout_mask' op ratio 1.000000e+00 is not in [0, 1)}}
  %0 = plait.dropout_mask %step {ratio = 1.0 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<f32>) -> tensor<4xf32>
  return
}

// -----

func.func @dropout_step_not_scalar(%step: tensor<2xf32>) {
  // expected-error @+1 {{'plait.dropout_mask' op step must be a scalar}}
  %0 = plait.dropout_mask %step {ratio = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @dropout_integer_mask(%step: tensor<f32>) {
  // expected-error @+1 {{'plait.dropout_mask' op result #0 must be statically shaped tensor of 32-bit float or 64-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4xi64>'}}
  %0 = plait.dropout_mask %step {ratio = 0.5 : f64, seed = 0 : i64, stream = 0 : i64} : (tensor<f32>) -> tensor<4xi64>
  return
}

// -----

func.func @random_distribution(%step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'plait.random' op distribution 'poisson' is not uniform or normal}}
  %r = plait.random %step {distribution = "poisson", a = 0.0 : f64, b = 1.0 : f64, seed = 0 : i64, stream = 1 : i64} : (tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @random_bounds(%step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'plait.random' op uniform bounds [2.000000e+00, 1.000000e+00) are not finite and ordered}}
  %r = plait.random %step {distribution = "uniform", a = 2.0 : f64, b = 1.0 : f64, seed = 0 : i64, stream = 1 : i64} : (tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @random_scale(%step: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'plait.random' op normal mean 0.000000e+00 and scale -1.000000e+00 are not finite with scale >= 0}}
  %r = plait.random %step {distribution = "normal", a = 0.0 : f64, b = -1.0 : f64, seed = 0 : i64, stream = 1 : i64} : (tensor<f32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
