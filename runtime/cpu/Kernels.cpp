// registerCpuKernels(): the one place that lists every CPU kernel family.
#include "runtime/Kernel.h"
#include "runtime/cpu/KernelFamilies.h"

namespace plait::rt {

void registerCpuKernels() {
  cpu::registerUnaryKernels();
  cpu::registerFusedKernels();
  cpu::registerBinaryKernels();
  cpu::registerReductionKernels();
  cpu::registerNormalizationKernels();
  cpu::registerAttentionKernels();
  cpu::registerLinalgKernels();
  cpu::registerConvKernels();
  cpu::registerPoolKernels();
  cpu::registerMovementKernels();
  cpu::registerIndexingKernels();
  cpu::registerCastKernels();
  cpu::registerLossKernels();
  cpu::registerGradKernels();
  cpu::registerOptimizerKernels();
  cpu::registerRandomKernels();
}

} // namespace plait::rt
