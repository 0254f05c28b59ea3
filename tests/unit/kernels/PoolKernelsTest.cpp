// max_pool2d and avg_pool2d: padding, dilation, ceil_mode, count_include_pad (PyTorch values).
#include <cmath>
#include <random>

#include "KernelTestSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::test {
namespace {

// 1..25 as a [1,1,5,5] image.
OwnedTensor image5x5(DType dt = DType::F32, double sign = 1) {
  std::vector<double> v(25);
  for (int i = 0; i < 25; ++i)
    v[i] = sign * (i + 1);
  return makeFloat(dt, {1, 1, 5, 5}, v);
}

Attrs poolAttrs(int64_t k, int64_t s, int64_t p, int64_t d, bool ceil, bool countPad = false) {
  return AttrsBuilder()
      .ints("kernel", {k, k})
      .ints("strides", {s, s})
      .ints("pads", {p, p, p, p})
      .ints("dilations", {d, d})
      .i("ceil_mode", ceil)
      .i("count_include_pad", countPad)
      .build();
}

TEST(PoolKernels, MaxPoolCeilMode) {
  auto out = runOk("max_pool2d", {image5x5()}, DType::F32, {1, 1, 3, 3}, poolAttrs(2, 2, 0, 1, true));
  EXPECT_TRUE(allClose(out.floats(), {7, 9, 10, 17, 19, 20, 22, 24, 25}));
}

TEST(PoolKernels, MaxPoolPaddingNeverWins) {
  // All inputs negative: a zero from the padding must not win.
  auto out = runOk("max_pool2d", {image5x5(DType::F32, -1)}, DType::F32, {1, 1, 3, 3},
                   poolAttrs(3, 2, 1, 1, false));
  EXPECT_TRUE(allClose(out.floats(), {-1, -2, -4, -6, -7, -9, -16, -17, -19}));
}

TEST(PoolKernels, MaxPoolDilated) {
  auto out = runOk("max_pool2d", {image5x5(DType::F64)}, DType::F64, {1, 1, 3, 3},
                   poolAttrs(2, 1, 0, 2, false));
  EXPECT_TRUE(allClose(out.values<double>(), {13, 14, 15, 18, 19, 20, 23, 24, 25}));
}

TEST(PoolKernels, MaxPoolAsymmetricPadsAndNaN) {
  auto x = makeFloat(DType::F32, {1, 1, 2, 3}, {1, std::nan(""), 3, 4, 5, 6});
  auto attrs = AttrsBuilder()
                   .ints("kernel", {2, 2})
                   .ints("strides", {1, 2})
                   .ints("pads", {0, 1, 1, 0})
                   .ints("dilations", {1, 1})
                   .build();
  // H: (2+0+1-2)/1+1 = 2; W: (3+1+0-2)/2+1 = 2.
  auto out = runOk("max_pool2d", {x}, DType::F32, {1, 1, 2, 2}, attrs).floats();
  EXPECT_EQ(out[0], 4);
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 4);
  EXPECT_EQ(out[3], 6);
}

