// RUN: plait-opt %s --plait-fuse-norm | FileCheck %s
// RUN: plait-opt %s --plait-fuse-norm=batch-norm=false | FileCheck %s --check-prefix=OFF
// RUN: plait-opt %s --plait-fuse-norm=sync-batch-norm=false | FileCheck %s --check-prefix=NOSYNC

// plait-fuse-norm: a decomposed training-mode BatchNorm (the statistics over every axis but 1)
// becomes one plait.batch_norm; its mean and variance stay readable by the running statistics.
// Chains that are something else stay as they are.
// CHECK: module attributes {plait.fuse_norm = {batch_norm = 4 : i64, batch_norm_ops = 33 : i64, layer_norm = 0 : i64, ops = 0 : i64, residual_adds = 0 : i64, rms_norm = 0 : i64, sync_batch_norm = 1 : i64}}
// OFF: module attributes {plait.fuse_norm = {batch_norm = 0 : i64, batch_norm_ops = 0 : i64, layer_norm = 0 : i64, ops = 0 : i64, residual_adds = 0 : i64, rms_norm = 0 : i64, sync_batch_norm = 0 : i64}}
// NOSYNC: module attributes {plait.fuse_norm = {batch_norm = 3 : i64, batch_norm_ops = 24 : i64, layer_norm = 0 : i64, ops = 0 : i64, residual_adds = 0 : i64, rms_norm = 0 : i64, sync_batch_norm = 0 : i64}}
// OFF-NOT: plait.batch_norm

