// softmax, log_softmax, layer_norm, rms_norm and the norms' gradients (reference values from
// PyTorch 1.13, or the formulas in double).
#include <cmath>
#include <random>

#include "KernelTestSupport.h"
#include "runtime/cpu/Workspace.h"

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

// add_layer_norm / add_rms_norm are the add kernel then the norm kernel, bit for bit: the sum
// as add stores it (bf16: rounded before the norm reads it) and the norm of that sum.
TEST(NormalizationKernels, AddNormsAreTheAddThenTheNorm) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> dist(-3, 3);
  std::vector<double> xv(6 * 40), rv(xv.size()), gv(40), bv(40);
  for (auto *v : {&xv, &rv, &gv, &bv})
    for (double &e : *v)
      e = dist(rng);
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    for (bool rms : {false, true}) {
      SCOPED_TRACE(::testing::Message() << dtypeName(t) << (rms ? " rms" : " layer"));
      auto x = makeFloat(t, {6, 40}, xv), r = makeFloat(t, {6, 40}, rv);
      auto g = makeFloat(t, {40}, gv), b = makeFloat(t, {40}, bv);
      Attrs attrs = AttrsBuilder().i("axis", -1).f("epsilon", 1e-5).build();
      std::vector<OwnedTensor> params{g};
      if (!rms)
        params.push_back(b);
      std::vector<OwnedTensor> inputs{x, r};
      inputs.insert(inputs.end(), params.begin(), params.end());
      KernelResult fused = runKernel(rms ? "add_rms_norm" : "add_layer_norm", inputs,
                                     {{t, {6, 40}}, {t, {6, 40}}}, attrs);
      ASSERT_TRUE(fused.status.ok()) << fused.status.message();
      OwnedTensor sum = runOk("add", {x, r}, t, {6, 40});
      std::vector<OwnedTensor> normInputs{sum};
      normInputs.insert(normInputs.end(), params.begin(), params.end());
      OwnedTensor y = runOk(rms ? "rms_norm" : "layer_norm", normInputs, t, {6, 40}, attrs);
      EXPECT_EQ(fused.out(1).bytes, sum.bytes);
      EXPECT_EQ(fused.out(0).bytes, y.bytes);
    }
  }
  auto x = make<float>({2, 4}, std::vector<float>(8, 1));
  auto r = runKernel("add_layer_norm", {x, make<float>({4}, {1, 1, 1, 1}), make<float>({4}, {1, 1, 1, 1})},
                     {{DType::F32, {2, 4}}, {DType::F32, {2, 4}}}, AttrsBuilder().i("axis", -1).build());
  EXPECT_EQ(r.status.message(), "add_layer_norm: residual has shape [4], expected [2, 4]");
}

