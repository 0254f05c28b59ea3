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

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Plait_ReduceOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = doc # " over `axes`";
  let description = "Reduces by " # doc # " over `axes` (distinct, each in [-rank, rank); " #
                    "empty: all axes); `keepdims` (default true) keeps reduced axes as size 1, " #
                    "otherwise they are removed. The result has the input's element type. " #
                    "Float sums, means and products accumulate in f64; integer sums and " #
                    "products wrap; an integer mean is the wrapped sum divided by the count, " #
                    "truncated toward zero. Reducing zero elements gives 0 (sum), 1 (prod), " #
                    "NaN (float mean), 0 (integer mean), -inf / the lowest integer (max) and " #
                    "+inf / the highest integer (min); max and min propagate NaN." #
                    "\n\n```mlir\n%s = plait." # mnemonic #
                    " %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>\n```";
  let arguments = (ins Plait_NumericTensor:$x, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims);
  let results = (outs Plait_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}
def Plait_ReduceSumOp : Plait_ReduceOp<"reduce_sum", "sum">;
def Plait_ReduceMeanOp : Plait_ReduceOp<"reduce_mean", "mean">;
def Plait_ReduceMaxOp : Plait_ReduceOp<"reduce_max", "maximum">;
def Plait_ReduceMinOp : Plait_ReduceOp<"reduce_min", "minimum">;
def Plait_ReduceProdOp : Plait_ReduceOp<"reduce_prod", "product">;

class Plait_ArgOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = doc;
  let description = "Index (i64) of the " # doc # " along `axis` (in [-rank, rank)); " #
                    "`keepdims` (default true) keeps that axis as size 1. Ties take the first " #
                    "index unless `select_last_index`; NaN counts as the extreme (the first " #
                    "NaN, or the last with `select_last_index`). The axis must not have size " #
                    "0 unless the result is empty." #
                    "\n\n```mlir\n%i = plait." # mnemonic #
                    " %x {axis = 1 : i64, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xi64>\n```";
  let arguments = (ins Plait_NumericTensor:$x, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}
def Plait_ArgMaxOp : Plait_ArgOp<"argmax", "largest element">;
def Plait_ArgMinOp : Plait_ArgOp<"argmin", "smallest element">;

