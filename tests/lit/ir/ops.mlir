// Round trip of every plait op: the custom form parses, verifies (the shape rules infer
// exactly the written result types), prints back unchanged and parses again; the generic
// form does the same. Result types computed by the shape rules are checked on each line.
// RUN: plait-opt %s | plait-opt | FileCheck %s
// RUN: plait-opt --mlir-print-op-generic %s | plait-opt | FileCheck %s

// CHECK-LABEL: func.func @sources(
// CHECK-NEXT: %0 = plait.param "fc1.weight" {value = dense<5.000000e-01> : tensor<4x8xf32>} : tensor<4x8xf32>
// CHECK-NEXT: %1 = plait.param "fc1.bias" {init = "zeros"} : tensor<8xf32>
// CHECK-NEXT: %2 = plait.param "counts" {init = "ones"} : tensor<2xi64>
// CHECK-NEXT: %3 = plait.param "emb" {init = "normal:0.02"} : tensor<3xf32>
// CHECK-NEXT: %4 = plait.param "proj" {init = "uniform:1e-1"} : tensor<3xf32>
// CHECK-NEXT: %5 = plait.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT: return
func.func @sources() -> (tensor<4x8xf32>, tensor<8xf32>, tensor<2xi64>, tensor<3xf32>, tensor<2xi1>) {
  %w = plait.param "fc1.weight" {value = dense<0.5> : tensor<4x8xf32>} : tensor<4x8xf32>
  %b = plait.param "fc1.bias" {init = "zeros"} : tensor<8xf32>
  %i = plait.param "counts" {init = "ones"} : tensor<2xi64>
  %n = plait.param "emb" {init = "normal:0.02"} : tensor<3xf32>
  %u = plait.param "proj" {init = "uniform:1e-1"} : tensor<3xf32>
  %c = plait.constant dense<[true, false]> : tensor<2xi1>
  return %w, %b, %i, %n, %c : tensor<4x8xf32>, tensor<8xf32>, tensor<2xi64>, tensor<3xf32>, tensor<2xi1>
}
// CHECK-LABEL: func.func @unary(
// CHECK-NEXT: %0 = plait.exp %arg0 : tensor<4xf32>
// CHECK-NEXT: %1 = plait.log %arg0 : tensor<4xf32>
// CHECK-NEXT: %2 = plait.sqrt %arg0 : tensor<4xf32>
// CHECK-NEXT: %3 = plait.rsqrt %arg0 : tensor<4xf32>
// CHECK-NEXT: %4 = plait.reciprocal %arg0 : tensor<4xf32>
// CHECK-NEXT: %5 = plait.erf %arg0 : tensor<4xf32>
// CHECK-NEXT: %6 = plait.tanh %arg0 : tensor<4xf32>
// CHECK-NEXT: %7 = plait.sin %arg0 : tensor<4xf32>
// CHECK-NEXT: %8 = plait.cos %arg0 : tensor<4xf32>
// CHECK-NEXT: %9 = plait.sigmoid %arg0 : tensor<4xf32>
// CHECK-NEXT: %10 = plait.silu %arg0 : tensor<4xf32>
// CHECK-NEXT: %11 = plait.softplus %arg0 : tensor<4xf32>
// CHECK-NEXT: %12 = plait.floor %arg0 : tensor<4xf32>
// CHECK-NEXT: %13 = plait.ceil %arg0 : tensor<4xf32>
// CHECK-NEXT: %14 = plait.round %arg0 : tensor<4xf32>
// CHECK-NEXT: %15 = plait.neg %arg1 : tensor<4xi32>
// CHECK-NEXT: %16 = plait.abs %arg1 : tensor<4xi32>
// CHECK-NEXT: %17 = plait.relu %arg0 : tensor<4xf32>
// CHECK-NEXT: %18 = plait.sign %arg1 : tensor<4xi32>
// CHECK-NEXT: %19 = plait.not %arg2 : tensor<4xi1>
// CHECK-NEXT: %20 = plait.gelu %arg0 : tensor<4xf32>
// CHECK-NEXT: %21 = plait.gelu %arg0 {approximate = "tanh"} : tensor<4xf32>
// CHECK-NEXT: %22 = plait.leaky_relu %arg0 {alpha = 1.000000e-01 : f64} : tensor<4xf32>
// CHECK-NEXT: %23 = plait.elu %arg0 : tensor<4xf32>
// CHECK-NEXT: %24 = plait.hard_sigmoid %arg0 {alpha = 2.500000e-01 : f64} : tensor<4xf32>
// CHECK-NEXT: %25 = plait.clamp %arg0 {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<4xf32>
// CHECK-NEXT: %26 = plait.clamp %arg1 {min = -1.500000e+00 : f64} : tensor<4xi32>
// CHECK-NEXT: return
func.func @unary(%x: tensor<4xf32>, %i: tensor<4xi32>, %b: tensor<4xi1>) {
  %0 = plait.exp %x : tensor<4xf32>
  %1 = plait.log %x : tensor<4xf32>
  %2 = plait.sqrt %x : tensor<4xf32>
  %3 = plait.rsqrt %x : tensor<4xf32>
  %4 = plait.reciprocal %x : tensor<4xf32>
  %5 = plait.erf %x : tensor<4xf32>
  %6 = plait.tanh %x : tensor<4xf32>
  %7 = plait.sin %x : tensor<4xf32>
  %8 = plait.cos %x : tensor<4xf32>
  %9 = plait.sigmoid %x : tensor<4xf32>
  %10 = plait.silu %x : tensor<4xf32>
  %11 = plait.softplus %x : tensor<4xf32>
  %12 = plait.floor %x : tensor<4xf32>
  %13 = plait.ceil %x : tensor<4xf32>
  %14 = plait.round %x : tensor<4xf32>
  %15 = plait.neg %i : tensor<4xi32>
  %16 = plait.abs %i : tensor<4xi32>
  %17 = plait.relu %x : tensor<4xf32>
  %18 = plait.sign %i : tensor<4xi32>
  %19 = plait.not %b : tensor<4xi1>
  %20 = plait.gelu %x : tensor<4xf32>
  %21 = plait.gelu %x {approximate = "tanh"} : tensor<4xf32>
  %22 = plait.leaky_relu %x {alpha = 1.000000e-01 : f64} : tensor<4xf32>
  %23 = plait.elu %x : tensor<4xf32>
  %24 = plait.hard_sigmoid %x {alpha = 0.25 : f64, beta = 0.5 : f64} : tensor<4xf32>
  %25 = plait.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
  %26 = plait.clamp %i {min = -1.5 : f64} : tensor<4xi32>
  return
}

