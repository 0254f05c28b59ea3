// The emulated CUDA backend's kernels are those of plait's own device code (runtime/cuda/
// kernels/*.cu behind runtime/cuda/Cuda*Kernels.cpp). The library kernels (matmul and gemm
// through cuBLASLt, the convolutions through cuDNN, fused_elementwise through the driver's
// module of generated code) need those libraries and a device: they are not registered here
// (the device tests and tests/gpu/run.sh run them).
#include "runtime/cuda/CudaKernelSupport.h"

namespace plait::rt {

void registerCudaLibraryKernels() {}

} // namespace plait::rt
