// Losses of the plait dialect.
// Included by ir/PlaitOps.td, the dialect's one TableGen target; each op lowers to the
// runtime kernel of the same mnemonic.
#ifndef PLAIT_LOSS_OPS_TD
#define PLAIT_LOSS_OPS_TD

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

#endif // PLAIT_LOSS_OPS_TD
