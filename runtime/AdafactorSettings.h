// adafactor_update's attributes (ir/PlaitTrainOps.td), as both backends' kernels read them:
// runtime/cpu/AdafactorKernels.cpp (readAdafactorLayout) fills them and the CUDA kernel
// (runtime/cuda/kernels/Adafactor.cu) takes them as they are. Plain data, no CUDA.
#pragma once

namespace plait::rt {

struct AdafactorSettings {
  double eps1 = 1e-30, eps2 = 1e-3, clipThreshold = 1, decayRate = -0.8, weightDecay = 0;
  bool firstMoment = false;   // beta1 given: an exp_avg state
  double beta1 = 0;           // its beta1 (0 without)
  bool scaleParameter = true; // the step size times max(eps2, rms(param))
  bool relativeStep = false, warmupInit = false;
};

} // namespace plait::rt
