// Training ops of the plait dialect: persistent state, per-step hyper-parameters, gradient
// kernels that have no composition in forward ops, and optimizer updates (PlaitOptimizerOps.td,
// included below: this file is their TableGen target too). Written by the build-train-step
// pipeline; each lowers to the runtime kernel of the same mnemonic.
#ifndef PLAIT_TRAIN_OPS_TD
#define PLAIT_TRAIN_OPS_TD

include "ir/PlaitDialect.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Step state
//===----------------------------------------------------------------------===//

def Plait_StateOp : Plait_Op<"state", [Pure]> {
  let summary = "a persistent, non-trainable tensor (optimizer state)";
  let description = [{
    Lives across steps like a param, starts as zeros, and is never differentiated.

    ```mlir
    %m = plait.state "fc1.weight.exp_avg" : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Plait_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Plait_HyperOp : Plait_Op<"hyper", [Pure]> {
  let summary = "a scalar the runtime sets before each step";
  let description = [{
    `name` is `lr` (the learning rate of this step, from the plan's schedule), `step`
    (the 1-based step number) or `prev_lr` (the previous step's learning rate, step 1's on
    step 1: ASGD's eta follows the lr of the step before, as torch computes it at the end of
    each step). `lr` and `prev_lr` are f64, as torch's Python float, or f32 (plans before
    2026-12-06 held them so, rounding the lr); `step` is f32, exact to 2^24 steps.

    ```mlir
    %lr = plait.hyper "lr" : tensor<f64>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs StaticShapeTensorOf<[F32, F64]>:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Plait_AssignOp : Plait_Op<"assign", [MemoryEffects<[MemWrite]>, AllTypesMatch<["target", "value"]>]> {
  let summary = "store a new value into a param or state at the end of the step";
  let description = [{
    `target` is the param or state op whose persistent tensor receives `value` once the
    step's instructions have run (so every reader in the step sees the old value).

    ```mlir
    plait.assign %w, %w_new : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Plait_Tensor:$target, Plait_Tensor:$value);
  let assemblyFormat = "$target `,` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradient kernels
//===----------------------------------------------------------------------===//

def Plait_StopGradientOp : Plait_Op<"stop_gradient", [Pure, SameOperandsAndResultType]> {
  let summary = "its operand, through which no gradient flows";
  let description = [{
    The forward's value is the operand's; autodiff sends no gradient through it (its VJP is
    zero). The importer writes it for the straight-through estimator of a quantization
    (y = fake_quant(x) + where(in_range, x - stop_gradient(x), 0): the value of the fake
    quantization, the gradient of the identity where x is in range). It is replaced by its
    operand once the training step is built (and in a forward plan), so no kernel runs it.

    ```mlir
    %d = plait.stop_gradient %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

def Plait_GatherGradOp : Plait_Op<"gather_grad", [Pure]> {
  let summary = "scatter-add of gather's output gradient into a zero tensor shaped like data";
  let description = [{
    The VJP of `plait.gather` with respect to `data`: result[..., indices[j], ...] += grad[..., j, ...].

    ```mlir
    %dt = plait.gather_grad %g, %ids {axis = 0 : i64}
        : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$grad, Plait_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_Conv2dGradInputOp : Plait_Op<"conv2d_grad_input", [Pure]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    Attributes as the forward `plait.conv2d`; the result has the input's shape.

    ```mlir
    %dx = plait.conv2d_grad_input %g, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
        dilations = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$grad, Plait_FloatTensor:$w,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_Conv2dGradWeightOp : Plait_Op<"conv2d_grad_weight", [Pure]> {
  let summary = "gradient of conv2d with respect to its weight";
  let description = [{
    Attributes as the forward `plait.conv2d`; the result has the weight's shape.

    ```mlir
    %dw = plait.conv2d_grad_weight %x, %g {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
        dilations = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<1x3x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x3x3x3xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$grad,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AttentionGradOp : Plait_Op<"attention_grad", [Pure]> {
  let summary = "gradients of plait.attention with respect to q, k and v";
  let description = [{
    Operands: the forward's q, k, v, its results out and lse, and dout (out's type); the
    attributes are the forward's. With delta_i = dot(dout_i, out_i), p_ij = exp(s_ij - lse_i),
    ds_ij = p_ij * (dot(dout_i, v_j) - delta_i): dq_i = scale * sum_j ds_ij k_j,
    dk_j = scale * sum_i ds_ij q_i, dv_j = sum_i p_ij dout_i. The scores are recomputed a
    block of rows at a time. With the forward's `dropout` (and `step`), m_ij its mask (0 or
    1 / (1 - dropout)): dv_j = sum_i p_ij m_ij dout_i and ds_ij = p_ij * (m_ij dot(dout_i,
    v_j) - delta_i), delta_i still dot(dout_i, out_i).

    ```mlir
    %dq, %dk, %dv = plait.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.125 : f64, causal = true}
        : (tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>,
           tensor<2x16x4x64xf32>, tensor<2x4x16xf32>, tensor<2x16x4x64xf32>)
        -> (tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>, tensor<2x16x4x64xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$q, Plait_FloatTensor:$k, Plait_FloatTensor:$v,
                       Plait_FloatTensor:$out, StaticShapeTensorOf<[F32]>:$lse,
                       Plait_FloatTensor:$dout, Optional<StaticShapeTensorOf<[F32]>>:$step,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       DefaultValuedAttr<I64Attr, "0">:$seed,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Plait_FloatTensor:$dq, Plait_FloatTensor:$dk, Plait_FloatTensor:$dv);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_LayerNormGradOp : Plait_Op<"layer_norm_grad", [Pure]> {
  let summary = "gradients of plait.layer_norm with respect to x, scale and (optionally) bias";
  let description = [{
    Operands: the forward's x and scale, and dy (x's type); the attributes are the forward's.
    Per row of the normalised axes [axis, rank), with mean and rstd recomputed from x,
    xhat = (x - mean) * rstd and g = dy * scale: dx = rstd * (g - mean(g) - xhat *
    mean(g * xhat)); over all rows, dscale = sum(dy * xhat) and, when a third result is
    asked for, dbias = sum(dy), both of the scale's type. One kernel reads x and dy once
    each instead of the decomposed backward's chain of reductions and elementwise kernels.

    ```mlir
    %dx, %dg, %db = plait.layer_norm_grad %x, %g, %dy {axis = -1 : i64, epsilon = 1.0e-05 : f64}
        : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>)
        -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$scale, Plait_FloatTensor:$dy,
                       I64Attr:$axis, DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Plait_FloatTensor:$dx, Plait_FloatTensor:$dscale,
                      Optional<Plait_FloatTensor>:$dbias);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_BatchNormGradOp : Plait_Op<"batch_norm_grad", [Pure]> {
  let summary = "gradients of plait.batch_norm's y with respect to x, scale and bias";
  let description = [{
    Operands: the forward's x, scale, mean and var, and dy (x's type); epsilon is the
    forward's. Per channel c, with rstd = 1 / sqrt(var[c] + epsilon), xhat = (x - mean[c]) *
    rstd and n the values per channel: dbias[c] = sum(dy), dscale[c] = sum(dy * xhat), and
    dx = scale[c] * rstd * (dy - dbias[c] / n - xhat * dscale[c] / n). One kernel reads x and
    dy twice per channel (the second time from cache) and writes dx. For bf16 and f16 the
    kernels take mean and var from x again, in f32 as the forward computed them, not the
    rounded operands (PyTorch keeps a 16-bit input's statistics in f32).

    `sync`: the gradient of a SyncBatchNorm's y (plait.batch_norm's `sync`), whose statistics
    are every rank's: dx reads the rank-mean of every rank's two sums, n stays this rank's
    count, and dscale and dbias are the rank-mean of the ranks' sums (what the data-parallel
    gradient averaging of this rank's sums gives; every rank holds it, so the averaging leaves
    it as it is). plait-shard lowers it to batch_norm_grad_sums, an all_reduce (mean) of
    them, and this op with `sums` ([2C] in the compute type: sum(dy) then sum(dy * xhat),
    each the mean over the ranks: they are dbias and dscale, and the kernel takes no sums of
    its own, one pass over x and dy), or drops it at world size 1 (and where nothing reads
    dx: then dscale and dbias are this rank's sums, which the averaging averages). With `sums`
    the mean and var operands are read for every element type (the rounded ones for
    bf16/f16: this rank's x does not hold the global statistics).

    ```mlir
    %dx, %dg, %db = plait.batch_norm_grad %x, %g, %mean, %var, %dy {epsilon = 1.0e-05 : f64}
        : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>)
        -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$scale, Plait_FloatTensor:$mean,
                       Plait_FloatTensor:$var, Plait_FloatTensor:$dy,
                       Optional<Plait_FloatTensor>:$sums,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon, UnitAttr:$sync);
  let results = (outs Plait_FloatTensor:$dx, Plait_FloatTensor:$dscale, Plait_FloatTensor:$dbias);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_BatchNormGradSumsOp : Plait_Op<"batch_norm_grad_sums", [Pure]> {
  let summary = "this rank's sums of a SyncBatchNorm's gradient, to average over the ranks";
  let description = [{
    Operands as plait.batch_norm_grad's x, mean, var (the global statistics) and dy: per
    channel c, with xhat = (x - mean[c]) / sqrt(var[c] + epsilon), [sum(dy) (C values),
    sum(dy * xhat) (C values)] over this rank's values, as batch_norm_grad sums them, in the
    compute type (f32 for bf16/f16 x, else x's element type). A SyncBatchNorm's backward
    all-reduces them (mean) for batch_norm_grad's `sums`.

    ```mlir
    %s = plait.batch_norm_grad_sums %x, %mean, %var, %dy {epsilon = 1.0e-05 : f64}
        : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x3x4x4xf32>) -> tensor<6xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$mean, Plait_FloatTensor:$var,
                       Plait_FloatTensor:$dy, DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Plait_FloatTensor:$sums);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RmsNormGradOp : Plait_Op<"rms_norm_grad", [Pure]> {
  let summary = "gradients of plait.rms_norm with respect to x and scale";
  let description = [{
    Operands: the forward's x and scale, and dy (x's type); the attributes are the forward's.
    Per row, with r = 1 / sqrt(mean(x^2) + epsilon) recomputed from x, xr = x * r and
    g = dy * scale: dx = r * (g - xr * mean(g * xr)); over all rows, dscale = sum(dy * xr).

    ```mlir
    %dx, %dg = plait.rms_norm_grad %x, %g, %dy {axis = -1 : i64, epsilon = 1.0e-06 : f64}
        : (tensor<2x8xf32>, tensor<8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$scale, Plait_FloatTensor:$dy,
                       I64Attr:$axis, DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs Plait_FloatTensor:$dx, Plait_FloatTensor:$dscale);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_MaxPool2dGradOp : Plait_Op<"max_pool2d_grad", [Pure]> {
  let summary = "gradient of max_pool2d: each window's gradient goes to its (first) maximum";
  let description = [{
    Attributes as the forward `plait.max_pool2d`; the result has `x`'s type.

    ```mlir
    %dx = plait.max_pool2d_grad %x, %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
        : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$x, Plait_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
                       DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AvgPool2dGradOp : Plait_Op<"avg_pool2d_grad", [Pure]> {
  let summary = "gradient of avg_pool2d: each window's gradient spread over its elements";
  let description = [{
    Attributes as the forward `plait.avg_pool2d`; the result has the input's shape.

    ```mlir
    %dx = plait.avg_pool2d_grad %g {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>,
        pads = array<i64: 0, 0, 0, 0>} : (tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

class Plait_LossGradOp<string mnemonic, string doc> :
    Plait_Op<mnemonic, [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = doc;
  let arguments = (ins Plait_FloatTensor:$input, Plait_IndexTensor:$target,
                       Plait_FloatTensor:$grad, Optional<Plait_FloatTensor>:$weight,
                       DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<F64Attr>:$label_smoothing);
  let results = (outs Plait_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_SoftmaxCrossEntropyGradOp : Plait_LossGradOp<"softmax_cross_entropy_grad",
    "gradient of softmax_cross_entropy with respect to the logits"> {
  let description = [{
    `grad` is the loss's gradient (a scalar for mean/sum, target-shaped for none);
    attributes as the forward op. Result: (softmax(input) - onehot(target)) * w * grad / norm,
    with `label_smoothing` e: (softmax(input) - (1 - e) * onehot(target) - e / C) * grad / norm,
    or with class weights w (summing to W): (((1 - e) * w[t] + e / C * W) * softmax(input)
    - (1 - e) * w[t] * onehot(target) - e / C * w) * grad / norm.
    For bf16 or f16 logits `grad` may be f32: the gradient is then computed in f32 from the
    widened logits and rounded once to their type (plait-fuse-loss-cast's form of a cast to
    f32, the f32 gradient, and a cast back).

    ```mlir
    %dl = plait.softmax_cross_entropy_grad %logits, %labels, %g {reduction = "mean"}
        : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
    ```
  }];
}

def Plait_NllLossGradOp : Plait_LossGradOp<"nll_loss_grad",
    "gradient of nll_loss with respect to the log-probabilities"> {
  let description = [{
    Result: -onehot(target) * w * grad / norm.

    ```mlir
    %dl = plait.nll_loss_grad %logp, %labels, %g {reduction = "sum"}
        : (tensor<8x10xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x10xf32>
    ```
  }];
}

include "ir/PlaitOptimizerOps.td"

#endif // PLAIT_TRAIN_OPS_TD
