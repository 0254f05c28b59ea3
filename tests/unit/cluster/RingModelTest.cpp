// The ring model of collectives and the fit of a link to measured times.
#include "runtime/cluster/RingModel.h"

#include <gtest/gtest.h>

namespace plait::cluster {
namespace {

TEST(RingModel, StepsAndFactors) {
  EXPECT_EQ(ringSteps(Collective::AllReduce, 8), 14u);
  EXPECT_EQ(ringSteps(Collective::AllGather, 8), 7u);
  EXPECT_DOUBLE_EQ(ringFactor(Collective::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(ringFactor(Collective::ReduceScatter, 2), 0.5);
  EXPECT_EQ(ringTime(Link{1e9, 1e-6}, Collective::AllReduce, 1, 1e6), 0.0);
  // 2 ranks, 1 MB all-reduce: 2 steps of 1 us + 1 MB / 1 GB/s.
  EXPECT_DOUBLE_EQ(ringTime(Link{1e9, 1e-6}, Collective::AllReduce, 2, 1e6), 2e-6 + 1e-3);
}

TEST(RingModel, FitRecoversTheLink) {
  const Link truth{5e9, 2e-6};
  std::vector<CollectiveSample> samples;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter})
    for (uint64_t bytes = 8; bytes <= (64u << 20); bytes *= 4)
      samples.push_back({c, 4, bytes, ringTime(truth, c, 4, double(bytes))});
  Link fit = fitRing(samples);
  EXPECT_NEAR(fit.latency, truth.latency, 1e-12);
  EXPECT_NEAR(fit.bandwidth, truth.bandwidth, 1.0);
}

TEST(RingModel, NoisyFitStaysPositive) {
  // Small messages slower than large ones: least squares would give a negative bandwidth.
  std::vector<CollectiveSample> samples = {{Collective::AllReduce, 2, 8, 10e-6},
                                           {Collective::AllReduce, 2, 1024, 1e-6},
                                           {Collective::AllReduce, 2, 4096, 1.1e-6}};
  Link fit = fitRing(samples);
  EXPECT_GT(fit.latency, 0);
  EXPECT_GT(fit.bandwidth, 0);
  EXPECT_DOUBLE_EQ(fit.latency, 5e-6); // the smallest message over its 2 steps
}

} // namespace
} // namespace plait::cluster
