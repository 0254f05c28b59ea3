// softmax, log_softmax, layer_norm and rms_norm (reference values from PyTorch 1.13).
#include <cmath>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

TEST(NormalizationKernels, SoftmaxLastAxis) {
  auto x = make<float>({2, 3}, {1, 2, 3, 4, 5, 7});
  auto out = runOk("softmax", {x}, DType::F32, {2, 3}, AttrsBuilder().i("axis", -1).build());
  EXPECT_TRUE(allClose(out.floats(), {0.09003057330846786, 0.2447284758090973, 0.6652409434318542,
                                      0.04201006516814232, 0.11419519037008286,
                                      0.8437947034835815}));
}

TEST(NormalizationKernels, LogSoftmaxOuterAxis) {
  auto x = make<float>({2, 3}, {1, 2, 3, 4, 5, 7});
  auto out = runOk("log_softmax", {x}, DType::F32, {2, 3}, AttrsBuilder().i("axis", 0).build());
  EXPECT_TRUE(allClose(out.floats(), {-3.0485873222351074, -3.0485873222351074,
                                      -4.0181498527526855, -0.04858732968568802,
                                      -0.04858732968568802, -0.018149960786104202}));
}

TEST(NormalizationKernels, SoftmaxIsStableForLargeLogits) {
  auto x = make<double>({1, 3}, {1000, 1000, -1000});
  auto out = runOk("softmax", {x}, DType::F64, {1, 3}, AttrsBuilder().i("axis", 1).build());
  EXPECT_TRUE(allClose(out.values<double>(), {0.5, 0.5, 0}));
  auto logOut = runOk("log_softmax", {x}, DType::F64, {1, 3}, AttrsBuilder().i("axis", 1).build());
  EXPECT_TRUE(allClose(logOut.values<double>(), {-std::log(2.0), -std::log(2.0), -2000 - std::log(2.0)}));
}

TEST(NormalizationKernels, LogSoftmaxKeepsPrecisionForLargeLogits) {
  // ONNX test_logsoftmax_large_number: x - (max + log(sum)) would round log(sum) away.
  auto x = make<float>({2, 4}, {0, 1, 2, 3, 10000, 10001, 10002, 10003});
  std::vector<double> expected = {-3.4401896, -2.4401896, -1.4401897, -0.44018966,
                                  -3.4401896, -2.4401896, -1.4401897, -0.44018966};
  EXPECT_TRUE(allClose(
      runOk("log_softmax", {x}, DType::F32, {2, 4}, AttrsBuilder().i("axis", 1).build()).floats(),
      expected));
  auto xt = make<float>({4, 2}, {0, 10000, 1, 10001, 2, 10002, 3, 10003});
  std::vector<double> expectedT = {-3.4401896, -3.4401896, -2.4401896, -2.4401896,
                                   -1.4401897, -1.4401897, -0.44018966, -0.44018966};
  EXPECT_TRUE(allClose(
      runOk("log_softmax", {xt}, DType::F32, {4, 2}, AttrsBuilder().i("axis", 0).build()).floats(),
      expectedT));
}

TEST(NormalizationKernels, SoftmaxMiddleAxisRank3) {
  // [2, 2, 2] along axis 1: pairs (x[i][0][k], x[i][1][k]).
  auto x = make<float>({2, 2, 2}, {0, 1, 2, 3, 4, 4, 4, 4});
  auto out = runOk("softmax", {x}, DType::F32, {2, 2, 2}, AttrsBuilder().i("axis", 1).build());
  double a = 1 / (1 + std::exp(2.0)), b = 1 - a;
  EXPECT_TRUE(allClose(out.floats(), {a, a, b, b, 0.5, 0.5, 0.5, 0.5}));
}

TEST(NormalizationKernels, SoftmaxHalf) {
  auto x = makeFloat(DType::BF16, {2}, {0, 0});
  auto out = runOk("softmax", {x}, DType::BF16, {2}, AttrsBuilder().i("axis", 0).build());
  EXPECT_TRUE(allClose(out.floats(), {0.5, 0.5}));
}

