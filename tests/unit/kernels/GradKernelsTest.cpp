// Gradient kernels of the training ops (gathers, pools, losses): hand-checked cases and
// PyTorch 1.13 autograd values (baked in; generated on the CPU with float32 unless noted). The
// convolutions' gradients are in ConvGradKernelsTest.cpp.
#include <cmath>
#include <limits>

#include "KernelTestSupport.h"
#include "runtime/cpu/Workspace.h"

namespace plait::rt::test {
namespace {

/// Runs `name` with its only output aliasing input `aliased` (as an in-place memory plan
/// would) and returns that buffer afterwards.
OwnedTensor runInPlace(const std::string &name, std::vector<OwnedTensor> inputs, size_t aliased,
                       const Attrs &attrs = Attrs()) {
  std::vector<TensorView> in;
  for (const OwnedTensor &t : inputs)
    in.push_back(t.view);
  std::vector<TensorView> out{inputs[aliased].view};
  Status s = callKernel(name, in, out, attrs);
  EXPECT_TRUE(s.ok()) << s.message();
  return inputs[aliased];
}

//===----------------------------------------------------------------------===//
// gather_grad
//===----------------------------------------------------------------------===//

TEST(GatherGrad, AxisZeroAccumulatesRepeatedAndNegativeIndices) {
  auto grad = makeFloat(DType::F32, {2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto indices = make<int64_t>({2, 3}, {0, 4, 0, 2, -1, 3});
  auto out = runOk("gather_grad", {grad, indices}, DType::F32, {5, 2},
                   AttrsBuilder().i("axis", 0).build());
  // Row 0 gets grad[0,0] + grad[0,2]; row 4 gets grad[0,1] and grad[1,1] (index -1).
  EXPECT_TRUE(allClose(out.floats(), {6, 8, 0, 0, 7, 8, 11, 12, 12, 14}));
}

TEST(GatherGrad, InnerAxisWithI32IndicesAndDefaultAxis) {
  auto grad = makeFloat(DType::F64, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto indices = make<int32_t>({3}, {1, 1, 3});
  for (int64_t axis : {1, -1}) {
    auto out = runOk("gather_grad", {grad, indices}, DType::F64, {2, 4},
                     AttrsBuilder().i("axis", axis).build());
    EXPECT_TRUE(allClose(out.values<double>(), {0, 3, 0, 3, 0, 9, 0, 6}));
  }
  // No axis attribute: the ODS default 0.
  auto rows = makeFloat(DType::F32, {2, 2}, {1, 2, 3, 4});
  auto out = runOk("gather_grad", {rows, make<int64_t>({2}, {2, 2})}, DType::F32, {3, 2});
  EXPECT_TRUE(allClose(out.floats(), {0, 0, 0, 0, 4, 6}));
}

TEST(GatherGrad, HalfPrecisionGoesThroughFloat) {
  auto grad = makeFloat(DType::BF16, {3}, {0.5, 1.5, 2});
  auto out = runOk("gather_grad", {grad, make<int64_t>({3}, {1, 0, 1})}, DType::BF16, {2});
  EXPECT_TRUE(allClose(out.floats(), {1.5, 2.5}));
}

// A bf16/f16 embedding gradient sums 512-row blocks of the result (rows of 512 elements:
// Workspace.h gatherGradTileRows) in an f32 tile: the bits of the f32 kernel on the widened
// grad, rounded once, over blocks, repeated indices, an outer dimension and an empty one,
// and the declared workspace used exactly (the harness checks it).
TEST(GatherGrad, HalfPrecisionSumsBlocksOfRowsInF32) {
  ASSERT_EQ(gatherGradTileRows(1300, 512), 512);
  struct Case {
    std::vector<int64_t> grad, out;
    int64_t axis;
  };
  for (DType dtype : {DType::BF16, DType::F16})
    for (const Case &c : std::vector<Case>{{{700, 512}, {1300, 512}, 0},
                                           {{2, 700, 3}, {2, 1300, 3}, 1},
                                           {{0, 512}, {1300, 512}, 0}}) {
      const int64_t count = c.grad[size_t(c.axis)];
      std::vector<int64_t> idx(static_cast<size_t>(count), 0);
      for (int64_t q = 0; q < count; ++q) // every block, with repeats, and negative ones
        idx[size_t(q)] = (q * 37) % 1300 - (q % 5 == 0 ? 1300 : 0);
      auto indices = make<int64_t>({count}, idx);
      OwnedTensor half = convertedTo(dtype, randomFloats(c.grad, 11, -2, 2));
      Attrs axis = AttrsBuilder().i("axis", c.axis).build();
      OwnedTensor f32 =
          runOk("gather_grad", {convertedTo(DType::F32, half), indices}, DType::F32, c.out, axis);
      EXPECT_EQ(runOk("gather_grad", {half, indices}, dtype, c.out, axis).bytes,
                convertedTo(dtype, f32).bytes)
          << dtypeName(dtype) << " axis " << c.axis << " count " << count;
    }
}

TEST(GatherGrad, OutOfRangeIndexIsAnErrorNamingIt) {
  auto grad = makeFloat(DType::F32, {2, 2}, {1, 2, 3, 4});
  for (int64_t bad : {5, -6}) {
    auto r = runKernel("gather_grad", {grad, make<int64_t>({2}, {0, bad})}, {{DType::F32, {5, 2}}});
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find("gather_grad: index " + std::to_string(bad)),
              std::string::npos)
        << r.status.message();
  }
}

TEST(GatherGrad, BadDtypesAndShapesAreErrors) {
  auto r = runKernel("gather_grad", {make<int64_t>({2}, {1, 2}), make<int64_t>({2}, {0, 1})},
                     {{DType::I64, {3}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("unsupported dtype i64"), std::string::npos)
      << r.status.message();
  r = runKernel("gather_grad",
                {makeFloat(DType::F32, {2}, {1, 2}), makeFloat(DType::F32, {2}, {0, 1})},
                {{DType::F32, {3}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("indices must be i64 or i32"), std::string::npos);
  r = runKernel("gather_grad", {makeFloat(DType::F32, {3}, {1, 2, 3}), make<int64_t>({2}, {0, 1})},
                {{DType::F32, {3}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("grad has shape [3], expected [2]"), std::string::npos)
      << r.status.message();
}

//===----------------------------------------------------------------------===//
// max_pool2d_grad, avg_pool2d_grad
//===----------------------------------------------------------------------===//

Attrs poolAttrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                std::vector<int64_t> pads) {
  return AttrsBuilder()
      .ints("kernel", std::move(kernel))
      .ints("strides", std::move(strides))
      .ints("pads", std::move(pads))
      .build();
}

TEST(MaxPoolGrad, TiesGoToTheFirstMaximumAsInPyTorch) {
  auto x = makeFloat(DType::F32, {1, 2, 5, 5}, pattern(50, 4, -3, 1.0));
  auto dy = makeFloat(DType::F32, {1, 2, 3, 3}, pattern(18, 5, 1, 1.0));
  auto dx = runOk("max_pool2d_grad", {x, dy}, DType::F32, {1, 2, 5, 5},
                  poolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  EXPECT_TRUE(allClose(dx.floats(),
                       {0, 0, 0, 5, 0, 0, 1, 5, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 3, 0,
                        0, 0, 1, 0, 0, 0, 12, 0, 0, 2, 0, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 1, 0, 0, 0}));
}

TEST(MaxPoolGrad, DilatedCeilModeMatchesPyTorch) {
  auto x = makeFloat(DType::F64, {1, 1, 6, 6}, pattern(36, 7, -3, 0.5));
  auto dy = makeFloat(DType::F64, {1, 1, 3, 3}, pattern(9, 5, 1, 1.0));
  auto attrs = AttrsBuilder()
                   .ints("kernel", {2, 2})
                   .ints("strides", {2, 2})
                   .ints("pads", {0, 0, 0, 0})
                   .ints("dilations", {2, 2})
                   .i("ceil_mode", 1)
                   .build();
  auto dx = runOk("max_pool2d_grad", {x, dy}, DType::F64, {1, 1, 6, 6}, attrs);
  std::vector<double> expected(36, 0);
  expected[4] = 5;
  expected[12] = 5;
  expected[16] = 1;
  expected[26] = 10;
  expected[28] = 4;
  EXPECT_TRUE(allClose(dx.values<double>(), expected));
}

TEST(MaxPoolGrad, PaddingNeverWinsAndAllInfWindowsUseTheirFirstPosition) {
  // Every window covers the whole (all-negative) input: -1 wins over the zero padding.
  auto x = makeFloat(DType::F32, {1, 1, 2, 2}, {-4, -3, -2, -1});
  auto dy = makeFloat(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4});
  auto attrs = poolAttrs({3, 3}, {1, 1}, {1, 1, 1, 1});
  EXPECT_TRUE(allClose(runOk("max_pool2d_grad", {x, dy}, DType::F32, {1, 1, 2, 2}, attrs).floats(),
                       {0, 0, 0, 10}));
  // Windows of -inf only: PyTorch's index is the window's first position inside the input.
  const double inf = std::numeric_limits<double>::infinity();
  auto xinf = makeFloat(DType::F32, {1, 1, 2, 2}, {-inf, -inf, -inf, -inf});
  EXPECT_TRUE(allClose(
      runOk("max_pool2d_grad", {xinf, dy}, DType::F32, {1, 1, 2, 2}, attrs).floats(),
      {10, 0, 0, 0}));
  // A NaN wins its window, as in the forward kernel.
  auto xnan = makeFloat(DType::F32, {1, 1, 2, 2}, {5, std::nan(""), 1, 7});
  EXPECT_TRUE(allClose(
      runOk("max_pool2d_grad", {xnan, dy}, DType::F32, {1, 1, 2, 2}, attrs).floats(),
      {0, 10, 0, 0}));
}

TEST(MaxPoolGrad, SameElementAsTheForwardKernel) {
  // The forward max equals x at the element that receives the gradient, for every window.
  auto x = makeFloat(DType::F32, {2, 3, 7, 6}, pattern(252, 13, -6, 0.5));
  auto attrs = AttrsBuilder()
                   .ints("kernel", {3, 2})
                   .ints("strides", {2, 2})
                   .ints("pads", {1, 0, 1, 1})
                   .ints("dilations", {1, 2})
                   .i("ceil_mode", 1)
                   .build();
  auto y = runOk("max_pool2d", {x}, DType::F32, {2, 3, 4, 3}, attrs);
  std::vector<float> xs = x.floats(), ys = y.floats();
  for (int64_t o = 0; o < (int64_t)ys.size(); ++o) {
    std::vector<double> onehot(ys.size(), 0);
    onehot[o] = 1;
    auto dy = makeFloat(DType::F32, {2, 3, 4, 3}, onehot);
    auto dx = runOk("max_pool2d_grad", {x, dy}, DType::F32, {2, 3, 7, 6}, attrs).floats();
    int hits = 0;
    for (size_t i = 0; i < dx.size(); ++i)
      if (dx[i] != 0) {
        ++hits;
        EXPECT_EQ(dx[i], 1.0f);
        EXPECT_EQ(xs[i], ys[o]) << "output " << o;
      }
    EXPECT_EQ(hits, 1) << "output " << o;
  }
}

TEST(MaxPoolGrad, ResultMayAliasX) {
  auto x = makeFloat(DType::F32, {1, 2, 5, 5}, pattern(50, 4, -3, 1.0));
  auto dy = makeFloat(DType::F32, {1, 2, 3, 3}, pattern(18, 5, 1, 1.0));
  auto attrs = poolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1});
  auto expected = runOk("max_pool2d_grad", {x, dy}, DType::F32, {1, 2, 5, 5}, attrs);
  auto inPlace = runInPlace("max_pool2d_grad", {x, dy}, 0, attrs);
  EXPECT_EQ(inPlace.floats(), expected.floats());
}

TEST(AvgPoolGrad, CeilModeDivisorsMatchPyTorch) {
  auto dy = makeFloat(DType::F32, {1, 1, 3, 3}, pattern(9, 5, 1, 1.0));
  auto withPad = AttrsBuilder()
                     .ints("kernel", {3, 3})
                     .ints("strides", {2, 2})
                     .ints("pads", {1, 1, 1, 1})
                     .i("ceil_mode", 1)
                     .i("count_include_pad", 1)
                     .build();
  EXPECT_TRUE(allClose(
      runOk("avg_pool2d_grad", {dy}, DType::F32, {1, 1, 5, 5}, withPad).floats(),
      {0.1111111119389534, 0.3333333432674408, 0.2222222238779068, 0.5555555820465088,
       0.3333333432674408, 0.5555555820465088, 1.3333333730697632, 0.7777777910232544,
       1.2222223281860352, 0.4444444477558136, 0.4444444477558136, 1.0,
       0.5555555820465088, 0.6666666865348816, 0.1111111119389534, 0.6666666865348816,
       1.5555555820465088, 0.888888955116272,  1.4444444179534912, 0.5555555820465088,
       0.2222222238779068, 0.5555555820465088, 0.3333333432674408, 0.7777777910232544,
       0.4444444477558136}));
  auto withoutPad = AttrsBuilder()
                        .ints("kernel", {3, 3})
                        .ints("strides", {2, 2})
                        .ints("pads", {1, 1, 1, 1})
                        .i("ceil_mode", 1)
                        .build();
  EXPECT_TRUE(allClose(
      runOk("avg_pool2d_grad", {dy}, DType::F32, {1, 1, 5, 5}, withoutPad).floats(),
      {0.25, 0.5833333730697632, 0.3333333432674408, 1.0833333730697632, 0.75,
       0.9166666865348816, 1.8055555820465088, 0.888888955116272, 1.8055555820465088,
       0.9166666865348816, 0.6666666865348816, 1.2222223281860352, 0.5555555820465088,
       0.7222222685813904, 0.1666666716337204, 1.1666667461395264, 2.222222328186035,
       1.0555555820465088, 2.222222328186035, 1.1666666269302368, 0.5, 1.0, 0.5, 1.5, 1.0}));
  // A 6x6 input: the ceil-mode window hangs past the end padding and is cut there.
  auto dy4 = makeFloat(DType::F64, {1, 1, 4, 4}, pattern(16, 5, 1, 1.0));
  EXPECT_TRUE(allClose(
      runOk("avg_pool2d_grad", {dy4}, DType::F64, {1, 1, 6, 6}, withPad).values<double>(),
      {0.1111111119389534, 0.3333333432674408, 0.2222222238779068, 0.5555555820465088,
       0.3333333432674408, 1.0,                0.6666666865348816, 1.0000001192092896,
       0.3333333432674408, 0.8888888955116272, 0.5555555820465088, 1.7222222089767456,
       0.5555555820465088, 0.6666666865348816, 0.1111111119389534, 0.3333333432674408,
       0.2222222238779068, 0.7222222089767456, 1.0,                1.6666667461395264,
       0.6666666865348816, 1.0000001192092896, 0.3333333432674408, 1.1666666269302368,
       0.4444444477558136, 1.0,                0.5555555820465088, 0.6666666865348816,
       0.1111111119389534, 0.4444444477558136, 0.9444444179534912, 2.1666667461395264,
       1.2222223281860352, 2.1666667461395264, 0.9444444179534912, 1.5277777910232544}));
}

TEST(AvgPoolGrad, IsTheAdjointOfTheForwardKernel) {
  // <avg_pool2d(x), dy> == <x, avg_pool2d_grad(dy)> for every divisor rule.
  auto xv = pattern(2 * 2 * 8 * 7, 11, -5, 0.3);
  auto x = makeFloat(DType::F64, {2, 2, 8, 7}, xv);
  for (int ceil : {0, 1})
    for (int countPad : {0, 1}) {
      auto attrs = AttrsBuilder()
                       .ints("kernel", {3, 2})
                       .ints("strides", {2, 3})
                       .ints("pads", {1, 0, 1, 0})
                       .i("ceil_mode", ceil)
                       .i("count_include_pad", countPad)
                       .build();
      // ceil_mode adds a last row (cut by the end padding) and a last column.
      std::vector<int64_t> ys{2, 2, ceil ? 5 : 4, ceil ? 3 : 2};
      int64_t yn = 2 * 2 * ys[2] * ys[3];
      auto dyv = pattern(yn, 7, -3, 0.7);
      auto y = runOk("avg_pool2d", {x}, DType::F64, ys, attrs).values<double>();
      auto dx = runOk("avg_pool2d_grad", {makeFloat(DType::F64, ys, dyv)}, DType::F64,
                      {2, 2, 8, 7}, attrs)
                    .values<double>();
      double lhs = 0, rhs = 0;
      for (int64_t i = 0; i < yn; ++i)
        lhs += y[i] * dyv[i];
      for (size_t i = 0; i < xv.size(); ++i)
        rhs += xv[i] * dx[i];
      EXPECT_NEAR(lhs, rhs, 1e-12 * (1 + std::fabs(lhs))) << "ceil " << ceil << " pad " << countPad;
    }
}

TEST(PoolGrad, GradShapeMustBeTheForwardOutput) {
  auto r = runKernel("avg_pool2d_grad", {makeFloat(DType::F32, {1, 1, 2, 2}, {1, 2, 3, 4})},
                     {{DType::F32, {1, 1, 5, 5}}}, poolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("avg_pool2d_grad: grad has shape [1, 1, 2, 2], expected "
                                    "[1, 1, 3, 3]"),
            std::string::npos)
      << r.status.message();
  r = runKernel("max_pool2d_grad",
                {make<int32_t>({1, 1, 2, 2}, {1, 2, 3, 4}), make<int32_t>({1, 1, 1, 1}, {1})},
                {{DType::I32, {1, 1, 2, 2}}}, poolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}));
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("unsupported dtype i32"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// softmax_cross_entropy_grad, nll_loss_grad
//===----------------------------------------------------------------------===//

const std::vector<double> kLogits = {1, 2, 3, 0.5, -1, 2, 3, 3, 3, 0, 1, -2};
const std::vector<double> kLogProbs = {
    -2.4076058864593506, -1.4076058864593506, -0.40760594606399536, -1.7413113117218018,
    -3.2413113117218018, -0.24131132662296295, -1.0986123085021973, -1.0986123085021973,
    -1.0986123085021973, -1.3490121364593506, -0.349012166261673,  -3.3490121364593506};

OwnedTensor logits() { return makeFloat(DType::F32, {4, 3}, kLogits); }
OwnedTensor targets() { return make<int64_t>({4}, {2, 0, 1, 2}); }
OwnedTensor classWeights() { return makeFloat(DType::F32, {3}, {1, 2, 0.5}); }
OwnedTensor scalar(double v) { return makeFloat(DType::F32, {}, {v}); }
OwnedTensor perSample() { return makeFloat(DType::F32, {4}, {1, -2, 0.5, 3}); }

TEST(LossGrad, SoftmaxCrossEntropyReductionsMatchPyTorch) {
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {logits(), targets(), scalar(1)}, DType::F32, {4, 3})
          .floats(),
      {0.022507645189762115, 0.06118212267756462, -0.08368974924087524, -0.20617739856243134,
       0.009778142906725407, 0.1963992565870285, 0.0833333283662796, -0.1666666716337204,
       0.0833333283662796, 0.06487412005662918, 0.17634613811969757, -0.24122023582458496}));
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {logits(), targets(), scalar(0.5)}, DType::F32, {4, 3},
            AttrsBuilder().s("reduction", "sum").build())
          .floats(),
      {0.04501529037952423, 0.12236424535512924, -0.1673794984817505, -0.41235479712486267,
       0.019556285813450813, 0.392798513174057, 0.1666666567325592, -0.3333333432674408,
       0.1666666567325592, 0.12974824011325836, 0.35269227623939514, -0.4824404716491699}));
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {logits(), targets(), perSample()}, DType::F32, {4, 3},
            AttrsBuilder().s("reduction", "none").build())
          .floats(),
      {0.09003058075904846, 0.24472849071025848, -0.334758996963501, 1.6494191884994507,
       -0.07822514325380325, -1.571194052696228, 0.1666666567325592, -0.3333333432674408,
       0.1666666567325592, 0.7784894704818726, 2.1161537170410156, -2.8946428298950195}));
}

