// softmax_cross_entropy and nll_loss as ONNX/PyTorch define them (reference: PyTorch 1.13).
#include <cmath>

#include "KernelTestSupport.h"

namespace plait::rt::test {
namespace {

const std::vector<double> kLogits = {1, 2, 3, 0.5, -1, 2, 3, 3, 3, 0, 1, -2};

OwnedTensor logits(DType dt = DType::F32) { return makeFloat(dt, {4, 3}, kLogits); }
OwnedTensor targets() { return make<int64_t>({4}, {2, 0, 1, 2}); }
OwnedTensor classWeights() { return makeFloat(DType::F32, {3}, {1, 2, 0.5}); }

Attrs reduction(const std::string &r) { return AttrsBuilder().s("reduction", r).build(); }

/// f64 logits [2, 3, 2, 2] (classes 2 apart) and their i32 targets [2, 2, 2], the last one
/// -1 (ignored where a test sets ignore_index -1).
OwnedTensor spatialLogits() {
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = i % 5 - 2;
  return makeFloat(DType::F64, {2, 3, 2, 2}, x);
}
OwnedTensor spatialTargets() { return make<int32_t>({2, 2, 2}, {0, 1, 2, 1, 2, 2, 0, -1}); }

TEST(LossKernels, SoftmaxCrossEntropyReductions) {
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {logits(), targets()}, DType::F32, {}).floats(),
                       {1.6491354703903198}));
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {logits(), targets()}, DType::F32, {},
                             reduction("sum"))
                           .floats(),
                       {6.596541881561279}));
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {logits(), targets()}, DType::F32, {4},
                             reduction("none"))
                           .floats(),
                       {0.40760594606399536, 1.7413113117218018, 1.0986123085021973,
                        3.3490121364593506}));
}

TEST(LossKernels, WeightedMeanAndIgnoreIndex) {
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {logits(), targets(), classWeights()},
                             DType::F32, {})
                           .floats(),
                       {1.4542112350463867}));
  auto ignore0 = AttrsBuilder().i("ignore_index", 0).build();
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {logits(), targets(), classWeights()},
                             DType::F32, {}, ignore0)
                           .floats(),
                       {1.3585113286972046}));
  auto none = AttrsBuilder().i("ignore_index", 0).s("reduction", "none").build();
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {logits(), targets(), classWeights()},
                             DType::F32, {4}, none)
                           .floats(),
                       {0.20380297303199768, 0.0, 2.1972246170043945, 1.6745060682296753}));
  // An ignored position's loss is +0, as PyTorch's (not -0: -w * 0 with w = 0), in f32 [N, C]
  // rows (the vectorised path) and in f64.
  for (DType dt : {DType::F32, DType::F64}) {
    auto out = runOk("softmax_cross_entropy", {logits(dt), targets()}, dt, {4}, none);
    EXPECT_FALSE(std::signbit(out.floats()[1])) << dtypeName(dt);
  }
}

TEST(LossKernels, SpatialTargetsWithNegativeIgnoreIndex) {
  auto input = spatialLogits();
  auto target = spatialTargets();
  auto attrs = AttrsBuilder().i("ignore_index", -1).build();
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {input, target}, DType::F64, {}, attrs)
                           .values<double>(),
                       {2.490068197250366}));
  auto none = AttrsBuilder().i("ignore_index", -1).s("reduction", "none").build();
  EXPECT_TRUE(allClose(runOk("softmax_cross_entropy", {input, target}, DType::F64, {2, 2, 2}, none)
                           .values<double>(),
                       {4.326562881469727, 4.065884113311768, 2.4076058864593506,
                        1.4076058864593506, 2.4076058864593506, 2.4076058864593506,
                        0.40760594606399536, 0.0}));
}

