// conv2d geometry and the im2col/col2im column layout shared by conv2d and its adjoints.
#include "runtime/cpu/ConvSupport.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/VectorMath.h"

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

int64_t taps(const ConvShape &s) { return s.window.kernel[0] * s.window.kernel[1]; }

constexpr int64_t kBlock = kDepthwiseChannelBlock;

/// The depthwise blocks of `s` (Workspace.h depthwiseBlocks, which the plan's workspace
/// declares).
DepthwiseBlocks blocksOf(const ConvShape &s, bool gradWeight) {
  return depthwiseBlocks(s.batch, s.channels, s.inPlane(), s.outPlane(), taps(s), gradWeight);
}

/// Channels [c0, c0 + count) of `src`'s planes of `plane` pixels as a block [pixel][kBlock]
/// (the lanes past `count` zero), and back.
template <typename T> void toBlock(const T *src, int64_t plane, int64_t count, T *block) {
  for (int64_t c = 0; c < kBlock; ++c)
    for (int64_t p = 0; p < plane; ++p)
      block[p * kBlock + c] = c < count ? src[c * plane + p] : T(0);
}
template <typename T> void fromBlock(const T *block, int64_t plane, int64_t count, T *dst) {
  for (int64_t c = 0; c < count; ++c)
    for (int64_t p = 0; p < plane; ++p)
      dst[c * plane + p] = block[p * kBlock + c];
}

/// Runs body(slot, unit) over a depthwise convolution's units, in chunks of whole units
/// across threads, chunk k in workspace slot k (as forEachConvUnit; each unit on one thread,
/// so the bits do not depend on the thread count).
template <typename Body>
void forEachDepthwiseUnit(const DepthwiseBlocks &d, int64_t unitWork, Body &&body) {
  parallelFor(d.units, slotGrain(d.units, unitWork, d.slots),
              [&](int64_t slot, int64_t begin, int64_t end) {
                for (int64_t u = begin; u < end; ++u)
                  body(slot, u);
              });
}

/// The valid taps along one axis of output coordinate o: [lo, hi), those whose input
/// o * stride - pad + t * dilation falls in [0, size).
std::pair<int64_t, int64_t> tapRange(int64_t o, int64_t stride, int64_t pad, int64_t dilation,
                                     int64_t kernel, int64_t size) {
  const int64_t base = o * stride - pad;
  int64_t lo = 0, hi = kernel;
  while (lo < kernel && base + lo * dilation < 0)
    ++lo;
  while (hi > lo && base + (hi - 1) * dilation >= size)
    --hi;
  return {lo, hi};
}

/// One block's output plane Y [pixel][kBlock] from its input plane X and taps K [tap][kBlock]:
/// each output starts from its bias (or 0) and adds its valid taps in kernel order, as the
/// plane-by-plane loop before it did (the same bits).
template <typename T>
PLAIT_SIMD_CLONES void depthwiseBlock(const ConvShape &s, const T *X, const T *K, const T *bias,
                                      T *Y) {
  const Window2d &win = s.window;
  for (int64_t oh = 0; oh < s.outHeight; ++oh) {
    const auto [i0, i1] =
        tapRange(oh, win.stride[0], win.padBegin[0], win.dilation[0], win.kernel[0], s.height);
    for (int64_t ow = 0; ow < s.outWidth; ++ow) {
      const auto [j0, j1] =
          tapRange(ow, win.stride[1], win.padBegin[1], win.dilation[1], win.kernel[1], s.width);
      T acc[kBlock];
      for (int64_t c = 0; c < kBlock; ++c)
        acc[c] = bias ? bias[c] : T(0);
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t iw = ow * win.stride[1] - win.padBegin[1] + j * win.dilation[1];
          const T *x = X + (ih * s.width + iw) * kBlock, *k = K + (i * win.kernel[1] + j) * kBlock;
          for (int64_t c = 0; c < kBlock; ++c)
            acc[c] += k[c] * x[c];
        }
      }
      T *y = Y + (oh * s.outWidth + ow) * kBlock;
      for (int64_t c = 0; c < kBlock; ++c)
        y[c] = acc[c];
    }
  }
}

