// 2-D pooling over NCHW: max_pool2d (dilated, padding never wins) and avg_pool2d.
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Window.h"

namespace plait::rt::cpu {
namespace {

struct PoolShape {
  int64_t planes, height, width, outHeight, outWidth;
  Window2d window;
};

Status planPool(const KernelCall &call, std::string_view kernel, bool hasDilations,
                PoolShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 1, 1, 1));
  const TensorView &x = call.inputs[0], &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, out));
  if (x.rank() != 4)
    return Status::errorf("{}: x must be 4-D (NCHW), got {}", kernel, shapeString(x.shape));
  std::vector<int64_t> extent = call.attrs.getInts("kernel");
  if (extent.size() != 2)
    return Status::errorf("{}: 'kernel' must have 2 entries, got {}", kernel, extent.size());
  s.window.kernel[0] = extent[0];
  s.window.kernel[1] = extent[1];
  PLAIT_RETURN_IF_ERROR(parseWindow(kernel, call.attrs, hasDilations, s.window));
  s.planes = x.shape[0] * x.shape[1];
  s.height = x.shape[2];
  s.width = x.shape[3];
  s.outHeight = s.window.outputSize(0, s.height);
  s.outWidth = s.window.outputSize(1, s.width);
  return checkShape(kernel, "output", out.shape,
                    {x.shape[0], x.shape[1], s.outHeight, s.outWidth});
}

/// Max over the window positions that lie inside the input. NaN wins, as in PyTorch; a
/// window with no position inside the input (only possible with odd dilations) gives -inf.
template <typename T> void maxPool(const T *x, T *y, const PoolShape &s) {
  const Window2d &w = s.window;
  for (int64_t p = 0; p < s.planes; ++p) {
    const T *plane = x + p * s.height * s.width;
    for (int64_t oh = 0; oh < s.outHeight; ++oh)
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
        T best = -std::numeric_limits<T>::infinity();
        int64_t h0 = oh * w.stride[0] - w.padBegin[0], w0 = ow * w.stride[1] - w.padBegin[1];
        for (int64_t i = 0; i < w.kernel[0]; ++i) {
          int64_t ih = h0 + i * w.dilation[0];
          if (ih < 0 || ih >= s.height)
            continue;
          const T *row = plane + ih * s.width;
          for (int64_t j = 0; j < w.kernel[1]; ++j) {
            int64_t iw = w0 + j * w.dilation[1];
            if (iw < 0 || iw >= s.width)
              continue;
            T v = row[iw];
            if (v > best || std::isnan(v))
              best = v;
          }
        }
        *y++ = best;
      }
  }
}

/// Average over the window. Windows are first cut at the end of the padded input (which only
/// matters with ceil_mode); with count_include_pad the divisor is the size of that cut window,
/// else the number of input positions in it -- PyTorch's and ONNX's rule.
template <typename T> void avgPool(const T *x, T *y, const PoolShape &s, bool countPad) {
  const Window2d &w = s.window;
  for (int64_t p = 0; p < s.planes; ++p) {
    const T *plane = x + p * s.height * s.width;
    for (int64_t oh = 0; oh < s.outHeight; ++oh) {
      int64_t h0 = oh * w.stride[0] - w.padBegin[0];
      int64_t h1 = std::min(h0 + w.kernel[0], s.height + w.padEnd[0]);
      int64_t padH = h1 - h0;
      h0 = std::max<int64_t>(h0, 0);
      h1 = std::min(h1, s.height);
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
        int64_t w0 = ow * w.stride[1] - w.padBegin[1];
        int64_t w1 = std::min(w0 + w.kernel[1], s.width + w.padEnd[1]);
        int64_t padW = w1 - w0;
        w0 = std::max<int64_t>(w0, 0);
        w1 = std::min(w1, s.width);
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw)
            sum += plane[ih * s.width + iw];
        int64_t count = countPad ? padH * padW : (h1 - h0) * (w1 - w0);
        *y++ = count > 0 ? T(sum / double(count)) : T(0);
      }
    }
  }
}

Status maxPoolKernel(const KernelCall &call) {
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPool(call, "max_pool2d", true, s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &maxPoolKernel);
  return dispatchF32F64("max_pool2d", call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    maxPool(call.inputs[0].as<T>(), call.outputs[0].as<T>(), s);
    return Status();
  });
}

Status avgPoolKernel(const KernelCall &call) {
  PoolShape s;
  PLAIT_RETURN_IF_ERROR(planPool(call, "avg_pool2d", false, s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &avgPoolKernel);
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
