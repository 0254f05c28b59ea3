// The convolutions' gradient kernels (conv2d_grad_input, conv2d_grad_weight): PyTorch 1.13
// autograd values (baked in; generated on the CPU with float32 unless noted), brute-force
// adjoints of the forward conv2d, and the direct, Winograd and image-block paths against the
// im2col one.
#include <cmath>
#include <limits>

#include "KernelTestSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::test {
namespace {

//===----------------------------------------------------------------------===//
// conv2d_grad_input, conv2d_grad_weight
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group;
  int64_t strides[2], pads[4], dilations[2];

  /// The output's height and width.
  int64_t outH() const { return outSize(h, kh, strides[0], pads[0], pads[2], dilations[0]); }
  int64_t outW() const { return outSize(w, kw, strides[1], pads[1], pads[3], dilations[1]); }

private:
  static int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d) {
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
  }
};

/// The case's attributes, `imageBlock` images per GEMM (0: no image_block attribute), and
/// with `winograd` its 3x3 stride-1 windows by Winograd F(2x2, 3x3) (plait-conv-winograd).
Attrs convAttrs(const ConvCase &c, int64_t imageBlock = 0, bool winograd = false,
                bool direct = false) {
  AttrsBuilder attrs;
  attrs.ints("strides", {c.strides[0], c.strides[1]})
      .ints("pads", {c.pads[0], c.pads[1], c.pads[2], c.pads[3]})
      .ints("dilations", {c.dilations[0], c.dilations[1]})
      .i("group", c.group);
  if (imageBlock != 0)
    attrs.i("image_block", imageBlock);
  if (winograd)
    attrs.i("winograd", 1);
  if (direct)
    attrs.i("direct", 1);
  return attrs.build();
}

/// The seven-loop convolution run backwards: every product x * w that the forward adds into
/// y[n, m, i, j] sends dy[n, m, i, j] * w to dx and dy[n, m, i, j] * x to dw.
void referenceConvGrads(const ConvCase &c, const std::vector<double> &x,
                        const std::vector<double> &w, const std::vector<double> &dy,
                        std::vector<double> &dx, std::vector<double> &dw) {
  int64_t oh = c.outH();
  int64_t ow = c.outW();
  int64_t cg = c.c / c.group, mg = c.m / c.group;
  dx.assign(x.size(), 0);
  dw.assign(w.size(), 0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double g = dy[((n * c.m + m) * oh + i) * ow + j];
          int64_t grp = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ki = 0; ki < c.kh; ++ki)
              for (int64_t kj = 0; kj < c.kw; ++kj) {
                int64_t ih = i * c.strides[0] - c.pads[0] + ki * c.dilations[0];
                int64_t iw = j * c.strides[1] - c.pads[1] + kj * c.dilations[1];
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w)
                  continue;
                int64_t xi = ((n * c.c + grp * cg + ci) * c.h + ih) * c.w + iw;
                int64_t wi = ((m * cg + ci) * c.kh + ki) * c.kw + kj;
                dx[xi] += g * w[wi];
                dw[wi] += g * x[xi];
              }
        }
}

/// A case's shapes, patterned x, w and dy, and the brute-force adjoint's dx and dw.
struct ConvGradCase {
  explicit ConvGradCase(const ConvCase &c) {
    const int64_t oh = c.outH();
    const int64_t ow = c.outW();
    xs = {c.n, c.c, c.h, c.w}, ws = {c.m, c.c / c.group, c.kh, c.kw}, ys = {c.n, c.m, oh, ow};
    xv = pattern(c.n * c.c * c.h * c.w, 11, -5, 0.37);
    wv = pattern(c.m * (c.c / c.group) * c.kh * c.kw, 7, -3, 0.21);
    dyv = pattern(c.n * c.m * oh * ow, 5, -2.2, 0.9);
    referenceConvGrads(c, xv, wv, dyv, dxRef, dwRef);
  }
  std::vector<int64_t> xs, ws, ys;
  std::vector<double> xv, wv, dyv, dxRef, dwRef;
};