// label_smoothing as torch's cross_entropy(label_smoothing=e) gives it (printed from torch
// 1.13 in double): the loss and its gradient, in f32 [N, C] rows (the vectorised path) and
// f64, and over spatial targets with an ignored one.
TEST(LossKernels, LabelSmoothingAsTorch) {
  auto smooth = [](double e, const std::string &r) {
    return AttrsBuilder().f("label_smoothing", e).s("reduction", r).build();
  };
  for (DType dt : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(dt));
    const double tol = dt == DType::F32 ? 1e-6 : 1e-13;
    EXPECT_TRUE(allClose(
        runOk("softmax_cross_entropy", {logits(dt), targets()}, dt, {}, smooth(0.1, "mean"))
            .doubles(),
        {1.632468774967792}, tol, tol));
    EXPECT_TRUE(
        allClose(runOk("softmax_cross_entropy", {logits(dt), targets()}, dt, {}, smooth(0.1, "sum"))
                     .doubles(),
                 {6.529875099871168}, tol, tol));
    EXPECT_TRUE(allClose(
        runOk("softmax_cross_entropy", {logits(dt), targets()}, dt, {4}, smooth(0.1, "none"))
            .doubles(),
        {0.5076059644443804, 1.7413112966571571, 1.0986122886681098, 3.1823455501015196}, tol,
        tol));
    EXPECT_TRUE(allClose(
        runOk("softmax_cross_entropy_grad", {logits(dt), targets(), makeFloat(dt, {}, {1})}, dt,
              {4, 3}, smooth(0.1, "mean"))
            .doubles(),
        {0.014174309959261775, 0.05284878443036608, -0.06702309438962789, -0.18951073529832416,
         0.0014448099843385291, 0.18806592531398564, 0.075, -0.15000000000000002, 0.075,
         0.05654078175227145, 0.16801279484122697, -0.2245535765934984},
        tol, tol));
  }
  auto input = spatialLogits();
  auto target = spatialTargets();
  auto attrs = [](const std::string &r) {
    return AttrsBuilder()
        .f("label_smoothing", 0.25)
        .i("ignore_index", -1)
        .s("reduction", r)
        .build();
  };
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy", {input, target}, DType::F64, {}, attrs("mean")).doubles(),
      {2.275782338178115}, 1e-13, 1e-13));
  EXPECT_TRUE(
      allClose(runOk("softmax_cross_entropy", {input, target}, DType::F64, {2, 2, 2}, attrs("none"))
                   .doubles(),
               {3.7432293079341368, 3.6492172370907623, 2.1576059644443806, 1.4076059644443804,
                2.1576059644443806, 2.1576059644443806, 0.6576059644443805, 0.0},
               1e-13, 1e-13));
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {input, target, makeFloat(DType::F64, {}, {1})},
            DType::F64, {2, 3, 2, 2}, attrs("mean"))
          .doubles(),
      {-0.11716006376850627, -0.005245815822194206, 0.08312966034878407,   0.08312966034878407,
       0.09115226442009075,  -0.11659792968397327,  0.023056448245923473,  -0.08408640889693367,
       0.026007799348415513, 0.12184374550616749,   -0.10618610859470755,  0.0009567485481495858,
       0.08312966034878407,  0.08312966034878407,   -0.02401319679407308,  0.0,
       0.023056448245923473, 0.023056448245923473,  0.023056448245923473,  0.0,
       -0.10618610859470755, -0.10618610859470755,  0.0009567485481495858, 0.0},
      1e-13, 1e-13));
}

