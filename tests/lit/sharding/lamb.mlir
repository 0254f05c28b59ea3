// LAMB on flat shards: each param's trust ratio needs its norms over the whole param, but a
// flat shard cuts params apart. plait-shard gives the unit's update the params' lengths in
// the flat buffer (segments) and its shard group; plait.lamb_norms sums this rank's part of
// each segment, an all_reduce over the group completes them, and the update reads them.
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb' --plait-shard='world-size=4 strategy=hsdp:2 clip-grad-norm=1.0' | FileCheck %s --check-prefix=HSDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb weight-decay=0.1 no-weight-decay=bias' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=NODECAY
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb' --plait-shard='world-size=2 strategy=ddp' | FileCheck %s --check-prefix=DDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb' --plait-shard='world-size=2 strategy=zero2' --plait-insert-collectives --plait-group-updates | FileCheck %s --check-prefix=GROUP

// layers.0 (weight 9 + bias 3 = 12 elements, 6 per rank) and layers.1 (9, padded to 10).
// ZERO2: %[[N0:.*]] = plait.lamb_norms %{{.*}} {groups = [array<i64: 0, 1>], segments = array<i64: 9, 3>} : (tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x2xf32>
// ZERO2-NEXT: %[[R0:.*]] = plait.all_reduce %[[N0]] {groups = [array<i64: 0, 1>]} : tensor<2x2xf32>
// ZERO2-NEXT: plait.lamb_update %{{.*}}, %[[R0]] {groups = [array<i64: 0, 1>], segments = array<i64: 9, 3>} : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>, tensor<6xf32>, tensor<2x2xf32>)
// ZERO2: plait.lamb_norms {{.*}} segments = array<i64: 9>} : {{.*}} -> tensor<1x2xf32>

// hsdp:2 on 4 ranks: the norms are summed over the shard group only (each replica group
// holds the same shards); clipping scales the gradient both ops read.
// HSDP: %[[G:.*]] = plait.mul %{{.*}}, %{{.*}} : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
// HSDP: %[[N:.*]] = plait.lamb_norms %{{.*}}, %[[G]], {{.*}} {groups = [array<i64: 0, 1>, array<i64: 2, 3>], segments = array<i64: 9, 3>}
// HSDP-NEXT: %[[R:.*]] = plait.all_reduce %[[N]] {groups = [array<i64: 0, 1>, array<i64: 2, 3>]}
// HSDP-NEXT: plait.lamb_update %{{.*}}, %[[G]], {{.*}}, %[[R]]

// --no-weight-decay: the bias units take no trust ratio (timm: decay 0, no adaptation), so
// they need no norms; the decayed weights' units do.
// NODECAY: plait.lamb_norms {{.*}} {groups = [array<i64: 0, 1>], segments = array<i64: 9>, weight_decay = 1.000000e-01 : f64}
// NODECAY: plait.lamb_update {{.*}} {weight_decay = 0.000000e+00 : f64} : (tensor<2xf32>, tensor<2xf32>, tensor<f64>, tensor<f32>, tensor<2xf32>, tensor<2xf32>) ->
// NODECAY: plait.lamb_norms {{.*}} segments = array<i64: 9>, weight_decay = 1.000000e-01 : f64}
// NODECAY-NOT: plait.lamb_norms

// ddp: whole params on every rank, each update takes its own norms.
// DDP-NOT: plait.lamb_norms
// DDP-COUNT-3: plait.lamb_update {{.*}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>, tensor<f64>, tensor<f32>, tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>) ->

// Two units of the same layout would share attributes; their updates still stand alone.
// GROUP-NOT: grouped_update
// GROUP-COUNT-2: plait.lamb_update

func.func @main(%x: tensor<4x3xf32> {plait.name = "x"}, %y: tensor<4xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}) {
  %w0 = plait.param "layers.0.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %b0 = plait.param "layers.0.bias" {init = "zeros"} : tensor<3xf32>
  %w1 = plait.param "layers.1.weight" {init = "normal:0.5"} : tensor<3x3xf32>
  %h = plait.gemm %x, %w0, %b0 {trans_b = true} : (tensor<4x3xf32>, tensor<3x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %r = plait.relu %h : tensor<4x3xf32>
  %o = plait.matmul %r, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %l = plait.softmax_cross_entropy %o, %y : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}