// bf16/f16 softmaxes and norms along an axis past dimension 0 stage a few of its entries at a
// time (rowWiseStaged, batchStageEntries: here 3 of the 5 entries of 300,000 elements, then
// 2), the scale and bias whole: the bits of the f32 kernel on widened operands, rounded; the
// add-norms the bits of the half add then the half norm. Along dimension 0 they stage whole
// copies. The harness checks each call used exactly the workspace Workspace.cpp declares.
TEST(NormalizationKernels, HalfRowWiseKernelsStageAFewEntriesAtATime) {
  const std::vector<int64_t> shape{5, 300, 1000}, params{1000};
  ASSERT_EQ(batchStageEntries(5, 300 * 1000), 3);
  for (DType t : {DType::BF16, DType::F16}) {
    SCOPED_TRACE(dtypeName(t));
    OwnedTensor x = convertedTo(t, randomFloats(shape, 1, -3, 3));
    OwnedTensor r = convertedTo(t, randomFloats(shape, 2, -3, 3));
    OwnedTensor g = convertedTo(t, randomFloats(params, 3, 0.5, 1.5));
    OwnedTensor b = convertedTo(t, randomFloats(params, 4, -1, 1));
    for (int64_t axis : {-1, 1, 2}) {
      const Attrs attrs = AttrsBuilder().i("axis", axis).build();
      for (const char *op : {"softmax", "log_softmax"})
        EXPECT_EQ(runOk(op, {x}, t, shape, attrs).bytes,
                  convertedTo(t, runOk(op, {convertedTo(DType::F32, x)}, DType::F32, shape, attrs)).bytes)
            << op << " axis " << axis;
    }
    const Attrs last = AttrsBuilder().i("axis", -1).f("epsilon", 1e-5).build();
    EXPECT_EQ(runOk("layer_norm", {x, g, b}, t, shape, last).bytes,
              convertedTo(t, runOk("layer_norm", {convertedTo(DType::F32, x), convertedTo(DType::F32, g), convertedTo(DType::F32, b)}, DType::F32,
                               shape, last))
                  .bytes);
    EXPECT_EQ(runOk("rms_norm", {x, g}, t, shape, last).bytes,
              convertedTo(t, runOk("rms_norm", {convertedTo(DType::F32, x), convertedTo(DType::F32, g)}, DType::F32, shape, last))
                  .bytes);
    for (bool rms : {false, true}) {
      std::vector<OwnedTensor> inputs{x, r, g};
      if (!rms)
        inputs.push_back(b);
      KernelResult fused = runKernel(rms ? "add_rms_norm" : "add_layer_norm", inputs,
                                     {{t, shape}, {t, shape}}, last);
      ASSERT_TRUE(fused.status.ok()) << fused.status.message();
      OwnedTensor sum = runOk("add", {x, r}, t, shape);
      std::vector<OwnedTensor> normInputs{sum, g};
      if (!rms)
        normInputs.push_back(b);
      EXPECT_EQ(fused.out(1).bytes, sum.bytes) << rms;
      EXPECT_EQ(fused.out(0).bytes,
                runOk(rms ? "rms_norm" : "layer_norm", normInputs, t, shape, last).bytes)
          << rms;
    }
  }
  // Along dimension 0 (every row crosses it): whole copies, the same bits.
  const std::vector<int64_t> small{6, 5};
  OwnedTensor x = convertedTo(DType::BF16, randomFloats(small, 5, -3, 3));
  const Attrs first = AttrsBuilder().i("axis", 0).build();
  EXPECT_EQ(runOk("softmax", {x}, DType::BF16, small, first).bytes,
            convertedTo(DType::BF16, runOk("softmax", {convertedTo(DType::F32, x)}, DType::F32, small, first)).bytes);
}

/// The small case both gradient tests use: x [2, 4] (i * 1.5 - 2), scale, dy.
struct NormGradCase {
  OwnedTensor x = make<float>({2, 4}, {-2, -0.5, 1, 2.5, 4, 5.5, 7, 8.5});
  OwnedTensor scale = make<float>({4}, {1, 2, 0.5, -1});
  OwnedTensor dy = make<float>({2, 4}, {0.5, -1, 2, 0.25, 1, 1.5, -0.5, -2});
};

TEST(NormalizationKernels, LayerNormGrad) {
  NormGradCase c;
  // torch.nn.functional.layer_norm(x, (4,), g, b, 1e-5).backward(dy), in float64.
  KernelResult r = runKernel("layer_norm_grad", {c.x, c.scale, c.dy},
                             {{DType::F32, {2, 4}}, {DType::F32, {4}}, {DType::F32, {4}}},
                             AttrsBuilder().i("axis", -1).f("epsilon", 1e-5).build());
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(allClose(r.out(0).floats(), {0.4770267486, -1.0584037072, 0.6857263735,
                                           -0.1043494149, -0.2832346941, 0.9242398141,
                                           -0.9987752809, 0.3577701609},
                       1e-5, 1e-5));
  EXPECT_TRUE(allClose(r.out(1).floats(), {-2.012457602050587, -0.22360640022784276,
                                           0.670819200683529, -2.347867202392352},
                       1e-5, 1e-5));
  EXPECT_TRUE(allClose(r.out(2).floats(), {1.5, 0.5, 1.5, -1.75}));
  // Without a bias: two results, the same dx and dscale.
  KernelResult noBias = runKernel("layer_norm_grad", {c.x, c.scale, c.dy},
                                  {{DType::F32, {2, 4}}, {DType::F32, {4}}},
                                  AttrsBuilder().i("axis", -1).f("epsilon", 1e-5).build());
  ASSERT_TRUE(noBias.status.ok()) << noBias.status.message();
  EXPECT_EQ(noBias.out(0).floats(), r.out(0).floats());
  EXPECT_EQ(noBias.out(1).floats(), r.out(1).floats());
}