// max_pool2d and max_pool2d_grad over random geometries (kernels 1-4, strides 1-3, pads 0-2
// on each side, dilations 1-3, ceil_mode) against a per-window reference of the rule: the
// first tap inside the input, then a strictly greater value or a NaN. Values from a few
// integers (ties everywhere), some NaN and -inf; f32 and f64; the forward's bits and the
// gradient routed to the same elements.
TEST(PoolKernels, MaxPoolMatchesThePerWindowRuleOnRandomGeometries) {
  std::mt19937 rng(17);
  auto pick = [&](int lo, int hi) { return int64_t(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  int tested = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int64_t n = pick(1, 2), c = pick(1, 3), h = pick(1, 13), w = pick(1, 13);
    const int64_t kh = pick(1, 4), kw = pick(1, 4), sh = pick(1, 3), sw = pick(1, 3);
    const int64_t dh = pick(1, 3), dw = pick(1, 3);
    const int64_t pt = pick(0, 2), pl = pick(0, 2), pb = pick(0, 2), pr = pick(0, 2);
    const bool ceil = pick(0, 1);
    auto extent = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
      int64_t span = in + p0 + p1 - d * (k - 1) - 1;
      if (span < 0)
        return int64_t(0);
      int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
      if (ceil && (out - 1) * s >= in + p0) // the last window must start inside
        --out;
      return out;
    };
    const int64_t oh = extent(h, kh, sh, dh, pt, pb), ow = extent(w, kw, sw, dw, pl, pr);
    // Pads must stay below the dilated kernel's extent (ONNX and PyTorch refuse more).
    if (oh <= 0 || ow <= 0 || pt >= (kh - 1) * dh + 1 || pb >= (kh - 1) * dh + 1 ||
        pl >= (kw - 1) * dw + 1 || pr >= (kw - 1) * dw + 1)
      continue;
    ++tested;
    Attrs attrs = AttrsBuilder()
                      .ints("kernel", {kh, kw})
                      .ints("strides", {sh, sw})
                      .ints("pads", {pt, pl, pb, pr})
                      .ints("dilations", {dh, dw})
                      .i("ceil_mode", ceil)
                      .build();
    std::vector<double> x(size_t(n * c * h * w)), dy(size_t(n * c * oh * ow));
    for (double &v : x) {
      int64_t r = pick(0, 40);
      v = r == 0 ? std::nan("") : r == 1 ? -INFINITY : double(r % 5 - 2);
    }
    for (double &v : dy)
      v = double(pick(1, 9));
    // The reference: each window's chosen offset in its plane (-1: none inside).
    std::vector<double> want(dy.size()), wantDx(x.size(), 0.0);
    for (int64_t p = 0; p < n * c; ++p)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          int64_t at = -1;
          double best = -INFINITY;
          for (int64_t a = 0; a < kh; ++a)
            for (int64_t b = 0; b < kw; ++b) {
              int64_t y = i * sh - pt + a * dh, z = j * sw - pl + b * dw;
              if (y < 0 || y >= h || z < 0 || z >= w)
                continue;
              double v = x[size_t(p * h * w + y * w + z)];
              if (at < 0 || v > best || std::isnan(v)) {
                at = y * w + z;
                best = v;
              }
            }
          size_t o = size_t((p * oh + i) * ow + j);
          want[o] = best;
          if (at >= 0)
            wantDx[size_t(p * h * w + at)] += dy[o];
        }
    for (DType dtype : {DType::F32, DType::F64}) {
      SCOPED_TRACE(::testing::Message()
                   << dtypeName(dtype) << " x [" << n << "," << c << "," << h << "," << w
                   << "] kernel " << kh << "x" << kw << " strides " << sh << "," << sw
                   << " dilations " << dh << "," << dw << " pads " << pt << "," << pl << ","
                   << pb << "," << pr << (ceil ? " ceil" : ""));
      OwnedTensor xt = makeFloat(dtype, {n, c, h, w}, x);
      OwnedTensor got = runOk("max_pool2d", {xt}, dtype, {n, c, oh, ow}, attrs);
      std::vector<double> values = got.doubles();
      for (size_t o = 0; o < want.size(); ++o)
        if (std::isnan(want[o]))
          EXPECT_TRUE(std::isnan(values[o])) << o;
        else
          EXPECT_EQ(values[o], want[o]) << o;
      OwnedTensor dx = runOk("max_pool2d_grad", {xt, makeFloat(dtype, {n, c, oh, ow}, dy)},
                             dtype, {n, c, h, w}, attrs);
      EXPECT_EQ(dx.doubles(), wantDx);
    }
  }
  EXPECT_GT(tested, 200);
}

TEST(PoolKernels, AvgPoolCountIncludePad) {
  auto with = runOk("avg_pool2d", {image5x5()}, DType::F32, {1, 1, 3, 3},
                    poolAttrs(3, 2, 1, 1, false, true));
  EXPECT_TRUE(allClose(with.floats(), {1.7777777910232544, 3.6666667461395264, 3.1111111640930176,
                                       7.666666507720947, 13.0, 9.666666984558105,
                                       8.44444465637207, 13.666666984558105, 9.777777671813965}));
  auto without = runOk("avg_pool2d", {image5x5()}, DType::F32, {1, 1, 3, 3},
                       poolAttrs(3, 2, 1, 1, false, false));
  EXPECT_TRUE(allClose(without.floats(), {4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22}));
}

TEST(PoolKernels, AvgPoolCeilModeDividesOnlyInsidePaddedInput) {
  // A window running past the input (no end padding) averages only what lies inside.
  auto out = runOk("avg_pool2d", {image5x5()}, DType::F32, {1, 1, 3, 3},
                   poolAttrs(2, 2, 0, 1, true, true));
  EXPECT_TRUE(allClose(out.floats(), {4, 6, 7.5, 14, 16, 17.5, 21.5, 23.5, 25}));
  // 4x4 with pad 1, kernel 3, stride 2, ceil: the last window is cut at input + pad.
  std::vector<double> v;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      v.push_back(r * 5 + c + 1);
  auto out4 = runOk("avg_pool2d", {makeFloat(DType::F32, {1, 1, 4, 4}, v)}, DType::F32,
                    {1, 1, 3, 3}, poolAttrs(3, 2, 1, 1, true, true));
  EXPECT_TRUE(allClose(out4.floats(), {1.7777777910232544, 3.6666667461395264, 2.1666667461395264,
                                       7.666666507720947, 13.0, 7.0, 5.5, 9.0, 4.75}));
}