TEST(LossGrad, SoftmaxCrossEntropyWeightsAndIgnoreIndexMatchPyTorch) {
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {logits(), targets(), scalar(2), classWeights()},
            DType::F32, {4, 3}, AttrsBuilder().i("ignore_index", 0).build())
          .floats(),
      {0.030010193586349487, 0.08157616853713989, -0.11158633232116699, 0.0, 0.0, 0.0,
       0.4444444179534912, -0.888888955116272, 0.4444444179534912, 0.08649882674217224,
       0.23512819409370422, -0.3216269910335541}));
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {logits(), targets(), perSample(), classWeights()},
            DType::F32, {4, 3}, AttrsBuilder().i("ignore_index", 0).s("reduction", "none").build())
          .floats(),
      {0.04501529037952423, 0.12236424535512924, -0.1673794984817505, 0.0, 0.0, 0.0,
       0.3333333134651184, -0.6666666865348816, 0.3333333134651184, 0.3892447352409363,
       1.0580768585205078, -1.4473214149475098}));
}

TEST(LossGrad, SpatialTargetsWithNegativeIgnoreIndexMatchPyTorch) {
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = i % 5 - 2;
  auto input = makeFloat(DType::F64, {2, 3, 2, 2}, x);
  auto target = make<int32_t>({2, 2, 2}, {0, 1, 2, 1, 2, 2, 0, -1});
  auto g = makeFloat(DType::F64, {}, {1});
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {input, target, g}, DType::F64, {2, 3, 2, 2},
            AttrsBuilder().i("ignore_index", -1).build())
          .values<double>(),
      {-0.14096958757803008, 0.006658946082567698, 0.09503442225354597, 0.09503442225354597,
       0.10305702632485265, -0.1404074534934971, 0.03496121015068537, -0.10789593270645748,
       0.037912561253177414, 0.1337485074109294, -0.12999563240423137, 0.01286151045291149,
       0.09503442225354597, 0.09503442225354597, -0.04782272060359689, 0.0,
       0.03496121015068537, 0.03496121015068537, 0.03496121015068537, 0.0,
       -0.12999563240423137, -0.12999563240423137, 0.01286151045291149, 0.0},
      1e-12, 1e-15));
}

