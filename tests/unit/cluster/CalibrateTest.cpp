// calibrate.quick: plait-calibrate --quick as a real two-rank MPI job; its spec parses back
// with the shape it ran in and positive, plausible numbers.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

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
}

} // namespace
} // namespace plait::cluster
