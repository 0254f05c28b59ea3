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
    A named trainable tensor. Its initial value is either `value` (data, e.g. an ONNX
    initializer) or `init`, an initializer spec for shapes-only models:
    `zeros`, `ones`, `normal:STD`, `uniform:BOUND`.

    ```mlir
    %w = plait.param "fc1.weight" {value = dense<0.5> : tensor<4x8xf32>} : tensor<4x8xf32>
    %b = plait.param "fc1.bias" {init = "zeros"} : tensor<8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<ElementsAttr>:$value,
                       OptionalAttr<StrAttr>:$init);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Plait_ConstantOp : Plait_Op<"constant", [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a constant tensor";
  let description = [{
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

class Plait_UnaryOp<string mnemonic, string doc, Type operandType = Plait_FloatTensor,
                    list<Trait> traits = []> :
    Plait_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType], traits)> {
  let summary = doc;
  let description = "Elementwise: " # doc # ".\n\n```mlir\n%y = plait." # mnemonic #
                    " %x : tensor<4xf32>\n```";
  let arguments = (ins operandType:$x);
  let results = (outs operandType:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Plait_ExpOp : Plait_UnaryOp<"exp", "e raised to x">;
def Plait_LogOp : Plait_UnaryOp<"log", "natural logarithm">;
def Plait_SqrtOp : Plait_UnaryOp<"sqrt", "square root">;
def Plait_RsqrtOp : Plait_UnaryOp<"rsqrt", "reciprocal square root">;
def Plait_ReciprocalOp : Plait_UnaryOp<"reciprocal", "1 / x">;
def Plait_ErfOp : Plait_UnaryOp<"erf", "Gauss error function">;
def Plait_TanhOp : Plait_UnaryOp<"tanh", "hyperbolic tangent">;
def Plait_SinOp : Plait_UnaryOp<"sin", "sine">;
def Plait_CosOp : Plait_UnaryOp<"cos", "cosine">;
def Plait_SigmoidOp : Plait_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Plait_SiluOp : Plait_UnaryOp<"silu", "x * sigmoid(x)">;
def Plait_SoftplusOp : Plait_UnaryOp<"softplus", "log(1 + exp(x))">;
def Plait_FloorOp : Plait_UnaryOp<"floor", "round toward negative infinity">;
def Plait_CeilOp : Plait_UnaryOp<"ceil", "round toward positive infinity">;
def Plait_RoundOp : Plait_UnaryOp<"round", "round half to even">;
def Plait_NegOp : Plait_UnaryOp<"neg", "-x", Plait_NumericTensor>;
def Plait_AbsOp : Plait_UnaryOp<"abs", "|x|", Plait_NumericTensor>;
def Plait_ReluOp : Plait_UnaryOp<"relu", "max(x, 0)", Plait_NumericTensor>;
def Plait_SignOp : Plait_UnaryOp<"sign", "-1, 0 or 1 by the sign of x", Plait_NumericTensor>;
def Plait_NotOp : Plait_UnaryOp<"not", "logical negation", Plait_BoolTensor>;

def Plait_GeluOp : Plait_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `approximate = "none"`: x * 0.5 * (1 + erf(x / sqrt(2)));
    `approximate = "tanh"`: x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).

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
    Plait_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = doc;
  let description = "Elementwise: " # doc # ".\n\n```mlir\n%y = plait." # mnemonic #
                    " %x {alpha = 0.1 : f64} : tensor<4xf32>\n```";
  let arguments = (ins Plait_FloatTensor:$x, DefaultValuedAttr<F64Attr, alphaDefault>:$alpha);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}
def Plait_LeakyReluOp : Plait_UnaryAlphaOp<"leaky_relu", "x if x >= 0 else alpha * x", "0.01">;
def Plait_EluOp : Plait_UnaryAlphaOp<"elu", "x if x > 0 else alpha * (exp(x) - 1)", "1.0">;

