// conv2d geometry and the im2col/col2im column layout shared by conv2d and its adjoints.
#include "runtime/cpu/ConvSupport.h"

#include <algorithm>

#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {

Status planConvShape(std::string_view kernel, const Attrs &attrs, const TensorView &x,
                     const TensorView &w, const TensorView &y, std::string_view yName,
                     ConvShape &s) {
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, w));
  PLAIT_RETURN_IF_ERROR(checkSameDtype(kernel, x, y));
  if (x.rank() != 4 || w.rank() != 4)
    return Status::errorf("{}: x and w must be 4-D, got {} and {}", kernel, shapeString(x.shape),
                          shapeString(w.shape));
  s.batch = x.shape[0];
  s.channels = x.shape[1];
  s.height = x.shape[2];
  s.width = x.shape[3];
  s.filters = w.shape[0];
  s.groupChannels = w.shape[1];
  s.group = attrs.getInt("group", 1);
  if (s.group < 1 || s.channels % s.group || s.filters % s.group ||
      s.channels / s.group != s.groupChannels)
    return Status::errorf("{}: group {} does not fit x {} and w {}", kernel, s.group,
                          shapeString(x.shape), shapeString(w.shape));
  s.window.kernel[0] = w.shape[2];
  s.window.kernel[1] = w.shape[3];
  PLAIT_RETURN_IF_ERROR(parseWindow(kernel, attrs, true, s.window));
  s.window.ceilMode = false;
  s.outHeight = s.window.outputSize(0, s.height);
  s.outWidth = s.window.outputSize(1, s.width);
  return checkShape(kernel, yName, y.shape, {s.batch, s.filters, s.outHeight, s.outWidth});
}

namespace {

/// Channels per chunk of an im2col or col2im split across threads: each channel's kernel
/// positions write (or gather into) its own rows (or plane), so a chunk of channels gives
/// the same bits on any number of threads.
int64_t channelGrain(const ConvShape &s) {
  return grainFor(kElementGrain, s.window.kernel[0] * s.window.kernel[1] * s.outPlane());
}

} // namespace

template <typename T> void im2col(const T *x, const ConvShape &s, T *col) {
  const Window2d &win = s.window;
  parallelFor(s.groupChannels, channelGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      for (int64_t i = 0; i < win.kernel[0]; ++i)
        for (int64_t j = 0; j < win.kernel[1]; ++j) {
          T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * s.outPlane();
          const T *plane = x + c * s.inPlane();
          for (int64_t oh = 0; oh < s.outHeight; ++oh) {
            T *dst = row + oh * s.outWidth;
            int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
            if (ih < 0 || ih >= s.height) {
              std::fill(dst, dst + s.outWidth, T(0));
              continue;
            }
            const T *src = plane + ih * s.width;
            int64_t iw = j * win.dilation[1] - win.padBegin[1];
            for (int64_t ow = 0; ow < s.outWidth; ++ow, iw += win.stride[1])
              dst[ow] = (iw >= 0 && iw < s.width) ? src[iw] : T(0);
          }
        }
  });
}

template <typename T> void col2im(const T *col, const ConvShape &s, T *x) {
  const Window2d &win = s.window;
  parallelFor(s.groupChannels, channelGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    std::fill(x + begin * s.inPlane(), x + end * s.inPlane(), T(0));
    for (int64_t c = begin; c < end; ++c)
      for (int64_t i = 0; i < win.kernel[0]; ++i)
        for (int64_t j = 0; j < win.kernel[1]; ++j) {
          const T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * s.outPlane();
          T *plane = x + c * s.inPlane();
          for (int64_t oh = 0; oh < s.outHeight; ++oh) {
            int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
            if (ih < 0 || ih >= s.height)
              continue;
            const T *src = row + oh * s.outWidth;
            T *dst = plane + ih * s.width;
            int64_t iw = j * win.dilation[1] - win.padBegin[1];
            for (int64_t ow = 0; ow < s.outWidth; ++ow, iw += win.stride[1])
              if (iw >= 0 && iw < s.width)
                dst[iw] += src[ow];
          }
        }
  });
}

// The kernels compute in f32 and f64 only (half precision is staged through f32).
template void im2col<float>(const float *, const ConvShape &, float *);
template void im2col<double>(const double *, const ConvShape &, double *);
template void col2im<float>(const float *, const ConvShape &, float *);
template void col2im<double>(const double *, const ConvShape &, double *);

} // namespace plait::rt::cpu
