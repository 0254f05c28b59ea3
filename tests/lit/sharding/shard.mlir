// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw' --plait-shard='world-size=2 strategy=ddp' | FileCheck %s --check-prefix=DDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw' --plait-shard='world-size=2 strategy=zero1' | FileCheck %s --check-prefix=ZERO1
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw' --plait-shard='world-size=2 strategy=fsdp' | FileCheck %s --check-prefix=FSDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw' --plait-shard='world-size=2 strategy=zero3 reshard-after-forward=false' | FileCheck %s --check-prefix=KEEP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adam weight-decay=0.1' --plait-shard='world-size=2 strategy=zero1' | FileCheck %s --check-prefix=ADAM
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9' --plait-shard='world-size=4 strategy=hsdp:2' | FileCheck %s --check-prefix=HSDP
// RUN: plait-opt %s --plait-build-train-step='optimizer=rmsprop centered=true momentum=0.9' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=RMSPROP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adagrad lr-decay=0.5' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=ADAGRAD
// RUN: plait-opt %s --plait-build-train-step='optimizer=adam amsgrad=true' --plait-shard='world-size=2 strategy=zero1' | FileCheck %s --check-prefix=AMSGRAD
// RUN: plait-opt %s --plait-build-train-step='optimizer=lion' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=LION
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamax weight-decay=0.1' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ADAMAX
// RUN: plait-opt %s --plait-build-train-step='optimizer=adadelta' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=ADADELTA
// RUN: plait-opt %s --plait-build-train-step='optimizer=rprop etaplus=1.5' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=RPROP
// RUN: plait-opt %s --plait-build-train-step='optimizer=asgd t0=5' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=ASGD
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp placement=layers\.1=ddp' | FileCheck %s --check-prefix=MIXED
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=zero2 unit-size=40' | FileCheck %s --check-prefix=SIZE
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp placement=layers\.1=ddp clip-grad-norm=1.0' | FileCheck %s --check-prefix=CLIP
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp placement=layers\.1=ddp clip-grad-value=0.5 clip-grad-norm=1.0' | FileCheck %s --check-prefix=CLIPVALUE
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp placement=layers\.1=ddp clip-grad-norm=1.0 clip-grad-norm-type=inf' | FileCheck %s --check-prefix=CLIPINF
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd' --plait-shard='world-size=2 strategy=fsdp placement=layers\.1=ddp log-grad-norm=true' | FileCheck %s --check-prefix=LOGNORM

// Two units by name (layers.0: weight + bias = 12 elements; layers.1: 9 elements, padded
// to 10 for two ranks), recorded on the module.
// DDP: plait.units = [{{.*}}name = "layers.0", numel = 12 : i64, padded_numel = 12 : i64, params = ["layers.0.weight", "layers.0.bias"], placement = "ddp"
// DDP-SAME: name = "layers.1", numel = 9 : i64, padded_numel = 9 : i64
// DDP-SAME: plait.world_size = 2 : i64
// ddp: each gradient is averaged over both ranks right where it is produced; params and
// per-param optimizer state stay whole.
// DDP: %[[DW1:.*]] = plait.matmul %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<3x3xf32>
// DDP-NEXT: %[[S1:.*]] = plait.sync_grad %[[DW1]] {replica_groups = [array<i64: 0, 1>]} : tensor<3x3xf32> -> tensor<3x3xf32>
// DDP-COUNT-2: plait.sync_grad
// DDP-NOT: plait.sync_grad
// DDP: plait.state "layers.0.weight.exp_avg" : tensor<3x3xf32>
// DDP: plait.adamw_update %{{.*}}, %[[S1]]
// DDP-NOT: plait.unshard