TEST(ConvGrad, MatchesPyTorchStridedPadded) {
  ConvCase c{1, 2, 4, 4, 3, 3, 3, 1, {2, 2}, {1, 1, 1, 1}, {1, 1}};
  auto x = makeFloat(DType::F32, {1, 2, 4, 4}, pattern(32, 7, -3, 0.25));
  auto w = makeFloat(DType::F32, {3, 2, 3, 3}, pattern(54, 5, -2, 0.5));
  auto dy = makeFloat(DType::F32, {1, 3, 2, 2}, pattern(12, 3, -1, 1.0));
  auto dx = runOk("conv2d_grad_input", {dy, w}, DType::F32, {1, 2, 4, 4}, convAttrs(c));
  EXPECT_TRUE(allClose(dx.floats(),
                       {-2.0, -1.0, 1.0,  1.0,  -1.0, 3.0,  -1.0, -1.0, 1.0, -1.0, -2.0,
                        0.5,  1.0,  1.5,  0.5,  0.5,  0.5,  -3.5, -1.5, 1.0, -1.0, -2.0,
                        1.5,  -1.0, 1.0,  1.5,  0.5,  -2.0, -1.5, 1.5,  0.5, 0.5}));
  auto dw = runOk("conv2d_grad_weight", {x, dy}, DType::F32, {3, 2, 3, 3}, convAttrs(c));
  EXPECT_TRUE(allClose(
      dw.floats(),
      {-0.5, -0.5, 1.25,  0.25, 0.25, 0.0,   -0.75, 1.0,   0.75,  0.75,  1.25, -0.5, -0.25, -0.25,
       -0.5, 0.5,  -1.25, 0.25, 0.0,  -0.25, -0.5,  -0.5,  0.25,  0.25,  0.5,  0.25, -1.5,  0.0,
       -0.75, 0.75, 0.0,  0.25, 0.25, -0.75, 0.25,  0.25,  0.5,   0.75,  -0.75, 0.25, -0.5, -0.25,
       0.25, -1.25, 0.75, -0.75, -0.5, -0.25, 0.25,  0.0,   0.25,  0.25,  1.0,  -0.5}));
}

TEST(ConvGrad, MatchesPyTorchGroupedDilated) {
  ConvCase c{1, 4, 5, 5, 4, 2, 2, 2, {1, 1}, {0, 0, 0, 0}, {2, 2}};
  auto x = makeFloat(DType::F64, {1, 4, 5, 5}, pattern(100, 9, -4, 0.125));
  auto w = makeFloat(DType::F64, {4, 2, 2, 2}, pattern(32, 5, -2, 0.5));
  auto dy = makeFloat(DType::F64, {1, 4, 3, 3}, pattern(36, 4, -1.5, 1.0));
  auto dx = runOk("conv2d_grad_input", {dy, w}, DType::F64, {1, 4, 5, 5}, convAttrs(c));
  EXPECT_TRUE(allClose(
      dx.values<double>(),
      {1.25,  0.75,  0.5,  0.75,  1.25,  -2.25, 1.25,  -1.5,  0.25,  0.75,  0.75,  -2.75, 0.5,
       -2.75, -0.25, 1.5,  0.5,   1.0,   -0.5,  -0.5,  -1.5,  1.5,   0.0,   1.5,   -0.5,  -1.5,
       -0.5,  1.75,  0.75, 0.25,  1.5,   -1.5,  -2.75, 1.25,  0.75,  0.75,  2.25,  0.5,   -2.75,
       -0.25, -2.25, 0.25, 2.25,  0.5,   -0.5,  1.25,  -2.25, -1.25, 1.5,   0.5,   1.25,  -2.25,
       -1.25, 1.5,   0.5,  0.75,  1.25,  -2.75, -1.5,  1.5,   -0.25, 2.25,  1.75,  1.0,   -3.0,
       -0.5,  -0.5,  1.0,  0.5,   1.5,   -0.5,  -0.5,  -2.0,  -0.5,  0.5,   0.25,  -2.25, 2.5,
       -2.25, 0.25,  0.75, 0.25,  -1.5,  1.25,  -2.25, -0.25, 2.25,  0.5,   2.25,  0.75,  -0.5,
       -1.5,  1.0,   -0.5, 1.5,   0.5,   -0.5,  -2.0,  -0.5,  -0.5}));
  auto dw = runOk("conv2d_grad_weight", {x, dy}, DType::F64, {4, 2, 2, 2}, convAttrs(c));
  EXPECT_TRUE(allClose(dw.values<double>(),
                       {0.0625,  0.25,    -0.125,  1.75,    -1.25,   0.0625,  -1.4375, -0.125,
                        -0.5625, -1.25,   -0.625,  -0.75,   1.25,    -0.5625, -1.0625, -0.625,
                        -0.5625, 1.25,    -1.0625, 1.3125,  -1.25,   -0.5625, -0.625,  -1.0625,
                        0.0625,  -1.25,   -1.4375, 1.1875,  0.25,    0.0625,  -0.125,  -1.4375}));
}

