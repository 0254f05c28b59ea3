// Shape, reduction and target rules shared by the classification losses and their gradients.
#include "runtime/cpu/LossSupport.h"

#include <algorithm>

#include "runtime/cpu/KernelSupport.h"

namespace plait::rt::cpu {

Status checkLossGradDtype(std::string_view kernel, const TensorView &input,
                          const TensorView &grad) {
  if (grad.dtype == DType::F32 && (input.dtype == DType::BF16 || input.dtype == DType::F16))
    return Status();
  return checkSameDtype(kernel, input, grad);
}

Status planLossInput(std::string_view kernel, const TensorView &input, const TensorView &target,
                     LossShape &s) {
  PLAIT_RETURN_IF_ERROR(checkIndexDtype(kernel, "target", target));
  if (input.rank() < 2)
    return Status::errorf("{}: input must be [N, C, ...], got {}", kernel,
                          shapeString(input.shape));
  s.batch = input.shape[0];
  s.classes = input.shape[1];
  s.spatial = product(input.shape, 2, input.shape.size());
  return Status();
}

Status planLossTargets(std::string_view kernel, const Attrs &attrs, const TensorView &input,
                       const TensorView &target, const TensorView *weight, LossShape &s) {
  s.targetShape = {s.batch};
  s.targetShape.append(ShapeRef(input.shape).slice(2, input.shape.size()));
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "target", target.shape, s.targetShape));
  if (weight) {
    // f32 class weights with bf16 / f16 logits: plait-fuse-loss-cast's form
    if (!(weight->dtype == DType::F32 && (input.dtype == DType::BF16 || input.dtype == DType::F16)))
      PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, *weight));
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "weight", weight->shape, {s.classes}));
  }
  std::string_view reduction = attrs.getStrView("reduction", "mean");
  if (reduction == "mean")
    s.reduction = Reduction::Mean;
  else if (reduction == "sum")
    s.reduction = Reduction::Sum;
  else if (reduction == "none")
    s.reduction = Reduction::None;
  else
    return Status::errorf("{}: reduction must be mean, sum or none, got '{}'", kernel,
                          reduction);
  s.hasIgnore = attrs.has("ignore_index");
  s.ignoreIndex = attrs.getInt("ignore_index", 0);
  s.smoothing = attrs.getFloat("label_smoothing", 0.0);
  if (!(s.smoothing >= 0 && s.smoothing <= 1))
    return Status::errorf("{}: label_smoothing must be in [0, 1], got {}", kernel, s.smoothing);
  if (s.smoothing > 0 && kernel.rfind("nll_loss", 0) == 0)
    return Status::errorf("{}: label_smoothing is softmax_cross_entropy's", kernel);
  return Status();
}

template <typename T>
Status resolveLossTargets(std::string_view kernel, const LossShape &s, const TensorView &target,
                          const T *weight, LossTargets &out) {
  int64_t positions = s.positions();
  std::fill(out.classes, out.classes + positions, LossTargets::kIgnored);
  std::fill(out.weights, out.weights + positions, 0.0);
  double weightSum = 0;
  for (int64_t p = 0; p < positions; ++p) {
    int64_t t = indexAt(target, p);
    if (s.hasIgnore && t == s.ignoreIndex)
      continue;
    if (t < 0 || t >= s.classes)
      return Status::errorf("{}: target {} is out of range for {} classes", kernel, t,
                            s.classes);
    out.classes[p] = t;
    out.weights[p] = weight ? double(weight[t]) : 1.0;
    weightSum += out.weights[p];
  }
  out.normalizer = s.reduction == Reduction::Mean ? weightSum : 1.0;
  return Status();
}

// The kernels compute in f32 and f64 only (half precision is staged through f32).
template Status resolveLossTargets<float>(std::string_view, const LossShape &,
                                          const TensorView &, const float *, LossTargets &);
template Status resolveLossTargets<double>(std::string_view, const LossShape &,
                                           const TensorView &, const double *, LossTargets &);

} // namespace plait::rt::cpu
