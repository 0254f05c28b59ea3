// --param-group 'REGEX:KEY=V,...': the matching params' updates take the group's betas, eps,
// momentum, weight decay, ... (a torch param group's own), the first matching group's; the
// others the optimizer's. plait-shard splits a unit whose params' updates differ into one
// unit per setting, each updated by one flat-shard update.
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=layers.0:betas=0.8/0.95,eps=1e-6;weight:weight_decay=0.1' | FileCheck %s --check-prefix=BUILD
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:betas=0.8/0.95' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=ZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9 param-groups=bias:momentum=0' | FileCheck %s --check-prefix=SGD
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=norm:eps=1e-6' 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd param-groups=bias:betas=0.8/0.9' 2>&1 | FileCheck %s --check-prefix=NOBETAS
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:betas=0.8' 2>&1 | FileCheck %s --check-prefix=BADBETAS
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:lr=0.1' 2>&1 | FileCheck %s --check-prefix=KEY
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias' 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=(:eps=1e-6' 2>&1 | FileCheck %s --check-prefix=BADRE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:momentum=0.9' 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw weight-decay=0.1 no-weight-decay=bias param-groups=bias:weight_decay=0.5' 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9 nesterov=true param-groups=bias:momentum=0' 2>&1 | FileCheck %s --check-prefix=NESTEROV
// RUN: not plait-opt %s --plait-build-train-step='optimizer=rmsprop param-groups=bias:alpha=1' 2>&1 | FileCheck %s --check-prefix=ALPHA
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:eps=nan' 2>&1 | FileCheck %s --check-prefix=NAN
// RUN: plait-opt %s --plait-build-train-step='optimizer=adagrad param-groups=bias:lr_decay=0.1,initial_accumulator_value=0.5' | FileCheck %s --check-prefix=ADAGRAD
// RUN: plait-opt %s --plait-build-train-step='optimizer=rmsprop param-groups=weight:alpha=0.9,momentum=0.5' | FileCheck %s --check-prefix=RMSPROP
// RUN: plait-opt %s --plait-build-train-step='optimizer=adam param-groups=bias:amsgrad=true' | FileCheck %s --check-prefix=AMSGRAD
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw amsgrad=true param-groups=bias:amsgrad=false' --plait-shard='world-size=2 strategy=zero3' | FileCheck %s --check-prefix=AMSOFF
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9 param-groups=bias:nesterov=true' | FileCheck %s --check-prefix=NESTEROVON
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd momentum=0.9 nesterov=true param-groups=bias:momentum=0,nesterov=false' | FileCheck %s --check-prefix=NESTEROVOFF
// RUN: plait-opt %s --plait-build-train-step='optimizer=rmsprop param-groups=weight:centered=1' | FileCheck %s --check-prefix=CENTERED
// RUN: plait-opt %s --plait-build-train-step='optimizer=nadam weight-decay=0.1 param-groups=weight:decoupled_weight_decay=True' | FileCheck %s --check-prefix=DECOUPLED
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb param-groups=bias:weight_decay=0,always_adapt=true,trust_clip=true' | FileCheck %s --check-prefix=LAMB
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd param-groups=bias:amsgrad=true' 2>&1 | FileCheck %s --check-prefix=NOAMS
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adam param-groups=bias:amsgrad=yes' 2>&1 | FileCheck %s --check-prefix=BADBOOL
// RUN: not plait-opt %s --plait-build-train-step='optimizer=sgd param-groups=bias:nesterov=true' 2>&1 | FileCheck %s --check-prefix=NESTEROVNOMOM
// RUN: plait-opt %s --plait-build-train-step='optimizer=adam param-groups=bias:maximize=true' | FileCheck %s --check-prefix=MAXIMIZE
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd maximize=true param-groups=layers.1:maximize=false' | FileCheck %s --check-prefix=MAXEXCEPT
// RUN: plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:maximize=true' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=MAXZERO2
// RUN: plait-opt %s --plait-build-train-step='optimizer=lamb weight-decay=0.1 param-groups=bias:maximize=true' --plait-shard='world-size=2 strategy=ddp clip-grad-norm=1' | FileCheck %s --check-prefix=MAXDDP
// RUN: plait-opt %s --plait-divide-batch='micro-batches=2' --plait-build-train-step='optimizer=sgd micro-batches=2 param-groups=bias:maximize=true' --plait-shard='world-size=2 strategy=zero2' | FileCheck %s --check-prefix=MAXMICRO
// RUN: plait-opt %s --plait-build-train-step='optimizer=sgd param-groups=bias:maximize=true' --plait-shard='world-size=2 strategy=ddp' --plait-insert-collectives --plait-schedule | FileCheck %s --check-prefix=MAXSCHEDULE
// RUN: not plait-opt %s --plait-build-train-step='optimizer=lion param-groups=bias:maximize=on' 2>&1 | FileCheck %s --check-prefix=MAXBOOL
// RUN: plait-opt %s --plait-build-train-step='optimizer=rprop param-groups=bias:etas=0.3/1.5,step_sizes=1e-4/0.5' | FileCheck %s --check-prefix=RPROP
// RUN: not plait-opt %s --plait-build-train-step='optimizer=rprop param-groups=bias:etas=0.5/1.0' 2>&1 | FileCheck %s --check-prefix=ETAS
// RUN: not plait-opt %s --plait-build-train-step='optimizer=rprop param-groups=bias:step_sizes=0.5/1e-4' 2>&1 | FileCheck %s --check-prefix=STEPSIZES
// RUN: not plait-opt %s --plait-build-train-step='optimizer=adamw param-groups=bias:etas=0.5/1.2' 2>&1 | FileCheck %s --check-prefix=NOETAS
// RUN: not plait-opt %s --plait-build-train-step='optimizer=rprop param-groups=bias:weight_decay=0.1' 2>&1 | FileCheck %s --check-prefix=RPROPDECAY
// RUN: plait-opt %s --plait-build-train-step='optimizer=asgd param-groups=bias:alpha=0.5,lambd=1e-3,t0=10' | FileCheck %s --check-prefix=ASGD
// RUN: not plait-opt %s --plait-build-train-step='optimizer=asgd param-groups=bias:t0=-1' 2>&1 | FileCheck %s --check-prefix=ASGDT0