/// A depthwise convolution plane by plane, as the kernels computed it before their channel
/// blocks (every sum in the same order): y from its bias and its taps in kernel order; dx
/// from 0, each tap in kernel order adding onto the inputs it read; dw per channel, each
/// tap's rows summed in double, the rows then the images in order.
template <typename T> struct DepthwisePlaneLoops {
  const ConvCase &c;
  int64_t oh, ow;
  /// Calls fn(i, j, y, x) for every valid tap of every output (y, x: plane offsets), taps in
  /// kernel order, then rows, then columns.
  template <typename Fn> void taps(Fn &&fn) const {
    for (int64_t i = 0; i < c.kh; ++i)
      for (int64_t j = 0; j < c.kw; ++j)
        for (int64_t r = 0; r < oh; ++r)
          for (int64_t q = 0; q < ow; ++q) {
            int64_t ih = r * c.strides[0] - c.pads[0] + i * c.dilations[0];
            int64_t iw = q * c.strides[1] - c.pads[1] + j * c.dilations[1];
            if (ih >= 0 && ih < c.h && iw >= 0 && iw < c.w)
              fn(i, j, r, r * ow + q, ih * c.w + iw);
          }
  }
  std::vector<T> conv(const std::vector<T> &x, const std::vector<T> &w,
                      const std::vector<T> &b) const {
    std::vector<T> y(size_t(c.n * c.c * oh * ow));
    for (int64_t p = 0; p < c.n * c.c; ++p) {
      T *out = y.data() + p * oh * ow;
      const T *in = x.data() + p * c.h * c.w, *k = w.data() + (p % c.c) * c.kh * c.kw;
      std::fill(out, out + oh * ow, b[size_t(p % c.c)]);
      taps([&](int64_t i, int64_t j, int64_t, int64_t o, int64_t at) {
        out[o] += k[i * c.kw + j] * in[at];
      });
    }
    return y;
  }
  std::vector<T> gradInput(const std::vector<T> &dy, const std::vector<T> &w) const {
    std::vector<T> dx(size_t(c.n * c.c * c.h * c.w), T(0));
    for (int64_t p = 0; p < c.n * c.c; ++p) {
      const T *g = dy.data() + p * oh * ow, *k = w.data() + (p % c.c) * c.kh * c.kw;
      T *out = dx.data() + p * c.h * c.w;
      taps([&](int64_t i, int64_t j, int64_t, int64_t o, int64_t at) {
        out[at] += k[i * c.kw + j] * g[o];
      });
    }
    return dx;
  }
  std::vector<T> gradWeight(const std::vector<T> &x, const std::vector<T> &dy) const {
    std::vector<T> dw(size_t(c.c * c.kh * c.kw));
    for (int64_t ch = 0; ch < c.c; ++ch) {
      std::vector<double> sums(size_t(c.kh * c.kw), 0.0);
      for (int64_t b = 0; b < c.n; ++b) {
        const int64_t p = b * c.c + ch;
        const T *in = x.data() + p * c.h * c.w, *g = dy.data() + p * oh * ow;
        // a row's products summed apart, then added: one (tap, row) at a time
        int64_t tap = -1, row = -1;
        double acc = 0;
        taps([&](int64_t i, int64_t j, int64_t r, int64_t o, int64_t at) {
          if (i * c.kw + j != tap || r != row) {
            if (tap >= 0)
              sums[size_t(tap)] += acc;
            tap = i * c.kw + j, row = r, acc = 0;
          }
          acc += double(g[o]) * double(in[at]);
        });
        if (tap >= 0)
          sums[size_t(tap)] += acc;
      }
      for (int64_t t = 0; t < c.kh * c.kw; ++t)
        dw[size_t(ch * c.kh * c.kw + t)] = T(sums[size_t(t)]);
    }
    return dw;
  }
};

