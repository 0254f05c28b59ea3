// The op interface through which reverse-mode autodiff asks each op for its VJP.
#ifndef PLAIT_VJP_INTERFACE_TD
#define PLAIT_VJP_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Plait_VJPOpInterface : OpInterface<"VJPOpInterface"> {
  let cppNamespace = "::plait";
  let description = [{
    An op that can build its vector-Jacobian product: given the gradients of its results
    (a null Value where a result has no gradient), it builds, at the builder's insertion
    point, the gradients of its operands. An operand that gets no gradient (indices,
    integer or boolean values, piecewise-constant ops) is left null. Implemented for every
    differentiable plait op in ir/VJP.cpp (as external models, registered by
    `registerVJPInterfaces`).
  }];
  let methods = [
    InterfaceMethod<
      "Builds operand gradients from result gradients; fails with a diagnostic when this "
      "op cannot be differentiated in this configuration.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder, "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // PLAIT_VJP_INTERFACE_TD
