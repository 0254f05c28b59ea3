// conv2d geometry and the im2col/col2im column layout shared by conv2d and its adjoints.
#include "runtime/cpu/ConvSupport.h"

#include <cstring>

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
  s.groupedDirect = attrs.getBool("direct", false) &&
                    groupedDirectShape(s.group, s.groupChannels, s.filtersPerGroup());
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

constexpr int64_t kLanes = kGroupedDirectLanes;
static_assert(kLanes == kBlock, "toBlock and fromBlock lay out both kinds of block");

/// kLanes values of T as one vector (GCC's vector extension): a lane per filter or channel
/// (a depthwise block's: per channel), so that the compiler keeps each accumulator in registers and
/// multiplies it by a broadcast value, where plain loops over the lanes inside a loop over the
/// group's channels were vectorised across the channels instead (16 strided reductions and their
/// permutes: slower than the GEMMs).
template <typename T> struct LanesOf {
  typedef T type __attribute__((vector_size(kLanes * sizeof(T))));
};
template <typename T> using Lanes = typename LanesOf<T>::type;
/// Outputs (or inputs) the direct kernels compute at once along a row.
constexpr int64_t kPixels = 4;

/// Adds kLanes values at `p` times `scale` onto `acc` (taken by reference: a vector returned
/// by value would change the ABI between the clones).
template <typename T> PLAIT_VECTOR_INLINE void addLanes(Lanes<T> &acc, const T *p, T scale) {
  Lanes<T> v;
  std::memcpy(&v, p, sizeof v);
  acc += v * scale;
}

/// The depthwise blocks of `s` (Workspace.h depthwiseBlocks, which the plan's workspace
/// declares).
DepthwiseBlocks blocksOf(const ConvShape &s, bool gradWeight) {
  return depthwiseBlocks(s.batch, s.channels, s.inPlane(), s.outPlane(), taps(s), gradWeight);
}

