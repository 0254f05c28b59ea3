// Reductions and normalisations of the plait dialect: reduce_*, arg ops, top_k, det,
// softmax, the norms and attention.
// Included by ir/PlaitOps.td, the dialect's one TableGen target; each op lowers to the
// runtime kernel of the same mnemonic.
#ifndef PLAIT_REDUCTION_OPS_TD
#define PLAIT_REDUCTION_OPS_TD

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

def Plait_BatchNormOp : Plait_Op<"batch_norm", [Pure]> {
  let summary = "training-mode batch normalisation over every axis but the channel axis 1";
  let description = [{
    Per channel c of x ([N, C, ...], rank >= 2): mean[c] and the biased (population)
    variance var[c] over every axis but 1, and
    y = (x - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + bias[c]. `scale` and `bias` are
    [C] of x's element type; y has x's type, mean and var are [C] of x's element type (a
    running mean and variance are computed from them). One kernel reads x once for the
    statistics (each channel's values again from cache) and once to write y, where the
    decomposed form (reduce_mean, x - mean kept for the backward, its square's mean, the
    normalisation) reads and writes x's size several times. plait-fuse-norm writes it for a
    decomposed training-mode BatchNorm.

    `sync` (a SyncBatchNorm): the statistics are the global batch's, each of the data-parallel
    ranks holding an equal slice of it; plait-shard lowers it (SyncMeans.cpp) to
    batch_norm_stats, an all_gather of every rank's statistics and this op with `stats`, or
    drops it at world size 1. With `stats` ([W * 2C] in the compute type: f32 for bf16/f16
    x, else x's; rank r's local mean at [2Cr, 2Cr + C) and variance after it), mean and var
    are combined from the W ranks' in rank order, in double: mean = sum(mean_r) / W,
    var = sum(var_r + (mean_r - mean)^2) / W (Chan et al.), and x is read once.

    ```mlir
    %y, %mean, %var = plait.batch_norm %x, %g, %b {epsilon = 1.0e-05 : f64}
        : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
        -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$scale, Plait_FloatTensor:$bias,
                       Optional<Plait_FloatTensor>:$stats,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon, UnitAttr:$sync);
  let results = (outs Plait_FloatTensor:$y, Plait_FloatTensor:$mean, Plait_FloatTensor:$var);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_BatchNormStatsOp : Plait_Op<"batch_norm_stats", [Pure]> {
  let summary = "this rank's training-mode BatchNorm statistics, to gather over the ranks";
  let description = [{
    Per channel c of x ([N, C, ...]): the mean and the biased variance over every axis but 1,
    computed as plait.batch_norm computes them, as one vector [mean(C), var(C)] of 2C values in
    the compute type (f32 for bf16/f16 x, else x's element type), which a SyncBatchNorm
    all-gathers over the ranks for plait.batch_norm's `stats`.

    ```mlir
    %s = plait.batch_norm_stats %x : (tensor<2x3x4x4xf32>) -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x);
  let results = (outs Plait_FloatTensor:$stats);
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

    With `dropout` > 0 (and the `step` operand, plait.hyper "step") the probabilities are
    dropped as plait.dropout_mask {ratio = dropout, seed, stream} would drop a [B, H, S, T]
    tensor of them (DropoutMask.h: element ((b * H + h) * S + i) * T + j kept and scaled by
    1 / (1 - dropout), else 0) before they meet v; lse stays the undropped one. The fused
    form of softmax, that mask's product and the product with v; the CPU kernels only (the
    CUDA ones take no dropout, so plait-fuse-attention leaves it decomposed there).

    ```mlir
    %o, %lse = plait.attention %q, %k, %v {scale = 0.125 : f64, causal = true}
        : (tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>)
        -> (tensor<2x16x4x64xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$q, Plait_FloatTensor:$k, Plait_FloatTensor:$v,
                       Optional<StaticShapeTensorOf<[F32]>>:$step, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Plait_FloatTensor:$out, StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // PLAIT_REDUCTION_OPS_TD
