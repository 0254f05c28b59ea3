"""Reference optimizers for the parity tests, written from their papers and the libraries
that define them, where PyTorch 1.13 has none (or not the variant plait implements): Lion,
NAdam and RAdamW with PyTorch 2's decoupled weight decay, Hugging Face's Adafactor and timm's
Lamb. train_parity.py, random_models.py and dp_parity.py train against them.
"""
import math

import torch


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), which PyTorch
    1.13 does not have, as the paper's reference implementation computes it: decoupled weight
    decay, the sign of an interpolation of the moment and the gradient, then the moment. With
    maximize, the gradient negated first, as torch's optimizers do."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                exp_avg = state["exp_avg"]
                grad = -p.grad if group["maximize"] else p.grad
                p.mul_(1 - lr * wd)
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
                p.add_(update, alpha=-lr)
                exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)


class NAdam(torch.optim.Optimizer):
    """torch.optim.NAdam as PyTorch 2 computes it: 1.13's single-tensor rule with the fix of
    pytorch/pytorch#92699 (mu_product_next = mu_product * mu_next; 1.13 multiplied by mu once
    more), and PyTorch 2.1's decoupled_weight_decay (NAdamW: the params decayed first, the
    gradient left alone). mu_product stays an f32 0-d tensor, as in both versions."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 momentum_decay=4e-3, decoupled_weight_decay=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            wd, decay = group["weight_decay"], group["momentum_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0.0
                    state["mu_product"] = torch.tensor(1.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                step = state["step"]
                exp_avg, exp_avg_sq, mu_product = (state["exp_avg"], state["exp_avg_sq"],
                                                   state["mu_product"])
                grad = p.grad
                if wd != 0 and group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                elif wd != 0:
                    grad = grad.add(p, alpha=wd)
                bias_correction2 = 1 - beta2 ** step
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
                mu_product *= mu
                mu_product_next = mu_product.item() * mu_next
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product.item()))
                p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))


class RAdamW(torch.optim.Optimizer):
    """torch.optim.RAdam with PyTorch 2.1's decoupled_weight_decay=True (1.13 has no such
    option): 1.13's single-tensor rule, the params decayed by 1 - lr * weight_decay first and
    the gradient left alone."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = (group["lr"], group["betas"], group["eps"],
                                           group["weight_decay"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0.0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                step, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
                grad = p.grad
                if wd != 0:
                    p.mul_(1 - lr * wd)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_corrected_exp_avg = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive_lr = math.sqrt(bias_correction2) / exp_avg_sq.sqrt().add_(eps)
                    p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
                else:
                    p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


class Adafactor(torch.optim.Optimizer):
    """Hugging Face transformers' Adafactor (transformers/optimization.py; neither PyTorch
    1.13 nor this machine has it), step for step: the second moment of grad^2 + eps[0]
    factored into a row and a column for params of rank >= 2, the update's RMS clipped to
    clip_threshold, the step size lr (or min(1e-2, 1/sqrt(step)) with relative_step) times
    max(eps[1], rms(param)) with scale_parameter, an optional first moment (beta1), decoupled
    weight decay. With maximize, the gradient negated first (plait's --maximize)."""

    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0,
                 decay_rate=-0.8, beta1=None, weight_decay=0.0, scale_parameter=True,
                 relative_step=True, warmup_init=False, maximize=False):
        super().__init__(params, dict(lr=lr, eps=eps, clip_threshold=clip_threshold,
                                      decay_rate=decay_rate, beta1=beta1,
                                      weight_decay=weight_decay,
                                      scale_parameter=scale_parameter,
                                      relative_step=relative_step, warmup_init=warmup_init,
                                      maximize=maximize))

    @staticmethod
    def _get_lr(group, state):
        rel_step_sz = group["lr"]
        if group["relative_step"]:
            min_step = 1e-6 * state["step"] if group["warmup_init"] else 1e-2
            rel_step_sz = min(min_step, 1.0 / math.sqrt(state["step"]))
        param_scale = 1.0
        if group["scale_parameter"]:
            param_scale = max(group["eps"][1], state["RMS"])
        return param_scale * rel_step_sz

    @staticmethod
    def _rms(tensor):
        return tensor.norm(2) / (tensor.numel() ** 0.5)

    @staticmethod
    def _approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col):
        r_factor = (exp_avg_sq_row / exp_avg_sq_row.mean(dim=-1, keepdim=True)).rsqrt_()
        c_factor = exp_avg_sq_col.unsqueeze(-2).rsqrt()
        return torch.mul(r_factor.unsqueeze(-1), c_factor)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                shape = grad.shape
                factored = len(shape) >= 2
                use_first_moment = group["beta1"] is not None
                if not state:
                    state["step"] = 0
                    if use_first_moment:
                        state["exp_avg"] = torch.zeros_like(grad)
                    if factored:  # (HF's are f32: these take the gradient's dtype)
                        state["exp_avg_sq_row"] = torch.zeros(shape[:-1], dtype=grad.dtype)
                        state["exp_avg_sq_col"] = torch.zeros(shape[:-2] + shape[-1:],
                                                              dtype=grad.dtype)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                    state["RMS"] = 0
                state["step"] += 1
                state["RMS"] = self._rms(p)
                lr = self._get_lr(group, state)
                beta2t = 1.0 - math.pow(state["step"], group["decay_rate"])
                update = (grad ** 2) + group["eps"][0]
                if factored:
                    exp_avg_sq_row = state["exp_avg_sq_row"]
                    exp_avg_sq_col = state["exp_avg_sq_col"]
                    exp_avg_sq_row.mul_(beta2t).add_(update.mean(dim=-1), alpha=(1.0 - beta2t))
                    exp_avg_sq_col.mul_(beta2t).add_(update.mean(dim=-2), alpha=(1.0 - beta2t))
                    update = self._approx_sq_grad(exp_avg_sq_row, exp_avg_sq_col)
                    update.mul_(grad)
                else:
                    exp_avg_sq = state["exp_avg_sq"]
                    exp_avg_sq.mul_(beta2t).add_(update, alpha=(1.0 - beta2t))
                    update = exp_avg_sq.rsqrt().mul_(grad)
                update.div_((self._rms(update) / group["clip_threshold"]).clamp_(min=1.0))
                update.mul_(lr)
                if use_first_moment:
                    exp_avg = state["exp_avg"]
                    exp_avg.mul_(group["beta1"]).add_(update, alpha=(1 - group["beta1"]))
                    update = exp_avg
                if group["weight_decay"] != 0:
                    p.add_(p, alpha=(-group["weight_decay"] * lr))
                p.add_(-update)