// layers.0's weight and bias take the first group (its betas and eps); layers.1.weight the
// second (weight decay 0.1); the first match wins, so layers.0.weight keeps AdamW's 0.01.
// BUILD-LABEL: module attributes
// BUILD-SAME: param_groups = "layers.0:betas=0.8/0.95,eps=1e-6;weight:weight_decay=0.1"
// BUILD-DAG: plait.adamw_update {{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 9.9999999999999995E-7 : f64} : (tensor<3x3xf32>
// BUILD-DAG: plait.adamw_update {{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 9.9999999999999995E-7 : f64} : (tensor<3xf32>
// BUILD-DAG: plait.adamw_update {{.*}} {weight_decay = 1.000000e-01 : f64} : (tensor<3x3xf32>

// layers.0 splits into its weight (AdamW's betas, 9 elements) and its bias (the group's).
// ZERO2: name = "layers.0", numel = 9 : i64, padded_numel = 10 : i64, params = ["layers.0.weight"]
// ZERO2-SAME: name = "layers.0/1", numel = 3 : i64, padded_numel = 4 : i64, params = ["layers.0.bias"]
// ZERO2-DAG: plait.adamw_update {{.*}} {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64} : (tensor<2xf32>

// With SGD the bias without momentum has no momentum buffer; the weights keep theirs.
// SGD-DAG: plait.state "layers.0.weight.momentum_buffer"
// SGD-DAG: plait.state "layers.1.weight.momentum_buffer"
// SGD-NOT: plait.state "layers.0.bias.momentum_buffer"