/// One block's input gradient DX [pixel][kBlock] from DY and K: each input sums, from 0, the
/// taps that read it in kernel order (an output row and column for each, where the stride
/// divides), as the plane-by-plane loop before it added them (the same bits). kUnit: stride
/// 1 on both axes (no division).
template <bool kUnit, typename T>
PLAIT_VECTOR_INLINE void gradInputRows(const ConvShape &s, const T *DY, const T *K, T *DX) {
  const Window2d &win = s.window;
  const int64_t s0 = win.stride[0], s1 = win.stride[1], d0 = win.dilation[0], d1 = win.dilation[1];
  for (int64_t ih = 0; ih < s.height; ++ih)
    for (int64_t iw = 0; iw < s.width; ++iw) {
      T acc[kBlock] = {};
      for (int64_t i = 0; i < win.kernel[0]; ++i) {
        const int64_t nh = ih + win.padBegin[0] - i * d0; // oh * s0 where it is one
        if (nh < 0)
          break; // and every later tap
        if (kUnit ? nh >= s.outHeight : nh % s0 != 0 || nh / s0 >= s.outHeight)
          continue;
        const T *dyRow = DY + (kUnit ? nh : nh / s0) * s.outWidth * kBlock;
        const T *kRow = K + i * win.kernel[1] * kBlock;
        for (int64_t j = 0; j < win.kernel[1]; ++j) {
          const int64_t nw = iw + win.padBegin[1] - j * d1;
          if (nw < 0)
            break;
          if (kUnit ? nw >= s.outWidth : nw % s1 != 0 || nw / s1 >= s.outWidth)
            continue;
          const T *dy = dyRow + (kUnit ? nw : nw / s1) * kBlock, *k = kRow + j * kBlock;
          for (int64_t c = 0; c < kBlock; ++c)
            acc[c] += k[c] * dy[c];
        }
      }
      T *dx = DX + (ih * s.width + iw) * kBlock;
      for (int64_t c = 0; c < kBlock; ++c)
        dx[c] = acc[c];
    }
}
template <typename T>
PLAIT_SIMD_CLONES void depthwiseGradInputBlock(const ConvShape &s, const T *DY, const T *K, T *DX) {
  if (s.window.stride[0] == 1 && s.window.stride[1] == 1)
    gradInputRows<true>(s, DY, K, DX);
  else
    gradInputRows<false>(s, DY, K, DX);
}

/// One image's part of a block's weight gradient: for each tap in kernel order and each
/// output row it reads, the row's products summed in f64, then added to the tap's sum in
/// SUMS [tap][kBlock], as the plane-by-plane loop did.
template <typename T>
PLAIT_SIMD_CLONES void depthwiseGradWeightBlock(const ConvShape &s, const T *X, const T *DY,
                                                double *SUMS) {
  const Window2d &win = s.window;
  for (int64_t i = 0; i < win.kernel[0]; ++i)
    for (int64_t j = 0; j < win.kernel[1]; ++j) { // forEachTapRow's order, written out
      const int64_t off = j * win.dilation[1] - win.padBegin[1], step = win.stride[1];
      const auto [lo, hi] = validColumns(off, step, s.width, s.outWidth);
      double *sum = SUMS + (i * win.kernel[1] + j) * kBlock;
      for (int64_t oh = 0; oh < s.outHeight && lo < hi; ++oh) {
        const int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
        if (ih < 0 || ih >= s.height)
          continue;
        double acc[kBlock] = {};
        for (int64_t ow = lo; ow < hi; ++ow) {
          const T *g = DY + (oh * s.outWidth + ow) * kBlock;
          const T *x = X + (ih * s.width + ow * step + off) * kBlock;
          for (int64_t c = 0; c < kBlock; ++c)
            acc[c] += double(g[c]) * double(x[c]);
        }
        for (int64_t c = 0; c < kBlock; ++c)
          sum[c] += acc[c];
      }
    }
}

/// The taps of channels [c0, c0 + count) as K [tap][kBlock] (the lanes past count zero).
template <typename T>
void blockTaps(const ConvShape &s, const T *w, int64_t c0, int64_t count, T *K) {
  const int64_t n = taps(s);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < kBlock; ++c)
      K[t * kBlock + c] = c < count ? w[(c0 + c) * n + t] : T(0);
}