// label_smoothing with class weights, as torch 1.13's cross_entropy(weight=w,
// label_smoothing=e) gives it in double: the smoothed term weighs each class too, and the
// mean divides by sum w[t]. f32 [N, C] rows (the vectorised path) and f64; over spatial
// targets with an ignored one (the per-position path), the gradient of the sum.
TEST(LossKernels, LabelSmoothingWithClassWeightsAsTorch) {
  auto attrs = [](double e, const std::string &r) {
    return AttrsBuilder().f("label_smoothing", e).s("reduction", r).build();
  };
  for (DType dt : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(dt));
    const double tol = dt == DType::F32 ? 1e-6 : 1e-13;
    auto w = makeFloat(dt, {3}, {1, 2, 0.5});
    auto loss = [&](const std::string &r, std::vector<int64_t> shape) {
      return runOk("softmax_cross_entropy", {logits(dt), targets(), w}, dt, shape, attrs(0.1, r))
          .doubles();
    };
    EXPECT_TRUE(allClose(loss("mean", {}), {1.4866059185589438}, tol, tol));
    EXPECT_TRUE(allClose(loss("sum", {}), {5.946423674235775}, tol, tol));
    EXPECT_TRUE(allClose(
        loss("none", {4}),
        {0.36431004651848226, 1.845333151601443, 2.105673553280544, 1.6311069228353055}, tol, tol));
    auto ignore0 = AttrsBuilder().f("label_smoothing", 0.1).i("ignore_index", 0).build();
    EXPECT_TRUE(allClose(
        runOk("softmax_cross_entropy", {logits(dt), targets(), w}, dt, {}, ignore0).doubles(),
        {1.3670301742114441}, tol, tol));
    EXPECT_TRUE(allClose(
        runOk("softmax_cross_entropy_grad", {logits(dt), targets(), makeFloat(dt, {}, {1}), w}, dt,
              {4, 3}, attrs(0.1, "mean"))
            .doubles(),
        {0.004420997865803895, 0.01800320006609633, -0.02242419793190025, -0.18878035866440734,
         -0.006725554293700274, 0.1955059129581076, 0.15138888888888888, -0.30694444444444446,
         0.15555555555555556, 0.028428665215176042, 0.08326280596558416, -0.11169147118076021},
        tol, tol));
  }
  auto input = spatialLogits();
  auto target = spatialTargets();
  auto w = makeFloat(DType::F64, {3}, {1, 2, 0.5});
  auto spatial = [](const std::string &r) {
    return AttrsBuilder()
        .f("label_smoothing", 0.25)
        .i("ignore_index", -1)
        .s("reduction", r)
        .build();
  };
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy", {input, target, w}, DType::F64, {}, spatial("mean")).doubles(),
      {2.362663143160024}, 1e-13, 1e-13));
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy", {input, target, w}, DType::F64, {2, 2, 2}, spatial("none"))
          .doubles(),
      {3.715169417986948, 7.034708660898727, 1.271737309629587, 2.4802940196295147,
       1.271737309629587, 1.271737309629587, 0.6745895462962296, 0.0},
      1e-13, 1e-13));
  EXPECT_TRUE(allClose(
      runOk("softmax_cross_entropy_grad", {input, target, makeFloat(DType::F64, {}, {1}), w},
            DType::F64, {2, 3, 2, 2}, spatial("sum"))
          .doubles(),
      {-0.819569909423136,     0.00018094878553656164, 0.36016063718321456,    1.1085567124298892,
       0.5847908169520507,     -1.6359434792309426,    -0.0035143526301348784, -1.2281948226934876,
       0.23477909247108536,    1.6357625304454062,     -0.35664628455307973,   0.11963811026359829,
       0.36016063718321456,    0.36016063718321456,    -0.1403740044012273,    0.0,
       -0.0035143526301348784, -0.0035143526301348784, 0.08825882401541424,    0.0,
       -0.35664628455307973,   -0.35664628455307973,   0.05211518038581296,    0.0},
      1e-13, 1e-13));
}

TEST(LossKernels, NllLossOnLogProbabilities) {
  std::vector<double> logp = {-2.4076058864593506, -1.4076058864593506, -0.40760594606399536,
                              -1.7413113117218018, -3.2413113117218018, -0.24131132662296295,
                              -1.0986123085021973, -1.0986123085021973, -1.0986123085021973,
                              -1.3490121364593506, -0.349012166261673,  -3.3490121364593506};
  auto input = makeFloat(DType::F32, {4, 3}, logp);
  EXPECT_TRUE(allClose(runOk("nll_loss", {input, targets()}, DType::F32, {}).floats(),
                       {1.6491354703903198}));
  EXPECT_TRUE(allClose(runOk("nll_loss", {input, targets(), classWeights()}, DType::F32, {},
                             reduction("sum"))
                           .floats(),
                       {5.816844940185547}));
}

