// dropout_mask: the per-step dropout mask, drawn by the counter-based hash of
// codegen/schema/DropoutMask.h (which the CUDA kernel shares), split over the threads by
// elements: each element's draw depends on its index only, so any split gives the same mask.
// random: uniform or normal values drawn the same way (codegen/schema/RandomDraw.h).
#include <cmath>

#include "codegen/schema/DropoutMask.h"
#include "codegen/schema/RandomDraw.h"
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

/// The key of a drawing kernel's call (one f32 step operand, one result): DropoutMask.h's
/// streamKey of its seed, stream, step and rank.
Status drawKey(const char *name, const KernelCall &call, uint64_t &key) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, name, 1, 1, 1));
  return drawKeyOf(name, call, call.inputs[0], key);
}

/// Fills the float result `y` with draw(T{}, i, significand bits) for each element i, split
/// over the threads by elements; other types are refused ("the WHAT must be a float tensor").
template <typename Draw>
Status fillDraws(const char *name, const char *what, TensorView &y, Draw &&draw) {
  auto fill = [&](auto tag, int bits) -> Status {
    using T = decltype(tag);
    T *out = y.as<T>();
    parallelFor(y.numel(), kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = draw(tag, uint64_t(i), bits);
    });
    return Status();
  };
  switch (y.dtype) {
  case DType::F32:
    return fill(float{}, 24);
  case DType::F64:
    return fill(double{}, 53);
  case DType::BF16:
    return fill(Bf16Bits{}, 8);
  case DType::F16:
    return fill(F16Bits{}, 11);
  default:
    return Status::errorf("{}: the {} must be a float tensor, got {}", name, what,
                          dtypeName(y.dtype));
  }
}

Status dropoutMaskKernel(const KernelCall &call) {
  constexpr const char *kName = "dropout_mask";
  uint64_t key = 0;
  PLAIT_RETURN_IF_ERROR(drawKey(kName, call, key));
  const double ratio = call.attrs.getFloat("ratio", -1.0);
  if (!(ratio >= 0.0 && ratio < 1.0))
    return Status::errorf("{}: ratio {} is not in [0, 1)", kName, ratio);
  const uint64_t threshold = dropout::threshold(ratio);
  const double scale = 1.0 / (1.0 - ratio);
  return fillDraws(kName, "mask", call.outputs[0], [&](auto tag, uint64_t i, int) {
    using T = decltype(tag);
    return storeValue<T>(dropout::keep(key, i, threshold) ? scale : 0.0);
  });
}

Status randomKernel(const KernelCall &call) {
  constexpr const char *kName = "random";
  uint64_t key = 0;
  PLAIT_RETURN_IF_ERROR(drawKey(kName, call, key));
  const std::string distribution = call.attrs.getStr("distribution", "");
  const bool normal = distribution == "normal";
  if (!normal && distribution != "uniform")
    return Status::errorf("{}: distribution '{}' is not uniform or normal", kName, distribution);
  const double a = call.attrs.getFloat("a", 0.0), b = call.attrs.getFloat("b", 1.0);
  return fillDraws(kName, "result", call.outputs[0], [&](auto tag, uint64_t i, int bits) {
    using T = decltype(tag);
    return storeValue<T>(normal ? random::normal(key, i, a, b)
                                : random::uniform(key, i, bits, a, b));
  });
}

} // namespace

void registerRandomKernels() {
  registerKernel("dropout_mask", &dropoutMaskKernel);
  registerKernel("random", &randomKernel);
}

} // namespace plait::rt::cpu