TEST(NormalizationKernels, RmsNormGrad) {
  NormGradCase c;
  // x * rsqrt(mean(x * x, -1) + 1e-6) * g, backward(dy) in PyTorch, float64.
  KernelResult r = runKernel("rms_norm_grad", {c.x, c.scale, c.dy},
                             {{DType::F32, {2, 4}}, {DType::F32, {4}}},
                             AttrsBuilder().i("axis", -1).f("epsilon", 1e-6).build());
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(allClose(r.out(0).floats(), {0.33334696, -1.1699196694, 0.5705361726,
                                           -0.1955208042, 0.0226034077, 0.2821965906,
                                           -0.2695109966, 0.0287155563},
                       1e-5, 1e-5));
  EXPECT_TRUE(allClose(r.out(1).floats(), {0.02836619799700313, 1.56978507112527,
                                           0.6386682640603325, -2.2584643339232184},
                       1e-5, 1e-5));
}

/// The gradients of a layer norm over the trailing `n` of x's elements, in double.
void layerNormGradReference(const std::vector<double> &x, const std::vector<double> &scale,
                            const std::vector<double> &dy, int64_t n, double eps,
                            std::vector<double> &dx, std::vector<double> &dscale,
                            std::vector<double> &dbias) {
  int64_t rows = int64_t(x.size()) / n;
  dx.assign(x.size(), 0);
  dscale.assign(size_t(n), 0);
  dbias.assign(size_t(n), 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = &x[size_t(r * n)], *dyr = &dy[size_t(r * n)];
    double mean = 0, var = 0, gx = 0, g = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += xr[i] / double(n);
    for (int64_t i = 0; i < n; ++i)
      var += (xr[i] - mean) * (xr[i] - mean) / double(n);
    double rstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      gx += dyr[i] * scale[size_t(i)] * (xr[i] - mean) * rstd / double(n);
      g += dyr[i] * scale[size_t(i)] / double(n);
    }
    for (int64_t i = 0; i < n; ++i) {
      double xhat = (xr[i] - mean) * rstd;
      dx[size_t(r * n + i)] = rstd * (dyr[i] * scale[size_t(i)] - g - xhat * gx);
      dscale[size_t(i)] += dyr[i] * xhat;
      dbias[size_t(i)] += dyr[i];
    }
  }
}

