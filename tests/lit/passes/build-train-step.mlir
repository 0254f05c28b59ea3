// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd momentum=0.9' %s | FileCheck %s --check-prefix=SGD
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adamw lr=0.003' %s | FileCheck %s --check-prefix=ADAMW
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd freeze=bias$ clip-grad-norm=1.0' %s | FileCheck %s --check-prefix=FREEZE
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd freeze=bias$ clip-grad-value=0.5 clip-grad-norm=1.0' %s | FileCheck %s --check-prefix=CLIPVALUE
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd freeze=bias$ clip-grad-norm=1.0 clip-grad-norm-type=3' %s | FileCheck %s --check-prefix=CLIP3
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd freeze=bias$ clip-grad-norm=1.0 clip-grad-norm-type=inf' %s | FileCheck %s --check-prefix=CLIPINF
// RUN: not plait-opt --split-input-file --plait-build-train-step='clip-grad-norm=1.0 clip-grad-norm-type=-2' %s 2>&1 | FileCheck %s --check-prefix=NORMTYPE
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd freeze=bias$ log-grad-norm=true' %s | FileCheck %s --check-prefix=LOGNORM
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adam weight-decay=0.05' %s | FileCheck %s --check-prefix=ADAM
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adam' %s | FileCheck %s --check-prefix=ADAM0
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adagrad lr-decay=0.1' %s | FileCheck %s --check-prefix=ADAGRAD
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=rmsprop centered=true momentum=0.5 weight-decay=0.01' %s | FileCheck %s --check-prefix=RMSPROP
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=rmsprop' %s | FileCheck %s --check-prefix=RMSPROP0
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adamw amsgrad=true' %s | FileCheck %s --check-prefix=AMSGRAD
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=lion weight-decay=0.1' %s | FileCheck %s --check-prefix=LION
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adamax' %s | FileCheck %s --check-prefix=ADAMAX
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=nadam momentum-decay=0.01 weight-decay=0.1' %s | FileCheck %s --check-prefix=NADAM
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=radam lr=0.01' %s | FileCheck %s --check-prefix=RADAM
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adadelta rho=0.95' %s | FileCheck %s --check-prefix=ADADELTA
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adagrad initial-accumulator-value=0.1' %s | FileCheck %s --check-prefix=ADAGRADINIT
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=rprop etaminus=0.4 step-size-max=1' %s | FileCheck %s --check-prefix=RPROP
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=asgd t0=100 weight-decay=0.01' %s | FileCheck %s --check-prefix=ASGD
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=sgd maximize=true' %s | FileCheck %s --check-prefix=MAXIMIZE
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=radam weight-decay=0.1 decoupled-weight-decay=true' %s | FileCheck %s --check-prefix=RADAMW
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=lamb' %s | FileCheck %s --check-prefix=LAMB
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=lamb weight-decay=0 always-adapt=true trust-clip=true' %s | FileCheck %s --check-prefix=LAMBC
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adafactor adafactor-beta1=0.9 weight-decay=0.01 clip-threshold=0.5' %s | FileCheck %s --check-prefix=ADAFACTOR
// RUN: plait-opt --split-input-file --plait-build-train-step='optimizer=adafactor relative-step=true warmup-init=true no-scale-parameter=true' %s | FileCheck %s --check-prefix=ADAFACTORREL

