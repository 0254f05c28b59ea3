// Builds without the CUDA toolkit: plait-calibrate --device cuda has no device to measure.
#include "runtime/cluster/CalibrateCuda.h"

namespace plait::cluster {

rt::Status calibrateCuda(const CudaCalibrateOptions &, CudaCalibration &) {
  return rt::Status::error(
      "no CUDA device: this plait-calibrate was built without the CUDA toolkit");
}

} // namespace plait::cluster
