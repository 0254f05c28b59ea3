// conv2d against PyTorch values and a direct (non-im2col) reference over many geometries.
#include <cmath>

#include "KernelTestSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::test {
namespace {

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group;
  int64_t strides[2], pads[4], dilations[2];
  bool bias;

  /// The output's height and width.
  int64_t outH() const { return outSize(h, kh, strides[0], pads[0], pads[2], dilations[0]); }
  int64_t outW() const { return outSize(w, kw, strides[1], pads[1], pads[3], dilations[1]); }

private:
  static int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d) {
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
  }
};

/// The textbook seven-loop convolution.
std::vector<double> referenceConv(const ConvCase &c, const std::vector<double> &x,
                                  const std::vector<double> &w, const std::vector<double> &b) {
  int64_t oh = c.outH();
  int64_t ow = c.outW();
  int64_t cg = c.c / c.group, mg = c.m / c.group;
  std::vector<double> y;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = c.bias ? b[m] : 0;
          int64_t g = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ki = 0; ki < c.kh; ++ki)
              for (int64_t kj = 0; kj < c.kw; ++kj) {
                int64_t ih = i * c.strides[0] - c.pads[0] + ki * c.dilations[0];
                int64_t iw = j * c.strides[1] - c.pads[1] + kj * c.dilations[1];
                if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w)
                  continue;
                acc += x[((n * c.c + g * cg + ci) * c.h + ih) * c.w + iw] *
                       w[((m * cg + ci) * c.kh + ki) * c.kw + kj];
              }
          y.push_back(acc);
        }
  return y;
}

/// conv2d's operands for the case in `dt`: x, w and, when the case has one, the bias.
std::vector<OwnedTensor> convInputs(const ConvCase &c, DType dt, const std::vector<double> &x,
                                    const std::vector<double> &w, const std::vector<double> &b) {
  std::vector<OwnedTensor> in = {makeFloat(dt, {c.n, c.c, c.h, c.w}, x),
                                 makeFloat(dt, {c.m, c.c / c.group, c.kh, c.kw}, w)};
  if (c.bias)
    in.push_back(makeFloat(dt, {c.m}, b));
  return in;
}

/// The case's attributes, `imageBlock` images per GEMM (0: no image_block attribute), and
/// with `winograd` its 3x3 stride-1 windows by Winograd F(2x2, 3x3) (plait-conv-winograd).
Attrs convAttrs(const ConvCase &c, int64_t imageBlock = 0, bool winograd = false) {
  AttrsBuilder attrs;
  attrs.ints("strides", {c.strides[0], c.strides[1]})
      .ints("pads", {c.pads[0], c.pads[1], c.pads[2], c.pads[3]})
      .ints("dilations", {c.dilations[0], c.dilations[1]})
      .i("group", c.group);
  if (imageBlock != 0)
    attrs.i("image_block", imageBlock);
  if (winograd)
    attrs.i("winograd", 1);
  return attrs.build();
}

TEST(ConvKernels, GroupedStridedDilatedMatchesPyTorch) {
  ConvCase c{2, 4, 5, 5, 6, 3, 3, 2, {2, 1}, {1, 2, 1, 2}, {1, 2}, true};
  auto x = pattern(2 * 4 * 5 * 5, 7, -3, 0.5);
  auto w = pattern(6 * 2 * 3 * 3, 5, -2, 0.25);
  std::vector<double> b = {0.5, -1, 0, 1, 2, -0.5};
  std::vector<OwnedTensor> in = {makeFloat(DType::F32, {2, 4, 5, 5}, x),
                                 makeFloat(DType::F32, {6, 2, 3, 3}, w),
                                 makeFloat(DType::F32, {6}, b)};
  auto out = runOk("conv2d", in, DType::F32, {2, 6, 3, 5}, convAttrs(c)).floats();
  // PyTorch: F.conv2d(x, w, b, stride=(2,1), padding=(1,2), dilation=(1,2), groups=2).
  std::vector<float> head(out.begin(), out.begin() + 12);
  EXPECT_TRUE(allClose(
      head, {0.625, -0.75, -0.75, -0.75, 0.125, -1.0, -1.125, 1.25, 0.0, 1.375, 2.375, 0.5}));
  double sum = 0, sumSq = 0;
  for (float v : out) {
    sum += v;
    sumSq += double(v) * v;
  }
  EXPECT_NEAR(sum, 57.25, 1e-4);
  EXPECT_NEAR(sumSq, 574.3125, 1e-3);
  EXPECT_TRUE(allClose(out, referenceConv(c, x, w, b)));
}

