// A gather with padding_idx (nn.Embedding's): the lookups of the padding row send no
// gradient, for its index p and for p - n (the same row counted from the end); the forward
// is the plain gather.
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' | FileCheck %s

// CHECK:      %[[TABLE:.*]] = plait.param "emb.weight"
// CHECK-NEXT: %[[E:.*]] = plait.gather %[[TABLE]], %arg0 {padding_idx = -1 : i64} : (tensor<6x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32>
// CHECK:      %[[P:.*]] = plait.constant dense<5> : tensor<i64>
// CHECK-NEXT: %[[EQP:.*]] = plait.equal %arg0, %[[P]]
// CHECK-NEXT: %[[Q:.*]] = plait.constant dense<-1> : tensor<i64>
// CHECK-NEXT: %[[EQQ:.*]] = plait.equal %arg0, %[[Q]]
// CHECK:      %[[PAD:.*]] = plait.or %[[EQP]], %[[EQQ]] : (tensor<2x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK:      %[[FLAGS:.*]] = plait.reshape %[[PAD]] : (tensor<2x4xi1>) -> tensor<2x4x1xi1>
// CHECK:      %[[KEPT:.*]] = plait.where %[[FLAGS]], %{{.*}}, %[[G:.*]] : (tensor<2x4x1xi1>, tensor<f32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK:      plait.gather_grad %[[KEPT]], %arg0 : (tensor<2x4x3xf32>, tensor<2x4xi64>) -> tensor<6x3xf32>
module {
  func.func @main(%ids: tensor<2x4xi64>) -> tensor<f32> {
    %w = plait.param "emb.weight" {init = "normal:1.0"} : tensor<6x3xf32>
    %e = plait.gather %w, %ids {padding_idx = -1 : i64} : (tensor<6x3xf32>, tensor<2x4xi64>) -> tensor<2x4x3xf32>
    %s = plait.mul %e, %e : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    %l = plait.reduce_sum %s {axes = array<i64>, keepdims = false} : (tensor<2x4x3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}
