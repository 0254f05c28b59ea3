// conv2d geometry and the im2col/col2im column layout shared by conv2d and its adjoints.
#include "runtime/cpu/ConvSupport.h"

#include <algorithm>
#include <utility>
#include <vector>

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
  const int64_t block = attrs.getInt("image_block", 1);
  if (block < 1)
    return Status::errorf("{}: image_block {} must be at least 1", kernel, block);
  s.imageBlock = std::max<int64_t>(std::min(block, s.batch), 1);
  const Window2d &win = s.window;
  s.winograd = attrs.getBool("winograd", false) &&
               winogradWindow(win.kernel[0], win.kernel[1], win.stride[0], win.stride[1],
                              win.dilation[0], win.dilation[1], s.group);
  return checkShape(kernel, yName, y.shape, {s.batch, s.filters, s.outHeight, s.outWidth});
}

namespace {

/// Channels per chunk of an im2col or col2im split across threads: each channel's kernel
/// positions write (or gather into) its own rows (or plane), so a chunk of channels gives
/// the same bits on any number of threads.
int64_t channelGrain(const ConvShape &s) {
  return grainFor(kElementGrain, s.window.kernel[0] * s.window.kernel[1] * s.outPlane());
}

/// The output columns [lo, hi) of one kernel column whose input column iw = ow * stride + off
/// lies inside [0, width): the others read (im2col) or write (col2im) the padding. Bounds
/// first, so the copies between them have no branch and vectorise.
std::pair<int64_t, int64_t> validColumns(int64_t off, int64_t stride, int64_t width,
                                         int64_t outWidth) {
  auto floorDiv = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  int64_t lo = std::clamp(-floorDiv(off, stride), int64_t(0), outWidth); // ceil(-off / stride)
  int64_t hi = std::clamp(floorDiv(width - 1 - off, stride) + 1, lo, outWidth);
  return {lo, hi};
}

} // namespace

template <typename T> void im2col(const T *x, const ConvShape &s, T *col, int64_t ld) {
  const Window2d &win = s.window;
  parallelFor(s.groupChannels, channelGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      for (int64_t i = 0; i < win.kernel[0]; ++i)
        for (int64_t j = 0; j < win.kernel[1]; ++j) {
          T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * ld;
          const T *plane = x + c * s.inPlane();
          for (int64_t oh = 0; oh < s.outHeight; ++oh) {
            T *dst = row + oh * s.outWidth;
            int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
            if (ih < 0 || ih >= s.height) {
              std::fill(dst, dst + s.outWidth, T(0));
              continue;
            }
            const int64_t off = j * win.dilation[1] - win.padBegin[1], step = win.stride[1];
            const auto [lo, hi] = validColumns(off, step, s.width, s.outWidth);
            const T *src = plane + ih * s.width; // input column ow * step + off
            std::fill(dst, dst + lo, T(0));
            if (step == 1)
              std::copy(src + lo + off, src + hi + off, dst + lo);
            else
              for (int64_t ow = lo; ow < hi; ++ow)
                dst[ow] = src[ow * step + off];
            std::fill(dst + hi, dst + s.outWidth, T(0));
          }
        }
  });
}

template <typename T> void col2im(const T *col, const ConvShape &s, int64_t ld, T *x) {
  const Window2d &win = s.window;
  parallelFor(s.groupChannels, channelGrain(s), [&](int64_t, int64_t begin, int64_t end) {
    std::fill(x + begin * s.inPlane(), x + end * s.inPlane(), T(0));
    for (int64_t c = begin; c < end; ++c)
      for (int64_t i = 0; i < win.kernel[0]; ++i)
        for (int64_t j = 0; j < win.kernel[1]; ++j) {
          const T *row = col + ((c * win.kernel[0] + i) * win.kernel[1] + j) * ld;
          T *plane = x + c * s.inPlane();
          for (int64_t oh = 0; oh < s.outHeight; ++oh) {
            int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
            if (ih < 0 || ih >= s.height)
              continue;
            const T *src = row + oh * s.outWidth;
            const int64_t off = j * win.dilation[1] - win.padBegin[1], step = win.stride[1];
            const auto [lo, hi] = validColumns(off, step, s.width, s.outWidth);
            T *dst = plane + ih * s.width; // input column ow * step + off
            for (int64_t ow = lo; ow < hi; ++ow)
              dst[ow * step + off] += src[ow];
          }
        }
  });
}