class Lamb(torch.optim.Optimizer):
    """timm's Lamb (timm/optim/lamb.py; PyTorch 1.13 has none): bias correction and gradient
    averaging on, no gradient clipping of its own (max_grad_norm=None; plait's
    --clip-grad-norm is torch's clip_grad_norm_ before the step). The trust ratio
    ||p|| / ||update|| scales the update where the weight decay is non-zero or always_adapt
    is set, at most 1 with trust_clip. With maximize, the gradient negated first."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01,
                 always_adapt=False, trust_clip=False, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      always_adapt=always_adapt, trust_clip=trust_clip,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self):
        one = torch.tensor(1.0)
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = (group["lr"], group["betas"], group["eps"],
                                           group["weight_decay"])
            group["step"] = group.get("step", 0) + 1
            bias_correction1 = 1 - beta1 ** group["step"]
            bias_correction2 = 1 - beta2 ** group["step"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                grad = -p.grad if group["maximize"] else p.grad
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)
                update = (exp_avg / bias_correction1).div_(denom)
                if wd != 0:
                    update.add_(p, alpha=wd)
                if wd != 0 or group["always_adapt"]:
                    w_norm, g_norm = p.norm(2.0), update.norm(2.0)
                    ratio = torch.where(w_norm > 0,
                                        torch.where(g_norm > 0, w_norm / g_norm, one), one)
                    if group["trust_clip"]:
                        ratio = torch.minimum(ratio, one)
                    update.mul_(ratio)
                p.add_(update, alpha=-lr)
