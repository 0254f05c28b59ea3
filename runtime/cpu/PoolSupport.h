// Pooling window geometry and window rules shared by max_pool2d/avg_pool2d and their
// adjoints, so that a gradient flows through exactly the window, argmax and divisor the
// forward used.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "runtime/Kernel.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Window.h"

namespace plait::rt::cpu {

/// Geometry of one 2-D pool over NCHW, with N * C seen as independent planes.
struct PoolShape {
  int64_t planes, height, width, outHeight, outWidth;
  Window2d window;
};

/// Reads the pooling window of x (4-D NCHW) from `attrs` (kernel, strides, pads, dilations
/// when `hasDilations`, ceil_mode) and checks that `pooled` has the pooled shape; `pooledName`
/// names it in the error ("output", or "grad" in an adjoint). Dtypes are the caller's.
Status planPoolShape(std::string_view kernel, const Attrs &attrs, bool hasDilations,
                     const TensorView &x, const TensorView &pooled, std::string_view pooledName,
                     PoolShape &s);

/// Planes per chunk when a pooling kernel or its adjoint splits its planes across threads
/// (Parallel.h): about kElementGrain elements of the plane and of its windows' reads.
inline int64_t poolPlaneGrain(const PoolShape &s) {
  return grainFor(kElementGrain, s.height * s.width + s.outHeight * s.outWidth *
                                                          s.window.kernel[0] * s.window.kernel[1]);
}

/// The value of one max_pool2d window and the plane offset it comes from.
template <typename T> struct WindowMax {
  T value;
  int64_t offset; // -1 when no window position lies inside the input (value is -inf)
};

/// Max over the positions of window (oh, ow) that lie inside `plane`; the padding never
/// wins. The first inside position is taken unconditionally; after it only a strictly
/// greater value or a NaN replaces the choice (`v > best || isnan(v)`, PyTorch's rule), so
/// NaN propagates and a window of -inf sends its gradient to its first inside position.
template <typename T>
inline WindowMax<T> maxPoolWindow(const T *plane, const PoolShape &s, int64_t oh, int64_t ow) {
  const Window2d &w = s.window;
  WindowMax<T> best{-std::numeric_limits<T>::infinity(), -1};
  int64_t h0 = oh * w.stride[0] - w.padBegin[0], w0 = ow * w.stride[1] - w.padBegin[1];
  for (int64_t i = 0; i < w.kernel[0]; ++i) {
    int64_t ih = h0 + i * w.dilation[0];
    if (ih < 0 || ih >= s.height)
      continue;
    for (int64_t j = 0; j < w.kernel[1]; ++j) {
      int64_t iw = w0 + j * w.dilation[1];
      if (iw < 0 || iw >= s.width)
        continue;
      // Selects rather than branches: on real activations which element wins is random, and
      // a mispredicted branch per element costs more than the window's loads.
      T v = plane[ih * s.width + iw];
      bool wins = v > best.value || std::isnan(v);
      int64_t at = ih * s.width + iw;
      best.offset = wins || best.offset < 0 ? at : best.offset;
      best.value = wins ? v : best.value;
    }
  }
  return best;
}

/// The output columns [begin, end) of a max_pool2d whose windows lie wholly inside the plane
/// horizontally (no tap in the padding): maxPoolRow needs no bounds check for them.
struct InteriorColumns {
  int64_t begin, end;
};
inline InteriorColumns interiorColumns(const PoolShape &s) {
  const Window2d &w = s.window;
  const int64_t first = (w.padBegin[1] + w.stride[1] - 1) / w.stride[1];
  const int64_t lastTap = s.width - 1 - (w.kernel[1] - 1) * w.dilation[1] + w.padBegin[1];
  const int64_t end = lastTap < 0 ? 0 : std::min(s.outWidth, lastTap / w.stride[1] + 1);
  return {std::min(first, end), end};
}

/// maxPoolWindow over output row `oh`: each column's value into `value[ow]` (when `value` is
/// not null) and, with kOffsets, its plane offset into `offset[ow]`. The interior columns
/// (interiorColumns), in blocks of kMaxPoolBlock, take the taps one at a time across the
/// block, with maxPoolWindow's order and rule (the first inside tap unconditionally, then a
/// strictly greater value or a NaN), without a bounds check, keeping the winning tap's
/// number (an int32, the values' width, so the compiler can vectorise the selects); the
/// others call maxPoolWindow.
inline constexpr int64_t kMaxPoolBlock = 256;
template <typename T, bool kOffsets>
inline void maxPoolRow(const T *plane, const PoolShape &s, InteriorColumns inner, int64_t oh,
                       T *value, int64_t *offset) {
  const Window2d &w = s.window;
  auto edge = [&](int64_t ow) {
    WindowMax<T> m = maxPoolWindow(plane, s, oh, ow);
    if (value)
      value[ow] = m.value;
    if constexpr (kOffsets)
      offset[ow] = m.offset;
  };
  for (int64_t ow = 0; ow < inner.begin; ++ow)
    edge(ow);
  for (int64_t ow = std::max(inner.begin, inner.end); ow < s.outWidth; ++ow)
    edge(ow);
  const int64_t h0 = oh * w.stride[0] - w.padBegin[0], stride = w.stride[1];
  bool anyRow = false;
  for (int64_t i = 0; i < w.kernel[0]; ++i) {
    const int64_t ih = h0 + i * w.dilation[0];
    anyRow |= ih >= 0 && ih < s.height;
  }
  if (!anyRow) { // no row of the windows inside the plane (odd dilations): no tap at all
    for (int64_t ow = inner.begin; ow < inner.end; ++ow)
      edge(ow);
    return;
  }
  for (int64_t c0 = inner.begin; c0 < inner.end; c0 += kMaxPoolBlock) {
    const int64_t n = std::min(kMaxPoolBlock, inner.end - c0);
    T best[kMaxPoolBlock];
    int32_t tap[kMaxPoolBlock];
    bool first = true;
    for (int64_t i = 0; i < w.kernel[0]; ++i) {
      const int64_t ih = h0 + i * w.dilation[0];
      if (ih < 0 || ih >= s.height)
        continue;
      for (int64_t j = 0; j < w.kernel[1]; ++j) {
        // The tap of column c0 + k reads in[k * stride].
        const T *in = plane + ih * s.width + j * w.dilation[1] - w.padBegin[1] + c0 * stride;
        const int32_t t = int32_t(i * w.kernel[1] + j);
        if (first) {
          for (int64_t k = 0; k < n; ++k) {
            best[k] = in[k * stride];
            if constexpr (kOffsets)
              tap[k] = t;
          }
          first = false;
          continue;
        }
        for (int64_t k = 0; k < n; ++k) {
          const T v = in[k * stride];
          const bool wins = v > best[k] || v != v; // v != v: NaN
          best[k] = wins ? v : best[k];
          if constexpr (kOffsets)
            tap[k] = wins ? t : tap[k];
        }
      }
    }
    if (value)
      std::copy(best, best + n, value + c0);
    if constexpr (kOffsets)
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = tap[k] / w.kernel[1], j = tap[k] % w.kernel[1];
        offset[c0 + k] = (h0 + i * w.dilation[0]) * s.width + (c0 + k) * stride +
                         j * w.dilation[1] - w.padBegin[1];
      }
  }
}

/// The extent of an avg_pool2d window along one dimension: the input positions
/// [begin, end) it covers, and `padded`, its size once cut at the end of the padded input
/// (which only matters with ceil_mode).
struct AvgPoolSpan {
  int64_t begin, end, padded;
};

/// The span of output position `out` along `dim` of an input of extent `in`.
inline AvgPoolSpan avgPoolSpan(const Window2d &w, int dim, int64_t out, int64_t in) {
  int64_t begin = out * w.stride[dim] - w.padBegin[dim];
  int64_t end = std::min(begin + w.kernel[dim], in + w.padEnd[dim]);
  int64_t padded = end - begin;
  return {std::max<int64_t>(begin, 0), std::min(end, in), padded};
}

/// avg_pool2d's divisor, PyTorch's and ONNX's rule: with count_include_pad the size of the
/// cut window, else the number of input positions in it (<= 0 when there are none).
inline int64_t avgPoolDivisor(const AvgPoolSpan &h, const AvgPoolSpan &w, bool countPad) {
  return countPad ? h.padded * w.padded : (h.end - h.begin) * (w.end - w.begin);
}

} // namespace plait::rt::cpu
