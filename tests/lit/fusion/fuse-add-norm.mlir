// RUN: plait-opt %s --split-input-file --plait-fuse-norm | FileCheck %s
// RUN: plait-opt %s --split-input-file --plait-fuse-norm=residual-adds=false | FileCheck %s --check-prefix=OFF

// plait-fuse-norm's residual adds: a norm whose input is an add of two values of the sum's
// type becomes one add_layer_norm / add_rms_norm, with the sum a result of its own.

// A pre-norm transformer's residual stream: h1 = h0 + a, y = layer_norm(h1), h1 read on.
// CHECK: module attributes {plait.fuse_norm = {batch_norm = 0 : i64, batch_norm_ops = 0 : i64, layer_norm = 0 : i64, ops = 0 : i64, residual_adds = 2 : i64, rms_norm = 0 : i64, sync_batch_norm = 0 : i64}}
// CHECK-LABEL: func.func @residual_stream
// CHECK-NEXT: %[[G:.*]] = plait.param "ln.weight"
// CHECK-NEXT: %[[B:.*]] = plait.param "ln.bias"
// CHECK-NEXT: %[[Y:.*]], %[[SUM:.*]] = plait.add_layer_norm %arg0, %arg1, %[[G]], %[[B]] {axis = -1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT: %[[S:.*]] = plait.param "rms.weight"
// CHECK-NEXT: %[[Y2:.*]], %[[SUM2:.*]] = plait.add_rms_norm %[[SUM]], %[[Y]], %[[S]] {axis = -1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT: return %[[Y2]], %[[SUM2]]
// OFF: module attributes {plait.fuse_norm = {batch_norm = 0 : i64, batch_norm_ops = 0 : i64, layer_norm = 0 : i64, ops = 0 : i64, residual_adds = 0 : i64, rms_norm = 0 : i64, sync_batch_norm = 0 : i64}}
// OFF-LABEL: func.func @residual_stream
// OFF-NOT: add_layer_norm
// OFF-NOT: add_rms_norm
// OFF: return
func.func @residual_stream(%h0: tensor<2x4x8xf32>, %a: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %h1 = plait.add %h0, %a : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %g = plait.param "ln.weight" {init = "ones"} : tensor<8xf32>
  %b = plait.param "ln.bias" {init = "zeros"} : tensor<8xf32>
  %y = plait.layer_norm %h1, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %h2 = plait.add %h1, %y : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %s = plait.param "rms.weight" {init = "ones"} : tensor<8xf32>
  %z = plait.rms_norm %h2, %s {axis = -1 : i64, epsilon = 1.0e-06 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %z, %h2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// The sum read before the norm: the fused op stands at the add when the scale precedes it,
// and the add stays when the scale is defined after it.
// CHECK: residual_adds = 1 : i64
// CHECK-LABEL: func.func @read_before_the_norm
// CHECK-NEXT: %[[G:.*]] = plait.param "early.weight"
// CHECK-NEXT: %[[Y:.*]], %[[SUM:.*]] = plait.add_layer_norm %arg0, %arg1, %[[G]] {axis = 1 : i64
// CHECK-NEXT: plait.exp %[[SUM]]
// CHECK: %[[S2:.*]] = plait.add %arg0, %arg1
// CHECK-NEXT: plait.exp %[[S2]]
// CHECK-NEXT: plait.param "late.weight"
// CHECK-NEXT: plait.layer_norm %[[S2]]
func.func @read_before_the_norm(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %g = plait.param "early.weight" {init = "ones"} : tensor<8xf32>
  %s = plait.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = plait.exp %s : tensor<4x8xf32>
  %y = plait.layer_norm %s, %g {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s2 = plait.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = plait.exp %s2 : tensor<4x8xf32>
  %g2 = plait.param "late.weight" {init = "ones"} : tensor<8xf32>
  %y2 = plait.layer_norm %s2, %g2 {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %e, %y, %e2, %y2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A broadcasting add (a position embedding added to every batch row) stays an add.
// CHECK: residual_adds = 0 : i64
// CHECK-LABEL: func.func @broadcast_add
// CHECK: plait.add %arg0, %arg1
// CHECK-NEXT: plait.layer_norm
func.func @broadcast_add(%x: tensor<2x4x8xf32>, %pos: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %s = plait.add %x, %pos : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %y = plait.layer_norm %s, %g {axis = -1 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
