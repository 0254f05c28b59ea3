// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=ddp' --plait-insert-collectives='bucket-bytes=64' | FileCheck %s --check-prefix=BUCKET
// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=ddp' --plait-insert-collectives | FileCheck %s --check-prefix=ONE
// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp' --plait-insert-collectives='prefetch=1' | FileCheck %s --check-prefix=PREFETCH
// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp' --plait-insert-collectives='prefetch=0' | FileCheck %s --check-prefix=NOPREFETCH
// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=4 strategy=hsdp:2' --plait-insert-collectives | FileCheck %s --check-prefix=HSDP
// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=zero1' --plait-insert-collectives | FileCheck %s --check-prefix=ZERO1
// RUN: plait-opt %S/shard.mlir --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp' --plait-insert-collectives --plait-verify-collectives | FileCheck %s --check-prefix=PREFETCH

// The loss is averaged over the ranks right where it is computed.
// BUCKET: %[[L:.*]] = plait.softmax_cross_entropy
// BUCKET-NEXT: %[[LM:.*]] = plait.all_reduce %[[L]] {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<f32>
// 64-byte buckets in gradient order: layers.1.weight (36 bytes) alone, as soon as it exists;
// then layers.0.weight + layers.0.bias (48 bytes) packed into one flat all-reduce, unpacked
// just before the optimizer.
// BUCKET: %[[DW1:.*]] = plait.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
// BUCKET-NEXT: %[[R1:.*]] = plait.all_reduce %[[DW1]] {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<3x3xf32>
// BUCKET: %[[FLAT:.*]] = plait.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<9xf32>, tensor<3xf32>) -> tensor<12xf32>
// BUCKET-NEXT: %[[R0:.*]] = plait.all_reduce %[[FLAT]] {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<12xf32>
// BUCKET-NEXT: plait.hyper "lr"
// BUCKET-NEXT: plait.hyper "step"
// BUCKET-NEXT: plait.split %[[R0]] {axis = 0 : i64, sizes = array<i64: 9, 3>}
// BUCKET: plait.sgd_update %{{.*}}, %[[R1]]
// BUCKET: return %[[LM]] : tensor<f32>

// The default 25 MiB bucket holds all three gradients.
// ONE: plait.all_reduce %{{.*}} : tensor<f32>
// ONE: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<21xf32>
// ONE-NOT: plait.all_reduce

// fsdp with prefetch 1: the forward gather of layers.1 starts before layers.0's compute
// (right after layers.0's gather); the backward needs only layers.1's weight again
// (layers.0's input is the data), and each unit's gradient is reduce-scattered as soon as it
// exists.
// PREFETCH: %[[G0:.*]] = plait.all_gather %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<6xf32> -> tensor<12xf32>
// PREFETCH-NEXT: %[[G1:.*]] = plait.all_gather %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<5xf32> -> tensor<10xf32>
// PREFETCH-NEXT: plait.split %[[G0]]
// PREFETCH: plait.gemm
// PREFETCH: plait.split %[[G1]]
// PREFETCH: plait.softmax_cross_entropy_grad
// PREFETCH-NEXT: %[[B1:.*]] = plait.all_gather %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<5xf32> -> tensor<10xf32>
// PREFETCH-NEXT: plait.split %[[B1]]
// PREFETCH-NOT: plait.all_gather
// PREFETCH: plait.reduce_scatter %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<10xf32> -> tensor<5xf32>
// PREFETCH: plait.reduce_scatter %{{.*}} {groups = [array<i64: 0, 1>], reduce = "mean"} : tensor<12xf32> -> tensor<6xf32>

// Without prefetch each gather starts right before its unit needs it.
// NOPREFETCH: %[[G0:.*]] = plait.all_gather %{{.*}} : tensor<6xf32> -> tensor<12xf32>
// NOPREFETCH-NEXT: plait.split %[[G0]]
// NOPREFETCH: plait.relu
// NOPREFETCH-NEXT: %[[G1:.*]] = plait.all_gather %{{.*}} : tensor<5xf32> -> tensor<10xf32>
// NOPREFETCH-NEXT: plait.split %[[G1]]

// hsdp:2: reduce-scatter inside each pair, then all-reduce of the shard across pairs.
// HSDP: %[[RS:.*]] = plait.reduce_scatter %{{.*}} {groups = [array<i64: 0, 1>, array<i64: 2, 3>], reduce = "mean"} : tensor<10xf32> -> tensor<5xf32>
// HSDP-NEXT: plait.all_reduce %[[RS]] {groups = [array<i64: 0, 2>, array<i64: 1, 3>], reduce = "mean"} : tensor<5xf32>

// zero1: reduce-scatter at the end of backward, all-gather of the updated params after
// the optimizer.
// ZERO1: plait.reduce_scatter
// ZERO1-NOT: plait.matmul
// ZERO1: plait.sgd_update
// ZERO1: plait.all_gather
// ZERO1: plait.assign
