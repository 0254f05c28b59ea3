// --lr-scale 'REGEX=F,...': each matching param's update takes lr_scale F (the first rule
// that matches; the others none, 1), the learning rate it applies being the step's lr times
// F, as torch param groups with their own lr. plait-shard splits a unit whose params' updates
// differ (UNIT, UNIT/1). Errors are one line.
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd lr-scale=layers\.0=0.5,layers\.1\.weight=0' | FileCheck %s --check-prefix=BUILD
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw lr-scale=bias=2' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=ZERO3
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd lr-scale=nothing=0.5' 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd lr-scale=layers=-1' 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd lr-scale=layers=inf' 2>&1 | FileCheck %s --check-prefix=INFINITE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd lr-scale=layers' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd lr-scale=(=2' 2>&1 | FileCheck %s --check-prefix=BADREGEX

// BUILD-LABEL: module attributes
// BUILD-SAME: plait.train = {{{.*}}lr_scale = "layers\\.0=0.5,layers\\.1\\.weight=0"
// BUILD-DAG: plait.sgd_update %{{.*}} {lr_scale = 5.000000e-01 : f64} : (tensor<3x3xf32>
// BUILD-DAG: plait.sgd_update %{{.*}} {lr_scale = 5.000000e-01 : f64} : (tensor<3xf32>
// BUILD-DAG: plait.sgd_update %{{.*}} {lr_scale = 0.000000e+00 : f64} : (tensor<3x3xf32>

// ZERO3: name = "layers.0", numel = 9 : i64
// ZERO3-SAME: name = "layers.0/1", numel = 3 : i64
// ZERO3-SAME: name = "layers.1", numel = 9 : i64
// ZERO3-DAG: plait.adamw_update %{{.*}} {lr_scale = 2.000000e+00 : f64} : (tensor<2xf32>
// ZERO3-DAG: plait.adamw_update %{{.*}} : (tensor<5xf32>

// NONE: error: --lr-scale: 'nothing=0.5' matches no trainable param
// INFINITE: error: --lr-scale expects REGEX=F with F finite and >= 0, got 'layers=inf'
// NEGATIVE: error: --lr-scale expects REGEX=F with F finite and >= 0, got 'layers=-1'
// SYNTAX: error: --lr-scale expects REGEX=F with F finite and >= 0, got 'layers'
// BADREGEX: error: invalid --lr-scale regex '('

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
