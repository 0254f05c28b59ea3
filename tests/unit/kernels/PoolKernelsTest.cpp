// max_pool2d and avg_pool2d: padding, dilation, ceil_mode, count_include_pad (PyTorch values).
#include <cmath>

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
