// LAMB's kernels: three-step trajectories against timm's Lamb (tests/e2e/torch_optimizers.py's
// Lamb, run in PyTorch 1.13, float32; values baked in), a flat shard's lamb_norms and
// lamb_update against the whole params' updates, and the sums' independence of the threads.
#include <cmath>

#include "OptimizerTrajectories.h"

namespace plait::rt::test {
namespace {

TEST(LambUpdate, DefaultsMatchTimm) {
  // No attributes: timm's defaults (betas 0.9, 0.999, eps 1e-6, weight decay 0.01): the
  // trust ratio scales every step.
  checkStateful("lamb_update", 0.1, Attrs(), 2,
      {{{0.6930665969848633, -1.2475745677947998, 1.8020824193954468, 0.19403551518917084,
       -0.9425811767578125, 3.6872451305389404},
       {-0.030000001192092896, 0.0, 0.030000001192092896, -0.010000000707805157,
        0.020000001415610313, -0.020000001415610313},
       {9.000000864034519e-05, 0.0, 9.000000864034519e-05, 1.0000000656873453e-05,
        4.0000002627493814e-05, 4.0000002627493814e-05}},
      {{0.7235351204872131, -1.0471752882003784, 1.5628114938735962, 0.4376893937587738,
       -1.127184510231018, 3.608015537261963},
       {-0.006000000983476639, -0.01899999938905239, 0.03800000250339508, -0.03799999877810478,
        0.01900000125169754, 0.012999999336898327},
       {0.00013401001342572272, 3.610000203480013e-05, 0.00010201000986853614,
        9.408999903826043e-05, 4.006000381195918e-05, 0.00013605999993160367}},
      {{0.7534369826316833, -1.1881440877914429, 1.2615983486175537, 0.5538520812988281,
       -1.1084309816360474, 3.362898588180542},
       {-0.0034000005107373, 0.014900000765919685, 0.026200002059340477, -0.012199997901916504,
        -0.0009000002173706889, 0.02369999885559082},
       {0.00013427600788418204, 0.00013846390356775373, 0.00010830799874383956,
        0.00014239591837394983, 7.24199489923194e-05, 0.00015032393275760114}}});
}

TEST(LambUpdate, WithoutWeightDecayNoTrustRatio) {
  // Weight decay 0: timm does not adapt (an Adam step with eps outside the root's scale).
  checkStateful("lamb_update", 0.1, AttrsBuilder().f("weight_decay", 0.0).build(), 2,
      {{{0.5999996662139893, -1.25, 1.9000003337860107, 0.09999900311231613, -0.8499994874000549,
       3.59999942779541},
       {-0.030000001192092896, 0.0, 0.030000001192092896, -0.010000000707805157,
        0.020000001415610313, -0.020000001415610313},
       {9.000000864034519e-05, 0.0, 9.000000864034519e-05, 1.0000000656873453e-05,
        4.0000002627493814e-05, 4.0000002627493814e-05}},
      {{0.612196147441864, -1.1755868196487427, 1.8114657402038574, 0.19218450784683228,
       -0.9206390380859375, 3.5737736225128174},
       {-0.006000000983476639, -0.01899999938905239, 0.03800000250339508, -0.03799999877810478,
        0.01900000125169754, 0.012999999336898327},
       {0.00013401001342572272, 3.610000203480013e-05, 0.00010201000986853614,
        9.408999903826043e-05, 4.006000381195918e-05, 0.00013605999993160367}},
      {{0.6181233525276184, -1.2011661529541016, 1.7606096267700195, 0.21283750236034393,
       -0.9185026288032532, 3.5347249507904053},
       {-0.0034000005107373, 0.014900000765919685, 0.026200002059340477, -0.012199997901916504,
        -0.0009000002173706889, 0.02369999885559082},
       {0.00013427600788418204, 0.00013846390356775373, 0.00010830799874383956,
        0.00014239591837394983, 7.24199489923194e-05, 0.00015032393275760114}}});
}

TEST(LambUpdate, AlwaysAdaptTrustClipMatchTimm) {
  // always_adapt without decay, the ratio clipped at 1 (LAMBC), other betas and eps.
  checkStateful("lamb_update", 0.05, AttrsBuilder()
                    .f("weight_decay", 0.0)
                    .i("always_adapt", 1)
                    .i("trust_clip", 1)
                    .f("beta1", 0.8)
                    .f("beta2", 0.99)
                    .f("eps", 1e-5)
                    .build(), 2,
      {{{0.5499983429908752, -1.25, 1.9500017166137695, 0.04999500885605812, -0.7999975085258484,
       3.549997568130493},
       {-0.06000000238418579, 0.0, 0.06000000238418579, -0.020000001415610313,
        0.04000000283122063, -0.04000000283122063},
       {0.0009000000427477062, 0.0, 0.0009000000427477062, 0.00010000000474974513,
        0.0004000000189989805, 0.0004000000189989805}},
      {{0.5532192587852478, -1.210817575454712, 1.9068912267684937, 0.09728201478719711,
       -0.8334283232688904, 3.5340421199798584},
       {-0.006000004708766937, -0.03799999877810478, 0.07000000774860382, -0.07400000095367432,
        0.03400000184774399, 0.029999999329447746},
       {0.00133200001437217, 0.0003609999839682132, 0.00101200002245605, 0.0009399999980814755,
        0.00039700002525933087, 0.0013569999719038606}},
      {{0.5536076426506042, -1.2267799377441406, 1.8852580785751343, 0.1044178158044815,
       -0.8276257514953613, 3.512066602706909},
       {-0.0008000039961189032, 0.03360000252723694, 0.040000006556510925, -0.015199999324977398,
        -0.008799999952316284, 0.04800000041723251},
       {0.0013226800365373492, 0.001381389913149178, 0.0010658800601959229,
        0.0014145999448373914, 0.0007170300814323127, 0.001487429952248931}}});
}

TEST(LambUpdate, LargeWeightDecayMatchTimm) {
  // A large decay: the decay term dominates the update's norm.
  checkStateful("lamb_update", 0.1, AttrsBuilder().f("weight_decay", 0.5).build(), 2,
      {{{0.6231650114059448, -1.1473619937896729, 1.6715589761734009, 0.16421917080879211,
       -0.8526371717453003, 3.37683367729187},
       {-0.030000001192092896, 0.0, 0.030000001192092896, -0.010000000707805157,
        0.020000001415610313, -0.020000001415610313},
       {9.000000864034519e-05, 0.0, 9.000000864034519e-05, 1.0000000656873453e-05,
        4.0000002627493814e-05, 4.0000002627493814e-05}},
      {{0.5978212952613831, -0.9712272882461548, 1.4415186643600464, 0.27645695209503174,
       -0.8900713920593262, 3.116112470626831},
       {-0.006000000983476639, -0.01899999938905239, 0.03800000250339508, -0.03799999877810478,
        0.01900000125169754, 0.012999999336898327},
       {0.00013401001342572272, 3.610000203480013e-05, 0.00010201000986853614,
        9.408999903826043e-05, 4.006000381195918e-05, 0.00013605999993160367}},
      {{0.5601247549057007, -0.9350752830505371, 1.2481393814086914, 0.2872011959552765,
       -0.8167039752006531, 2.8095951080322266},
       {-0.0034000005107373, 0.014900000765919685, 0.026200002059340477, -0.012199997901916504,
        -0.0009000002173706889, 0.02369999885559082},
       {0.00013427600788418204, 0.00013846390356775373, 0.00010830799874383956,
        0.00014239591837394983, 7.24199489923194e-05, 0.00015032393275760114}}});
}

/// Two params (5 and 4 elements) laid end to end and padded to 10, split over a group of two:
/// each rank's lamb_norms, summed, and its lamb_update with segments give each param exactly
/// the update of its whole tensor (up to the sums' order).
TEST(LambUpdate, FlatShardsMatchTheWholeParams) {
  const std::vector<double> p = {0.5, -1.25, 2.0, 0.0, -0.75, 3.5, 0.25, -0.5, 1.0, 0.0};
  const std::vector<double> g = {-0.3, 0.0, 0.3, -0.1, 0.2, -0.2, 0.21, -0.19, 0.11, 0.0};
  const std::vector<double> m = {0.01, 0.02, -0.03, 0.0, 0.05, 0.01, -0.02, 0.0, 0.04, 0.0};
  const std::vector<double> v = {1e-4, 2e-4, 3e-4, 0.0, 5e-5, 1e-4, 2e-5, 0.0, 4e-4, 0.0};
  auto slice = [](const auto &x, size_t from, size_t n) {
    return std::vector<double>(x.begin() + long(from), x.begin() + long(from + n));
  };
  const Attrs plain = AttrsBuilder().f("weight_decay", 0.1).build();
  // The whole params' updates, each with its own norms.
  std::vector<double> wholeParam, wholeM, wholeV;
  for (auto [from, n] : {std::pair<size_t, size_t>{0, 5}, {5, 4}}) {
    KernelResult r = runKernel(
        "lamb_update",
        {f32(slice(p, from, n)), f32(slice(g, from, n)), lrScalar(0.1), f32Scalar(3),
         f32(slice(m, from, n)), f32(slice(v, from, n))},
        {{DType::F32, {int64_t(n)}}, {DType::F32, {int64_t(n)}}, {DType::F32, {int64_t(n)}}},
        plain);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    for (auto [out, into] : {std::pair{0, &wholeParam}, {1, &wholeM}, {2, &wholeV}}) {
      std::vector<float> x = r.out(size_t(out)).floats();
      into->insert(into->end(), x.begin(), x.end());
    }
  }
  // Rank 0 is shard 0 of group [0, 1] and shard 1 of group [1, 0]: both shards run here.
  std::vector<Attrs> shard;
  for (std::vector<int64_t> group : {std::vector<int64_t>{0, 1}, {1, 0}})
    shard.push_back(AttrsBuilder()
                        .f("weight_decay", 0.1)
                        .ints("segments", {5, 4})
                        .ints("groups", group)
                        .i("group_size", 2)
                        .build());
  std::vector<double> norms(4, 0.0);
  for (size_t s = 0; s < 2; ++s) {
    KernelResult r = runKernel("lamb_norms",
                               {f32(slice(p, 5 * s, 5)), f32(slice(g, 5 * s, 5)), f32Scalar(3),
                                f32(slice(m, 5 * s, 5)), f32(slice(v, 5 * s, 5))},
                               {{DType::F32, {2, 2}}}, shard[s]);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    for (size_t i = 0; i < 4; ++i)
      norms[i] += r.out().floats()[i];
  }
  for (size_t s = 0; s < 2; ++s) {
    KernelResult r = runKernel("lamb_update",
                               {f32(slice(p, 5 * s, 5)), f32(slice(g, 5 * s, 5)), lrScalar(0.1),
                                f32Scalar(3), f32(slice(m, 5 * s, 5)), f32(slice(v, 5 * s, 5)),
                                makeFloat(DType::F32, {2, 2}, norms)},
                               {{DType::F32, {5}}, {DType::F32, {5}}, {DType::F32, {5}}}, shard[s]);
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    // The padding element (the last of shard 1) takes ratio 1: 0 - lr * (0 + wd * 0) = 0.
    const size_t n = s == 0 ? 5 : 4;
    EXPECT_TRUE(allClose(slice(r.out(0).floats(), 0, n), slice(wholeParam, 5 * s, n), 1e-6, 1e-9))
        << "shard " << s;
    EXPECT_EQ(slice(r.out(1).floats(), 0, n), slice(wholeM, 5 * s, n)) << "shard " << s;
    EXPECT_EQ(slice(r.out(2).floats(), 0, n), slice(wholeV, 5 * s, n)) << "shard " << s;
    if (s == 1)
      EXPECT_EQ(r.out(0).floats()[4], 0.0);
  }
}

/// The norms are summed over fixed blocks: the same bits on one thread and on four.
TEST(LambUpdate, SameBitsOnAnyThreadCount) {
  const int64_t n = 300001;
  std::vector<double> p(static_cast<size_t>(n)), g(static_cast<size_t>(n));
  const std::vector<double> zeros(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    p[size_t(i)] = std::sin(0.001 * double(i));
    g[size_t(i)] = std::cos(0.0007 * double(i)) * 1e-2;
  }
  auto step = [&]() {
    return runKernel("lamb_update",
                     {f32(p), f32(g), lrScalar(0.01), f32Scalar(1), f32(zeros), f32(zeros)},
                     {{DType::F32, {n}}, {DType::F32, {n}}, {DType::F32, {n}}});
  };
  KernelResult one = step();
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  KernelThreads threads(4);
  KernelResult four = step();
  ASSERT_TRUE(four.status.ok()) << four.status.message();
  EXPECT_EQ(one.out(0).floats(), four.out(0).floats());
}

TEST(LambUpdate, RejectsBadShardLayouts) {
  const OwnedTensor x = f32({0.5, -1.0, 0.25, 2.0});
  const OwnedTensor ones = makeFloat(DType::F32, {1, 2}, {1.0, 1.0});
  const Attrs twoRanks = AttrsBuilder()
                             .ints("segments", {3, 4})
                             .ints("groups", {0, 1})
                             .i("group_size", 2)
                             .build();
  struct Case {
    KernelResult result;
    const char *message;
  } cases[] = {
      {runKernel("lamb_update", {x, x, lrScalar(0.1), f32Scalar(1), x, x, ones},
                 {{DType::F32, {4}}, {DType::F32, {4}}, {DType::F32, {4}}}),
       "lamb_update: takes norms (a 7th operand) exactly when it has segments"},
      {runKernel("lamb_update",
                 {x, x, lrScalar(0.1), f32Scalar(1), x, x,
                  makeFloat(DType::F32, {3, 2}, std::vector<double>(6, 0.0))},
                 {{DType::F32, {4}}, {DType::F32, {4}}, {DType::F32, {4}}}, twoRanks),
       "lamb_update: norms must be f32 2x2, got f32 [3, 2]"},
      {runKernel("lamb_norms", {x, x, f32Scalar(1), x, x}, {{DType::F32, {2, 2}}},
                 AttrsBuilder().ints("segments", {3, 4}).build()),
       "lamb_norms: segments (7 elements) do not fit 4 x 1 ranks"},
      {runKernel("lamb_norms", {x, x, f32Scalar(1), x, x}, {{DType::F32, {2, 2}}},
                 AttrsBuilder()
                     .ints("segments", {3, 4})
                     .ints("groups", {1, 2})
                     .i("group_size", 2)
                     .build()),
       "lamb_norms: rank 0 is in none of the groups (group size 2)"},
  };
  for (const Case &c : cases) {
    ASSERT_FALSE(c.result.status.ok()) << c.message;
    EXPECT_EQ(c.result.status.message(), c.message);
  }
}

} // namespace
} // namespace plait::rt::test
