// libplait-cuda.so's entry point: the table the runtime's loader reads (CudaBackend.h).
#include "runtime/cuda/CudaBackend.h"

extern "C" const plait::rt::CudaBackendEntry *plait_cuda_backend_entry() {
  static const plait::rt::CudaBackendEntry entry{plait::rt::kCudaBackendAbi,
                                                 &plait::rt::cuda_backend::listDevices,
                                                 &plait::rt::cuda_backend::runPlanOnRank};
  return &entry;
}
