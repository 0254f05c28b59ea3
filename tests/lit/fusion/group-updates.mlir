// RUN: plait-opt --plait-group-updates --split-input-file %s | FileCheck %s
// RUN: plait-opt --plait-group-updates=span=1 --split-input-file %s | FileCheck %s --check-prefix=SPAN
// RUN: plait-opt --plait-group-updates=grad-casts=false --split-input-file %s | FileCheck %s --check-prefix=NOFOLD

// Three AdamW updates a few ops apart become one kernel where the last stood; their operands
// are in order (6 per update), and so are their results (3 per update). With span=1 (the
// updates are two ops apart) nothing is grouped.
// CHECK: module attributes {plait.group_updates = {ema_kernels = 0 : i64, emas = 0 : i64, grad_cast_bytes = 0 : i64, grad_casts = 0 : i64, kernels = 1 : i64, updates = 3 : i64}}
// CHECK-LABEL: func.func @three
// CHECK-NEXT: %[[H:.*]] = plait.neg %arg5
// CHECK-NEXT: %[[K:.*]] = plait.neg %arg9
// CHECK-NEXT: %[[G:.*]]:9 = plait.grouped_update %arg0, %arg1, %arg2, %arg3, %arg12, %arg13, %arg4, %[[H]], %arg6, %arg7, %arg12, %arg13, %arg8, %[[K]], %arg10, %arg11, %arg12, %arg13 {{{.*}}beta1 = 8.000000e-01 : f64, {{.*}}operands_per_update = 6 : i64, results_per_update = 3 : i64, update = "adamw_update"
// CHECK-NEXT: return %[[G]]#0, %[[G]]#3, %[[G]]#6, %[[G]]#8
// SPAN: plait.group_updates = {ema_kernels = 0 : i64, emas = 0 : i64, grad_cast_bytes = 0 : i64, grad_casts = 0 : i64, kernels = 0 : i64, updates = 0 : i64}
func.func @three(%p: tensor<4xf32>, %g: tensor<4xf32>, %mp: tensor<4xf32>, %vp: tensor<4xf32>, %q: tensor<2x3xf32>, %h: tensor<2x3xf32>, %mq: tensor<2x3xf32>, %vq: tensor<2x3xf32>, %r: tensor<5xf32>, %k: tensor<5xf32>, %mr: tensor<5xf32>, %vr: tensor<5xf32>, %lr: tensor<f32>, %step: tensor<f32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<5xf32>, tensor<5xf32>) {
  %p2, %mp2, %vp2 = plait.adamw_update %p, %g, %mp, %vp, %lr, %step {beta1 = 0.8 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %h2 = plait.neg %h : tensor<2x3xf32>
  %q2, %mq2, %vq2 = plait.adamw_update %q, %h2, %mq, %vq, %lr, %step {beta1 = 0.8 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %k2 = plait.neg %k : tensor<5xf32>
  %r2, %mr2, %vr2 = plait.adamw_update %r, %k2, %mr, %vr, %lr, %step {beta1 = 0.8 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
  return %p2, %q2, %r2, %vr2 : tensor<4xf32>, tensor<2x3xf32>, tensor<5xf32>, tensor<5xf32>
}

// -----

// Not grouped: other attributes, another optimizer, a result read before the next update's
// gradient exists, and bf16 tensors.
// CHECK: plait.group_updates = {ema_kernels = 0 : i64, emas = 0 : i64, grad_cast_bytes = 0 : i64, grad_casts = 0 : i64, kernels = 0 : i64, updates = 0 : i64}
// CHECK-LABEL: func.func @kept
// CHECK-NOT: plait.grouped_update
func.func @kept(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<f32>, %b: tensor<4xbf16>, %bg: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>) {
  %0:3 = plait.adamw_update %p, %g, %m, %v, %lr, %step {beta1 = 0.8 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %1:3 = plait.adamw_update %p, %g, %m, %v, %lr, %step {beta1 = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %2 = plait.sgd_update %p, %g, %lr, %step : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %3 = plait.exp %2 : tensor<4xf32>
  %4 = plait.sgd_update %p, %3, %lr, %step : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %5 = plait.sgd_update %b, %bg, %lr, %step : (tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<f32>) -> tensor<4xbf16>
  %6 = plait.sgd_update %b, %bg, %lr, %step : (tensor<4xbf16>, tensor<4xbf16>, tensor<f32>, tensor<f32>) -> tensor<4xbf16>
  return %0#0, %1#0, %2, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>
}

// -----

// bf16-mixed: each gradient arrives in bf16 and is cast to f32 for its update. The grouped
// update reads the bf16 gradients itself where the cast feeds nothing else (%g here; an f16
// gradient too), and the casts are gone; %k's cast is also read by a reduce_sum, so it stays
// and the update reads its f32 result. With grad-casts=false every cast stays.
// CHECK: plait.group_updates = {ema_kernels = 0 : i64, emas = 0 : i64, grad_cast_bytes = 40 : i64, grad_casts = 2 : i64, kernels = 1 : i64, updates = 3 : i64}
// CHECK-LABEL: func.func @casts
// CHECK-NEXT: %[[K:.*]] = plait.cast %arg9 : (tensor<5xbf16>) -> tensor<5xf32>
// CHECK-NEXT: %[[S:.*]] = plait.reduce_sum %[[K]]
// CHECK-NEXT: %{{.*}}:9 = plait.grouped_update %arg0, %arg1, %arg2, %arg3, %arg12, %arg13, %arg4, %arg5, %arg6, %arg7, %arg12, %arg13, %arg8, %[[K]], %arg10, %arg11, %arg12, %arg13 {{.*}} : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<2x3xf32>, tensor<2x3xf16>, {{.*}}, tensor<5xf32>, tensor<5xf32>, {{.*}}
// CHECK-NOT: plait.cast
// NOFOLD: plait.group_updates = {ema_kernels = 0 : i64, emas = 0 : i64, grad_cast_bytes = 0 : i64, grad_casts = 0 : i64, kernels = 1 : i64, updates = 3 : i64}
// NOFOLD-COUNT-3: plait.cast
// NOFOLD: plait.grouped_update
func.func @casts(%p: tensor<4xf32>, %g: tensor<4xbf16>, %mp: tensor<4xf32>, %vp: tensor<4xf32>, %q: tensor<2x3xf32>, %h: tensor<2x3xf16>, %mq: tensor<2x3xf32>, %vq: tensor<2x3xf32>, %r: tensor<5xf32>, %k: tensor<5xbf16>, %mr: tensor<5xf32>, %vr: tensor<5xf32>, %lr: tensor<f32>, %step: tensor<f32>) -> (tensor<4xf32>, tensor<2x3xf32>, tensor<5xf32>, tensor<1xf32>) {
  %g32 = plait.cast %g : (tensor<4xbf16>) -> tensor<4xf32>
  %p2, %mp2, %vp2 = plait.adamw_update %p, %g32, %mp, %vp, %lr, %step : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %h32 = plait.cast %h : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %q2, %mq2, %vq2 = plait.adamw_update %q, %h32, %mq, %vq, %lr, %step : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>, tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %k32 = plait.cast %k : (tensor<5xbf16>) -> tensor<5xf32>
  %ks = plait.reduce_sum %k32 {axes = array<i64: 0>} : (tensor<5xf32>) -> tensor<1xf32>
  %r2, %mr2, %vr2 = plait.adamw_update %r, %k32, %mr, %vr, %lr, %step : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
  return %p2, %q2, %r2, %ks : tensor<4xf32>, tensor<2x3xf32>, tensor<5xf32>, tensor<1xf32>
}

// -----

// Weight EMAs (--ema-decay): the five averages of one decay and step (f32, f64 and bf16)
// become one plait.weight_ema, params first, then averages, then the step, where the last
// stood; its results replace theirs in order. The one of another decay stays alone. span
// does not bound them (what they read lives to the step's end anyway). The updates stay as
// they are.
// CHECK: plait.group_updates = {ema_kernels = 1 : i64, emas = 5 : i64, grad_cast_bytes = 0 : i64, grad_casts = 0 : i64, kernels = 0 : i64, updates = 0 : i64}
// CHECK-LABEL: func.func @emas
// CHECK-NEXT: plait.sgd_update
// CHECK-NEXT: %[[X:.*]] = plait.neg %arg1
// CHECK-NEXT: %[[E:.*]]:5 = plait.weight_ema %arg0, %[[X]], %arg9, %arg7, %arg0, %arg2, %arg3, %arg10, %arg8, %arg4, %arg6 {decay = 0.98{{9*}} : f64, warmup = true} : (tensor<4xf32>, tensor<4xf32>, tensor<3xf64>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf64>, tensor<4xbf16>, tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3xf64>, tensor<4xbf16>, tensor<4xf32>)
// CHECK-NEXT: %[[O:.*]] = plait.weight_ema %arg0, %arg2, %arg6 {decay = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[E]]#0, %[[E]]#1, %[[E]]#2, %[[E]]#4, %[[O]], %[[E]]#3
// SPAN: plait.group_updates = {ema_kernels = 1 : i64, emas = 5 : i64, grad_cast_bytes = 0 : i64, grad_casts = 0 : i64, kernels = 0 : i64, updates = 0 : i64}
func.func @emas(%p: tensor<4xf32>, %q: tensor<4xf32>, %e: tensor<4xf32>, %f: tensor<4xf32>, %h: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<f32>, %b: tensor<4xbf16>, %eb: tensor<4xbf16>, %d: tensor<3xf64>, %ed: tensor<3xf64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>) {
  %p2 = plait.sgd_update %p, %q, %lr, %step : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
  %0 = plait.weight_ema %p, %e, %step {decay = 0.99 : f64, warmup = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %x = plait.neg %q : tensor<4xf32>
  %1 = plait.weight_ema %x, %f, %step {decay = 0.99 : f64, warmup = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = plait.weight_ema %d, %ed, %step {decay = 0.99 : f64, warmup = true} : (tensor<3xf64>, tensor<3xf64>, tensor<f32>) -> tensor<3xf64>
  %4 = plait.weight_ema %b, %eb, %step {decay = 0.99 : f64, warmup = true} : (tensor<4xbf16>, tensor<4xbf16>, tensor<f32>) -> tensor<4xbf16>
  %5 = plait.weight_ema %p, %h, %step {decay = 0.99 : f64, warmup = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = plait.weight_ema %p, %e, %step {decay = 0.5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0, %1, %2, %5, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<3xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>
}