// A linear layer with ReLU and cross-entropy: the backward graph holds the loss gradient,
// the ReLU mask (from its result, so the GEMM output need not outlive the ReLU), the weight
// gradient (transpose + matmul for trans_b) and the bias gradient (a reduction over the
// batch); the step returns only the loss.
// SGD-LABEL: func.func @main
// SGD-SAME: -> (tensor<f32> {plait.name = "loss"})
// SGD: %[[W:.*]] = plait.param "fc.weight"
// SGD: %[[B:.*]] = plait.param "fc.bias"
// SGD: %[[H:.*]] = plait.gemm
// SGD: %[[R:.*]] = plait.relu %[[H]]
// SGD: %[[L:.*]] = plait.softmax_cross_entropy %[[R]]
// SGD: %[[DR:.*]] = plait.softmax_cross_entropy_grad %[[R]], %{{.*}}, %{{.*}}
// SGD: %[[MASK:.*]] = plait.greater %[[R]]
// SGD: %[[DH:.*]] = plait.where %[[MASK]], %[[DR]]
// SGD: %[[XT:.*]] = plait.transpose %arg0
// SGD: %[[DWT:.*]] = plait.matmul %[[XT]], %[[DH]]
// SGD: %[[DW:.*]] = plait.transpose %[[DWT]]
// SGD: %[[DB1:.*]] = plait.reduce_sum %[[DH]] {axes = array<i64: 0>}
// SGD: %[[DB:.*]] = plait.reshape %[[DB1]]
// SGD: %[[LR:.*]] = plait.hyper "lr"
// SGD: %[[STEP:.*]] = plait.hyper "step"
// SGD: %[[MW:.*]] = plait.state "fc.weight.momentum_buffer"
// SGD: %[[NW:.*]], %[[NMW:.*]] = plait.sgd_update %[[W]], %[[DW]], %[[LR]], %[[STEP]], %[[MW]] {momentum = 9.000000e-01 : f64}
// SGD: plait.sgd_update %[[B]], %[[DB]]
// SGD: plait.assign %[[W]], %[[NW]]
// SGD: plait.assign %[[MW]], %[[NMW]]
// SGD: return %[[L]] : tensor<f32>

