// RUN: plait-opt %s --plait-build-train-step='optimizer=rmsprop centered=true momentum=0.9' --plait-schedule --plait-test-print-memory-plan | FileCheck %s --check-prefix=RMSPROP
// RUN: plait-opt %s --plait-build-train-step='optimizer=rmsprop centered=true momentum=0.9' --plait-schedule --plait-group-updates --plait-test-print-memory-plan | FileCheck %s --check-prefix=GROUPED
// RUN: plait-opt %s --plait-build-train-step='optimizer=adagrad' --plait-schedule --plait-test-print-memory-plan | FileCheck %s --check-prefix=ADAGRAD
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw amsgrad=true' --plait-schedule --plait-group-updates --plait-test-print-memory-plan | FileCheck %s --check-prefix=AMSGRAD
// RUN: plait-opt %s --plait-build-train-step='optimizer=nadam' --plait-schedule --plait-test-print-memory-plan | FileCheck %s --check-prefix=NADAM
// RUN: plait-opt %s --plait-build-train-step='optimizer=adadelta' --plait-schedule --plait-group-updates --plait-test-print-memory-plan | FileCheck %s --check-prefix=ADADELTA

// Every result of an RMSprop or Adagrad update (the new param and each state's new value) is
// planned in the bytes of the operand it replaces, as SGD's and AdamW's are: updated in place,
// nothing copied after the step. Two 3x3 params: RMSprop centered with momentum gives 4
// results each, Adagrad 2; grouped into one kernel, the same 8 results in place.
// RMSPROP: memory-plan @main
// RMSPROP-COUNT-8: "rmsprop_update" activation: {{.*}}, in place of %{{[0-9]+}}
// RMSPROP-NOT: "rmsprop_update" activation
// GROUPED: memory-plan @main
// GROUPED-COUNT-8: "grouped_update" activation: {{.*}}, in place of %{{[0-9]+}}
// GROUPED-NOT: "grouped_update" activation
// AMSGrad's max_exp_avg_sq, after lr and step, too: 4 results per param.
// AMSGRAD: memory-plan @main
// AMSGRAD-COUNT-8: "grouped_update" activation: {{.*}}, in place of %{{[0-9]+}}
// AMSGRAD-NOT: "grouped_update" activation
// The two-state updates (NAdam here, Adadelta grouped): 3 results per param, each in place.
// NADAM: memory-plan @main
// NADAM-COUNT-6: "nadam_update" activation: {{.*}}, in place of %{{[0-9]+}}
// NADAM-NOT: "nadam_update" activation
// ADADELTA: memory-plan @main
// ADADELTA-COUNT-6: "grouped_update" activation: {{.*}}, in place of %{{[0-9]+}}
// ADADELTA-NOT: "grouped_update" activation
// ADAGRAD: memory-plan @main
// ADAGRAD-COUNT-4: "adagrad_update" activation: {{.*}}, in place of %{{[0-9]+}}
// ADAGRAD-NOT: "adagrad_update" activation
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