/// Runs body(b, c0, count, in, out, K) for each (image b, block of `count` channels from c0)
/// unit of conv2d or conv2d_grad_input, with its slot's buffers: `in` for the block's input
/// plane (x; dx), `out` for its output plane (y; dy), and K holding the block's taps.
template <typename T, typename Body>
Status forEachImageBlock(const ConvShape &s, const T *w, Scratch &scratch, Body &&body) {
  const DepthwiseBlocks d = blocksOf(s, false);
  T *buffers = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(d.elements * d.slots, buffers));
  const int64_t blocks = d.units / std::max<int64_t>(s.batch, 1);
  forEachDepthwiseUnit(d, taps(s) * s.outPlane() * kBlock, [&](int64_t slot, int64_t u) {
    const int64_t b = u / blocks, c0 = (u % blocks) * kBlock;
    const int64_t count = std::min(kBlock, s.channels - c0);
    T *in = buffers + slot * d.elements, *out = in + s.inPlane() * kBlock;
    T *K = out + s.outPlane() * kBlock;
    blockTaps(s, w, c0, count, K);
    body(b, c0, count, in, out, K);
  });
  return Status();
}

} // namespace

template <typename T>
Status depthwiseConv2d(const T *x, const T *w, const T *bias, const ConvShape &s, T *y,
                       Scratch &scratch) {
  return forEachImageBlock<T>(
      s, w, scratch, [&](int64_t b, int64_t c0, int64_t count, T *X, T *Y, const T *K) {
        T biasBlock[kBlock] = {};
        for (int64_t c = 0; bias && c < count; ++c)
          biasBlock[c] = bias[c0 + c];
        toBlock(x + (b * s.channels + c0) * s.inPlane(), s.inPlane(), count, X);
        depthwiseBlock(s, X, K, bias ? biasBlock : nullptr, Y);
        fromBlock(Y, s.outPlane(), count, y + (b * s.channels + c0) * s.outPlane());
      });
}

template <typename T>
Status depthwiseConv2dGradInput(const T *dy, const T *w, const ConvShape &s, T *dx,
                                Scratch &scratch) {
  return forEachImageBlock<T>(
      s, w, scratch, [&](int64_t b, int64_t c0, int64_t count, T *DX, T *DY, const T *K) {
        toBlock(dy + (b * s.channels + c0) * s.outPlane(), s.outPlane(), count, DY);
        depthwiseGradInputBlock(s, DY, K, DX);
        fromBlock(DX, s.inPlane(), count, dx + (b * s.channels + c0) * s.inPlane());
      });
}

template <typename T>
Status depthwiseConv2dGradWeight(const T *x, const T *dy, const ConvShape &s, T *dw,
                                 bool accumulate, Scratch &scratch) {
  const DepthwiseBlocks d = blocksOf(s, true);
  const int64_t n = taps(s);
  T *buffers = nullptr;
  double *sums = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(d.elements * d.slots, buffers));
  PLAIT_RETURN_IF_ERROR(scratch.take(d.sums * d.slots, sums));
  forEachDepthwiseUnit(d, s.batch * n * s.outPlane() * kBlock, [&](int64_t slot, int64_t u) {
    const int64_t c0 = u * kBlock, count = std::min(kBlock, s.channels - c0);
    T *X = buffers + slot * d.elements, *DY = X + s.inPlane() * kBlock;
    double *SUMS = sums + slot * d.sums;
    std::fill(SUMS, SUMS + d.sums, 0.0);
    for (int64_t b = 0; b < s.batch; ++b) { // the images in order
      toBlock(x + (b * s.channels + c0) * s.inPlane(), s.inPlane(), count, X);
      toBlock(dy + (b * s.channels + c0) * s.outPlane(), s.outPlane(), count, DY);
      depthwiseGradWeightBlock(s, X, DY, SUMS);
    }
    for (int64_t c = 0; c < count; ++c) {
      T *out = dw + (c0 + c) * n;
      for (int64_t t = 0; t < n; ++t) {
        const double sum = SUMS[t * kBlock + c];
        out[t] = accumulate ? T(double(out[t]) + sum) : T(sum);
      }
    }
  });
  return Status();
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
template Status depthwiseConv2d<float>(const float *, const float *, const float *,
                                       const ConvShape &, float *, Scratch &);
template Status depthwiseConv2d<double>(const double *, const double *, const double *,
                                        const ConvShape &, double *, Scratch &);
template Status depthwiseConv2dGradInput<float>(const float *, const float *, const ConvShape &,
                                                float *, Scratch &);
template Status depthwiseConv2dGradInput<double>(const double *, const double *, const ConvShape &,
                                                 double *, Scratch &);
template Status depthwiseConv2dGradWeight<float>(const float *, const float *, const ConvShape &,
                                                 float *, bool, Scratch &);
template Status depthwiseConv2dGradWeight<double>(const double *, const double *, const ConvShape &,
                                                  double *, bool, Scratch &);

} // namespace plait::rt::cpu