// AdamW's decoupled weight decay defaults to PyTorch's 0.01; its state is two tensors per param.
// ADAMW-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 3.000000e-03 : f64
// ADAMW-SAME: plait.train = {clip_grad_norm = 0.000000e+00 : f64, optimizer = "adamw", weight_decay = 1.000000e-02 : f64}
// ADAMW: plait.state "fc.weight.exp_avg"
// ADAMW: plait.state "fc.weight.exp_avg_sq"
// ADAMW: plait.adamw_update
// ADAMW-NOT: l2 =
// ADAMW-COUNT-6: plait.assign
// ADAMW-NEXT: return
// Adam is the same update with no decoupled decay and its weight decay added to the
// gradient (l2, as torch.optim.Adam's weight_decay); its default decay is PyTorch's 0.
// ADAM-LABEL: module attributes
// ADAM-SAME: plait.train = {clip_grad_norm = 0.000000e+00 : f64, optimizer = "adam", weight_decay = 5.000000e-02 : f64}
// ADAM: plait.adamw_update %{{.*}} {l2 = 5.000000e-02 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<3x4xf32>
// ADAM: plait.adamw_update %{{.*}} {l2 = 5.000000e-02 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<3xf32>
// ADAM0-LABEL: module attributes
// ADAM0-SAME: optimizer = "adam", weight_decay = 0.000000e+00 : f64}
// ADAM0: plait.adamw_update %{{.*}} {weight_decay = 0.000000e+00 : f64} : (tensor<3x4xf32>
// Adagrad: one state per param, torch's "sum"; its eps default (1e-10) is the op's, so not
// printed.
// ADAGRAD-LABEL: module attributes
// ADAGRAD-SAME: optimizer = "adagrad", weight_decay = 0.000000e+00 : f64}
// ADAGRAD: %[[S:.*]] = plait.state "fc.weight.sum" : tensor<3x4xf32>
// ADAGRAD-NEXT: %[[P:.*]], %[[NS:.*]] = plait.adagrad_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[S]] {lr_decay = 1.000000e-01 : f64} : (tensor<3x4xf32>
// ADAGRAD: plait.state "fc.bias.sum" : tensor<3xf32>
// ADAGRAD: plait.assign %[[S]], %[[NS]] : tensor<3x4xf32>
// RMSprop: square_avg, then grad_avg (centered), then the momentum buffer, each assigned its
// new value; without centering or momentum, square_avg alone.
// RMSPROP-LABEL: module attributes
// RMSPROP-SAME: optimizer = "rmsprop", weight_decay = 1.000000e-02 : f64}
// RMSPROP: %[[SQ:.*]] = plait.state "fc.weight.square_avg" : tensor<3x4xf32>
// RMSPROP-NEXT: %[[GA:.*]] = plait.state "fc.weight.grad_avg" : tensor<3x4xf32>
// RMSPROP-NEXT: %[[BUF:.*]] = plait.state "fc.weight.momentum_buffer" : tensor<3x4xf32>
// RMSPROP-NEXT: %[[NP:.*]], %[[NEW:.*]]:3 = plait.rmsprop_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SQ]], %[[GA]], %[[BUF]] {centered = true, momentum = 5.000000e-01 : f64, weight_decay = 1.000000e-02 : f64}
// RMSPROP: plait.assign %[[SQ]], %[[NEW]]#0 : tensor<3x4xf32>
// RMSPROP-NEXT: plait.assign %[[GA]], %[[NEW]]#1 : tensor<3x4xf32>
// RMSPROP-NEXT: plait.assign %[[BUF]], %[[NEW]]#2 : tensor<3x4xf32>
// RMSPROP0: %[[SQ:.*]] = plait.state "fc.weight.square_avg" : tensor<3x4xf32>
// RMSPROP0-NEXT: plait.rmsprop_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SQ]] : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f64>, tensor<f32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
// RMSPROP0-NOT: grad_avg
// Lion: one state, exp_avg; its beta2 default is the paper's 0.99 (the op's, so not printed),
// its weight decay decoupled.
// LION-LABEL: module attributes
// LION-SAME: optimizer = "lion", weight_decay = 1.000000e-01 : f64}
// LION: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// LION-NEXT: %{{.*}}, %[[NM:.*]] = plait.lion_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]] {weight_decay = 1.000000e-01 : f64} : (tensor<3x4xf32>
// LION: plait.assign %[[M]], %[[NM]] : tensor<3x4xf32>
// Adamax, NAdam, RAdam and Adadelta: two states each after lr and step, named as torch names
// them; without --lr each takes PyTorch's default learning rate (adamax and nadam 2e-3,
// radam 1e-3, adadelta 1).
// ADAMAX-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 2.000000e-03 : f64
// ADAMAX: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// ADAMAX-NEXT: %[[U:.*]] = plait.state "fc.weight.exp_inf" : tensor<3x4xf32>
// ADAMAX-NEXT: %{{.*}}, %[[NM:.*]], %[[NU:.*]] = plait.adamax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[U]] : (tensor<3x4xf32>
// ADAMAX: plait.assign %[[M]], %[[NM]] : tensor<3x4xf32>
// ADAMAX-NEXT: plait.assign %[[U]], %[[NU]] : tensor<3x4xf32>
// NADAM-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 2.000000e-03 : f64
// NADAM-SAME: optimizer = "nadam", weight_decay = 1.000000e-01 : f64}
// NADAM: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// NADAM-NEXT: %[[V:.*]] = plait.state "fc.weight.exp_avg_sq" : tensor<3x4xf32>
// NADAM-NEXT: plait.nadam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[V]] {momentum_decay = 1.000000e-02 : f64, weight_decay = 1.000000e-01 : f64}
// RADAM-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 1.000000e-02 : f64
// RADAM: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// RADAM-NEXT: %[[V:.*]] = plait.state "fc.weight.exp_avg_sq" : tensor<3x4xf32>
// RADAM-NEXT: plait.radam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[V]] : (tensor<3x4xf32>
// ADADELTA-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 1.000000e+00 : f64
// ADADELTA: %[[SQ:.*]] = plait.state "fc.weight.square_avg" : tensor<3x4xf32>
// ADADELTA-NEXT: %[[ACC:.*]] = plait.state "fc.weight.acc_delta" : tensor<3x4xf32>
// ADADELTA-NEXT: %{{.*}}, %[[NSQ:.*]], %[[NACC:.*]] = plait.adadelta_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SQ]], %[[ACC]] {rho = 0.94999999999999996 : f64}
// ADADELTA: plait.assign %[[SQ]], %[[NSQ]] : tensor<3x4xf32>
// ADADELTA-NEXT: plait.assign %[[ACC]], %[[NACC]] : tensor<3x4xf32>
// Rprop: torch's prev and step_size, its default lr 1e-2 (the first step size).
// RPROP-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 1.000000e-02 : f64
// RPROP: %[[PREV:.*]] = plait.state "fc.weight.prev" : tensor<3x4xf32>
// RPROP-NEXT: %[[SIZE:.*]] = plait.state "fc.weight.step_size" : tensor<3x4xf32>
// RPROP-NEXT: %{{.*}}, %[[NPREV:.*]], %[[NSIZE:.*]] = plait.rprop_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PREV]], %[[SIZE]] {etaminus = 4.000000e-01 : f64, step_size_max = 1.000000e+00 : f64}
// RPROP: plait.assign %[[PREV]], %[[NPREV]] : tensor<3x4xf32>
// RPROP-NEXT: plait.assign %[[SIZE]], %[[NSIZE]] : tensor<3x4xf32>
// ASGD keeps torch's ax; its update reads the previous step's lr (plait.hyper "prev_lr").
// ASGD-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 1.000000e-02 : f64
// ASGD: %[[PREV:.*]] = plait.hyper "prev_lr" : tensor<f64>
// ASGD-NEXT: %[[AX:.*]] = plait.state "fc.weight.ax" : tensor<3x4xf32>
// ASGD-NEXT: %{{.*}}, %[[NAX:.*]] = plait.asgd_update %{{.*}}, %{{.*}}, %[[PREV]], %{{.*}}, %[[AX]] {t0 = 1.000000e+02 : f64, weight_decay = 1.000000e-02 : f64}
// ASGD: plait.assign %[[AX]], %[[NAX]] : tensor<3x4xf32>
// RAdamW (PyTorch 2's decoupled_weight_decay): an attribute of the update, and recorded.
// RADAMW-LABEL: module attributes
// RADAMW-SAME: plait.train = {{{.*}}decoupled_weight_decay = true, optimizer = "radam"
// RADAMW: plait.radam_update %{{.*}} {decoupled_weight_decay = true, weight_decay = 1.000000e-01 : f64}
// LAMB, timm's state names and defaults (lr 1e-3, eps 1e-6, weight decay 0.01); one update
// per param, whose kernel takes the trust ratio's norms over the whole tensor (no norms
// operand, no segments: those are plait-shard's, for flat shards).
// LAMB-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 1.000000e-03 : f64
// LAMB-SAME: optimizer = "lamb", weight_decay = 1.000000e-02 : f64}
// LAMB: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// LAMB-NEXT: %[[V:.*]] = plait.state "fc.weight.exp_avg_sq" : tensor<3x4xf32>
// LAMB-NEXT: %{{.*}}, %[[NM:.*]], %[[NV:.*]] = plait.lamb_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[V]] : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f64>, tensor<f32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>)
// LAMB: plait.assign %[[M]], %[[NM]] : tensor<3x4xf32>
// LAMB-NEXT: plait.assign %[[V]], %[[NV]] : tensor<3x4xf32>
// LAMB-NOT: segments
// Adafactor, Hugging Face's state names: the weight's second moment factored into a row (3)
// and a column (4), the bias's whole (exp_avg_sq); exp_avg only with beta1; eps1 1e-30.
// ADAFACTOR-LABEL: module attributes
// ADAFACTOR-SAME: plait.train = {adafactor_beta1 = 9.000000e-01 : f64
// ADAFACTOR-SAME: optimizer = "adafactor", relative_step = false, scale_parameter = true, warmup_init = false
// ADAFACTOR: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// ADAFACTOR-NEXT: %[[R:.*]] = plait.state "fc.weight.exp_avg_sq_row" : tensor<3xf32>
// ADAFACTOR-NEXT: %[[C:.*]] = plait.state "fc.weight.exp_avg_sq_col" : tensor<4xf32>
// ADAFACTOR-NEXT: %{{.*}}, %[[NS:.*]]:3 = plait.adafactor_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]], %[[R]], %[[C]] {beta1 = 9.000000e-01 : f64, clip_threshold = 5.000000e-01 : f64, weight_decay = 1.000000e-02 : f64} : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<f64>, tensor<f32>, tensor<3x4xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<4xf32>)
// ADAFACTOR: plait.state "fc.bias.exp_avg" : tensor<3xf32>
// ADAFACTOR-NEXT: plait.state "fc.bias.exp_avg_sq" : tensor<3xf32>
// ADAFACTOR-NEXT: plait.adafactor_update
// ADAFACTOR: plait.assign %[[M]], %[[NS]]#0 : tensor<3x4xf32>
// ADAFACTOR-NEXT: plait.assign %[[R]], %[[NS]]#1 : tensor<3xf32>
// ADAFACTOR-NEXT: plait.assign %[[C]], %[[NS]]#2 : tensor<4xf32>
// The relative step: attributes of the update, and recorded; no first moment.
// ADAFACTORREL-LABEL: module attributes
// ADAFACTORREL-SAME: relative_step = true, scale_parameter = false, warmup_init = true
// ADAFACTORREL-NOT: exp_avg"
// ADAFACTORREL: plait.adafactor_update {{.*}} {relative_step = true, scale_parameter = false, warmup_init = true}
// always_adapt and trust_clip are attributes of the update, and recorded.
// LAMBC-LABEL: module attributes
// LAMBC-SAME: plait.train = {always_adapt = true
// LAMBC-SAME: trust_clip = true
// LAMBC: plait.lamb_update {{.*}} {always_adapt = true, trust_clip = true, weight_decay = 0.000000e+00 : f64}
// Adagrad's initial accumulator is an attribute of its update (read on the first step).
// ADAGRADINIT-LABEL: module attributes {plait.lr_schedule = {kind = "constant", lr = 1.000000e-02 : f64
// ADAGRADINIT: plait.adagrad_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {initial_accumulator_value = 1.000000e-01 : f64}
// maximize: the backward starts from a loss gradient of -1 (so every gradient is the exact
// negation of the loss's), the update is the optimizer's own, and plait.train records it.
// MAXIMIZE-LABEL: module attributes
// MAXIMIZE-SAME: plait.train = {{{.*}}maximize = true
// MAXIMIZE: %[[L:.*]] = plait.softmax_cross_entropy %[[R:.*]], %arg1
// MAXIMIZE-NEXT: %[[SEED:.*]] = plait.constant dense<-1.000000e+00> : tensor<f32>
// MAXIMIZE-NEXT: plait.softmax_cross_entropy_grad %[[R]], %arg1, %[[SEED]]
// MAXIMIZE: plait.sgd_update
// MAXIMIZE: return %[[L]] : tensor<f32>
// AMSGrad: a third state, torch's max_exp_avg_sq, after lr and step.
// AMSGRAD: %[[M:.*]] = plait.state "fc.weight.exp_avg" : tensor<3x4xf32>
// AMSGRAD-NEXT: %[[V:.*]] = plait.state "fc.weight.exp_avg_sq" : tensor<3x4xf32>
// AMSGRAD-NEXT: %[[VMAX:.*]] = plait.state "fc.weight.max_exp_avg_sq" : tensor<3x4xf32>
// AMSGRAD-NEXT: %{{.*}}, %{{.*}}, %{{.*}}, %[[NEWMAX:.*]] = plait.adamw_update %{{.*}}, %{{.*}}, %[[M]], %[[V]], %{{.*}}, %{{.*}}, %[[VMAX]] {amsgrad = true
// AMSGRAD: plait.assign %[[VMAX]], %[[NEWMAX]] : tensor<3x4xf32>
// --freeze keeps fc.bias out of training: no bias gradient, one update. Clipping scales the
// remaining gradient by min(1, max_norm / (||g|| + 1e-6)).
// Value clipping clamps each gradient first; the norm is of the clamped gradients.
// clip_grad_norm_(norm_type=3): |g|^3 summed, the total ^(1/3); no square root.
// CLIP3: plait.train = {clip_grad_norm = 1.000000e+00 : f64, clip_grad_norm_type = "3"
// CLIP3-LABEL: func.func @main
// CLIP3: %[[A:.*]] = plait.abs %[[G:.*]] : tensor<3x4xf32>
// CLIP3-NEXT: %[[P:.*]] = plait.constant dense<3.000000e+00> : tensor<f32>
// CLIP3-NEXT: %[[AP:.*]] = plait.pow %[[A]], %[[P]]
// CLIP3-NEXT: %[[SUM:.*]] = plait.reduce_sum %[[AP]]
// CLIP3-NEXT: %[[INV:.*]] = plait.constant dense<0.333333343> : tensor<f32>
// CLIP3-NEXT: %[[NORM:.*]] = plait.pow %[[SUM]], %[[INV]]
// CLIP3-NOT: plait.sqrt
// CLIP3: %[[COEF:.*]] = plait.min
// CLIP3: %[[S:.*]] = plait.mul %[[G]], %[[COEF]]
// CLIP3: plait.sgd_update %{{.*}}, %[[S]]

