// Stands in for CUDA's <cuda_runtime_api.h> when runtime/cuda/kernels/*.cu are compiled for the host
// (tests/cuda_emulation).
#pragma once
#include "tests/cuda_emulation/Emulation.h"
