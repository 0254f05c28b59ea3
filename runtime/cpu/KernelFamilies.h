// Registration entry points of the CPU kernel families (one source file each).
#pragma once

namespace plait::rt::cpu {

void registerUnaryKernels();         // exp, log, ..., gelu, clamp, not   (UnaryKernels.cpp)
void registerBinaryKernels();        // add, ..., comparisons, logic, where (BinaryKernels.cpp)
void registerReductionKernels();     // reduce_*, argmax, argmin          (ReductionKernels.cpp)
void registerNormalizationKernels(); // softmax, log_softmax, layer_norm, rms_norm and grads
void registerAttentionKernels();     // attention, attention_grad         (AttentionKernels.cpp)
void registerLinalgKernels();        // matmul, gemm                      (LinalgKernels.cpp)
void registerConvKernels();          // conv2d                            (ConvKernels.cpp)
void registerPoolKernels();          // max_pool2d, avg_pool2d            (PoolKernels.cpp)
void registerMovementKernels();      // reshape, ..., local_shard       (MovementKernels.cpp)
void registerIndexingKernels();      // gather, trilu                     (IndexingKernels.cpp)
void registerCastKernels();          // cast                              (CastKernels.cpp)
void registerLossKernels();          // the two losses and their grads    (LossKernels.cpp)
void registerGradKernels();          // gather_grad, conv2d/pool grads    (GradKernels.cpp)
void registerFusedKernels();         // fused_elementwise                 (FusedKernels.cpp)
void registerOptimizerKernels();     // *_update, grouped_update          (OptimizerKernels.cpp)
void registerRandomKernels();        // dropout_mask                      (RandomKernels.cpp)

} // namespace plait::rt::cpu