TEST(NormalizationKernels, LayerNormGradOverManyRowChunks) {
  // 800 rows of 2 x 100 (normalised over two axes): several fixed chunks of rows, each
  // summing its own copy of dscale and dbias (normGradSlots).
  const int64_t rows = 800, n = 200;
  ASSERT_GT(rt::normGradSlots(rows, n), 1);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<double> x(size_t(rows * n)), dy(x.size()), scale(static_cast<size_t>(n));
  for (double &v : x)
    v = 3 + dist(rng);
  for (double &v : dy)
    v = dist(rng);
  for (double &v : scale)
    v = dist(rng);
  std::vector<double> dx, dscale, dbias;
  layerNormGradReference(x, scale, dy, n, 1e-5, dx, dscale, dbias);
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    SCOPED_TRACE(dtypeName(t));
    KernelResult r = runKernel(
        "layer_norm_grad",
        {makeFloat(t, {rows, 2, 100}, x), makeFloat(t, {2, 100}, scale),
         makeFloat(t, {rows, 2, 100}, dy)},
        {{t, {rows, 2, 100}}, {t, {2, 100}}, {t, {2, 100}}},
        AttrsBuilder().i("axis", 1).f("epsilon", 1e-5).build());
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    // bf16: the inputs were rounded to 8 bits of mantissa, the reference's were not.
    double tol = t == DType::F64 ? 1e-9 : t == DType::F32 ? 1e-4 : 0.3;
    EXPECT_TRUE(allClose(r.out(0).doubles(), dx, tol, tol));
    EXPECT_TRUE(allClose(r.out(1).doubles(), dscale, tol * 10, tol));
    EXPECT_TRUE(allClose(r.out(2).doubles(), dbias, tol * 10, tol));
  }
}

// bf16/f16 norm gradients widen the scale once and each row of x and dy into their chunk's
// f32 rows (no whole f32 copies; the harness checks the workspace the rule declares): dx,
// dscale and dbias have the bits of the f32 kernel on widened operands, rounded once, over
// several chunks of rows and over two normalised axes.
TEST(NormalizationKernels, HalfNormGradsWidenARowAtATime) {
  const int64_t rows = 800;
  ASSERT_GT(rt::normGradSlots(rows, 200), 1);
  for (DType t : {DType::BF16, DType::F16})
    for (int64_t axis : {1, 2}) {
      const std::vector<int64_t> shape{rows, 2, 100};
      const std::vector<int64_t> params(shape.begin() + axis, shape.end());
      OwnedTensor x = convertedTo(t, randomFloats(shape, 1, 1, 5));
      OwnedTensor g = convertedTo(t, randomFloats(params, 2, -2, 2));
      OwnedTensor dy = convertedTo(t, randomFloats(shape, 3, -2, 2));
      const Attrs attrs = AttrsBuilder().i("axis", axis).f("epsilon", 1e-5).build();
      for (const char *op : {"layer_norm_grad", "rms_norm_grad"})
        for (size_t results : {2, 3}) {
          if (results == 3 && std::string(op) == "rms_norm_grad")
            continue;
          SCOPED_TRACE(std::string(op) + " " + dtypeName(t) + " axis " + std::to_string(axis) +
                       " results " + std::to_string(results));
          std::vector<std::pair<DType, std::vector<int64_t>>> half{{t, shape}, {t, params}},
              f32{{DType::F32, shape}, {DType::F32, params}};
          if (results == 3) {
            half.push_back({t, params});
            f32.push_back({DType::F32, params});
          }
          KernelResult got = runKernel(op, {x, g, dy}, half, attrs);
          KernelResult want = runKernel(op, {convertedTo(DType::F32, x), convertedTo(DType::F32, g), convertedTo(DType::F32, dy)}, f32, attrs);
          ASSERT_TRUE(got.status.ok()) << got.status.message();
          ASSERT_TRUE(want.status.ok()) << want.status.message();
          for (size_t o = 0; o < results; ++o)
            EXPECT_EQ(got.out(o).bytes, convertedTo(t, want.out(o)).bytes) << "result " << o;
        }
    }
}

TEST(NormalizationKernels, NormGradErrors) {
  NormGradCase c;
  Attrs attrs = AttrsBuilder().i("axis", -1).build();
  auto r = runKernel("layer_norm_grad", {c.x, c.scale, make<float>({2, 3}, std::vector<float>(6))},
                     {{DType::F32, {2, 4}}, {DType::F32, {4}}}, attrs);
  EXPECT_EQ(r.status.message(), "layer_norm_grad: dy has shape [2, 3], expected [2, 4]");
  r = runKernel("rms_norm_grad", {c.x, c.scale, c.dy}, {{DType::F32, {2, 4}}, {DType::F32, {3}}},
                attrs);
  EXPECT_EQ(r.status.message(), "rms_norm_grad: dscale has shape [3], expected [4]");
  r = runKernel("rms_norm_grad", {c.x, c.scale, c.dy},
                {{DType::F32, {2, 4}}, {DType::F32, {4}}, {DType::F32, {4}}}, attrs);
  EXPECT_FALSE(r.status.ok());
}