TEST(ConvKernels, GeometriesMatchDirectConvolution) {
  const ConvCase cases[] = {
      {1, 3, 8, 8, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},  // same padding
      {2, 2, 7, 6, 3, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false}, // pointwise fast path
      {1, 2, 7, 6, 2, 1, 1, 1, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},  // strided 1x1
      {1, 4, 6, 6, 4, 3, 3, 4, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},  // depthwise
      {1, 2, 6, 7, 2, 2, 3, 1, {2, 3}, {0, 1, 2, 0}, {2, 1}, false}, // asymmetric pads
      {1, 1, 4, 4, 1, 4, 4, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false}, // kernel = input
      // depthwise, computed directly (ConvShape::depthwise): strided with asymmetric pads and
      // a bias, dilated, and ConvNeXt's 7x7 with pads of 3
      {2, 3, 9, 8, 3, 3, 3, 3, {2, 2}, {1, 0, 1, 2}, {1, 1}, true},
      {2, 2, 7, 7, 2, 3, 3, 2, {1, 1}, {2, 2, 2, 2}, {2, 2}, false},
      {2, 3, 12, 12, 3, 7, 7, 3, {1, 1}, {3, 3, 3, 3}, {1, 1}, true},
  };
  for (const ConvCase &c : cases) {
    int64_t oh = c.outH();
    int64_t ow = c.outW();
    auto x = pattern(c.n * c.c * c.h * c.w, 11, -5, 0.3);
    auto w = pattern(c.m * (c.c / c.group) * c.kh * c.kw, 7, -3, 0.2);
    auto b = pattern(c.m, 3, -1, 1);
    for (DType dt : {DType::F32, DType::F64}) {
      std::vector<OwnedTensor> in = convInputs(c, dt, x, w, b);
      auto out = runOk("conv2d", in, dt, {c.n, c.m, oh, ow}, convAttrs(c));
      std::vector<double> got;
      for (float v : out.floats())
        got.push_back(v);
      EXPECT_TRUE(allClose(got, referenceConv(c, x, w, b)))
          << "case c=" << c.c << " k=" << c.kh << "x" << c.kw << " " << dtypeName(dt);
    }
  }
}

TEST(ConvKernels, HalfPrecision) {
  ConvCase c{1, 1, 3, 3, 1, 2, 2, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false};
  std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 0, 0, 1};
  auto out = runOk("conv2d",
                   {makeFloat(DType::F16, {1, 1, 3, 3}, x), makeFloat(DType::F16, {1, 1, 2, 2}, w)},
                   DType::F16, {1, 1, 2, 2}, convAttrs(c));
  EXPECT_TRUE(allClose(out.floats(), {6, 8, 12, 14}));
}

