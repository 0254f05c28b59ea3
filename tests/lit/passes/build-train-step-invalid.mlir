// RUN: plait-opt --split-input-file --verify-diagnostics --plait-build-train-step %s
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=lbfgs' %s 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: unknown optimizer 'lbfgs' (expected sgd, adam, adamw, adagrad, rmsprop, lion, adamax, nadam, radam, adadelta, rprop, asgd, lamb or adafactor)
// RUN: not plait-opt --split-input-file --plait-build-train-step='clip-grad-value=-1' %s 2>&1 | FileCheck %s --check-prefix=CLIPVALUE
// CLIPVALUE: error: clip-grad-value must be >= 0, got -1
// RUN: not plait-opt --split-input-file --plait-build-train-step='schedule=plateau lr-threshold-mode=both' %s 2>&1 | FileCheck %s --check-prefix=PLATEAUMODE
// PLATEAUMODE: error: unknown plateau threshold mode 'both' (expected rel or abs)
// RUN: not plait-opt --split-input-file --plait-build-train-step='schedule=plateau lr-gamma=1' %s 2>&1 | FileCheck %s --check-prefix=PLATEAUFACTOR
// PLATEAUFACTOR: error: the plateau schedule needs a factor (gamma) in (0, 1), got 1
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adamw always-adapt=true' %s 2>&1 | FileCheck %s --check-prefix=ADAPT
// ADAPT: error: always-adapt is LAMB's; the adamw optimizer has no trust ratio
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=sgd eps2=0.5' %s 2>&1 | FileCheck %s --check-prefix=EPS2
// EPS2: error: eps2 is Adafactor's; the sgd optimizer has none
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adafactor warmup-init=true' %s 2>&1 | FileCheck %s --check-prefix=WARMUPINIT
// WARMUPINIT: error: warmup-init warms up the relative step: give relative-step
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adafactor relative-step=true lr=0.1' %s 2>&1 | FileCheck %s --check-prefix=RELLR
// RELLR: error: relative-step computes each step's lr from the step (Hugging Face's relative_step ignores the lr): drop lr
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adafactor relative-step=true schedule=linear-warmup warmup-steps=5' %s 2>&1 | FileCheck %s --check-prefix=RELSCHED
// RELSCHED: error: relative-step computes {{.*}}: drop the lr schedule
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adafactor decay-rate=0.5' %s 2>&1 | FileCheck %s --check-prefix=DECAYRATE
// DECAYRATE: error: invalid Adafactor hyper-parameters (need adafactor-beta1 < 1, eps2 >= 0, clip-threshold > 0, decay-rate <= 0)
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=sgd momentum=nan' %s 2>&1 | FileCheck %s --check-prefix=NANMOM
// NANMOM: error: optimizer hyper-parameters must be finite numbers, got nan
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adamw centered=true' %s 2>&1 | FileCheck %s --check-prefix=CENTERED
// CENTERED: error: centered is RMSprop's; the adamw optimizer has none
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adagrad momentum=0.9' %s 2>&1 | FileCheck %s --check-prefix=MOMENTUM
// MOMENTUM: error: momentum is SGD's and RMSprop's; the adagrad optimizer has none
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=rmsprop nesterov=true momentum=0.9' %s 2>&1 | FileCheck %s --check-prefix=NESTEROV
// NESTEROV: error: dampening and nesterov are SGD's; the rmsprop optimizer has neither
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=sgd amsgrad=true' %s 2>&1 | FileCheck %s --check-prefix=AMSGRAD
// AMSGRAD: error: amsgrad is Adam's and AdamW's; the sgd optimizer has none
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=rmsprop alpha=1.0' %s 2>&1 | FileCheck %s --check-prefix=ALPHA
// ALPHA: error: invalid optimizer hyper-parameters (need lr > 0, eps > 0, 0 <= betas < 1, momentum >= 0, 0 <= alpha < 1, lr-decay >= 0, 0 <= rho <= 1, momentum-decay >= 0, initial-accumulator-value >= 0)
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adadelta rho=1.5' %s 2>&1 | FileCheck %s --check-prefix=RHO
// RHO: error: invalid optimizer hyper-parameters (need {{.*}} 0 <= rho <= 1,
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adamw decoupled-weight-decay=true' %s 2>&1 | FileCheck %s --check-prefix=DECOUPLED
// DECOUPLED: error: decoupled-weight-decay is NAdam's and RAdam's; the adamw optimizer decouples its weight decay always
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=adagrad decoupled-weight-decay=true' %s 2>&1 | FileCheck %s --check-prefix=DECOUPLED2
// DECOUPLED2: error: decoupled-weight-decay is NAdam's and RAdam's; the adagrad optimizer has none
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=sgd lr=0' %s 2>&1 | FileCheck %s --check-prefix=LR0
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=rprop etaplus=0.9' %s 2>&1 | FileCheck %s --check-prefix=ETAS
// ETAS: error: invalid Rprop etas (need 0 < etaminus < 1 < etaplus)
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=rprop step-size-min=2 step-size-max=1' %s 2>&1 | FileCheck %s --check-prefix=STEPSIZES
// STEPSIZES: error: invalid Rprop step sizes (need 0 <= step-size-min <= step-size-max)
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=rprop weight-decay=0.1' %s 2>&1 | FileCheck %s --check-prefix=RPROPDECAY
// RPROPDECAY: error: the rprop optimizer has no weight decay (torch 1.13's Rprop)
// RUN: not plait-opt --split-input-file --plait-build-train-step='optimizer=asgd t0=-1' %s 2>&1 | FileCheck %s --check-prefix=ASGD
// ASGD: error: invalid ASGD hyper-parameters (need lambd, asgd-alpha, t0 >= 0)
// LR0: error: invalid optimizer hyper-parameters (need lr > 0,

