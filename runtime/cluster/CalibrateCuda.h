// plait-calibrate --device cuda: measures one CUDA device through plait's own CUDA kernels
// (GEMMs through cuBLASLt as plait-run calls them, device-to-device copy bandwidth, the time
// of a stream of tiny kernels, each kernel class's rate) and the cluster spec it makes, so
// that GPU predictions rest on measured rates instead of a datasheet's peaks. One device, one
// process: collectives between GPUs (NCCL) are not measured here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Status.h"
#include "runtime/cluster/Calibrate.h"
#include "runtime/cluster/ClusterSpec.h"

namespace plait::cluster {

struct CudaCalibrateOptions {
  int device = 0;     ///< the CUDA device index
  bool quick = false; ///< small sizes and few repetitions (tests)
};

struct CudaCalibration {
  std::string host, date, deviceName;
  int device = 0, major = 0, minor = 0; ///< index and compute capability
  uint64_t memoryBytes = 0;
  std::vector<GemmRate> fp32Gemms, bf16Gemms; ///< square n×n×n, through plait's matmul
  std::vector<GemmRate> modelGemms;           ///< bf16, the shapes of a width-1024 layer
  double fp32Peak = 0, bf16Peak = 0;          ///< FLOP/s: the best square GEMM of each
  double gemmEfficiency = 0;                  ///< modelGemms' rate / bf16Peak
  uint64_t copyBytes = 0;                     ///< per copy
  double copyBandwidth = 0;                   ///< bytes/s read + written, device to device
  double launchOverhead = 0;                  ///< seconds per kernel in a stream of tiny ones
  std::vector<KernelClassRates> kernels;      ///< classes with a CUDA kernel for each variant
  std::vector<std::string> skipped;           ///< "class: why", for the ones left out
};

/// Runs every measurement on `options.device`. Fails with "no CUDA device: ..." where there
/// is none (or plait was built without the CUDA toolkit).
rt::Status calibrateCuda(const CudaCalibrateOptions &options, CudaCalibration &out);

/// The cluster spec of one such device: the best square GEMMs as the fp32 and bf16 peaks,
/// the layer-shaped GEMMs' fraction as the GEMM efficiency, the copy bandwidth with memory
/// efficiency 1, the launch overhead, the measured kernel classes; one node of one device.
ClusterSpec specFromCudaCalibration(const CudaCalibration &calibration, const std::string &name);

/// What was measured, as a table for people (also written as comments above the spec).
std::string cudaCalibrationTable(const CudaCalibration &calibration);

} // namespace plait::cluster