template <typename T> std::vector<T> valuesOf(const OwnedTensor &t) {
  std::vector<T> v(size_t(t.view.numel()));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

// Depthwise convolutions in blocks of 16 channels transposed into the workspace
// (ConvSupport.h depthwiseConv2d): the bits of the plane-by-plane loops above, in f32 and
// f64, on 1 and 2 threads, for channels in whole blocks, a partial block and blocks of more
// than one slot, 7x7 (ConvNeXt), 5x5 strided (EfficientNet), 3x3 strided with asymmetric pads,
// and dilated windows.
TEST(ConvGrad, DepthwiseChannelBlocksGiveThePlaneLoopsBits) {
  const ConvCase cases[] = {
      {3, 40, 12, 12, 40, 7, 7, 40, {1, 1}, {3, 3, 3, 3}, {1, 1}},
      {2, 16, 11, 9, 16, 5, 5, 16, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {2, 24, 9, 8, 24, 3, 3, 24, {2, 1}, {1, 0, 1, 2}, {1, 1}},
      {2, 20, 8, 10, 20, 3, 3, 20, {1, 2}, {2, 2, 2, 2}, {2, 2}},
      {8, 96, 6, 6, 96, 7, 7, 96, {1, 1}, {3, 3, 3, 3}, {1, 1}},
  };
  auto check = [](auto tag, const ConvCase &c, DType dt) {
    using T = decltype(tag);
    const DepthwisePlaneLoops<T> ref{c, c.outH(), c.outW()};
    const std::vector<int64_t> xs{c.n, c.c, c.h, c.w}, ws{c.m, 1, c.kh, c.kw},
        ys{c.n, c.m, c.outH(), c.outW()};
    // Random values, so that a sum in another order would round differently.
    auto random = [&](std::vector<int64_t> shape, uint32_t seed) {
      std::vector<float> v = randomFloats(shape, seed, -1, 1).floats();
      return makeFloat(dt, shape, std::vector<double>(v.begin(), v.end()));
    };
    auto x = random(xs, 1), w = random(ws, 2), dy = random(ys, 3), b = random({c.m}, 4);
    std::vector<T> want[3] = {ref.conv(valuesOf<T>(x), valuesOf<T>(w), valuesOf<T>(b)),
                              ref.gradInput(valuesOf<T>(dy), valuesOf<T>(w)),
                              ref.gradWeight(valuesOf<T>(x), valuesOf<T>(dy))};
    for (int threads : {1, 2}) {
      KernelThreads use(threads);
      SCOPED_TRACE(::testing::Message() << "channels " << c.c << " window " << c.kh << "x" << c.kw
                                        << " " << dtypeName(dt) << " on " << threads << " threads");
      EXPECT_EQ(valuesOf<T>(runOk("conv2d", {x, w, b}, dt, ys, convAttrs(c))), want[0]);
      EXPECT_EQ(valuesOf<T>(runOk("conv2d_grad_input", {dy, w}, dt, xs, convAttrs(c))), want[1]);
      EXPECT_EQ(valuesOf<T>(runOk("conv2d_grad_weight", {x, dy}, dt, ws, convAttrs(c))), want[2]);
    }
  };
  for (const ConvCase &c : cases) {
    check(float{}, c, DType::F32);
    check(double{}, c, DType::F64);
  }
}

// Grouped convolutions of narrow groups computed directly (plait-conv-grouped-direct's
// `direct`, ConvShape::groupedDirect): conv2d and both adjoints within rounding of im2col and
// GEMMs (f64: 1e-12), the same bits on 1 and 2 threads, with exactly the workspace
// Workspace.cpp groupedBytes declares (runOk checks it; bf16 staged through f32 too). RegNet's
// width 8, stride 2, 4 channels against 16 filters with asymmetric pads, a dilated window, a
// depthwise multiplier of 2 (1 channel, 2 filters a group) and a pointwise one of 16 a group.
TEST(ConvGrad, GroupedDirectMatchesTheGemmPath) {
  const ConvCase cases[] = {
      {8, 64, 12, 12, 64, 3, 3, 8, {1, 1}, {1, 1, 1, 1}, {1, 1}},
      {3, 32, 11, 9, 32, 3, 3, 4, {2, 2}, {1, 1, 1, 1}, {1, 1}},
      {2, 16, 9, 8, 64, 3, 3, 4, {2, 1}, {1, 0, 1, 2}, {1, 1}},
      {2, 12, 8, 10, 12, 3, 3, 3, {1, 2}, {2, 2, 2, 2}, {2, 2}},
      {2, 8, 7, 7, 16, 5, 5, 8, {1, 1}, {2, 2, 2, 2}, {1, 1}},
      {2, 32, 6, 6, 32, 1, 1, 2, {1, 1}, {0, 0, 0, 0}, {1, 1}},
  };
  for (const ConvCase &c : cases)
    for (DType dt : {DType::F64, DType::F32, DType::BF16}) {
      SCOPED_TRACE(::testing::Message() << c.c / c.group << " channels, " << c.m / c.group
                                        << " filters a group, " << dtypeName(dt));
      const std::vector<int64_t> xs{c.n, c.c, c.h, c.w}, ws{c.m, c.c / c.group, c.kh, c.kw},
          ys{c.n, c.m, c.outH(), c.outW()};
      auto random = [&](std::vector<int64_t> shape, uint32_t seed) {
        std::vector<float> v = randomFloats(shape, seed, -1, 1).floats();
        return makeFloat(dt, shape, std::vector<double>(v.begin(), v.end()));
      };
      auto x = random(xs, 5), w = random(ws, 6), dy = random(ys, 7), b = random({c.m}, 8);
      const Attrs gemm = convAttrs(c), direct = convAttrs(c, 0, false, true);
      const std::vector<double> want[3] = {
          runOk("conv2d", {x, w, b}, dt, ys, gemm).doubles(),
          runOk("conv2d_grad_input", {dy, w}, dt, xs, gemm).doubles(),
          runOk("conv2d_grad_weight", {x, dy}, dt, ws, gemm).doubles()};
      // bf16: both paths compute in f32 (the kernels stage half precision), then round; a
      // sum in another order can round to the neighbouring bf16 value.
      const double tol = dt == DType::F64 ? 1e-12 : dt == DType::F32 ? 2e-5 : 1e-2;
      std::vector<double> got[2][3];
      for (int threads : {1, 2}) {
        KernelThreads use(threads);
        std::vector<double> *g = got[threads - 1];
        g[0] = runOk("conv2d", {x, w, b}, dt, ys, direct).doubles();
        g[1] = runOk("conv2d_grad_input", {dy, w}, dt, xs, direct).doubles();
        g[2] = runOk("conv2d_grad_weight", {x, dy}, dt, ws, direct).doubles();
        for (int k = 0; k < 3; ++k)
          EXPECT_TRUE(allClose(g[k], want[k], tol, tol)) << "kernel " << k;
      }
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(got[0][k], got[1][k]) << "kernel " << k;
    }
}

TEST(ConvGrad, MatchesBruteForceAdjointOverGeometries) {
  const ConvCase cases[] = {
      {2, 3, 5, 6, 4, 3, 2, 1, {1, 2}, {1, 0, 2, 1}, {1, 1}}, // asymmetric pads
      {2, 4, 7, 7, 6, 3, 3, 2, {2, 1}, {2, 1, 0, 2}, {2, 1}}, // grouped, dilated
      {3, 4, 4, 5, 4, 1, 1, 4, {1, 1}, {0, 0, 0, 0}, {1, 1}}, // depthwise pointwise
      {2, 3, 3, 4, 2, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}}, // pointwise: no im2col
      {1, 2, 6, 6, 2, 2, 2, 1, {3, 3}, {0, 0, 0, 0}, {1, 1}}, // stride beyond the kernel
      {1, 1, 3, 3, 1, 3, 3, 1, {1, 1}, {2, 2, 2, 2}, {1, 1}}, // pads as wide as the kernel
      // depthwise, computed directly (ConvShape::depthwise): strided with asymmetric pads,
      // dilated, and ConvNeXt's 7x7 with pads of 3
      {2, 3, 9, 8, 3, 3, 3, 3, {2, 2}, {1, 0, 1, 2}, {1, 1}},
      {2, 2, 7, 7, 2, 3, 3, 2, {1, 1}, {2, 2, 2, 2}, {2, 2}},
      {2, 3, 12, 12, 3, 7, 7, 3, {1, 1}, {3, 3, 3, 3}, {1, 1}},
  };
  for (const ConvCase &c : cases) {
    const ConvGradCase g(c);
    for (DType dt : {DType::F64, DType::F32}) {
      auto x = makeFloat(dt, g.xs, g.xv), w = makeFloat(dt, g.ws, g.wv);
      auto dy = makeFloat(dt, g.ys, g.dyv);
      auto dx = runOk("conv2d_grad_input", {dy, w}, dt, g.xs, convAttrs(c));
      auto dw = runOk("conv2d_grad_weight", {x, dy}, dt, g.ws, convAttrs(c));
      EXPECT_TRUE(allClose(dx.floats(), g.dxRef)) << "dx, case group " << c.group;
      EXPECT_TRUE(allClose(dw.floats(), g.dwRef)) << "dw, case group " << c.group;
    }
  }
}

/// Runs a Winograd gradient `kernel` on `inputs` (dtype `dt`) into `outShape` on 1 and 2
/// threads: the same bits on both, within f32 rounding (`atol`) of the brute-force `ref` in
/// f32, within 1e-12 of it in f64.
void expectWinogradGradient(const char *kernel, const std::vector<OwnedTensor> &inputs, DType dt,
                            const std::vector<int64_t> &outShape, const Attrs &attrs,
                            const std::vector<double> &ref, double atol) {
  std::vector<double> got[2];
  for (int threads : {1, 2}) {
    KernelThreads use(threads);
    got[threads - 1] = runOk(kernel, inputs, dt, outShape, attrs).doubles();
  }
  EXPECT_EQ(got[0], got[1]);
  if (dt == DType::F32) {
    EXPECT_TRUE(allClose(std::vector<float>(got[0].begin(), got[0].end()), ref, 1e-4, atol));
    return;
  }
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(got[0][i], ref[i], 1e-12 * (1 + std::fabs(ref[i]))) << i;
}

// conv2d_grad_input by Winograd F(2x2, 3x3) (`winograd`: dy correlated with the turned
// weights, padded by 2 - pad): within float rounding (f64: 1e-12) of the brute-force adjoint
// over pads of 0 to 2, odd planes, several chunks in several slots, weights transformed in
// two blocks of dy's channels and an empty batch; the same bits on 1 and 2 threads; exactly
// its declared workspace (the harness).
TEST(ConvGrad, WinogradInputGradientMatchesTheAdjoint) {
  const ConvCase cases[] = {
      {1, 3, 8, 8, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},     // same padding
      {2, 5, 7, 9, 3, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},     // odd planes
      {1, 4, 6, 5, 6, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},     // no padding
      {2, 3, 5, 6, 2, 3, 3, 1, {1, 1}, {2, 0, 1, 2}, {1, 1}},     // asymmetric pads
      {2, 32, 18, 18, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}}, // chunks in 2 slots
      {1, 3, 4, 4, 136, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},   // 2 blocks of dy's channels
      {0, 3, 4, 4, 2, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},     // an empty batch
  };
  for (const ConvCase &c : cases) {
    const ConvGradCase g(c);
    const Attrs attrs = convAttrs(c, 0, true);
    for (DType dt : {DType::F64, DType::F32}) {
      SCOPED_TRACE(::testing::Message() << dtypeName(dt) << ", x [" << c.n << ", " << c.c << ", "
                                        << c.h << ", " << c.w << "]");
      expectWinogradGradient("conv2d_grad_input",
                             {makeFloat(dt, g.ys, g.dyv), makeFloat(dt, g.ws, g.wv)}, dt, g.xs,
                             attrs, g.dxRef, 1e-5);
    }
  }
}

