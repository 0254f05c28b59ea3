// RUN: plait-opt %s --plait-fuse-norm | FileCheck %s

// plait-fuse-norm: decomposed layer norms and RMS norms become one op each; chains that are
// something else, or whose intermediates other ops read, stay as they are.
// CHECK: module attributes {plait.fuse_norm = {batch_norm = 0 : i64, batch_norm_ops = 0 : i64, layer_norm = 3 : i64, ops = 43 : i64, residual_adds = 0 : i64, rms_norm = 3 : i64, sync_batch_norm = 0 : i64}}

// PyTorch's export of nn.LayerNorm below opset 17: mean, sub, pow 2, mean, + eps, sqrt, div,
// * gamma, + beta.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT: %[[G:.*]] = plait.param "ln.weight"
// CHECK-NEXT: %[[B:.*]] = plait.param "ln.bias"
// CHECK-NEXT: %[[Y:.*]] = plait.layer_norm %arg0, %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %g = plait.param "ln.weight" {init = "ones"} : tensor<8xf32>
  %b = plait.param "ln.bias" {init = "zeros"} : tensor<8xf32>
  %m = plait.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %d = plait.sub %x, %m : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %two = plait.constant dense<2.0> : tensor<f32>
  %p = plait.pow %d, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %v = plait.reduce_mean %p {axes = array<i64: 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %s = plait.sqrt %ve : tensor<2x3x1xf32>
  %n = plait.div %d, %s : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %gn = plait.mul %n, %g : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %y = plait.add %b, %gn : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// Over the last two axes, squared by a product, divided through rsqrt, no affine part: the
// scale is a constant of ones. x's other reader is fine.
// CHECK-LABEL: func.func @two_axes_rsqrt
// CHECK-NEXT: %[[ONES:.*]] = plait.constant dense<1.000000e+00> : tensor<3x8xf32>
// CHECK-NEXT: %[[Y:.*]] = plait.layer_norm %arg0, %[[ONES]] {axis = 1 : i64, epsilon = 0.0010000000474974513 : f64} : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[R:.*]] = plait.add %[[Y]], %arg0
// CHECK-NEXT: return %[[R]]
func.func @two_axes_rsqrt(%x: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %m = plait.reduce_mean %x {axes = array<i64: 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32>
  %d = plait.sub %x, %m : (tensor<2x3x8xf32>, tensor<2x1x1xf32>) -> tensor<2x3x8xf32>
  %p = plait.mul %d, %d : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %v = plait.reduce_mean %p {axes = array<i64: 2, 1>} : (tensor<2x3x8xf32>) -> tensor<2x1x1xf32>
  %eps = plait.constant dense<1.0e-3> : tensor<1x1x1xf32>
  %ve = plait.add %eps, %v : (tensor<1x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %r = plait.rsqrt %ve : tensor<2x1x1xf32>
  %n = plait.mul %r, %d : (tensor<2x1x1xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %y = plait.add %n, %x : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// LLaMA's RMS norm as exported: x * reciprocal(sqrt(mean(x^2) + eps)) * gamma.
// CHECK-LABEL: func.func @rms_norm
// CHECK-NEXT: %[[G:.*]] = plait.param "norm.weight"
// CHECK-NEXT: %[[Y:.*]] = plait.rms_norm %arg0, %[[G]] {axis = 1 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %g = plait.param "norm.weight" {init = "ones"} : tensor<16xf32>
  %two = plait.constant dense<2.0> : tensor<f32>
  %p = plait.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v = plait.reduce_mean %p {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %eps = plait.constant dense<1.0e-6> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = plait.sqrt %ve : tensor<4x1xf32>
  %r = plait.reciprocal %s : tensor<4x1xf32>
  %n = plait.mul %x, %r : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = plait.mul %g, %n : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// PyTorch's torch.rsqrt as exported: 1 / sqrt(.).
// CHECK-LABEL: func.func @rms_norm_unit_over
// CHECK-NEXT: %[[G:.*]] = plait.param "norm.weight"
// CHECK-NEXT: %[[Y:.*]] = plait.rms_norm %arg0, %[[G]] {axis = 1 : i64
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_unit_over(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %g = plait.param "norm.weight" {init = "ones"} : tensor<16xf32>
  %two = plait.constant dense<2.0> : tensor<f32>
  %p = plait.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v = plait.reduce_mean %p {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %eps = plait.constant dense<1.0e-6> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = plait.sqrt %ve : tensor<4x1xf32>
  %one = plait.constant dense<1.0> : tensor<f32>
  %r = plait.div %one, %s : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = plait.mul %x, %r : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = plait.mul %n, %g : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// x - mean(x) read by something else too: an RMS norm of the difference (exact: its mean is
// what the variance is of), the subtraction kept for its other reader. The bias add after an
// RMS norm stays.
// CHECK-LABEL: func.func @difference_read_twice
// CHECK: %[[D:.*]] = plait.sub %arg0
// CHECK-NEXT: %[[Y:.*]] = plait.rms_norm %[[D]], %{{.*}} {axis = 1 : i64
// CHECK-NEXT: %[[Z:.*]] = plait.add %[[Y]], %{{.*}}
// CHECK-NEXT: return %[[Z]], %[[D]]
func.func @difference_read_twice(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %g = plait.param "g" {init = "ones"} : tensor<16xf32>
  %b = plait.param "b" {init = "zeros"} : tensor<16xf32>
  %m = plait.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %d = plait.sub %x, %m : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %p = plait.mul %d, %d : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %v = plait.reduce_mean %p {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = plait.sqrt %ve : tensor<4x1xf32>
  %n = plait.div %d, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %gn = plait.mul %n, %g : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = plait.add %gn, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y, %d : tensor<4x16xf32>, tensor<4x16xf32>
}

// A gamma that is not of the normalised shape stays a multiply of its own.
// CHECK-LABEL: func.func @gamma_per_row
// CHECK: %[[Y:.*]] = plait.layer_norm %arg0, %{{.*}} {axis = 1 : i64
// CHECK-NEXT: plait.mul %[[Y]], %arg1
func.func @gamma_per_row(%x: tensor<4x16xf32>, %g: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %m = plait.reduce_mean %x {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %d = plait.sub %x, %m : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %p = plait.mul %d, %d : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %v = plait.reduce_mean %p {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = plait.sqrt %ve : tensor<4x1xf32>
  %n = plait.div %d, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = plait.mul %n, %g : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// Left alone: a mean over a leading axis, a variance read twice, an epsilon that is not a
// constant, an exponent of 3.
// CHECK-LABEL: func.func @not_norms
// CHECK-NOT: plait.layer_norm
// CHECK-NOT: plait.rms_norm
// CHECK: return
func.func @not_norms(%x: tensor<4x16xf32>, %e: tensor<f32>) -> (tensor<16xf32>, tensor<4x16xf32>, tensor<4x1xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %two = plait.constant dense<2.0> : tensor<f32>
  %three = plait.constant dense<3.0> : tensor<f32>
  // over axis 0
  %p0 = plait.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v0 = plait.reduce_mean %p0 {axes = array<i64: 0>} : (tensor<4x16xf32>) -> tensor<1x16xf32>
  %a0 = plait.add %v0, %eps : (tensor<1x16xf32>, tensor<f32>) -> tensor<1x16xf32>
  %s0 = plait.sqrt %a0 : tensor<1x16xf32>
  %n0 = plait.div %x, %s0 : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %r0 = plait.reduce_sum %n0 {axes = array<i64: 0>, keepdims = false} : (tensor<4x16xf32>) -> tensor<16xf32>
  // the variance returned too
  %p1 = plait.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v1 = plait.reduce_mean %p1 {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %a1 = plait.add %v1, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s1 = plait.sqrt %a1 : tensor<4x1xf32>
  %n1 = plait.div %x, %s1 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  // epsilon an argument
  %p2 = plait.pow %x, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v2 = plait.reduce_mean %p2 {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %a2 = plait.add %v2, %e : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s2 = plait.sqrt %a2 : tensor<4x1xf32>
  %n2 = plait.div %x, %s2 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  // cubed
  %p3 = plait.pow %x, %three : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %v3 = plait.reduce_mean %p3 {axes = array<i64: 1>} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %a3 = plait.add %v3, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s3 = plait.sqrt %a3 : tensor<4x1xf32>
  %n3 = plait.div %x, %s3 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %r0, %n1, %v1, %n2, %n3 : tensor<16xf32>, tensor<4x16xf32>, tensor<4x1xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}
