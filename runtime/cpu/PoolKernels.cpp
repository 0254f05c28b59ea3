// 2-D pooling over NCHW: max_pool2d (dilated, padding never wins) and avg_pool2d, their
// planes split across the rank's threads (Parallel.h; each plane on one thread).
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/PoolSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::cpu {
namespace {

Status planPool(const KernelCall &call, std::string_view kernel, bool hasDilations,
                PoolShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 1, 1, 1));
  const TensorView &x = call.inputs[0], &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, out));
  return planPoolShape(kernel, call.attrs, hasDilations, x, out, "output", s);
}

/// Max over the window positions that lie inside the input. NaN wins, as in PyTorch; a
/// window with no position inside the input (only possible with odd dilations) gives -inf.
/// A row of windows at a time (maxPoolRow), written straight into the output row.
template <typename T> void maxPool(const T *x, T *y, const PoolShape &s) {
  const InteriorColumns inner = interiorColumns(s);
  parallelFor(s.planes, poolPlaneGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T *plane = x + p * s.height * s.width;
      T *out = y + p * s.outHeight * s.outWidth;
      for (int64_t oh = 0; oh < s.outHeight; ++oh)
        maxPoolRow<T, false>(plane, s, inner, oh, out + oh * s.outWidth, nullptr);
    }
  });
}

/// Average over the window, with avgPoolSpan's cut windows and avgPoolDivisor's divisor.
template <typename T> void avgPool(const T *x, T *y, const PoolShape &s, bool countPad) {
  const Window2d &w = s.window;
  parallelFor(s.planes, poolPlaneGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    T *out = y + begin * s.outHeight * s.outWidth;
    for (int64_t p = begin; p < end; ++p) {
      const T *plane = x + p * s.height * s.width;
      for (int64_t oh = 0; oh < s.outHeight; ++oh) {
        AvgPoolSpan rows = avgPoolSpan(w, 0, oh, s.height);
        for (int64_t ow = 0; ow < s.outWidth; ++ow) {
          AvgPoolSpan cols = avgPoolSpan(w, 1, ow, s.width);
          double sum = 0;
          for (int64_t ih = rows.begin; ih < rows.end; ++ih)
            for (int64_t iw = cols.begin; iw < cols.end; ++iw)
              sum += plane[ih * s.width + iw];
          int64_t count = avgPoolDivisor(rows, cols, countPad);
          *out++ = count > 0 ? T(sum / double(count)) : T(0);
        }
      }
    }
  });
}

Status maxPoolKernel(const KernelCall &call) {
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPool(call, "max_pool2d", true, s));
  if (hasHalfTensor(call)) // a few images at a time (batchStagedWholeInputs)
    return runStagedInF32Entries(call, &maxPoolKernel);
  return dispatchF32F64("max_pool2d", call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    maxPool(call.inputs[0].as<T>(), call.outputs[0].as<T>(), s);
    return Status();
  });
}

Status avgPoolKernel(const KernelCall &call) {
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPool(call, "avg_pool2d", false, s));
  if (hasHalfTensor(call)) // a few images at a time (batchStagedWholeInputs)
    return runStagedInF32Entries(call, &avgPoolKernel);
  bool countPad = call.attrs.getBool("count_include_pad", false);
  return dispatchF32F64("avg_pool2d", call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    avgPool(call.inputs[0].as<T>(), call.outputs[0].as<T>(), s, countPad);
    return Status();
  });
}

} // namespace

void registerPoolKernels() {
  registerKernel("max_pool2d", &maxPoolKernel);
  registerKernel("avg_pool2d", &avgPoolKernel);
}

} // namespace plait::rt::cpu
