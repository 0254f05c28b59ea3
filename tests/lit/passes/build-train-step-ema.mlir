// --ema-decay: after every optimizer update (which stay next to each other, for
// plait-group-updates), each trained param's weight EMA reads the param's new value, its
// average a state "<param>.ema"; frozen params have none. plait.train records the settings.
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9 freeze=bias$ ema-decay=0.99 ema-warmup=true' | FileCheck %s
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' | FileCheck %s --check-prefix=OFF
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=1' 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=-0.5' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-warmup=true' 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-buffers=true' 2>&1 | FileCheck %s --check-prefix=BUFFERS
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.999 ema-power=0.75 ema-inv-gamma=2 ema-min-decay=0.1 ema-start=5 ema-every=2' | FileCheck %s --check-prefix=SCHEDULE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.9 ema-power=0.5 ema-warmup=true' 2>&1 | FileCheck %s --check-prefix=TWOWARM
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.9 ema-inv-gamma=3' 2>&1 | FileCheck %s --check-prefix=GAMMA
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.9 ema-min-decay=0.95' 2>&1 | FileCheck %s --check-prefix=FLOOR
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.9 ema-every=0' 2>&1 | FileCheck %s --check-prefix=EVERY
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd ema-every=3' 2>&1 | FileCheck %s --check-prefix=NODECAY

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

// The schedule (diffusers' EMAModel, ema_pytorch): on each weight_ema and in plait.train.
// SCHEDULE: plait.train = {clip_grad_norm = {{.*}}, ema_decay = 0.99{{[0-9]+}} : f64, ema_every = 2 : i64, ema_inv_gamma = 2.000000e+00 : f64, ema_min_decay = 1.000000e-01 : f64, ema_power = 7.500000e-01 : f64, ema_start = 5 : i64, optimizer = "sgd"
// SCHEDULE-COUNT-3: plait.weight_ema {{.*}} {decay = 0.99{{[0-9]+}} : f64, every = 2 : i64, inv_gamma = 2.000000e+00 : f64, min_decay = 1.000000e-01 : f64, power = 7.500000e-01 : f64, start = 5 : i64}
// TWOWARM: error: ema-power and ema-warmup are two warm-ups of the EMA's decay; give one
// GAMMA: error: ema-inv-gamma is the power warm-up's: give ema-power
// FLOOR: error: ema-min-decay must be in [0, ema-decay 9.000000e-01], got 9.500000e-01
// EVERY: error: ema-start must be >= 0 and ema-every >= 1, got 0 and 0
// NODECAY: error: ema-every needs an EMA: give ema-decay

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