// zero1: the whole flat gradient waits for the end of backward, the optimizer updates this
// rank's half of the flat params, and an unshard rebuilds them.
// ZERO1: %[[W1:.*]] = plait.param "layers.1.weight"
// ZERO1: %[[G1:.*]] = plait.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
// ZERO1-NEXT: %[[GS1:.*]] = plait.sync_grad %[[G1]] {shard_groups = [array<i64: 0, 1>]} : tensor<10xf32> -> tensor<5xf32>
// ZERO1-NEXT: plait.reshape %[[W1]]
// ZERO1: %[[PS1:.*]] = plait.local_shard %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<10xf32> -> tensor<5xf32>
// ZERO1: plait.hyper "lr"
// ZERO1: plait.state "layers.1.exp_avg" {plait.layout = {groups = [array<i64: 0, 1>], padded_numel = 10 : i64, pieces = [{name = "layers.1.weight.exp_avg", offset = 0 : i64, shape = array<i64: 3, 3>}], unit = "layers.1"}} : tensor<5xf32>
// ZERO1: %[[NEW:.*]], %{{.*}}, %{{.*}} = plait.adamw_update %[[PS1]], %[[GS1]]
// ZERO1-NEXT: %[[WHOLE:.*]] = plait.unshard %[[NEW]] {groups = [array<i64: 0, 1>]} : tensor<5xf32> -> tensor<10xf32>
// ZERO1-NEXT: %[[PIECES:.*]]:2 = plait.split %[[WHOLE]] {axis = 0 : i64, sizes = array<i64: 9, 1>}
// ZERO1-NEXT: %[[W1NEW:.*]] = plait.reshape %[[PIECES]]#0
// ZERO1: plait.assign %[[W1]], %[[W1NEW]] : tensor<3x3xf32>
// ZERO1-NOT: plait.state "layers.1.weight
// Adam's flat shard update keeps its gradient's L2 term and no decoupled decay.
// ADAM: plait.adamw_update %{{.*}} {{{.*}}l2 = 1.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<5xf32>

// RMSprop's, Adagrad's, AMSGrad's, Lion's, Adamax's, Adadelta's and Rprop's states shard as AdamW's moments do: one flat shard per state, named
// as torch names it, updated by the unit's one update with the op's settings.
// RMSPROP: plait.state "layers.1.square_avg" {plait.layout = {{.*}}name = "layers.1.weight.square_avg"{{.*}}} : tensor<5xf32>
// RMSPROP-NEXT: plait.state "layers.1.grad_avg" {plait.layout = {{.*}}name = "layers.1.weight.grad_avg"{{.*}}} : tensor<5xf32>
// RMSPROP-NEXT: plait.state "layers.1.momentum_buffer" {plait.layout = {{.*}}name = "layers.1.weight.momentum_buffer"{{.*}}} : tensor<5xf32>
// RMSPROP: %{{.*}}, %[[NEW:.*]]:3 = plait.rmsprop_update %{{.*}} {centered = true, momentum = 9.000000e-01 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// RMSPROP-NOT: plait.state "layers.1.weight.
// LION: plait.state "layers.1.exp_avg" {plait.layout = {{.*}}name = "layers.1.weight.exp_avg"{{.*}}} : tensor<5xf32>
// LION: plait.lion_update %{{.*}} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)
// ADAMAX: plait.state "layers.1.exp_avg" {plait.layout = {{.*}}name = "layers.1.weight.exp_avg"{{.*}}} : tensor<5xf32>
// ADAMAX-NEXT: plait.state "layers.1.exp_inf" {plait.layout = {{.*}}name = "layers.1.weight.exp_inf"{{.*}}} : tensor<5xf32>
// ADAMAX-NEXT: plait.adamax_update %{{.*}} {weight_decay = 1.000000e-01 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// ADADELTA: plait.state "layers.1.square_avg" {plait.layout = {{.*}}name = "layers.1.weight.square_avg"{{.*}}} : tensor<5xf32>
// ADADELTA-NEXT: plait.state "layers.1.acc_delta" {plait.layout = {{.*}}name = "layers.1.weight.acc_delta"{{.*}}} : tensor<5xf32>
// ADADELTA-NEXT: plait.adadelta_update %{{.*}} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// RPROP: plait.state "layers.1.prev" {plait.layout = {{.*}}name = "layers.1.weight.prev"{{.*}}} : tensor<5xf32>
// RPROP-NEXT: plait.state "layers.1.step_size" {plait.layout = {{.*}}name = "layers.1.weight.step_size"{{.*}}} : tensor<5xf32>
// ASGD: plait.state "layers.1.ax" {plait.layout = {{.*}}name = "layers.1.weight.ax"{{.*}}} : tensor<5xf32>
// ASGD: plait.asgd_update %{{.*}} {t0 = 5.000000e+00 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)
// RPROP-NEXT: plait.rprop_update %{{.*}} {etaplus = 1.500000e+00 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// ADAGRAD: plait.state "layers.1.sum" {plait.layout = {{.*}}name = "layers.1.weight.sum"{{.*}}} : tensor<5xf32>
// AMSGRAD: plait.state "layers.1.max_exp_avg_sq" {plait.layout = {{.*}}name = "layers.1.weight.max_exp_avg_sq"{{.*}}} : tensor<5xf32>
// AMSGRAD: plait.adamw_update %{{.*}} {amsgrad = true, weight_decay = 0.000000e+00 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// ADAGRAD: plait.adagrad_update %{{.*}} {lr_decay = 5.000000e-01 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<f64>, tensor<f32>, tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>)