TEST(LossKernels, AllIgnoredMeanIsNaN) {
  auto t = make<int64_t>({4}, {5, 5, 5, 5});
  auto out = runOk("softmax_cross_entropy", {logits(), t}, DType::F32, {},
                   AttrsBuilder().i("ignore_index", 5).build());
  EXPECT_TRUE(std::isnan(out.floats()[0]));
}

TEST(LossKernels, HalfPrecision) {
  auto out = runOk("softmax_cross_entropy", {logits(DType::BF16), targets()}, DType::BF16, {});
  EXPECT_TRUE(allClose(out.floats(), {1.6491354703903198}, 1e-2, 0));
}

// softmax_cross_entropy_grad of bf16 or f16 logits with an f32 loss gradient (the form
// plait-fuse-loss-cast writes) gives the bits of the cast to f32, the f32 gradient and the
// cast back; with a gradient of the logits' type too. The f32 loss of the half logits is
// the loss of their cast. [37, 1000] logits (more rows than the kernel's row slots) and
// [7, 300, 5] ones (classes 5 apart: 35 positions), up to +-30 (the exponentials span many
// binades), without and with f32 class weights, with and without label smoothing, every
// reduction, targets ignored; on 2 threads.
TEST(LossKernels, HalfLogitsLossAndGradientAreTheirCastsBitForBit) {
  KernelThreads threads(2);
  struct Case {
    std::vector<int64_t> shape, targetShape;
  };
  for (const Case &c : {Case{{37, 1000}, {37}}, Case{{7, 300, 5}, {7, 5}}}) {
    const int64_t classes = c.shape[1];
    int64_t positions = 1;
    for (int64_t d : c.targetShape)
      positions *= d;
    std::vector<float> x = randomFloats(c.shape, 11, -30, 30).floats();
    std::vector<int64_t> t(static_cast<size_t>(positions));
    for (int64_t p = 0; p < positions; ++p)
      t[size_t(p)] = p % 7 == 3 ? -100 : (p * 131) % classes;
    OwnedTensor target = make<int64_t>(c.targetShape, t);
    OwnedTensor classWeights = randomFloats({classes}, 12, 0.25, 2);
    for (double e : {0.0, 0.1})
      for (bool weighted : {false, true})
        for (DType half : {DType::BF16, DType::F16})
          for (const char *r : {"mean", "sum", "none"}) {
            SCOPED_TRACE(::testing::Message()
                         << dtypeName(half) << " " << r << " rank " << c.shape.size()
                         << (weighted ? " weighted" : "") << " smoothing " << e);
            AttrsBuilder builder;
            builder.s("reduction", r).i("ignore_index", -100);
            if (e > 0)
              builder.f("label_smoothing", e);
            Attrs attrs = builder.build();
            const bool none = std::string(r) == "none";
            std::vector<int64_t> lossShape = none ? c.targetShape : std::vector<int64_t>{};
            int64_t n = none ? positions : 1;
            std::vector<double> g(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i)
              g[size_t(i)] = 0.37 + 0.01 * double(i);
            OwnedTensor logits = makeFloat(half, c.shape, std::vector<double>(x.begin(), x.end()));
            OwnedTensor wide = runOk("cast", {logits}, DType::F32, c.shape);
            OwnedTensor grad = makeFloat(DType::F32, lossShape, g);
            // The operands after the logits and targets, the class weights last when given.
            auto with = [&](std::vector<OwnedTensor> operands) {
              if (weighted)
                operands.push_back(classWeights);
              return operands;
            };
            OwnedTensor f32 = runOk("softmax_cross_entropy_grad", with({wide, target, grad}),
                                    DType::F32, c.shape, attrs);
            OwnedTensor expected = runOk("cast", {f32}, half, c.shape);
            OwnedTensor got = runOk("softmax_cross_entropy_grad", with({logits, target, grad}),
                                    half, c.shape, attrs);
            EXPECT_EQ(got.bytes, expected.bytes);
            // The loss: f32 from the half logits, the bits of the loss of their f32 cast.
            EXPECT_EQ(
                runOk("softmax_cross_entropy", with({logits, target}), DType::F32, lossShape, attrs)
                    .bytes,
                runOk("softmax_cross_entropy", with({wide, target}), DType::F32, lossShape, attrs)
                    .bytes)
                << "the loss";
            // A gradient of the logits' type: the kernel widens it as the staged path would.
            OwnedTensor halfGrad = runOk("cast", {grad}, half, lossShape);
            OwnedTensor wideGrad = runOk("cast", {halfGrad}, DType::F32, lossShape);
            OwnedTensor f32b = runOk("softmax_cross_entropy_grad", with({wide, target, wideGrad}),
                                     DType::F32, c.shape, attrs);
            EXPECT_EQ(runOk("softmax_cross_entropy_grad", with({logits, target, halfGrad}), half,
                            c.shape, attrs)
                          .bytes,
                      runOk("cast", {f32b}, half, c.shape).bytes)
                << "half gradient";
          }
  }
}

