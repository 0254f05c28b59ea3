// dropout_mask: the per-step dropout mask, drawn by the counter-based hash of
// codegen/schema/DropoutMask.h (which the CUDA kernel shares), split over the threads by
// elements: each element's draw depends on its index only, so any split gives the same mask.
#include <cmath>

#include "codegen/schema/DropoutMask.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

template <typename T> T storeValue(double v) {
  if constexpr (std::is_same_v<T, Bf16Bits>)
    return Bf16Bits{floatToBf16(float(v))};
  else if constexpr (std::is_same_v<T, F16Bits>)
    return F16Bits{floatToF16(float(v))};
  else
    return T(v);
}

Status dropoutMaskKernel(const KernelCall &call) {
  constexpr const char *kName = "dropout_mask";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  const TensorView &stepView = call.inputs[0];
  TensorView &y = call.outputs[0];
  if (stepView.dtype != DType::F32 || stepView.numel() != 1)
    return Status::errorf("{}: step must be one f32 value, got {} {}", kName,
                          dtypeName(stepView.dtype), shapeString(stepView.shape));
  const double ratio = call.attrs.getFloat("ratio", -1.0);
  if (!(ratio >= 0.0 && ratio < 1.0))
    return Status::errorf("{}: ratio {} is not in [0, 1)", kName, ratio);
  const float step = *stepView.as<float>();
  if (!(step >= 0.0f) || step > 16777216.0f)
    return Status::errorf("{}: step {} is not a step number", kName, step);
  const uint64_t key = dropout::streamKey(uint64_t(call.attrs.getInt("seed", 0)),
                                          uint64_t(call.attrs.getInt("stream", 0)),
                                          uint64_t(step), call.rank);
  const uint64_t threshold = dropout::threshold(ratio);
  const double scale = 1.0 / (1.0 - ratio);
  const int64_t n = y.numel();
  auto fill = [&](auto tag) -> Status {
    using T = decltype(tag);
    T *out = y.as<T>();
    const T kept = storeValue<T>(scale), dropped = storeValue<T>(0.0);
    parallelFor(n, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = dropout::keep(key, uint64_t(i), threshold) ? kept : dropped;
    });
    return Status();
  };
  switch (y.dtype) {
  case DType::F32:
    return fill(float{});
  case DType::F64:
    return fill(double{});
  case DType::BF16:
    return fill(Bf16Bits{});
  case DType::F16:
    return fill(F16Bits{});
  default:
    return Status::errorf("{}: the mask must be a float tensor, got {}", kName,
                          dtypeName(y.dtype));
  }
}

} // namespace

void registerRandomKernels() { registerKernel("dropout_mask", &dropoutMaskKernel); }

} // namespace plait::rt::cpu