// zero2: the same, but the gradient is reduced as soon as the unit's gradients exist,
// before the backward of layers.0 runs.
// ZERO2: %[[G1:.*]] = plait.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
// ZERO2-NEXT: plait.sync_grad %[[G1]] {shard_groups = [array<i64: 0, 1>]} : tensor<10xf32> -> tensor<5xf32>
// ZERO2: plait.greater
// ZERO2: plait.sync_grad %{{.*}} {shard_groups = [array<i64: 0, 1>]} : tensor<12xf32> -> tensor<6xf32>
// ZERO2: plait.local_shard
// ZERO2: plait.hyper "lr"

// fsdp: params live as shards; the forward gathers each unit right before its first use,
// the backward gathers again; the update writes the shard.
// FSDP-DAG: %[[S1:.*]] = plait.param_shard "layers.1" {groups = [array<i64: 0, 1>], padded_numel = 10 : i64, pieces = [{init = "normal:0.5", name = "layers.1.weight", offset = 0 : i64, shape = array<i64: 3, 3>}]} : tensor<5xf32>
// FSDP-DAG: %[[S0:.*]] = plait.param_shard "layers.0" {{.*}}padded_numel = 12 : i64, pieces = [{{.*}}name = "layers.0.weight", offset = 0 : i64{{.*}}name = "layers.0.bias", offset = 9 : i64{{.*}} : tensor<6xf32>
// FSDP-NOT: plait.param "
// FSDP: plait.unshard %[[S0]]
// FSDP: plait.gemm
// FSDP: plait.unshard %[[S1]]
// FSDP: plait.softmax_cross_entropy
// FSDP: plait.unshard %[[S1]]
// FSDP: %[[NEW:.*]], %{{.*}}, %{{.*}} = plait.adamw_update %[[S0]]
// FSDP: plait.assign %[[S0]], %[[NEW]] : tensor<6xf32>

// Without resharding, the forward's gather serves the backward too.
// KEEP-COUNT-2: plait.unshard
// KEEP-NOT: plait.unshard

// hsdp:2 on 4 ranks: shards inside {0,1} and {2,3}; the gradient shard is also averaged
// across the groups ({0,2} and {1,3}). SGD momentum state is shard-sized.
// HSDP: plait.param_shard "layers.1" {groups = [array<i64: 0, 1>, array<i64: 2, 3>], padded_numel = 10 : i64
// HSDP: plait.sync_grad %{{.*}} {replica_groups = [array<i64: 0, 2>, array<i64: 1, 3>], shard_groups = [array<i64: 0, 1>, array<i64: 2, 3>]} : tensor<10xf32> -> tensor<5xf32>
// HSDP: plait.state "layers.1.momentum_buffer" {plait.layout = {groups = [array<i64: 0, 1>, array<i64: 2, 3>], padded_numel = 10 : i64, pieces = [{name = "layers.1.weight.momentum_buffer", offset = 0 : i64, shape = array<i64: 3, 3>}], unit = "layers.1"}} : tensor<5xf32>

// A mixed plan: layers.1 ddp, layers.0 fsdp.
// MIXED: placement = "fsdp"
// MIXED-SAME: placement = "ddp"
// MIXED: plait.param_shard "layers.0"
// MIXED: plait.param "layers.1.weight"
// MIXED: plait.sync_grad %{{.*}} {replica_groups = [array<i64: 0, 1>]} : tensor<3x3xf32>

// Clipping on two ranks: the norm is of the averaged gradients. The ddp gradient is whole on
// every rank; the fsdp unit's shard squares are summed over its shard group first.
// CLIP: plait.train = {clip_grad_norm = 1.000000e+00 : f64
// CLIP: %[[SQ0:.*]] = plait.reduce_sum
// CLIP: %[[SQ1:.*]] = plait.reduce_sum
// CLIP: %[[PART:.*]] = plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<f32>
// CLIP-NEXT: %[[TOTAL:.*]] = plait.add %{{.*}}, %[[PART]]
// CLIP-NEXT: %[[NORM:.*]] = plait.sqrt %[[TOTAL]]
// CLIP: %[[COEF:.*]] = plait.min
// CLIP-COUNT-2: plait.mul %{{.*}}, %[[COEF]]
// CLIP: plait.sgd_update

