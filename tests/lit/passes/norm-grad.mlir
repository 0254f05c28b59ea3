// A norm's gradient is one op (ir/VJP.cpp); plait-expand-norm-grad (--no-fused-norm) writes
// it as the reductions and elementwise ops it stands for.
// RUN: plait-opt --plait-build-train-step='optimizer=sgd' %s | FileCheck %s
// RUN: plait-opt --plait-build-train-step='optimizer=sgd' --plait-expand-norm-grad %s | FileCheck %s --check-prefix=EXPAND

// CHECK-LABEL: func.func @main
// CHECK: %[[G:.*]] = plait.param "ln.weight"
// CHECK: %[[B:.*]] = plait.param "ln.bias"
// CHECK: %[[S:.*]] = plait.param "rms.weight"
// CHECK: %[[LN:.*]] = plait.layer_norm %arg0, %[[G]], %[[B]]
// CHECK: %[[RMS:.*]] = plait.rms_norm %[[LN]], %[[S]]
// CHECK: %[[DX1:.*]], %[[DS1:.*]] = plait.rms_norm_grad %[[LN]], %[[S]], %{{.*}} {axis = -1 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
// CHECK: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = plait.layer_norm_grad %arg0, %[[G]], %[[DX1]] {axis = 1 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>)
// CHECK: plait.sgd_update %[[G]], %[[DG]]
// CHECK: plait.sgd_update %[[B]], %[[DB]]
// CHECK: plait.sgd_update %[[S]], %[[DS1]]

// EXPAND-LABEL: func.func @main
// EXPAND-NOT: _norm_grad
// EXPAND: plait.rms_norm
// EXPAND: plait.rsqrt
// EXPAND: plait.reduce_mean %{{.*}} {axes = array<i64: 1, 2>}
// EXPAND: plait.rsqrt
// EXPAND: plait.reduce_sum %{{.*}} {axes = array<i64: 0>}
// EXPAND-NOT: _norm_grad
// EXPAND: return
func.func @main(%x: tensor<2x3x8xf32> {plait.name = "x"}) -> (tensor<f32> {plait.name = "loss"}) {
  %g = plait.param "ln.weight" {init = "ones"} : tensor<3x8xf32>
  %b = plait.param "ln.bias" {init = "zeros"} : tensor<3x8xf32>
  %s = plait.param "rms.weight" {init = "ones"} : tensor<8xf32>
  %0 = plait.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-03 : f64} : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %1 = plait.rms_norm %0, %s {axis = -1 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %2 = plait.mul %1, %1 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %3 = plait.reduce_mean %2 {axes = array<i64>, keepdims = false} : (tensor<2x3x8xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}
