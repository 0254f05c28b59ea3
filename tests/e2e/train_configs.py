"""The training configurations train_parity.py runs: per name, the sample, plait-compile's
flags, the PyTorch optimizer (and schedule, clipping, averaging) that must train the same
weights, and the parameter slices where only rounding noise can be compared (KEY_BIAS).
"""
import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_optimizers import Adafactor, Lamb, Lion, NAdam, RAdamW  # noqa: E402

# The key projection's bias (rows 32..63 of qkv.bias, d_model 32) has an exactly zero gradient:
# adding a constant to every key shifts each query's scores uniformly, which softmax cancels.
# Both frameworks compute it as rounding noise (~1e-9), and AdamW divides that noise by its own
# RMS, so these entries take lr-sized steps in directions set by the noise: they cannot agree
# between any two implementations. SGD keeps them at noise level, so gpt-sgd checks them.
KEY_BIAS = {f"blocks.{i}.attn.qkv.bias": slice(32, 64) for i in range(2)}
# The whole qkv biases: an Adafactor step divides each unfactored gradient by the root of its
# own square's average (g / |g| at step 1), and clips the update by its RMS over the whole
# tensor, so the key slice's rounding noise (|g| ~ 1e-10) moves the query and value parts too.
WHOLE_KEY_BIAS = {f"blocks.{i}.attn.qkv.bias": slice(0, None) for i in range(2)}
LR = torch.optim.lr_scheduler


def config(sample, flags, optimizer, lr_schedule=None, clip=None, noise_only=None,
           no_decay=None, lr_scale=None, groups=None, states=None, scheduler=None, ema=None,
           clip_value=None, label_smoothing=0.0, clip_norm_type=2.0):
    """flags: plait-compile's; optimizer: builds the same torch optimizer; lr_schedule:
    (kind, lr, warmup, total, min_lr), set on the torch groups each step; scheduler: instead,
    builds a torch.optim.lr_scheduler on the optimizer, stepped after each step; noise_only:
    weight slices whose gradient is exactly 0; no_decay: a regex of param names the torch optimizer gets in a second param group with
    weight_decay 0 (plait's --no-weight-decay); lr_scale: [(regex, factor)], first match wins,
    each a torch param group with lr = factor * the base lr (plait's --lr-scale); groups:
    [(regex, options)], first match wins, each a torch param group with those options
    (plait's --param-group); states: optimizer state keys (torch's) whose final values are
    compared too, from plait's checkpoint (plait-ckpt export --optimizer); ema: (decay,
    warmup), plait's --ema-decay [--ema-warmup]: its weights (--save-ema-weights) compared with
    a torch.optim.swa_utils.AveragedModel updated after each step; or a dict of ScheduledEma's
    settings (decay, warmup, power, inv_gamma, min_decay, start, every), each given to plait
    as its --ema-* flag, compared with ScheduledEma stepped after each step; clip_norm_type:
    clip_grad_norm_'s norm_type (plait's --clip-grad-norm-type, added to the flags where not 2),
    the config failing when no step's norm exceeded the clip."""
    if clip_norm_type != 2.0:
        flags = flags + ["--clip-grad-norm-type", "inf" if clip_norm_type == float("inf")
                         else repr(clip_norm_type)]
    if isinstance(ema, dict):
        flags = flags + ["--ema-decay", repr(ema["decay"])]
        for key, value in ema.items():
            if key != "decay":
                flag = "--ema-" + key.replace("_", "-")
                flags += [flag] if value is True else [flag, repr(value)]
    elif ema:
        flags = flags + ["--ema-decay", str(ema[0])] + (["--ema-warmup"] if ema[1] else [])
    return dict(sample=sample, flags=flags, optimizer=optimizer, schedule=lr_schedule,
                clip_value=clip_value, label_smoothing=label_smoothing,
                clip=clip, clip_norm_type=clip_norm_type, noise_only=noise_only or {},
                no_decay=no_decay, lr_scale=lr_scale,
                groups=groups, states=states, scheduler=scheduler, ema=ema)


def ema_average(decay, warmup):
    """AveragedModel's avg_fn for plait's weight EMA: decay * avg + (1 - decay) * p, the decay
    min(decay, (1 + n) / (10 + n)) with warmup (n: the updates averaged before; the first
    update_parameters copies)."""
    def average(avg, p, n):
        d = min(decay, (1 + int(n)) / (10 + int(n))) if warmup else decay
        return d * avg + (1 - d) * p
    return average


class ScheduledEma:
    """diffusers' EMAModel (0.2x: the shadow params a copy of the params when made; step()
    after each optimizer step, s -= (1 - d) * (s - p)) with ema_pytorch's update_every,
    written from their code, as neither is installed here. At optimization step t (from 1)
    the shadow changes only when (t - 1) % every == 0, with the decay d = get_decay(t):
    n = max(0, t - start - 1) (EMAModel's update_after_step = start); 0 while n <= 0 (the
    shadow becomes the params); else 1 - (1 + n / inv_gamma)^-power with power
    (use_ema_warmup=True), (1 + n) / (10 + n) with warmup (EMAModel's default), or the
    decay (AveragedModel); at most the decay and at least min_decay."""

    def __init__(self, params, decay, warmup=False, power=0.0, inv_gamma=1.0, min_decay=0.0,
                 start=0, every=1):
        self.params = list(params)
        self.shadow = [p.detach().clone() for p in self.params]
        self.decay, self.warmup, self.power, self.inv_gamma = decay, warmup, power, inv_gamma
        self.min_decay, self.start, self.every = min_decay, start, every
        self.optimization_step = 0

    def get_decay(self, t):
        n = max(0, t - self.start - 1)
        if n <= 0:
            return 0.0
        if self.power:
            value = 1 - (1 + n / self.inv_gamma) ** -self.power
        else:
            value = (1 + n) / (10 + n) if self.warmup else self.decay
        return max(min(value, self.decay), self.min_decay)

    @torch.no_grad()
    def step(self):
        self.optimization_step += 1
        t = self.optimization_step
        if (t - 1) % self.every:
            return
        one_minus_decay = 1 - self.get_decay(t)
        for s, p in zip(self.shadow, self.params):
            s.sub_(one_minus_decay * (s - p))


