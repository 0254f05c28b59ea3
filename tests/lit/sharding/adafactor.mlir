// Adafactor on flat shards: each param's second moment is a row and a column of sums over
// its last two dimensions (or an element-wise average below rank 2), and its step is scaled
// by the RMS of the whole param and clipped by the RMS of the whole update, but a flat shard
// cuts params and rows apart. plait-shard keeps each param's second-moment states whole on
// every rank (the names and shapes ddp gives them) and shards exp_avg as AdamW's moments;
// the unit's update gets the params' lengths (segments), their rows and columns (factors;
// 0, 0 below rank 2) and its shard group. plait.adafactor_stats sums this rank's part of
// each param's squares and of its rows', columns' and elements' g^2 + eps1, an all_reduce
// completes them; plait.adafactor_norms sums u^2 from the new moments they give, another
// all_reduce completes it; the update reads both.
// RUN: plait-opt %s --plait-build-train-step='optimizer=adafactor adafactor-beta1=0.9' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=adafactor' --plait-shard='world-size=4 strategy=hsdp:2 clip-grad-norm=1.0' | FileCheck %s --check-prefix=HSDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adafactor' --plait-shard='world-size=2 strategy=ddp' | FileCheck %s --check-prefix=DDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adafactor' --plait-shard='world-size=2 strategy=zero3' --plait-insert-collectives --plait-group-updates | FileCheck %s --check-prefix=GROUP

// layers.0 (weight 3x3 factored + bias 3 = 12 elements, 6 per rank) and layers.1 (9, padded
// to 10): stats of 2 param sums + 3 rows + 3 columns + 3 bias elements, and of 1 + 3 + 3.
// The module's units (what --explain and the report read): exp_avg sharded (1 state per param), the moments whole.
// ZERO2: name = "layers.0", numel = 12 : i64, {{.*}}replicated_state_elements = 9 : i64, states_per_param = 1 : i64
// ZERO2: plait.state "layers.0.weight.exp_avg_sq_row" : tensor<3xf32>
// ZERO2: plait.state "layers.0.weight.exp_avg_sq_col" : tensor<3xf32>
// ZERO2: plait.state "layers.0.bias.exp_avg_sq" : tensor<3xf32>
// ZERO2: %[[M:.*]] = plait.state "layers.0.exp_avg" {plait.layout = {{.*}}pieces = [{name = "layers.0.weight.exp_avg", offset = 0 : i64, shape = array<i64: 3, 3>}, {name = "layers.0.bias.exp_avg", offset = 9 : i64, shape = array<i64: 3>}], unit = "layers.0"}} : tensor<6xf32>
// ZERO2-NEXT: %[[S:.*]] = plait.adafactor_stats %[[P:.*]], %[[G:.*]] {factors = array<i64: 3, 3, 0, 0>, groups = [array<i64: 0, 1>], segments = array<i64: 9, 3>} : (tensor<6xf32>, tensor<6xf32>) -> tensor<11xf64>
// ZERO2-NEXT: %[[SR:.*]] = plait.all_reduce %[[S]] {groups = [array<i64: 0, 1>]} : tensor<11xf64>
// ZERO2-NEXT: %[[N:.*]] = plait.adafactor_norms %[[P]], %[[G]], %{{.*}}, %[[SR]], %[[ROW:.*]], %[[COL:.*]], %[[V:.*]] {factors = array<i64: 3, 3, 0, 0>, groups = [array<i64: 0, 1>], segments = array<i64: 9, 3>} : (tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<11xf64>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2xf64>
// ZERO2-NEXT: %[[NR:.*]] = plait.all_reduce %[[N]] {groups = [array<i64: 0, 1>]} : tensor<2xf64>
// ZERO2-NEXT: plait.adafactor_update %[[P]], %[[G]], %{{.*}}, %{{.*}}, %[[M]], %[[ROW]], %[[COL]], %[[V]], %[[SR]], %[[NR]] {beta1 = 9.000000e-01 : f64, factors = array<i64: 3, 3, 0, 0>, groups = [array<i64: 0, 1>], segments = array<i64: 9, 3>} : (tensor<6xf32>, tensor<6xf32>, tensor<f64>, tensor<f32>, tensor<6xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<11xf64>, tensor<2xf64>) -> (tensor<6xf32>, tensor<6xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// ZERO2: plait.adafactor_stats {{.*}} {factors = array<i64: 3, 3>, groups = [array<i64: 0, 1>], segments = array<i64: 9>} : (tensor<5xf32>, tensor<5xf32>) -> tensor<7xf64>

// hsdp:2 on 4 ranks: the sums over the shard group only (each replica group holds the same
// shards); clipping scales the gradient the three ops read.
// HSDP: %[[G:.*]] = plait.mul %{{.*}}, %{{.*}} : (tensor<6xf32>, tensor<f32>) -> tensor<6xf32>
// HSDP: %[[S:.*]] = plait.adafactor_stats %{{.*}}, %[[G]] {factors = array<i64: 3, 3, 0, 0>, groups = [array<i64: 0, 1>, array<i64: 2, 3>], segments = array<i64: 9, 3>}
// HSDP-NEXT: %[[SR:.*]] = plait.all_reduce %[[S]] {groups = [array<i64: 0, 1>, array<i64: 2, 3>]}
// HSDP-NEXT: %[[N:.*]] = plait.adafactor_norms %{{.*}}, %[[G]], %{{.*}}, %[[SR]],
// HSDP-NEXT: %[[NR:.*]] = plait.all_reduce %[[N]] {groups = [array<i64: 0, 1>, array<i64: 2, 3>]}
// HSDP-NEXT: plait.adafactor_update %{{.*}}, %[[G]], {{.*}}, %[[SR]], %[[NR]]

// ddp: whole params on every rank, each update takes its own sums.
// DDP-NOT: plait.adafactor_stats
// DDP-COUNT-3: plait.adafactor_update {{.*}} : (tensor<{{[0-9x]+}}xf32>, tensor<{{[0-9x]+}}xf32>, tensor<f64>, tensor<f32>, tensor<{{[0-9x]+}}xf32>{{(, tensor<3xf32>)?}}) ->

// The units' updates stand alone (plait-group-updates leaves Adafactor's).
// GROUP-NOT: grouped_update
// GROUP-COUNT-2: plait.adafactor_update

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
