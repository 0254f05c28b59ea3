// RUN: plait-opt %s --split-input-file --verify-diagnostics --plait-build-train-step --plait-shard='world-size=2'
// RUN: plait-opt %s --split-input-file --verify-diagnostics --plait-build-train-step --plait-shard='world-size=1'

// A constant plait-shard rescales to every rank's count must say what it counts.
module {
  func.func @main(%x: tensor<4x3xf32>) -> (tensor<f32>, tensor<3xf32> {plait.buffer = "bn.running_var"}) {
    %w = plait.param "fc.weight" {init = "ones"} : tensor<3xf32>
    %h = plait.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %m = plait.reduce_mean %h {axes = array<i64: 0>, keepdims = false} : (tensor<4x3xf32>) -> tensor<3xf32>
    %s = plait.sync_mean %m : tensor<3xf32>
    %loss = plait.reduce_sum %s {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    %rv = plait.param "bn.running_var" {buffer, init = "ones"} : tensor<3xf32>
    // expected-error @+1 {{'plait.constant' op plait.unbiased_ranks needs a float scalar constant marked plait.unbiased_count = n (n >= 1)}}
    %u = plait.constant dense<1.33333337> : tensor<f32> {plait.unbiased_ranks}
    %v = plait.mul %s, %u : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    return %loss, %v : tensor<f32>, tensor<3xf32>
  }
}

// -----

module {
  func.func @main(%x: tensor<4x3xf32>) -> (tensor<f32>, tensor<3xf32> {plait.buffer = "bn.running_var"}) {
    %w = plait.param "fc.weight" {init = "ones"} : tensor<3xf32>
    %h = plait.mul %x, %w : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %m = plait.reduce_mean %h {axes = array<i64: 0>, keepdims = false} : (tensor<4x3xf32>) -> tensor<3xf32>
    %s = plait.sync_mean %m : tensor<3xf32>
    %loss = plait.reduce_sum %s {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    %rv = plait.param "bn.running_var" {buffer, init = "ones"} : tensor<3xf32>
    // expected-error @+1 {{'plait.constant' op plait.unbiased_ranks needs a float scalar constant marked plait.unbiased_count = n (n >= 1)}}
    %u = plait.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> {plait.unbiased_count = 4 : i64, plait.unbiased_ranks}
    %v = plait.mul %s, %u : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    return %loss, %v : tensor<f32>, tensor<3xf32>
  }
}
