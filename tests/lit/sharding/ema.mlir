// The weight EMA (--ema-decay) on a sharded unit: one plait.weight_ema on the flat shard's new
// params, its average a shard laid out as the optimizer's states (pieces "<param>.ema", the
// names it has under ddp, so that checkpoints reshard it); under ddp, one per param.
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw ema-decay=0.999' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.9 ema-warmup=true' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=ZERO3
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd ema-decay=0.9' --plait-shard='world-size=2 strategy=ddp' | FileCheck %s --check-prefix=DDP

// ZERO2: plait.units = [{{.*}}name = "layers.0"{{.*}}states_per_param = 3 : i64}
// ZERO2: %[[STEP:.*]] = plait.hyper "step"
// ZERO2: %[[P:.*]], %{{.*}}, %{{.*}} = plait.adamw_update {{.*}} -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
// ZERO2-NEXT: plait.unshard %[[P]]
// ZERO2: %[[E:.*]] = plait.state "layers.0.ema" {plait.layout = {groups = [array<i64: 0, 1>], padded_numel = 12 : i64, pieces = [{name = "layers.0.weight.ema", offset = 0 : i64, shape = array<i64: 3, 3>}, {name = "layers.0.bias.ema", offset = 9 : i64, shape = array<i64: 3>}], unit = "layers.0"}} : tensor<6xf32>
// ZERO2-NEXT: %[[NEXT:.*]] = plait.weight_ema %[[P]], %[[E]], %[[STEP]] {decay = 0.998{{[0-9]+}} : f64} : (tensor<6xf32>, tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
// ZERO2: plait.state "layers.1.ema" {{.*}} : tensor<5xf32>
// ZERO2: plait.assign %[[E]], %[[NEXT]] : tensor<6xf32>
// ZERO2-NOT: plait.state "layers.0.weight.ema"

// zero3: the average of the param shard the update wrote.
// ZERO3: %[[P:.*]] = plait.sgd_update {{.*}} -> tensor<6xf32>
// ZERO3: plait.state "layers.0.ema" {{.*}} : tensor<6xf32>
// ZERO3-NEXT: plait.weight_ema %[[P]], {{.*}} {decay = 9.000000e-01 : f64, warmup = true}

// DDP-COUNT-3: plait.weight_ema {{.*}} {decay = 9.000000e-01 : f64} : (tensor<{{[0-9x]+}}xf32>,
// DDP-NOT: plait.weight_ema

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
