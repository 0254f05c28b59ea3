// RUN: plait-opt --split-input-file --verify-diagnostics --plait-divide-batch='micro-batches=2' %s
// RUN: not plait-opt --split-input-file --plait-divide-batch='micro-batches=0' %s 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: micro-batches must be at least 1, got 0

// K must divide the batch.
// expected-error @+1 {{--micro-batches 2 does not divide the batch 3 (the leading dimension of argument 'x')}}
func.func @main(%x: tensor<3x4xf32> {plait.name = "x"}) -> tensor<f32> {
  %s = plait.reduce_mean %x {axes = array<i64>, keepdims = false} : (tensor<3x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Every argument leads with the batch (each is sliced into the micro-batches).
// expected-error @+1 {{--micro-batches: argument #1 has leading dimension 3 but argument #0 has 4; every argument must lead with the batch}}
func.func @main(%x: tensor<4x3xf32>, %m: tensor<3x3xf32>) -> tensor<f32> {
  %y = plait.matmul %x, %m : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{--micro-batches: argument 's' has no leading dimension (the batch) to split}}
func.func @main(%x: tensor<4x3xf32>, %s: tensor<f32> {plait.name = "s"}) -> tensor<f32> {
  %y = plait.mul %x, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %l = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{no argument to divide into 2 micro-batches}}
func.func @main() -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %s = plait.reduce_mean %w {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A constant with the batch in its shape pins it.
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %c = plait.constant dense<1.0> : tensor<4x3xf32>
  // expected-error @+1 {{'plait.add' op cannot run on micro-batches of 2 (--micro-batches 2 of the batch 4): its shape rule refuses the operands 'tensor<2x3xf32>','tensor<4x3xf32>' (a constant or an attribute of the model pins the batch)}}
  %y = plait.add %x, %c : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A reshape that splits the batch across two dimensions.
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'plait.reshape' op cannot run on micro-batches of 2 (--micro-batches 2 of the batch 4): it splits the batch dimension 0 of 'tensor<4x3xf32>' across the dimensions of 'tensor<2x2x3xf32>'}}
  %y = plait.reshape %x : (tensor<4x3xf32>) -> tensor<2x2x3xf32>
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<2x2x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// An attribute that pins the batch: a slice that ends at row 4.
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'plait.slice' op cannot run on micro-batches of 2 (--micro-batches 2 of the batch 4): its shape rule refuses the operands 'tensor<2x3xf32>' (a constant or an attribute of the model pins the batch)}}
  %y = plait.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 4, 3>, steps = array<i64: 1, 1>} : (tensor<4x3xf32>) -> tensor<3x3xf32>
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A result whose batched dimension would not be divided by K: the batch concatenated with a
// constant's rows.
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %c = plait.constant dense<1.0> : tensor<2x3xf32>
  // expected-error @+1 {{'plait.concat' op cannot run on micro-batches of 2 (--micro-batches 2 of the batch 4): a result would change from 'tensor<6x3xf32>' to 'tensor<4x3xf32>', not by one dimension divided by 2}}
  %y = plait.concat %x, %c {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<6x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A dropout mask multiplied into nothing batched keeps the batch it was drawn at.
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %step = plait.hyper "step" : tensor<f32>
  %keep = plait.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 0 : i64, stream = 3 : i64} : (tensor<f32>) -> tensor<4x3xf32>
  %w = plait.param "w" {init = "ones"} : tensor<4x3xf32>
  %m = plait.mul %keep, %w : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  // expected-error @+1 {{'plait.add' op cannot run on micro-batches of 2 (--micro-batches 2 of the batch 4): its shape rule refuses the operands 'tensor<2x3xf32>','tensor<4x3xf32>' (a constant or an attribute of the model pins the batch)}}
  %y = plait.add %x, %m : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// What the rules let through, the verifiers catch: add_layer_norm's results follow x, its
// residual (a param here) pins the batch.
func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
  %r = plait.param "r" {init = "ones"} : tensor<4x3xf32>
  %g = plait.param "g" {init = "ones"} : tensor<3xf32>
  // expected-error @+1 {{(after dividing the batch 4 into 2 micro-batches: a shape in the model pins the batch)}}
  %y, %sum = plait.add_layer_norm %x, %r, %g {axis = -1 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  %s = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A BatchNorm's statistics follow its input's batch: scale and bias are per channel, and
// one computed from the batch while the input is not has no rule.
func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}) -> tensor<f32> {
  %p = plait.param "p" {init = "ones"} : tensor<2x4xf32>
  %s = plait.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'plait.batch_norm' op cannot run on micro-batches of 2 (--micro-batches 2 of the batch 4): its scale or bias carries the batch but its input does not}}
  %y, %m, %v = plait.batch_norm %p, %s, %s : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %l = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