namespace {

/// Calls copy(blockRow, planeRow) for each filter f of group g and image i of the block
/// [first, first + count): row f of the block's matrix at image i's columns, and that image's
/// plane of filter f in the [N, F, OH, OW] tensor. Split across threads by filter.
template <typename Copy>
void forEachBlockPlane(const ConvShape &s, int64_t first, int64_t count, int64_t g, Copy &&copy) {
  const int64_t plane = s.outPlane(), columns = count * plane;
  parallelFor(s.filtersPerGroup(), grainFor(kElementGrain, columns),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t f = begin; f < end; ++f)
                  for (int64_t i = 0; i < count; ++i)
                    copy(f * columns + i * plane, s.outputOffset(first + i, g) + f * plane);
              });
}

} // namespace

template <typename T>
void gatherBlock(const T *y, const ConvShape &s, int64_t first, int64_t count, int64_t g,
                 T *block) {
  forEachBlockPlane(s, first, count, g, [&](int64_t to, int64_t from) {
    std::copy(y + from, y + from + s.outPlane(), block + to);
  });
}

template <typename T>
void scatterBlock(const T *block, const ConvShape &s, int64_t first, int64_t count, int64_t g,
                  T *y) {
  forEachBlockPlane(s, first, count, g, [&](int64_t from, int64_t to) {
    std::copy(block + from, block + from + s.outPlane(), y + to);
  });
}

namespace {

/// Calls tap(i, j, oh, lo, hi, ih, off, step) for every kernel tap (i, j) and output row oh
/// whose input row ih is inside the image, with the tap's valid output columns [lo, hi) and
/// their input columns ow * step + off.
template <typename Tap> void forEachTapRow(const ConvShape &s, Tap &&tap) {
  const Window2d &win = s.window;
  for (int64_t i = 0; i < win.kernel[0]; ++i)
    for (int64_t j = 0; j < win.kernel[1]; ++j) {
      const int64_t off = j * win.dilation[1] - win.padBegin[1], step = win.stride[1];
      const auto [lo, hi] = validColumns(off, step, s.width, s.outWidth);
      for (int64_t oh = 0; oh < s.outHeight; ++oh) {
        const int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
        if (ih >= 0 && ih < s.height && lo < hi)
          tap(i, j, oh, lo, hi, ih, off, step);
      }
    }
}

int64_t taps(const ConvShape &s) { return s.window.kernel[0] * s.window.kernel[1]; }

/// Calls body(q, taps) for every (image, channel) plane q of a depthwise convolution, `taps`
/// its channel's kH x kW filter in w; the planes split across threads, each on one.
template <typename T, typename Body>
void forEachDepthwisePlane(const ConvShape &s, const T *w, Body &&body) {
  parallelFor(s.batch * s.channels, grainFor(kElementGrain, taps(s) * s.outPlane()),
              [&](int64_t, int64_t begin, int64_t end) {
                for (int64_t q = begin; q < end; ++q)
                  body(q, w + (q % s.channels) * taps(s));
              });
}

} // namespace

template <typename T>
void depthwiseConv2d(const T *x, const T *w, const T *bias, const ConvShape &s, T *y) {
  forEachDepthwisePlane(s, w, [&](int64_t q, const T *taps) {
    const T *plane = x + q * s.inPlane();
    T *out = y + q * s.outPlane();
    std::fill(out, out + s.outPlane(), bias ? bias[q % s.channels] : T(0));
    forEachTapRow(s, [&](int64_t i, int64_t j, int64_t oh, int64_t lo, int64_t hi, int64_t ih,
                         int64_t off, int64_t step) {
      const T k = taps[i * s.window.kernel[1] + j];
      const T *row = plane + ih * s.width; // input column ow * step + off
      T *dst = out + oh * s.outWidth;
      if (step == 1)
        for (int64_t ow = lo; ow < hi; ++ow)
          dst[ow] += k * row[ow + off];
      else
        for (int64_t ow = lo; ow < hi; ++ow)
          dst[ow] += k * row[ow * step + off];
    });
  });
}