// conv2d_grad_weight by the transpose of Winograd F(2x2, 3x3) (`winograd`: each tile's
// transformed 2x2 of dy times its transformed 4x4 of x, summed over the tiles by 16 GEMMs):
// within float rounding (f64: 1e-12) of the brute-force adjoint over pads of 0 to 2, odd
// planes (tiles overhanging dy), several chunks of tile rows and tile rows longer than a
// chunk, products transformed back in two blocks of x's channels, an empty batch (dw
// zeroed); the same bits on 1 and 2 threads; exactly its declared workspace (the harness).
TEST(ConvGrad, WinogradWeightGradientMatchesTheAdjoint) {
  ASSERT_EQ(winogradGradChunks(9, 4 * 9, 64, 64).count, 2); // 18x18: chunks of 28 rows
  ASSERT_EQ(winogradGradChunks(300, 2, 64, 64).rows, 1);    // 1x600: a row a chunk
  const ConvCase cases[] = {
      {1, 3, 8, 8, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},     // same padding
      {2, 5, 7, 9, 3, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},     // odd planes
      {1, 4, 6, 5, 6, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},     // no padding
      {2, 3, 5, 6, 2, 3, 3, 1, {1, 1}, {2, 0, 1, 2}, {1, 1}},     // asymmetric pads
      {4, 64, 18, 18, 64, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}}, // two chunks
      {2, 64, 1, 600, 64, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}}, // rows past a chunk
      {1, 136, 4, 4, 3, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},   // 2 blocks of x's channels
      {0, 3, 4, 4, 2, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},     // an empty batch
  };
  for (const ConvCase &c : cases) {
    const ConvGradCase g(c);
    const Attrs attrs = convAttrs(c, 0, true);
    for (DType dt : {DType::F64, DType::F32}) {
      SCOPED_TRACE(::testing::Message() << dtypeName(dt) << ", x [" << c.n << ", " << c.c << ", "
                                        << c.h << ", " << c.w << "]");
      expectWinogradGradient("conv2d_grad_weight",
                             {makeFloat(dt, g.xs, g.xv), makeFloat(dt, g.ys, g.dyv)}, dt, g.ws,
                             attrs, g.dwRef, 1e-4);
    }
  }
}