/// Training-mode BatchNorm in double, written as the textbook chain rule through the mean
/// and the variance (not the kernels' closed form): y, mean, var, and dx, dscale, dbias.
struct BatchNormReference {
  std::vector<double> y, mean, var, dx, dscale, dbias;
  BatchNormReference(const std::vector<double> &x, const std::vector<double> &g,
                     const std::vector<double> &b, const std::vector<double> &dy, int64_t batch,
                     int64_t channels, int64_t spatial, double eps)
      : y(x.size()), mean(channels), var(channels), dx(x.size()), dscale(channels),
        dbias(channels) {
    const double count = double(batch * spatial);
    auto each = [&](int64_t c, auto fn) {
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s)
          fn(size_t((n * channels + c) * spatial + s));
    };
    for (int64_t c = 0; c < channels; ++c) {
      double m = 0, v = 0;
      each(c, [&](size_t i) { m += x[i]; });
      m /= count;
      each(c, [&](size_t i) { v += (x[i] - m) * (x[i] - m); });
      v /= count;
      mean[c] = m;
      var[c] = v;
      const double r = 1 / std::sqrt(v + eps);
      double dvar = 0, dmean = 0, centred = 0;
      each(c, [&](size_t i) {
        y[i] = (x[i] - m) * r * g[c] + b[c];
        dscale[c] += dy[i] * (x[i] - m) * r;
        dbias[c] += dy[i];
        dvar += dy[i] * g[c] * (x[i] - m) * -0.5 * std::pow(v + eps, -1.5);
        dmean -= dy[i] * g[c] * r;
        centred += -2 * (x[i] - m);
      });
      dmean += dvar * centred / count;
      each(c, [&](size_t i) {
        dx[i] = dy[i] * g[c] * r + dvar * 2 * (x[i] - m) / count + dmean / count;
      });
    }
  }
};

TEST(NormalizationKernels, BatchNormAndItsGradientMatchTheChainRule) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 3, 5, 6}, {16, 5}, {2, 7, 1100}}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " + std::to_string(shape[1]));
      const int64_t batch = shape[0], channels = shape[1];
      int64_t spatial = 1;
      for (size_t d = 2; d < shape.size(); ++d)
        spatial *= shape[d];
      // Values far from 0 (a mean of about 3): a one-pass variance would lose digits.
      auto values = [&](std::vector<int64_t> sh, uint32_t seed, double lo, double hi) {
        return makeFloat(dtype, sh, randomFloats(sh, seed, lo, hi).doubles());
      };
      OwnedTensor x = values(shape, 1, 2, 4), g = values({channels}, 2, 0.5, 1.5),
                  b = values({channels}, 3, -1, 1), dy = values(shape, 4, -1, 1);
      BatchNormReference ref(x.doubles(), g.doubles(), b.doubles(), dy.doubles(), batch, channels,
                             spatial, 1e-5);
      Attrs attrs = AttrsBuilder().f("epsilon", 1e-5).build();
      KernelResult f = runKernel("batch_norm", {x, g, b},
                                 {{dtype, shape}, {dtype, {channels}}, {dtype, {channels}}}, attrs);
      ASSERT_TRUE(f.status.ok()) << f.status.message();
      const double tol = dtype == DType::F64 ? 1e-12 : dtype == DType::F32 ? 2e-5 : 2e-2;
      EXPECT_TRUE(allClose(f.out(0).doubles(), ref.y, tol, tol));
      EXPECT_TRUE(allClose(f.out(1).doubles(), ref.mean, tol, tol));
      EXPECT_TRUE(allClose(f.out(2).doubles(), ref.var, tol, tol));
      KernelResult r = runKernel("batch_norm_grad", {x, g, f.out(1), f.out(2), dy},
                                 {{dtype, shape}, {dtype, {channels}}, {dtype, {channels}}}, attrs);
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      // bf16: dscale sums many products of rounded values. (The gradient recomputes the
      // statistics unrounded: from the forward's bf16 mean, 3 +- 2^-7 here against a spread
      // of 0.58, dx and dscale were up to 14% off, -0.551 for -0.483.)
      const double gradTol = dtype == DType::BF16 ? 1e-2 : tol * 10;
      EXPECT_TRUE(allClose(r.out(0).doubles(), ref.dx, gradTol, gradTol));
      EXPECT_TRUE(allClose(r.out(1).doubles(), ref.dscale, gradTol, gradTol));
      EXPECT_TRUE(allClose(r.out(2).doubles(), ref.dbias, gradTol, gradTol));
    }
}

