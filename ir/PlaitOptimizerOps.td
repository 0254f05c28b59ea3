// Optimizer updates of the plait dialect, one fused kernel per parameter tensor (or per group
// of them), and the sums sharded updates exchange. Included by ir/PlaitTrainOps.td, whose
// TableGen target generates them; each op lowers to the runtime kernel of the same mnemonic.
#ifndef PLAIT_OPTIMIZER_OPS_TD
#define PLAIT_OPTIMIZER_OPS_TD

//===----------------------------------------------------------------------===//
// Optimizer updates (one fused kernel per parameter tensor)
//===----------------------------------------------------------------------===//

// Every update also takes `lr_scale` (default 1, >= 0): the lr it applies is the step's `lr`
// operand times it, as a torch param group's lr relative to the base (--lr-scale), scaled by
// the schedule with the base. The OptimizerUpdate trait (ir/PlaitTraits.h) marks the updates
// and checks it.
def Plait_OptimizerUpdate : NativeOpTrait<"OptimizerUpdate"> {
  let cppNamespace = "::plait::traits";
}

def Plait_SgdUpdateOp : Plait_Op<"sgd_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "one SGD step as PyTorch's torch.optim.SGD computes it";
  let description = [{
    g = grad + weight_decay * param; with momentum m > 0: buf = g on step 1, else
    buf = m * buf + (1 - dampening) * g, and g = nesterov ? g + m * buf : buf;
    new_param = param - lr * g. Without momentum `momentum_buffer` is absent and
    `new_buffer` is not produced.

    ```mlir
    %p2, %b2 = plait.sgd_update %p, %g, %lr, %step, %b {momentum = 0.9 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>)
        -> (tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Optional<Plait_FloatTensor>:$momentum_buffer,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Optional<Plait_FloatTensor>:$new_buffer);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AdamWUpdateOp : Plait_Op<"adamw_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                          "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "one AdamW (or Adam) step as PyTorch's torch.optim.AdamW (Adam) computes it";
  let description = [{
    g = grad + l2 * param (torch.optim.Adam's weight_decay, added to the gradient; 0 for
    AdamW, whose decay is the decoupled `weight_decay`);
    param *= 1 - lr * weight_decay; m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g; param -= lr / (1 - beta1^step) * m /
    (sqrt(v) / sqrt(1 - beta2^step) + eps). With `amsgrad` (torch's amsgrad=True) the op
    also takes and gives max_exp_avg_sq, vmax = max(vmax, v), and the denominator uses
    vmax in place of v.

    ```mlir
    %p2, %m2, %v2 = plait.adamw_update %p, %g, %m, %v, %lr, %step
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>)
        -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       Plait_FloatTensor:$exp_avg, Plait_FloatTensor:$exp_avg_sq,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "0.0">:$l2,
                       Optional<Plait_FloatTensor>:$max_exp_avg_sq,
                       DefaultValuedAttr<BoolAttr, "false">:$amsgrad,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_exp_avg,
                      Plait_FloatTensor:$new_exp_avg_sq,
                      Optional<Plait_FloatTensor>:$new_max_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AdagradUpdateOp : Plait_Op<"adagrad_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "sum", "new_param", "new_sum"]>]> {
  let summary = "one Adagrad step as PyTorch's torch.optim.Adagrad computes it";
  let description = [{
    g = grad + weight_decay * param; clr = lr / (1 + (step - 1) * lr_decay);
    sum = sum + g * g; new_param = param - clr * g / (sqrt(sum) + eps). `sum` starts at
    `initial_accumulator_value` (torch's): the state holds 0 until the first step, which reads
    the attribute in its place.

    ```mlir
    %p2, %s2 = plait.adagrad_update %p, %g, %lr, %step, %s {eps = 1.0e-10 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>)
        -> (tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$sum,
                       DefaultValuedAttr<F64Attr, "0.0">:$lr_decay,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0e-10">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$initial_accumulator_value,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_sum);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RMSpropUpdateOp : Plait_Op<"rmsprop_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "one RMSprop step as PyTorch's torch.optim.RMSprop computes it";
  let description = [{
    g = grad + weight_decay * param; sq = alpha * sq + (1 - alpha) * g * g;
    centered: ga = alpha * ga + (1 - alpha) * g, avg = sqrt(sq - ga * ga) + eps; else
    avg = sqrt(sq) + eps. With momentum m > 0: buf = m * buf + g / avg and
    new_param = param - lr * buf; else new_param = param - lr * g / avg.

    `states` are square_avg, then grad_avg when `centered`, then the momentum buffer when
    momentum is non-zero (all start at 0, as in torch); `new_states` their new values in
    that order. `step` is not used by the rule; it keeps the operand layout of the other
    updates (param, grad, lr, step, states).

    ```mlir
    %p2, %sq2, %ga2 = plait.rmsprop_update %p, %g, %lr, %step, %sq, %ga
        {alpha = 0.99 : f64, centered = true}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Variadic<Plait_FloatTensor>:$states,
                       DefaultValuedAttr<F64Attr, "0.99">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<BoolAttr, "false">:$centered,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Variadic<Plait_FloatTensor>:$new_states);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_LionUpdateOp : Plait_Op<"lion_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "exp_avg", "new_param", "new_exp_avg"]>]> {
  let summary = "one Lion step (Chen et al. 2023, \"Symbolic Discovery of Optimization "
                "Algorithms\")";
  let description = [{
    param *= 1 - lr * weight_decay (decoupled, as AdamW);
    param -= lr * sign(beta1 * m + (1 - beta1) * grad); m = beta2 * m + (1 - beta2) * grad.
    One state, exp_avg, starting at 0. `step` is not used by the rule; it keeps the operand
    layout of the other updates (param, grad, lr, step, states).

    ```mlir
    %p2, %m2 = plait.lion_update %p, %g, %lr, %step, %m {beta2 = 0.98 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>)
        -> (tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$exp_avg,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.99">:$beta2,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_exp_avg);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AdamaxUpdateOp : Plait_Op<"adamax_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "exp_avg", "exp_inf", "new_param", "new_exp_avg",
                          "new_exp_inf"]>]> {
  let summary = "one Adamax step as PyTorch's torch.optim.Adamax computes it";
  let description = [{
    g = grad + weight_decay * param; m = beta1 * m + (1 - beta1) * g;
    u = max(beta2 * u, |g| + eps) (a NaN propagates, as torch.amax);
    new_param = param - lr / (1 - beta1^step) * m / u. States exp_avg and exp_inf, both
    starting at 0.

    ```mlir
    %p2, %m2, %u2 = plait.adamax_update %p, %g, %lr, %step, %m, %u {beta1 = 0.9 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$exp_avg, Plait_FloatTensor:$exp_inf,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_exp_avg,
                      Plait_FloatTensor:$new_exp_inf);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_NAdamUpdateOp : Plait_Op<"nadam_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                          "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "one NAdam step as PyTorch's torch.optim.NAdam computes it";
  let description = [{
    g = grad + weight_decay * param; mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));
    P_t = mu_1 * ... * mu_t (torch's mu_product, an f32 product); m = beta1 * m +
    (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g * g; d = sqrt(v / (1 - beta2^t)) + eps;
    param -= lr * (1 - mu_t) / (1 - P_t) * g / d;
    param -= lr * mu_{t+1} / (1 - P_t * mu_{t+1}) * m / d.
    States exp_avg and exp_avg_sq, both starting at 0; the momentum products follow from
    the step number, so no state holds them. With `decoupled_weight_decay` (PyTorch 2's
    NAdamW) the decay is param *= 1 - lr * weight_decay first, and g = grad.

    ```mlir
    %p2, %m2, %v2 = plait.nadam_update %p, %g, %lr, %step, %m, %v
        {momentum_decay = 4.0e-03 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$exp_avg, Plait_FloatTensor:$exp_avg_sq,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "4.0e-3">:$momentum_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$decoupled_weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_exp_avg,
                      Plait_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RAdamUpdateOp : Plait_Op<"radam_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                          "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "one RAdam step as PyTorch's torch.optim.RAdam computes it";
  let description = [{
    g = grad + weight_decay * param; m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g; mhat = m / (1 - beta1^t);
    rho_inf = 2 / (1 - beta2) - 1; rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t).
    rho_t > 5: param -= mhat * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t, r_t the
    variance rectification sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)
    (rho_inf - 2) rho_t)); else param -= mhat * lr. States exp_avg and exp_avg_sq. With
    `decoupled_weight_decay` (PyTorch 2's RAdamW) the decay is param *= 1 - lr *
    weight_decay first, and g = grad.

    ```mlir
    %p2, %m2, %v2 = plait.radam_update %p, %g, %lr, %step, %m, %v {}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$exp_avg, Plait_FloatTensor:$exp_avg_sq,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$decoupled_weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_exp_avg,
                      Plait_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AdadeltaUpdateOp : Plait_Op<"adadelta_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "square_avg", "acc_delta", "new_param",
                          "new_square_avg", "new_acc_delta"]>]> {
  let summary = "one Adadelta step as PyTorch's torch.optim.Adadelta computes it";
  let description = [{
    g = grad + weight_decay * param; sq = rho * sq + (1 - rho) * g * g;
    delta = sqrt(acc + eps) / sqrt(sq + eps) * g; acc = rho * acc + (1 - rho) * delta^2;
    new_param = param - lr * delta. States square_avg and acc_delta, both starting at 0.
    `step` is not used by the rule; it keeps the operand layout of the other updates.

    ```mlir
    %p2, %s2, %d2 = plait.adadelta_update %p, %g, %lr, %step, %s, %d {rho = 0.9 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$square_avg, Plait_FloatTensor:$acc_delta,
                       DefaultValuedAttr<F64Attr, "0.9">:$rho,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_square_avg,
                      Plait_FloatTensor:$new_acc_delta);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_RpropUpdateOp : Plait_Op<"rprop_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "prev", "step_size", "new_param", "new_prev",
                          "new_step_size"]>]> {
  let summary = "one Rprop step as PyTorch's torch.optim.Rprop computes it";
  let description = [{
    s = sign(grad * prev); f = etaplus where s > 0, etaminus where s < 0, else 1;
    step_size = clamp(step_size * f, step_size_min, step_size_max); g = grad, 0 where
    f == etaminus; new_param = param - sign(g) * step_size; new_prev = g. States prev and
    step_size, both starting at 0: on step 1 the step size is read as the lr (torch fills it
    with group['lr'] when it creates the state and never reads the lr again).

    ```mlir
    %p2, %q2, %s2 = plait.rprop_update %p, %g, %lr, %step, %q, %s {etaplus = 1.2 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$prev, Plait_FloatTensor:$step_size,
                       DefaultValuedAttr<F64Attr, "0.5">:$etaminus,
                       DefaultValuedAttr<F64Attr, "1.2">:$etaplus,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$step_size_min,
                       DefaultValuedAttr<F64Attr, "50.0">:$step_size_max,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_prev,
                      Plait_FloatTensor:$new_step_size);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AsgdUpdateOp : Plait_Op<"asgd_update",
    [Pure, Plait_OptimizerUpdate, AllTypesMatch<["param", "grad", "ax", "new_param", "new_ax"]>]> {
  let summary = "one ASGD step as PyTorch's torch.optim.ASGD computes it";
  let description = [{
    eta = lr on step 1, else lr / (1 + lambd * lr * (step - 1))^alpha; mu = 1 on step 1, else
    1 / max(1, step - 1 - t0), each rounded to f32 as torch keeps them, `lr` the previous
    step's (plait.hyper "prev_lr": torch computes them at the end of the step before, from
    that step's lr). g = grad + weight_decay * param; param *= 1 - lambd * eta;
    param -= eta * g; ax += (param - ax) * mu where mu != 1, else ax = param. One state,
    ax (the averaged params), starting at 0.

    ```mlir
    %p2, %a2 = plait.asgd_update %p, %g, %lr, %step, %a {t0 = 100.0 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>)
        -> (tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$ax,
                       DefaultValuedAttr<F64Attr, "1.0e-4">:$lambd,
                       DefaultValuedAttr<F64Attr, "0.75">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0e6">:$t0,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_ax);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_LambUpdateOp : Plait_Op<"lamb_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                          "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "one LAMB step (You et al. 2020, \"Large Batch Optimization for Deep "
                "Learning\"), as timm's Lamb computes it";
  let description = [{
    m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad * grad;
    u = (m / (1 - beta1^t)) / (sqrt(v) / sqrt(1 - beta2^t) + eps) + weight_decay * param.
    Where the param adapts (weight_decay != 0, or `always_adapt`), u is scaled by the trust
    ratio r = ||param|| / ||u|| (1 where either norm is 0; at most 1 with `trust_clip`), the
    norms over the whole param tensor; then param -= lr * u. States exp_avg and exp_avg_sq,
    both starting at 0 (timm's Lamb with bias_correction and grad_averaging, its default).

    Without `segments` the operands are whole params and the kernel takes the norms itself.
    On a flat shard (plait-shard) `segments` lists the lengths of the params laid end to
    end in the unit's flat buffer, cut into as many equal shards as a group of `groups` has
    ranks (this rank's is shard i, i its position in its group), and `norms` (S x 2: the
    sums of param^2 and u^2 of each segment over the whole unit, plait.lamb_norms summed over
    the group) gives each segment's ratio. Elements past the segments (padding) take ratio 1.

    ```mlir
    %p2, %m2, %v2 = plait.lamb_update %p, %g, %lr, %step, %m, %v {weight_decay = 0.01 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<8xf32>,
           tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$exp_avg, Plait_FloatTensor:$exp_avg_sq,
                       Optional<StaticShapeTensorOf<[F32]>>:$norms,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$always_adapt,
                       DefaultValuedAttr<BoolAttr, "false">:$trust_clip,
                       OptionalAttr<DenseI64ArrayAttr>:$segments,
                       OptionalAttr<Plait_RankGroups>:$groups,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale);
  let results = (outs Plait_FloatTensor:$new_param, Plait_FloatTensor:$new_exp_avg,
                      Plait_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the update scales by its trust ratio (timm: a non-zero weight decay, or
    /// always_adapt), and so needs its norms.
    bool adapts() {
      return getWeightDecay().convertToDouble() != 0.0 || getAlwaysAdapt();
    }
  }];
}

def Plait_AdafactorUpdateOp : Plait_Op<"adafactor_update",
    [Pure, Plait_OptimizerUpdate,
     AllTypesMatch<["param", "grad", "new_param"]>]> {
  let summary = "one Adafactor step (Shazeer and Stern 2018, \"Adafactor: Adaptive Learning "
                "Rates with Sublinear Memory Cost\"), as Hugging Face's Adafactor computes it";
  let description = [{
    With t the step: the step size is rho = lr (or, with `relative_step`, min(1e-2, 1/sqrt(t)),
    min(1e-6 t, 1/sqrt(t)) with `warmup_init`), times max(eps2, rms(param)) with
    `scale_parameter`; beta2t = 1 - t^decay_rate. The second moment of g^2 + eps1 is kept
    factored for a param of rank >= 2 (its last two dimensions R x C): exp_avg_sq_row (the
    shape without the last dimension) and exp_avg_sq_col (without the one before it), each
    beta2t * old + (1 - beta2t) * the mean of g^2 + eps1 over the dimension it lacks, and
    u = rsqrt(row / mean(row)) * rsqrt(col) * g; for a param of rank < 2 a whole
    exp_avg_sq, u = rsqrt(exp_avg_sq) * g. Then u /= max(1, rms(u) / clip_threshold),
    u *= rho; with `beta1`, exp_avg = beta1 * exp_avg + (1 - beta1) * u and u = exp_avg;
    param += param * (-weight_decay * rho); param -= u. rms is over the whole tensor.

    `states` are exp_avg (only with beta1), then exp_avg_sq_row and exp_avg_sq_col (rank >= 2)
    or exp_avg_sq, all starting at 0; `new_states` their new values in that order. With
    `relative_step` the lr operand (and lr_scale) is not read, as Hugging Face's relative
    step ignores the group's lr.

    On a flat shard (plait-shard) `segments` lists the element counts of the unit's params
    laid end to end in its flat buffer, cut into as many equal shards as a group of `groups`
    has ranks (this rank's is shard i, i its position in its group), and `factors` each
    param's last two dimensions (rows, cols; 0, 0 for a param of rank < 2): the layout
    codegen/schema/AdafactorShard.h describes. `param`, `grad` and exp_avg are this rank's
    shard; each param's second moment is whole on every rank (its exp_avg_sq_row and
    exp_avg_sq_col, or exp_avg_sq, of the param's own shapes, in segment order), and two
    more operands follow the states: `stats` (plait.adafactor_stats summed over the group)
    and `norms` (plait.adafactor_norms summed over the group). Every rank computes the same
    new second moments; each moves its shard's elements (padding past the segments stays).

    ```mlir
    %p2, %r2, %c2 = plait.adafactor_update %p, %g, %lr, %step, %r, %c {scale_parameter = false}
        : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<f64>, tensor<f32>, tensor<4xf32>,
           tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>)
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32, F64]>:$lr, StaticShapeTensorOf<[F32]>:$step,
                       Variadic<Plait_FloatTensor>:$states,
                       DefaultValuedAttr<F64Attr, "1.0e-30">:$eps1,
                       DefaultValuedAttr<F64Attr, "1.0e-3">:$eps2,
                       DefaultValuedAttr<F64Attr, "1.0">:$clip_threshold,
                       DefaultValuedAttr<F64Attr, "-0.8">:$decay_rate,
                       OptionalAttr<F64Attr>:$beta1,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "true">:$scale_parameter,
                       DefaultValuedAttr<BoolAttr, "false">:$relative_step,
                       DefaultValuedAttr<BoolAttr, "false">:$warmup_init,
                       DefaultValuedAttr<F64Attr, "1.0">:$lr_scale,
                       OptionalAttr<DenseI64ArrayAttr>:$segments,
                       OptionalAttr<DenseI64ArrayAttr>:$factors,
                       OptionalAttr<Plait_RankGroups>:$groups);
  let results = (outs Plait_FloatTensor:$new_param, Variadic<Plait_FloatTensor>:$new_states);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the second moment is kept as a row and a column (a param of rank >= 2; on a
    /// flat shard, per segment: `factors`).
    bool factored() {
      return mlir::cast<mlir::RankedTensorType>(getParam().getType()).getRank() >= 2;
    }
    /// An update of a flat shard (plait-shard): `segments`, and stats and norms after the
    /// states.
    bool sharded() { return getSegments().has_value(); }
    /// The states proper: `states` without a sharded update's stats and norms (once
    /// plait-shard has added them: two operands more than results).
    mlir::OperandRange getMomentStates() {
      return getStates().drop_back(getShardStats() ? 2 : 0);
    }
    /// A sharded update's stats and norms (null when not sharded, or before plait-shard
    /// has added them).
    mlir::Value getShardStats() {
      return sharded() && getStates().size() == getNewStates().size() + 2
                 ? getStates()[getStates().size() - 2] : mlir::Value();
    }
    mlir::Value getShardNorms() {
      return sharded() && getStates().size() == getNewStates().size() + 2
                 ? getStates().back() : mlir::Value();
    }
  }];
}

def Plait_AdafactorStatsOp : Plait_Op<"adafactor_stats", [Pure]> {
  let summary = "this rank's part of a sharded Adafactor update's sums";
  let description = [{
    For the flat shard that a sharded plait.adafactor_update moves (its `segments`,
    `factors` and `groups`), this rank's part of the sums the update needs from every rank's
    elements, in f64, laid out as codegen/schema/AdafactorShard.h says: per segment the sum of
    param^2; then per factored segment the sums of g^2 + eps1 over the row and the column of
    each of its rows and columns, and per unfactored one g^2 + eps1 of each element (0 where
    this rank holds none of them). Summed over the group (plait.all_reduce), they are the
    whole params' sums, which every rank folds into its whole second-moment states.

    ```mlir
    %s = plait.adafactor_stats %p, %g {segments = array<i64: 6, 2>,
        factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]}
        : (tensor<4xf32>, tensor<4xf32>) -> tensor<9xf64>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       DenseI64ArrayAttr:$segments, DenseI64ArrayAttr:$factors,
                       OptionalAttr<Plait_RankGroups>:$groups,
                       DefaultValuedAttr<F64Attr, "1.0e-30">:$eps1);
  let results = (outs StaticShapeTensorOf<[F64]>:$stats);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_AdafactorNormsOp : Plait_Op<"adafactor_norms", [Pure]> {
  let summary = "this rank's part of a sharded Adafactor update's sums of u^2";
  let description = [{
    For each segment of a sharded plait.adafactor_update, the sum over this rank's elements
    of u^2, u the update's direction before it is clipped (rsqrt(row / mean(row)) *
    rsqrt(col) * g, or rsqrt(exp_avg_sq) * g), from the new second moments that the
    update computes from the same `states` (each param's whole second-moment states, in
    segment order), `stats` (plait.adafactor_stats summed over the group) and step: an f64
    tensor of one sum per segment, to be summed over the group and given to the update,
    whose rms(u) it is.

    ```mlir
    %n = plait.adafactor_norms %p, %g, %step, %s, %r, %c, %v {segments = array<i64: 6, 2>,
        factors = array<i64: 2, 3, 0, 0>, groups = [array<i64: 0, 1>]}
        : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<9xf64>, tensor<2xf32>,
           tensor<3xf32>, tensor<2xf32>) -> tensor<2xf64>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32]>:$step, StaticShapeTensorOf<[F64]>:$stats,
                       Variadic<Plait_FloatTensor>:$states,
                       DenseI64ArrayAttr:$segments, DenseI64ArrayAttr:$factors,
                       OptionalAttr<Plait_RankGroups>:$groups,
                       DefaultValuedAttr<F64Attr, "-0.8">:$decay_rate);
  let results = (outs StaticShapeTensorOf<[F64]>:$norms);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_LambNormsOp : Plait_Op<"lamb_norms", [Pure]> {
  let summary = "this rank's part of a sharded LAMB update's per-param norms";
  let description = [{
    For each segment of a flat shard (as plait.lamb_update's `segments` and `groups` lay
    them out), the sums over this rank's elements of param^2 and of u^2, u the update
    direction lamb_update computes from the same operands and attributes: an S x 2 f32
    tensor, to be summed over the group (plait.all_reduce) and given to the update.

    ```mlir
    %n = plait.lamb_norms %p, %g, %step, %m, %v {segments = array<i64: 6, 1>,
        groups = [array<i64: 0, 1>]}
        : (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<4xf32>, tensor<4xf32>)
        -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Plait_FloatTensor:$param, Plait_FloatTensor:$grad,
                       StaticShapeTensorOf<[F32]>:$step,
                       Plait_FloatTensor:$exp_avg, Plait_FloatTensor:$exp_avg_sq,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DenseI64ArrayAttr:$segments,
                       OptionalAttr<Plait_RankGroups>:$groups);
  let results = (outs StaticShapeTensorOf<[F32]>:$norms);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Plait_WeightEmaOp : Plait_Op<"weight_ema", [Pure]> {
  let summary = "exponential moving averages of params' values, updated after each step";
  let description = [{
    new_ema = d * ema + (1 - d) * param for each of N params, where `param` is the param's
    value after this step's update and d depends on the step: 0 on step 1 (the average
    starts as a copy), then `decay`, or with `warmup` min(decay, (1 + n) / (10 + n)) with
    n = step - 1 (the updates averaged before). This is torch.optim.swa_utils.AveragedModel
    updated after every optimizer step with the average function d * avg + (1 - d) * p; with
    `warmup`, the decay of diffusers' EMAModel and TensorFlow's
    ExponentialMovingAverage(num_updates). d and 1 - d are computed in double and rounded to
    the param's type, as PyTorch multiplies a tensor by a Python float. One state per param,
    "<param>.ema", the averaged weights.

    The schedule of diffusers' EMAModel and ema_pytorch: with `power` > 0 the decay warms up
    as min(decay, 1 - (1 + n / inv_gamma)^-power) instead (EMAModel's use_ema_warmup); it is
    never below `min_decay` once averaging; `start` more steps copy the params (n = step - 1 -
    start, EMAModel's update_after_step); and with `every` = E the averages change only on
    steps 1, 1 + E, 1 + 2E, ... and keep their values between (ema_pytorch's update_every).

    The operands are the N new params, then their N averages, then the step; result k is
    average k's new value, of param k's type. plait-train-step builds one op per param;
    plait-group-updates merges those close together into one (one kernel walking the
    tensors, as PyTorch's torch._foreach_lerp_ does for timm's ModelEmaV3).

    ```mlir
    %e2 = plait.weight_ema %p2, %e, %step {decay = 0.999 : f64}
        : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
    %a2, %b2 = plait.weight_ema %p2, %q2, %a, %b, %step {decay = 0.999 : f64}
        : (tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<f32>)
          -> (tensor<8xf32>, tensor<4xf32>)
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs, F64Attr:$decay,
                       DefaultValuedAttr<BoolAttr, "false">:$warmup,
                       DefaultValuedAttr<F64Attr, "0.0">:$power,
                       DefaultValuedAttr<F64Attr, "1.0">:$inv_gamma,
                       DefaultValuedAttr<F64Attr, "0.0">:$min_decay,
                       DefaultValuedAttr<I64Attr, "0">:$start,
                       DefaultValuedAttr<I64Attr, "1">:$every);
  let results = (outs Variadic<Plait_FloatTensor>:$new_emas);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $new_emas)";
  let extraClassDeclaration = [{
    /// The params (and averages) this op averages.
    unsigned getNumAveraged() { return getNumResults(); }
    mlir::Value getParam(unsigned k) { return getOperand(k); }
    mlir::Value getEma(unsigned k) { return getOperand(getNumAveraged() + k); }
    mlir::Value getStep() { return getOperand(getNumOperands() - 1); }
  }];
  let hasVerifier = 1;
}

def Plait_GroupedUpdateOp : Plait_Op<"grouped_update", [Pure]> {
  let summary = "several optimizer updates of one kind computed by one kernel (plait-group-updates)";
  let description = [{
    `update` (adamw_update, sgd_update, adagrad_update, rmsprop_update, lion_update,
    adamax_update, nadam_update, radam_update, adadelta_update, rprop_update, asgd_update or
    lamb_update without `segments`) applied to each of N
    tensors: the operands are N groups of `operands_per_update` operands, each as that op
    takes them, and the results N groups of `results_per_update`. The op's other attributes
    are the update's (beta1, momentum, ...), the same for every tensor. Each tensor is updated
    exactly as the single op updates it; the kernel walks the list (PyTorch's multi-tensor
    "foreach" path, on one dispatch). A gradient may also be of its param's shape in bf16 or
    f16 (the param f32 or f64): the kernel widens it exactly as a cast before the update
    would, which plait-group-updates folds in so that the wide copy of the gradient is never
    stored.

    ```mlir
    %p2, %m2, %v2, %q2, %n2, %w2 = plait.grouped_update %p, %g, %m, %v, %lr, %step,
        %q, %h, %n, %w, %lr, %step
        {update = "adamw_update", operands_per_update = 6 : i64, results_per_update = 3 : i64}
        : (...) -> (...)
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$inputs, StrAttr:$update,
                       I64Attr:$operands_per_update, I64Attr:$results_per_update);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

#endif // PLAIT_OPTIMIZER_OPS_TD
