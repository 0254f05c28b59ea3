// Elementwise ops of the plait dialect: unary maps, binary ops with numpy broadcasting, and where.
// Included by ir/PlaitOps.td, the dialect's one TableGen target; each op lowers to the
// runtime kernel of the same mnemonic.
#ifndef PLAIT_ELEMENTWISE_OPS_TD
#define PLAIT_ELEMENTWISE_OPS_TD

//===----------------------------------------------------------------------===//
// Elementwise unary ops (result type = operand type)
//===----------------------------------------------------------------------===//

// Marks the elementwise maps (unary, binary, where): each result element is computed from the
// operands' elements at its index, so the memory plan may store the result over an operand
// that dies at the op (ir/PlaitTraits.h).
def Plait_ElementwiseMap : NativeOpTrait<"ElementwiseMap"> {
  let cppNamespace = "::plait::traits";
}

class Plait_UnaryOp<string mnemonic, string doc, Type operandType = Plait_FloatTensor,
                    list<Trait> traits = []> :
    Plait_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType, Plait_ElementwiseMap],
                              traits)> {
  let summary = doc;
  // Extra semantics of one op, appended to the shared description.
  string semantics = "";
  let description = "Elementwise: " # doc # ". " # semantics # "The result has the operand's type. " #
                    "Float math follows IEEE 754 (NaN propagates, out-of-domain inputs give " #
                    "NaN, poles give +-inf); bf16 and f16 are computed in f32 and rounded " #
                    "to nearest even; integer arithmetic wraps (two's complement)." #
                    "\n\n```mlir\n%y = plait." # mnemonic # " %x : tensor<4xf32>\n```";
  let arguments = (ins operandType:$x);
  let results = (outs operandType:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Plait_ExpOp : Plait_UnaryOp<"exp", "e raised to x">;
def Plait_LogOp : Plait_UnaryOp<"log", "natural logarithm">;
def Plait_SqrtOp : Plait_UnaryOp<"sqrt", "square root">;
def Plait_RsqrtOp : Plait_UnaryOp<"rsqrt", "reciprocal square root, 1 / sqrt(x)">;
def Plait_ReciprocalOp : Plait_UnaryOp<"reciprocal", "1 / x">;
def Plait_ErfOp : Plait_UnaryOp<"erf", "Gauss error function">;
def Plait_TanhOp : Plait_UnaryOp<"tanh", "hyperbolic tangent">;
def Plait_SinOp : Plait_UnaryOp<"sin", "sine">;
def Plait_CosOp : Plait_UnaryOp<"cos", "cosine">;
def Plait_SigmoidOp : Plait_UnaryOp<"sigmoid", "1 / (1 + exp(-x))"> {
  let semantics = "Computed without overflow: e / (1 + e) with e = exp(x) for x < 0. ";
}
def Plait_SiluOp : Plait_UnaryOp<"silu", "x * sigmoid(x)">;
def Plait_SoftplusOp : Plait_UnaryOp<"softplus", "log(1 + exp(x))"> {
  let semantics = "Computed without overflow as max(x, 0) + log1p(exp(-|x|)). ";
}
def Plait_FloorOp : Plait_UnaryOp<"floor", "round toward negative infinity">;
def Plait_CeilOp : Plait_UnaryOp<"ceil", "round toward positive infinity">;
def Plait_RoundOp : Plait_UnaryOp<"round", "round to nearest, ties to even">;
def Plait_NegOp : Plait_UnaryOp<"neg", "-x", Plait_NumericTensor> {
  let semantics = "The most negative integer maps to itself. ";
}
def Plait_AbsOp : Plait_UnaryOp<"abs", "|x|", Plait_NumericTensor> {
  let semantics = "The most negative integer maps to itself. ";
}
def Plait_ReluOp : Plait_UnaryOp<"relu", "max(x, 0)", Plait_NumericTensor> {
  let semantics = "Computed as x < 0 ? 0 : x, so NaN stays NaN. ";
}
def Plait_SignOp : Plait_UnaryOp<"sign", "-1, 0 or 1 by the sign of x", Plait_NumericTensor> {
  let semantics = "-0.0 gives 0; NaN stays NaN. ";
}
def Plait_NotOp : Plait_UnaryOp<"not", "logical negation", Plait_BoolTensor>;

def Plait_GeluOp : Plait_Op<"gelu", [Pure, SameOperandsAndResultType, Plait_ElementwiseMap]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    Elementwise. `approximate` is "none" (the default) or "tanh":
    "none": x * 0.5 * (1 + erf(x / sqrt(2)));
    "tanh": x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).

    ```mlir
    %y = plait.gelu %x {approximate = "tanh"} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

class Plait_UnaryAlphaOp<string mnemonic, string doc, string alphaDefault> :
    Plait_Op<mnemonic, [Pure, SameOperandsAndResultType, Plait_ElementwiseMap]> {
  let summary = doc;
  let description = "Elementwise: " # doc # "; `alpha` defaults to " # alphaDefault #
                    " and is applied in the element type." #
                    "\n\n```mlir\n%y = plait." # mnemonic #
                    " %x {alpha = 0.1 : f64} : tensor<4xf32>\n```";
  let arguments = (ins Plait_FloatTensor:$x, DefaultValuedAttr<F64Attr, alphaDefault>:$alpha);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}