// expected-error @+1 {{'func.func' op first output 'logits' must be the scalar float loss, got 'tensor<2x3xf32>'}}
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32> {plait.name = "logits"}) {
  %w = plait.param "w" {init = "ones"} : tensor<2x3xf32>
  %y = plait.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'plait.argmax' op is a non-differentiable path from the trainable params to the loss}}
  %i = plait.argmax %p {axis = 0 : i64, keepdims = false} : (tensor<4xf32>) -> tensor<i64>
  %f = plait.cast %i : (tensor<i64>) -> tensor<f32>
  return %f : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op the loss does not depend on any trainable param}}
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %s = plait.reduce_sum %x {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op has no outputs; the first output must be the scalar loss}}
func.func @main(%x: tensor<4xf32>) {
  return
}


// -----

// expected-error @+1 {{'func.func' op result #1 is marked plait.buffer = 'bn.mean', which names no plait.param marked buffer}}
func.func @main(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {plait.buffer = "bn.mean"}) {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %m = plait.param "bn.mean" {init = "zeros"} : tensor<4xf32>
  %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = plait.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %n = plait.add %m, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %l, %n : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #2 is marked plait.buffer = 'bn.mean', which an earlier result updates too}}
func.func @main(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {plait.buffer = "bn.mean"}, tensor<4xf32> {plait.buffer = "bn.mean"}) {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %m = plait.param "bn.mean" {buffer, init = "zeros"} : tensor<4xf32>
  %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = plait.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %n = plait.add %m, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %l, %n, %n : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #1 (plait.buffer = 'bn.mean') has type 'tensor<2xf32>', the buffer 'tensor<4xf32>'}}
func.func @main(%x: tensor<4xf32>) -> (tensor<f32>, tensor<2xf32> {plait.buffer = "bn.mean"}) {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %m = plait.param "bn.mean" {buffer, init = "zeros"} : tensor<4xf32>
  %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = plait.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %n = plait.add %m, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %h = plait.slice %n {starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
  return %l, %h : tensor<f32>, tensor<2xf32>
}

// -----

// expected-error @+1 {{'func.func' op result #0 is marked plait.buffer = 'bn.mean', but the first result is the loss}}
func.func @main(%x: tensor<4xf32>) -> (tensor<f32> {plait.buffer = "bn.mean"}) {
  %w = plait.param "w" {init = "ones"} : tensor<4xf32>
  %m = plait.param "bn.mean" {buffer, init = "zeros"} : tensor<f32>
  %p = plait.mul %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = plait.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %n = plait.add %m, %l : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %n : tensor<f32>
}
