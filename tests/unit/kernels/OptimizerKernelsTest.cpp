// The optimizer updates against three-step trajectories of torch.optim.SGD, AdamW and Adam
// (PyTorch 1.13, CPU, float32, foreach=False; OptimizerTrajectories.h), plus lr_scale, in-place
// use, grouped updates, the weight EMA and error paths. The adaptive ones (Adagrad, RMSprop, Lion, Adamax,
// NAdam, RAdam, Adadelta) are in AdaptiveOptimizerKernelsTest.cpp.
#include <cmath>

#include "OptimizerTrajectories.h"

namespace plait::rt::test {
namespace {

struct SgdStep {
  std::vector<double> param, buffer; // buffer empty without momentum
};

/// Runs three sgd_update steps from kParam0 with kGrads, checking each against `expected`.
void checkSgd(double lr, const Attrs &attrs, bool momentum, const std::vector<SgdStep> &expected) {
  OwnedTensor param = f32(kParam0), buffer = f32(std::vector<double>(kParam0.size(), 0.0));
  int64_t n = (int64_t)kParam0.size();
  for (size_t k = 0; k < expected.size(); ++k) {
    std::vector<OwnedTensor> inputs{param, f32(kGrads[k]), lrScalar(lr), f32Scalar(k + 1.0)};
    std::vector<std::pair<DType, std::vector<int64_t>>> outputs{{DType::F32, {n}}};
    if (momentum) {
      inputs.push_back(buffer);
      outputs.push_back({DType::F32, {n}});
    }
    KernelResult r = runKernel("sgd_update", inputs, outputs, attrs);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_TRUE(allClose(r.out(0).floats(), expected[k].param, kRtol, kAtol)) << "step " << k + 1;
    param = r.out(0);
    if (momentum) {
      EXPECT_TRUE(allClose(r.out(1).floats(), expected[k].buffer, kRtol, kAtol))
          << "buffer, step " << k + 1;
      buffer = r.out(1);
    }
  }
}

TEST(SgdUpdate, PlainMatchesTorch) {
  checkSgd(0.1, Attrs(), false,
           {{{0.5300000309944153, -1.25, 1.9700000286102295, 0.010000000707805157,
              -0.7699999809265137, 3.5199999809265137}},
            {{0.5090000033378601, -1.2309999465942383, 1.9589999914169312, 0.039000000804662704,
              -0.7709999680519104, 3.489000082015991}},
            {{0.5070000290870667, -1.2629998922348022, 1.9670000076293945, 0.017000000923871994,
              -0.7529999613761902, 3.4769999980926514}}});
}

TEST(SgdUpdate, MomentumDampeningWeightDecayMatchesTorch) {
  auto attrs =
      AttrsBuilder().f("momentum", 0.9).f("dampening", 0.1).f("weight_decay", 0.01).build();
  checkSgd(0.05, attrs, true,
           {{{0.5147500038146973, -1.2493749856948853, 1.9839999675750732, 0.005000000353902578,
              -0.7596250176429749, 3.5082499980926514},
             {-0.29500001668930054, -0.01249999925494194, 0.320000022649765, -0.10000000149011612,
              0.1925000101327896, -0.16500000655651093}},
            {{0.5183433890342712, -1.2397003173828125, 1.9637571573257446, 0.022547749802470207,
              -0.7683956623077393, 3.5001463890075684},
             {-0.07186726480722427, -0.19349436461925507, 0.40485602617263794,
              -0.35095497965812683, 0.17541338503360748, 0.1620742380619049}},
            {{0.5204441547393799, -1.2448352575302124, 1.948254942893982, 0.028430577367544174,
              -0.76784348487854, 3.4858779907226562},
             {-0.042015448212623596, 0.10269776731729507, 0.31004422903060913,
              -0.11765653640031815, -0.011043531820178032, 0.2853681147098541}}});
}

TEST(SgdUpdate, NesterovMatchesTorch) {
  auto attrs =
      AttrsBuilder().f("momentum", 0.8).f("weight_decay", 0.001).i("nesterov", 1).build();
  checkSgd(0.2, attrs, true,
           {{{0.6078200340270996, -1.2495499849319458, 1.891279935836792, 0.036000002175569534,
              -0.8217300176620483, 3.570739984512329},
             {-0.2995000183582306, -0.0012500000884756446, 0.3020000159740448,
              -0.10000000149011612, 0.1992499977350235, -0.1965000033378601}},
            {{0.5703372359275818, -1.1805400848388672, 1.8123431205749512, 0.15318703651428223,
              -0.8505381941795349, 3.483006477355957},
             {-0.02899220585823059, -0.19224955141544342, 0.35349130630493164,
              -0.36996400356292725, 0.16857826709747314, 0.15637072920799255}},
            {{0.5666429400444031, -1.270707130432129, 1.795243740081787, 0.1212872862815857,
              -0.8070099949836731, 3.418537139892578},
             {-0.002623429521918297, 0.16501982510089874, 0.20460540056228638,
              -0.0758180320262909, -0.04598793387413025, 0.24857959151268005}}});
}

TEST(SgdUpdate, FirstStepIgnoresTheStoredBuffer) {
  // On step 1 the buffer is the gradient (PyTorch creates it then), whatever the state holds.
  auto attrs = AttrsBuilder().f("momentum", 0.5).build();
  auto param = makeFloat(DType::F64, {2}, {1, -2});
  auto grad = makeFloat(DType::F64, {2}, {0.5, 0.25});
  auto stale = makeFloat(DType::F64, {2}, {100, 100});
  auto r = runKernel("sgd_update", {param, grad, lrScalar(0.5), f32Scalar(1), stale},
                     {{DType::F64, {2}}, {DType::F64, {2}}}, attrs);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(allClose(r.out(0).values<double>(), {0.75, -2.125}, 0, 0));
  EXPECT_TRUE(allClose(r.out(1).values<double>(), {0.5, 0.25}, 0, 0));
  // Step 2: buf = 0.5 * buf + g.
  r = runKernel("sgd_update", {param, grad, lrScalar(0.5), f32Scalar(2), stale},
                {{DType::F64, {2}}, {DType::F64, {2}}}, attrs);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(allClose(r.out(1).values<double>(), {50.5, 50.25}, 0, 0));
  EXPECT_TRUE(allClose(r.out(0).values<double>(), {1 - 25.25, -2 - 25.125}, 0, 0));
}

TEST(SgdUpdate, AnF64LrIsReadExactly) {
  // plait-compile's lr is f64, as torch's Python float: 0.1 rounded to f32 (0.100000001490116)
  // would move an f64 param by 1.5e-9 relative more than torch does.
  auto param = makeFloat(DType::F64, {2}, {1, -2});
  auto grad = makeFloat(DType::F64, {2}, {0.3, 0.7});
  auto r = runKernel("sgd_update", {param, grad, makeFloat(DType::F64, {}, {0.1}), f32Scalar(1)},
                     {{DType::F64, {2}}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.out(0).values<double>(), (std::vector<double>{1 - 0.1 * 0.3, -2 - 0.1 * 0.7}));
  r = runKernel("sgd_update", {param, grad, f32Scalar(0.1), f32Scalar(1)}, {{DType::F64, {2}}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_NE(r.out(0).values<double>(), (std::vector<double>{1 - 0.1 * 0.3, -2 - 0.1 * 0.7}));
}

struct AdamWStep {
  std::vector<double> param, expAvg, expAvgSq;
};

void checkAdamW(double lr, const Attrs &attrs, const std::vector<AdamWStep> &expected) {
  int64_t n = (int64_t)kParam0.size();
  std::vector<double> zeros(n, 0.0);
  OwnedTensor param = f32(kParam0), m = f32(zeros), v = f32(zeros);
  for (size_t k = 0; k < expected.size(); ++k) {
    KernelResult r =
        runKernel("adamw_update", {param, f32(kGrads[k]), m, v, lrScalar(lr), f32Scalar(k + 1.0)},
                  {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}}, attrs);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_TRUE(allClose(r.out(0).floats(), expected[k].param, kRtol, kAtol)) << "step " << k + 1;
    EXPECT_TRUE(allClose(r.out(1).floats(), expected[k].expAvg, kRtol, kAtol))
        << "exp_avg, step " << k + 1;
    EXPECT_TRUE(allClose(r.out(2).floats(), expected[k].expAvgSq, kRtol, kAtol))
        << "exp_avg_sq, step " << k + 1;
    param = r.out(0);
    m = r.out(1);
    v = r.out(2);
  }
}

TEST(AdamWUpdate, DefaultsMatchTorch) {
  // No attributes: the ODS defaults, which are torch.optim.AdamW's (betas 0.9/0.999,
  // eps 1e-8, weight_decay 0.01).
  checkAdamW(1e-3, Attrs(),
             {{{0.5009949803352356, -1.2499874830245972, 1.998979926109314, 0.0009999999310821295,
                -0.750992476940155, 3.500964879989624},
               {-0.030000001192092896, 0.0, 0.030000001192092896, -0.010000000707805157,
                0.020000001415610313, -0.020000001415610313},
               {9.000000864034519e-05, 0.0, 9.000000864034519e-05, 1.0000000656873453e-05,
                4.0000002627493814e-05, 4.0000002627493814e-05}},
              {{0.5011119246482849, -1.2492308616638184, 1.9980745315551758,
                0.0019218490924686193, -0.7516913414001465, 3.5006675720214844},
               {-0.006000000983476639, -0.01899999938905239, 0.03800000250339508,
                -0.03799999877810478, 0.01900000125169754, 0.012999999336898327},
               {0.00013401001342572272, 3.610000203480013e-05, 0.00010201000986853614,
                9.408999903826043e-05, 4.006000381195918e-05, 0.00013605999993160367}},
              {{0.5011661648750305, -1.2494741678237915, 1.9975459575653076,
                0.002128360792994499, -0.7516624927520752, 3.500241994857788},
               {-0.0034000005107373, 0.014900000765919685, 0.026200002059340477,
                -0.012199997901916504, -0.0009000002173706889, 0.02369999885559082},
               {0.00013427600788418204, 0.00013846390356775373, 0.00010830799874383956,
                0.00014239591837394983, 7.24199489923194e-05, 0.00015032393275760114}}});
}

TEST(AdamWUpdate, CustomHyperParametersMatchTorch) {
  auto attrs = AttrsBuilder()
                   .f("beta1", 0.8)
                   .f("beta2", 0.95)
                   .f("eps", 1e-6)
                   .f("weight_decay", 0.1)
                   .build();
  checkAdamW(0.01, attrs,
             {{{0.5094999670982361, -1.2487499713897705, 1.9880000352859497, 0.009999900124967098,
                -0.7592499256134033, 3.506500005722046},
               {-0.06000000238418579, 0.0, 0.06000000238418579, -0.020000001415610313,
                0.04000000283122063, -0.04000000283122063},
               {0.004500000271946192, 0.0, 0.004500000271946192, 0.0005000000237487257,
                0.0020000000949949026, 0.0020000000949949026}},
              {{0.5096369385719299, -1.2397433519363403, 1.9773207902908325, 0.01937214285135269,
                -0.7652472853660583, 3.4998159408569336},
               {-0.006000004708766937, -0.03799999877810478, 0.07000000774860382,
                -0.07400000095367432, 0.03400000184774399, 0.029999999329447746},
               {0.006479999981820583, 0.0018049998907372355, 0.0048800003714859486,
                0.004679999779909849, 0.0019050000701099634, 0.006705000065267086}},
              {{0.5092061161994934, -1.24164879322052, 1.9709463119506836, 0.020772377029061317,
                -0.7633191347122192, 3.4919044971466064},
               {-0.0008000039961189032, 0.03360000252723694, 0.040000006556510925,
                -0.015199999324977398, -0.008799999952316284, 0.04800000041723251},
               {0.006175999995321035, 0.006834750063717365, 0.004956000484526157,
                0.006865999661386013, 0.0034297502133995295, 0.007089749909937382}}});
}

TEST(AdamWUpdate, L2IsTorchAdamsWeightDecay) {
  // --optimizer adam: no decoupled decay, the weight decay added to the gradient (l2), as
  // torch.optim.Adam(lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1).
  auto attrs = AttrsBuilder()
                   .f("beta1", 0.8)
                   .f("beta2", 0.95)
                   .f("eps", 1e-6)
                   .f("weight_decay", 0.0)
                   .f("l2", 0.1)
                   .build();
  checkAdamW(0.01, attrs,
             {{{0.5099999308586121, -1.2400001287460327, 1.9900000095367432, 0.009999900124967098,
                -0.7599999308586121, 3.490000009536743},
               {-0.05000000074505806, -0.02500000037252903, 0.10000000149011612,
                -0.020000001415610313, 0.02500000037252903, 0.030000001192092896},
               {0.0031250000465661287, 0.0007812500116415322, 0.012500000186264515,
                0.0005000000237487257, 0.0007812500116415322, 0.001125000067986548}},
              {{0.5086746215820312, -1.230464220046997, 1.9804680347442627, 0.01938585937023163,
                -0.7619035243988037, 3.4810471534729004},
               {0.01219999324530363, -0.0828000009059906, 0.14180001616477966,
                -0.07380000501871109, 0.006800002884119749, 0.155799999833107},
               {0.006374799646437168, 0.005671988241374493, 0.016649050638079643,
                0.004651050083339214, 0.0009599874611012638, 0.02278279885649681}},
              {{0.5063424110412598, -1.2280369997024536, 1.9722145795822144,
                0.020752785727381706, -0.7564305067062378, 3.4716920852661133},
               {0.023933488875627518, -0.02684929221868515, 0.1370493769645691,
                -0.01465228945016861, -0.04579807072877884, 0.21826094388961792},
               {0.006307169329375029, 0.007327924016863108, 0.01651334948837757,
                0.006881334353238344, 0.004193663131445646, 0.032599762082099915}}});
}

// whose lr is that product; a negative scale is refused.
TEST(UpdateLrScale, ScalesTheStepsLearningRate) {
  const int64_t n = (int64_t)kParam0.size();
  struct Kind {
    const char *update;
    size_t states;
  } kinds[] = {{"sgd_update", 0},   {"adamw_update", 2}, {"adagrad_update", 1},
               {"rmsprop_update", 1}, {"lion_update", 1},  {"adamax_update", 2},
               {"nadam_update", 2}, {"radam_update", 2},  {"adadelta_update", 2}};
  for (const Kind &k : kinds) {
    SCOPED_TRACE(k.update);
    cpu::UpdateKind kind;
    ASSERT_TRUE(cpu::updateKindOf(k.update, kind));
    auto run = [&](double lr, const Attrs &attrs) {
      std::vector<OwnedTensor> inputs(4 + k.states, f32(kParam0));
      inputs[1] = f32(kGrads[0]);
      const size_t lrAt = kind == cpu::UpdateKind::AdamW ? 4 : 2;
      inputs[lrAt] = lrScalar(lr);
      inputs[lrAt + 1] = f32Scalar(9);
      // States of 0.25: sums, averages of squares and maxima are >= 0.
      for (size_t j = 0; j < k.states; ++j)
        inputs[cpu::updateStateOperand(kind, j)] = f32(std::vector<double>(n, 0.25));
      std::vector<std::pair<DType, std::vector<int64_t>>> outputs(k.states + 1,
                                                                  {DType::F32, {n}});
      return runKernel(k.update, inputs, outputs, attrs);
    };
    // 0.25 and its multiples are exact in f32 and double: the two products are the same lr.
    KernelResult scaled = run(0.25, AttrsBuilder().f("lr_scale", 0.5).build());
    KernelResult direct = run(0.125, Attrs());
    ASSERT_TRUE(scaled.status.ok()) << scaled.status.message();
    ASSERT_TRUE(direct.status.ok()) << direct.status.message();
    for (size_t j = 0; j <= k.states; ++j)
      EXPECT_EQ(scaled.out(j).floats(), direct.out(j).floats()) << "result " << j;
    KernelResult negative = run(0.25, AttrsBuilder().f("lr_scale", -1).build());
    ASSERT_FALSE(negative.status.ok());
    EXPECT_NE(negative.status.message().find(std::string(k.update) +
                                             ": lr_scale must be >= 0, got -1"),
              std::string::npos)
        << negative.status.message();
  }
}

TEST(RMSpropUpdate, OutputsMayAliasTheirInputs) {
  int64_t n = (int64_t)kParam0.size();
  auto attrs = AttrsBuilder().f("momentum", 0.9).f("weight_decay", 0.01).i("centered", 1).build();
  OwnedTensor param = f32(kParam0), grad = f32(kGrads[1]), ga = f32(kGrads[0]);
  OwnedTensor sq = f32(kGrads[2]), buffer = f32(kGrads[1]);
  for (int64_t i = 0; i < n; ++i) // square_avg covers grad_avg's square, as training keeps it
    sq.view.as<float>()[i] = std::fabs(sq.view.as<float>()[i]) + 0.1f;
  OwnedTensor lr = lrScalar(0.01), step = f32Scalar(3);
  KernelResult expected =
      runKernel("rmsprop_update", {param, grad, lr, step, sq, ga, buffer},
                std::vector<std::pair<DType, std::vector<int64_t>>>(4, {DType::F32, {n}}), attrs);
  ASSERT_TRUE(expected.status.ok()) << expected.status.message();
  std::vector<TensorView> in{param.view, grad.view, lr.view, step.view,
                             sq.view,    ga.view,   buffer.view};
  std::vector<TensorView> out{param.view, sq.view, ga.view, buffer.view};
  Status s = callKernel("rmsprop_update", in, out, attrs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(param.floats(), expected.out(0).floats());
  EXPECT_EQ(sq.floats(), expected.out(1).floats());
  EXPECT_EQ(ga.floats(), expected.out(2).floats());
  EXPECT_EQ(buffer.floats(), expected.out(3).floats());
}

TEST(AdamWUpdate, AmsgradMatchesTorch) {
  // torch.optim.AdamW(lr=0.01, amsgrad=True).
  checkStateful("adamw_update", 0.01, AttrsBuilder().i("amsgrad", 1).build(), 3,
      {{{0.5099499821662903, -1.2498749494552612, 1.989799976348877, 0.009999998845160007,
      -0.7599250078201294, 3.5096499919891357}, {-0.030000001192092896, 0.0,
      0.030000001192092896, -0.010000000707805157, 0.020000001415610313, -0.020000001415610313},
      {9.000000864034519e-05, 0.0, 9.000000864034519e-05, 1.0000000656873453e-05,
      4.0000002627493814e-05, 4.0000002627493814e-05}, {9.000000864034519e-05, 0.0,
      9.000000864034519e-05, 1.0000000656873453e-05, 4.0000002627493814e-05,
      4.0000002627493814e-05}},
{{0.5111185908317566, -1.242308497428894, 1.9807474613189697,
      0.019217591732740402, -0.7669129967689514, 3.506676435470581}, {-0.006000000983476639,
      -0.01899999938905239, 0.03800000250339508, -0.03799999877810478, 0.01900000125169754,
      0.012999999336898327}, {0.00013401001342572272, 3.610000203480013e-05,
      0.00010201000986853614, 9.408999903826043e-05, 4.006000381195918e-05,
      0.00013605999993160367}, {0.00013401001342572272, 3.610000203480013e-05,
      0.00010201000986853614, 9.408999903826043e-05, 4.006000381195918e-05,
      0.00013605999993160367}},
{{0.5116601586341858, -1.2447422742843628, 1.9754637479782104,
      0.021280977874994278, -0.7666226625442505, 3.5024209022521973}, {-0.0034000005107373,
      0.014900000765919685, 0.026200002059340477, -0.012199997901916504, -0.0009000002173706889,
      0.02369999885559082}, {0.00013427600788418204, 0.00013846390356775373,
      0.00010830799874383956, 0.00014239591837394983, 7.24199489923194e-05,
      0.00015032393275760114}, {0.00013427600788418204, 0.00013846390356775373,
      0.00010830799874383956, 0.00014239591837394983, 7.24199489923194e-05,
      0.00015032393275760114}}});
  // torch.optim.Adam(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True): beta2 0.9
  // lets exp_avg_sq fall below its maximum.
  checkStateful("adamw_update", 0.01,
               AttrsBuilder()
                   .i("amsgrad", 1)
                   .f("beta1", 0.8)
                   .f("beta2", 0.9)
                   .f("weight_decay", 0.0)
                   .f("l2", 0.1)
                   .build(),
                3,
      {{{0.5099999904632568, -1.2400000095367432, 1.9900000095367432, 0.009999998845160007,
      -0.7599999904632568, 3.490000009536743}, {-0.05000000074505806, -0.02500000037252903,
      0.10000000149011612, -0.020000001415610313, 0.02500000037252903, 0.030000001192092896},
      {0.0062500000931322575, 0.0015625000232830644, 0.02500000037252903, 0.0010000000474974513,
      0.0015625000232830644, 0.002250000135973096}, {0.0062500000931322575,
      0.0015625000232830644, 0.02500000037252903, 0.0010000000474974513, 0.0015625000232830644,
      0.002250000135973096}},
{{0.5086753964424133, -1.2305545806884766, 1.9804093837738037,
      0.019289888441562653, -0.7619184851646423, 3.481151819229126}, {0.012199999764561653,
      -0.0828000009059906, 0.14180001616477966, -0.07380000501871109, 0.006800001487135887,
      0.155799999833107}, {0.01243709959089756, 0.011265850625932217, 0.032048098742961884,
      0.009252100251615047, 0.0018418498802930117, 0.04545309767127037}, {0.01243709959089756,
      0.011265850625932217, 0.032048098742961884, 0.009252100251615047, 0.0018418498802930117,
      0.04545309767127037}},
{{0.5063860416412354, -1.228135347366333, 1.972242832183838,
      0.020647840574383736, -0.756530225276947, 3.471862316131592}, {0.02393350750207901,
      -0.026851097121834755, 0.13704819977283478, -0.014654208905994892, -0.045798368752002716,
      0.21826304495334625}, {0.01169560942798853, 0.014017979614436626, 0.030236653983592987,
      0.01325213722884655, 0.008221090771257877, 0.06282096356153488}, {0.01243709959089756,
      0.014017979614436626, 0.032048098742961884, 0.01325213722884655, 0.008221090771257877,
      0.06282096356153488}}});
}

TEST(AdamWUpdate, OutputsMayAliasTheirInputs) {
  int64_t n = (int64_t)kParam0.size();
  OwnedTensor param = f32(kParam0), grad = f32(kGrads[1]);
  OwnedTensor m = f32(kGrads[0]), v = f32(kGrads[2]);
  for (int64_t i = 0; i < n; ++i) // exp_avg_sq is never negative
    v.view.as<float>()[i] = std::fabs(v.view.as<float>()[i]);
  OwnedTensor lr = lrScalar(0.01), step = f32Scalar(3);
  KernelResult expected = runKernel("adamw_update", {param, grad, m, v, lr, step},
                                    {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}});
  ASSERT_TRUE(expected.status.ok()) << expected.status.message();
  std::vector<TensorView> in{param.view, grad.view, m.view, v.view, lr.view, step.view};
  std::vector<TensorView> out{param.view, m.view, v.view};
  Attrs attrs;
  Status s = callKernel("adamw_update", in, out, attrs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(param.floats(), expected.out(0).floats());
  EXPECT_EQ(m.floats(), expected.out(1).floats());
  EXPECT_EQ(v.floats(), expected.out(2).floats());
}

TEST(SgdUpdate, OutputsMayAliasTheirInputs) {
  int64_t n = (int64_t)kParam0.size();
  auto attrs = AttrsBuilder().f("momentum", 0.9).f("weight_decay", 0.01).i("nesterov", 1).build();
  OwnedTensor param = f32(kParam0), grad = f32(kGrads[1]), buffer = f32(kGrads[0]);
  OwnedTensor lr = lrScalar(0.1), step = f32Scalar(2);
  KernelResult expected = runKernel("sgd_update", {param, grad, lr, step, buffer},
                                    {{DType::F32, {n}}, {DType::F32, {n}}}, attrs);
  ASSERT_TRUE(expected.status.ok()) << expected.status.message();
  std::vector<TensorView> in{param.view, grad.view, lr.view, step.view, buffer.view};
  std::vector<TensorView> out{param.view, buffer.view};
  Status s = callKernel("sgd_update", in, out, attrs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(param.floats(), expected.out(0).floats());
  EXPECT_EQ(buffer.floats(), expected.out(1).floats());
}

// grouped_update walks its tensors as the single updates would: the same bits, each
// tensor's results where its own update puts them (here in place, as plans run it).
TEST(GroupedUpdate, EachTensorAsItsOwnUpdate) {
  std::vector<std::vector<double>> params = {kParam0, {1.5, -0.5}, {0.25, 0.75, -2.0}};
  OwnedTensor lr = lrScalar(0.01), step = f32Scalar(2);
  std::vector<OwnedTensor> owned; // param, grad, m, v per tensor
  std::vector<TensorView> in, out;
  std::vector<KernelResult> expected;
  for (size_t t = 0; t < params.size(); ++t) {
    int64_t n = int64_t(params[t].size());
    std::vector<double> g(params[t].size()), m(params[t].size()), v(params[t].size());
    for (size_t i = 0; i < g.size(); ++i) {
      g[i] = kGrads[t][i] * (t + 1);
      m[i] = 0.1 * kGrads[(t + 1) % 3][i];
      v[i] = std::fabs(kGrads[(t + 2) % 3][i]) * 0.01;
    }
    owned.insert(owned.end(), {f32(params[t]), f32(g), f32(m), f32(v)});
    expected.push_back(runKernel("adamw_update",
                                 {f32(params[t]), f32(g), f32(m), f32(v), lr, step},
                                 {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}},
                                 AttrsBuilder().f("beta1", 0.8).f("weight_decay", 0.1).build()));
    ASSERT_TRUE(expected.back().status.ok()) << expected.back().status.message();
  }
  for (size_t t = 0; t < params.size(); ++t) {
    OwnedTensor *p = &owned[4 * t];
    in.insert(in.end(), {p[0].view, p[1].view, p[2].view, p[3].view, lr.view, step.view});
    out.insert(out.end(), {p[0].view, p[2].view, p[3].view});
  }
  Attrs attrs = AttrsBuilder()
                    .s("update", "adamw_update")
                    .i("operands_per_update", 6)
                    .i("results_per_update", 3)
                    .f("beta1", 0.8)
                    .f("weight_decay", 0.1)
                    .build();
  Status s = callKernel("grouped_update", in, out, attrs);
  ASSERT_TRUE(s.ok()) << s.message();
  for (size_t t = 0; t < params.size(); ++t) {
    EXPECT_EQ(owned[4 * t].floats(), expected[t].out(0).floats()) << "param " << t;
    EXPECT_EQ(owned[4 * t + 2].floats(), expected[t].out(1).floats()) << "exp_avg " << t;
    EXPECT_EQ(owned[4 * t + 3].floats(), expected[t].out(2).floats()) << "exp_avg_sq " << t;
  }

  // SGD with momentum, through the test harness (separate results, no allocation).
  Attrs sgd = AttrsBuilder().f("momentum", 0.9).f("weight_decay", 0.01).build();
  OwnedTensor p0 = f32(kParam0), g0 = f32(kGrads[0]), b0 = f32(kGrads[1]);
  OwnedTensor p1 = f32({1, 2}), g1 = f32({0.5, -0.5}), b1 = f32({0.25, 0.125});
  KernelResult e0 = runKernel("sgd_update", {p0, g0, lr, step, b0}, {{DType::F32, {6}}, {DType::F32, {6}}}, sgd);
  KernelResult e1 = runKernel("sgd_update", {p1, g1, lr, step, b1}, {{DType::F32, {2}}, {DType::F32, {2}}}, sgd);
  KernelResult grouped = runKernel(
      "grouped_update", {p0, g0, lr, step, b0, p1, g1, lr, step, b1},
      {{DType::F32, {6}}, {DType::F32, {6}}, {DType::F32, {2}}, {DType::F32, {2}}},
      AttrsBuilder()
          .s("update", "sgd_update")
          .i("operands_per_update", 5)
          .i("results_per_update", 2)
          .f("momentum", 0.9)
          .f("weight_decay", 0.01)
          .build());
  ASSERT_TRUE(grouped.status.ok()) << grouped.status.message();
  EXPECT_EQ(grouped.out(0).floats(), e0.out(0).floats());
  EXPECT_EQ(grouped.out(1).floats(), e0.out(1).floats());
  EXPECT_EQ(grouped.out(2).floats(), e1.out(0).floats());
  EXPECT_EQ(grouped.out(3).floats(), e1.out(1).floats());
}

// A gradient in bf16 or f16 (plait-group-updates folds the cast before the update into it)
// updates its tensor exactly as the cast to the param's dtype and the single update do. 46
// tensors: 38 with bf16 gradients (more than one CUDA launch takes, kMaxUpdateTensors), then
// f16 ones, then ones of the param's dtype; their sizes cover the CPU's widening pieces and
// the CUDA blocks' chunks (1024 elements) with their tails, and include empty tensors. The
// params are f32 and f64. Run on 2 threads, so that the pieces start inside the split ranges;
// lr and step are one tensor each for the whole group, as in plans.
TEST(GroupedUpdate, HalfGradientsUpdateAsTheirCasts) {
  KernelThreads threads(2);
  const int64_t sizes[] = {1, 7, 1024, 1025, 3000, 0, 33, 2049};
  constexpr int kTensors = 46;
  struct Kind {
    const char *update;
    Attrs attrs;
    int states;
  } kinds[] = {
      {"adamw_update", AttrsBuilder().f("beta1", 0.8).f("weight_decay", 0.1).build(), 2},
      {"adamw_update",
       AttrsBuilder().f("beta1", 0.8).f("beta2", 0.9).i("amsgrad", 1).build(), 3},
      {"sgd_update", AttrsBuilder().f("momentum", 0.9).f("weight_decay", 0.01).build(), 1},
      {"adagrad_update", AttrsBuilder().f("lr_decay", 0.1).f("weight_decay", 0.01).build(), 1},
      {"rmsprop_update",
       AttrsBuilder().f("momentum", 0.9).f("weight_decay", 0.01).i("centered", 1).build(), 3},
      {"lion_update", AttrsBuilder().f("beta1", 0.8).f("weight_decay", 0.1).build(), 1},
      {"adamax_update", AttrsBuilder().f("beta1", 0.8).f("weight_decay", 0.1).build(), 2},
      {"nadam_update", AttrsBuilder().f("momentum_decay", 0.1).f("weight_decay", 0.1).build(),
       2},
      {"radam_update", AttrsBuilder().f("beta2", 0.9).f("weight_decay", 0.1).build(), 2},
      {"adadelta_update", AttrsBuilder().f("rho", 0.8).f("weight_decay", 0.1).build(), 2},
      {"adagrad_update", AttrsBuilder().f("initial_accumulator_value", 0.5).build(), 1},
  };
  for (const Kind &kind : kinds)
    for (DType paramType : {DType::F32, DType::F64}) {
      const bool adamw = std::string(kind.update) == "adamw_update";
      // Step 9 rectifies RAdam's (beta2 0.9); step 1 reads Adagrad's initial accumulator.
      const std::string name = kind.update;
      const double stepNumber = adamw                    ? 3
                                : name == "radam_update" ? 9
                                : kind.attrs.getFloat("initial_accumulator_value", 0) != 0
                                    ? 1
                                    : 2;
      OwnedTensor lr = lrScalar(0.01), step = f32Scalar(stepNumber);
      const int perResult = 1 + kind.states;
      std::vector<OwnedTensor> owned, results;
      owned.reserve(6 * kTensors);
      results.reserve(perResult * kTensors);
      std::vector<TensorView> in, out;
      std::vector<KernelResult> expected;
      for (int t = 0; t < kTensors; ++t) {
        const int64_t n = sizes[t % 8] == 0 ? 0 : sizes[t % 8] + t / 8;
        const DType gradType = t < 38 ? DType::BF16 : t < 42 ? DType::F16 : paramType;
        auto values = [&](uint32_t seed, double lo, double hi) {
          std::vector<float> f = randomFloats({n}, seed + 100 * t, lo, hi).floats();
          return std::vector<double>(f.begin(), f.end());
        };
        // Gradients of a few hundred: bf16 and f16 round them, the casts widen them back.
        OwnedTensor &param = owned.emplace_back(makeFloat(paramType, {n}, values(1, -2, 2)));
        OwnedTensor &grad = owned.emplace_back(makeFloat(gradType, {n}, values(2, -300, 300)));
        // States: adamw's exp_avg, exp_avg_sq and (amsgrad) max_exp_avg_sq, sgd's buffer,
        // adagrad's sum, lion's exp_avg, rmsprop's square_avg, grad_avg (square_avg >= grad_avg^2, as
        // training keeps them) and buffer.
        std::vector<OwnedTensor> states;
        if (adamw)
          states = {makeFloat(paramType, {n}, values(3, -0.5, 0.5)),
                    makeFloat(paramType, {n}, values(4, 0, 0.5)),
                    makeFloat(paramType, {n}, values(5, 0, 0.5))};
        else if (kind.states == 1)
          states = {makeFloat(paramType, {n}, values(3, 0, 0.5))};
        else if (kind.states == 2) // adamax, nadam, radam, adadelta: both states >= 0
          states = {makeFloat(paramType, {n}, values(3, -0.5, 0.5)),
                    makeFloat(paramType, {n}, values(4, 0, 0.5))};
        else
          states = {makeFloat(paramType, {n}, values(4, 0.25, 0.5)),
                    makeFloat(paramType, {n}, values(3, -0.5, 0.5)),
                    makeFloat(paramType, {n}, values(5, -0.5, 0.5))};
        OwnedTensor wide = runOk("cast", {grad}, paramType, {n});
        std::vector<OwnedTensor> args{param, wide};
        std::vector<TensorView> views{param.view, grad.view};
        auto addStates = [&](int from, int to) {
          for (int k = from; k < to; ++k) {
            args.push_back(states[k]);
            views.push_back(owned.emplace_back(states[k]).view);
          }
        };
        // adamw_update: exp_avg and exp_avg_sq before lr and step, max_exp_avg_sq after.
        const int before = adamw ? 2 : 0;
        addStates(0, before);
        args.insert(args.end(), {lr, step});
        views.insert(views.end(), {lr.view, step.view});
        addStates(before, kind.states);
        std::vector<std::pair<DType, std::vector<int64_t>>> shapes(perResult,
                                                                   {paramType, {n}});
        expected.push_back(runKernel(kind.update, args, shapes, kind.attrs));
        ASSERT_TRUE(expected.back().status.ok()) << expected.back().status.message();
        in.insert(in.end(), views.begin(), views.end());
        for (int k = 0; k < perResult; ++k)
          out.push_back(results.emplace_back(paramType, std::vector<int64_t>{n}).view);
      }
      Attrs grouped = kind.attrs;
      grouped.set("update", AttrValue{{}, {}, kind.update});
      grouped.set("operands_per_update", AttrValue{{4 + kind.states}, {}, {}});
      grouped.set("results_per_update", AttrValue{{perResult}, {}, {}});
      Status s = callKernel("grouped_update", in, out, grouped);
      ASSERT_TRUE(s.ok()) << s.message();
      for (int t = 0; t < kTensors; ++t)
        for (int k = 0; k < perResult; ++k)
          EXPECT_EQ(results[t * perResult + k].bytes, expected[t].out(k).bytes)
              << kind.update << " " << dtypeName(paramType) << " tensor " << t << " result "
              << k;
    }
}

TEST(GroupedUpdate, Errors) {
  auto p = f32({1, 2}), g = f32({0.5, 0.5}), lr = lrScalar(0.1), step = f32Scalar(1);
  auto grouped = [&](std::string update, int64_t per, int64_t perResult,
                     std::vector<OwnedTensor> inputs, size_t results) {
    std::vector<std::pair<DType, std::vector<int64_t>>> outputs(results, {DType::F32, {2}});
    return runKernel("grouped_update", inputs, outputs,
                     AttrsBuilder()
                         .s("update", update)
                         .i("operands_per_update", per)
                         .i("results_per_update", perResult)
                         .build());
  };
  struct Case {
    KernelResult result;
    const char *message;
  } cases[] = {
      {grouped("lbfgs", 4, 1, {p, g, lr, step}, 1),
       "grouped_update: update must be adamw_update, sgd_update, adagrad_update, "
       "rmsprop_update, lion_update, adamax_update, nadam_update, radam_update, "
       "adadelta_update, rprop_update, asgd_update or lamb_update, got 'lbfgs'"},
      {grouped("sgd_update", 6, 3, {p, g, lr, step, p, g}, 3),
       "grouped_update: sgd_update does not take 6 operands and give 3 results with these "
       "attributes (4 and 1)"},
      {grouped("adagrad_update", 4, 1, {p, g, lr, step}, 1),
       "grouped_update: adagrad_update does not take 4 operands and give 1 results"},
      {grouped("sgd_update", 4, 1, {p, g, lr, step, p, g}, 2),
       "grouped_update: 6 operands and 2 results are not groups of 4 and 1"},
      {grouped("sgd_update", 4, 1, {p, g, lr, step, p, f32({1, 2, 3}), lr, step}, 2),
       "grouped_update: update 1: sgd_update: grad"},
      {grouped("sgd_update", 4, 1,
               {makeFloat(DType::BF16, {2}, {1, 2}), makeFloat(DType::BF16, {2}, {1, 2}), lr,
                step},
               1),
       "grouped_update: update 0: bf16 tensors are not grouped"},
      {grouped("sgd_update", 4, 1, {p, makeFloat(DType::BF16, {3}, {1, 2, 3}), lr, step}, 1),
       "grouped_update: update 0: sgd_update: grad has shape [3], expected [2]"},
      {grouped("adamw_update", 6, 3, {p, make<int32_t>({2}, {1, 2}), p, p, lr, step}, 3),
       "grouped_update: update 0: adamw_update: "},
  };
  for (const Case &c : cases) {
    ASSERT_FALSE(c.result.status.ok()) << c.message;
    EXPECT_NE(c.result.status.message().find(c.message), std::string::npos)
        << c.result.status.message();
  }
}

TEST(OptimizerKernels, HalfPrecisionParamsGoThroughFloat) {
  auto param = makeFloat(DType::BF16, {2}, {1, -2});
  auto grad = makeFloat(DType::BF16, {2}, {0.5, 0.25});
  auto out = runOk("sgd_update", {param, grad, lrScalar(0.5), f32Scalar(1)}, DType::BF16, {2});
  EXPECT_TRUE(allClose(out.floats(), {0.75, -2.125}, 0, 0));
}

TEST(OptimizerKernels, Errors) {
  auto expectError = [](const KernelResult &r, const std::string &text) {
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find(text), std::string::npos) << r.status.message();
  };
  auto p = f32({1, 2}), g = f32({0.5, 0.5});
  expectError(runKernel("sgd_update",
                        {make<int64_t>({2}, {1, 2}), make<int64_t>({2}, {1, 1}), lrScalar(0.1),
                         f32Scalar(1)},
                        {{DType::I64, {2}}}),
              "sgd_update: unsupported dtype i64");
  expectError(runKernel("sgd_update", {p, g, lrScalar(0.1), f32Scalar(1)}, {{DType::F32, {2}}},
                        AttrsBuilder().f("momentum", 0.9).build()),
              "needs a momentum buffer exactly when momentum is non-zero");
  expectError(
      runKernel("sgd_update", {p, g, make<int32_t>({}, {1}), f32Scalar(1)}, {{DType::F32, {2}}}),
      "sgd_update: lr must be an f32 or f64 scalar, got i32 []");
  expectError(runKernel("sgd_update", {p, f32({1, 2, 3}), lrScalar(0.1), f32Scalar(1)},
                        {{DType::F32, {2}}}),
              "sgd_update: grad has shape [3], expected [2]");
  expectError(runKernel("adamw_update", {p, g, p, p, lrScalar(0.1), f32Scalar(0)},
                        {{DType::F32, {2}}, {DType::F32, {2}}, {DType::F32, {2}}}),
              "adamw_update: step must be a whole number >= 1, got 0");
  expectError(runKernel("adamw_update", {p, g, p, p, lrScalar(0.1), f32Scalar(1)},
                        {{DType::F32, {2}}, {DType::F32, {2}}}),
              "adamw_update: expected 3 outputs, got 2");
  expectError(runKernel("adamw_update",
                        {p, g, makeFloat(DType::F64, {2}, {0, 0}), p, lrScalar(0.1), f32Scalar(1)},
                        {{DType::F32, {2}}, {DType::F32, {2}}, {DType::F32, {2}}}),
              "adamw_update: unsupported dtype f32 x f64");
  expectError(runKernel("adagrad_update", {p, g, lrScalar(0.1), f32Scalar(1), f32({1, 2, 3})},
                        {{DType::F32, {2}}, {DType::F32, {2}}}),
              "adagrad_update: sum has shape [3], expected [2]");
  expectError(runKernel("rmsprop_update", {p, g, lrScalar(0.1), f32Scalar(1), p},
                        {{DType::F32, {2}}, {DType::F32, {2}}},
                        AttrsBuilder().i("centered", 1).build()),
              "rmsprop_update: takes 2 states with centered true and momentum 0, got 1");
  expectError(runKernel("rmsprop_update", {p, g, lrScalar(0.1), f32Scalar(0), p},
                        {{DType::F32, {2}}, {DType::F32, {2}}}),
              "rmsprop_update: step must be a whole number >= 1, got 0");
  expectError(runKernel("rmsprop_update", {p, g, lrScalar(0.1), f32Scalar(1), p, p},
                        {{DType::F32, {2}}, {DType::F32, {2}}}),
              "rmsprop_update: expected 3 outputs, got 2");
}

/// weight_ema's expected values as the kernel computes them in T: d * ema + (1 - d) * param,
/// both factors rounded from double (a copy of param where d is 0).
template <typename T>
std::vector<double> expectedEma(const std::vector<float> &param, const std::vector<float> &ema,
                                double d) {
  std::vector<double> out;
  for (size_t i = 0; i < param.size(); ++i)
    out.push_back(d == 0 ? double(param[i])
                         : double(T(d) * T(ema[i]) + T(1 - d) * T(param[i])));
  return out;
}

TEST(WeightEma, FirstStepCopiesThenDecays) {
  // Step 1 copies the params, even over an average holding inf or NaN (0 * inf is NaN).
  auto param = f32({1.5, -2, 0.25, 3});
  auto stale = f32({INFINITY, NAN, 7, -1});
  auto attrs = AttrsBuilder().f("decay", 0.9).build();
  auto first = runOk("weight_ema", {param, stale, f32Scalar(1)}, DType::F32, {4}, attrs);
  EXPECT_EQ(first.floats(), param.floats());
  // Later steps: 0.9 * ema + 0.1 * param in f32, the factors rounded from double.
  auto next = f32({2, -1, 0.5, 2.5});
  auto out = runOk("weight_ema", {next, first, f32Scalar(7)}, DType::F32, {4}, attrs);
  EXPECT_TRUE(allClose(out.floats(), expectedEma<float>(next.floats(), first.floats(), 0.9), 0,
                       0));
  EXPECT_TRUE(allClose(out.floats(), {0.9 * 1.5 + 0.2, 0.9 * -2 - 0.1, 0.9 * 0.25 + 0.05,
                                      0.9 * 3 + 0.25},
                       1e-6, 0));
}

TEST(WeightEma, WarmupDecaysAsDiffusersEmaModel) {
  // Step t averages with min(decay, t / (t + 9)): 0.2 at step 3, the decay from step 891.
  auto param = randomFloats({50000}, 7), ema = randomFloats({50000}, 8);
  auto attrs = AttrsBuilder().f("decay", 0.99).i("warmup", 1).build();
  for (auto [step, d] : {std::pair<double, double>{3, 3.0 / 12}, {20, 20.0 / 29}, {2000, 0.99}}) {
    auto out = runOk("weight_ema", {param, ema, f32Scalar(step)}, DType::F32, {50000}, attrs);
    EXPECT_TRUE(allClose(out.floats(), expectedEma<float>(param.floats(), ema.floats(), d), 0, 0))
        << "step " << step;
  }
}

TEST(WeightEma, ScheduleAsDiffusersEmaModelAndEmaPytorch) {
  // n = step - 1 - start averaging steps: a copy while n <= 0, then with `power` the decay
  // min(decay, 1 - (1 + n / inv_gamma)^-power), never below min_decay; with `every` E the
  // average changes on steps 1, 1 + E, ... only, each result its average between.
  auto param = randomFloats({5000}, 11), ema = randomFloats({5000}, 12);
  auto power = AttrsBuilder()
                   .f("decay", 0.9999)
                   .f("power", 0.75)
                   .f("inv_gamma", 2.0)
                   .f("min_decay", 0.3)
                   .i("start", 2)
                   .build();
  for (auto [step, d] : {std::pair<double, double>{1, 0},
                         {3, 0},
                         {4, 0.3},
                         {6, 1 - std::pow(2.5, -0.75)},
                         {900, 1 - std::pow(449.5, -0.75)}}) {
    auto out = runOk("weight_ema", {param, ema, f32Scalar(step)}, DType::F32, {5000}, power);
    EXPECT_TRUE(allClose(out.floats(), expectedEma<float>(param.floats(), ema.floats(), d), 0, 0))
        << "step " << step;
  }
  auto every = AttrsBuilder().f("decay", 0.9).i("warmup", 1).i("every", 3).build();
  for (double step : {2.0, 3.0, 5.0, 9.0}) {
    auto out = runOk("weight_ema", {param, ema, f32Scalar(step)}, DType::F32, {5000}, every);
    EXPECT_EQ(out.bytes, ema.bytes) << "step " << step;
  }
  for (auto [step, d] : {std::pair<double, double>{1, 0}, {4, 4.0 / 13}, {7, 7.0 / 16}}) {
    auto out = runOk("weight_ema", {param, ema, f32Scalar(step)}, DType::F32, {5000}, every);
    EXPECT_TRUE(allClose(out.floats(), expectedEma<float>(param.floats(), ema.floats(), d), 0, 0))
        << "step " << step;
  }
  // A kept step of bf16 averages: each result its average, bit for bit.
  auto p16 = convertedTo(DType::BF16, param), e16 = convertedTo(DType::BF16, ema);
  auto kept = runOk("weight_ema", {p16, e16, f32Scalar(2)}, DType::BF16, {5000}, every);
  EXPECT_EQ(kept.bytes, e16.bytes);
}

TEST(WeightEma, DoubleAndHalfPrecision) {
  auto attrs = AttrsBuilder().f("decay", 0.75).build();
  auto p64 = makeFloat(DType::F64, {3}, {1e-9, 2, -4}), e64 = makeFloat(DType::F64, {3}, {1, 1, 1});
  auto out64 = runOk("weight_ema", {p64, e64, f32Scalar(2)}, DType::F64, {3}, attrs);
  EXPECT_EQ(out64.doubles(), (std::vector<double>{0.75 + 0.25e-9, 1.25, -0.25}));
  // bf16 through f32: the f32 result rounded to bf16.
  auto p16 = makeFloat(DType::BF16, {3}, {1, 2, -4}), e16 = makeFloat(DType::BF16, {3}, {3, 1, 1});
  auto out16 = runOk("weight_ema", {p16, e16, f32Scalar(2)}, DType::BF16, {3}, attrs);
  EXPECT_EQ(out16.floats(), (std::vector<float>{2.5f, 1.25f, -0.25f}));
}

TEST(WeightEma, ManyAveragesInOneCallMatchOneAtATime) {
  // plait-group-updates merges the averages into one call: params, averages, then the step.
  // Each result is bit for bit the single call's, whatever the dtypes around it (two bf16
  // and one f16 average share the call's f32 buffers), with the kernel's threads splitting
  // the large ones.
  KernelThreads threads(2);
  auto attrs = AttrsBuilder().f("decay", 0.95).i("warmup", 1).build();
  const std::vector<std::pair<DType, int64_t>> kinds = {{DType::F32, 70000}, {DType::BF16, 33},
                                                        {DType::F64, 5},     {DType::F32, 1},
                                                        {DType::F16, 4097},  {DType::BF16, 9000}};
  std::vector<OwnedTensor> params, emas;
  for (size_t k = 0; k < kinds.size(); ++k) {
    auto [dtype, n] = kinds[k];
    params.push_back(convertedTo(dtype, randomFloats({n}, uint32_t(40 + k))));
    emas.push_back(convertedTo(dtype, randomFloats({n}, uint32_t(80 + k))));
  }
  for (double step : {1.0, 4.0, 600.0}) {
    std::vector<OwnedTensor> inputs(params);
    inputs.insert(inputs.end(), emas.begin(), emas.end());
    inputs.push_back(f32Scalar(step));
    std::vector<std::pair<DType, std::vector<int64_t>>> outputs;
    for (auto [dtype, n] : kinds)
      outputs.push_back({dtype, {n}});
    KernelResult all = runKernel("weight_ema", inputs, outputs, attrs);
    ASSERT_TRUE(all.status.ok()) << all.status.message();
    for (size_t k = 0; k < kinds.size(); ++k) {
      auto [dtype, n] = kinds[k];
      auto one = runOk("weight_ema", {params[k], emas[k], f32Scalar(step)}, dtype, {n}, attrs);
      EXPECT_EQ(all.out(k).bytes, one.bytes) << "average " << k << " at step " << step;
    }
  }
}

TEST(WeightEma, Errors) {
  auto p = f32({1, 2});
  auto attrs = AttrsBuilder().f("decay", 0.9).build();
  auto expectError = [](const KernelResult &r, const std::string &text) {
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find(text), std::string::npos) << r.status.message();
  };
  expectError(runKernel("weight_ema", {p, p, f32Scalar(1)}, {{DType::F32, {2}}},
                        AttrsBuilder().f("decay", 1.0).build()),
              "weight_ema: decay 1 is not in (0, 1)");
  expectError(runKernel("weight_ema", {p, p, f32Scalar(1)}, {{DType::F32, {2}}}),
              "weight_ema: decay -1 is not in (0, 1)");
  expectError(runKernel("weight_ema", {p, f32({1, 2, 3}), f32Scalar(1)}, {{DType::F32, {2}}},
                        attrs),
              "weight_ema: ema has shape [3], expected [2]");
  expectError(runKernel("weight_ema", {p, makeFloat(DType::F64, {2}, {1, 2}), f32Scalar(1)},
                        {{DType::F32, {2}}}, attrs),
              "weight_ema: ema dtype f64 differs from the param's f32");
  expectError(runKernel("weight_ema", {p, p, f32({1, 2})}, {{DType::F32, {2}}}, attrs),
              "weight_ema: step must be an f32 scalar, got f32 [2]");
  expectError(runKernel("weight_ema", {p, p, f32Scalar(0)}, {{DType::F32, {2}}}, attrs),
              "weight_ema: step must be a whole number >= 1, got 0");
  expectError(runKernel("weight_ema",
                        {make<int64_t>({2}, {1, 2}), make<int64_t>({2}, {1, 2}), f32Scalar(1)},
                        {{DType::I64, {2}}}, attrs),
              "weight_ema: param must be a float tensor, got i64");
  // The schedule's ranges.
  for (auto [attrs, text] :
       {std::pair<Attrs, const char *>{AttrsBuilder().f("decay", 0.9).f("power", -1).build(),
                                       "weight_ema: needs power >= 0 and inv_gamma > 0, got -1 "
                                       "and 1"},
        {AttrsBuilder().f("decay", 0.9).f("power", 1).f("inv_gamma", 0).build(),
         "weight_ema: needs power >= 0 and inv_gamma > 0, got 1 and 0"},
        {AttrsBuilder().f("decay", 0.9).f("min_decay", 0.95).build(),
         "weight_ema: min_decay 0.95 is not in [0, decay 0.9]"},
        {AttrsBuilder().f("decay", 0.9).i("every", 0).build(),
         "weight_ema: needs start >= 0 and every >= 1, got 0 and 0"},
        {AttrsBuilder().f("decay", 0.9).i("start", -2).build(),
         "weight_ema: needs start >= 0 and every >= 1, got -2 and 1"}})
    expectError(runKernel("weight_ema", {p, p, f32Scalar(1)}, {{DType::F32, {2}}}, attrs), text);
  // Many averages: N params, N averages and the step for N results; each checked by index.
  expectError(runKernel("weight_ema", {p, p, p, f32Scalar(1)},
                        {{DType::F32, {2}}, {DType::F32, {2}}}, attrs),
              "weight_ema: needs N params, their N averages and the step for N results, got 4 "
              "inputs and 2 outputs");
  expectError(runKernel("weight_ema", {p, f32({1, 2, 3}), p, p, f32Scalar(1)},
                        {{DType::F32, {2}}, {DType::F32, {3}}}, attrs),
              "weight_ema 1: ema has shape [2], expected [3]");
}

} // namespace
} // namespace plait::rt::test