def Plait_LeakyReluOp : Plait_UnaryAlphaOp<"leaky_relu", "x if x >= 0 else alpha * x", "0.01">;
def Plait_EluOp : Plait_UnaryAlphaOp<"elu", "x if x > 0 else alpha * (exp(x) - 1)", "1.0">;

def Plait_HardSigmoidOp : Plait_Op<"hard_sigmoid",
    [Pure, SameOperandsAndResultType, Plait_ElementwiseMap]> {
  let summary = "max(0, min(1, alpha * x + beta))";
  let description = [{
    Elementwise; `alpha` defaults to 0.2 and `beta` to 0.5 (ONNX HardSigmoid).

    ```mlir
    %y = plait.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, DefaultValuedAttr<F64Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F64Attr, "0.5">:$beta);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Plait_ClampOp : Plait_Op<"clamp", [Pure, SameOperandsAndResultType, Plait_ElementwiseMap]> {
  let summary = "min(max(x, min), max)";
  let description = [{
    Elementwise. Bounds are f64 attributes, never NaN; an absent bound does not clamp.
    With min > max every element becomes max. For integer tensors the bounds act as
    ceil(min) and floor(max), saturated to the element type's range (exactly what
    clamping the real values would do). NaN elements stay NaN.

    ```mlir
    %y = plait.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_NumericTensor:$x, OptionalAttr<F64Attr>:$min, OptionalAttr<F64Attr>:$max);
  let results = (outs Plait_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops with numpy broadcasting
//===----------------------------------------------------------------------===//

class Plait_BinaryOp<string mnemonic, string doc, Type operandType = Plait_NumericTensor,
                     Type resultType = operandType> :
    Plait_Op<mnemonic, [Pure, InferTypeOpAdaptor, Plait_ElementwiseMap]> {
  let summary = doc;
  // Extra semantics of one op, appended to the shared description.
  string semantics = "";
  let description = "Elementwise with numpy broadcasting: " # doc # ". " # semantics #
                    "Both operands share an element type; the result has the broadcast " #
                    "shape (shapes are aligned at their last dimension, and each pair of " #
                    "sizes must be equal or contain a 1, e.g. 2x1x3 with 4x1 gives 2x4x3). " #
                    "Integer arithmetic wraps (two's complement); float math follows IEEE 754 " #
                    "and bf16/f16 are computed in f32." #
                    "\n\n```mlir\n%z = plait." # mnemonic #
                    " %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n```";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Plait_AddOp : Plait_BinaryOp<"add", "lhs + rhs">;
def Plait_SubOp : Plait_BinaryOp<"sub", "lhs - rhs">;
def Plait_MulOp : Plait_BinaryOp<"mul", "lhs * rhs">;
def Plait_DivOp : Plait_BinaryOp<"div", "lhs / rhs"> {
  let semantics = "Integer division truncates toward zero; an integer zero divisor is a " #
                  "runtime error; MIN / -1 wraps to MIN. ";
}
def Plait_PowOp : Plait_BinaryOp<"pow", "lhs raised to rhs"> {
  let semantics = "For integers a negative exponent gives the real result truncated toward " #
                  "zero (0 unless lhs is 1 or -1). ";
}
def Plait_MaxOp : Plait_BinaryOp<"max", "the larger of lhs and rhs"> {
  let semantics = "NaN in either operand propagates. ";
}
def Plait_MinOp : Plait_BinaryOp<"min", "the smaller of lhs and rhs"> {
  let semantics = "NaN in either operand propagates. ";
}
def Plait_ModOp : Plait_BinaryOp<"mod", "remainder of lhs / rhs"> {
  let semantics = "For integers the remainder takes the sign of the divisor (Python %, ONNX " #
                  "Mod fmod=0; a zero divisor is a runtime error); for floats the sign of " #
                  "the dividend (C fmod, ONNX Mod fmod=1). ";
}
def Plait_EqualOp : Plait_BinaryOp<"equal", "lhs == rhs", Plait_Tensor, Plait_BoolTensor> {
  let semantics = "The result is i1 (NaN equals nothing); operands may be i1. ";
}
def Plait_LessOp : Plait_BinaryOp<"less", "lhs < rhs", Plait_NumericTensor, Plait_BoolTensor> {
  let semantics = "The result is i1. ";
}
def Plait_LessEqualOp : Plait_BinaryOp<"less_equal", "lhs <= rhs", Plait_NumericTensor,
                                       Plait_BoolTensor> {
  let semantics = "The result is i1. ";
}
def Plait_GreaterOp : Plait_BinaryOp<"greater", "lhs > rhs", Plait_NumericTensor,
                                     Plait_BoolTensor> {
  let semantics = "The result is i1. ";
}
def Plait_GreaterEqualOp : Plait_BinaryOp<"greater_equal", "lhs >= rhs", Plait_NumericTensor,
                                          Plait_BoolTensor> {
  let semantics = "The result is i1. ";
}
def Plait_AndOp : Plait_BinaryOp<"and", "logical and", Plait_BoolTensor>;
def Plait_OrOp : Plait_BinaryOp<"or", "logical or", Plait_BoolTensor>;
def Plait_XorOp : Plait_BinaryOp<"xor", "logical exclusive or", Plait_BoolTensor>;
def Plait_ShiftLeftOp : Plait_BinaryOp<"shift_left", "lhs shifted left by rhs bits",
                                       Plait_UnsignedTensor> {
  let semantics = "Unsigned integers only (ONNX BitShift LEFT); bits shifted out are lost, " #
                  "and a shift by the element's width or more gives 0. ";
}
def Plait_ShiftRightOp : Plait_BinaryOp<"shift_right", "lhs shifted right by rhs bits",
                                        Plait_UnsignedTensor> {
  let semantics = "Unsigned integers only (ONNX BitShift RIGHT, a logical shift); a shift " #
                  "by the element's width or more gives 0. ";
}

def Plait_WhereOp : Plait_Op<"where", [Pure, InferTypeOpAdaptor, Plait_ElementwiseMap]> {
  let summary = "select x where cond holds, else y (broadcasting)";
  let description = [{
    result[i] = cond[i] ? x[i] : y[i] with cond, x and y broadcast (numpy rules) to one
    shape. x and y may have any element type (i1 included) but must share it; the result
    has that element type.

    ```mlir
    %r = plait.where %c, %x, %y : (tensor<2x2xi1>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Plait_BoolTensor:$cond, Plait_Tensor:$x, Plait_Tensor:$y);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$cond `,` $x `,` $y attr-dict `:` functional-type(operands, results)";
}

#endif // PLAIT_ELEMENTWISE_OPS_TD