// NONE: error: --param-group 'norm:eps=1e-6' matches no trainable param
// NOBETAS: error: --param-group 'bias:betas=0.8/0.9': the sgd optimizer has no betas
// BADBETAS: error: --param-group 'bias:betas=0.8': betas must be B1/B2 with 0 <= B < 1, got '0.8'
// KEY: error: --param-group 'bias:lr=0.1': unknown key 'lr' (expected betas=B1/B2, etas=MINUS/PLUS, step_sizes=MIN/MAX, eps, momentum, weight_decay, dampening, alpha, lr_decay, lambd, t0, initial_accumulator_value, rho, momentum_decay; true/false: nesterov, amsgrad, centered, decoupled_weight_decay, always_adapt, trust_clip, maximize; per-param learning rates are --lr-scale)
// FORM: error: --param-group 'bias': expected REGEX:KEY=V,... (keys betas=B1/B2, etas=MINUS/PLUS, step_sizes=MIN/MAX, eps, momentum, weight_decay, dampening, alpha, lr_decay, lambd, t0, initial_accumulator_value, rho, momentum_decay; true/false: nesterov, amsgrad, centered, decoupled_weight_decay, always_adapt, trust_clip, maximize)
// BADRE: error: --param-group '(:eps=1e-6': invalid regex:
// MOMENTUM: error: --param-group 'bias:momentum=0.9': the adamw optimizer has no momentum
// BOTH: error: 'plait.param' op matches --no-weight-decay 'bias' and --param-group 'bias:weight_decay=0.5', which sets its weight_decay: give it one
// NESTEROV: error: --param-group 'bias:momentum=0': nesterov needs momentum > 0 and zero dampening (or nesterov=false)
// NOAMS: error: --param-group 'bias:amsgrad=true': the sgd optimizer has no amsgrad
// BADBOOL: error: --param-group 'bias:amsgrad=yes': amsgrad must be true or false, got 'yes'
// NESTEROVNOMOM: error: --param-group 'bias:nesterov=true': nesterov needs momentum > 0 and zero dampening (or nesterov=false)
// MAXBOOL: error: --param-group 'bias:maximize=on': maximize must be true or false, got 'on'
// ALPHA: error: --param-group 'bias:alpha=1': alpha must be in [0, 1), got 1
// NAN: error: --param-group 'bias:eps=nan': eps must be a finite number, got nan
// ETAS: error: --param-group 'bias:etas=0.5/1.0': etas must be MINUS/PLUS with 0 < MINUS < 1 < PLUS, got '0.5/1.0'
// STEPSIZES: error: --param-group 'bias:step_sizes=0.5/1e-4': step_sizes must be MIN/MAX with 0 <= MIN <= MAX, got '0.5/1e-4'
// NOETAS: error: --param-group 'bias:etas=0.5/1.2': the adamw optimizer has no etas
// RPROPDECAY: error: --param-group 'bias:weight_decay=0.1': the rprop optimizer has no weight_decay
// ASGDT0: error: --param-group 'bias:t0=-1': t0 must be >= 0, got -1