// bf16/f16 conv2d and conv2d_grad_input, by im2col and by Winograd (`winograd`), stage a few
// images at a time (Workspace.h
// batchStagedWholeInputs: here 2 of the 3 images of 8 x 256 x 256, then 1), the weight and
// bias whole; the harness checks each call used exactly the workspace Workspace.cpp
// declares. On one thread the bits of the f32 kernel on widened operands, rounded; on two,
// a slice of fewer images than threads splits its GEMMs, whose OpenBLAS calls may add in
// another order: within a unit in bf16's last place.
TEST(ConvKernels, HalfConvolutionsStageAFewImagesAtATime) {
  ConvCase c{3, 8, 256, 256, 8, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true};
  const std::vector<int64_t> image{3, 8, 256, 256}, weight{8, 8, 3, 3};
  ASSERT_EQ(batchStageEntries(3, 8 * 256 * 256), 2);
  for (int threads : {1, 2})
    for (bool winograd : {false, true}) {
      KernelThreads use(threads);
      const Attrs attrs = winograd ? convAttrs(c, 0, true) : convAttrs(c);
      for (DType dt : {DType::BF16, DType::F16}) {
        if (threads == 2 && dt == DType::F16)
          continue;
        SCOPED_TRACE(::testing::Message() << dtypeName(dt) << " on " << threads << " threads"
                                          << (winograd ? ", winograd" : ""));
        OwnedTensor x = convertedTo(dt, randomFloats(image, 1, -2, 2));
        OwnedTensor w = convertedTo(dt, randomFloats(weight, 2, -0.5, 0.5));
        OwnedTensor b = convertedTo(dt, randomFloats({8}, 3, -1, 1));
        OwnedTensor dy = convertedTo(dt, randomFloats(image, 4, -1, 1));
        auto wide = [&](const OwnedTensor &t) { return convertedTo(DType::F32, t); };
        std::vector<float> got[2] = {
            runOk("conv2d", {x, w, b}, dt, image, attrs).floats(),
            runOk("conv2d_grad_input", {dy, w}, dt, image, attrs).floats()};
        std::vector<float> want[2] = {
            convertedTo(dt, runOk("conv2d", {wide(x), wide(w), wide(b)}, DType::F32, image, attrs))
                .floats(),
            convertedTo(dt,
                        runOk("conv2d_grad_input", {wide(dy), wide(w)}, DType::F32, image, attrs))
                .floats()};
        for (int k = 0; k < 2; ++k) {
          ASSERT_EQ(got[k].size(), want[k].size());
          if (threads == 1) {
            EXPECT_EQ(got[k], want[k]) << (k ? "conv2d_grad_input" : "conv2d");
            continue;
          }
          for (size_t i = 0; i < want[k].size(); ++i)
            ASSERT_NEAR(got[k][i], want[k][i], std::abs(want[k][i]) / 128 + 1e-6)
                << (k ? "conv2d_grad_input" : "conv2d") << " element " << i;
        }
      }
    }
}

// With image_block, conv2d multiplies the columns of several images in one GEMM and scatters
// the product to them: the seven-loop reference's values over blocks of 1 to more than the
// batch (a short last block), pointwise (whose one-image columns are x itself), strided and
// grouped convolutions, in f32 and f64; the same bits on 1 and 2 threads for each block (the
// units are fixed by the shapes). The harness checks the declared workspace (Workspace.cpp
// convColumns: the columns and a staging matrix per slot).
TEST(ConvKernels, ImageBlocksMultiplySeveralImagesInOneGemm) {
  const ConvCase cases[] = {
      {5, 3, 8, 8, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},  // same padding
      {5, 4, 5, 6, 6, 1, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false}, // pointwise
      {4, 4, 9, 7, 6, 3, 2, 2, {2, 1}, {1, 0, 1, 1}, {1, 2}, true},  // grouped, strided
      {3, 2, 4, 4, 2, 3, 3, 2, {1, 1}, {1, 1, 1, 1}, {1, 1}, false}, // depthwise: no blocks
  };
  for (const ConvCase &c : cases) {
    int64_t oh = c.outH();
    int64_t ow = c.outW();
    auto x = pattern(c.n * c.c * c.h * c.w, 13, -6, 0.3);
    auto w = pattern(c.m * (c.c / c.group) * c.kh * c.kw, 7, -3, 0.2);
    auto b = pattern(c.m, 3, -1, 1);
    const std::vector<double> want = referenceConv(c, x, w, b);
    for (DType dt : {DType::F32, DType::F64})
      for (int64_t block : {1, 2, 3, 9}) {
        SCOPED_TRACE(::testing::Message() << dtypeName(dt) << ", image_block " << block << ", "
                                          << c.c << " channels, group " << c.group);
        std::vector<OwnedTensor> in = convInputs(c, dt, x, w, b);
        std::vector<float> byThreads[2];
        for (int threads : {1, 2}) {
          KernelThreads use(threads);
          byThreads[threads - 1] =
              runOk("conv2d", in, dt, {c.n, c.m, oh, ow}, convAttrs(c, block)).floats();
        }
        EXPECT_EQ(byThreads[0], byThreads[1]);
        EXPECT_TRUE(allClose(byThreads[0], want));
      }
  }
}

