// Adafactor's kernel: three-step trajectories against Hugging Face's Adafactor
// (tests/e2e/torch_optimizers.py's Adafactor, run in PyTorch 1.13, float32; values baked in) for
// a factored matrix, a batch of factored matrices and an unfactored vector; a large call in
// f32 against the same in f64; the sums' independence of the threads; bf16 staged through
// f32; and the operand checks' messages.
#include <cmath>

#include "OptimizerTrajectories.h"

namespace plait::rt::test {
namespace {

using Shape = std::vector<int64_t>;

/// Three steps of adafactor_update from kParam0 (reshaped to `shape`) with kGrads and zero
/// states of `stateShapes`, the first at step `firstStep`; each step's param and states
/// checked against `expected` (per step: the param, then each state, flattened).
void checkAdafactor(const Shape &shape, const std::vector<Shape> &stateShapes, double lr,
                    const Attrs &attrs, double firstStep,
                    const std::vector<std::vector<std::vector<double>>> &expected) {
  OwnedTensor param = makeFloat(DType::F32, shape, kParam0);
  std::vector<OwnedTensor> states;
  std::vector<std::pair<DType, Shape>> outputs{{DType::F32, shape}};
  for (const Shape &s : stateShapes) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    states.push_back(makeFloat(DType::F32, s, std::vector<double>(size_t(n), 0.0)));
    outputs.push_back({DType::F32, s});
  }
  for (size_t k = 0; k < expected.size(); ++k) {
    std::vector<OwnedTensor> inputs{param, makeFloat(DType::F32, shape, kGrads[k]), lrScalar(lr),
                                    f32Scalar(firstStep + double(k))};
    inputs.insert(inputs.end(), states.begin(), states.end());
    KernelResult r = runKernel("adafactor_update", inputs, outputs, attrs);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    for (size_t j = 0; j <= states.size(); ++j)
      EXPECT_TRUE(allClose(r.out(j).floats(), expected[k][j], kRtol, kAtol))
          << "result " << j << ", step " << k + 1;
    param = r.out(0);
    for (size_t j = 0; j < states.size(); ++j)
      states[j] = r.out(j + 1);
  }
}

TEST(AdafactorUpdate, FactoredMatrixWithFirstMomentMatchesHuggingFace) {
  // [2, 3]: a row of 2 and a column of 3; beta1 0.9 (exp_avg), decoupled weight decay 0.1,
  // the step scaled by the param's RMS.
  checkAdafactor({2, 3}, {{2, 3}, {2}, {3}}, 0.1,
                 AttrsBuilder().f("beta1", 0.9).f("weight_decay", 0.1).build(), 1,
                 {{{0.5106920003890991, -1.227976679801941, 1.947658896446228, 0.009193005040287971,
                    -0.7658568620681763, 3.454460382461548},
                   {-0.01950131542980671, 0.0, 0.017103781923651695, -0.009193005040287971,
                    0.029070833697915077, -0.016125597059726715},
                   {0.06000000238418579, 0.030000001192092896},
                   {0.05000000074505806, 0.020000001415610313, 0.0650000050663948}},
                  {{0.5039001703262329, -1.1821129322052002, 1.89039146900177, 0.03773827478289604,
                    -0.7799603343009949, 3.3872835636138916},
                   {-0.0020737883169203997, -0.02454611286520958, 0.023456236347556114,
                    -0.02870485931634903, 0.027398688718676567, 0.00720762275159359},
                   {0.04320986196398735, 0.04728791117668152},
                   {0.05809832364320755, 0.01890873722732067, 0.058739595115184784}},
                  {{0.4955861568450928, -1.1675255298614502, 1.8441025018692017,
                    0.04518824443221092, -0.7759423851966858, 3.312929153442383},
                   {-0.0002444694400765002, 0.005490176845341921, 0.014181612059473991,
                    -0.008090934716165066, 0.009229260496795177, 0.01682332716882229},
                   {0.040382109582424164, 0.040828973054885864},
                   {0.04410530999302864, 0.03904442861676216, 0.03866688907146454}}});
}

TEST(AdafactorUpdate, BatchedFactoringMatchesHuggingFace) {
  // [2, 1, 3]: two 1 x 3 matrices, rows [2, 1] and columns [2, 3]; eps1 1e-3 and an RMS
  // floor (eps2 3) above the param's RMS.
  checkAdafactor({2, 1, 3}, {{2, 1}, {2, 3}}, 0.05,
                 AttrsBuilder().f("eps1", 1e-3).f("eps2", 3.0).build(), 1,
                 {{{0.6491735577583313, -1.25, 1.8508265018463135, 0.1430193930864334,
                    -0.8981594443321228, 3.6481595039367676},
                   {0.06100000441074371, 0.03100000135600567},
                   {0.09100000560283661, 0.0010000000474974513, 0.09100000560283661,
                    0.01100000087171793, 0.04100000113248825, 0.04100000113248825}},
                  {{0.5252742767333984, -1.0566807985305786, 1.7741098403930664, 0.3309822082519531,
                    -0.909313976764679, 3.4763152599334717},
                   {0.044209860265254974, 0.04828791320323944},
                   {0.06463737040758133, 0.021734004840254784, 0.04625819995999336,
                    0.05355926975607872, 0.018083468079566956, 0.07322099059820175}},
                  {{0.5099606513977051, -1.2601633071899414, 1.8432507514953613,
                    0.18603351712226868, -0.7366182804107666, 3.395174264907837},
                   {0.041382111608982086, 0.04182897508144379},
                   {0.038378458470106125, 0.05564529076218605, 0.030122581869363785,
                    0.051832158118486404, 0.02444356121122837, 0.04921119287610054}}});
}

TEST(AdafactorUpdate, RelativeWarmupStepOfAVectorMatchesHuggingFace) {
  // [6], unfactored (exp_avg_sq); the relative step warmed up, min(1e-6 * t, 1/sqrt(t)) from
  // step 5000 (the lr operand not read), not scaled by the RMS; the update clipped to RMS
  // 0.5; beta2 from decay rate -0.6.
  checkAdafactor({6}, {{6}}, 123.0,
                 AttrsBuilder()
                     .i("relative_step", 1)
                     .i("warmup_init", 1)
                     .i("scale_parameter", 0)
                     .f("clip_threshold", 0.5)
                     .f("decay_rate", -0.6)
                     .build(),
                 5000,
                 {{{0.5027385950088501, -1.25, 1.99726140499115, 0.002738612936809659,
                    -0.7527385950088501, 3.5027387142181396},
                   {0.0005430759047158062, 6.0341761713355874e-33, 0.0005430759047158062,
                    6.034176840330474e-05, 0.00024136707361321896, 0.00024136707361321896}},
                  {{0.5007244944572449, -1.2464948892593384, 1.996051549911499,
                    0.006053343415260315, -0.7529141306877136, 3.499790668487549},
                   {0.0008058745297603309, 0.00021780762472189963, 0.0006128040258772671,
                    0.000567390990909189, 0.0002405141422059387, 0.0008197255665436387}},
                  {{0.5004662871360779, -1.250549554824829, 1.997201919555664,
                    0.0033013366628438234, -0.7497538924217224, 3.49832820892334},
                   {0.0008034260245040059, 0.0008342450601048768, 0.0006477166316471994,
                    0.0008559521520510316, 0.00043452359386719763, 0.0009016516851261258}}});
}

/// One step of a [3, 70, 130] param in `dtype` from fixed random values (rows, columns and
/// exp_avg from earlier steps), with beta1 and weight decay: several row slots, column
/// blocks of 64 and a partial one, three batches.
KernelResult largeStep(DType dtype) {
  const Shape shape{3, 70, 130}, row{3, 70}, col{3, 130};
  auto as = [&](const OwnedTensor &t) { return convertedTo(dtype, t); };
  const OwnedTensor p = randomFloats(shape, 1, -0.5, 0.5), g = randomFloats(shape, 2, -1, 1);
  const OwnedTensor m = randomFloats(shape, 3, -0.01, 0.01);
  const OwnedTensor r = randomFloats(row, 4, 0.1, 0.5), c = randomFloats(col, 5, 0.1, 0.5);
  return runKernel("adafactor_update",
                   {as(p), as(g), lrScalar(0.01), f32Scalar(7), as(m), as(r), as(c)},
                   {{dtype, shape}, {dtype, shape}, {dtype, row}, {dtype, col}},
                   AttrsBuilder().f("beta1", 0.9).f("weight_decay", 0.01).build());
}

TEST(AdafactorUpdate, LargeF32StepAgreesWithF64) {
  KernelResult f32Step = largeStep(DType::F32), f64Step = largeStep(DType::F64);
  ASSERT_TRUE(f32Step.status.ok()) << f32Step.status.message();
  ASSERT_TRUE(f64Step.status.ok()) << f64Step.status.message();
  for (size_t j = 0; j < 4; ++j) {
    std::vector<double> wide;
    for (float v : convertedTo(DType::F32, f64Step.out(j)).floats())
      wide.push_back(v);
    EXPECT_TRUE(allClose(f32Step.out(j).floats(), wide, 1e-5, 1e-8)) << "result " << j;
  }
}

TEST(AdafactorUpdate, SumsDoNotDependOnThreads) {
  KernelResult one = largeStep(DType::F32);
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  KernelThreads threads(4);
  KernelResult four = largeStep(DType::F32);
  ASSERT_TRUE(four.status.ok()) << four.status.message();
  for (size_t j = 0; j < 4; ++j)
    EXPECT_EQ(one.out(j).floats(), four.out(j).floats()) << "result " << j;
}

TEST(AdafactorUpdate, Bf16IsStagedThroughF32) {
  // A bf16 param and states: computed as the f32 kernel computes their widened values, the
  // results rounded to bf16.
  const Shape shape{4, 8};
  const OwnedTensor p = randomFloats(shape, 6, -1, 1), g = randomFloats(shape, 7, -1, 1);
  const OwnedTensor r = randomFloats({4}, 8, 0.1, 0.5), c = randomFloats({8}, 9, 0.1, 0.5);
  auto run = [&](DType t) {
    return runKernel("adafactor_update",
                     {convertedTo(t, p), convertedTo(t, g), lrScalar(0.05), f32Scalar(3),
                      convertedTo(t, r), convertedTo(t, c)},
                     {{t, shape}, {t, {4}}, {t, {8}}});
  };
  KernelResult half = run(DType::BF16);
  ASSERT_TRUE(half.status.ok()) << half.status.message();
  // The f32 reference from the same bf16 inputs, widened.
  auto widened = [](const OwnedTensor &t) {
    return convertedTo(DType::F32, convertedTo(DType::BF16, t));
  };
  KernelResult full =
      runKernel("adafactor_update",
                {widened(p), widened(g), lrScalar(0.05), f32Scalar(3), widened(r), widened(c)},
                {{DType::F32, shape}, {DType::F32, {4}}, {DType::F32, {8}}});
  ASSERT_TRUE(full.status.ok()) << full.status.message();
  for (size_t j = 0; j < 3; ++j) {
    std::vector<double> want;
    for (float v : convertedTo(DType::F32, convertedTo(DType::BF16, full.out(j))).floats())
      want.push_back(v);
    EXPECT_TRUE(allClose(convertedTo(DType::F32, half.out(j)).floats(), want, 0, 0))
        << "result " << j;
  }
}

TEST(AdafactorUpdate, RejectsMalformedOperands) {
  const OwnedTensor m = makeFloat(DType::F32, {2, 3}, kParam0);
  const OwnedTensor row = f32({0.1, 0.2}), col = f32({0.1, 0.2, 0.3});
  const std::vector<std::pair<DType, Shape>> out3{
      {DType::F32, {2, 3}}, {DType::F32, {2}}, {DType::F32, {3}}};
  struct Case {
    KernelResult result;
    const char *message;
  } cases[] = {
      {runKernel("adafactor_update", {m, m, lrScalar(0.1), f32Scalar(1), col, col}, out3),
       "adafactor_update: exp_avg_sq_row must be f32 [2], got f32 [3]"},
      {runKernel("adafactor_update", {m, m, lrScalar(0.1), f32Scalar(1), row, col},
                 {{DType::F32, {2, 3}}, {DType::F32, {2}}, {DType::F32, {2}}}),
       "adafactor_update: exp_avg_sq_col must be f32 [3], got f32 [2]"},
      {runKernel("adafactor_update", {m, m, lrScalar(0.1), f32Scalar(1), row, col}, out3,
                 AttrsBuilder().i("warmup_init", 1).build()),
       "adafactor_update: needs eps1, eps2, weight_decay >= 0, clip_threshold > 0, decay_rate "
       "<= 0, 0 <= beta1 < 1 and warmup_init only with relative_step"},
      {runKernel("adafactor_update", {m, m, lrScalar(0.1), f32Scalar(0), row, col}, out3),
       "adafactor_update: step must be a whole number >= 1, got 0"},
  };
  for (const Case &c : cases) {
    ASSERT_FALSE(c.result.status.ok()) << c.message;
    EXPECT_EQ(c.result.status.message(), c.message);
  }
  // Three states where beta1 asks for an exp_avg too: the arity names the counts.
  KernelResult arity = runKernel("adafactor_update", {m, m, lrScalar(0.1), f32Scalar(1), row, col},
                                 out3, AttrsBuilder().f("beta1", 0.9).build());
  EXPECT_FALSE(arity.status.ok());
}

} // namespace
} // namespace plait::rt::test