TEST(LossGrad, VectorisedF32RowsAgreeWithDouble) {
  // [N, C] f32 logits take a vectorised path (e^x to about 1 ulp, sums in float lanes added
  // in double); f64 logits take libm's exp in double. Rows of 1,003 classes (a tail after
  // the vector lanes) with a spread of 62, an ignored row, a -inf logit (probability 0) and
  // a target where the row's max is: within 1e-6 of the f64 gradient.
  const int64_t rows = 6, classes = 1003;
  std::vector<double> x(size_t(rows * classes));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = double(int64_t(i * 7919 % 4001) - 2000) / 64; // exact in f32
  x[3 * classes + 18] = -std::numeric_limits<double>::infinity();
  x[4 * classes + 500] = 30;
  auto target = make<int64_t>({rows}, {0, 1002, 5, 17, 500, 9});
  auto attrs = AttrsBuilder().i("ignore_index", 5).s("reduction", "none").build();
  std::vector<double> g = {1, -2, 0.5, 3, 1, 0.25};
  auto f32 = runOk("softmax_cross_entropy_grad",
                   {makeFloat(DType::F32, {rows, classes}, x), target,
                    makeFloat(DType::F32, {rows}, g)},
                   DType::F32, {rows, classes}, attrs);
  auto f64 = runOk("softmax_cross_entropy_grad",
                   {makeFloat(DType::F64, {rows, classes}, x), target,
                    makeFloat(DType::F64, {rows}, g)},
                   DType::F64, {rows, classes}, attrs);
  EXPECT_TRUE(allClose(f32.floats(), f64.values<double>(), 1e-6, 1e-12));
  std::vector<float> y = f32.floats();
  EXPECT_EQ(y[3 * classes + 18], 0.0f);
  for (int64_t c = 0; c < classes; ++c)
    ASSERT_EQ(y[2 * classes + c], 0.0f) << c; // the ignored row
}