/// A 16x16 tile transposed in registers: v[r][c] becomes v[c][r]. Four rounds of two-vector
/// shuffles (__builtin_shufflevector: GCC and Clang), round b swapping the off-diagonal b x b
/// blocks of every 2b x 2b block (rows r and r + b exchange halves), each shuffle one permute
/// instruction on AVX-512.
template <int B, typename T> PLAIT_VECTOR_INLINE void swapBlocks(Lanes<T> &upper, Lanes<T> &lower) {
  const Lanes<T> u = upper, l = lower;
  if constexpr (B == 1) {
    upper =
        __builtin_shufflevector(u, l, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    lower =
        __builtin_shufflevector(u, l, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  } else if constexpr (B == 2) {
    upper = __builtin_shufflevector(u, l, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
    lower =
        __builtin_shufflevector(u, l, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
  } else if constexpr (B == 4) {
    upper = __builtin_shufflevector(u, l, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    lower =
        __builtin_shufflevector(u, l, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  } else {
    upper = __builtin_shufflevector(u, l, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    lower =
        __builtin_shufflevector(u, l, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  }
}
template <int B, typename T> PLAIT_VECTOR_INLINE void swapRound(Lanes<T> (&v)[kLanes]) {
  for (int r = 0; r < kLanes; r += 2 * B)
    for (int i = r; i < r + B; ++i)
      swapBlocks<B, T>(v[i], v[i + B]);
}
template <typename T> PLAIT_VECTOR_INLINE void transposeTile(Lanes<T> (&v)[kLanes]) {
  static_assert(kLanes == 16, "the shuffles are for 16 lanes");
  swapRound<1, T>(v);
  swapRound<2, T>(v);
  swapRound<4, T>(v);
  swapRound<8, T>(v);
}

/// Channels [c0, c0 + count) of `src`'s planes of `plane` pixels as a block [pixel][kBlock]
/// (the lanes past `count` zero), and back: 16 pixels at a time as a tile transposed in
/// registers (the rest one value at a time). A value at a time throughout, a channel's pass
/// over the plane wrote a value into every line of the block (a block's pixel is a cache line
/// of f32), and the transposes took 3 times the convolution's own loops.
template <typename T>
PLAIT_SIMD_CLONES void toBlock(const T *src, int64_t plane, int64_t count, T *block) {
  int64_t p0 = 0;
  for (; p0 + kLanes <= plane; p0 += kLanes) {
    Lanes<T> v[kLanes];
    for (int64_t c = 0; c < kLanes; ++c) {
      v[c] = Lanes<T>{};
      if (c < count)
        std::memcpy(&v[c], src + c * plane + p0, sizeof v[c]);
    }
    transposeTile<T>(v);
    std::memcpy(block + p0 * kBlock, v, sizeof v);
  }
  for (int64_t p = p0; p < plane; ++p)
    for (int64_t c = 0; c < kBlock; ++c)
      block[p * kBlock + c] = c < count ? src[c * plane + p] : T(0);
}
template <typename T>
PLAIT_SIMD_CLONES void fromBlock(const T *block, int64_t plane, int64_t count, T *dst) {
  int64_t p0 = 0;
  for (; p0 + kLanes <= plane; p0 += kLanes) {
    Lanes<T> v[kLanes];
    std::memcpy(v, block + p0 * kBlock, sizeof v);
    transposeTile<T>(v);
    for (int64_t c = 0; c < count; ++c)
      std::memcpy(dst + c * plane + p0, &v[c], sizeof v[c]);
  }
  for (int64_t c = 0; c < count; ++c)
    for (int64_t p = p0; p < plane; ++p)
      dst[c * plane + p] = block[p * kBlock + c];
}

/// Runs body(slot, unit) over a depthwise convolution's units, in chunks of whole units
/// across threads, chunk k in workspace slot k (as forEachConvUnit; each unit on one thread,
/// so the bits do not depend on the thread count).
template <typename Body> void forEachDepthwiseUnit(const DepthwiseBlocks &d, Body &&body) {
  parallelFor(d.units, slotGrain(d.units, d.unitWork, d.slots),
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

/// Loads kLanes values at `p` (a block's pixel) into `v`, and adds `k` times those at `p`
/// onto `acc` (vectors by reference, as addLanes takes them).
template <typename T> PLAIT_VECTOR_INLINE void loadLanes(Lanes<T> &v, const T *p) {
  std::memcpy(&v, p, sizeof v);
}
template <typename T>
PLAIT_VECTOR_INLINE void addProduct(Lanes<T> &acc, const Lanes<T> &k, const T *p) {
  Lanes<T> v;
  std::memcpy(&v, p, sizeof v);
  acc += k * v;
}

/// A direct convolution's taps, for a depthwise block and a direct group alike: tap (i, j)'s
/// values (`at`), and a tap's products added onto kPixels outputs (or inputs) `step` values
/// apart (`block`) or one (`one`). A depthwise block's taps K [tap][kBlock] are one vector
/// multiply-add a tap.
template <typename T> struct DepthwiseTaps {
  const T *K;
  int64_t kw;
  PLAIT_VECTOR_INLINE const T *at(int64_t i, int64_t j) const { return K + (i * kw + j) * kBlock; }
  PLAIT_VECTOR_INLINE void block(Lanes<T> (&acc)[kPixels], const T *k, const T *p,
                                 int64_t step) const {
    Lanes<T> v;
    loadLanes(v, k);
    for (int64_t q = 0; q < kPixels; ++q)
      addProduct(acc[q], v, p + q * step);
  }
  PLAIT_VECTOR_INLINE void one(Lanes<T> &acc, const T *k, const T *p) const {
    Lanes<T> v;
    loadLanes(v, k);
    addProduct(acc, v, p);
  }
};
/// A group's taps K [tap][a][b] (groupTaps): each tap over its `lanes` rows a in order (the
/// group's channels for conv2d, its filters for conv2d_grad_input), each a vector of b times
/// that lane's value of the pixel.
template <typename T> struct GroupedTaps {
  const T *K;
  int64_t kw, lanes;
  PLAIT_VECTOR_INLINE const T *at(int64_t i, int64_t j) const {
    return K + (i * kw + j) * kLanes * kLanes;
  }
  PLAIT_VECTOR_INLINE void block(Lanes<T> (&acc)[kPixels], const T *k, const T *p,
                                 int64_t step) const {
    for (int64_t a = 0; a < lanes; ++a)
      for (int64_t q = 0; q < kPixels; ++q)
        addLanes(acc[q], k + a * kLanes, p[q * step + a]);
  }
  PLAIT_VECTOR_INLINE void one(Lanes<T> &acc, const T *k, const T *p) const {
    for (int64_t a = 0; a < lanes; ++a)
      addLanes(acc, k + a * kLanes, p[a]);
  }
};

/// A direct convolution's output plane Y [pixel][lane] from its input plane X [pixel][lane]
/// and `taps`: each output starts from its bias (or 0) and adds its valid taps in kernel
/// order, as the plane-by-plane loops before them did (the same bits). Along a row's interior
/// (every horizontal tap inside the plane) kPixels outputs at once, each its own chain of
/// adds, every tap read once for them: one output's taps are a chain whose adds wait on each
/// other, so one at a time ran at the adds' latency.
template <typename T, typename Taps>
PLAIT_VECTOR_INLINE void outputRows(const ConvShape &s, const T *X, const Taps &taps, const T *bias,
                                    T *Y) {
  const Window2d &win = s.window;
  const int64_t s1 = win.stride[1], p1 = win.padBegin[1], d1 = win.dilation[1];
  // The columns whose every horizontal tap is inside the plane: [a, b).
  const int64_t a = (p1 + s1 - 1) / s1;
  const int64_t last = s.width - 1 - (win.kernel[1] - 1) * d1 + p1;
  const int64_t b = last < 0 ? a : std::max(a, std::min(s.outWidth, last / s1 + 1));
  Lanes<T> start{};
  if (bias)
    loadLanes(start, bias);
  for (int64_t oh = 0; oh < s.outHeight; ++oh) {
    const auto [i0, i1] =
        tapRange(oh, win.stride[0], win.padBegin[0], win.dilation[0], win.kernel[0], s.height);
    for (int64_t ow = 0; ow < s.outWidth;) {
      if (ow >= a && ow + kPixels <= b) {
        Lanes<T> acc[kPixels];
        for (int64_t q = 0; q < kPixels; ++q)
          acc[q] = start;
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
          for (int64_t j = 0; j < win.kernel[1]; ++j)
            taps.block(acc, taps.at(i, j), X + (ih * s.width + ow * s1 - p1 + j * d1) * kLanes,
                       s1 * kLanes);
        }
        std::memcpy(Y + (oh * s.outWidth + ow) * kLanes, acc, sizeof acc);
        ow += kPixels;
        continue;
      }
      const auto [j0, j1] =
          tapRange(ow, win.stride[1], win.padBegin[1], win.dilation[1], win.kernel[1], s.width);
      Lanes<T> acc = start;
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t iw = ow * win.stride[1] - win.padBegin[1] + j * win.dilation[1];
          taps.one(acc, taps.at(i, j), X + (ih * s.width + iw) * kLanes);
        }
      }
      std::memcpy(Y + (oh * s.outWidth + ow) * kLanes, &acc, sizeof acc);
      ++ow;
    }
  }
}

/// One depthwise block's output plane from its input plane X and taps K [tap][kBlock].
template <typename T>
PLAIT_SIMD_CLONES void depthwiseBlock(const ConvShape &s, const T *X, const T *K, const T *bias,
                                      T *Y) {
  outputRows(s, X, DepthwiseTaps<T>{K, s.window.kernel[1]}, bias, Y);
}

/// The input gradients' interior columns [a, b) of a row, those every tap reads from inside
/// dy's row, as blocks of kPixels columns s1 apart, each of one phase (column mod s1: the
/// same taps divide), which the direct kernels compute at once.
struct InteriorPhases {
  int64_t a, b, s1;
  explicit InteriorPhases(const ConvShape &s)
      : a(std::max<int64_t>(0, (s.window.kernel[1] - 1) * s.window.dilation[1] -
                                   s.window.padBegin[1])),
        b(std::min(s.width, s.outWidth * s.window.stride[1] - s.window.padBegin[1])),
        s1(s.window.stride[1]) {}
  /// The first interior column of phase r.
  int64_t first(int64_t r) const { return a + ((r - a) % s1 + s1) % s1; }
  /// The whole blocks of the phase whose first column is `start`.
  int64_t blocks(int64_t start) const {
    return b > start ? (b - start + s1 - 1) / s1 / kPixels : 0;
  }
  /// Whether column iw is in one of its phase's blocks.
  bool inBlock(int64_t iw) const {
    const int64_t start = first(iw % s1);
    return iw >= start && (iw - start) / s1 < blocks(start) * kPixels;
  }
};

/// An input gradient's walk, for a depthwise block and a direct group alike: DX [pixel][lane]
/// from DY [pixel][lane], each input summing, from 0, the taps that read it in kernel order (an
/// output row and column for each, where the stride divides), as the plane-by-plane loops
/// before them added them (the same bits). kUnit: stride 1 on both axes (no division). Along
/// a row's interior (every tap reading inside dy's row) kPixels inputs s1 apart, of one phase
/// (the same taps divide), at once, as the forward kernels compute their outputs. `taps`
/// gives tap (i, j)'s values (`at`) and adds a tap's products onto kPixels inputs (`block`) or
/// one (`one`): a depthwise block's one vector a tap, a group's one a filter.
template <bool kUnit, typename T, typename Taps>
PLAIT_VECTOR_INLINE void inputGradientRows(const ConvShape &s, const T *DY, const Taps &taps,
                                           T *DX) {
  const Window2d &win = s.window;
  const int64_t s0 = win.stride[0], s1 = win.stride[1], d0 = win.dilation[0], d1 = win.dilation[1];
  const int64_t p1 = win.padBegin[1];
  const InteriorPhases phases(s);
  for (int64_t ih = 0; ih < s.height; ++ih) {
    for (int64_t r = 0; r < std::min(s1, s.width); ++r) {
      const int64_t start = phases.first(r), blocks = phases.blocks(start);
      for (int64_t k0 = 0; k0 < blocks; ++k0) {
        const int64_t iw = start + k0 * kPixels * s1;
        Lanes<T> acc[kPixels] = {};
        for (int64_t i = 0; i < win.kernel[0]; ++i) {
          const int64_t nh = ih + win.padBegin[0] - i * d0;
          if (nh < 0)
            break;
          if (kUnit ? nh >= s.outHeight : nh % s0 != 0 || nh / s0 >= s.outHeight)
            continue;
          const T *dyRow = DY + (kUnit ? nh : nh / s0) * s.outWidth * kLanes;
          for (int64_t j = 0; j < win.kernel[1]; ++j) {
            const int64_t nw = iw + p1 - j * d1;
            if (!kUnit && nw % s1 != 0)
              continue;
            taps.block(acc, taps.at(i, j), dyRow + (kUnit ? nw : nw / s1) * kLanes, kLanes);
          }
        }
        for (int64_t q = 0; q < kPixels; ++q)
          std::memcpy(DX + (ih * s.width + iw + q * s1) * kLanes, &acc[q], sizeof acc[q]);
      }
    }
    for (int64_t iw = 0; iw < s.width; ++iw) {
      if (phases.inBlock(iw))
        continue;
      Lanes<T> acc{};
      for (int64_t i = 0; i < win.kernel[0]; ++i) {
        const int64_t nh = ih + win.padBegin[0] - i * d0; // oh * s0 where it is one
        if (nh < 0)
          break; // and every later tap
        if (kUnit ? nh >= s.outHeight : nh % s0 != 0 || nh / s0 >= s.outHeight)
          continue;
        const T *dyRow = DY + (kUnit ? nh : nh / s0) * s.outWidth * kLanes;
        for (int64_t j = 0; j < win.kernel[1]; ++j) {
          const int64_t nw = iw + p1 - j * d1;
          if (nw < 0)
            break;
          if (kUnit ? nw >= s.outWidth : nw % s1 != 0 || nw / s1 >= s.outWidth)
            continue;
          taps.one(acc, taps.at(i, j), dyRow + (kUnit ? nw : nw / s1) * kLanes);
        }
      }
      std::memcpy(DX + (ih * s.width + iw) * kLanes, &acc, sizeof acc);
    }
  }
}

template <typename T>
PLAIT_SIMD_CLONES void depthwiseGradInputBlock(const ConvShape &s, const T *DY, const T *K, T *DX) {
  const DepthwiseTaps<T> taps{K, s.window.kernel[1]};
  if (s.window.stride[0] == 1 && s.window.stride[1] == 1)
    inputGradientRows<true>(s, DY, taps, DX);
  else
    inputGradientRows<false>(s, DY, taps, DX);
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
  forEachDepthwiseUnit(d, [&](int64_t slot, int64_t u) {
    const int64_t b = u / blocks, c0 = (u % blocks) * kBlock;
    const int64_t count = std::min(kBlock, s.channels - c0);
    T *in = buffers + slot * d.elements, *out = in + s.inPlane() * kBlock;
    T *K = out + s.outPlane() * kBlock;
    blockTaps(s, w, c0, count, K);
    body(b, c0, count, in, out, K);
  });
  return Status();
}

//===--- grouped convolutions computed directly ---------------------------------------===//

/// The grouped blocks of `s` (Workspace.h groupedBlocks, which the plan's workspace declares).
DepthwiseBlocks groupedBlocksOf(const ConvShape &s, bool gradWeight) {
  return groupedBlocks(s.batch, s.group, s.inPlane(), s.outPlane(), taps(s), gradWeight);
}

/// Group g's taps as K [tap][a][b] (kLanes x kLanes, the rest zero): w[f][c][tap] at a = f,
/// b = c when `byChannel` (conv2d_grad_input's, lanes the channels), else a = c, b = f
/// (conv2d's, lanes the filters).
template <typename T>
void groupTaps(const ConvShape &s, const T *w, int64_t g, bool byChannel, T *K) {
  const int64_t n = taps(s), cg = s.groupChannels, fg = s.filtersPerGroup();
  std::fill(K, K + n * kLanes * kLanes, T(0));
  for (int64_t f = 0; f < fg; ++f)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < n; ++t)
        K[(t * kLanes + (byChannel ? f : c)) * kLanes + (byChannel ? c : f)] =
            w[((g * fg + f) * cg + c) * n + t];
}

/// One (image, group)'s output plane Y [pixel][filter lane] from its input plane X [pixel]
/// [channel lane] and taps K [tap][channel][filter]: outputRows, each tap over the group's
/// channels in order.
template <typename T>
PLAIT_SIMD_CLONES void groupedBlock(const ConvShape &s, const T *X, const T *K, const T *bias,
                                    T *Y) {
  outputRows(s, X, GroupedTaps<T>{K, s.window.kernel[1], s.groupChannels}, bias, Y);
}

/// One (image, group)'s input gradient DX [pixel][channel lane] from DY [pixel][filter lane]
/// and taps K [tap][filter][channel]: inputGradientRows, each tap over the group's filters.
template <typename T>
PLAIT_SIMD_CLONES void groupedGradInputBlock(const ConvShape &s, const T *DY, const T *K, T *DX) {
  const GroupedTaps<T> taps{K, s.window.kernel[1], s.filtersPerGroup()};
  if (s.window.stride[0] == 1 && s.window.stride[1] == 1)
    inputGradientRows<true>(s, DY, taps, DX);
  else
    inputGradientRows<false>(s, DY, taps, DX);
}

/// One image's part of a group's weight gradient: for each tap in kernel order, the image's
/// products dy[f] * x[c] over the output pixels it reads, row by row, summed in the kernel's
/// type into a vector of filter lanes per channel, then added to the tap's sums in SUMS
/// [tap][channel][filter] (f64). kChannels: the group's channels when the caller knows them
/// (its accumulators then stay in registers), else 0 and `s.groupChannels` of them in `rows`.
template <int64_t kChannels, typename T>
PLAIT_VECTOR_INLINE void groupedGradWeightTaps(const ConvShape &s, const T *X, const T *DY,
                                               Lanes<T> *rows, double *SUMS) {
  const Window2d &win = s.window;
  const int64_t cg = kChannels > 0 ? kChannels : s.groupChannels;
  Lanes<T> fixed[kChannels > 0 ? kChannels : 1];
  Lanes<T> *acc = kChannels > 0 ? fixed : rows;
  for (int64_t i = 0; i < win.kernel[0]; ++i)
    for (int64_t j = 0; j < win.kernel[1]; ++j) {
      const int64_t off = j * win.dilation[1] - win.padBegin[1], step = win.stride[1];
      const auto [lo, hi] = validColumns(off, step, s.width, s.outWidth);
      double *sum = SUMS + (i * win.kernel[1] + j) * kLanes * kLanes;
      for (int64_t c = 0; c < cg; ++c)
        acc[c] = Lanes<T>{};
      for (int64_t oh = 0; oh < s.outHeight && lo < hi; ++oh) {
        const int64_t ih = oh * win.stride[0] - win.padBegin[0] + i * win.dilation[0];
        if (ih < 0 || ih >= s.height)
          continue;
        for (int64_t ow = lo; ow < hi; ++ow) {
          Lanes<T> g;
          std::memcpy(&g, DY + (oh * s.outWidth + ow) * kLanes, sizeof g);
          const T *x = X + (ih * s.width + ow * step + off) * kLanes;
          for (int64_t c = 0; c < cg; ++c)
            acc[c] += g * x[c];
        }
      }
      for (int64_t c = 0; c < cg; ++c) {
        T lanes[kLanes];
        std::memcpy(lanes, &acc[c], sizeof lanes);
        for (int64_t f = 0; f < kLanes; ++f)
          sum[c * kLanes + f] += double(lanes[f]);
      }
    }
}
template <typename T>
PLAIT_SIMD_CLONES void groupedGradWeightBlock(const ConvShape &s, const T *X, const T *DY,
                                              Lanes<T> *rows, double *SUMS) {
  switch (s.groupChannels) {
  case 4:
    return groupedGradWeightTaps<4>(s, X, DY, rows, SUMS);
  case 8:
    return groupedGradWeightTaps<8>(s, X, DY, rows, SUMS);
  case 16:
    return groupedGradWeightTaps<16>(s, X, DY, rows, SUMS);
  default:
    return groupedGradWeightTaps<0>(s, X, DY, rows, SUMS);
  }
}

/// Runs body(b, g, in, out, K) for each (image b, group g) unit of conv2d or conv2d_grad_input
/// with its slot's buffers: `in` for the group's input plane (x; dx), `out` for its output
/// plane (y; dy), and K holding its taps (groupTaps, `byChannel` for conv2d_grad_input).
template <typename T, typename Body>
Status forEachImageGroup(const ConvShape &s, const T *w, bool byChannel, Scratch &scratch,
                         Body &&body) {
  const DepthwiseBlocks d = groupedBlocksOf(s, false);
  T *buffers = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(d.elements * d.slots, buffers));
  forEachDepthwiseUnit(d, [&](int64_t slot, int64_t u) {
    const int64_t b = u / s.group, g = u % s.group;
    T *in = buffers + slot * d.elements, *out = in + s.inPlane() * kLanes;
    T *K = out + s.outPlane() * kLanes;
    groupTaps(s, w, g, byChannel, K);
    body(b, g, in, out, K);
  });
  return Status();
}

} // namespace

template <typename T>
Status groupedConv2d(const T *x, const T *w, const T *bias, const ConvShape &s, T *y,
                     Scratch &scratch) {
  const int64_t fg = s.filtersPerGroup();
  return forEachImageGroup<T>(s, w, false, scratch, [&](int64_t b, int64_t g, T *X, T *Y, T *K) {
    T biasLanes[kLanes] = {};
    for (int64_t f = 0; bias && f < fg; ++f)
      biasLanes[f] = bias[g * fg + f];
    toBlock(x + s.inputOffset(b, g), s.inPlane(), s.groupChannels, X);
    groupedBlock(s, X, K, bias ? biasLanes : nullptr, Y);
    fromBlock(Y, s.outPlane(), fg, y + s.outputOffset(b, g));
  });
}

template <typename T>
Status groupedConv2dGradInput(const T *dy, const T *w, const ConvShape &s, T *dx,
                              Scratch &scratch) {
  return forEachImageGroup<T>(s, w, true, scratch, [&](int64_t b, int64_t g, T *DX, T *DY, T *K) {
    toBlock(dy + s.outputOffset(b, g), s.outPlane(), s.filtersPerGroup(), DY);
    groupedGradInputBlock(s, DY, K, DX);
    fromBlock(DX, s.inPlane(), s.groupChannels, dx + s.inputOffset(b, g));
  });
}

template <typename T>
Status groupedConv2dGradWeight(const T *x, const T *dy, const ConvShape &s, T *dw, bool accumulate,
                               Scratch &scratch) {
  const DepthwiseBlocks d = groupedBlocksOf(s, true);
  const int64_t n = taps(s), cg = s.groupChannels, fg = s.filtersPerGroup();
  T *buffers = nullptr;
  double *sums = nullptr;
  PLAIT_RETURN_IF_ERROR(scratch.take(d.elements * d.slots, buffers));
  PLAIT_RETURN_IF_ERROR(scratch.take(d.sums * d.slots, sums));
  forEachDepthwiseUnit(d, [&](int64_t slot, int64_t g) {
    T *X = buffers + slot * d.elements, *DY = X + s.inPlane() * kLanes;
    double *SUMS = sums + slot * d.sums;
    Lanes<T> ROW[kLanes]; // a tap's products, [channel][filter lane] (groups of other widths)
    std::fill(SUMS, SUMS + d.sums, 0.0);
    for (int64_t b = 0; b < s.batch; ++b) { // the images in order
      toBlock(x + s.inputOffset(b, g), s.inPlane(), cg, X);
      toBlock(dy + s.outputOffset(b, g), s.outPlane(), fg, DY);
      groupedGradWeightBlock(s, X, DY, ROW, SUMS);
    }
    for (int64_t f = 0; f < fg; ++f)
      for (int64_t c = 0; c < cg; ++c) {
        T *out = dw + ((g * fg + f) * cg + c) * n;
        for (int64_t t = 0; t < n; ++t) {
          const double sum = SUMS[(t * kLanes + c) * kLanes + f];
          out[t] = accumulate ? T(double(out[t]) + sum) : T(sum);
        }
      }
  });
  return Status();
}

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
  forEachDepthwiseUnit(d, [&](int64_t slot, int64_t u) {
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

template Status groupedConv2d<float>(const float *, const float *, const float *, const ConvShape &,
                                     float *, Scratch &);
template Status groupedConv2d<double>(const double *, const double *, const double *,
                                      const ConvShape &, double *, Scratch &);
template Status groupedConv2dGradInput<float>(const float *, const float *, const ConvShape &,
                                              float *, Scratch &);
template Status groupedConv2dGradInput<double>(const double *, const double *, const ConvShape &,
                                               double *, Scratch &);
template Status groupedConv2dGradWeight<float>(const float *, const float *, const ConvShape &,
                                               float *, bool, Scratch &);
template Status groupedConv2dGradWeight<double>(const double *, const double *, const ConvShape &,
                                                double *, bool, Scratch &);

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