TEST(LossKernels, Errors) {
  auto bad = make<int64_t>({4}, {2, 0, 3, 2});
  auto r = runKernel("softmax_cross_entropy", {logits(), bad}, {{DType::F32, {}}});
  EXPECT_EQ(r.status.message(), "softmax_cross_entropy: target 3 is out of range for 3 classes");
  r = runKernel("nll_loss", {logits(), make<int64_t>({4}, {0, -1, 0, 0})}, {{DType::F32, {}}});
  EXPECT_EQ(r.status.message(), "nll_loss: target -1 is out of range for 3 classes");
  r = runKernel("nll_loss", {logits(), make<float>({4}, {0, 1, 0, 0})}, {{DType::F32, {}}});
  EXPECT_EQ(r.status.message(), "nll_loss: target must be i64 or i32, got f32");
  r = runKernel("nll_loss", {logits(), targets()}, {{DType::F32, {}}}, reduction("avg"));
  EXPECT_EQ(r.status.message(), "nll_loss: reduction must be mean, sum or none, got 'avg'");
  r = runKernel("nll_loss", {logits(), make<int64_t>({3}, {0, 0, 0})}, {{DType::F32, {}}});
  EXPECT_EQ(r.status.message(), "nll_loss: target has shape [3], expected [4]");
  r = runKernel("nll_loss", {logits(), targets()}, {{DType::F32, {4}}});
  EXPECT_EQ(r.status.message(), "nll_loss: output has shape [4], expected []");
  // The loss's gradient: the logits' dtype, or f32 for half-precision logits only.
  r = runKernel("softmax_cross_entropy_grad",
                {logits(), targets(), makeFloat(DType::BF16, {}, {1})}, {{DType::F32, {4, 3}}});
  EXPECT_NE(r.status.message().find("softmax_cross_entropy_grad: "), std::string::npos);
  EXPECT_FALSE(r.status.ok());
  // NLLLoss has no label smoothing (its verifier refuses it too).
  r = runKernel("nll_loss_grad", {logits(), targets(), makeFloat(DType::F32, {}, {1})},
                {{DType::F32, {4, 3}}}, AttrsBuilder().f("label_smoothing", 0.1).build());
  EXPECT_EQ(r.status.message(), "nll_loss_grad: label_smoothing is softmax_cross_entropy's");
  r = runKernel("softmax_cross_entropy_grad", {logits(), targets(), makeFloat(DType::F32, {}, {1})},
                {{DType::F32, {4, 3}}}, AttrsBuilder().f("label_smoothing", 1.5).build());
  EXPECT_EQ(r.status.message(),
            "softmax_cross_entropy_grad: label_smoothing must be in [0, 1], got 1.5");
}

} // namespace
} // namespace plait::rt::test