// As the ONNX importer writes BatchNormalization with training_mode: gamma and beta reshaped to
// [C, 1, 1], and the running mean and variance read from the two means after y.
// CHECK-LABEL: func.func @imported
// CHECK: %[[G:.*]] = plait.param "bn.weight"
// CHECK-NEXT: %[[B:.*]] = plait.param "bn.bias"
// CHECK-NEXT: %[[Y:.*]], %[[M:.*]], %[[V:.*]] = plait.batch_norm %arg0, %[[G]], %[[B]] {epsilon = 9.9999997473787516E-6 : f64} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-NEXT: %[[VK:.*]] = plait.reshape %[[V]] : (tensor<3xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT: %[[MK:.*]] = plait.reshape %[[M]] : (tensor<3xf32>) -> tensor<1x3x1x1xf32>
// CHECK-NEXT: %[[RM:.*]] = plait.reshape %[[MK]] : (tensor<1x3x1x1xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[RV:.*]] = plait.reshape %[[VK]] : (tensor<1x3x1x1xf32>) -> tensor<3xf32>
// CHECK-NEXT: return %[[Y]], %[[RM]], %[[RV]]
func.func @imported(%x: tensor<2x3x4x4xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %m = plait.reduce_mean %x {axes = array<i64: 0, 2, 3>} : (tensor<2x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %c = plait.sub %x, %m : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %sq = plait.mul %c, %c : (tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>) -> tensor<2x3x4x4xf32>
  %v = plait.reduce_mean %sq {axes = array<i64: 0, 2, 3>} : (tensor<2x3x4x4xf32>) -> tensor<1x3x1x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<1x3x1x1xf32>, tensor<f32>) -> tensor<1x3x1x1xf32>
  %r = plait.rsqrt %ve : tensor<1x3x1x1xf32>
  %n = plait.mul %c, %r : (tensor<2x3x4x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %g = plait.param "bn.weight" {init = "ones"} : tensor<3xf32>
  %b = plait.param "bn.bias" {init = "zeros"} : tensor<3xf32>
  %gc = plait.reshape %g : (tensor<3xf32>) -> tensor<3x1x1xf32>
  %bc = plait.reshape %b : (tensor<3xf32>) -> tensor<3x1x1xf32>
  %gn = plait.mul %n, %gc : (tensor<2x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %y = plait.add %gn, %bc : (tensor<2x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<2x3x4x4xf32>
  %rm = plait.reshape %m : (tensor<1x3x1x1xf32>) -> tensor<3xf32>
  %rv = plait.reshape %v : (tensor<1x3x1x1xf32>) -> tensor<3xf32>
  return %y, %rm, %rv : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// BatchNorm1d over [N, C] (the statistics over axis 0 alone), squared by pow, divided by the
// square root, gamma [1, C] without a reshape to take apart, no beta: the bias is zeros.
// CHECK-LABEL: func.func @rank2
// CHECK-NEXT: %[[G:.*]] = plait.param "bn1d.weight"
// CHECK-NEXT: %[[G1:.*]] = plait.reshape %[[G]] : (tensor<1x5xf32>) -> tensor<5xf32>
// CHECK-NEXT: %[[Z:.*]] = plait.constant dense<0.000000e+00> : tensor<5xf32>
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = plait.batch_norm %arg0, %[[G1]], %[[Z]] {epsilon = 0.0010000000474974513 : f64} : (tensor<8x5xf32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<8x5xf32>, tensor<5xf32>, tensor<5xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @rank2(%x: tensor<8x5xf32>) -> tensor<8x5xf32> {
  %g = plait.param "bn1d.weight" {init = "ones"} : tensor<1x5xf32>
  %m = plait.reduce_mean %x {axes = array<i64: 0>} : (tensor<8x5xf32>) -> tensor<1x5xf32>
  %c = plait.sub %x, %m : (tensor<8x5xf32>, tensor<1x5xf32>) -> tensor<8x5xf32>
  %two = plait.constant dense<2.0> : tensor<f32>
  %sq = plait.pow %c, %two : (tensor<8x5xf32>, tensor<f32>) -> tensor<8x5xf32>
  %v = plait.reduce_mean %sq {axes = array<i64: 0>} : (tensor<8x5xf32>) -> tensor<1x5xf32>
  %eps = plait.constant dense<1.0e-3> : tensor<f32>
  %ve = plait.add %eps, %v : (tensor<f32>, tensor<1x5xf32>) -> tensor<1x5xf32>
  %s = plait.sqrt %ve : tensor<1x5xf32>
  %n = plait.div %c, %s : (tensor<8x5xf32>, tensor<1x5xf32>) -> tensor<8x5xf32>
  %y = plait.mul %g, %n : (tensor<1x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  return %y : tensor<8x5xf32>
}

// f64, no affine part at all: scale ones, bias zeros.
// CHECK-LABEL: func.func @plain_f64
// CHECK-NEXT: %[[ONE:.*]] = plait.constant dense<1.000000e+00> : tensor<2xf64>
// CHECK-NEXT: %[[Z:.*]] = plait.constant dense<0.000000e+00> : tensor<2xf64>
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = plait.batch_norm %arg0, %[[ONE]], %[[Z]] : (tensor<4x2x3xf64>, tensor<2xf64>, tensor<2xf64>)
// CHECK-NEXT: return %[[Y]]
func.func @plain_f64(%x: tensor<4x2x3xf64>) -> tensor<4x2x3xf64> {
  %m = plait.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<4x2x3xf64>) -> tensor<1x2x1xf64>
  %c = plait.sub %x, %m : (tensor<4x2x3xf64>, tensor<1x2x1xf64>) -> tensor<4x2x3xf64>
  %sq = plait.mul %c, %c : (tensor<4x2x3xf64>, tensor<4x2x3xf64>) -> tensor<4x2x3xf64>
  %v = plait.reduce_mean %sq {axes = array<i64: 0, 2>} : (tensor<4x2x3xf64>) -> tensor<1x2x1xf64>
  %eps = plait.constant dense<1.0e-5> : tensor<f64>
  %ve = plait.add %v, %eps : (tensor<1x2x1xf64>, tensor<f64>) -> tensor<1x2x1xf64>
  %r = plait.rsqrt %ve : tensor<1x2x1xf64>
  %y = plait.mul %c, %r : (tensor<4x2x3xf64>, tensor<1x2x1xf64>) -> tensor<4x2x3xf64>
  return %y : tensor<4x2x3xf64>
}

// Not a BatchNorm: the centred values have another reader (they would have to be kept).
// CHECK-LABEL: func.func @centred_read
// CHECK-NOT: plait.batch_norm
// CHECK: return
func.func @centred_read(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %m = plait.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %c = plait.sub %x, %m : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  %sq = plait.mul %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = plait.reduce_mean %sq {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
  %r = plait.rsqrt %ve : tensor<1x3x1xf32>
  %y = plait.mul %c, %r : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  return %y, %c : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// Not a BatchNorm: the statistics over axes 0 and 1 (an instance of something else).
// CHECK-LABEL: func.func @other_axes
// CHECK-NOT: plait.batch_norm
// CHECK: return
func.func @other_axes(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %m = plait.reduce_mean %x {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<1x1x4xf32>
  %c = plait.sub %x, %m : (tensor<2x3x4xf32>, tensor<1x1x4xf32>) -> tensor<2x3x4xf32>
  %sq = plait.mul %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = plait.reduce_mean %sq {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<1x1x4xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<1x1x4xf32>, tensor<f32>) -> tensor<1x1x4xf32>
  %r = plait.rsqrt %ve : tensor<1x1x4xf32>
  %y = plait.mul %c, %r : (tensor<2x3x4xf32>, tensor<1x1x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// Not fused: the mean is read (by the running mean) before the chain's last op, where the
// fused op would stand.
// CHECK-LABEL: func.func @mean_read_early
// CHECK-NOT: plait.batch_norm
// CHECK: return
func.func @mean_read_early(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>) {
  %m = plait.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %rm = plait.reshape %m : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %c = plait.sub %x, %m : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  %sq = plait.mul %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = plait.reduce_mean %sq {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
  %r = plait.rsqrt %ve : tensor<1x3x1xf32>
  %y = plait.mul %c, %r : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  return %y, %rm : tensor<2x3x4xf32>, tensor<3xf32>
}

// A SyncBatchNorm's statistics (a sync_mean the only reader of each mean) fuse too, as a
// batch_norm {sync}, which plait-shard lowers (sharding/sync-batch-norm.mlir); off:
// sync-batch-norm=false.
// CHECK-LABEL: func.func @synchronised
// CHECK-NEXT: %[[ONES:.*]] = plait.constant dense<1.000000e+00> : tensor<3xf32>
// CHECK-NEXT: %[[ZEROS:.*]] = plait.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = plait.batch_norm %arg0, %[[ONES]], %[[ZEROS]] {epsilon = 9.99999974{{[0-9]*}}E-6 : f64, sync}
// CHECK-NEXT: return %[[Y]]
// NOSYNC-LABEL: func.func @synchronised
// NOSYNC-NOT: plait.batch_norm
// NOSYNC: plait.sync_mean
// NOSYNC: plait.sync_mean
// NOSYNC: return
func.func @synchronised(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %lm = plait.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %m = plait.sync_mean %lm : tensor<1x3x1xf32>
  %c = plait.sub %x, %m : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  %sq = plait.mul %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %lv = plait.reduce_mean %sq {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %v = plait.sync_mean %lv : tensor<1x3x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
  %r = plait.rsqrt %ve : tensor<1x3x1xf32>
  %y = plait.mul %c, %r : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// Not fused: only the mean synchronised (not a SyncBatchNorm's statistics).
// CHECK-LABEL: func.func @half_synchronised
// CHECK-NOT: plait.batch_norm
// CHECK: return
func.func @half_synchronised(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %lm = plait.reduce_mean %x {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %m = plait.sync_mean %lm : tensor<1x3x1xf32>
  %c = plait.sub %x, %m : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  %sq = plait.mul %c, %c : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v = plait.reduce_mean %sq {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  %eps = plait.constant dense<1.0e-5> : tensor<f32>
  %ve = plait.add %v, %eps : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
  %r = plait.rsqrt %ve : tensor<1x3x1xf32>
  %y = plait.mul %c, %r : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
