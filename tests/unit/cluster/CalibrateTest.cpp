// calibrate.quick: plait-calibrate --quick as a real two-rank MPI job; its spec parses back
// with the shape it ran in and positive, plausible numbers; the kernel-rate fit.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "runtime/cluster/Calibrate.h"
#include "runtime/cluster/ClusterSpec.h"

namespace plait::cluster {
namespace {

TEST(Calibrate, QuickTwoRankRunWritesASpecThatParses) {
  std::filesystem::path out =
      std::filesystem::path(testing::TempDir()) / "plait-calibrate-quick.yaml";
  std::filesystem::remove(out);
  std::string command =
      std::string(PLAIT_CALIBRATE_PATH) + " --quick --nproc 2 --name quick-test -o " + out.string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  ClusterSpec spec;
  rt::Status status = parseClusterSpec(out.string(), spec);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(spec.name, "quick-test");
  EXPECT_EQ(spec.device.kind, DeviceKind::Cpu);
  EXPECT_EQ(spec.worldSize(), 2u);
  EXPECT_EQ(spec.devicesPerNode, 2u);
  EXPECT_NE(spec.source.find("plait-calibrate on "), std::string::npos);
  EXPECT_GT(spec.device.peak(Dtype::Fp32), 1e8); // a CPU core does more than 0.1 GFLOP/s
  EXPECT_GT(spec.device.memoryBandwidth, 1e8);   // and copies more than 0.1 GB/s
  EXPECT_GT(spec.device.memoryBytes, 64ull << 20);
  ASSERT_TRUE(spec.intraNode.has_value());
  EXPECT_GT(spec.intraNode->bandwidth, 1e6);
  EXPECT_LT(spec.intraNode->latency, 1e-2);
  EXPECT_FALSE(spec.interNode.has_value());
  // The runtime's own kernels, every class, and a link fit per collective kind.
  EXPECT_EQ(spec.device.kernels.size(), std::size(kKernelClassNames));
  for (const auto &[name, rate] : spec.device.kernels) {
    EXPECT_GT(rate.nsPerElement, 0) << name;
    EXPECT_LT(rate.nsPerElement, 1e3) << name; // under a microsecond per element
    EXPECT_GT(rate.overhead, 0) << name;
  }
  for (const auto &fit : spec.intraNode->byKind)
    EXPECT_TRUE(fit.has_value());
  // The GEMM efficiency by call size: the squares (64 to 512 cubed in a quick run) and the GPT
  // sample's mean call.
  EXPECT_GE(spec.device.gemmEfficiencyBySize.size(), 5u);
  for (const auto &[size, efficiency] : spec.device.gemmEfficiencyBySize) {
    EXPECT_GT(efficiency, 0) << size;
    EXPECT_LE(efficiency, 1) << size;
  }
  // Rank 0 alone on the node's CPUs: the kernels' speedup on all of them (at most one per
  // thread; a machine with one CPU measures none).
  if (spec.device.threads) {
    const ThreadScaling &t = *spec.device.threads;
    EXPECT_GE(t.count, 2u);
    for (double speedup : {t.gemmSpeedup, t.elementSpeedup}) {
      EXPECT_GT(speedup, 0.1);
      EXPECT_LE(speedup, double(t.count));
    }
    EXPECT_GT(t.regionOverhead, 0);
    EXPECT_LT(t.regionOverhead, 1e-2);
  }
}

TEST(Calibrate, KernelRateFit) {
  // Exact samples of 100 ns + 0.5 ns per element give them back, with no per-row time.
  std::vector<RateSample> exact;
  for (double n : {256.0, 4096.0, 65536.0})
    exact.push_back({n, 0, 100e-9 + n * 0.5e-9});
  KernelRate fit = fitKernelRate(exact);
  EXPECT_DOUBLE_EQ(fit.nsPerElement, 0.5);
  EXPECT_DOUBLE_EQ(fit.overhead, 100e-9);
  EXPECT_EQ(fit.nsPerRow, 0);
  // Noise that makes the overhead negative: the largest sample's rate, a 1 ns floor.
  fit = fitKernelRate({{256, 0, 50e-9}, {4096, 0, 3000e-9}, {65536, 0, 40000e-9}});
  EXPECT_GT(fit.nsPerElement, 0);
  EXPECT_GE(fit.overhead, 1e-9);
}

// Rows of two lengths tell the per-row time from the per-element time.
TEST(Calibrate, KernelRateFitWithRows) {
  std::vector<RateSample> samples;
  for (double n : {256.0, 1024.0, 4096.0, 16384.0})
    for (double width : {256.0, 16.0})
      samples.push_back({n, n / width, 200e-9 + n * 1.5e-9 + n / width * 40e-9});
  KernelRate fit = fitKernelRate(samples);
  EXPECT_NEAR(fit.nsPerElement, 1.5, 1e-3);
  EXPECT_NEAR(fit.nsPerRow, 40, 1e-2);
  EXPECT_NEAR(fit.overhead, 200e-9, 1e-11);
  // Rows of one length only: per row and per element cannot be told apart; the fit folds
  // the rows into the elements and leaves the per-row time out.
  std::vector<RateSample> oneWidth;
  for (double n : {256.0, 4096.0, 65536.0})
    oneWidth.push_back({n, n / 256, 100e-9 + n * 0.5e-9 + n / 256 * 64e-9});
  fit = fitKernelRate(oneWidth);
  EXPECT_EQ(fit.nsPerRow, 0);
  EXPECT_NEAR(fit.nsPerElement, 0.75, 1e-3);
  // No elements, only rows (a matmul's GEMMs): a per-call and a per-row time, the
  // per-element time at its floor.
  fit = fitKernelRate({{0, 1, 300e-9}, {0, 16, 900e-9}, {0, 256, 10500e-9}});
  EXPECT_NEAR(fit.overhead, 260e-9, 1e-9);
  EXPECT_NEAR(fit.nsPerRow, 40, 0.1);
  EXPECT_DOUBLE_EQ(fit.nsPerElement, 1e-6);
}

} // namespace
} // namespace plait::cluster