def warmed(warmup, after):
    """torch's scheduler `after` (a function of the optimizer) behind a linear warm-up of
    `warmup` steps from lr / warmup, as plait warms up: SequentialLR(LinearLR, after)."""
    if warmup == 0:
        return after
    return lambda opt: LR.SequentialLR(
        opt, [LR.LinearLR(opt, start_factor=1 / warmup, total_iters=warmup - 1), after(opt)],
        milestones=[warmup])


class CyclicBeta1:
    """CyclicLR cycling the first beta of an optimizer with betas, as PyTorch 2.2's does (its
    use_beta1; 1.13's cycles a 'momentum' entry only, and refuses an optimizer without one):
    1.13's scheduler cycles a 'momentum' entry, copied into each group's first beta after each
    of its steps."""

    def __init__(self, optimizer, **kwargs):
        optimizer.defaults.setdefault("momentum", 0.0)
        self.optimizer = optimizer
        self.scheduler = LR.CyclicLR(optimizer, **kwargs)
        self.copy()

    def copy(self):
        for group in self.optimizer.param_groups:
            group["betas"] = (group["momentum"], *group["betas"][1:])

    def step(self):
        self.scheduler.step()
        self.copy()


class PlateauOnLoss:
    """ReduceLROnPlateau stepped with the mean training loss of each `window` steps (summed
    in step order, as plait's LrController sums them), as a script steps it each epoch with
    the epoch's loss. Records the lr each step ran at (`lrs`)."""
    reads_loss = True

    def __init__(self, optimizer, window=1, **kwargs):
        self.optimizer, self.window, self.losses, self.lrs = optimizer, window, [], []
        self.scheduler = LR.ReduceLROnPlateau(optimizer, **kwargs)

    def step(self, loss):
        self.lrs.append(self.optimizer.param_groups[0]["lr"])
        self.losses.append(loss)
        if len(self.losses) == self.window:
            total = 0.0
            for value in self.losses:
                total += value
            self.scheduler.step(total / len(self.losses))
            self.losses = []


def plateau(window=1, **kwargs):
    """A config's scheduler: PlateauOnLoss(optimizer, window, **kwargs)."""
    def build(optimizer):
        return PlateauOnLoss(optimizer, window, **kwargs)
    build.reads_loss = True
    return build


