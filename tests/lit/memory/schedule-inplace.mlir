// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9' --plait-schedule | FileCheck %s
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9' --plait-schedule --plait-test-print-memory-plan | FileCheck %s --check-prefix=PLAN
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9' --plait-schedule --plait-test-print-memory-plan='in-place=false' | FileCheck %s --check-prefix=COPY

// plait-schedule: hyper-parameters and optimizer state move to the start; the update of
// layers.1.weight moves up to right after its gradient, before the backward of layers.0,
// so that gradient dies at once (layers.0's update already follows its own gradient).
// CHECK: plait.schedule = 1 : i64
// CHECK: func.func @main
// CHECK-NEXT: plait.hyper "lr"
// CHECK-NEXT: plait.hyper "step"
// CHECK-NEXT: plait.state "layers.0.weight.momentum_buffer"
// CHECK-NEXT: plait.state "layers.1.weight.momentum_buffer"
// CHECK: %[[DW1:.*]] = plait.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT: plait.sgd_update %{{.*}}, %[[DW1]]
// CHECK-NEXT: plait.mul
// CHECK: %[[DW0:.*]] = plait.matmul
// CHECK-NEXT: plait.sgd_update %{{.*}}, %[[DW0]]
// CHECK-NEXT: plait.assign

// The memory plan writes every update result into the param or momentum buffer it replaces
// (no buffer of its own, no copy after the step); here the arena is the same either way, as
// the copies fit into bytes freed by the gradients.
// PLAN: memory-plan @main: arena = 960
// PLAN-COUNT-4: "sgd_update" activation: {{.*}}, in place of %{{[0-9]+}}
// COPY: memory-plan @main: arena = 960
// COPY-NOT: "sgd_update" activation: {{.*}}, in place of
func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}, %y: tensor<4xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w0 = plait.param "layers.0.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %w1 = plait.param "layers.1.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %h = plait.matmul %x, %w0 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %t = plait.tanh %h : tensor<4x3xf32>
  %o = plait.matmul %t, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %l = plait.softmax_cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