// A deep layer's conv2d_grad_weight (more filters than output pixels: Workspace.h
// convGradWeightRowPanels) takes the images in order into dw itself, its GEMMs in fixed panels
// of filters: within float rounding of the seven-loop reference, the same bits on 1 and 2
// threads (the blocks do not depend on the thread count), one column matrix of workspace
// and no copies of dw; grouped too. The harness checks the declared workspace.
TEST(ConvGrad, DeepLayersSumImagesIntoDwInFilterBlocks) {
  for (const ConvCase &c : {ConvCase{3, 16, 6, 6, 96, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
                            ConvCase{2, 8, 5, 5, 160, 3, 3, 2, {2, 2}, {1, 1, 1, 1}, {1, 1}}}) {
    const int64_t oh = c.outH();
    const int64_t ow = c.outW();
    ASSERT_TRUE(convGradWeightRowPanels(c.m / c.group, oh * ow));
    const std::vector<int64_t> xShape{c.n, c.c, c.h, c.w}, wShape{c.m, c.c / c.group, c.kh, c.kw},
        yShape{c.n, c.m, oh, ow};
    OwnedTensor x = randomFloats(xShape, 1, -1, 1), dy = randomFloats(yShape, 2, -1, 1);
    OwnedTensor w = randomFloats(wShape, 3, -1, 1);
    std::vector<double> dx, dw;
    referenceConvGrads(c, x.doubles(), w.doubles(), dy.doubles(), dx, dw);
    std::vector<float> byThreads[2];
    for (int threads : {1, 2}) {
      KernelThreads use(threads);
      byThreads[threads - 1] =
          runOk("conv2d_grad_weight", {x, dy}, DType::F32, wShape, convAttrs(c)).floats();
    }
    EXPECT_EQ(byThreads[0], byThreads[1]);
    EXPECT_TRUE(allClose(byThreads[0], dw, 1e-4, 1e-4));
  }
}

// bf16/f16 conv2d_grad_weight stages a few images at a time (here 2 of the 3 images of
// 8 x 256 x 256, then 1) and sums their dw into one f32 dw, rounded at the end: within a
// unit in the last place of the f32 kernel's dw on the widened operands (the images are
// grouped differently), on one thread and on two; in the blocked form too, and both by im2col
// and by Winograd (`winograd`). The harness checks the declared workspace.
TEST(ConvGrad, HalfWeightGradientStagesAFewImagesAtATime) {
  ASSERT_EQ(batchStageEntries(3, 8 * 256 * 256), 2);
  for (const ConvCase &c : {ConvCase{3, 8, 256, 256, 8, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
                            ConvCase{3, 16, 6, 6, 96, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}}})
    for (int threads : {1, 2})
      for (DType dt : {DType::BF16, DType::F16}) {
        SCOPED_TRACE(::testing::Message() << dtypeName(dt) << " on " << threads << " threads, "
                                          << c.c << " channels");
        KernelThreads use(threads);
        const std::vector<int64_t> xShape{c.n, c.c, c.h, c.w},
            wShape{c.m, c.c / c.group, c.kh, c.kw}, yShape{c.n, c.m, c.h, c.w};
        OwnedTensor x = convertedTo(dt, randomFloats(xShape, 4, -1, 1));
        OwnedTensor dy = convertedTo(dt, randomFloats(yShape, 5, -1, 1));
        for (bool winograd : {false, true}) {
          SCOPED_TRACE(winograd ? "by Winograd" : "by im2col");
          const Attrs attrs = convAttrs(c, 0, winograd);
          std::vector<float> got = runOk("conv2d_grad_weight", {x, dy}, dt, wShape, attrs).floats();
          std::vector<float> want =
              convertedTo(dt, runOk("conv2d_grad_weight",
                                    {convertedTo(DType::F32, x), convertedTo(DType::F32, dy)},
                                    DType::F32, wShape, attrs))
                  .floats();
          ASSERT_EQ(got.size(), want.size());
          const double ulp = dt == DType::BF16 ? 1.0 / 128 : 1.0 / 1024;
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_NEAR(got[i], want[i], std::abs(want[i]) * ulp + 1e-6) << "element " << i;
        }
      }
}

// With image_block, conv2d_grad_input and conv2d_grad_weight gather several images' dy side by
// side and multiply them in one GEMM (dx: then col2im per image; dw: one GEMM over the block's
// columns, the blocks summed in order): the brute-force adjoint's values over blocks of 1 to
// more than the batch (a short last block), pointwise, strided, grouped and deep-layer
// geometries (more filters than a block's pixels: dw in row panels), in f32 and f64; the same
// bits on 1 and 2 threads for each block. The harness checks the declared workspace.
TEST(ConvGrad, ImageBlocksGatherSeveralImagesIntoOneGemm) {
  const ConvCase cases[] = {
      {5, 3, 8, 8, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},   // same padding
      {5, 4, 5, 6, 6, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},   // pointwise
      {4, 4, 9, 7, 6, 3, 2, 2, {2, 1}, {1, 0, 1, 1}, {1, 2}},   // grouped, strided
      {5, 16, 3, 3, 96, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}}, // deep: dw in row panels
  };
  for (const ConvCase &c : cases) {
    const ConvGradCase g(c);
    for (DType dt : {DType::F64, DType::F32})
      for (int64_t block : {1, 2, 3, 9}) {
        SCOPED_TRACE(::testing::Message() << dtypeName(dt) << ", image_block " << block << ", "
                                          << c.c << " channels, " << c.m << " filters");
        auto x = makeFloat(dt, g.xs, g.xv), w = makeFloat(dt, g.ws, g.wv);
        auto dy = makeFloat(dt, g.ys, g.dyv);
        std::vector<float> dx[2], dw[2];
        for (int threads : {1, 2}) {
          KernelThreads use(threads);
          dx[threads - 1] =
              runOk("conv2d_grad_input", {dy, w}, dt, g.xs, convAttrs(c, block)).floats();
          dw[threads - 1] =
              runOk("conv2d_grad_weight", {x, dy}, dt, g.ws, convAttrs(c, block)).floats();
        }
        EXPECT_EQ(dx[0], dx[1]);
        EXPECT_EQ(dw[0], dw[1]);
        EXPECT_TRUE(allClose(dx[0], g.dxRef, 1e-4, 1e-4));
        EXPECT_TRUE(allClose(dw[0], g.dwRef, 1e-4, 1e-4));
      }
  }
}