// The infinity norm: the largest |g| is the norm.
// CLIPINF: plait.train = {clip_grad_norm = 1.000000e+00 : f64, clip_grad_norm_type = "inf"
// CLIPINF-LABEL: func.func @main
// CLIPINF: %[[A:.*]] = plait.abs %[[G:.*]] : tensor<3x4xf32>
// CLIPINF-NEXT: %[[M:.*]] = plait.reduce_max %[[A]]
// CLIPINF-NEXT: %[[EPS:.*]] = plait.constant dense<9.99999997E-7>
// CLIPINF-NEXT: plait.add %[[M]], %[[EPS]]
// CLIPINF: %[[COEF:.*]] = plait.min
// CLIPINF: %[[S:.*]] = plait.mul %[[G]], %[[COEF]]
// CLIPINF: plait.sgd_update %{{.*}}, %[[S]]

// NORMTYPE: error: clip-grad-norm-type must be > 0 or inf, got -2

// log-grad-norm: the norm measured, not applied; the step's second output, grad_norm.
// LOGNORM: plait.train = {clip_grad_norm = 0.000000e+00 : f64, log_grad_norm = true
// LOGNORM-LABEL: func.func @main
// LOGNORM-SAME: -> (tensor<f32> {plait.name = "loss"}, tensor<f32> {plait.name = "grad_norm"})
// LOGNORM: %[[SUM:.*]] = plait.reduce_sum
// LOGNORM-NEXT: %[[NORM:.*]] = plait.sqrt %[[SUM]]
// LOGNORM-NOT: plait.min
// LOGNORM: return %{{.*}}, %[[NORM]] : tensor<f32>, tensor<f32>