// A SyncBatchNorm's kernels on W ranks, each holding a slice of the batch: batch_norm_stats
// of each slice, batch_norm reading all of them (the all-gather's concatenation), then
// batch_norm_grad_sums of each slice and batch_norm_grad reading their rank-mean (the
// all-reduce's) give each slice of the whole batch's y, mean, var and dx, and dscale and dbias
// that are the rank-mean itself on every rank (no sums of the rank's own: their W copies sum
// to the whole batch's).
TEST(NormalizationKernels, SyncBatchNormOverRankSlicesIsTheWholeBatchs) {
  for (DType dtype : {DType::F64, DType::F32, DType::BF16})
    for (int64_t ranks : {1, 2, 3})
      for (std::vector<int64_t> shape : {std::vector<int64_t>{6, 3, 5, 4}, {12, 5}}) {
        SCOPED_TRACE(std::string(dtypeName(dtype)) + " W" + std::to_string(ranks) + " C" +
                     std::to_string(shape[1]));
        const int64_t batch = shape[0], channels = shape[1];
        int64_t size = 1;
        for (int64_t d : shape)
          size *= d;
        const int64_t slice = size / ranks; // a rank's values
        std::vector<int64_t> local = shape;
        local[0] = batch / ranks;
        const DType compute = dtype == DType::F64 ? DType::F64 : DType::F32;
        auto values = [&](std::vector<int64_t> sh, uint32_t seed, double lo, double hi) {
          return makeFloat(dtype, sh, randomFloats(sh, seed, lo, hi).doubles());
        };
        // Each rank's slice of values about 3 + r: the ranks' means differ.
        std::vector<double> xs = randomFloats(shape, 11, 2, 4).doubles();
        for (int64_t r = 0; r < ranks; ++r)
          for (int64_t i = 0; i < slice; ++i)
            xs[size_t(r * slice + i)] += double(r);
        OwnedTensor x = makeFloat(dtype, shape, xs), g = values({channels}, 12, 0.5, 1.5),
                    b = values({channels}, 13, -1, 1), dy = values(shape, 14, -1, 1);
        Attrs attrs = AttrsBuilder().f("epsilon", 1e-5).build();
        const std::vector<std::pair<DType, std::vector<int64_t>>> perChannel3{
            {dtype, shape}, {dtype, {channels}}, {dtype, {channels}}};
        KernelResult whole = runKernel("batch_norm", {x, g, b}, perChannel3, attrs);
        ASSERT_TRUE(whole.status.ok()) << whole.status.message();
        KernelResult wholeGrad = runKernel(
            "batch_norm_grad", {x, g, whole.out(1), whole.out(2), dy}, perChannel3, attrs);
        ASSERT_TRUE(wholeGrad.status.ok()) << wholeGrad.status.message();
        auto part = [&](const OwnedTensor &t, int64_t r) {
          std::vector<double> all = t.doubles();
          return makeFloat(
              dtype, local,
              std::vector<double>(all.begin() + r * slice, all.begin() + (r + 1) * slice));
        };
        const std::vector<std::pair<DType, std::vector<int64_t>>> localSpecs{
            {dtype, local}, {dtype, {channels}}, {dtype, {channels}}};
        std::vector<double> gathered;
        for (int64_t r = 0; r < ranks; ++r) {
          KernelResult st =
              runKernel("batch_norm_stats", {part(x, r)}, {{compute, {2 * channels}}}, attrs);
          ASSERT_TRUE(st.status.ok()) << st.status.message();
          std::vector<double> v = st.out(0).doubles();
          gathered.insert(gathered.end(), v.begin(), v.end());
        }
        OwnedTensor all = makeFloat(compute, {ranks * 2 * channels}, gathered);
        // f64: the combination (Chan et al.) against two passes over the whole batch.
        const double tol = dtype == DType::F64 ? 1e-12 : dtype == DType::F32 ? 2e-6 : 2e-2;
        std::vector<KernelResult> forward;
        std::vector<double> sums(size_t(2 * channels), 0.0);
        for (int64_t r = 0; r < ranks; ++r) {
          forward.push_back(runKernel("batch_norm", {part(x, r), g, b, all}, localSpecs, attrs));
          const KernelResult &f = forward.back();
          ASSERT_TRUE(f.status.ok()) << f.status.message();
          EXPECT_TRUE(allClose(f.out(0).doubles(), part(whole.out(0), r).doubles(), tol, tol));
          EXPECT_TRUE(allClose(f.out(1).doubles(), whole.out(1).doubles(), tol, tol));
          EXPECT_TRUE(allClose(f.out(2).doubles(), whole.out(2).doubles(), tol, tol));
          KernelResult s =
              runKernel("batch_norm_grad_sums", {part(x, r), f.out(1), f.out(2), part(dy, r)},
                        {{compute, {2 * channels}}}, attrs);
          ASSERT_TRUE(s.status.ok()) << s.status.message();
          std::vector<double> mine = s.out(0).doubles();
          for (size_t i = 0; i < mine.size(); ++i)
            sums[i] += mine[i] / double(ranks);
        }
        OwnedTensor rankMean = makeFloat(compute, {2 * channels}, sums);
        const double gradTol = dtype == DType::BF16 ? 3e-2 : tol * 10;
        std::vector<double> dscale(size_t(channels), 0.0), dbias(size_t(channels), 0.0);
        for (int64_t r = 0; r < ranks; ++r) {
          const KernelResult &f = forward[size_t(r)];
          KernelResult d = runKernel("batch_norm_grad",
                                     {part(x, r), g, f.out(1), f.out(2), part(dy, r), rankMean},
                                     localSpecs, attrs);
          ASSERT_TRUE(d.status.ok()) << d.status.message();
          EXPECT_TRUE(
              allClose(d.out(0).doubles(), part(wholeGrad.out(0), r).doubles(), gradTol, gradTol));
          EXPECT_EQ(d.out(2).doubles(),
                    convertedTo(dtype, makeFloat(compute, {channels},
                                                 std::vector<double>(sums.begin(),
                                                                     sums.begin() + channels)))
                        .doubles());
          EXPECT_EQ(d.out(1).doubles(),
                    convertedTo(dtype,
                                makeFloat(compute, {channels},
                                          std::vector<double>(sums.begin() + channels, sums.end())))
                        .doubles());
          for (int64_t c = 0; c < channels; ++c) {
            dscale[size_t(c)] += d.out(1).doubles()[size_t(c)];
            dbias[size_t(c)] += d.out(2).doubles()[size_t(c)];
          }
        }
        EXPECT_TRUE(allClose(dscale, wholeGrad.out(1).doubles(), gradTol, gradTol));
        EXPECT_TRUE(allClose(dbias, wholeGrad.out(2).doubles(), gradTol, gradTol));
      }
}