// bf16 gradients stage a few images at a time, each slice's blocks at most its images.
TEST(ConvGrad, HalfGradientsStageImageBlocks) {
  const ConvCase c{3, 8, 256, 256, 8, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}};
  ASSERT_EQ(batchStageEntries(3, 8 * 256 * 256), 2);
  const std::vector<int64_t> shape{3, 8, 256, 256}, wShape{8, 8, 3, 3};
  OwnedTensor x = convertedTo(DType::BF16, randomFloats(shape, 4, -1, 1));
  OwnedTensor dy = convertedTo(DType::BF16, randomFloats(shape, 5, -1, 1));
  OwnedTensor w = convertedTo(DType::BF16, randomFloats(wShape, 6, -0.5, 0.5));
  auto wide = [&](const OwnedTensor &t) { return convertedTo(DType::F32, t); };
  for (const char *kernel : {"conv2d_grad_input", "conv2d_grad_weight"}) {
    SCOPED_TRACE(kernel);
    const bool input = std::string_view(kernel) == "conv2d_grad_input";
    std::vector<OwnedTensor> in =
        input ? std::vector<OwnedTensor>{dy, w} : std::vector<OwnedTensor>{x, dy};
    std::vector<OwnedTensor> wideIn = {wide(in[0]), wide(in[1])};
    const std::vector<int64_t> &out = input ? shape : wShape;
    std::vector<float> got = runOk(kernel, in, DType::BF16, out, convAttrs(c, 3)).floats();
    std::vector<float> want =
        convertedTo(DType::BF16, runOk(kernel, wideIn, DType::F32, out, convAttrs(c))).floats();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], std::abs(want[i]) / 128 + 1e-6) << "element " << i;
  }
}