// CLIPVALUE: plait.train = {clip_grad_norm = 1.000000e+00 : f64, clip_grad_value = 5.000000e-01 : f64
// CLIPVALUE-LABEL: func.func @main
// CLIPVALUE: %[[C:.*]] = plait.clamp %{{.*}} {max = 5.000000e-01 : f64, min = -5.000000e-01 : f64}
// CLIPVALUE: %[[SQ:.*]] = plait.mul %[[C]], %[[C]]
// CLIPVALUE: plait.reduce_sum %[[SQ]]
// CLIPVALUE: %[[COEF:.*]] = plait.min
// CLIPVALUE: %[[G:.*]] = plait.mul %[[C]], %[[COEF]]
// CLIPVALUE: plait.sgd_update %{{.*}}, %[[G]]

// FREEZE-LABEL: func.func @main
// FREEZE-NOT: plait.reduce_sum %{{.*}} {axes = array<i64: 0>}
// FREEZE: %[[SQ:.*]] = plait.mul %[[G:.*]], %[[G]]
// FREEZE: plait.reduce_sum %[[SQ]]
// FREEZE: plait.sqrt
// FREEZE: plait.min
// FREEZE: plait.sgd_update %{{.*}}
// FREEZE-NOT: plait.sgd_update
// FREEZE: plait.assign
// FREEZE-NOT: plait.assign
// FREEZE: return
func.func @main(%x: tensor<2x4xf32> {plait.name = "x"}, %y: tensor<2xi64> {plait.name = "y"})
    -> (tensor<f32> {plait.name = "loss"}, tensor<2x3xf32> {plait.name = "logits"}) {
  %w = plait.param "fc.weight" {init = "normal:0.02"} : tensor<3x4xf32>
  %b = plait.param "fc.bias" {init = "zeros"} : tensor<3xf32>
  %h = plait.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = plait.relu %h : tensor<2x3xf32>
  %l = plait.softmax_cross_entropy %r, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %l, %r : tensor<f32>, tensor<2x3xf32>
}