TEST(LossGrad, NllLossMatchesPyTorch) {
  auto logp = makeFloat(DType::F32, {4, 3}, kLogProbs);
  EXPECT_TRUE(allClose(runOk("nll_loss_grad", {logp, targets(), scalar(1.5), classWeights()},
                             DType::F32, {4, 3}, AttrsBuilder().i("ignore_index", 2).build())
                           .floats(),
                       {0, 0, 0, -0.5, 0, 0, 0, -1.0, 0, 0, 0, 0}));
  EXPECT_TRUE(allClose(runOk("nll_loss_grad", {logp, targets(), scalar(1)}, DType::F32, {4, 3},
                             AttrsBuilder().s("reduction", "sum").build())
                           .floats(),
                       {0, 0, -1, -1, 0, 0, 0, -1, 0, 0, 0, -1}));
}

TEST(LossGrad, EveryTargetIgnoredGivesZeros) {
  auto target = make<int64_t>({4}, {1, 1, 1, 1});
  auto attrs = AttrsBuilder().i("ignore_index", 1).build();
  for (const char *kernel : {"softmax_cross_entropy_grad", "nll_loss_grad"})
    EXPECT_TRUE(allClose(runOk(kernel, {logits(), target, scalar(1)}, DType::F32, {4, 3}, attrs)
                             .floats(),
                         std::vector<double>(12, 0.0)))
        << kernel;
}