TEST(ConvGrad, ShapeAndDtypeErrors) {
  ConvCase c{1, 2, 4, 4, 3, 3, 3, 1, {2, 2}, {1, 1, 1, 1}, {1, 1}};
  auto w = makeFloat(DType::F32, {3, 2, 3, 3}, pattern(54, 5, -2, 0.5));
  auto badDy = makeFloat(DType::F32, {1, 3, 3, 3}, pattern(27, 3, -1, 1.0));
  auto r = runKernel("conv2d_grad_input", {badDy, w}, {{DType::F32, {1, 2, 4, 4}}}, convAttrs(c));
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("conv2d_grad_input: grad has shape [1, 3, 3, 3], expected "
                                    "[1, 3, 2, 2]"),
            std::string::npos)
      << r.status.message();
  auto dy64 = makeFloat(DType::F64, {1, 3, 2, 2}, pattern(12, 3, -1, 1.0));
  r = runKernel("conv2d_grad_weight", {makeFloat(DType::F32, {1, 2, 4, 4}, pattern(32, 3, 0, 1)),
                                       dy64},
                {{DType::F32, {3, 2, 3, 3}}}, convAttrs(c));
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("unsupported dtype f32 x f64"), std::string::npos)
      << r.status.message();
  auto x = make<int64_t>({1, 2, 4, 4}, std::vector<int64_t>(32, 1));
  auto dy = make<int64_t>({1, 3, 2, 2}, std::vector<int64_t>(12, 1));
  r = runKernel("conv2d_grad_weight", {x, dy}, {{DType::I64, {3, 2, 3, 3}}}, convAttrs(c));
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("unsupported dtype i64"), std::string::npos);
  auto dy32 = makeFloat(DType::F32, {1, 3, 2, 2}, pattern(12, 3, -1, 1.0));
  r = runKernel("conv2d_grad_input", {dy32, w}, {{DType::F32, {1, 2, 4, 4}}}, convAttrs(c, 0));
  EXPECT_TRUE(r.status.ok()) << r.status.message(); // 0 in convAttrs: no attribute
  AttrsBuilder zero;
  zero.ints("strides", {2, 2})
      .ints("pads", {1, 1, 1, 1})
      .ints("dilations", {1, 1})
      .i("image_block", 0);
  r = runKernel("conv2d_grad_input", {dy32, w}, {{DType::F32, {1, 2, 4, 4}}}, zero.build());
  EXPECT_EQ(r.status.message(), "conv2d_grad_input: image_block 0 must be at least 1");
  r = runKernel("conv2d_grad_weight",
                {makeFloat(DType::F32, {1, 2, 4, 4}, pattern(32, 3, 0, 1)), dy32},
                {{DType::F32, {3, 2, 3, 3}}}, zero.build());
  EXPECT_EQ(r.status.message(), "conv2d_grad_weight: image_block 0 must be at least 1");
}

} // namespace
} // namespace plait::rt::test
