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
}

TEST(Calibrate, KernelRateFit) {
  // Exact samples of 100 ns + 0.5 ns per element give them back.
  std::vector<std::pair<double, double>> exact;
  for (double n : {256.0, 4096.0, 65536.0})
    exact.push_back({n, 100e-9 + n * 0.5e-9});
  KernelRate fit = fitKernelRate(exact);
  EXPECT_DOUBLE_EQ(fit.nsPerElement, 0.5);
  EXPECT_DOUBLE_EQ(fit.overhead, 100e-9);
  // Noise that makes the overhead negative: the largest sample's rate, a 1 ns floor.
  fit = fitKernelRate({{256, 50e-9}, {4096, 3000e-9}, {65536, 40000e-9}});
  EXPECT_GT(fit.nsPerElement, 0);
  EXPECT_GE(fit.overhead, 1e-9);
}

} // namespace
} // namespace plait::cluster
