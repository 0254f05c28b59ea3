// Every plait pass, declared once; TableGen writes the declarations and create functions.
#ifndef PLAIT_PASSES_TD
#define PLAIT_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintMemoryPlanPass : Pass<"plait-test-print-memory-plan", "mlir::ModuleOp"> {
  let summary = "Print the arena plan of every function (for tests)";
  let description = [{
    Runs the memory-plan analysis (liveness over program order, then offsets in one arena)
    and prints, per function, the arena size, the liveness lower bound and one line per
    buffer:

    ```
    memory-plan @main: arena = 192, lower_bound = 192, values = 3
      %0 "x" input: offset = 0, size = 64, live = [0, 1]
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64", "Byte alignment of every buffer">
  ];
}

def BuildTrainStepPass : Pass<"plait-build-train-step", "mlir::ModuleOp"> {
  let summary = "Turn a forward model into one training step: loss, backward, optimizer";
  let description = [{
    The entry function's first result must be the scalar loss. Every `plait.param` not
    matched by `freeze` is trainable. The pass builds the gradients (reverse-mode autodiff
    through the VJP interface, with no work for values that do not reach a param), clips
    them by global norm when asked, appends one optimizer update per param with its state
    as `plait.state` tensors and the step's learning rate as `plait.hyper "lr"`, stores the
    new values with `plait.assign`, and returns only the loss. The learning-rate schedule
    is recorded as the module attribute `plait.lr_schedule` for the plan.

    Before:
    ```mlir
    func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
      %w = plait.param "w" {init = "ones"} : tensor<4x1xf32>
      %y = plait.matmul %x, %w : (tensor<2x4xf32>, tensor<4x1xf32>) -> tensor<2x1xf32>
      %l = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<2x1xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (sgd): the same forward ops, then `transpose`/`matmul` for the gradient of `w`,
    `plait.sgd_update %w, %dw, %lr, %step` and `plait.assign %w, %w_new`.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"", "sgd or adamw">,
    Option<"lr", "lr", "double", "1.0e-3", "base learning rate">,
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", "1.0e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "weight decay; negative means the optimizer's PyTorch default (sgd 0, adamw 0.01)">,
    Option<"momentum", "momentum", "double", "0.0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"freeze", "freeze", "std::string", "\"\"", "regex of param names not to train">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "clip gradients to this global L2 norm (0: off)">,
    Option<"schedule", "schedule", "std::string", "\"constant\"",
           "learning-rate schedule: constant, linear-warmup, cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0", "warm-up steps of the schedule">,
    Option<"totalSteps", "total-steps", "int64_t", "0", "steps over which cosine decays">,
    Option<"minLr", "min-lr", "double", "0.0", "final learning rate of the cosine schedule">
  ];
}

#endif // PLAIT_PASSES_TD