def Plait_HardSigmoidOp : Plait_Op<"hard_sigmoid", [Pure, SameOperandsAndResultType]> {
  let summary = "max(0, min(1, alpha * x + beta))";
  let description = [{
    ```mlir
    %y = plait.hard_sigmoid %x {alpha = 0.2 : f64, beta = 0.5 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, DefaultValuedAttr<F64Attr, "0.2">:$alpha,
                       DefaultValuedAttr<F64Attr, "0.5">:$beta);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Plait_ClampOp : Plait_Op<"clamp", [Pure, SameOperandsAndResultType]> {
  let summary = "min(max(x, min), max)";
  let description = [{
    Bounds are f64 attributes; an absent bound does not clamp.

    ```mlir
    %y = plait.clamp %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<4xf32>
    ```
  }];
  let arguments = (ins Plait_NumericTensor:$x, OptionalAttr<F64Attr>:$min, OptionalAttr<F64Attr>:$max);
  let results = (outs Plait_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops with numpy broadcasting
//===----------------------------------------------------------------------===//

class Plait_BinaryOp<string mnemonic, string doc, Type operandType = Plait_NumericTensor,
                     Type resultType = operandType> :
    Plait_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = doc;
  let description = "Elementwise with numpy broadcasting: " # doc #
                    ". Both operands share an element type.\n\n```mlir\n%z = plait." # mnemonic #
                    " %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n```";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Plait_AddOp : Plait_BinaryOp<"add", "lhs + rhs">;
def Plait_SubOp : Plait_BinaryOp<"sub", "lhs - rhs">;
def Plait_MulOp : Plait_BinaryOp<"mul", "lhs * rhs">;
def Plait_DivOp : Plait_BinaryOp<"div", "lhs / rhs (integer division truncates)">;
def Plait_PowOp : Plait_BinaryOp<"pow", "lhs raised to rhs">;
def Plait_MaxOp : Plait_BinaryOp<"max", "the larger of lhs and rhs">;
def Plait_MinOp : Plait_BinaryOp<"min", "the smaller of lhs and rhs">;
def Plait_ModOp : Plait_BinaryOp<"mod", "remainder; sign of the divisor for integers, fmod for floats">;
def Plait_EqualOp : Plait_BinaryOp<"equal", "lhs == rhs", Plait_Tensor, Plait_BoolTensor>;
def Plait_LessOp : Plait_BinaryOp<"less", "lhs < rhs", Plait_NumericTensor, Plait_BoolTensor>;
def Plait_LessEqualOp : Plait_BinaryOp<"less_equal", "lhs <= rhs", Plait_NumericTensor, Plait_BoolTensor>;
def Plait_GreaterOp : Plait_BinaryOp<"greater", "lhs > rhs", Plait_NumericTensor, Plait_BoolTensor>;
def Plait_GreaterEqualOp : Plait_BinaryOp<"greater_equal", "lhs >= rhs", Plait_NumericTensor, Plait_BoolTensor>;
def Plait_AndOp : Plait_BinaryOp<"and", "logical and", Plait_BoolTensor>;
def Plait_OrOp : Plait_BinaryOp<"or", "logical or", Plait_BoolTensor>;
def Plait_XorOp : Plait_BinaryOp<"xor", "logical exclusive or", Plait_BoolTensor>;

def Plait_WhereOp : Plait_Op<"where", [Pure, InferTypeOpAdaptor]> {
  let summary = "select x where cond holds, else y (broadcasting)";
  let description = [{
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
  let description = "Reduces by " # doc # " over `axes` (empty: all axes); `keepdims` keeps " #
                    "reduced axes as size 1.\n\n```mlir\n%s = plait." # mnemonic #
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
  let description = "Index (i64) of the " # doc # " along `axis`; ties take the first index " #
                    "unless `select_last_index`.\n\n```mlir\n%i = plait." # mnemonic #
                    " %x {axis = 1 : i64, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xi64>\n```";
  let arguments = (ins Plait_NumericTensor:$x, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}
def Plait_ArgMaxOp : Plait_ArgOp<"argmax", "largest element">;
def Plait_ArgMinOp : Plait_ArgOp<"argmin", "smallest element">;

class Plait_SoftmaxLikeOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = doc;
  let description = doc # " along one `axis`.\n\n```mlir\n%p = plait." # mnemonic #
                    " %x {axis = -1 : i64} : tensor<2x3xf32>\n```";
  let arguments = (ins Plait_FloatTensor:$x, I64Attr:$axis);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}
def Plait_SoftmaxOp : Plait_SoftmaxLikeOp<"softmax", "softmax">;
def Plait_LogSoftmaxOp : Plait_SoftmaxLikeOp<"log_softmax", "log of softmax">;

def Plait_LayerNormOp : Plait_Op<"layer_norm", [Pure]> {
  let summary = "layer normalisation over the axes from `axis` to the last";
  let description = [{
    y = (x - mean) / sqrt(var + epsilon) * scale + bias, with mean and (biased) variance
    over axes [axis, rank). `scale` and `bias` have the normalised shape; `bias` is optional.

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
    y = x / sqrt(mean(x^2) + epsilon) * scale.

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

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Plait_MatmulOp : Plait_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product with numpy semantics (batched, broadcasting)";
  let description = [{
    As numpy.matmul / ONNX MatMul: 1-D operands are promoted and the promoted dimension
    removed; leading (batch) dimensions broadcast.

    ```mlir
    %c = plait.matmul %a, %b : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
    ```
  }];
  let arguments = (ins Plait_NumericTensor:$lhs, Plait_NumericTensor:$rhs);
  let results = (outs Plait_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Plait_GemmOp : Plait_Op<"gemm", [Pure, InferTypeOpAdaptor]> {
  let summary = "alpha * op(a) * op(b) + beta * c";
  let description = [{
    As ONNX Gemm: `a` and `b` are 2-D, op() transposes when `trans_a`/`trans_b`; the optional
    `c` broadcasts to the [M, N] result.

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
    x: [N, C, H, W], w: [M, C/group, kH, kW], bias: [M]. `pads` = [top, left, bottom, right].

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
    Padded positions never win. `pads` = [top, left, bottom, right].

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
    The divisor counts padded positions only when `count_include_pad`.

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

def Plait_ReshapeOp : Plait_Op<"reshape", [Pure]> {
  let summary = "same elements, new static shape";
  let description = [{
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
    Per dimension d of size n: step > 0 needs 0 <= start <= end <= n; step < 0 needs
    -1 <= end <= start <= n - 1. The result has ceil((end - start) / step) elements there.

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
    `pads` = (begin of each dimension, then end of each dimension), each >= 0; new
    positions hold `value`.

    ```mlir
    %y = plait.pad %x {pads = array<i64: 0, 1, 0, 1>, value = 0.0 : f64}
        : (tensor<2x2xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
}

def Plait_ConcatOp : Plait_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "join tensors along `axis`";
  let description = [{
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
    Result shape: data[:axis] + indices.shape + data[axis+1:]. Negative indices count from
    the end.

    ```mlir
    %e = plait.gather %table, %ids {axis = 0 : i64}
        : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$data, Plait_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Plait_CastOp : Plait_Op<"cast", [Pure]> {
  let summary = "convert elements to the result's element type";
  let description = [{
    Float to integer truncates toward zero; anything to i1 is `x != 0`.

    ```mlir
    %y = plait.cast %x : (tensor<4xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins Plait_Tensor:$x);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_TriluOp : Plait_Op<"trilu", [Pure, SameOperandsAndResultType]> {
  let summary = "keep the upper or lower triangle of the last two dimensions";
  let description = [{
    `upper`: keep j - i >= k; else keep j - i <= k; other elements become zero.

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

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class Plait_LossOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = doc;
  let arguments = (ins Plait_FloatTensor:$input, Plait_IndexTensor:$target,
                       Optional<Plait_FloatTensor>:$weight,
                       DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Plait_SoftmaxCrossEntropyOp : Plait_LossOp<"softmax_cross_entropy",
                                               "softmax cross-entropy of logits against class indices"> {
  let description = [{
    input: logits [N, C] or [N, C, d1, ...]; target: [N] or [N, d1, ...]; optional per-class
    `weight` [C]. `reduction` is "mean" (weighted mean over non-ignored targets), "sum" or
    "none" (result shaped like target). Targets equal to `ignore_index` contribute nothing.

    ```mlir
    %l = plait.softmax_cross_entropy %logits, %labels {reduction = "mean"}
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
}

def Plait_NllLossOp : Plait_LossOp<"nll_loss", "negative log-likelihood of log-probabilities"> {
  let description = [{
    As softmax_cross_entropy, but `input` already holds log-probabilities.

    ```mlir
    %l = plait.nll_loss %logp, %labels {reduction = "sum"}
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
}

#endif // PLAIT_OPS_TD
