// conv2d (NCHW, grouped, dilated, optional bias) as im2col followed by one GEMM per group.
#include <algorithm>
#include <cstring>

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Window.h"

namespace plait::rt::cpu {
namespace {

/// Geometry of one conv2d call, checked against the tensors.
struct ConvShape {
  int64_t batch, channels, height, width; // x
  int64_t filters, groupChannels;         // w: [filters, groupChannels, kernel...]
  int64_t group, outHeight, outWidth;
  Window2d window;
};

Status planConv(const KernelCall &call, ConvShape &s) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, "conv2d", 2, 3, 1));
  const TensorView &x = call.inputs[0], &w = call.inputs[1];
  const TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype("conv2d", x, w));
  PLAIT_RETURN_IF_ERROR(checkSameDtype("conv2d", x, out));
  if (x.rank() != 4 || w.rank() != 4)
    return Status::errorf("conv2d: x and w must be 4-D, got {} and {}", shapeString(x.shape),
                          shapeString(w.shape));
  s.batch = x.shape[0];
  s.channels = x.shape[1];
  s.height = x.shape[2];
  s.width = x.shape[3];
  s.filters = w.shape[0];
  s.groupChannels = w.shape[1];
  s.group = call.attrs.getInt("group", 1);
  if (s.group < 1 || s.channels % s.group || s.filters % s.group ||
      s.channels / s.group != s.groupChannels)
    return Status::errorf("conv2d: group {} does not fit x {} and w {}", s.group,
                          shapeString(x.shape), shapeString(w.shape));
  s.window.kernel[0] = w.shape[2];
  s.window.kernel[1] = w.shape[3];
  PLAIT_RETURN_IF_ERROR(parseWindow("conv2d", call.attrs, true, s.window));
  s.window.ceilMode = false;
  s.outHeight = s.window.outputSize(0, s.height);
  s.outWidth = s.window.outputSize(1, s.width);
  PLAIT_RETURN_IF_ERROR(checkShape("conv2d", "output", out.shape,
                                   {s.batch, s.filters, s.outHeight, s.outWidth}));
  if (call.inputs.size() > 2) {
    PLAIT_RETURN_IF_ERROR(checkSameDtype("conv2d", x, call.inputs[2]));
    PLAIT_RETURN_IF_ERROR(checkShape("conv2d", "bias", call.inputs[2].shape, {s.filters}));
  }
  return Status();
}

/// Lays out the receptive fields of `channels` input planes as columns:
/// col[(c * kH + i) * kW + j][oh * OW + ow] = x[c][oh*sH - pT + i*dH][ow*sW - pL + j*dW],
/// zero where that position falls in the padding.
template <typename T>
void im2col(const T *x, int64_t channels, const ConvShape &s, T *col) {
  const Window2d &win = s.window;
  int64_t outPlane = s.outHeight * s.outWidth;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < win.kernel[0]; ++i)
      for (int64_t j = 0; j < win.kernel[1]; ++j) {
        T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * outPlane;
        const T *plane = x + c * s.height * s.width;
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
}

template <typename T> Status convolve(const KernelCall &call, const ConvShape &s) {
  const T *x = call.inputs[0].as<T>(), *w = call.inputs[1].as<T>();
  const T *bias = call.inputs.size() > 2 ? call.inputs[2].as<T>() : nullptr;
  T *out = call.outputs[0].as<T>();
  const Window2d &win = s.window;
  int64_t filtersPerGroup = s.filters / s.group;
  int64_t patch = s.groupChannels * win.kernel[0] * win.kernel[1];
  int64_t outPlane = s.outHeight * s.outWidth, inPlane = s.height * s.width;
  // A 1x1 unpadded stride-1 convolution reads x itself as the column matrix.
  bool pointwise = win.kernel[0] == 1 && win.kernel[1] == 1 && win.stride[0] == 1 &&
                   win.stride[1] == 1 && win.padBegin[0] == 0 && win.padBegin[1] == 0 &&
                   win.padEnd[0] == 0 && win.padEnd[1] == 0;
  std::vector<T> col(pointwise ? 0 : patch * outPlane);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      const T *image = x + (n * s.channels + g * s.groupChannels) * inPlane;
      const T *columns = image;
      if (!pointwise) {
        im2col(image, s.groupChannels, s, col.data());
        columns = col.data();
      }
      T *result = out + (n * s.filters + g * filtersPerGroup) * outPlane;
      PLAIT_RETURN_IF_ERROR(gemmRowMajor<T>(false, false, filtersPerGroup, outPlane, patch, 1.0,
                                            w + g * filtersPerGroup * patch, patch, columns,
                                            outPlane, 0.0, result, outPlane));
    }
  if (bias)
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t m = 0; m < s.filters; ++m) {
        T *plane = out + (n * s.filters + m) * outPlane;
        T b = bias[m];
        for (int64_t p = 0; p < outPlane; ++p)
          plane[p] += b;
      }
  return Status();
}

Status conv2dKernel(const KernelCall &call) {
  ConvShape s;
  PLAIT_RETURN_IF_ERROR(planConv(call, s));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &conv2dKernel);
  return dispatchF32F64("conv2d", call.inputs[0].dtype, [&](auto tag) -> Status {
    return convolve<decltype(tag)>(call, s);
  });
}

} // namespace

void registerConvKernels() { registerKernel("conv2d", &conv2dKernel); }

} // namespace plait::rt::cpu