template <typename T>
void depthwiseConv2dGradInput(const T *dy, const T *w, const ConvShape &s, T *dx) {
  forEachDepthwisePlane(s, w, [&](int64_t q, const T *taps) {
    const T *grad = dy + q * s.outPlane();
    T *plane = dx + q * s.inPlane();
    std::fill(plane, plane + s.inPlane(), T(0));
    forEachTapRow(s, [&](int64_t i, int64_t j, int64_t oh, int64_t lo, int64_t hi, int64_t ih,
                         int64_t off, int64_t step) {
      const T k = taps[i * s.window.kernel[1] + j];
      const T *src = grad + oh * s.outWidth;
      T *row = plane + ih * s.width; // input column ow * step + off
      for (int64_t ow = lo; ow < hi; ++ow)
        row[ow * step + off] += k * src[ow];
    });
  });
}

template <typename T>
void depthwiseConv2dGradWeight(const T *x, const T *dy, const ConvShape &s, T *dw,
                               bool accumulate) {
  const int64_t n = taps(s);
  parallelFor(s.channels, grainFor(kElementGrain, s.batch * n * s.outPlane()),
              [&](int64_t, int64_t begin, int64_t end) {
                std::vector<double> sums(static_cast<size_t>(n));
                for (int64_t c = begin; c < end; ++c) {
                  std::fill(sums.begin(), sums.end(), 0.0);
                  for (int64_t b = 0; b < s.batch; ++b) {
                    const int64_t q = b * s.channels + c;
                    const T *plane = x + q * s.inPlane(), *grad = dy + q * s.outPlane();
                    forEachTapRow(s, [&](int64_t i, int64_t j, int64_t oh, int64_t lo, int64_t hi,
                                         int64_t ih, int64_t off, int64_t step) {
                      const T *row = plane + ih * s.width, *g = grad + oh * s.outWidth;
                      double acc = 0;
                      for (int64_t ow = lo; ow < hi; ++ow)
                        acc += double(g[ow]) * double(row[ow * step + off]);
                      sums[size_t(i * s.window.kernel[1] + j)] += acc;
                    });
                  }
                  T *out = dw + c * n;
                  for (int64_t k = 0; k < n; ++k)
                    out[k] = accumulate ? T(double(out[k]) + sums[size_t(k)]) : T(sums[size_t(k)]);
                }
              });
}

// The kernels compute in f32 and f64 only (half precision is staged through f32).
template void im2col<float>(const float *, const ConvShape &, float *, int64_t);
template void im2col<double>(const double *, const ConvShape &, double *, int64_t);
template void col2im<float>(const float *, const ConvShape &, int64_t, float *);
template void col2im<double>(const double *, const ConvShape &, int64_t, double *);
template void gatherBlock<float>(const float *, const ConvShape &, int64_t, int64_t, int64_t,
                                 float *);
template void gatherBlock<double>(const double *, const ConvShape &, int64_t, int64_t, int64_t,
                                  double *);
template void scatterBlock<float>(const float *, const ConvShape &, int64_t, int64_t, int64_t,
                                  float *);
template void scatterBlock<double>(const double *, const ConvShape &, int64_t, int64_t, int64_t,
                                   double *);
template void depthwiseConv2d<float>(const float *, const float *, const float *, const ConvShape &,
                                     float *);
template void depthwiseConv2d<double>(const double *, const double *, const double *,
                                      const ConvShape &, double *);
template void depthwiseConv2dGradInput<float>(const float *, const float *, const ConvShape &,
                                              float *);
template void depthwiseConv2dGradInput<double>(const double *, const double *, const ConvShape &,
                                               double *);
template void depthwiseConv2dGradWeight<float>(const float *, const float *, const ConvShape &,
                                               float *, bool);
template void depthwiseConv2dGradWeight<double>(const double *, const double *, const ConvShape &,
                                                double *, bool);

} // namespace plait::rt::cpu