TEST(LossGrad, ResultMayAliasTheInput) {
  for (const char *kernel : {"softmax_cross_entropy_grad", "nll_loss_grad"}) {
    auto attrs = AttrsBuilder().i("ignore_index", 0).build();
    auto expected = runOk(kernel, {logits(), targets(), scalar(2), classWeights()}, DType::F32,
                          {4, 3}, attrs);
    auto inPlace = runInPlace(kernel, {logits(), targets(), scalar(2), classWeights()}, 0, attrs);
    EXPECT_EQ(inPlace.floats(), expected.floats()) << kernel;
  }
}

TEST(LossGrad, Errors) {
  auto r = runKernel("softmax_cross_entropy_grad",
                     {logits(), make<int64_t>({4}, {2, 0, 3, 2}), scalar(1)},
                     {{DType::F32, {4, 3}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("target 3 is out of range for 3 classes"), std::string::npos)
      << r.status.message();
  r = runKernel("nll_loss_grad", {logits(), targets(), scalar(1)}, {{DType::F32, {4, 3}}},
                AttrsBuilder().s("reduction", "none").build());
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("nll_loss_grad: grad has shape [], expected [4]"),
            std::string::npos)
      << r.status.message();
  r = runKernel("nll_loss_grad",
                {make<int64_t>({4, 3}, std::vector<int64_t>(12, 0)), targets(),
                 make<int64_t>({}, {1})},
                {{DType::I64, {4, 3}}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("unsupported dtype i64"), std::string::npos);
}

} // namespace
} // namespace plait::rt::test
