// Classification losses as ONNX defines them: softmax_cross_entropy and nll_loss, with
// optional class weights, ignore_index and mean/sum/none reduction (rules in LossSupport.h).
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/LossSupport.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {
namespace {

Status planLoss(const KernelCall &call, std::string_view kernel, LossShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 2, 3, 1));
  const TensorView &input = call.inputs[0], &target = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, out));
  PLAIT_RETURN_IF_ERROR(planLossInput(kernel, input, target, s));
  const TensorView *weight = call.inputs.size() > 2 ? &call.inputs[2] : nullptr;
  PLAIT_RETURN_IF_ERROR(planLossTargets(kernel, call.attrs, input, target, weight, s));
  return checkShape(kernel, "output", out.shape, s.lossShape());
}

/// Per position (n, d): loss = -w[t] * logp[n, t, d] and weight w[t] (0 when ignored).
/// `kFromLogits` takes log_softmax over the class axis first (max-shifted, summed in double).
template <typename T, bool kFromLogits>
Status computeLoss(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const T *input = call.inputs[0].as<T>();
  const T *weight = call.inputs.size() > 2 ? call.inputs[2].as<T>() : nullptr;
  Scratch scratch(call, kernel);
  LossTargets targets; // workspace: a class and a weight per position
  PLAIT_RETURN_IF_ERROR(targets.allocate(scratch, s));
  PLAIT_RETURN_IF_ERROR(resolveLossTargets(kernel, s, call.inputs[1], weight, targets));
  int64_t positions = s.positions();
  double *losses = nullptr; // workspace, reduction none: the loss per position
  if (s.reduction == Reduction::None)
    PLAIT_RETURN_IF_ERROR(scratch.take(positions, losses));
  double lossSum = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    const T *block = input + n * s.classes * s.spatial;
    for (int64_t d = 0; d < s.spatial; ++d) {
      int64_t p = n * s.spatial + d;
      int64_t t = targets.classes[p];
      double loss = 0;
      if (t != LossTargets::kIgnored) {
        double logp = block[t * s.spatial + d];
        if (kFromLogits) {
          T m = -std::numeric_limits<T>::infinity();
          double sum = 0;
          bool contiguousRow = s.spatial == 1 && s.classes > 0; // [N, C]
          if constexpr (std::is_same_v<T, float>) {
            if (contiguousRow) {
              m = maxFloats(block, s.classes);
              sum = sumExpShifted(block, s.classes, m);
            }
          }
          if (!std::is_same_v<T, float> || !contiguousRow) {
            for (int64_t c = 0; c < s.classes; ++c)
              m = std::max(m, block[c * s.spatial + d]);
            for (int64_t c = 0; c < s.classes; ++c)
              sum += std::exp(block[c * s.spatial + d] - m);
          }
          logp = (logp - double(m)) - std::log(sum);
        }
        loss = -targets.weights[p] * logp;
      }
      if (s.reduction == Reduction::None)
        losses[p] = loss;
      lossSum += loss;
    }
  }
  T *out = call.outputs[0].as<T>();
  if (s.reduction == Reduction::None)
    std::transform(losses, losses + positions, out, [](double v) { return T(v); });
  else
    out[0] = T(lossSum / targets.normalizer); // sum: / 1, exact
  return Status();
}

template <bool kFromLogits> Status lossKernel(const KernelCall &call) {
  constexpr const char *kName = kFromLogits ? "softmax_cross_entropy" : "nll_loss";
  LossShape s;
  PLAIT_RETURN_IF_ERROR(planLoss(call, kName, s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &lossKernel<kFromLogits>);
  return dispatchF32F64(kName, call.inputs[0].dtype, [&](auto tag) -> Status {
    return computeLoss<decltype(tag), kFromLogits>(call, kName, s);
  });
}

} // namespace

void registerLossKernels() {
  registerKernel("softmax_cross_entropy", &lossKernel<true>);
  registerKernel("nll_loss", &lossKernel<false>);
}

} // namespace plait::rt::cpu