def Plait_TopKOp : Plait_Op<"top_k", [Pure, InferTypeOpAdaptor]> {
  let summary = "indices of the k largest (or smallest) elements along the last axis";
  let description = [{
    The i64 indices, along the last axis of `x`, of its `k` largest elements (smallest with
    `largest = false`), in order: the largest (smallest) first, ties to the lower index.
    NaN is larger than every number, as in `torch.topk`: first with `largest`, last without.
    +0 and -0 are equal. The result has the shape of `x` with the last axis `k`, which must
    be in [0, n]. The values are a gather at the indices, so the op itself has no gradient.
    The ONNX importer writes it for TopK (moving the axis last). A row costs O(n log k) on
    the CPU (a heap of k) and k block-wide selections on CUDA.

    ```mlir
    %i = plait.top_k %x {k = 2 : i64} : (tensor<4x10xf32>) -> tensor<4x2xi64>
    ```
  }];
  let arguments = (ins Plait_NumericTensor:$x, I64Attr:$k,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_DetOp : Plait_Op<"det", [Pure, InferTypeOpAdaptor]> {
  let summary = "determinant of each square matrix of the last two axes";
  let description = [{
    `x` is [..., n, n] (n >= 1); the result [...] holds each matrix's determinant, computed
    in f64 by an LU factorisation with partial pivoting (codegen/schema/Determinant.h) and
    rounded once to the element type. Its gradient is plait.cofactors of `x` times the
    result's gradient. The ONNX importer writes it for Det.

    ```mlir
    %d = plait.det %x : (tensor<3x4x4xf32>) -> tensor<3xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_CofactorsOp : Plait_Op<"cofactors", [Pure, SameOperandsAndResultType]> {
  let summary = "cofactor matrix of each square matrix of the last two axes";
  let description = [{
    For each n x n matrix A of `x` ([..., n, n], n >= 1), C[i][j] = (-1)^(i+j) times the
    determinant of A without row i and column j: the gradient of det(A) with respect to A.
    Computed in f64: det(A) * inverse(A)^T from one LU factorisation where A is invertible,
    each minor's own determinant where it is singular (codegen/schema/Determinant.h). The
    cofactor of a 1 x 1 matrix is 1. It has no gradient of its own (the step differentiates
    once).

    ```mlir
    %c = plait.cofactors %x : tensor<3x4x4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

class Plait_SoftmaxLikeOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = doc # " along `axis`";
  // The formula, appended to the shared description.
  string formula = "";
  let description = doc # " along one `axis` (in [-rank, rank)), " # formula # ", computed stably by " #
                    "subtracting the maximum along the axis first." #
                    "\n\n```mlir\n%p = plait." # mnemonic #
                    " %x {axis = -1 : i64} : tensor<2x3xf32>\n```";
  let arguments = (ins Plait_FloatTensor:$x, I64Attr:$axis);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}
def Plait_SoftmaxOp : Plait_SoftmaxLikeOp<"softmax", "softmax"> {
  let formula = "exp(x_i) / sum_j exp(x_j)";
}
def Plait_LogSoftmaxOp : Plait_SoftmaxLikeOp<"log_softmax", "log of softmax"> {
  let formula = "x_i - log(sum_j exp(x_j))";
}

def Plait_LayerNormOp : Plait_Op<"layer_norm", [Pure]> {
  let summary = "layer normalisation over the axes from `axis` to the last";
  let description = [{
    y = (x - mean) / sqrt(var + epsilon) * scale + bias, with mean and biased variance
    (divided by the element count) over axes [axis, rank); `axis` is in [-rank, rank).
    `scale` and the optional `bias` have the normalised shape x.shape[axis:] and x's
    element type; the result has x's type. `epsilon` is finite and > 0.

    ```mlir
    %y = plait.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$scale,
                       Optional<Plait_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RmsNormOp : Plait_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalisation over the axes from `axis` to the last";
  let description = [{
    y = x / sqrt(mean(x^2) + epsilon) * scale, with the mean over axes [axis, rank);
    `axis` is in [-rank, rank). `scale` has the normalised shape x.shape[axis:] and x's
    element type; the result has x's type. `epsilon` is finite and > 0.

    ```mlir
    %y = plait.rms_norm %x, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64}
        : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$scale, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AddLayerNormOp : Plait_Op<"add_layer_norm", [Pure]> {
  let summary = "a residual add and the layer norm of its sum, in one op";
  let description = [{
    sum = x + residual (both of one type, no broadcasting), y = layer_norm(sum, scale, bias)
    with layer_norm's attributes and rules. Both the sum (a transformer's residual stream,
    read by the next residual add) and y are results: one kernel reads x and residual once,
    instead of an add that writes the sum and a norm that reads it back. plait-fuse-norm
    writes it for a plait.add whose only other readers need not be the norm.

    ```mlir
    %y, %sum = plait.add_layer_norm %x, %r, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
        -> (tensor<2x8xf32>, tensor<2x8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$residual,
                       Plait_FloatTensor:$scale, Optional<Plait_FloatTensor>:$bias,
                       I64Attr:$axis, DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Plait_FloatTensor:$y, Plait_FloatTensor:$sum);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AddRmsNormOp : Plait_Op<"add_rms_norm", [Pure]> {
  let summary = "a residual add and the RMS norm of its sum, in one op";
  let description = [{
    sum = x + residual (both of one type, no broadcasting), y = rms_norm(sum, scale) with
    rms_norm's attributes and rules; both are results.

    ```mlir
    %y, %sum = plait.add_rms_norm %x, %r, %g {axis = -1 : i64, epsilon = 1.0e-06 : f64}
        : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$residual,
                       Plait_FloatTensor:$scale, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs Plait_FloatTensor:$y, Plait_FloatTensor:$sum);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AttentionOp : Plait_Op<"attention", [Pure]> {
  let summary = "fused scaled-dot-product attention over [batch, seq, heads, dim] operands";
  let description = [{
    q [B, S, H, D], k [B, T, H, D] and v [B, T, H, E] share one float element type. For each
    batch b, head h and query i: s_ij = scale * dot(q[b, i, h], k[b, j, h]) over the keys j
    it sees (with `causal`, the keys j <= i; else all T), lse_i = log(sum_j exp(s_ij)),
    out[b, i, h] = sum_j exp(s_ij - lse_i) * v[b, j, h]. `out` has q's element type; `lse`
    [B, H, S] is f32 and is what attention_grad reads instead of the probabilities, so no
    [S, T] matrix is kept. plait-fuse-attention writes it in place of the decomposed
    matmul, scale, mask, softmax, matmul chain; the kernels never hold more than a block of
    query rows' scores. `scale` is finite and > 0.

    ```mlir
    %o, %lse = plait.attention %q, %k, %v {scale = 0.125 : f64, causal = true}
        : (tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>)
        -> (tensor<2x16x4x64xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$q, Plait_FloatTensor:$k, Plait_FloatTensor:$v,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Plait_FloatTensor:$out, StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Plait_MatmulOp : Plait_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product with numpy semantics (batched, broadcasting)";
  let description = [{
    As numpy.matmul / ONNX MatMul. Both operands have rank >= 1 and one element type.
    A 1-D lhs [K] is treated as [1, K] and a 1-D rhs [K] as [K, 1]; the promoted dimension
    is removed from the result. With lhs [..., M, K] and rhs [..., K, N], the leading
    (batch) dimensions broadcast (numpy rules) and the result is [batch..., M, N]:
    [4, 2, 3] x [3, 5] -> [4, 2, 5]; [3] x [2, 3, 5] -> [2, 5]; [3] x [3] -> scalar.
    Integer products wrap; float accumulation is at least f32.

    `transpose_lhs` / `transpose_rhs` (both rank >= 2) swap the operand's last two dimensions
    before the product, as a BLAS transpose flag does: plait-fold-transposes sets them in
    place of a separate plait.transpose, so no transposed copy is made. Likewise `lhs_perm` /
    `rhs_perm` read the operand as plait.transpose with that `perm` would give it (before any
    transpose flag), and `result_perm` stores the product transposed by it: an attention
    head's [B, T, H, D] -> [B, H, T, D] is then a strided batch of GEMMs, not a copy. An
    operand's permutation keeps its innermost dimension among the last two, a result's keeps
    it last (codegen/schema/MatmulLayout.h); all need operands of rank >= 2.

    The optional `bias`, a float vector [N] of the operands' element type, is added to every
    row of the product: the GEMM's bias epilogue. plait-fuse-gemm-epilogue sets it in place
    of a separate plait.add (cuBLASLt adds it as the GEMM writes its result; the CPU writes
    it into the result and lets the GEMM accumulate onto it). It needs a 2-D rhs that is not
    promoted and no `result_perm`.

    ```mlir
    %c = plait.matmul %a, %b : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
    %d = plait.matmul %a, %w {transpose_rhs = true}
        : (tensor<4x2x3xf32>, tensor<5x3xf32>) -> tensor<4x2x5xf32>
    %e = plait.matmul %a, %w, %bias {transpose_rhs = true}
        : (tensor<4x2x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x2x5xf32>
    ```
  }];
  let arguments = (ins Plait_NumericTensor:$lhs, Plait_NumericTensor:$rhs,
                       Optional<Plait_FloatTensor>:$bias,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs,
                       OptionalAttr<DenseI64ArrayAttr>:$lhs_perm,
                       OptionalAttr<DenseI64ArrayAttr>:$rhs_perm,
                       OptionalAttr<DenseI64ArrayAttr>:$result_perm);
  let results = (outs Plait_NumericTensor:$result);
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs, CArg<"bool", "false">:$transposeLhs,
                   CArg<"bool", "false">:$transposeRhs), [{
      build($_builder, $_state, lhs, rhs, /*bias=*/nullptr, transposeLhs, transposeRhs, nullptr,
            nullptr, nullptr);
    }]>,
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$lhs, "::mlir::Value":$rhs, "bool":$transposeLhs,
                   "bool":$transposeRhs), [{
      build($_builder, $_state, result, lhs, rhs, /*bias=*/nullptr, transposeLhs, transposeRhs,
            nullptr, nullptr, nullptr);
    }]>];
  let assemblyFormat = "$lhs `,` $rhs (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

def Plait_GemmOp : Plait_Op<"gemm", [Pure, InferTypeOpAdaptor]> {
  let summary = "alpha * op(a) * op(b) + beta * c";
  let description = [{
    As ONNX Gemm: `a` and `b` are 2-D with one element type, op() transposes when
    `trans_a`/`trans_b`, so op(a) is [M, K] and op(b) is [K, N]. The optional `c` has the
    same element type and broadcasts (numpy rules, one way) to the [M, N] result; without
    `c` the beta term is absent. For integer types alpha and beta other than 0 and 1 are
    applied in f64 and the result truncated toward zero.

    ```mlir
    %y = plait.gemm %x, %w, %b {trans_b = true}
        : (tensor<2x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Plait_NumericTensor:$a, Plait_NumericTensor:$b,
                       Optional<Plait_NumericTensor>:$c,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_a,
                       DefaultValuedAttr<BoolAttr, "false">:$trans_b,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta);
  let results = (outs Plait_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Plait_Conv2dOp : Plait_Op<"conv2d", [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D convolution (NCHW), grouped, with optional bias";
  let description = [{
    Cross-correlation (the kernel is not flipped), as ONNX Conv / torch conv2d.
    x: [N, C, H, W], w: [M, C/group, kH, kW], optional bias: [M], all one element type;
    `group` >= 1 divides C and M. `strides` = [sH, sW] >= 1, `dilations` = [dH, dW] >= 1,
    `pads` = [top, left, bottom, right] >= 0 (zero padding). The result is [N, M, oH, oW]
    with oH = floor((H + top + bottom - dH * (kH - 1) - 1) / sH) + 1 (oW alike), and
      y[n, m, i, j] = bias[m] + sum over c < C/group, p < kH, q < kW of
        w[m, c, p, q] * x[n, g * C/group + c, i * sH - top + p * dH, j * sW - left + q * dW]
    where g = m / (M/group) and x is 0 outside its bounds. The window must fit the padded
    input at least once (oH, oW >= 1).

    ```mlir
    %y = plait.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
        dilations = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$w,
                       Optional<Plait_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Plait_MaxPool2dOp : Plait_Op<"max_pool2d", [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D max pooling (NCHW)";
  let description = [{
    y[n, c, i, j] = max over p < kH, q < kW of
    x[n, c, i * sH - top + p * dH, j * sW - left + q * dW], skipping positions outside x
    (padded positions never win; NaN propagates). `kernel` = [kH, kW], `strides` and
    `dilations` are >= 1; `pads` = [top, left, bottom, right] are >= 0 and each smaller
    than the dilated window dH * (kH - 1) + 1 (dW alike). The output size is
    floor((H + top + bottom - dH * (kH - 1) - 1) / sH) + 1, or with `ceil_mode` the ceiling,
    less one if the last window would then start at or after H + top (it would lie in the
    end padding only); as torch.nn.MaxPool2d. It must be >= 1.

    ```mlir
    %y = plait.max_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
        : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_AvgPool2dOp : Plait_Op<"avg_pool2d", [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D average pooling (NCHW)";
  let description = [{
    Mean over each [kH, kW] window, positions as in max_pool2d with dilation 1, the same
    pads rule and the same output size (including `ceil_mode`). The divisor is the number
    of window positions inside x, or, with `count_include_pad`, inside the padded input
    [-top, H + bottom) x [-left, W + right) (positions beyond that, which only `ceil_mode`
    creates, never count); as torch.nn.AvgPool2d.

    ```mlir
    %y = plait.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Plait_FusedElementwiseOp : Plait_Op<"fused_elementwise", [Pure]> {
  let summary = "a chain of f32 / bf16 elementwise ops computed in one pass "
                "(plait-fuse-elementwise)";
  let description = [{
    Registers 0..N-1 are the N inputs; `program` is a list of (opcode, a, b) triples, the
    k-th defining register N + k from registers a and b (b = -1 for a unary op); the results
    are the registers `outputs` names. Opcodes (codegen/schema/FusedElementwise.h): 0 add,
    1 sub, 2 mul, 3 div, 4 neg, 5 exp, 6 erf, 7 sqrt, 8 pow, 9 broadcast_to (the operand),
    10 round_bf16 (the operand rounded to bf16 and back: a cast to bf16, or the store of a
    bf16 op's result). Registers hold f32 values. Results and inputs are f32 or bf16 (a bf16
    input widens as it is loaded, a bf16 result rounds to nearest even as it is stored) and
    broadcast together (numpy rules) to the iteration shape;
    a result is that shape, or, where `reductions` (one per result: 0 store, 1 sum, 2 mean)
    says so, the register summed or averaged over the dimensions where the result has size 1
    (reduce_sum / reduce_mean with keepdims): over the innermost dimension alone, or over
    others. Each element is computed exactly as the unfused ops compute it.

    ```mlir
    // y = erf(x * c) + x, and x * c too
    %y, %s = plait.fused_elementwise %x, %c {program = array<i64: 2, 0, 1,  6, 2, -1,  0, 3, 0>,
        outputs = array<i64: 4, 2>} : (tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    // the row means of x * c
    %m = plait.fused_elementwise %x, %c {program = array<i64: 2, 0, 1>, outputs = array<i64: 2>,
        reductions = array<i64: 2>} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs, DenseI64ArrayAttr:$program,
                       DenseI64ArrayAttr:$outputs,
                       OptionalAttr<DenseI64ArrayAttr>:$reductions);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Plait_ReshapeOp : Plait_Op<"reshape", [Pure]> {
  let summary = "same elements, new static shape";
  let description = [{
    Same elements in the same row-major order, same element type, same element count.

    ```mlir
    %y = plait.reshape %x : (tensor<2x3xf32>) -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_TransposeOp : Plait_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permute dimensions: result dim i = operand dim perm[i]";
  let description = [{
    `perm` is a permutation of 0..rank-1: result.shape[i] = x.shape[perm[i]] and
    result[i_0, ..., i_r-1] = x at the index whose dimension perm[k] is i_k.

    ```mlir
    %y = plait.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_BroadcastToOp : Plait_Op<"broadcast_to", [Pure]> {
  let summary = "numpy broadcast to the result shape";
  let description = [{
    Aligned at the last dimension, each operand dimension equals the result's or is 1
    (repeated); missing leading dimensions are repeated too. The element type is kept.

    ```mlir
    %y = plait.broadcast_to %x : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_SliceOp : Plait_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "strided slice with one normalised (start, end, step) per dimension";
  let description = [{
    The importer normalises ONNX Slice (negative and clamped indices, omitted axes) into
    one (start, end, step) per dimension. Per dimension d of size n: step > 0 needs
    0 <= start <= end <= n; step < 0 needs -1 <= end <= start <= n - 1 (end = -1 means
    "through index 0"); step != 0. The result takes indices start, start + step, ... while
    they are before end, so it has ceil((end - start) / step) elements there: [4:0:-2] of
    a size-5 dimension takes indices 4 and 2.

    ```mlir
    %y = plait.slice %x {starts = array<i64: 0, 1>, ends = array<i64: 2, 3>,
        steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends,
                       DenseI64ArrayAttr:$steps);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_PadOp : Plait_Op<"pad", [Pure, InferTypeOpAdaptor]> {
  let summary = "constant padding";
  let description = [{
    `pads` = (begin of each dimension, then end of each dimension), 2 * rank entries, each
    >= 0 (as ONNX Pad, constant mode, without negative pads). New positions hold `value`
    converted to the element type; for integer tensors it must be a whole number in the
    type's range, for i1 0 or 1.

    ```mlir
    %y = plait.pad %x {pads = array<i64: 0, 1, 0, 1>, value = 0.0 : f64}
        : (tensor<2x2xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_ConcatOp : Plait_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "join tensors along `axis`";
  let description = [{
    One or more inputs of one element type and rank, equal in every dimension except
    `axis` (in [-rank, rank)); the result's `axis` dimension is the sum of theirs.

    ```mlir
    %y = plait.concat %a, %b {axis = 0 : i64} : (tensor<1x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
    ```
  }];
  let arguments = (ins Variadic<Plait_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Plait_SplitOp : Plait_Op<"split", [Pure, InferTypeOpAdaptor]> {
  let summary = "cut a tensor along `axis` into pieces of the given `sizes`";
  let description = [{
    One result per entry of `sizes` (at least one, each >= 0, adding up to the `axis`
    dimension); result i holds the next sizes[i] slices along `axis` (in [-rank, rank)).

    ```mlir
    %a, %b = plait.split %x {axis = 1 : i64, sizes = array<i64: 1, 3>}
        : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x3xf32>)
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Plait_Tensor>:$results);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_GatherOp : Plait_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "take slices of `data` along `axis` at `indices` (embedding lookup)";
  let description = [{
    As ONNX Gather / numpy.take: result shape data.shape[:axis] + indices.shape +
    data.shape[axis+1:], and result[a..., i..., b...] = data[a..., indices[i...], b...].
    `axis` is in [-rank, rank). Indices (i32 or i64) lie in [-n, n) for n =
    data.shape[axis], negative ones counting from the end; any other index is a runtime
    error. `data` may have any element type, i1 included.

    With `padding_idx` p (axis 0 only, as nn.Embedding's padding_idx): the gradient of row p
    is zero, whatever reads the lookups of it (PyTorch's embedding backward skips those
    lookups); the forward is unchanged. p is in [-n, n), negative counting from the end.

    ```mlir
    %e = plait.gather %table, %ids {axis = 0 : i64}
        : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    %p = plait.gather %table, %ids {padding_idx = 0 : i64}
        : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$data, Plait_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_CastOp : Plait_Op<"cast", [Pure]> {
  let summary = "convert elements to the result's element type";
  let description = [{
    Elementwise, same shape. Float to float rounds to nearest even (overflow gives +-inf,
    NaN stays NaN; conversions to bf16 and f16 go through f32); integer to float rounds to
    nearest even; float to integer truncates toward zero, saturating values outside the
    target range, and NaN gives 0; integer to integer keeps the low bits (i64 to i32
    wraps); anything to i1 is x != 0 (so NaN gives true); i1 to a number gives 1 or 0.
    Casting to the same type is a copy.

    ```mlir
    %y = plait.cast %x : (tensor<4xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_GroupedCastOp : Plait_Op<"grouped_cast", [Pure]> {
  let summary = "several float casts computed by one kernel (plait-group-casts)";
  let description = [{
    Result i is operand i cast to result i's element type, exactly as `plait.cast` computes
    it: the same number of operands and results, each pair of one shape, every element type
    a float. The kernel walks the list (on CUDA, one launch for many tensors).
    plait-group-casts builds it from the casts of a bf16-mixed step's parameters to bf16, a
    kernel per parameter tensor otherwise.

    ```mlir
    %a, %b = plait.grouped_cast %w, %bias
        : (tensor<96x32xf32>, tensor<96xf32>) -> (tensor<96x32xbf16>, tensor<96xbf16>)
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Plait_TriluOp : Plait_Op<"trilu", [Pure, SameOperandsAndResultType]> {
  let summary = "keep the upper or lower triangle of the last two dimensions";
  let description = [{
    As ONNX Trilu, on each matrix of the last two dimensions (row i, column j; rank >= 2):
    `upper` (the default) keeps elements with j - i >= k, otherwise those with j - i <= k;
    the others become zero (false for i1). `k` (default 0) may be any integer.

    ```mlir
    %m = plait.trilu %x {upper = false, k = 0 : i64} : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DefaultValuedAttr<BoolAttr, "true">:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Plait_DropoutMaskOp : Plait_Op<"dropout_mask", [Pure]> {
  let summary = "a dropout mask drawn for this step: 0 or 1 / (1 - ratio) per element";
  let description = [{
    Element i of the result is 0 with probability `ratio` and 1 / (1 - ratio) otherwise
    (in the result's float type), so x * mask is inverted dropout (ONNX Dropout in training
    mode, torch.nn.Dropout in training). The draw is counter-based
    (codegen/schema/DropoutMask.h): it hashes (`seed`, `stream`, step, rank, i), where step is
    the operand, plait.hyper "step" (the 1-based step number, f32), and rank the rank running
    the plan. So every step, rank and stream draws afresh, while a recomputed or resumed step
    draws the same mask on any thread count or device. The importer gives each Dropout node
    its own `stream`; gradient accumulation gives each micro-batch its own. `ratio` in [0, 1).

    ```mlir
    %step = plait.hyper "step" : tensor<f32>
    %m = plait.dropout_mask %step {ratio = 1.000000e-01 : f64, seed = 0 : i64, stream = 7 : i64}
        : (tensor<f32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$step, F64Attr:$ratio, I64Attr:$seed,
                       I64Attr:$stream);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$step attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RandomOp : Plait_Op<"random", [Pure]> {
  let summary = "random values drawn for this step: uniform in [low, high), or normal";
  let description = [{
    Each element is an independent draw (codegen/schema/RandomDraw.h): with `distribution`
    "uniform", low + (high - low) * u, u uniform in [0, 1) on the element type's grid
    (`a` = low, `b` = high); with "normal", mean + scale * z, z standard normal by Box-Muller
    (`a` = mean, `b` = scale). The draw is counter-based like plait.dropout_mask's: it hashes
    (`seed`, `stream`, step, rank, element), where step is the operand, plait.hyper "step",
    so every step and rank draws afresh while a recomputed or resumed step draws the same
    values on any thread count or device. ONNX's RandomUniform(Like), RandomNormal(Like) and
    Bernoulli (a uniform draw compared with p) import as it; the importer gives each node its
    own `stream`, and gradient accumulation each micro-batch its own.

    ```mlir
    %step = plait.hyper "step" : tensor<f32>
    %u = plait.random %step {distribution = "uniform", a = 0.0 : f64, b = 1.0 : f64,
        seed = 0 : i64, stream = 7 : i64} : (tensor<f32>) -> tensor<8x1x1xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$step, StrAttr:$distribution, F64Attr:$a,
                       F64Attr:$b, I64Attr:$seed, I64Attr:$stream);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$step attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class Plait_LossOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = doc;
  let arguments = (ins Plait_FloatTensor:$input, Plait_IndexTensor:$target,
                       Optional<Plait_FloatTensor>:$weight,
                       DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The inferred type (the input's element type), or for bf16 / f16 input the same
    /// shape in f32: the loss computed in f32 from the widened input
    /// (plait-fuse-loss-cast's form of a cast to f32 before the loss).
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred, ::mlir::TypeRange actual);
  }];
}

def Plait_SoftmaxCrossEntropyOp : Plait_LossOp<"softmax_cross_entropy",
                                               "softmax cross-entropy of logits against class indices"> {
  let description = [{
    input: logits [N, C] or [N, C, d1, ...] (float); target: class indices [N] or
    [N, d1, ...] (i32 or i64); optional per-class `weight` [C] with the input's element
    type (absent: all ones). Per position i, with t = target[i],
      l[i] = -weight[t] * log_softmax(input[i, :])[t]  (softmax over the C dimension),
    or 0 when t equals `ignore_index`. A target outside [0, C) that is not `ignore_index`
    is a runtime error. `reduction`: "none" gives l shaped like target; "sum" gives
    sum(l); "mean" (the default) gives sum(l) / sum(weight[t]) over the non-ignored
    positions (NaN when there are none), as torch.nn.CrossEntropyLoss and ONNX
    SoftmaxCrossEntropyLoss. For bf16 or f16 input the result may be f32 (otherwise of the
    input's type): the loss of the widened input, as a cast to f32 before the loss gives it.
    `label_smoothing` e in [0, 1] (absent: 0) is torch's
    CrossEntropyLoss(label_smoothing=e), which ONNX cannot express:
      l[i] = -(1 - e) * weight[t] * log_softmax(input[i, :])[t]
             - e / C * sum_c weight[c] * log_softmax(input[i, :])[c],
    normalised as above (the mean by sum(weight[t])).

    ```mlir
    %l = plait.softmax_cross_entropy %logits, %labels {reduction = "mean"}
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
}

def Plait_NllLossOp : Plait_LossOp<"nll_loss", "negative log-likelihood of log-probabilities"> {
  let description = [{
    As softmax_cross_entropy, but `input` already holds log-probabilities:
    l[i] = -weight[t] * input[i, t]; shapes, `ignore_index` and `reduction` as there
    (torch.nn.NLLLoss, ONNX NegativeLogLikelihoodLoss). No `label_smoothing` (NLLLoss has
    none).

    ```mlir
    %l = plait.nll_loss %logp, %labels {reduction = "sum"}
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
}

#endif // PLAIT_OPS_TD
