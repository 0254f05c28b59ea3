// plait-calibrate --device cuda: the spec a calibration makes (here, from numbers given), and
// on a GPU a quick calibration whose numbers are plausible and whose spec parses back.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/cluster/CalibrateCuda.h"
#include "runtime/cuda/CudaDevice.h"
#include "tests/unit/cuda/CudaTestSupport.h"

namespace plait::cluster {
namespace {

TEST(CudaCalibrate, SpecCarriesTheMeasuredRatesAndParsesBack) {
  CudaCalibration c;
  c.host = "h";
  c.date = "2026-11-30";
  c.deviceName = "NVIDIA H200";
  c.major = 9;
  c.memoryBytes = 150ull << 30;
  c.fp32Peak = 51.234567e12;
  c.bf16Peak = 702.1e12;
  c.gemmEfficiency = 0.61234;
  c.copyBandwidth = 4.1449e12;
  c.launchOverhead = 2.345678e-6;
  KernelClassRates binary;
  binary.name = "binary";
  binary.fit = {0.0031, 2.5e-6, 0};
  c.kernels.push_back(binary);
  ClusterSpec spec = specFromCudaCalibration(c, "h200-measured");
  EXPECT_EQ(spec.device.kind, DeviceKind::Gpu);
  EXPECT_EQ(spec.worldSize(), 1u);
  EXPECT_DOUBLE_EQ(spec.device.peak(Dtype::Fp32), 51.23e12); // 4 significant digits
  EXPECT_DOUBLE_EQ(spec.device.peak(Dtype::Bf16), 702.1e12);
  EXPECT_DOUBLE_EQ(spec.device.gemmEfficiency, 0.612);
  EXPECT_DOUBLE_EQ(spec.device.memoryBandwidth, 4.145e12);
  EXPECT_DOUBLE_EQ(spec.device.memoryEfficiency, 1.0);
  EXPECT_DOUBLE_EQ(spec.device.launchOverhead, 2.346e-6);
  ASSERT_EQ(spec.device.kernels.count("binary"), 1u);
  ClusterSpec back;
  rt::Status parsed = parseClusterSpecText(writeClusterSpec(spec), "spec", back);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  EXPECT_EQ(back.device.peak(Dtype::Bf16), spec.device.peak(Dtype::Bf16));
  EXPECT_EQ(back.device.kernels.at("binary").overhead, 2.5e-6);
  std::string table = cudaCalibrationTable(c);
  EXPECT_NE(table.find("NVIDIA H200"), std::string::npos) << table;
  EXPECT_NE(table.find("not measured: collectives between GPUs"), std::string::npos) << table;
}

TEST(CudaCalibrate, WithoutADeviceSaysSo) {
  if (haveCudaDevice())
    GTEST_SKIP() << "this machine has a CUDA device";
  CudaCalibration c;
  rt::Status s = calibrateCuda(CudaCalibrateOptions{}, c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("no CUDA device", 0), 0u) << s.message();
}

TEST(CudaCalibrate, QuickCalibrationOnTheDevice) {
  if (!haveCudaDevice())
    GTEST_SKIP() << "no CUDA device";
  CudaCalibrateOptions options;
  options.quick = true;
  CudaCalibration c;
  rt::Status s = calibrateCuda(options, c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(c.fp32Peak, 1e12) << cudaCalibrationTable(c); // any datacentre GPU: > 1 TFLOP/s
  EXPECT_GT(c.bf16Peak, c.fp32Peak) << cudaCalibrationTable(c);
  EXPECT_GT(c.copyBandwidth, 1e11) << cudaCalibrationTable(c);
  EXPECT_GT(c.launchOverhead, 0);
  EXPECT_LT(c.launchOverhead, 1e-4);
  EXPECT_GE(c.kernels.size(), 10u) << cudaCalibrationTable(c);
  for (const KernelClassRates &k : c.kernels)
    EXPECT_GT(k.fit.overhead + k.fit.nsPerElement, 0) << k.name;
  ClusterSpec back;
  rt::Status parsed = parseClusterSpecText(writeClusterSpec(specFromCudaCalibration(c, "gpu")),
                                           "spec", back);
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  std::printf("%s", cudaCalibrationTable(c).c_str());
}

} // namespace
} // namespace plait::cluster