// Value clipping on two ranks: each averaged gradient (the fsdp unit's shard, the ddp one
// whole) clamped, then the norm of the clamped ones, the shard's squares still summed over
// its shard group.
// log-grad-norm: the averaged gradients' norm (a shard's squares all-reduced) becomes the
// step's grad_norm output; nothing is scaled.
// LOGNORM: plait.train = {clip_grad_norm = 0.000000e+00 : f64, log_grad_norm = true
// LOGNORM-LABEL: func.func @main
// LOGNORM-SAME: -> (tensor<f32> {plait.name = "loss"}, tensor<f32> {plait.name = "grad_norm"})
// LOGNORM: %[[PART:.*]] = plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<f32>
// LOGNORM-NEXT: %[[TOTAL:.*]] = plait.add %{{.*}}, %[[PART]]
// LOGNORM-NEXT: %[[NORM:.*]] = plait.sqrt %[[TOTAL]]
// LOGNORM-NOT: plait.min
// LOGNORM: return %{{.*}}, %[[NORM]] : tensor<f32>, tensor<f32>

// The infinity norm on shards: no max all-reduce; each rank's largest |g| of its shard is
// all-gathered over the shard group and their max taken, then the max with the whole
// (ddp) gradients' largest |g|.
// CLIPINF: plait.train = {clip_grad_norm = 1.000000e+00 : f64, clip_grad_norm_type = "inf"
// CLIPINF: %[[WM:.*]] = plait.reduce_max %{{.*}} : (tensor<3x3xf32>) -> tensor<f32>
// CLIPINF: %[[SA:.*]] = plait.abs %{{.*}} : tensor<6xf32>
// CLIPINF-NEXT: %[[SM:.*]] = plait.reduce_max %[[SA]]
// CLIPINF-NEXT: %[[ONE:.*]] = plait.reshape %[[SM]] : (tensor<f32>) -> tensor<1xf32>
// CLIPINF-NEXT: %[[ALL:.*]] = plait.all_gather %[[ONE]] {groups = [array<i64: 0, 1>]} : tensor<1xf32> -> tensor<2xf32>
// CLIPINF-NEXT: %[[GM:.*]] = plait.reduce_max %[[ALL]]
// CLIPINF-NEXT: plait.max %[[WM]], %[[GM]]
// CLIPINF-NOT: plait.all_reduce
// CLIPINF: %[[COEF:.*]] = plait.min
// CLIPINF-COUNT-2: plait.mul %{{.*}}, %[[COEF]]
// CLIPINF: plait.sgd_update

// CLIPVALUE: plait.train = {clip_grad_norm = 1.000000e+00 : f64, clip_grad_value = 5.000000e-01 : f64
// CLIPVALUE: %[[WHOLE:.*]] = plait.sync_grad %{{.*}} {replica_groups = [array<i64: 0, 1>]} : tensor<3x3xf32>
// CLIPVALUE: %[[SHARD:.*]] = plait.sync_grad %{{.*}} {shard_groups = [array<i64: 0, 1>]} : tensor<12xf32> -> tensor<6xf32>
// CLIPVALUE-DAG: %[[C0:.*]] = plait.clamp %[[SHARD]] {max = 5.000000e-01 : f64, min = -5.000000e-01 : f64} : tensor<6xf32>
// CLIPVALUE-DAG: %[[C1:.*]] = plait.clamp %[[WHOLE]] {max = 5.000000e-01 : f64, min = -5.000000e-01 : f64} : tensor<3x3xf32>
// CLIPVALUE: plait.all_reduce %{{.*}} {groups = [array<i64: 0, 1>]} : tensor<f32>
// CLIPVALUE: plait.sgd_update

// --unit-size 40: params in first-use order until a unit holds 40 bytes.
// SIZE: name = "unit0", {{.*}}params = ["layers.0.weight", "layers.0.bias"]
// SIZE-SAME: name = "unit1", {{.*}}params = ["layers.1.weight"]
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