// conv2d by Winograd F(2x2, 3x3) (`winograd`): within float rounding of the seven-loop
// reference over pads of 0 to 2, planes of odd sides (overhanging tiles), several chunks in
// several slots, weights transformed in two blocks of input channels and an empty batch; the
// same bits on 1 and 2 threads; exactly its declared
// workspace (the harness). ConvGrad.WinogradInputGradientMatchesTheAdjoint checks the input
// gradient.
TEST(ConvKernels, WinogradMatchesTheDirectConvolution) {
  const ConvCase cases[] = {
      {1, 3, 8, 8, 4, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true},     // same padding
      {2, 5, 7, 9, 3, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},    // odd planes: overhang
      {1, 4, 6, 5, 6, 3, 3, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, true},     // no padding
      {2, 3, 5, 6, 2, 3, 3, 1, {1, 1}, {2, 0, 1, 2}, {1, 1}, false},    // asymmetric pads
      {1, 2, 3, 3, 3, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},    // one overhanging tile
      {2, 32, 18, 18, 32, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, true}, // 2 chunks in 2 slots
      {1, 136, 4, 4, 3, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},  // 2 channel blocks
      {0, 3, 4, 4, 2, 3, 3, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},    // an empty batch
  };
  for (const ConvCase &c : cases) {
    const int64_t oh = c.outH(), ow = c.outW();
    auto x = pattern(c.n * c.c * c.h * c.w, 11, -5, 0.3);
    auto w = pattern(c.m * c.c * 9, 7, -3, 0.2);
    auto b = pattern(c.m, 3, -1, 1);
    const std::vector<double> wantY = referenceConv(c, x, w, b);
    const Attrs attrs = convAttrs(c, 0, true);
    for (DType dt : {DType::F32, DType::F64}) {
      SCOPED_TRACE(::testing::Message()
                   << dtypeName(dt) << ", x [" << c.n << ", " << c.c << ", " << c.h << ", " << c.w
                   << "], pads " << c.pads[0] << c.pads[1] << c.pads[2] << c.pads[3]);
      std::vector<OwnedTensor> in = convInputs(c, dt, x, w, b);
      std::vector<float> y[2];
      for (int threads : {1, 2}) {
        KernelThreads use(threads);
        y[threads - 1] = runOk("conv2d", in, dt, {c.n, c.m, oh, ow}, attrs).floats();
      }
      EXPECT_EQ(y[0], y[1]);
      EXPECT_TRUE(allClose(y[0], wantY));
      if (dt == DType::F64) { // the transforms' rounding is far below f32's tolerance
        std::vector<double> got = runOk("conv2d", in, dt, {c.n, c.m, oh, ow}, attrs).doubles();
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], wantY[i], 1e-12 * (1 + std::fabs(wantY[i])));
      }
    }
  }
}

TEST(ConvKernels, Errors) {
  ConvCase c{1, 1, 3, 3, 1, 2, 2, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, false};
  auto x = makeFloat(DType::F32, {1, 2, 3, 3}, std::vector<double>(18, 1));
  auto w = makeFloat(DType::F32, {1, 1, 2, 2}, {1, 1, 1, 1});
  auto r = runKernel("conv2d", {x, w}, {{DType::F32, {1, 1, 2, 2}}}, convAttrs(c));
  EXPECT_EQ(r.status.message(), "conv2d: group 1 does not fit x [1, 2, 3, 3] and w [1, 1, 2, 2]");
  auto xi = make<int64_t>({1, 1, 2, 2}, {1, 2, 3, 4});
  auto wi = make<int64_t>({1, 1, 1, 1}, {1});
  r = runKernel("conv2d", {xi, wi}, {{DType::I64, {1, 1, 2, 2}}}, convAttrs(c));
  EXPECT_EQ(r.status.message(), "conv2d: unsupported dtype i64");
  auto x1 = makeFloat(DType::F32, {1, 1, 3, 3}, std::vector<double>(9, 1));
  r = runKernel("conv2d", {x1, w}, {{DType::F32, {1, 1, 2, 2}}},
                AttrsBuilder().ints("strides", {1}).ints("pads", {0, 0, 0, 0}).build());
  EXPECT_EQ(r.status.message(), "conv2d: 'strides' must have 2 entries, got 1");
  r = runKernel("conv2d", {x1, w}, {{DType::F32, {1, 1, 3, 3}}}, convAttrs(c));
  EXPECT_EQ(r.status.message(), "conv2d: output has shape [1, 1, 3, 3], expected [1, 1, 2, 2]");
  r = runKernel("conv2d", {x1, w}, {{DType::F32, {1, 1, 2, 2}}}, convAttrs(c, -2));
  EXPECT_EQ(r.status.message(), "conv2d: image_block -2 must be at least 1");
}

} // namespace
} // namespace plait::rt::test
