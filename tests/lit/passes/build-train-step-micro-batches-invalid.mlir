// RUN: plait-opt --split-input-file --verify-diagnostics --plait-build-train-step='micro-batches=2' %s
// RUN: not plait-opt --split-input-file --plait-build-train-step='micro-batches=0' %s 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: micro-batches must be at least 1, got 0

// An input without a leading (batch) dimension cannot be split into micro-batches.
// expected-error @+1 {{'func.func' op argument #1 has no leading batch dimension to split into 2 micro-batches}}
func.func @main(%x: tensor<2x4xf32>, %scale: tensor<f32>) -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %p = plait.mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %q = plait.mul %p, %scale : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %s = plait.reduce_mean %q {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op has no batch inputs to split into 2 micro-batches}}
func.func @main() -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %s = plait.reduce_mean %w {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