// maximize: the group's params' updates read their gradients negated (torch negates them
// first thing in its step), the others' as they are; plait.train names the groups.
// MAXIMIZE-LABEL: module attributes
// MAXIMIZE-SAME: maximize_groups = "bias"
// MAXIMIZE: plait.adamw_update %{{.*}}, %[[GW0:[0-9]+]], {{.*}} : (tensor<3x3xf32>
// MAXIMIZE: %[[NEG:.*]] = plait.neg %[[GB0:[0-9]+]] {plait.maximize} : tensor<3xf32>
// MAXIMIZE-NEXT: plait.state "layers.0.bias.exp_avg"
// MAXIMIZE-NEXT: plait.state "layers.0.bias.exp_avg_sq"
// MAXIMIZE-NEXT: plait.adamw_update %{{.*}}, %[[NEG]], {{.*}} : (tensor<3xf32>
// MAXIMIZE-NOT: plait.neg
// With --maximize (a loss gradient of -1), a group's maximize=false negates its gradients
// back: exactly the loss's.
// MAXEXCEPT-LABEL: module attributes
// MAXEXCEPT-SAME: maximize = true, minimize_groups = "layers.1"
// MAXEXCEPT: plait.constant dense<-1.000000e+00>
// MAXEXCEPT: plait.sgd_update %{{.*}}, %{{[0-9]+}}, {{.*}} : (tensor<3x3xf32>
// MAXEXCEPT-NEXT: plait.sgd_update %{{.*}}, %{{[0-9]+}}, {{.*}} : (tensor<3xf32>
// MAXEXCEPT-NEXT: %[[NEG:.*]] = plait.neg %{{.*}} {plait.maximize} : tensor<3x3xf32>
// MAXEXCEPT-NEXT: plait.sgd_update %{{.*}}, %[[NEG]], {{.*}} : (tensor<3x3xf32>
// plait-shard reduces the gradient itself (the sum of negations is the negation of the sum)
// and negates the shard just before its update: the bias's unit is split from its weight's.
// MAXZERO2: name = "layers.0", numel = 9 : i64, padded_numel = 10 : i64, params = ["layers.0.weight"]
// MAXZERO2-SAME: name = "layers.0/1", numel = 3 : i64, padded_numel = 4 : i64, params = ["layers.0.bias"]
// MAXZERO2: %[[SHARD:.*]] = plait.sync_grad %{{.*}} {shard_groups = [array<i64: 0, 1>]} : tensor<4xf32> -> tensor<2xf32>
// MAXZERO2: %[[NEG:.*]] = plait.neg %[[SHARD]] : tensor<2xf32>
// MAXZERO2-NEXT: plait.adamw_update %{{.*}}, %[[NEG]], {{.*}} : (tensor<2xf32>
// MAXZERO2-NOT: plait.neg
// ddp with clipping: the norm of the averaged gradients as they are, the negation after the
// clipping's scaling and before LAMB's update reads it (its trust ratio sees the sign).
// MAXDDP: %[[SYNC:.*]] = plait.sync_grad %{{.*}} : tensor<3xf32> -> tensor<3xf32>
// MAXDDP: plait.mul %[[SYNC]], %[[SYNC]]
// MAXDDP: %[[CLIPPED:.*]] = plait.mul %[[SYNC]], %{{.*}} : (tensor<3xf32>, tensor<f32>)
// MAXDDP: %[[NEG:.*]] = plait.neg %[[CLIPPED]] : tensor<3xf32>
// MAXDDP-NEXT: plait.lamb_update %{{.*}}, %[[NEG]], {{.*}} : (tensor<3xf32>
// MAXDDP-NOT: plait.neg
// With micro-batches every unit still accumulates in shard; the bias's mean is negated.
// MAXMICRO: {accumulate_in_shard = true, {{.*}}name = "layers.0"
// MAXMICRO-SAME: {accumulate_in_shard = true, {{.*}}name = "layers.0/1"
// MAXMICRO-SAME: {accumulate_in_shard = true, {{.*}}name = "layers.1"
// MAXMICRO: %[[MEAN:.*]] = plait.div %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
// MAXMICRO: %[[NEG:.*]] = plait.neg %[[MEAN]] : tensor<2xf32>
// MAXMICRO-NEXT: plait.sgd_update %{{.*}}, %[[NEG]], {{.*}} : (tensor<2xf32>
// plait-schedule moves the negation with its update, to where its gradient is unpacked.
// MAXSCHEDULE: %[[REDUCED:.*]] = plait.all_reduce %{{.*}} : tensor<21xf32>
// MAXSCHEDULE-NEXT: %[[PIECES:.*]]:3 = plait.split %[[REDUCED]]
// MAXSCHEDULE-NEXT: %[[NEG:.*]] = plait.neg %[[PIECES]]#2 : tensor<3xf32>
// MAXSCHEDULE-NEXT: plait.sgd_update %{{.*}}, %[[NEG]], {{.*}} : (tensor<3xf32>

// ASGD's alpha (eta's power, no range above) is the key torch names it, as RMSprop's is.
// ASGD-DAG: plait.asgd_update {{.*}} {alpha = 5.000000e-01 : f64, lambd = 1.000000e-03 : f64, t0 = 1.000000e+01 : f64} : (tensor<3xf32>

