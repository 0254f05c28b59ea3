// Classification losses as ONNX defines them: softmax_cross_entropy and nll_loss, with
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
// optional class weights, ignore_index and mean/sum/none reduction.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {
namespace {

enum class Reduction { Mean, Sum, None };

/// Shape facts of a loss call: input [N, C, d...] seen as [N, C, D], target [N, d...].
struct LossShape {
  int64_t batch = 0, classes = 0, spatial = 1;
  Reduction reduction = Reduction::Mean;
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
};

Status planLoss(const KernelCall &call, std::string_view kernel, LossShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 2, 3, 1));
  const TensorView &input = call.inputs[0], &target = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, out));
  if (target.dtype != DType::I64 && target.dtype != DType::I32)
    return Status::errorf("{}: target must be i64 or i32, got {}", kernel,
                          dtypeName(target.dtype));
  if (input.rank() < 2)
    return Status::errorf("{}: input must be [N, C, ...], got {}", kernel,
                          shapeString(input.shape));
  s.batch = input.shape[0];
  s.classes = input.shape[1];
  s.spatial = product(input.shape, 2, input.shape.size());
  std::vector<int64_t> expected{s.batch};
  expected.insert(expected.end(), input.shape.begin() + 2, input.shape.end());
  PLAIT_RETURN_IF_ERROR(checkShape(kernel, "target", target.shape, expected));
  if (call.inputs.size() > 2) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, input, call.inputs[2]));
    PLAIT_RETURN_IF_ERROR(checkShape(kernel, "weight", call.inputs[2].shape, {s.classes}));
  }
  std::string reduction = call.attrs.getStr("reduction", "mean");
  if (reduction == "mean")
    s.reduction = Reduction::Mean;
  else if (reduction == "sum")
    s.reduction = Reduction::Sum;
  else if (reduction == "none")
    s.reduction = Reduction::None;
  else
    return Status::errorf("{}: reduction must be mean, sum or none, got '{}'", kernel,
                          reduction);
  PLAIT_RETURN_IF_ERROR(
      checkShape(kernel, "output", out.shape,
                 s.reduction == Reduction::None ? expected : std::vector<int64_t>{}));
  s.hasIgnore = call.attrs.has("ignore_index");
  s.ignoreIndex = call.attrs.getInt("ignore_index", 0);
  return Status();
}

/// Per position (n, d): loss = -w[t] * logp[n, t, d] and weight w[t] (0 when ignored).
/// `kFromLogits` takes log_softmax over the class axis first (max-shifted, summed in double).
template <typename T, bool kFromLogits>
Status computeLoss(const KernelCall &call, std::string_view kernel, const LossShape &s) {
  const T *input = call.inputs[0].as<T>();
  const TensorView &target = call.inputs[1];
  const T *weight = call.inputs.size() > 2 ? call.inputs[2].as<T>() : nullptr;
  int64_t positions = s.batch * s.spatial;
  std::vector<double> losses(s.reduction == Reduction::None ? positions : 0);
  double lossSum = 0, weightSum = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    const T *block = input + n * s.classes * s.spatial;
    for (int64_t d = 0; d < s.spatial; ++d) {
      int64_t p = n * s.spatial + d;
      int64_t t = target.dtype == DType::I64 ? target.as<int64_t>()[p]
                                             : (int64_t)target.as<int32_t>()[p];
      double loss = 0, w = 0;
      if (!(s.hasIgnore && t == s.ignoreIndex)) {
        if (t < 0 || t >= s.classes)
          return Status::errorf("{}: target {} is out of range for {} classes", kernel, t,
                                s.classes);
        w = weight ? double(weight[t]) : 1.0;
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
        loss = -w * logp;
      }
      if (s.reduction == Reduction::None)
        losses[p] = loss;
      lossSum += loss;
      weightSum += w;
    }
  }
  T *out = call.outputs[0].as<T>();
  if (s.reduction == Reduction::None)
    std::transform(losses.begin(), losses.end(), out, [](double v) { return T(v); });
  else if (s.reduction == Reduction::Sum)
    out[0] = T(lossSum);
  else
    out[0] = T(lossSum / weightSum); // every target ignored: 0/0 = NaN, as in PyTorch
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