TEST(PoolKernels, OnnxAveragePoolCeil) {
  // test_averagepool_2d_ceil: 4x4, kernel 3, stride 2, ceil_mode.
  std::vector<double> v(16);
  for (int i = 0; i < 16; ++i)
    v[i] = i + 1;
  auto out = runOk("avg_pool2d", {makeFloat(DType::F32, {1, 1, 4, 4}, v)}, DType::F32,
                   {1, 1, 2, 2}, poolAttrs(3, 2, 0, 1, true, false));
  EXPECT_TRUE(allClose(out.floats(), {6, 7.5, 12, 13.5}));
}

TEST(PoolKernels, HalfPrecisionAndBatches) {
  std::vector<double> v(2 * 2 * 2 * 2);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = double(i);
  auto out = runOk("max_pool2d", {makeFloat(DType::BF16, {2, 2, 2, 2}, v)}, DType::BF16,
                   {2, 2, 1, 1}, poolAttrs(2, 2, 0, 1, false));
  EXPECT_TRUE(allClose(out.floats(), {3, 7, 11, 15}));
}

// bf16/f16 pools and their gradients stage a few images at a time (Workspace.h
// batchStagedWholeInputs: here 2 of the 3 images of 1 x 600 x 600, then 1): the bits of the
// f32 kernels on widened operands, rounded (each window is computed alone), on one thread
// and on two; the harness checks each call used exactly the workspace Workspace.cpp declares.
TEST(PoolKernels, HalfPoolsStageAFewImagesAtATime) {
  const std::vector<int64_t> image{3, 1, 600, 600}, pooled{3, 1, 300, 300};
  ASSERT_EQ(batchStageEntries(3, 600 * 600), 2);
  const Attrs attrs = poolAttrs(3, 2, 1, 1, false);
  for (int threads : {1, 2}) {
    KernelThreads use(threads);
    for (DType dt : {DType::BF16, DType::F16}) {
      SCOPED_TRACE(::testing::Message() << dtypeName(dt) << " on " << threads << " threads");
      OwnedTensor x = convertedTo(dt, randomFloats(image, 1, -2, 2));
      OwnedTensor dy = convertedTo(dt, randomFloats(pooled, 2, -1, 1));
      auto wide = [&](const OwnedTensor &t) { return convertedTo(DType::F32, t); };
      for (const char *op : {"max_pool2d", "avg_pool2d"})
        EXPECT_EQ(runOk(op, {x}, dt, pooled, attrs).bytes,
                  convertedTo(dt, runOk(op, {wide(x)}, DType::F32, pooled, attrs)).bytes)
            << op;
      EXPECT_EQ(runOk("max_pool2d_grad", {x, dy}, dt, image, attrs).bytes,
                convertedTo(dt, runOk("max_pool2d_grad", {wide(x), wide(dy)}, DType::F32, image,
                                  attrs))
                    .bytes);
      EXPECT_EQ(runOk("avg_pool2d_grad", {dy}, dt, image, attrs).bytes,
                convertedTo(dt, runOk("avg_pool2d_grad", {wide(dy)}, DType::F32, image, attrs))
                    .bytes);
    }
  }
}

TEST(PoolKernels, Errors) {
  auto r = runKernel("max_pool2d", {makeFloat(DType::F32, {1, 5, 5}, std::vector<double>(25, 0))},
                     {{DType::F32, {1, 2, 2}}}, poolAttrs(2, 2, 0, 1, false));
  EXPECT_EQ(r.status.message(), "max_pool2d: x must be 4-D (NCHW), got [1, 5, 5]");
  r = runKernel("avg_pool2d", {image5x5()}, {{DType::F32, {1, 1, 3, 3}}},
                poolAttrs(2, 2, 0, 1, false));
  EXPECT_EQ(r.status.message(), "avg_pool2d: output has shape [1, 1, 3, 3], expected [1, 1, 2, 2]");
  r = runKernel("max_pool2d", {make<int64_t>({1, 1, 2, 2}, {1, 2, 3, 4})},
                {{DType::I64, {1, 1, 1, 1}}}, poolAttrs(2, 2, 0, 1, false));
  EXPECT_EQ(r.status.message(), "max_pool2d: unsupported dtype i64");
}

} // namespace
} // namespace plait::rt::test
