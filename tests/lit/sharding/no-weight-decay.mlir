// --no-weight-decay REGEX: the matching params' updates take weight decay 0 (a torch param
// group with weight_decay 0), the others the optimizer's; plait-shard splits a unit whose
// params' updates differ into one unit per setting (UNIT, then UNIT/1), each updated by one
// flat-shard update with its own settings.
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd weight-decay=0.1 no-weight-decay=bias' | FileCheck %s --check-prefix=BUILD
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd weight-decay=0.1 no-weight-decay=bias' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd weight-decay=0.1' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=WHOLE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd weight-decay=0.1 no-weight-decay=norm' 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd no-weight-decay=bias' 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw no-weight-decay=(' 2>&1 | FileCheck %s --check-prefix=BADREGEX

// BUILD-LABEL: module attributes
// BUILD-SAME: plait.train = {{{.*}}no_weight_decay = "bias", optimizer = "sgd", weight_decay = 1.000000e-01 : f64}
// BUILD-DAG: plait.sgd_update %[[W0:[0-9]+]], %{{.*}} {weight_decay = 1.000000e-01 : f64} : (tensor<3x3xf32>
// BUILD-DAG: plait.sgd_update %{{[0-9]+}}, %{{.*}} : (tensor<3xf32>
// BUILD-DAG: plait.sgd_update %{{[0-9]+}}, %{{.*}} {weight_decay = 1.000000e-01 : f64} : (tensor<3x3xf32>

// layers.0 splits into its weight (decayed, 9 elements) and its bias (3, padded to 4);
// layers.1 has one setting and stays whole.
// ZERO2: name = "layers.0", numel = 9 : i64, padded_numel = 10 : i64, params = ["layers.0.weight"]
// ZERO2-SAME: name = "layers.0/1", numel = 3 : i64, padded_numel = 4 : i64, params = ["layers.0.bias"]
// ZERO2-SAME: name = "layers.1", numel = 9 : i64
// ZERO2-DAG: plait.sgd_update %{{.*}} {weight_decay = 1.000000e-01 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>) -> tensor<5xf32>
// ZERO2-DAG: plait.sgd_update %{{.*}} : (tensor<2xf32>, tensor<2xf32>, tensor<f64>, tensor<f32>) -> tensor<2xf32>
// WHOLE: name = "layers.0", numel = 12 : i64
// WHOLE-NOT: layers.0/1

// NONE: error: --no-weight-decay 'norm' matches no trainable param
// ZERO: error: --no-weight-decay 'bias' has no effect: the sgd optimizer's weight decay is 0 (give --weight-decay)
// BADREGEX: error: invalid --no-weight-decay regex '('

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