// Rprop's pairs, as torch's etas and step_sizes: the bias's update takes the group's.
// RPROP-DAG: plait.rprop_update {{.*}} {etaminus = 3.000000e-01 : f64, etaplus = 1.500000e+00 : f64, step_size_max = 5.000000e-01 : f64, step_size_min = 1.000000e-04 : f64} : (tensor<3xf32>
// RPROP-DAG: plait.rprop_update {{.*}} : (tensor<3x3xf32>

// Every scalar hyper-parameter of the optimizer may be a group's own.
// ADAGRAD: plait.adagrad_update {{.*}} {initial_accumulator_value = 5.000000e-01 : f64, lr_decay = 1.000000e-01 : f64} : (tensor<3xf32>
// With RMSprop, a group's momentum adds that param's momentum buffer.
// RMSPROP-DAG: plait.state "layers.0.weight.momentum_buffer"
// RMSPROP-DAG: plait.rmsprop_update {{.*}} {alpha = 9.000000e-01 : f64, momentum = 5.000000e-01 : f64} : (tensor<3x3xf32>
// RMSPROP-NOT: plait.state "layers.0.bias.momentum_buffer"

// Switches too: a group's amsgrad adds that param's max_exp_avg_sq (Adam's L2 kept).
// AMSGRAD-DAG: plait.state "layers.0.bias.max_exp_avg_sq"
// AMSGRAD-DAG: plait.adamw_update {{.*}} {amsgrad = true, weight_decay = 0.000000e+00 : f64} : (tensor<3xf32>
// AMSGRAD-NOT: plait.state "layers.{{[01]}}.weight.max_exp_avg_sq"
// Turned off for the bias, whose unit is then split from its weight's (2 states, not 3).
// AMSOFF: name = "layers.0", numel = 9 : i64, padded_numel = 10 : i64, params = ["layers.0.weight"], placement = "zero3", precision = "fp32", states_per_param = 3 : i64
// AMSOFF-SAME: name = "layers.0/1", numel = 3 : i64, padded_numel = 4 : i64, params = ["layers.0.bias"], placement = "zero3", precision = "fp32", states_per_param = 2 : i64
// AMSOFF-DAG: name = "layers.0.weight.max_exp_avg_sq"
// AMSOFF-DAG: plait.adamw_update {{.*}} {amsgrad = true} : (tensor<5xf32>
// AMSOFF-DAG: plait.adamw_update {{[^{]*}} : (tensor<2xf32>
// AMSOFF-NOT: name = "layers.0.bias.max_exp_avg_sq"
// NESTEROVON-DAG: plait.sgd_update {{.*}} {momentum = 9.000000e-01 : f64, nesterov = true} : (tensor<3xf32>
// NESTEROVON-DAG: plait.sgd_update {{.*}} {momentum = 9.000000e-01 : f64} : (tensor<3x3xf32>
// NESTEROVOFF-DAG: plait.sgd_update {{.*}} : (tensor<3xf32>, tensor<3xf32>, tensor<f64>, tensor<f32>) ->
// NESTEROVOFF-DAG: plait.sgd_update {{.*}} {momentum = 9.000000e-01 : f64, nesterov = true} : (tensor<3x3xf32>
// CENTERED-DAG: plait.state "layers.0.weight.grad_avg"
// CENTERED-DAG: plait.state "layers.1.weight.grad_avg"
// CENTERED-NOT: plait.state "layers.0.bias.grad_avg"
// DECOUPLED-DAG: plait.nadam_update {{.*}} {decoupled_weight_decay = true, weight_decay = 1.000000e-01 : f64} : (tensor<3x3xf32>
// DECOUPLED-DAG: plait.nadam_update {{.*}} {weight_decay = 1.000000e-01 : f64} : (tensor<3xf32>
// LAMB-DAG: plait.lamb_update {{.*}} {always_adapt = true, trust_clip = true, weight_decay = 0.000000e+00 : f64} : (tensor<3xf32>
// LAMB-DAG: plait.lamb_update {{[^{]*}} : (tensor<3x3xf32>

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