// -----

// Values that do not reach a param get no gradient work: the branch through %unused
// and the embedding indices are left alone, and a frozen-free param that does not reach
// the loss gets no update.
// SGD-LABEL: func.func @main
// SGD-NOT: plait.gather_grad
// SGD: plait.sgd_update
// SGD-NOT: plait.sgd_update
// SGD: return
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %unused = plait.param "unused" {init = "ones"} : tensor<4xf32>
  %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = plait.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// matmul's bias (a fused linear layer differentiated again, as plait-opt allows): the bias
// gradient sums dy over every row, the weight gradient is the folded [rows, k] product.
// SGD-LABEL: func.func @main
// SGD: %[[Y:.*]] = plait.matmul %arg0, %[[W:.*]], %[[B:.*]] {transpose_rhs = true}
// SGD: %[[DY:.*]] = plait.broadcast_to
// SGD: %[[S:.*]] = plait.reduce_sum %[[DY]] {axes = array<i64: 0, 1>}
// SGD: %[[DB:.*]] = plait.reshape %[[S]] : (tensor<1x1x5xf32>) -> tensor<5xf32>
// SGD: plait.sgd_update %[[W]]
// SGD: plait.sgd_update %[[B]], %[[DB]]
// SGD: return
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %w = plait.param "fc.weight" {init = "ones"} : tensor<5x4xf32>
  %b = plait.param "fc.bias" {init = "zeros"} : tensor<5xf32>
  %y = plait.matmul %x, %w, %b {transpose_rhs = true} : (tensor<2x3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  %s = plait.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<2x3x5xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A power's gradient b * a^(b-1): with a constant exponent (a norm's x^2) b - 1 is a constant
// too (1.0), not a kernel subtracting 1 each step; with a computed exponent it is a sub.
// SGD-LABEL: func.func @main
// SGD: %[[E1:.*]] = plait.sub %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// SGD-NEXT: plait.pow %{{.*}}, %[[E1]]
// SGD: %[[ONE:.*]] = plait.constant dense<1.000000e+00> : tensor<f32>
// SGD-NEXT: plait.pow %{{.*}}, %[[ONE]]
// SGD-NOT: plait.sub
// SGD: return
func.func @main(%x: tensor<4xf32> {plait.name = "x"}) -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %v = plait.param "v" {init = "ones"} : tensor<f32>
  %two = plait.constant dense<2.0> : tensor<f32>
  %a = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %sq = plait.pow %a, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %p = plait.pow %sq, %v : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %l = plait.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