TEST(NormalizationKernels, BatchNormIsTheSameOnAnyNumberOfThreads) {
  const std::vector<int64_t> shape{8, 64, 12, 12};
  OwnedTensor x = randomFloats(shape, 7, -2, 2), g = randomFloats({64}, 8, 0.5, 1.5),
              b = randomFloats({64}, 9, -1, 1), dy = randomFloats(shape, 10, -1, 1);
  Attrs attrs = AttrsBuilder().f("epsilon", 1e-5).build();
  auto run = [&](int threads) {
    KernelThreads pool(threads);
    KernelResult f =
        runKernel("batch_norm", {x, g, b},
                  {{DType::F32, shape}, {DType::F32, {64}}, {DType::F32, {64}}}, attrs);
    EXPECT_TRUE(f.status.ok()) << f.status.message();
    KernelResult r =
        runKernel("batch_norm_grad", {x, g, f.out(1), f.out(2), dy},
                  {{DType::F32, shape}, {DType::F32, {64}}, {DType::F32, {64}}}, attrs);
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    std::vector<std::vector<float>> all;
    for (int i = 0; i < 3; ++i)
      all.push_back(f.out(i).floats());
    for (int i = 0; i < 3; ++i)
      all.push_back(r.out(i).floats());
    return all;
  };
  EXPECT_EQ(run(1), run(3));
}

