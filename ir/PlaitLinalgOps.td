// Linear algebra of the plait dialect: matmul, gemm, conv2d and the 2-D poolings.
// Included by ir/PlaitOps.td, the dialect's one TableGen target; each op lowers to the
// runtime kernel of the same mnemonic.
#ifndef PLAIT_LINALG_OPS_TD
#define PLAIT_LINALG_OPS_TD

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

#endif // PLAIT_LINALG_OPS_TD
