// A statistic of one value on one rank has no unbiased variance; over two ranks it has.
// RUN: not plait-opt %s --plait-build-train-step --plait-shard='world-size=1' 2>&1 | FileCheck %s
// RUN: plait-opt %s --plait-build-train-step --plait-shard='world-size=2' | FileCheck %s --check-prefix=W2
// CHECK: error: 'plait.constant' op plait.unbiased_count 1 over 1 rank(s) is a statistic of one value: it has no unbiased variance
// W2: plait.constant dense<2.000000e+00> : tensor<f32> {plait.unbiased_count = 2 : i64}
module {
  func.func @main(%x: tensor<1x3xf32>) -> (tensor<f32>, tensor<3xf32> {plait.buffer = "bn.running_var"}) {
    %w = plait.param "fc.weight" {init = "ones"} : tensor<3xf32>
    %h = plait.mul %x, %w : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
    %m = plait.reduce_mean %h {axes = array<i64: 0>, keepdims = false} : (tensor<1x3xf32>) -> tensor<3xf32>
    %s = plait.sync_mean %m : tensor<3xf32>
    %loss = plait.reduce_sum %s {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    %rv = plait.param "bn.running_var" {buffer, init = "ones"} : tensor<3xf32>
    %u = plait.constant dense<0x7F800000> : tensor<f32> {plait.unbiased_count = 1 : i64, plait.unbiased_ranks}
    %v = plait.mul %s, %u : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    return %loss, %v : tensor<f32>, tensor<3xf32>
  }
}
