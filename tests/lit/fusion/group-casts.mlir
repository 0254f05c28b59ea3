// RUN: plait-opt --plait-group-casts --split-input-file %s | FileCheck %s
// RUN: plait-opt --plait-group-casts=span=2 --split-input-file %s | FileCheck %s --check-prefix=SPAN

// A bf16-mixed forward casts each f32 parameter to bf16 before its first use, the params
// defined along the way. The three casts of params become one grouped_cast where the first
// stood, the params they read moved before it; the cast of a computed value (%n) and the
// cast to an integer stay. With span=2 only the first two (two ops apart) are grouped.
// CHECK: module attributes {plait.group_casts = {casts = 3 : i64, kernels = 1 : i64}}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: %[[W:.*]] = plait.param "w"
// CHECK-NEXT: %[[B:.*]] = plait.param "b"
// CHECK-NEXT: %[[V:.*]] = plait.param "v"
// CHECK-NEXT: %[[G:.*]]:3 = plait.grouped_cast %[[W]], %[[B]], %[[V]] : (tensor<4x8xf32>, tensor<8xf32>, tensor<8x2xf32>) -> (tensor<4x8xbf16>, tensor<8xbf16>, tensor<8x2xbf16>)
// CHECK-NEXT: %[[M:.*]] = plait.matmul %arg0, %[[G]]#0
// CHECK-NEXT: %[[S:.*]] = plait.add %[[M]], %[[G]]#1
// CHECK-NEXT: %[[N:.*]] = plait.neg %[[S]]
// CHECK-NEXT: plait.cast %[[N]]
// CHECK-NEXT: plait.matmul %[[S]], %[[G]]#2
// CHECK-NEXT: plait.param "i"
// CHECK-NEXT: plait.cast %{{.*}} : (tensor<4xf32>) -> tensor<4xi64>
// SPAN: plait.group_casts = {casts = 2 : i64, kernels = 1 : i64}
// SPAN: plait.grouped_cast %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>)
func.func @forward(%x: tensor<2x4xbf16>) -> (tensor<2x8xf32>, tensor<2x2xbf16>, tensor<4xi64>) {
  %w = plait.param "w" {init = "zeros"} : tensor<4x8xf32>
  %wb = plait.cast %w : (tensor<4x8xf32>) -> tensor<4x8xbf16>
  %b = plait.param "b" {init = "zeros"} : tensor<8xf32>
  %bb = plait.cast %b : (tensor<8xf32>) -> tensor<8xbf16>
  %m = plait.matmul %x, %wb : (tensor<2x4xbf16>, tensor<4x8xbf16>) -> tensor<2x8xbf16>
  %s = plait.add %m, %bb : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  %n = plait.neg %s : tensor<2x8xbf16>
  %nf = plait.cast %n : (tensor<2x8xbf16>) -> tensor<2x8xf32>
  %v = plait.param "v" {init = "zeros"} : tensor<8x2xf32>
  %vb = plait.cast %v : (tensor<8x2xf32>) -> tensor<8x2xbf16>
  %o = plait.matmul %s, %vb : (tensor<2x8xbf16>, tensor<8x2xbf16>) -> tensor<2x2xbf16>
  %i = plait.param "i" {init = "zeros"} : tensor<4xf32>
  %ii = plait.cast %i : (tensor<4xf32>) -> tensor<4xi64>
  return %nf, %o, %ii : tensor<2x8xf32>, tensor<2x2xbf16>, tensor<4xi64>
}