// CHECK-LABEL: func.func @binary(
// CHECK-NEXT: %0 = plait.add %arg0, %arg1 : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT: %1 = plait.sub %arg0, %arg2 : (tensor<2x1x3xf32>, tensor<f32>) -> tensor<2x1x3xf32>
// CHECK-NEXT: %2 = plait.mul %arg2, %arg2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT: %3 = plait.div %arg4, %arg3 : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT: %4 = plait.pow %arg0, %arg1 : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT: %5 = plait.max %arg3, %arg4 : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT: %6 = plait.min %arg1, %arg0 : (tensor<4x1xf32>, tensor<2x1x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT: %7 = plait.mod %arg4, %arg4 : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT: %8 = plait.equal %arg5, %arg6 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %9 = plait.less %arg0, %arg1 : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xi1>
// CHECK-NEXT: %10 = plait.less_equal %arg3, %arg4 : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %11 = plait.greater %arg2, %arg0 : (tensor<f32>, tensor<2x1x3xf32>) -> tensor<2x1x3xi1>
// CHECK-NEXT: %12 = plait.greater_equal %arg4, %arg3 : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT: %13 = plait.and %arg5, %arg6 : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %14 = plait.or %arg6, %arg5 : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %15 = plait.xor %arg5, %arg5 : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: %16 = plait.where %arg6, %arg0, %arg1 : (tensor<3xi1>, tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT: %17 = plait.where %arg5, %arg6, %arg6 : (tensor<2x3xi1>, tensor<3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT: return
func.func @binary(%a: tensor<2x1x3xf32>, %b: tensor<4x1xf32>, %s: tensor<f32>, %i: tensor<3xi64>, %j: tensor<2x3xi64>, %p: tensor<2x3xi1>, %q: tensor<3xi1>) {
  // Broadcasting aligns trailing dimensions: 2x1x3 with 4x1 gives 2x4x3.
  %0 = plait.add %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  %1 = plait.sub %a, %s : (tensor<2x1x3xf32>, tensor<f32>) -> tensor<2x1x3xf32>
  %2 = plait.mul %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %3 = plait.div %j, %i : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi64>
  %4 = plait.pow %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  %5 = plait.max %i, %j : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %6 = plait.min %b, %a : (tensor<4x1xf32>, tensor<2x1x3xf32>) -> tensor<2x4x3xf32>
  %7 = plait.mod %j, %j : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  // Comparisons produce i1; equal also takes i1 operands.
  %8 = plait.equal %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %9 = plait.less %a, %b : (tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xi1>
  %10 = plait.less_equal %i, %j : (tensor<3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %11 = plait.greater %s, %a : (tensor<f32>, tensor<2x1x3xf32>) -> tensor<2x1x3xi1>
  %12 = plait.greater_equal %j, %i : (tensor<2x3xi64>, tensor<3xi64>) -> tensor<2x3xi1>
  %13 = plait.and %p, %q : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %14 = plait.or %q, %p : (tensor<3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %15 = plait.xor %p, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %16 = plait.where %q, %a, %b : (tensor<3xi1>, tensor<2x1x3xf32>, tensor<4x1xf32>) -> tensor<2x4x3xf32>
  %17 = plait.where %p, %q, %q : (tensor<2x3xi1>, tensor<3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  return
}

// CHECK-LABEL: func.func @reductions(
// CHECK-NEXT: %0 = plait.reduce_sum %arg0 {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT: %1 = plait.reduce_mean %arg0 {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %2 = plait.reduce_max %arg0 {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK-NEXT: %3 = plait.reduce_min %arg0 {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT: %4 = plait.reduce_prod %arg0 {axes = array<i64: -1, 0>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT: %5 = plait.reduce_mean %arg1 {axes = array<i64: 0>} : (tensor<2x3xi32>) -> tensor<1x3xi32>
// CHECK-NEXT: %6 = plait.argmax %arg0 {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT: %7 = plait.argmax %arg0 {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
// CHECK-NEXT: %8 = plait.argmin %arg1 {axis = 0 : i64, keepdims = false} : (tensor<2x3xi32>) -> tensor<3xi64>
// CHECK-NEXT: %9 = plait.top_k %arg0 {k = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xi64>
// CHECK-NEXT: %10 = plait.top_k %arg1 {k = 3 : i64, largest = false} : (tensor<2x3xi32>) -> tensor<2x3xi64>
// CHECK-NEXT: %11 = plait.top_k %arg0 {k = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x0xi64>
// CHECK-NEXT: return
func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi32>) {
  %0 = plait.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %1 = plait.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // Empty axes reduce every axis.
  %2 = plait.reduce_max %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %3 = plait.reduce_min %x {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %4 = plait.reduce_prod %x {axes = array<i64: -1, 0>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // Integer means are allowed (truncating toward zero).
  %5 = plait.reduce_mean %i {axes = array<i64: 0>} : (tensor<2x3xi32>) -> tensor<1x3xi32>
  %6 = plait.argmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  %7 = plait.argmax %x {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  %8 = plait.argmin %i {axis = 0 : i64, keepdims = false} : (tensor<2x3xi32>) -> tensor<3xi64>
  %9 = plait.top_k %x {k = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xi64>
  %10 = plait.top_k %i {k = 3 : i64, largest = false} : (tensor<2x3xi32>) -> tensor<2x3xi64>
  // k = 0: empty indices.
  %11 = plait.top_k %x {k = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x0xi64>
  return
}

// CHECK-LABEL: func.func @determinants
// CHECK-NEXT: %0 = plait.det %arg0 : (tensor<2x3x3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %1 = plait.det %arg1 : (tensor<1x1xf64>) -> tensor<f64>
// CHECK-NEXT: %2 = plait.cofactors %arg0 : tensor<2x3x3xf32>
// CHECK-NEXT: return
func.func @determinants(%x: tensor<2x3x3xf32>, %y: tensor<1x1xf64>) {
  %0 = plait.det %x : (tensor<2x3x3xf32>) -> tensor<2xf32>
  %1 = plait.det %y : (tensor<1x1xf64>) -> tensor<f64>
  %2 = plait.cofactors %x : tensor<2x3x3xf32>
  return
}

// CHECK-LABEL: func.func @normalisation(
// CHECK-NEXT: %0 = plait.softmax %arg0 {axis = -1 : i64} : tensor<2x3x8xf32>
// CHECK-NEXT: %1 = plait.log_softmax %arg0 {axis = 1 : i64} : tensor<2x3x8xf32>
// CHECK-NEXT: %2 = plait.layer_norm %arg0, %arg1, %arg1 {axis = -1 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %3 = plait.layer_norm %arg0, %arg2 {axis = 1 : i64} : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %4 = plait.rms_norm %arg0, %arg1 {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: return
func.func @normalisation(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %g2: tensor<3x8xf32>) {
  %0 = plait.softmax %x {axis = -1 : i64} : tensor<2x3x8xf32>
  %1 = plait.log_softmax %x {axis = 1 : i64} : tensor<2x3x8xf32>
  %2 = plait.layer_norm %x, %g, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %3 = plait.layer_norm %x, %g2 {axis = 1 : i64} : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %4 = plait.rms_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  return
}

// CHECK-LABEL: func.func @batch_norms(
// CHECK-NEXT: %y, %mean, %var = plait.batch_norm %arg0, %arg1, %arg1 : (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-NEXT: %dx, %dscale, %dbias = plait.batch_norm_grad %arg0, %arg1, %mean, %var, %y {epsilon = 1.000000e-03 : f64} : (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-NEXT: return
func.func @batch_norms(%x: tensor<2x3x8xf32>, %g: tensor<3xf32>) {
  %y, %m, %v = plait.batch_norm %x, %g, %g {epsilon = 1.0e-05 : f64} : (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>)
  %d:3 = plait.batch_norm_grad %x, %g, %m, %v, %y {epsilon = 1.0e-03 : f64} : (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// A SyncBatchNorm's forms: sync before plait-shard, then this rank's statistics and sums and
// the kernels reading every rank's (bf16: the vectors in f32).
// CHECK-LABEL: func.func @sync_batch_norms(
// CHECK-NEXT: %y, %mean, %var = plait.batch_norm %arg0, %arg1, %arg1 {sync} : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
// CHECK-NEXT: %dx, %dscale, %dbias = plait.batch_norm_grad %arg0, %arg1, %mean, %var, %y {sync} : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<2x3x8xbf16>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
// CHECK-NEXT: %0 = plait.batch_norm_stats %arg0 : (tensor<2x3x8xbf16>) -> tensor<6xf32>
// CHECK-NEXT: %y_0, %mean_1, %var_2 = plait.batch_norm %arg0, %arg1, %arg1, %arg2 : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<12xf32>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
// CHECK-NEXT: %1 = plait.batch_norm_grad_sums %arg0, %mean_1, %var_2, %y_0 : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<2x3x8xbf16>) -> tensor<6xf32>
// CHECK-NEXT: %dx_3, %dscale_4, %dbias_5 = plait.batch_norm_grad %arg0, %arg1, %mean_1, %var_2, %y_0, %1 : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<2x3x8xbf16>, tensor<6xf32>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
// CHECK-NEXT: return
func.func @sync_batch_norms(%x: tensor<2x3x8xbf16>, %g: tensor<3xbf16>, %all: tensor<12xf32>) {
  %y, %m, %v = plait.batch_norm %x, %g, %g {sync} : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  %d:3 = plait.batch_norm_grad %x, %g, %m, %v, %y {sync} : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<2x3x8xbf16>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  %s = plait.batch_norm_stats %x : (tensor<2x3x8xbf16>) -> tensor<6xf32>
  %y2, %m2, %v2 = plait.batch_norm %x, %g, %g, %all : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<12xf32>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  %sums = plait.batch_norm_grad_sums %x, %m2, %v2, %y2 : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<2x3x8xbf16>) -> tensor<6xf32>
  %d2:3 = plait.batch_norm_grad %x, %g, %m2, %v2, %y2, %sums : (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<3xbf16>, tensor<2x3x8xbf16>, tensor<6xf32>) -> (tensor<2x3x8xbf16>, tensor<3xbf16>, tensor<3xbf16>)
  return
}

// CHECK-LABEL: func.func @add_norms(
// CHECK-NEXT: %y, %sum = plait.add_layer_norm %arg0, %arg0, %arg1, %arg1 {axis = -1 : i64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
// CHECK-NEXT: %y_0, %sum_1 = plait.add_rms_norm %arg0, %y, %arg1 {axis = 2 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
// CHECK-NEXT: return
func.func @add_norms(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>) {
  %y, %sum = plait.add_layer_norm %x, %x, %g, %g {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
  %y2, %sum2 = plait.add_rms_norm %x, %y, %g {axis = 2 : i64, epsilon = 1.0e-03 : f64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>)
  return
}

// CHECK-LABEL: func.func @norm_grads(
// CHECK-NEXT: %dx, %dscale, %dbias = plait.layer_norm_grad %arg0, %arg1, %arg0 {axis = -1 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT: %dx_0, %dscale_1 = plait.layer_norm_grad %arg0, %arg2, %arg0 {axis = 1 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3x8xf32>)
// CHECK-NEXT: %dx_2, %dscale_3 = plait.rms_norm_grad %arg0, %arg1, %arg0 {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
// CHECK-NEXT: return
func.func @norm_grads(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %g2: tensor<3x8xf32>) {
  %0:3 = plait.layer_norm_grad %x, %g, %x {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %1:2 = plait.layer_norm_grad %x, %g2, %x {axis = 1 : i64, epsilon = 1.0e-03 : f64} : (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3x8xf32>)
  %2:2 = plait.rms_norm_grad %x, %g, %x {axis = 2 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<8xf32>)
  return
}

// CHECK-LABEL: func.func @linalg(
// CHECK-NEXT: %0 = plait.matmul %arg0, %arg1 : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
// CHECK-NEXT: %1 = plait.matmul %arg2, %arg1 : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
// CHECK-NEXT: %2 = plait.matmul %arg0, %arg2 : (tensor<4x2x3xf32>, tensor<3xf32>) -> tensor<4x2xf32>
// CHECK-NEXT: %3 = plait.matmul %arg2, %arg2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
// CHECK-NEXT: %4 = plait.matmul %arg0, %arg3 : (tensor<4x2x3xf32>, tensor<2x1x3x5xf32>) -> tensor<2x4x2x5xf32>
// CHECK-NEXT: %5 = plait.matmul %arg7, %arg8 : (tensor<2x3xi64>, tensor<3x2xi64>) -> tensor<2x2xi64>
// CHECK-NEXT: %6 = plait.gemm %arg4, %arg5, %arg6 {trans_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: %7 = plait.gemm %arg4, %arg4 {alpha = 2.000000e+00 : f64, trans_a = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %8 = plait.gemm %arg4, %arg4 {trans_b = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %9 = plait.gemm %arg4, %arg9, %arg2 {beta = 5.000000e-01 : f64, trans_a = true, trans_b = true} : (tensor<2x4xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %10 = plait.matmul %arg4, %arg5, %arg6 {transpose_rhs = true} : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return
func.func @linalg(%a: tensor<4x2x3xf32>, %b: tensor<3x5xf32>, %v: tensor<3xf32>, %c: tensor<2x1x3x5xf32>, %m: tensor<2x4xf32>, %w: tensor<8x4xf32>, %bias: tensor<8xf32>, %ii: tensor<2x3xi64>, %jj: tensor<3x2xi64>, %n: tensor<3x2xf32>) {
  %0 = plait.matmul %a, %b : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
  // A 1-D lhs is promoted to 1xK and the promoted dimension dropped; 1-D rhs alike.
  %1 = plait.matmul %v, %b : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  %2 = plait.matmul %a, %v : (tensor<4x2x3xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  %3 = plait.matmul %v, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  // Batch dimensions broadcast: [4] with [2, 1] gives [2, 4].
  %4 = plait.matmul %a, %c : (tensor<4x2x3xf32>, tensor<2x1x3x5xf32>) -> tensor<2x4x2x5xf32>
  %5 = plait.matmul %ii, %jj : (tensor<2x3xi64>, tensor<3x2xi64>) -> tensor<2x2xi64>
  // op(a) is MxK and op(b) KxN after the transposes; c broadcasts to MxN.
  %6 = plait.gemm %m, %w, %bias {trans_b = true} : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %7 = plait.gemm %m, %m {trans_a = true, alpha = 2.0 : f64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %8 = plait.gemm %m, %m {trans_b = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %9 = plait.gemm %m, %n, %v {trans_a = true, trans_b = true, beta = 0.5 : f64} : (tensor<2x4xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  // A bias vector added to every row of the product (plait-fuse-gemm-epilogue's form).
  %10 = plait.matmul %m, %w, %bias {transpose_rhs = true} : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// CHECK-LABEL: func.func @conv_pool(
// CHECK-NEXT: %0 = plait.conv2d %arg0, %arg1, %arg3 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
// CHECK-NEXT: %1 = plait.conv2d %arg0, %arg1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 0>, strides = array<i64: 2, 3>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x3xf32>
// CHECK-NEXT: %2 = plait.conv2d %arg0, %arg1 {dilations = array<i64: 2, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x2xf32>
// CHECK-NEXT: %3 = plait.conv2d %arg0, %arg2, %arg3 {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x6x6xf32>
// CHECK-NEXT: %4 = plait.max_pool2d %arg4 {dilations = array<i64: 1, 1>, kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT: %5 = plait.max_pool2d %arg4 {ceil_mode = true, dilations = array<i64: 1, 1>, kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT: %6 = plait.max_pool2d %arg4 {ceil_mode = true, dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT: %7 = plait.max_pool2d %arg4 {dilations = array<i64: 2, 2>, kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT: %8 = plait.avg_pool2d %arg4 {kernel = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT: %9 = plait.avg_pool2d %arg4 {ceil_mode = true, count_include_pad = true, kernel = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
// CHECK-NEXT: %10 = plait.avg_pool2d %arg4 {ceil_mode = true, kernel = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT: return
func.func @conv_pool(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %wg: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %y: tensor<1x1x5x5xf32>) {
  %0 = plait.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
  // oH = floor((8 + 0 + 2 - 3) / 2) + 1 = 4, oW = floor((8 + 1 + 0 - 3) / 3) + 1 = 3.
  %1 = plait.conv2d %x, %w {strides = array<i64: 2, 3>, pads = array<i64: 0, 1, 2, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x3xf32>
  // Dilated spans 5 and 7: 8 - 5 + 1 = 4, 8 - 7 + 1 = 2.
  %2 = plait.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 3>} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x4x2xf32>
  // Two groups of 2 input channels each.
  %3 = plait.conv2d %x, %wg, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x6x6xf32>
  %4 = plait.max_pool2d %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  // ceil_mode: ceil((5 - 2) / 2) + 1 = 3, the last window starting at 4 < 5.
  %5 = plait.max_pool2d %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %6 = plait.max_pool2d %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %7 = plait.max_pool2d %y {kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %8 = plait.avg_pool2d %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  // ceil_mode would give ceil((5 + 2 - 2) / 2) + 1 = 4, but that window would start at 6 =
  // H + top, in the end padding only, so it is dropped: 3.
  %9 = plait.avg_pool2d %y {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %10 = plait.avg_pool2d %y {kernel = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  return
}

// CHECK-LABEL: func.func @movement(
// CHECK-NEXT: %0 = plait.reshape %arg0 : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT: %1 = plait.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x1x2xf32>
// CHECK-NEXT: %2 = plait.transpose %arg0 {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %3 = plait.broadcast_to %arg1 : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %4 = plait.slice %arg0 {ends = array<i64: 2, 3>, starts = array<i64: 0, 1>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %5 = plait.slice %arg2 {ends = array<i64: 0, 4>, starts = array<i64: 4, 0>, steps = array<i64: -2, 3>} : (tensor<5x4xi64>) -> tensor<2x2xi64>
// CHECK-NEXT: %6 = plait.slice %arg2 {ends = array<i64: -1, -1>, starts = array<i64: 4, 3>, steps = array<i64: -1, -3>} : (tensor<5x4xi64>) -> tensor<5x2xi64>
// CHECK-NEXT: %7 = plait.slice %arg0 {ends = array<i64: 1, 3>, starts = array<i64: 1, 2>, steps = array<i64: 1, 5>} : (tensor<2x3xf32>) -> tensor<0x1xf32>
// CHECK-NEXT: %8 = plait.pad %arg0 {pads = array<i64: 0, 1, 2, 3>} : (tensor<2x3xf32>) -> tensor<4x7xf32>
// CHECK-NEXT: %9 = plait.pad %arg2 {pads = array<i64: 1, 0, 0, 0>, value = -1.000000e+00 : f64} : (tensor<5x4xi64>) -> tensor<6x4xi64>
// CHECK-NEXT: %10 = plait.pad %arg6 {pads = array<i64: 0, 0, 1, 1>, value = 1.000000e+00 : f64} : (tensor<2x3xi1>) -> tensor<3x4xi1>
// CHECK-NEXT: %11 = plait.concat %arg0, %arg0, %arg0 {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT: %12 = plait.concat %arg0, %arg7 {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %13 = plait.concat %arg0 {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %14:2 = plait.split %arg2 {axis = 1 : i64, sizes = array<i64: 1, 3>} : (tensor<5x4xi64>) -> (tensor<5x1xi64>, tensor<5x3xi64>)
// CHECK-NEXT: %15:3 = plait.split %arg2 {axis = -2 : i64, sizes = array<i64: 2, 0, 3>} : (tensor<5x4xi64>) -> (tensor<2x4xi64>, tensor<0x4xi64>, tensor<3x4xi64>)
// CHECK-NEXT: %16 = plait.gather %arg3, %arg4 : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
// CHECK-NEXT: %17 = plait.gather %arg3, %arg4 {axis = 1 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<100x2x8xf32>
// CHECK-NEXT: %18 = plait.gather %arg3, %arg5 {axis = -1 : i64} : (tensor<100x16xf32>, tensor<i32>) -> tensor<100xf32>
// CHECK-NEXT: %19 = plait.gather %arg6, %arg5 : (tensor<2x3xi1>, tensor<i32>) -> tensor<3xi1>
// CHECK-NEXT: %20 = plait.cast %arg0 : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-NEXT: %21 = plait.cast %arg6 : (tensor<2x3xi1>) -> tensor<2x3xbf16>
// CHECK-NEXT: %22 = plait.cast %arg0 : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT: %23 = plait.trilu %arg0 : tensor<2x3xf32>
// CHECK-NEXT: %24 = plait.trilu %arg6 {k = -1 : i64, upper = false} : tensor<2x3xi1>
// CHECK-NEXT: return
func.func @movement(%x: tensor<2x3xf32>, %y: tensor<3x1xf32>, %z: tensor<5x4xi64>, %t: tensor<100x16xf32>, %ids: tensor<2x8xi64>, %ids32: tensor<i32>, %bb: tensor<2x3xi1>, %col: tensor<2x1xf32>) {
  %0 = plait.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = plait.reshape %x : (tensor<2x3xf32>) -> tensor<3x1x2xf32>
  %2 = plait.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = plait.broadcast_to %y : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %4 = plait.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  // Negative steps: [4:0:-2] takes 4 and 2; [0:4:3] takes 0 and 3.
  %5 = plait.slice %z {starts = array<i64: 4, 0>, ends = array<i64: 0, 4>, steps = array<i64: -2, 3>} : (tensor<5x4xi64>) -> tensor<2x2xi64>
  // end = -1 with a negative step runs through index 0.
  %6 = plait.slice %z {starts = array<i64: 4, 3>, ends = array<i64: -1, -1>, steps = array<i64: -1, -3>} : (tensor<5x4xi64>) -> tensor<5x2xi64>
  // Empty slices are allowed.
  %7 = plait.slice %x {starts = array<i64: 1, 2>, ends = array<i64: 1, 3>, steps = array<i64: 1, 5>} : (tensor<2x3xf32>) -> tensor<0x1xf32>
  %8 = plait.pad %x {pads = array<i64: 0, 1, 2, 3>} : (tensor<2x3xf32>) -> tensor<4x7xf32>
  %9 = plait.pad %z {pads = array<i64: 1, 0, 0, 0>, value = -1.0 : f64} : (tensor<5x4xi64>) -> tensor<6x4xi64>
  // An i1 tensor pads with 0 or 1.
  %10 = plait.pad %bb {pads = array<i64: 0, 0, 1, 1>, value = 1.0 : f64} : (tensor<2x3xi1>) -> tensor<3x4xi1>
  %11 = plait.concat %x, %x, %x {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  %12 = plait.concat %x, %col {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %13 = plait.concat %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %14:2 = plait.split %z {axis = 1 : i64, sizes = array<i64: 1, 3>} : (tensor<5x4xi64>) -> (tensor<5x1xi64>, tensor<5x3xi64>)
  // Zero-sized pieces are allowed.
  %15:3 = plait.split %z {axis = -2 : i64, sizes = array<i64: 2, 0, 3>} : (tensor<5x4xi64>) -> (tensor<2x4xi64>, tensor<0x4xi64>, tensor<3x4xi64>)
  // data[:axis] + indices.shape + data[axis+1:].
  %16 = plait.gather %t, %ids : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  %17 = plait.gather %t, %ids {axis = 1 : i64} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<100x2x8xf32>
  // Scalar indices drop the gathered axis.
  %18 = plait.gather %t, %ids32 {axis = -1 : i64} : (tensor<100x16xf32>, tensor<i32>) -> tensor<100xf32>
  %19 = plait.gather %bb, %ids32 : (tensor<2x3xi1>, tensor<i32>) -> tensor<3xi1>
  %20 = plait.cast %x : (tensor<2x3xf32>) -> tensor<2x3xi64>
  %21 = plait.cast %bb : (tensor<2x3xi1>) -> tensor<2x3xbf16>
  %22 = plait.cast %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %23 = plait.trilu %x : tensor<2x3xf32>
  %24 = plait.trilu %bb {upper = false, k = -1 : i64} : tensor<2x3xi1>
  return
}

// CHECK-LABEL: func.func @losses(
// CHECK-NEXT: %0 = plait.softmax_cross_entropy %arg0, %arg1 : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: %1 = plait.softmax_cross_entropy %arg0, %arg1, %arg4 {ignore_index = -100 : i64, reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<8xf32>
// CHECK-NEXT: %2 = plait.softmax_cross_entropy %arg2, %arg3 {reduction = "none"} : (tensor<2x10x4x4xf16>, tensor<2x4x4xi32>) -> tensor<2x4x4xf16>
// CHECK-NEXT: %3 = plait.nll_loss %arg0, %arg1 {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK-NEXT: %4 = plait.nll_loss %arg2, %arg3 : (tensor<2x10x4x4xf16>, tensor<2x4x4xi32>) -> tensor<f16>
// CHECK-NEXT: return
func.func @losses(%logits: tensor<8x10xf32>, %labels: tensor<8xi64>, %img: tensor<2x10x4x4xf16>, %mask: tensor<2x4x4xi32>, %w: tensor<10xf32>) {
  %0 = plait.softmax_cross_entropy %logits, %labels : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  // reduction = "none" gives one loss per target; "mean" and "sum" give a scalar.
  %1 = plait.softmax_cross_entropy %logits, %labels, %w {reduction = "none", ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<8xf32>
  %2 = plait.softmax_cross_entropy %img, %mask {reduction = "none"} : (tensor<2x10x4x4xf16>, tensor<2x4x4xi32>) -> tensor<2x4x4xf16>
  %3 = plait.nll_loss %logits, %labels {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %4 = plait.nll_loss %img, %mask {reduction = "mean"} : (tensor<2x10x4x4xf16>, tensor<2x4x4xi32>) -> tensor<f16>
  return
}
