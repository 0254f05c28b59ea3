// --ema-decay: after every optimizer update (which stay next to each other, for
// plait-group-updates), each trained param's weight EMA reads the param's new value, its
// average a state "<param>.ema"; frozen params have none. plait.train records the settings.
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9 freeze=bias$ ema-decay=0.99 ema-warmup=true' | FileCheck %s
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' | FileCheck %s --check-prefix=OFF
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=1' 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=-0.5' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-warmup=true' 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-buffers=true' 2>&1 | FileCheck %s --check-prefix=BUFFERS

// CHECK: plait.train = {clip_grad_norm = {{.*}}, ema_decay = 0.98{{[0-9]+}} : f64, ema_warmup = true, optimizer = "sgd"
// CHECK: %[[W0:.*]] = plait.param "layers.0.weight"
// CHECK: %[[W1:.*]] = plait.param "layers.1.weight"
// CHECK: %[[STEP:.*]] = plait.hyper "step"
// CHECK: %[[P0:.*]], %{{.*}} = plait.sgd_update %[[W0]]
// CHECK: %[[P1:.*]], %{{.*}} = plait.sgd_update %[[W1]]
// CHECK-NEXT: %[[E0:.*]] = plait.state "layers.0.weight.ema" : tensor<3x3xf32>
// CHECK-NEXT: %[[N0:.*]] = plait.weight_ema %[[P0]], %[[E0]], %[[STEP]] {decay = 0.98{{[0-9]+}} : f64, warmup = true} : (tensor<3x3xf32>, tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xf32>
// CHECK-NEXT: %[[E1:.*]] = plait.state "layers.1.weight.ema" : tensor<3x3xf32>
// CHECK-NEXT: %[[N1:.*]] = plait.weight_ema %[[P1]], %[[E1]], %[[STEP]]
// CHECK-NOT: layers.0.bias.ema
// CHECK: plait.assign %[[E0]], %[[N0]] : tensor<3x3xf32>
// CHECK: plait.assign %[[E1]], %[[N1]] : tensor<3x3xf32>

// OFF-NOT: ema

// ONE: error: ema-decay must be in (0, 1) (0: no EMA), got 1.000000e+00
// NEGATIVE: error: ema-decay must be in (0, 1) (0: no EMA), got -5.000000e-01
// WARMUP: error: ema-warmup needs an EMA: give ema-decay
// BUFFERS: error: ema-buffers needs an EMA: give ema-decay

func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}, %y: tensor<4xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w0 = plait.param "layers.0.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %b0 = plait.param "layers.0.bias" {init = "zeros"} : tensor<3xf32>
  %w1 = plait.param "layers.1.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %h = plait.gemm %x, %w0, %b0 {trans_b = true} : (tensor<4x3xf32>, tensor<3x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %r = plait.relu %h : tensor<4x3xf32>
  %o = plait.matmul %r, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %l = plait.softmax_cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