TEST(NormalizationKernels, BatchNormErrors) {
  auto x = make<float>({2, 3, 2}, std::vector<float>(12, 1));
  auto three = make<float>({3}, {1, 1, 1});
  Attrs attrs = AttrsBuilder().f("epsilon", 1e-5).build();
  auto r = runKernel("batch_norm", {x, make<float>({2}, {1, 1}), three},
                     {{DType::F32, {2, 3, 2}}, {DType::F32, {3}}, {DType::F32, {3}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm: scale has shape [2], expected [3]");
  r = runKernel("batch_norm", {make<float>({3}, {1, 2, 3}), three, three},
                {{DType::F32, {3}}, {DType::F32, {3}}, {DType::F32, {3}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm: x has shape [3], expected [N, C, ...]");
  r = runKernel("batch_norm_grad",
                {x, three, three, three, make<float>({2, 3}, std::vector<float>(6))},
                {{DType::F32, {2, 3, 2}}, {DType::F32, {3}}, {DType::F32, {3}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm_grad: dy has shape [2, 3], expected [2, 3, 2]");
  r = runKernel("batch_norm", {x, three, make<double>({3}, {0, 0, 0})},
                {{DType::F32, {2, 3, 2}}, {DType::F32, {3}}, {DType::F32, {3}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm: unsupported dtype f32 x f64");
  // A SyncBatchNorm's vectors: 2 values a channel, of the compute type.
  r = runKernel("batch_norm", {x, three, three, make<float>({8}, std::vector<float>(8))},
                {{DType::F32, {2, 3, 2}}, {DType::F32, {3}}, {DType::F32, {3}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm: stats has shape [8], expected [W * 6]");
  r = runKernel("batch_norm_stats", {x}, {{DType::F64, {6}}}, attrs);
  EXPECT_EQ(r.status.message(),
            "batch_norm_stats: stats has dtype f64, expected f32 (the compute type of x's f32)");
  r = runKernel("batch_norm_grad_sums", {x, three, three, x}, {{DType::F32, {12}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm_grad_sums: sums has shape [12], expected [6]");
  r = runKernel("batch_norm_grad",
                {x, three, three, three, x, make<float>({12}, std::vector<float>(12))},
                {{DType::F32, {2, 3, 2}}, {DType::F32, {3}}, {DType::F32, {3}}}, attrs);
  EXPECT_EQ(r.status.message(), "batch_norm_grad: sums has shape [12], expected [6]");
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