TEST(NormalizationKernels, LayerNormWithScaleAndBias) {
  std::vector<float> xv(8);
  for (int i = 0; i < 8; ++i)
    xv[i] = i * 1.5f - 2;
  auto x = make<float>({2, 4}, xv);
  auto scale = make<float>({4}, {1, 2, 0.5, -1});
  auto bias = make<float>({4}, {0, 1, 0, 0.5});
  auto out = runOk("layer_norm", {x, scale, bias}, DType::F32, {2, 4},
                   AttrsBuilder().i("axis", -1).f("epsilon", 1e-5).build());
  EXPECT_TRUE(allClose(out.floats(), {-1.341638445854187, 0.10557436943054199, 0.2236064076423645,
                                      -0.841638445854187, -1.3416383266448975,
                                      0.10557454824447632, 0.2236064374446869,
                                      -0.841638445854187}));
}

TEST(NormalizationKernels, LayerNormOverTwoAxesWithoutBias) {
  std::vector<double> xv(12);
  for (int i = 0; i < 12; ++i)
    xv[i] = i;
  auto x = makeFloat(DType::F64, {2, 2, 3}, xv);
  auto scale = makeFloat(DType::F64, {2, 3}, {1, 1, 1, 1, 1, 1});
  auto out = runOk("layer_norm", {x, scale}, DType::F64, {2, 2, 3}, AttrsBuilder().i("axis", 1).build());
  EXPECT_TRUE(allClose(out.values<double>(),
                       {-1.4638476371765137, -0.8783085942268372, -0.29276955127716064,
                        0.29276949167251587, 0.8783085346221924, 1.4638476371765137,
                        -1.4638475179672241, -0.8783084750175476, -0.2927694320678711,
                        0.2927696108818054, 0.8783086538314819, 1.4638476371765137}));
}

TEST(NormalizationKernels, RmsNorm) {
  std::vector<float> xv(8);
  for (int i = 0; i < 8; ++i)
    xv[i] = i * 1.5f - 2;
  auto x = make<float>({2, 4}, xv);
  auto scale = make<float>({4}, {1, 2, 0.5, -1});
  auto out = runOk("rms_norm", {x, scale}, DType::F32, {2, 4}, AttrsBuilder().i("axis", -1).build());
  EXPECT_TRUE(allClose(out.floats(), {-1.1795355081558228, -0.5897677540779114, 0.2948838770389557,
                                      -1.474419355392456, 0.6181339621543884, 1.6998683214187622,
                                      0.5408672094345093, -1.3135346174240112}));
}

TEST(NormalizationKernels, LayerNormHalf) {
  auto x = makeFloat(DType::F16, {1, 2}, {1, 3});
  auto scale = makeFloat(DType::F16, {2}, {1, 1});
  auto out = runOk("layer_norm", {x, scale}, DType::F16, {1, 2}, AttrsBuilder().i("axis", 1).build());
  EXPECT_TRUE(allClose(out.floats(), {-1, 1}, 1e-3, 1e-3));
}

TEST(NormalizationKernels, Errors) {
  auto x = make<float>({2, 4}, std::vector<float>(8, 1));
  auto r = runKernel("softmax", {x}, {{DType::F32, {2, 4}}}, AttrsBuilder().i("axis", 2).build());
  EXPECT_EQ(r.status.message(), "softmax: axis 2 is out of range for rank 2");
  r = runKernel("softmax", {make<int64_t>({2}, {1, 2})}, {{DType::I64, {2}}},
                AttrsBuilder().i("axis", 0).build());
  EXPECT_EQ(r.status.message(), "softmax: unsupported dtype i64");
  r = runKernel("layer_norm", {x, make<float>({3}, {1, 1, 1})}, {{DType::F32, {2, 4}}},
                AttrsBuilder().i("axis", -1).build());
  EXPECT_EQ(r.status.message(), "layer_norm: scale has shape [3], expected [4]");
  r = runKernel("rms_norm", {x, make<double>({4}, {1, 1, 1, 1})}, {{DType::F32, {2, 4}}},
                AttrsBuilder().i("axis", -1).build());
  EXPECT_EQ(r.status.message(), "rms_norm: unsupported dtype f32 x f64");
}

} // namespace
} // namespace plait::rt::test