CONFIGS = {
    "mlp-sgd": config("mlp", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                              "--nesterov", "--weight-decay", "1e-4"],
                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                                weight_decay=1e-4)),
    "mlp-adamw": config("mlp", ["--optimizer", "adamw", "--lr", "3e-3"],
                        lambda p: torch.optim.AdamW(p, lr=3e-3)),
    "cnn-sgd": config("cnn", ["--optimizer", "sgd", "--lr", "0.02", "--momentum", "0.5",
                              "--dampening", "0.1"],
                      lambda p: torch.optim.SGD(p, lr=0.02, momentum=0.5, dampening=0.1)),
    "cnn-adamw": config("cnn", ["--optimizer", "adamw", "--lr", "2e-3", "--betas", "0.8,0.99",
                                "--weight-decay", "0.05"],
                        lambda p: torch.optim.AdamW(p, lr=2e-3, betas=(0.8, 0.99),
                                                    weight_decay=0.05)),
    "cnn-adam": config("cnn", ["--optimizer", "adam", "--lr", "2e-3", "--betas", "0.8,0.99",
                               "--weight-decay", "0.05"],
                       lambda p: torch.optim.Adam(p, lr=2e-3, betas=(0.8, 0.99),
                                                  weight_decay=0.05)),
    "mlp-rmsprop": config("mlp", ["--optimizer", "rmsprop", "--lr", "1e-3", "--alpha", "0.9",
                                  "--centered", "--momentum", "0.5", "--weight-decay", "1e-4"],
                          lambda p: torch.optim.RMSprop(p, lr=1e-3, alpha=0.9, centered=True,
                                                        momentum=0.5, weight_decay=1e-4)),
    "mlp-adagrad": config("mlp", ["--optimizer", "adagrad", "--lr", "0.05"],
                          lambda p: torch.optim.Adagrad(p, lr=0.05)),
    "cnn-adagrad": config("cnn", ["--optimizer", "adagrad", "--lr", "0.02", "--lr-decay", "0.01",
                                  "--weight-decay", "1e-3", "--eps", "1e-8"],
                          lambda p: torch.optim.Adagrad(p, lr=0.02, lr_decay=0.01,
                                                        weight_decay=1e-3, eps=1e-8)),
    "cnn-rmsprop": config("cnn", ["--optimizer", "rmsprop", "--lr", "3e-4"],
                          lambda p: torch.optim.RMSprop(p, lr=3e-4)),
    "cnn-adam-amsgrad": config("cnn", ["--optimizer", "adam", "--lr", "2e-3", "--betas",
                                       "0.8,0.9", "--weight-decay", "0.05", "--amsgrad"],
                               lambda p: torch.optim.Adam(p, lr=2e-3, betas=(0.8, 0.9),
                                                          weight_decay=0.05, amsgrad=True)),
    "mlp-lion": config("mlp", ["--optimizer", "lion", "--lr", "1e-3", "--weight-decay", "0.1"],
                       lambda p: Lion(p, lr=1e-3, weight_decay=0.1)),
    # --maximize: the gradients of -loss (a loss gradient of -1), as torch's maximize=True
    # negates each gradient before the update; weight decay still pulls towards 0.
    "mlp-sgd-maximize": config("mlp", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                                       "--weight-decay", "1e-4", "--maximize"],
                               lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9,
                                                         weight_decay=1e-4, maximize=True)),
    "cnn-adam-maximize": config("cnn", ["--optimizer", "adam", "--lr", "1e-3", "--weight-decay",
                                        "0.05", "--maximize"],
                                lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=0.05,
                                                           maximize=True)),
    "mlp-adagrad-init": config("mlp", ["--optimizer", "adagrad", "--lr", "0.05",
                                       "--initial-accumulator-value", "0.1"],
                               lambda p: torch.optim.Adagrad(p, lr=0.05,
                                                             initial_accumulator_value=0.1)),
    "mlp-adamax": config("mlp", ["--optimizer", "adamax", "--weight-decay", "1e-3"],
                         lambda p: torch.optim.Adamax(p, lr=2e-3, weight_decay=1e-3)),
    "cnn-adamax": config("cnn", ["--optimizer", "adamax", "--lr", "1e-3", "--betas", "0.8,0.99"],
                         lambda p: torch.optim.Adamax(p, lr=1e-3, betas=(0.8, 0.99))),
    "mlp-lamb": config("mlp", ["--optimizer", "lamb", "--lr", "1e-2", "--weight-decay", "0.05"],
                       lambda p: Lamb(p, lr=1e-2, weight_decay=0.05)),
    "cnn-lamb-adapt": config("cnn", ["--optimizer", "lamb", "--weight-decay", "0",
                                     "--always-adapt", "--trust-clip", "--betas", "0.9,0.99"],
                             lambda p: Lamb(p, weight_decay=0.0, betas=(0.9, 0.99),
                                            always_adapt=True, trust_clip=True)),
    "mlp-nadam": config("mlp", ["--optimizer", "nadam", "--weight-decay", "1e-3"],
                        lambda p: NAdam(p, lr=2e-3, weight_decay=1e-3)),
    "cnn-nadam": config("cnn", ["--optimizer", "nadam", "--lr", "1e-3", "--momentum-decay",
                                "0.01", "--betas", "0.85,0.99"],
                        lambda p: NAdam(p, lr=1e-3, betas=(0.85, 0.99), momentum_decay=0.01)),
    # RAdam's first 5 steps are plain momentum steps (rho_t <= 5), the rest rectified.
    "mlp-radam": config("mlp", ["--optimizer", "radam", "--lr", "3e-3", "--weight-decay", "1e-3"],
                        lambda p: torch.optim.RAdam(p, lr=3e-3, weight_decay=1e-3)),
    "cnn-radam": config("cnn", ["--optimizer", "radam", "--betas", "0.9,0.99"],
                        lambda p: torch.optim.RAdam(p, lr=1e-3, betas=(0.9, 0.99))),
    # PyTorch 2.1's NAdamW and RAdamW (decoupled_weight_decay=True).
    "mlp-nadamw": config("mlp", ["--optimizer", "nadam", "--weight-decay", "0.1",
                                 "--decoupled-weight-decay"],
                         lambda p: NAdam(p, lr=2e-3, weight_decay=0.1,
                                         decoupled_weight_decay=True)),
    "cnn-radamw": config("cnn", ["--optimizer", "radam", "--weight-decay", "0.1",
                                 "--decoupled-weight-decay"],
                         lambda p: RAdamW(p, lr=1e-3, weight_decay=0.1)),
    # Biases and norms without weight decay (a second torch param group): plait keeps their
    # updates apart, and plait-shard their units (the dp tests shard them).
    "gpt-adamw-no-decay": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                         "--weight-decay", "0.1", "--no-weight-decay",
                                         "bias|ln"],
                                 lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=0.1),
                                 noise_only=KEY_BIAS, no_decay="bias|ln"),
    "cnn-sgd-no-decay": config("cnn", ["--optimizer", "sgd", "--lr", "0.02", "--momentum", "0.9",
                                       "--weight-decay", "0.01", "--no-weight-decay", "bias"],
                               lambda p: torch.optim.SGD(p, lr=0.02, momentum=0.9,
                                                         weight_decay=0.01),
                               no_decay="bias"),
    # --param-group: per-param betas, eps and weight decay (torch param groups' own options).
    "gpt-adamw-param-groups": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                             "--param-group", "wte|wpe:betas=0.8/0.95,eps=1e-6",
                                             "--param-group", "ln:weight_decay=0",
                                             "--param-group", "fc:weight_decay=0.1"],
                                     lambda p: torch.optim.AdamW(p, lr=3e-3),
                                     noise_only=KEY_BIAS,
                                     groups=[("wte|wpe", dict(betas=(0.8, 0.95), eps=1e-6)),
                                             ("ln", dict(weight_decay=0.0)),
                                             ("fc", dict(weight_decay=0.1))]),
    "mlp-sgd-param-groups": config("mlp", ["--optimizer", "sgd", "--lr", "0.05", "--momentum",
                                           "0.9", "--param-group", "bias:momentum=0",
                                           "--param-group", "head:momentum=0.5"],
                                   lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                                   groups=[("bias", dict(momentum=0.0)),
                                           ("head", dict(momentum=0.5))]),
    "cnn-rmsprop-param-groups": config("cnn", ["--optimizer", "rmsprop", "--lr", "3e-4",
                                               "--param-group", "conv:alpha=0.9,momentum=0.5",
                                               "--param-group", "bias:eps=1e-6"],
                                       lambda p: torch.optim.RMSprop(p, lr=3e-4),
                                       groups=[("conv", dict(alpha=0.9, momentum=0.5)),
                                               ("bias", dict(eps=1e-6))]),
    # --param-group switches: a group's own nesterov, amsgrad, centered, decoupled weight decay
    # or LAMB's always_adapt and trust_clip (torch param groups carry them too).
    "mlp-sgd-nesterov-groups": config("mlp", ["--optimizer", "sgd", "--lr", "0.05", "--momentum",
                                              "0.9", "--param-group", "fc1:nesterov=true",
                                              "--param-group", "bias:dampening=0.1"],
                                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                                      groups=[("fc1", dict(nesterov=True)),
                                              ("bias", dict(dampening=0.1))]),
    "cnn-adam-amsgrad-groups": config("cnn", ["--optimizer", "adam", "--lr", "2e-3",
                                              "--weight-decay", "0.05", "--betas", "0.8,0.9",
                                              "--param-group", "conv:amsgrad=true"],
                                      lambda p: torch.optim.Adam(p, lr=2e-3, betas=(0.8, 0.9),
                                                                 weight_decay=0.05),
                                      groups=[("conv", dict(amsgrad=True))]),
    "mlp-rmsprop-centered-groups": config("mlp", ["--optimizer", "rmsprop", "--lr", "1e-3",
                                                  "--centered", "--momentum", "0.5",
                                                  "--param-group", "bias:centered=false"],
                                          lambda p: torch.optim.RMSprop(p, lr=1e-3,
                                                                        centered=True,
                                                                        momentum=0.5),
                                          groups=[("bias", dict(centered=False))]),
    "mlp-nadam-decoupled-groups": config("mlp", ["--optimizer", "nadam", "--weight-decay", "0.1",
                                                 "--param-group",
                                                 "weight:decoupled_weight_decay=true"],
                                         lambda p: NAdam(p, lr=2e-3, weight_decay=0.1),
                                         groups=[("weight",
                                                  dict(decoupled_weight_decay=True))]),
    "gpt-lamb-param-groups": config("gpt", ["--optimizer", "lamb", "--lr", "3e-3",
                                            "--param-group",
                                            "bias|ln:weight_decay=0,always_adapt=true,"
                                            "trust_clip=true"],
                                    lambda p: Lamb(p, lr=3e-3),
                                    groups=[("bias|ln", dict(weight_decay=0.0, always_adapt=True,
                                                             trust_clip=True))]),
    # maximize per param group: those params ascend the loss (torch negates their gradients
    # first thing in its step, after clipping), the others descend; with --maximize, a group's
    # maximize=false descends.
    "gpt-adamw-maximize-groups": config("gpt", ["--optimizer", "adamw", "--lr", "1e-3",
                                                "--clip-grad-norm", "1.0", "--param-group",
                                                "wte|wpe:maximize=true", "--param-group",
                                                "ln:weight_decay=0,maximize=true"],
                                        lambda p: torch.optim.AdamW(p, lr=1e-3), clip=1.0,
                                        noise_only=KEY_BIAS,
                                        groups=[("wte|wpe", dict(maximize=True)),
                                                ("ln", dict(weight_decay=0.0, maximize=True))]),
    "mlp-sgd-maximize-groups": config("mlp", ["--optimizer", "sgd", "--lr", "0.05",
                                              "--momentum", "0.9", "--weight-decay", "1e-3",
                                              "--param-group", "fc1:maximize=true"],
                                      lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9,
                                                                weight_decay=1e-3),
                                      groups=[("fc1", dict(maximize=True))]),
    "cnn-adam-maximize-except": config("cnn", ["--optimizer", "adam", "--lr", "1e-3",
                                               "--weight-decay", "0.05", "--maximize",
                                               "--param-group", "conv1:maximize=false"],
                                       lambda p: torch.optim.Adam(p, lr=1e-3, weight_decay=0.05,
                                                                  maximize=True),
                                       groups=[("conv1", dict(maximize=False))]),
    "mlp-lion-maximize-groups": config("mlp", ["--optimizer", "lion", "--lr", "1e-3",
                                               "--weight-decay", "0.1", "--param-group",
                                               "head:maximize=true"],
                                       lambda p: Lion(p, lr=1e-3, weight_decay=0.1),
                                       groups=[("head", dict(maximize=True))]),
    "gpt-lamb-maximize-groups": config("gpt", ["--optimizer", "lamb", "--lr", "3e-3",
                                               "--param-group", "lm_head:maximize=true"],
                                       lambda p: Lamb(p, lr=3e-3), noise_only=KEY_BIAS,
                                       groups=[("lm_head", dict(maximize=True))]),
    # --lr-scale: per-param learning rates (torch param groups), scaled by the schedule with the
    # base; with sharding, each unit split by its updates' settings.
    "gpt-adamw-lr-scale": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                         "--lr-scale", "wte|wpe=0.1,ln=2",
                                         "--no-weight-decay", "bias|ln",
                                         "--lr-schedule", "cosine", "--warmup-steps", "5",
                                         "--total-steps", "30", "--min-lr", "3e-4"],
                                 lambda p: torch.optim.AdamW(p, lr=3e-3),
                                 lr_schedule=("cosine", 3e-3, 5, 30, 3e-4),
                                 noise_only=KEY_BIAS, no_decay="bias|ln",
                                 lr_scale=[("wte|wpe", 0.1), ("ln", 2.0)]),
    "mlp-sgd-lr-scale": config("mlp", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                                       "--lr-scale", "fc1=0.5,head=0"],
                               lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                               lr_scale=[("fc1", 0.5), ("head", 0.0)]),
    "mlp-adadelta": config("mlp", ["--optimizer", "adadelta", "--weight-decay", "1e-3"],
                           lambda p: torch.optim.Adadelta(p, lr=1.0, weight_decay=1e-3)),
    "cnn-adadelta": config("cnn", ["--optimizer", "adadelta", "--lr", "0.5", "--rho", "0.95",
                                   "--eps", "1e-5"],
                           lambda p: torch.optim.Adadelta(p, lr=0.5, rho=0.95, eps=1e-5)),
    "gpt-sgd": config("gpt", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9",
                              "--lr-schedule", "linear-warmup", "--warmup-steps", "10"],
                      lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                      lr_schedule=("linear-warmup", 0.1, 10, 0, 0.0)),
    "gpt-adamw": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3", "--clip-grad-norm", "1.0",
                                "--lr-schedule", "cosine", "--warmup-steps", "5",
                                "--total-steps", "30", "--min-lr", "3e-4"],
                        lambda p: torch.optim.AdamW(p, lr=3e-3),
                        lr_schedule=("cosine", 3e-3, 5, 30, 3e-4), clip=1.0,
                        noise_only=KEY_BIAS),
    # The later schedules against torch's own schedulers (StepLR, ExponentialLR,
    # PolynomialLR behind a LinearLR warm-up), inverse-sqrt and wsd against LambdaLR.
    "mlp-sgd-step-lr": config("mlp", ["--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9",
                                      "--lr-schedule", "step", "--warmup-steps", "3",
                                      "--lr-gamma", "0.5", "--lr-step-size", "7"],
                              lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                              scheduler=warmed(3, lambda o: LR.StepLR(o, step_size=7,
                                                                      gamma=0.5))),
    "cnn-sgd-multistep-lr": config("cnn", ["--optimizer", "sgd", "--lr", "0.05", "--momentum",
                                           "0.9", "--lr-schedule", "multistep",
                                           "--warmup-steps", "2", "--lr-gamma", "0.3",
                                           "--lr-milestones", "5,9,20"],
                                   lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                                   scheduler=warmed(2, lambda o: LR.MultiStepLR(
                                       o, milestones=[5, 9, 20], gamma=0.3))),
    "gpt-adamw-cosine-restarts-lr": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                                   "--lr-schedule", "cosine-restarts",
                                                   "--warmup-steps", "2", "--lr-cycle-steps",
                                                   "4", "--lr-cycle-mult", "2", "--min-lr",
                                                   "3e-4"],
                                           lambda p: torch.optim.AdamW(p, lr=3e-3),
                                           noise_only=KEY_BIAS,
                                           scheduler=warmed(2, lambda o:
                                                            LR.CosineAnnealingWarmRestarts(
                                                                o, T_0=4, T_mult=2,
                                                                eta_min=3e-4))),
    "cnn-adam-exponential-lr": config("cnn", ["--optimizer", "adam", "--lr", "3e-3",
                                              "--lr-schedule", "exponential", "--lr-gamma",
                                              "0.9"],
                                      lambda p: torch.optim.Adam(p, lr=3e-3),
                                      scheduler=lambda o: LR.ExponentialLR(o, gamma=0.9)),
    "gpt-adamw-polynomial-lr": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                              "--lr-schedule", "polynomial", "--warmup-steps",
                                              "4", "--total-steps", "24", "--lr-power", "2"],
                                      lambda p: torch.optim.AdamW(p, lr=3e-3),
                                      noise_only=KEY_BIAS,
                                      scheduler=warmed(4, lambda o: LR.PolynomialLR(
                                          o, total_iters=20, power=2.0))),
    "gpt-adamw-linear-lr": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                          "--lr-schedule", "linear", "--warmup-steps", "5",
                                          "--total-steps", "30", "--lr-scale", "wte|wpe=0.1"],
                                  lambda p: torch.optim.AdamW(p, lr=3e-3),
                                  lr_scale=[("wte|wpe", 0.1)], noise_only=KEY_BIAS,
                                  scheduler=warmed(5, lambda o: LR.PolynomialLR(
                                      o, total_iters=25, power=1.0))),
    "mlp-sgd-inverse-sqrt-lr": config("mlp", ["--optimizer", "sgd", "--lr", "0.2",
                                              "--lr-schedule", "inverse-sqrt",
                                              "--warmup-steps", "4"],
                                      lambda p: torch.optim.SGD(p, lr=0.2),
                                      scheduler=lambda o: LR.LambdaLR(
                                          o, lambda e: (e + 1) / 4 if e < 4
                                          else math.sqrt(4 / (e + 1)))),
    # The weight EMA (torch's AveragedModel with an exponential average): a copy on step 1,
    # then a constant decay, or diffusers' warm-up min(D, t / (t + 9)).
    "mlp-sgd-ema": config("mlp", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"],
                          lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), ema=(0.8, False)),
    "gpt-adamw-ema-warmup": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3"],
                                   lambda p: torch.optim.AdamW(p, lr=3e-3),
                                   noise_only=KEY_BIAS, ema=(0.95, True)),
    # diffusers' EMAModel(use_ema_warmup=True, power=2/3, update_after_step=3) with a floor,
    # and EMAModel's (1 + n) / (10 + n) warm-up updated every 3 steps (ema_pytorch's
    # update_every): plait's --ema-power, --ema-start, --ema-min-decay, --ema-every.
    "gpt-adamw-ema-power": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3"],
                                  lambda p: torch.optim.AdamW(p, lr=3e-3), noise_only=KEY_BIAS,
                                  ema=dict(decay=0.999, power=2 / 3, inv_gamma=2.0,
                                           min_decay=0.6, start=3)),
    "mlp-sgd-ema-every": config("mlp", ["--optimizer", "sgd", "--lr", "0.05",
                                        "--momentum", "0.9"],
                                lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                                ema=dict(decay=0.9, warmup=True, start=1, every=3)),
    "gpt-adamw-wsd-lr": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                       "--lr-schedule", "wsd", "--warmup-steps", "3",
                                       "--total-steps", "30", "--decay-steps", "10",
                                       "--min-lr", "3e-4"],
                               lambda p: torch.optim.AdamW(p, lr=3e-3), noise_only=KEY_BIAS,
                               scheduler=lambda o: LR.LambdaLR(
                                   o, lambda e: (e + 1) / 3 if e < 3 else 1.0 if e < 20
                                   else 0.1 + 0.9 * (1 - min(1.0, (e - 19) / 10)))),
    # The cyclical schedules against torch's OneCycleLR and CyclicLR, which cycle the
    # momentum (SGD's and RMSprop's, even where the optimizer was built without) or the first
    # beta against the lr: NAdam's momentum products then walk the cycled betas.
    "mlp-sgd-onecycle-lr": config("mlp", ["--optimizer", "sgd", "--lr", "0.1", "--lr-schedule",
                                          "onecycle", "--total-steps", "30"],
                                  lambda p: torch.optim.SGD(p, lr=0.1),
                                  scheduler=lambda o: LR.OneCycleLR(o, max_lr=0.1,
                                                                    total_steps=30)),
    "gpt-adamw-onecycle-lr": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                            "--lr-schedule", "onecycle", "--total-steps", "30",
                                            "--lr-three-phase", "--lr-anneal", "linear",
                                            "--lr-pct-start", "0.25", "--lr-div-factor", "10",
                                            "--lr-final-div-factor", "100", "--base-momentum",
                                            "0.8", "--max-momentum", "0.9"],
                                    lambda p: torch.optim.AdamW(p, lr=3e-3), noise_only=KEY_BIAS,
                                    scheduler=lambda o: LR.OneCycleLR(
                                        o, max_lr=3e-3, total_steps=30, three_phase=True,
                                        anneal_strategy="linear", pct_start=0.25, div_factor=10,
                                        final_div_factor=100, base_momentum=0.8,
                                        max_momentum=0.9)),
    "cnn-nadam-onecycle-lr": config("cnn", ["--optimizer", "nadam", "--lr", "2e-3",
                                            "--lr-schedule", "onecycle", "--total-steps", "40"],
                                    lambda p: NAdam(p, lr=2e-3),
                                    scheduler=lambda o: LR.OneCycleLR(o, max_lr=2e-3,
                                                                      total_steps=40)),
    "mlp-lamb-onecycle-lr": config("mlp", ["--optimizer", "lamb", "--lr", "3e-3",
                                           "--lr-schedule", "onecycle", "--total-steps", "30",
                                           "--lr-pct-start", "0.4"],
                                   lambda p: Lamb(p, lr=3e-3),
                                   scheduler=lambda o: LR.OneCycleLR(o, max_lr=3e-3,
                                                                     total_steps=30,
                                                                     pct_start=0.4)),
    "mlp-rmsprop-cyclic-lr": config("mlp", ["--optimizer", "rmsprop", "--lr", "1e-2",
                                            "--alpha", "0.9", "--lr-schedule", "cyclic",
                                            "--min-lr", "1e-3", "--lr-step-size", "4",
                                            "--lr-step-size-down", "6", "--lr-cyclic-mode",
                                            "triangular2"],
                                    lambda p: torch.optim.RMSprop(p, lr=1e-2, alpha=0.9),
                                    scheduler=lambda o: LR.CyclicLR(
                                        o, base_lr=1e-3, max_lr=1e-2, step_size_up=4,
                                        step_size_down=6, mode="triangular2")),
    "cnn-sgd-cyclic-lr": config("cnn", ["--optimizer", "sgd", "--lr", "0.05", "--momentum",
                                        "0.9", "--lr-schedule", "cyclic", "--min-lr", "0.005",
                                        "--lr-step-size", "5", "--lr-cyclic-mode", "exp_range",
                                        "--lr-gamma", "0.97", "--no-cycle-momentum"],
                                lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                                scheduler=lambda o: LR.CyclicLR(
                                    o, base_lr=0.005, max_lr=0.05, step_size_up=5,
                                    mode="exp_range", gamma=0.97, cycle_momentum=False)),
    "gpt-adam-cyclic-lr": config("gpt", ["--optimizer", "adam", "--lr", "3e-3",
                                         "--lr-schedule", "cyclic", "--min-lr", "3e-4",
                                         "--lr-step-size", "5"],
                                 lambda p: torch.optim.Adam(p, lr=3e-3), noise_only=KEY_BIAS,
                                 scheduler=lambda o: CyclicBeta1(o, base_lr=3e-4, max_lr=3e-3,
                                                                 step_size_up=5)),
    # ReduceLROnPlateau on the training loss (the mean of each --lr-plateau-steps window, as a
    # script steps it each epoch): each step's lr compared too, as the same doubles. The
    # thresholds are set so that the short runs reduce the lr several times.
    "mlp-sgd-plateau-lr": config("mlp", ["--optimizer", "sgd", "--lr", "0.1", "--momentum",
                                         "0.9", "--lr-schedule", "plateau", "--lr-patience",
                                         "1", "--lr-plateau-steps", "2", "--lr-threshold",
                                         "0.02", "--lr-gamma", "0.5"],
                                 lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                                 scheduler=plateau(2, patience=1, threshold=0.02, factor=0.5)),
    "gpt-adamw-plateau-lr": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                           "--lr-schedule", "plateau", "--lr-patience", "0",
                                           "--lr-threshold-mode", "abs", "--lr-threshold",
                                           "0.15", "--lr-cooldown", "2", "--lr-plateau-steps",
                                           "3", "--lr-gamma", "0.5", "--min-lr", "5e-4"],
                                   lambda p: torch.optim.AdamW(p, lr=3e-3), noise_only=KEY_BIAS,
                                   scheduler=plateau(3, patience=0, threshold_mode="abs",
                                                     threshold=0.15, cooldown=2, factor=0.5,
                                                     min_lr=5e-4)),
    # ASGD's eta reads the lr of the step before (prev_lr): after a reduction, the old one.
    "cnn-asgd-plateau-lr": config("cnn", ["--optimizer", "asgd", "--lr", "0.02", "--lambd",
                                          "1e-3", "--lr-schedule", "plateau", "--lr-patience",
                                          "2", "--lr-threshold", "0.01", "--lr-gamma", "0.3"],
                                  lambda p: torch.optim.ASGD(p, lr=0.02, lambd=1e-3,
                                                             foreach=False),
                                  scheduler=plateau(patience=2, threshold=0.01, factor=0.3),
                                  states=["ax"]),
    # Value clipping (torch's clip_grad_value_ after backward): alone, and before norm
    # clipping as a script calling both.
    "mlp-sgd-clip-value": config("mlp", ["--optimizer", "sgd", "--lr", "0.1", "--momentum",
                                         "0.9", "--clip-grad-value", "0.01"],
                                 lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                                 clip_value=0.01),
    "gpt-adamw-clip-value": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                           "--clip-grad-value", "2e-3", "--clip-grad-norm",
                                           "0.05"],
                                   lambda p: torch.optim.AdamW(p, lr=3e-3), noise_only=KEY_BIAS,
                                   clip=0.05, clip_value=2e-3),
    # clip_grad_norm_'s other norms (norm_type): the largest |g| (inf), the 1-norm, and a p
    # that is neither (|g|^p summed, then ^(1/p)).
    "gpt-adamw-clip-inf": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                         "--clip-grad-norm", "0.01"],
                                 lambda p: torch.optim.AdamW(p, lr=3e-3), noise_only=KEY_BIAS,
                                 clip=0.01, clip_norm_type=float("inf")),
    "mlp-sgd-clip-norm1": config("mlp", ["--optimizer", "sgd", "--lr", "0.1", "--momentum",
                                         "0.9", "--clip-grad-norm", "0.5"],
                                 lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                                 clip=0.5, clip_norm_type=1.0),
    "cnn-adam-clip-norm3": config("cnn", ["--optimizer", "adam", "--lr", "1e-2",
                                          "--clip-grad-norm", "0.02"],
                                  lambda p: torch.optim.Adam(p, lr=1e-2),
                                  clip=0.02, clip_norm_type=3.0),
    # Label smoothing (torch's CrossEntropyLoss(label_smoothing), which the ONNX export
    # cannot carry): plait-compile --label-smoothing on the exported loss.
    "mlp-sgd-label-smoothing": config("mlp", ["--optimizer", "sgd", "--lr", "0.1",
                                              "--momentum", "0.9", "--label-smoothing", "0.1"],
                                      lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                                      label_smoothing=0.1),
    "cnn-adam-label-smoothing": config("cnn", ["--optimizer", "adam", "--lr", "1e-3",
                                               "--label-smoothing", "0.2"],
                                       lambda p: torch.optim.Adam(p, lr=1e-3),
                                       label_smoothing=0.2),
    "gpt-adamw-label-smoothing": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3",
                                                "--label-smoothing", "0.1"],
                                        lambda p: torch.optim.AdamW(p, lr=3e-3),
                                        noise_only=KEY_BIAS, label_smoothing=0.1),
    "gpt-adamw-amsgrad": config("gpt", ["--optimizer", "adamw", "--lr", "3e-3", "--betas",
                                        "0.9,0.95", "--amsgrad"],
                                lambda p: torch.optim.AdamW(p, lr=3e-3, betas=(0.9, 0.95),
                                                            amsgrad=True),
                                noise_only=KEY_BIAS),
    # Lion's steps are signs: a gradient at rounding noise (the key bias) moves by lr either way.
    "gpt-lion": config("gpt", ["--optimizer", "lion", "--lr", "3e-4", "--betas", "0.9,0.95",
                               "--clip-grad-norm", "1.0"],
                       lambda p: Lion(p, lr=3e-4, betas=(0.9, 0.95)), clip=1.0,
                       noise_only=KEY_BIAS),
    # RMSprop's first steps are lr * g / sqrt((1 - alpha) * g^2), sign-like: with alpha 0.99
    # and momentum 0.9 they add up to ~100 lr-sized steps whose sign follows gradients near 0,
    # and single fc weights drift 1.5e-5 apart within 30 steps (losses still within 1.4e-7).
    # alpha 0.9 keeps the same rule (momentum, clipping) out of that regime.
    "gpt-nadam": config("gpt", ["--optimizer", "nadam", "--lr", "1e-3", "--clip-grad-norm", "1.0"],
                        lambda p: NAdam(p, lr=1e-3), clip=1.0, noise_only=KEY_BIAS),
    "gpt-radam": config("gpt", ["--optimizer", "radam", "--lr", "1e-3", "--betas", "0.9,0.99",
                                "--clip-grad-norm", "1.0"],
                        lambda p: torch.optim.RAdam(p, lr=1e-3, betas=(0.9, 0.99)), clip=1.0,
                        noise_only=KEY_BIAS),
    # LAMB (timm's): the trust ratio where the weight decay is non-zero; the GPT as BERT is
    # trained with it, biases and norms without decay (nor adaptation), gradients clipped.
    "gpt-lamb": config("gpt", ["--optimizer", "lamb", "--lr", "3e-3", "--clip-grad-norm", "1.0",
                               "--no-weight-decay", "bias|ln"],
                       lambda p: Lamb(p, lr=3e-3), clip=1.0, noise_only=KEY_BIAS,
                       no_decay="bias|ln"),
    # Adafactor (Hugging Face's): the second moment factored for matrices (and the cnn's
    # 4-D kernels, over their last two dimensions), the step scaled by each param's RMS; with
    # a first moment and decoupled decay; the relative step (the lr ignored).
    "mlp-adafactor": config("mlp", ["--optimizer", "adafactor", "--lr", "1e-2"],
                            lambda p: Adafactor(p, lr=1e-2, relative_step=False),
                            states=["exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_sq"]),
    "cnn-adafactor": config("cnn", ["--optimizer", "adafactor", "--lr", "3e-3", "--beta1", "0.9",
                                    "--weight-decay", "0.01", "--no-scale-parameter"],
                            lambda p: Adafactor(p, lr=3e-3, beta1=0.9, weight_decay=0.01,
                                                scale_parameter=False, relative_step=False),
                            states=["exp_avg", "exp_avg_sq_row", "exp_avg_sq_col"]),
    "gpt-adafactor": config("gpt", ["--optimizer", "adafactor", "--relative-step",
                                    "--clip-threshold", "0.5", "--decay-rate", "-0.6",
                                    "--clip-grad-norm", "1.0"],
                            lambda p: Adafactor(p, clip_threshold=0.5, decay_rate=-0.6),
                            clip=1.0, noise_only=WHOLE_KEY_BIAS),
    # Rprop's steps are signs times per-element step sizes (lr on step 1, then grown by etaplus
    # or shrunk by etaminus as each gradient keeps or flips its sign).
    "mlp-rprop": config("mlp", ["--optimizer", "rprop"],
                        lambda p: torch.optim.Rprop(p, lr=1e-2)),
    "cnn-rprop": config("cnn", ["--optimizer", "rprop", "--lr", "2e-3", "--etas", "0.4,1.3",
                                "--step-sizes", "1e-4,5e-3"],
                        lambda p: torch.optim.Rprop(p, lr=2e-3, etas=(0.4, 1.3),
                                                    step_sizes=(1e-4, 5e-3))),
    # torch reads the lr only when it creates the state (step 1's step size): a warm-up sets
    # that one step size and nothing after it.
    "mlp-rprop-warmup": config("mlp", ["--optimizer", "rprop", "--lr", "1e-2", "--lr-schedule",
                                       "linear-warmup", "--warmup-steps", "4"],
                               lambda p: torch.optim.Rprop(p, lr=1e-2),
                               lr_schedule=("linear-warmup", 1e-2, 4, 0, 0.0)),
    "gpt-rprop": config("gpt", ["--optimizer", "rprop", "--lr", "1e-3", "--step-sizes",
                                "1e-6,1e-2", "--clip-grad-norm", "1.0"],
                        lambda p: torch.optim.Rprop(p, lr=1e-3, step_sizes=(1e-6, 1e-2)),
                        clip=1.0, noise_only=KEY_BIAS),
    # ASGD: SGD with eta decayed by the step (lambd, alpha) and, from step t0 on, the params
    # averaged into its state ax. eta and mu are f32 tensors in torch, set from each step's lr
    # at its end, so a schedule reaches eta one step late.
    "mlp-asgd": config("mlp", ["--optimizer", "asgd"],
                       lambda p: torch.optim.ASGD(p, lr=1e-2, foreach=False), states=["ax"]),
    "gpt-asgd": config("gpt", ["--optimizer", "asgd", "--lr", "0.05", "--weight-decay", "1e-3",
                               "--lambd", "1e-2", "--clip-grad-norm", "1.0"],
                       lambda p: torch.optim.ASGD(p, lr=0.05, lambd=1e-2, weight_decay=1e-3,
                                                  foreach=False),
                       clip=1.0, states=["ax"]),
    # t0 10: averaging (mu < 1) from step 12 on.
    "cnn-asgd-t0": config("cnn", ["--optimizer", "asgd", "--lr", "0.02", "--t0", "10",
                                  "--lambd", "1e-3", "--asgd-alpha", "0.6"],
                          lambda p: torch.optim.ASGD(p, lr=0.02, t0=10, lambd=1e-3, alpha=0.6,
                                                     foreach=False), states=["ax"]),
    "mlp-asgd-warmup": config("mlp", ["--optimizer", "asgd", "--lr", "0.05", "--lambd", "0.1",
                                      "--t0", "5", "--lr-schedule", "linear-warmup",
                                      "--warmup-steps", "8"],
                              lambda p: torch.optim.ASGD(p, lr=0.05, lambd=0.1, t0=5,
                                                         foreach=False),
                              lr_schedule=("linear-warmup", 0.05, 8, 0, 0.0), states=["ax"]),
    "gpt-adamw-maximize": config("gpt", ["--optimizer", "adamw", "--lr", "1e-3",
                                         "--clip-grad-norm", "1.0", "--maximize"],
                                 lambda p: torch.optim.AdamW(p, lr=1e-3, maximize=True),
                                 clip=1.0, noise_only=KEY_BIAS),
    "gpt-rmsprop": config("gpt", ["--optimizer", "rmsprop", "--lr", "2e-4", "--alpha", "0.9",
                                  "--momentum", "0.9", "--clip-grad-norm", "1.0"],
                          lambda p: torch.optim.RMSprop(p, lr=2e-4, alpha=0.9, momentum=0.9),
                          clip=1.0, noise_only=KEY_BIAS),
}
