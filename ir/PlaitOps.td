// Operations of the plait dialect. Each op lowers to the runtime kernel of the same
// mnemonic; attribute names here are the names the runtime kernels read.
#ifndef PLAIT_OPS_TD
#define PLAIT_OPS_TD

include "ir/PlaitDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Sources: param and constant
//===----------------------------------------------------------------------===//

def Plait_ParamOp : Plait_Op<"param", [Pure]> {
  let summary = "a trainable tensor";
  let description = [{
    A named trainable tensor; the name identifies it in the plan, checkpoints and reports.
    Params of one name denote one tensor: within a block they must agree in type and
    initial value (copies, e.g. made by recomputation, are fine). The initial value is
    exactly one of:
    - `value`: data (e.g. an ONNX initializer) whose type equals the result type;
    - `init`, an initializer spec for shapes-only models: `zeros`, `ones` (any element
      type; false / true for i1), `normal:STD` (samples of N(0, STD^2)) or `uniform:BOUND`
      (samples of U(-BOUND, BOUND)); STD and BOUND are finite decimal numbers >= 0, and
      the random specs need a float element type. Random values are a pure function of
      (seed, name, element index), so every rank and every sharding sees the same tensor.

    A `buffer` is persistent but never trained (torch's buffers: BatchNorm's running mean and
    variance): the training step gives it no gradient and no optimizer update, only the new
    value a function result marked `plait.buffer = NAME` carries (plait-build-train-step
    assigns it at the end of the step). It is kept whole on every rank, and saved and restored
    with the params.

    ```mlir
    %w = plait.param "fc1.weight" {value = dense<0.5> : tensor<4x8xf32>} : tensor<4x8xf32>
    %b = plait.param "fc1.bias" {init = "zeros"} : tensor<8xf32>
    %m = plait.param "bn.running_mean" {buffer, init = "zeros"} : tensor<8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<ElementsAttr>:$value,
                       OptionalAttr<StrAttr>:$init, UnitAttr:$buffer);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Plait_ConstantOp : Plait_Op<"constant", [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a constant tensor";
  let description = [{
    The result type is the type of `value`.

    ```mlir
    %c = plait.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

// The other op families, each in its own file.
include "ir/PlaitElementwiseOps.td"
include "ir/PlaitReductionOps.td"
include "ir/PlaitLinalgOps.td"
include "ir/PlaitMovementOps.td"
include "ir/PlaitLossOps.td"

#endif // PLAIT_OPS_TD
