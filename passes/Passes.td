// Every plait pass, declared once; TableGen writes the declarations and create functions.
#ifndef PLAIT_PASSES_TD
#define PLAIT_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintMemoryPlanPass : Pass<"plait-test-print-memory-plan", "mlir::ModuleOp"> {
  let summary = "Print the arena plan of every function (for tests)";
  let description = [{
    Runs the memory-plan analysis (liveness over program order, then offsets in one arena)
    and prints, per function, the arena size, the liveness lower bound and one line per
    buffer:

    ```
    memory-plan @main: arena = 192, lower_bound = 192, values = 3
      %0 "x" input: offset = 0, size = 64, live = [0, 1]
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64", "Byte alignment of every buffer">,
    Option<"inPlace", "in-place", "bool", "true",
           "plan assigned values inside their param or state when safe">,
    Option<"reshapeAlias", "reshape-alias", "bool", "true",
           "plan reshape results in their operand's bytes when safe">,
    Option<"elementwiseAlias", "elementwise-alias", "bool", "true",
           "plan elementwise results (fused and single ops) in a dying operand's bytes "
           "when safe">,
    Option<"collectiveAlias", "collective-alias", "bool", "true",
           "plan all-reduce results in their operand's bytes (in place) when safe">
  ];
}

def BuildTrainStepPass : Pass<"plait-build-train-step", "mlir::ModuleOp"> {
  let summary = "Turn a forward model into one training step: loss, backward, optimizer";
  let description = [{
    The entry function's first result must be the scalar loss. Every `plait.param` not
    matched by `freeze` is trainable. The pass builds the gradients (reverse-mode autodiff
    through the VJP interface, with no work for values that do not reach a param), clips
    them by global norm when asked, appends one optimizer update per param with its state
    as `plait.state` tensors and the step's learning rate as `plait.hyper "lr"`, stores the
    new values with `plait.assign`, and returns only the loss. The learning-rate schedule
    is recorded as the module attribute `plait.lr_schedule` for the plan.

    With `micro-batches` = K > 1 the entry function computes one micro-batch: each argument
    leads with the micro-batch size b and becomes K * b long. The forward and backward run
    K times in turn, on the slices [k*b, (k+1)*b) of the arguments (`plait.slice`); each
    micro-batch's gradients are added to the running sums where they are produced, so its
    activations die before the next micro-batch starts. The sums are divided by K, clipped,
    and applied by one optimizer update; the step's loss is the mean of the K losses.

    Before:
    ```mlir
    func.func @main(%x: tensor<2x4xf32>) -> tensor<f32> {
      %w = plait.param "w" {init = "ones"} : tensor<4x1xf32>
      %y = plait.matmul %x, %w : (tensor<2x4xf32>, tensor<4x1xf32>) -> tensor<2x1xf32>
      %l = plait.reduce_mean %y {axes = array<i64>, keepdims = false} : (tensor<2x1xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (sgd): the same forward ops, then `transpose`/`matmul` for the gradient of `w`,
    `plait.sgd_update %w, %dw, %lr, %step` and `plait.assign %w, %w_new`.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adam, adamw, adagrad, rmsprop, lion, adamax, nadam, radam, adadelta, rprop, "
           "asgd, lamb or adafactor">,
    Option<"lr", "lr", "double", "-1.0",
           "base learning rate; negative means PyTorch's default for the optimizer (adagrad, "
           "rmsprop, rprop, asgd 1e-2; adamax, nadam 2e-3; adadelta 1; lion 1e-4; else 1e-3)">,
    Option<"beta1", "beta1", "double", "0.9",
           "beta1 of Adam, AdamW, Lion, Adamax, NAdam, RAdam and LAMB">,
    Option<"beta2", "beta2", "double", "-1.0",
           "beta2 of Adam, AdamW, Lion, Adamax, NAdam, RAdam and LAMB; negative means PyTorch's "
           "(lion's paper's) default (lion 0.99, else 0.999)">,
    Option<"eps", "eps", "double", "-1.0",
           "epsilon; negative means PyTorch's default (adagrad 1e-10, adadelta and lamb "
           "1e-6, else 1e-8)">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "weight decay; negative means the optimizer's PyTorch default (adamw and lamb "
           "0.01, else 0); adamw and lion decay the params, lamb adds it to the update, the "
           "others add it to the gradient">,
    Option<"momentum", "momentum", "double", "0.0", "SGD and RMSprop momentum">,
    Option<"alpha", "alpha", "double", "0.99", "RMSprop smoothing constant">,
    Option<"centered", "centered", "bool", "false",
           "RMSprop: normalise by the gradient's estimated variance">,
    Option<"lrDecay", "lr-decay", "double", "0.0", "Adagrad learning-rate decay">,
    Option<"initialAccumulatorValue", "initial-accumulator-value", "double", "0.0",
           "Adagrad: the value its sum starts from">,
    Option<"rho", "rho", "double", "0.9", "Adadelta: the decay of its two averages">,
    Option<"etaminus", "etaminus", "double", "0.5",
           "Rprop: the step-size factor where the gradient's sign flips">,
    Option<"etaplus", "etaplus", "double", "1.2",
           "Rprop: the step-size factor where the gradient keeps its sign">,
    Option<"stepSizeMin", "step-size-min", "double", "1.0e-6", "Rprop: the smallest step size">,
    Option<"stepSizeMax", "step-size-max", "double", "50.0", "Rprop: the largest step size">,
    Option<"lambd", "lambd", "double", "1.0e-4", "ASGD: the decay term of its eta">,
    Option<"asgdAlpha", "asgd-alpha", "double", "0.75", "ASGD: the power of its eta's decay">,
    Option<"t0", "t0", "double", "1.0e6", "ASGD: the step after which it starts averaging">,
    Option<"decoupledWeightDecay", "decoupled-weight-decay", "bool", "false",
           "NAdam and RAdam: decay the params (PyTorch 2's NAdamW / RAdamW) instead of adding "
           "the weight decay to the gradient">,
    Option<"momentumDecay", "momentum-decay", "double", "4.0e-3",
           "NAdam: the momentum schedule's decay">,
    Option<"alwaysAdapt", "always-adapt", "bool", "false",
           "LAMB: scale every param's update by its trust ratio, also where its weight decay "
           "is 0 (timm's always_adapt)">,
    Option<"trustClip", "trust-clip", "bool", "false",
           "LAMB: the trust ratio at most 1 (timm's trust_clip, LAMBC)">,
    Option<"adafactorBeta1", "adafactor-beta1", "double", "-1.0",
           "Adafactor: keep a first moment with this beta1 (Hugging Face's beta1; negative: "
           "none, its default)">,
    Option<"eps2", "eps2", "double", "1.0e-3",
           "Adafactor: the least param RMS its step is scaled by (Hugging Face's eps[1]; "
           "eps is eps[0], added to the squared gradient, default 1e-30)">,
    Option<"clipThreshold", "clip-threshold", "double", "1.0",
           "Adafactor: the RMS above which an update is scaled down">,
    Option<"decayRate", "decay-rate", "double", "-0.8",
           "Adafactor: the second moment's beta2 is 1 - step^decay-rate">,
    Option<"relativeStep", "relative-step", "bool", "false",
           "Adafactor: the lr is min(1e-2, 1/sqrt(step)) (Hugging Face's relative_step), not "
           "the schedule's">,
    Option<"warmupInit", "warmup-init", "bool", "false",
           "Adafactor with relative-step: min(1e-6 * step, 1/sqrt(step))">,
    Option<"noScaleParameter", "no-scale-parameter", "bool", "false",
           "Adafactor: do not scale the step by the param's RMS (Hugging Face's "
           "scale_parameter=False)">,
    Option<"amsgrad", "amsgrad", "bool", "false",
           "Adam and AdamW: the AMSGrad variant (the largest second moment seen)">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"maximize", "maximize", "bool", "false",
           "maximize the loss (torch's maximize: every optimizer steps along the negated "
           "gradients, from a loss gradient of -1; a param group's maximize=false descends)">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"freeze", "freeze", "std::string", "\"\"", "regex of param names not to train">,
    Option<"lrScale", "lr-scale", "std::string", "\"\"",
           "per-param learning-rate factors 'REGEX=F,...' (first match wins; the others 1), as "
           "torch param groups with lr = F * the base lr">,
    Option<"paramGroups", "param-groups", "std::string", "\"\"",
           "per-param optimizer settings 'REGEX:KEY=V,...;REGEX:...' (first match wins; keys "
           "betas=B1/B2, eps, momentum, weight_decay, dampening, alpha, lr_decay, "
           "initial_accumulator_value, rho, momentum_decay, etas=M/P, step_sizes=MIN/MAX, "
           "lambd, t0; true/false: nesterov, amsgrad, "
           "centered, decoupled_weight_decay, always_adapt, trust_clip: those the optimizer "
           "has; maximize: any), as torch param groups">,
    Option<"noWeightDecay", "no-weight-decay", "std::string", "\"\"",
           "regex of param names trained without weight decay (biases and norms, as a torch "
           "param group with weight_decay 0)">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "clip gradients to this global norm (0: off)">,
    Option<"clipGradNormType", "clip-grad-norm-type", "double", "2.0",
           "the p of clip-grad-norm's p-norm: any p > 0, or inf (the largest |g|), as "
           "torch's clip_grad_norm_ norm_type">,
    Option<"logGradNorm", "log-grad-norm", "bool", "false",
           "add the gradients' global norm (clip-grad-norm-type's) as the step's grad_norm "
           "output without clipping (it is added whenever clip-grad-norm is set)">,
    Option<"clipGradValue", "clip-grad-value", "double", "0.0",
           "clamp every gradient element to [-V, V] (0: off), before norm clipping, as "
           "torch's clip_grad_value_">,
    Option<"labelSmoothing", "label-smoothing", "double", "0.0",
           "smooth the targets of every softmax_cross_entropy by this much (0: off), as "
           "torch's CrossEntropyLoss(label_smoothing)">,
    Option<"emaDecay", "ema-decay", "double", "0.0",
           "keep an exponential moving average of the trainable params, updated after each "
           "step with this decay (0: off; plait.weight_ema, states '<param>.ema')">,
    Option<"emaWarmup", "ema-warmup", "bool", "false",
           "the EMA's decay at step t is min(ema-decay, t / (t + 9)) (diffusers' EMAModel)">,
    Option<"emaPower", "ema-power", "double", "0.0",
           "> 0: the EMA's decay warms up as min(ema-decay, 1 - (1 + n / ema-inv-gamma)^-P), n "
           "the averaging steps (diffusers' EMAModel(use_ema_warmup=True), ema_pytorch)">,
    Option<"emaInvGamma", "ema-inv-gamma", "double", "1.0",
           "the power warm-up's inv_gamma">,
    Option<"emaMinDecay", "ema-min-decay", "double", "0.0",
           "the least decay once averaging (EMAModel's min_decay)">,
    Option<"emaStart", "ema-start", "int64_t", "0",
           "steps after the first whose EMA is still a copy of the params (EMAModel's "
           "update_after_step)">,
    Option<"emaEvery", "ema-every", "int64_t", "1",
           "update the EMA on steps 1, 1 + N, 1 + 2N, ... only (ema_pytorch's update_every)">,
    Option<"emaBuffers", "ema-buffers", "bool", "false",
           "average the float buffers (BatchNorm's running statistics) too, as "
           "AveragedModel(use_buffers=True) and timm's ModelEma do">,
    Option<"schedule", "schedule", "std::string", "\"constant\"",
           "learning-rate schedule: constant, linear-warmup, cosine, linear, polynomial, step, "
           "exponential, inverse-sqrt, wsd, onecycle, cyclic, plateau (runtime/LrSchedule.h)">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0", "warm-up steps of the schedule">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "the step at which cosine, linear, polynomial and wsd reach min-lr">,
    Option<"minLr", "min-lr", "double", "0.0",
           "final learning rate of cosine, linear, polynomial and wsd">,
    Option<"lrGamma", "lr-gamma", "double", "0.0",
           "step and exponential schedules: the factor; plateau: the reduction's (0: 0.1)">,
    Option<"lrStepSize", "lr-step-size", "int64_t", "0",
           "step schedule: steps between two factors">,
    Option<"lrPower", "lr-power", "double", "1.0", "polynomial schedule: the exponent">,
    Option<"decaySteps", "decay-steps", "int64_t", "0",
           "wsd schedule: the final steps, which decay to min-lr">,
    Option<"lrCycleSteps", "lr-cycle-steps", "int64_t", "0",
           "cosine-restarts schedule: the first cycle's steps">,
    Option<"lrCycleMult", "lr-cycle-mult", "int64_t", "1",
           "cosine-restarts schedule: each cycle this many times the one before">,
    Option<"lrPctStart", "lr-pct-start", "double", "0.3",
           "onecycle schedule: the fraction of the steps over which lr rises (pct_start)">,
    Option<"lrAnneal", "lr-anneal", "std::string", "\"cos\"",
           "onecycle schedule: cos or linear (anneal_strategy)">,
    Option<"lrThreePhase", "lr-three-phase", "bool", "false",
           "onecycle schedule: back down to lr / div-factor before the final decay">,
    Option<"lrDivFactor", "lr-div-factor", "double", "25.0",
           "onecycle schedule: the first lr is lr / div-factor">,
    Option<"lrFinalDivFactor", "lr-final-div-factor", "double", "1.0e4",
           "onecycle schedule: the last lr is lr / div-factor / final-div-factor">,
    Option<"lrStepSizeDown", "lr-step-size-down", "int64_t", "0",
           "cyclic schedule: steps down from lr to min-lr (0: lr-step-size)">,
    Option<"lrCyclicMode", "lr-cyclic-mode", "std::string", "\"triangular\"",
           "cyclic schedule: triangular, triangular2 or exp_range">,
    Option<"lrPatience", "lr-patience", "int64_t", "10",
           "plateau schedule: windows without improvement tolerated before a reduction">,
    Option<"lrThreshold", "lr-threshold", "double", "1.0e-4",
           "plateau schedule: the improvement on the best loss that counts">,
    Option<"lrThresholdMode", "lr-threshold-mode", "std::string", "\"rel\"",
           "plateau schedule: rel (best * (1 - threshold)) or abs (best - threshold)">,
    Option<"lrCooldown", "lr-cooldown", "int64_t", "0",
           "plateau schedule: windows ignored after a reduction">,
    Option<"lrEps", "lr-eps", "double", "1.0e-8",
           "plateau schedule: reductions of this much or less are skipped">,
    Option<"lrPlateauSteps", "lr-plateau-steps", "int64_t", "1",
           "plateau schedule: steps whose mean loss is one reading of the metric">,
    Option<"cycleMomentum", "cycle-momentum", "bool", "true",
           "onecycle and cyclic: cycle the momentum (or first beta) against lr, as torch's "
           "cycle_momentum">,
    Option<"baseMomentum", "base-momentum", "double", "-1.0",
           "the cycled momentum's low (at lr's peak); < 0: 0.85 (onecycle), 0.8 (cyclic)">,
    Option<"maxMomentum", "max-momentum", "double", "-1.0",
           "the cycled momentum's high; < 0: 0.95 (onecycle), 0.9 (cyclic)">,
    ListOption<"lrMilestones", "lr-milestones", "int64_t",
               "multistep schedule: the steps after the warm-up at which lr is multiplied by "
               "lr-gamma">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "micro-batches per step: the function is one micro-batch, the step K of them">,
    Option<"precision", "precision", "std::string", "\"fp32\"",
           "fp32, or bf16-mixed: the forward and backward in bf16 (params cast from their "
           "f32 masters, float inputs cast, losses computed in f32), the optimizer in f32">
  ];
}

def DivideBatchPass : Pass<"plait-divide-batch", "mlir::ModuleOp"> {
  let summary = "Rewrite a model written at batch B to compute one micro-batch of B / K";
  let description = [{
    What plait-compile does to a `.mlir` model before `--micro-batches K` builds the step
    (ONNX models are divided by the importer). B is the leading dimension of the entry
    function's arguments, which must all lead with it; they lead with B / K. The new shapes
    follow the batch through the body: each op's results are inferred again (ops with a shape
    rule), shaped as their batched operand (elementwise ops, casts, norms), or have the
    dimension that carries the batch divided (reshape, broadcast_to, attention's lse, a
    dropout mask by the operand it multiplies); a slice over the whole batch dimension keeps
    taking all of it. An op the batch cannot pass (a constant or attribute that pins it, a
    reshape that splits it) is an error at that op.

    ```mlir
    // plait-divide-batch{micro-batches=2}
    %y = plait.reshape %x : (tensor<4x16x64xf32>) -> tensor<64x64xf32>
    // becomes
    %y = plait.reshape %x : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    ```
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", "1", "K, which must divide the batch">
  ];
}

def ShardPass : Pass<"plait-shard", "mlir::ModuleOp"> {
  let summary = "Place each parameter unit (ddp, zero1/2/3, fsdp, hsdp:G) and shard its state";
  let description = [{
    Runs on a training step (after plait-build-train-step). Params are grouped into units:
    by default one per repeated block, from the param names (`blocks.3.attn.qkv.weight`
    belongs to `blocks.3`; a name without a numbered component to its first component), or,
    with `unit-size`, consecutive params in first-use order until a unit holds that many bytes.
    Each unit gets a placement: `strategy` for all, then the first `placement` rule whose regex
    matches the unit name (`REGEX=STRATEGY,...`). The module records `plait.world_size` and
    `plait.units`.

    - `ddp`: gradients become `plait.sync_grad` over all ranks (bucketed later).
    - `zero1`, `zero2`: the unit's gradients are flattened into one padded buffer whose
      `sync_grad` gives this rank's shard (zero1 at the end of backward, zero2 as soon as the
      unit's gradients exist); the optimizer updates this rank's shard of the flat params
      (`local_shard`) with shard-sized state, and `unshard` rebuilds the replicated params.
    - `zero3`, `fsdp`: params live as `plait.param_shard`; `unshard` gives the whole unit
      before its forward uses, and again before its backward uses unless
      `reshard-after-forward=false`; the optimizer updates the shard in place.
    - `hsdp:G`: as fsdp inside groups of G consecutive ranks, gradients also averaged across
      the groups.

    With micro-batches (plait-build-train-step's `micro-batches`), a unit whose gradients are
    sharded (zero2, zero3, fsdp, hsdp) reduce-scatters each micro-batch's gradients as soon
    as they exist and sums them in its shard, as DeepSpeed's ZeRO-2/3 and FSDP do: no whole
    gradient outlives its micro-batch, for K times the reduce-scatters. With
    `sharded-accumulation=false` (and for ddp and zero1) the whole gradients are summed over
    the micro-batches and reduced once. Such units are recorded with
    `accumulate_in_shard = true` in `plait.units`. An hsdp unit with K >= 3 micro-batches
    reduce-scatters each in its shard group only, sums the first K - 1 shards unreduced and
    all-reduces that sum across the replicas once, where the last micro-batch's reduction
    starts; the last shard is reduced in both groups: two all-reduces per step, not K
    (`defer-replica-reduce=false`: each micro-batch's shard all-reduced by itself).

    Frozen params stay replicated and are not communicated. The step's loss is unchanged
    (plait-insert-collectives averages it over the ranks).

    A `plait.sync_mean` (a synchronised BatchNorm's statistic) becomes an all_reduce (mean)
    over every rank, or its operand on one rank; a constant marked `plait.unbiased_ranks`
    (n / (n - 1) for n values of this rank's batch, `plait.unbiased_count = n`) becomes that
    of n * world-size values. The module records `plait.sync_means` {all_reduces,
    statistics, elements, world_size}.
  }];
  let options = [
    Option<"worldSize", "world-size", "int64_t", "1", "number of data-parallel ranks">,
    Option<"strategy", "strategy", "std::string", "\"ddp\"",
           "placement of every unit: ddp, zero1, zero2, zero3, fsdp or hsdp:G">,
    Option<"placement", "placement", "std::string", "\"\"",
           "per-unit placements REGEX=STRATEGY,... (first matching rule wins)">,
    Option<"unitSize", "unit-size", "int64_t", "0",
           "group params into units of at least this many bytes (0: one unit per block)">,
    Option<"reshardAfterForward", "reshard-after-forward", "bool", "true",
           "zero3/fsdp/hsdp: free gathered params after forward and gather again for backward">,
    Option<"shardedAccumulation", "sharded-accumulation", "bool", "true",
           "with micro-batches, zero2/zero3/fsdp/hsdp units reduce-scatter each micro-batch's "
           "gradients and sum them in their shards (off: whole gradients summed, reduced once)">,
    Option<"deferReplicaReduce", "defer-replica-reduce", "bool", "true",
           "with sharded accumulation, hsdp units all-reduce across their replicas the sum of "
           "the first K-1 micro-batches' shards, then the last's (off: every micro-batch's)">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "0.0",
           "world size > 1: clip the averaged gradients to this global norm (0: off)">,
    Option<"clipGradNormType", "clip-grad-norm-type", "double", "2.0",
           "the p of clip-grad-norm's p-norm: any p > 0, or inf">,
    Option<"logGradNorm", "log-grad-norm", "bool", "false",
           "world size > 1: add the averaged gradients' global norm as the step's grad_norm "
           "output without clipping">,
    Option<"clipGradValue", "clip-grad-value", "double", "0.0",
           "world size > 1: clamp the averaged gradients' elements to [-V, V] (0: off), "
           "before norm clipping">
  ];
}

def InsertCollectivesPass : Pass<"plait-insert-collectives", "mlir::ModuleOp"> {
  let summary = "Lower sync_grad/unshard to collectives on flat buffers, bucketed and overlapped";
  let description = [{
    - Whole-tensor `sync_grad`s (ddp) are packed, in the order their gradients are produced,
      into buckets of at most `bucket-bytes` (a larger gradient is a bucket of its own); each
      bucket is one `all_reduce` (mean) that starts right after its last gradient is produced,
      with the unpacking placed before the optimizer uses it.
    - Flat `sync_grad`s become `reduce_scatter` (mean) over the shard groups, then `all_reduce`
      (mean) over the replica groups, where the gradient buffer is produced.
    - `unshard` becomes `all_gather`. Gathers of one phase (forward, backward, optimizer) start
      `prefetch` units early: the gather for the k-th unit starts before the first use of the
      (k - prefetch)-th, so it overlaps that unit's compute.
    - The loss is averaged over all ranks (`all_reduce` mean) so every rank reports the
      global-batch loss.
    Collectives start where they stand and complete before their first user; the memory plan
    keeps their operands alive until then. Gradient reduce-scatters also complete before the
    one `reduce-scatters-in-flight` places after them starts (recorded as the module attribute
    `plait.in_flight_reduce_scatters`), so a unit's whole gradient is freed during the
    backward rather than kept until the optimizer reads its shard.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "largest gradient bucket for ddp all-reduces (PyTorch DDP's 25 MiB)">,
    Option<"prefetch", "prefetch", "int64_t", "1", "units of all-gather started ahead of use">,
    Option<"reduceScattersInFlight", "reduce-scatters-in-flight", "int64_t", "2",
           "gradient reduce-scatters in flight at once: each completes before the one this "
           "many after it starts (0: only before its shard's first reader)">
  ];
}

def VerifyCollectivesPass : Pass<"plait-verify-collectives", "mlir::ModuleOp"> {
  let summary = "Reject plans whose ranks would not run the same collective sequence";
  let description = [{
    Expands the collective sequence each rank runs (functions with `plait.ranks` run only on
    those ranks; others on every rank; a rank in none of an op's groups skips it) and replays
    them: a collective completes once every member of its group has it next. A mismatch in
    kind, element count, element type, reduction or root between members, or a state where no
    collective can complete, is an error naming the first divergence (rank, position, op).
  }];
}

def RecomputePass : Pass<"plait-recompute", "mlir::ModuleOp"> {
  let summary = "Recompute forward activations in the backward instead of keeping them";
  let description = [{
    Runs on a training step (after plait-build-train-step, before plait-shard). The forward is
    cut into segments, one per parameter unit in first-use order (blocks.3.* is one unit). In a
    recomputed segment only the checkpoints stay alive until the backward: the values that
    cross into a later segment, params, constants and inputs. The segment's other activations
    that the backward reads are computed again, right before the first backward op that needs
    one of them. The last segment is never recomputed, because its backward starts at once.
    Recomputation replays the same kernels on the same inputs, so losses are bit-identical.

    `mode`: `none`, `all`, or `segments` (the indices listed in `segments`; what
    `--recompute auto` picks). `granularity`: `unit` as above; `layer` cuts a segment per
    layer (X.weight and X.bias are layer X) and keeps what crosses layers; `nested` cuts per
    layer but keeps only what crosses units, and replays the unit's earlier layers again for
    each layer's backward. That is the least memory for the most recompute, and it is what
    `--recompute all` uses. The module records `plait.recompute` for the report.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"all\"", "none, all or segments">,
    ListOption<"segments", "segments", "int64_t", "segment indices to recompute (mode=segments)">,
    Option<"granularity", "granularity", "std::string", "\"unit\"",
           "unit (a segment per parameter unit), layer (per layer: X.weight and X.bias), or nested (per layer, keeping only unit inputs)">
  ];
}

def SchedulePass : Pass<"plait-schedule", "mlir::ModuleOp"> {
  let summary = "Reorder a training step for a lower peak, keeping every collective's overlap";
  let description = [{
    Runs on a placed training step (after plait-insert-collectives). Optimizer state and
    hyper-parameter ops move to the start (they live for the whole step anyway). Each optimizer
    update moves up to just after its last input and the last reader of the param and state it
    replaces (a collective reads until its first user waits): its gradient is freed at once
    instead of living to the end of the step, and the memory plan can write the new value over
    the old one. Updates whose gradient comes straight from a collective keep their place, so
    that no wait moves earlier. The module records how many updates moved (`plait.schedule`).
  }];
}

def FuseElementwisePass : Pass<"plait-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Chains of f32 / bf16 elementwise ops become one plait.fused_elementwise each";
  let description = [{
    Groups add, sub, mul, div, neg, exp, erf, sqrt, pow and broadcast_to ops of one result
    shape (f32 or bf16 elements), and the casts between f32 and bf16 that stand between them,
    in program order, with the reduce_sum / reduce_mean of their values (reduced results) and
    smaller groups only they read (computed again per element). A group stands where one
    place follows its inputs and precedes every outside read of its results. Each group of two
    or more becomes one plait.fused_elementwise, whose results are the group values read
    outside it. The program computes in f32 and rounds to bf16 (round_bf16) after each op
    whose result is bf16 and at each cast to bf16, where the unfused kernels round: results
    are bit-identical to the unfused ops. The module records `plait.fuse_elementwise`
    {kernels, ops, reductions, and roundings when there are any} for the report.
    plait-compile runs it after plait-schedule, unless --no-fusion. In a module marked `plait.device = "cuda"` (plait-compile --device
    cuda) reductions with bf16 results stay unfused: CUDA's fused sums are float atomics into
    the result, and a bf16 one would round at every add.

    ```mlir
    // before (bf16-mixed)
    %h = plait.cast %x : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    %y = plait.mul %h, %c : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
    // after: registers 0 x, 1 c; 2 = round_bf16(0), 3 = 2 * 1, 4 = round_bf16(3)
    %y = plait.fused_elementwise %x, %c {outputs = array<i64: 4>,
        program = array<i64: 10, 0, -1, 2, 2, 1, 10, 3, -1>}
        : (tensor<4x8xf32>, tensor<bf16>) -> tensor<4x8xbf16>
    ```
  }];
}

def FuseLossCastPass : Pass<"plait-fuse-loss-cast", "mlir::ModuleOp"> {
  let summary = "A bf16-mixed loss and its gradient computed from the bf16 logits";
  let description = [{
    softmax_cross_entropy and softmax_cross_entropy_grad of [N, C] logits without class
    weights whose input is a cast from bf16 or f16 to f32 read the half-precision logits
    instead: the loss still gives f32, the gradient (where its result feeds only a cast back)
    gives the logits' type with the f32 loss gradient. The same bits, without the f32 copy
    of the logits or their f32 gradient. Records `plait.fuse_loss_cast` {losses, gradients,
    casts, bytes}. plait-compile runs it after plait-schedule, unless --no-fusion or
    --no-fused-loss-cast.
  }];
}

def GroupCastsPass : Pass<"plait-group-casts", "mlir::ModuleOp"> {
  let summary = "Casts of parameters close together become one plait.grouped_cast";
  let description = [{
    In program order, a float-to-float plait.cast of a plait.param joins the open group when
    it stands within `span` ops of the group's first cast; each group of two or more becomes
    one plait.grouped_cast where its first cast stood (one kernel walking the tensors), the
    plait.param ops it reads moved before it. Results are bit-identical. The module records
    `plait.group_casts` {kernels, casts}. plait-compile runs it after plait-schedule, unless
    --no-fusion or --no-grouped-casts.
  }];
  let options = [
    Option<"span", "span", "int64_t", "64",
           "the most ops between a group's first and last cast">
  ];
}

def GroupUpdatesPass : Pass<"plait-group-updates", "mlir::ModuleOp"> {
  let summary = "Optimizer updates (weight EMAs) close together become one kernel";
  let description = [{
    In program order, an adamw_update or sgd_update of f32/f64 tensors joins the open group
    of updates of the same kind and attributes when the group stays within a span of ops and
    one place follows every operand and precedes every outside read of a result; each group of
    two or more becomes one plait.grouped_update there (one kernel walking the tensors).
    With grad-casts, a grouped update whose gradient is a cast from bf16 or f16 that feeds
    nothing else reads the half-precision gradient and widens it itself (no f32 copy stored,
    no cast kernel). The weight EMAs (--ema-decay) with the same decay, schedule and step
    (of any float type) merge the same way into one plait.weight_ema of many averages (span
    does not bound them: what they read lives to the step's end anyway). Results
    are bit-identical. The module records `plait.group_updates` {kernels, updates, grad_casts,
    grad_cast_bytes, ema_kernels, emas}. plait-compile runs it after
    plait-schedule, unless --no-fusion; --no-fused-grad-cast turns grad-casts off.
  }];
  let options = [
    Option<"span", "span", "int64_t", "64",
           "the most ops between a group's first and last update">,
    Option<"foldGradCasts", "grad-casts", "bool", "true",
           "fold a gradient's widening cast from bf16/f16 into its grouped update">
  ];
}

def FoldTransposesPass : Pass<"plait-fold-transposes", "mlir::ModuleOp"> {
  let summary = "GEMMs read transposed operands through BLAS flags instead of transposed copies";
  let description = [{
    Rewrites, in program order: transpose(transpose(x)) into one transpose with the composed
    permutation (or x); transpose(matmul(a, b)) over the last two dimensions, when nothing
    else reads the product, into matmul(b, a) with both transpose flags toggled; and a
    matmul or gemm operand that is a last-two-dimension transpose into the transpose's input
    with the operand's flag (transpose_lhs/transpose_rhs, trans_a/trans_b) toggled.
    Transposes left unread are erased. Products are bit-identical. The module records
    `plait.fold_transposes` {operands, results, composed, removed} for the report.
    plait-compile runs it on every step unless --no-fusion.
  }];
}

def FuseAttentionPass : Pass<"plait-fuse-attention", "mlir::ModuleOp"> {
  let summary = "decomposed scaled-dot-product attention becomes one plait.attention op";
  let description = [{
    Per softmax over the last axis of [B, H, S, T] scores: matmul(q, k^T), an optional
    multiply (or divide) by a scalar constant, an optional causal mask (where(hidden, -inf,
    scores) or where(seen, scores, -inf), the mask a constant or a trilu of a constant true;
    a fill of at most -1e30 counts as -inf), the softmax and its product with v, where q, k
    and v are
    [B, S, H, D] tensors split into heads by transposes, becomes plait.attention(q, k, v)
    {scale, causal}; readers that transpose the result back to [B, S, H, E] read the
    attention's output directly. Every other softmax stays as it is. The module records
    `plait.fuse_attention` {fused, left, reasons (a count per reason a softmax was left)}
    for the report. plait-compile runs it before building the training step unless
    --no-fused-attention (or --no-fusion).

    ```mlir
    // before: q, k, v [2, 16, 4, 8] split into heads, %mask a constant causal i1 [16, 16]
    %qh = plait.transpose %q {perm = array<i64: 0, 2, 1, 3>} : ... -> tensor<2x4x16x8xf32>
    %kt = plait.transpose %k {perm = array<i64: 0, 2, 3, 1>} : ... -> tensor<2x4x8x16xf32>
    %vh = plait.transpose %v {perm = array<i64: 0, 2, 1, 3>} : ... -> tensor<2x4x16x8xf32>
    %s = plait.matmul %qh, %kt : ... -> tensor<2x4x16x16xf32>
    %ss = plait.mul %s, %scale : ...
    %m = plait.where %mask, %minus_inf, %ss : ...
    %p = plait.softmax %m {axis = -1 : i64} : tensor<2x4x16x16xf32>
    %o = plait.matmul %p, %vh : ... -> tensor<2x4x16x8xf32>
    %y = plait.transpose %o {perm = array<i64: 0, 2, 1, 3>} : ... -> tensor<2x16x4x8xf32>
    // after
    %y, %lse = plait.attention %q, %k, %v {causal = true, scale = 0.353553 : f64}
        : (...) -> (tensor<2x16x4x8xf32>, tensor<2x4x16xf32>)
    ```
  }];
}

def FuseNormPass : Pass<"plait-fuse-norm", "mlir::ModuleOp"> {
  let summary = "decomposed layer norms and RMS norms become plait.layer_norm / plait.rms_norm";
  let options = [
    Option<"residualAdds", "residual-adds", "bool", "true",
           "a residual add and the norm of its sum become one add_layer_norm / add_rms_norm">,
    Option<"batchNorm", "batch-norm", "bool", "true",
           "a decomposed training-mode BatchNorm becomes one plait.batch_norm">,
    Option<"syncBatchNorm", "sync-batch-norm", "bool", "true",
           "with batch-norm, a SyncBatchNorm becomes one plait.batch_norm {sync} too">,
  ];
  let description = [{
    Per reduce_mean (keepdims, over trailing axes [a, rank)) of a square (pow(c, 2) or
    mul(c, c)): with `+ eps` (a positive scalar constant), a square root and the division of c
    by it (or a product with rsqrt, reciprocal(sqrt) or 1 / sqrt), then optionally `* gamma`
    and, for a layer norm, `+ beta` (each of the normalised shape x.shape[a:]), becomes
    plait.layer_norm(x, gamma, beta) {axis = a, epsilon} when c = x - reduce_mean(x) over the
    same axes, else plait.rms_norm(c, gamma). Every intermediate must have no other reader;
    without gamma the scale is a constant of ones. The module records `plait.fuse_norm`
    {layer_norm, rms_norm, batch_norm, batch_norm_ops, sync_batch_norm, ops, residual_adds} for
    the report. plait-compile runs it before
    building the training step unless --no-fused-norm (or --no-fusion).

    Then (unless residual-adds=false: --no-fused-add-norm) each norm op, these and imported
    ones, whose input is a plait.add of two values of the sum's type (a residual add, no
    broadcasting) becomes plait.add_layer_norm / add_rms_norm with the add: one kernel that
    stores the sum (the residual stream, which other ops read) and normalises it.

    Then (unless batch-norm=false: --no-fused-batch-norm) each training-mode BatchNorm, as the
    ONNX importer and plait-zoo write it: mean = reduce_mean(x), c = x - mean and
    var = reduce_mean(c^2), both keepdims over every axis of x but 1, + eps, the
    normalisation of c (as above), then optionally * gamma and + beta of one value per channel
    ([C, 1, ...] or [1, C, 1, ...]), becomes plait.batch_norm(x, gamma, beta) {epsilon}, its
    mean and var results (reshaped back) read by the means' other readers (the running
    statistics), which must all follow the chain. A SyncBatchNorm (a plait.sync_mean the only
    reader of each mean, read in its place) becomes plait.batch_norm {sync} (unless
    sync-batch-norm=false: --no-fused-sync-batch-norm), which plait-shard lowers with its
    gradient to a statistics kernel, one collective and the fused kernel, forward and backward.

    ```mlir
    // before (PyTorch's export of nn.LayerNorm below opset 17)
    %m = plait.reduce_mean %x {axes = array<i64: 2>} : (tensor<4x16x32xf32>) -> tensor<4x16x1xf32>
    %d = plait.sub %x, %m : ...
    %p = plait.pow %d, %two : ...
    %v = plait.reduce_mean %p {axes = array<i64: 2>} : ...
    %ve = plait.add %v, %eps : ...
    %s = plait.sqrt %ve : tensor<4x16x1xf32>
    %n = plait.div %d, %s : ...
    %g = plait.mul %n, %gamma : ...
    %y = plait.add %g, %beta : ...
    // after
    %y = plait.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64}
        : (tensor<4x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x16x32xf32>
    ```
  }];
}

def ExpandNormGradPass : Pass<"plait-expand-norm-grad", "mlir::ModuleOp"> {
  let summary = "plait.layer_norm_grad / rms_norm_grad become reductions and elementwise ops";
  let description = [{
    The training step differentiates a plait.layer_norm or plait.rms_norm into one
    layer_norm_grad / rms_norm_grad op (one kernel). This pass writes each as the ops that
    compute the same gradients one reduction or product at a time (mean, centred values,
    variance, rsqrt, the row means of dy * scale and of its product with xhat, and the
    parameter gradients summed over the leading axes). plait-compile runs it after building
    the training step under --no-fused-norm (or --no-fusion), so that switch gives the
    unfused backward as well as the unfused forward.
  }];
}

def FuseGemmEpiloguePass : Pass<"plait-fuse-gemm-epilogue", "mlir::ModuleOp"> {
  let summary = "a linear layer's bias add becomes the GEMM's bias epilogue";
  let description = [{
    Rewrites add(matmul(a, b), bias) (either operand order) into plait.matmul(a, b, bias)
    when nothing else reads the product, the product is float, b is 2-D, the matmul has no
    result_perm and no bias yet, and bias is a vector [N] of the product's element type (and
    not a cast that only the add reads: bf16-mixed's cast params, which plait-fuse-elementwise
    computes inside the add's kernel). On
    CUDA the bias is cuBLASLt's bias epilogue (CUBLASLT_EPILOGUE_BIAS); on the CPU it is
    written into the result, onto which the BLAS GEMM accumulates (beta = 1). The product's
    discardable marks carry over. The module records `plait.fuse_gemm_epilogue` {biases,
    left_cast} for the report. plait-compile runs it after plait-fold-transposes unless
    --no-gemm-epilogue (or --no-fusion).

    ```mlir
    // before
    %p = plait.matmul %x, %w {transpose_rhs = true}
        : (tensor<4x16x32xf32>, tensor<96x32xf32>) -> tensor<4x16x96xf32>
    %y = plait.add %bias, %p : (tensor<96xf32>, tensor<4x16x96xf32>) -> tensor<4x16x96xf32>
    // after
    %y = plait.matmul %x, %w, %bias {transpose_rhs = true}
        : (tensor<4x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<4x16x96xf32>
    ```
  }];
}

def ConvGroupedDirectPass : Pass<"plait-conv-grouped-direct", "mlir::ModuleOp"> {
  let summary = "CPU grouped convolutions of narrow groups computed directly, not as GEMMs";
  let description = [{
    Sets `direct = true` on each plait.conv2d, conv2d_grad_input and conv2d_grad_weight that
    is grouped (not depthwise) with at most 16 input channels and 16 filters a group
    (runtime/cpu/Workspace.h groupedDirectShape: RegNet's group width 8, ResNeXt-50's 4 to
    16) and whose output planes have at most 256 pixels or whose groups have 16 filters
    (groupedDirectPays: on larger planes a group's GEMM is wide, and the direct kernels'
    unused lanes cost more). The CPU kernels then compute it a group at a time, the group's planes transposed
    into the workspace as [pixel][lane] and its taps as [tap][lane][lane], where they would
    otherwise build a column matrix 9 times the input's size for a GEMM of at most 16 rows per
    image and group. The module records `plait.conv_grouped_direct` {grouped, direct} for the
    report. plait-compile runs it on CPU plans unless --no-direct-grouped-conv.

    ```mlir
    %y = plait.conv2d %x, %w {direct = true, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>}
        : (tensor<8x64x24x24xf32>, tensor<64x8x3x3xf32>) -> tensor<8x64x24x24xf32>
    ```
  }];
}

def ConvImageBlocksPass : Pass<"plait-conv-image-blocks", "mlir::ModuleOp"> {
  let summary = "CPU convolutions multiply several images' columns in one GEMM";
  let description = [{
    Sets `image_block` on each plait.conv2d, conv2d_grad_input and conv2d_grad_weight whose
    output planes are small: the CPU kernels then lay the im2col columns of that many images
    side by side and multiply them in one GEMM per group (conv2d scatters the product to its
    images; the gradients gather each image's dy first), where they would otherwise run a GEMM
    per image a few columns wide (ResNet-18's layer4 at 96x96: 9). The block is
    runtime/cpu/Workspace.h's convImageBlock: for output planes of at most 64 pixels, enough
    images to fill 512 columns, at most the batch; none is set on larger planes (whose GEMMs
    are wide enough), a batch of one, a pointwise convolution (its columns are the input's
    planes as they are: gathering a block's would cost what the wider GEMM saves) or a
    grouped one (a depthwise one is computed directly, without columns; another's weight
    gradient splits across threads by image, which a block of the batch would not). The
    kernels take a block on any convolution. The plan's workspace grows by the
    blocks' columns and a staging matrix for each. The module records
    `plait.conv_image_blocks` {convolutions, blocked, most} for the report. plait-compile runs
    it last on CPU plans unless --no-conv-image-blocks.

    ```mlir
    // before
    %y = plait.conv2d %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
        strides = array<i64: 1, 1>} : (tensor<8x512x3x3xf32>, tensor<512x512x3x3xf32>)
        -> tensor<8x512x3x3xf32>
    // after: the 8 images' 9 columns each in one GEMM of 72 columns
    %y = plait.conv2d %x, %w {dilations = array<i64: 1, 1>, image_block = 8 : i64,
        pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : ...
    ```
  }];
}

def FoldMatmulRowsPass : Pass<"plait-fold-matmul-rows", "mlir::ModuleOp"> {
  let summary = "CPU permuted matmuls of one shared matrix in GEMMs over chunks of rows";
  let description = [{
    Sets `fold_rows = true` on each plait.matmul with `lhs_perm`, `rhs_perm` or
    `result_perm` whose rhs is one matrix for every batch entry and whose entries have fewer
    than 256 rows (codegen/schema/MatmulLayout.h foldedChunkRows). The CPU kernel runs one
    GEMM per batch entry of such a product; plait-fold-transposes makes them where a
    permutation moves the batch next to K, as nn.MultiheadAttention's [B, T, D] -> [T, B, D]
    around its in-projection does (GEMMs of B rows against the whole weight). With
    `fold_rows` the kernel takes the result's stored rows in order, gathers their lhs rows
    into its workspace a chunk at a time (at least 256 rows, about 2 MiB of f32), and runs
    one GEMM per chunk. The results differ from the entries' GEMMs at most by rounding (BLAS
    blocks a larger call differently). The module records `plait.fold_matmul_rows`
    {permuted, folded} for the report. plait-compile runs it on CPU plans, after
    plait-fold-transposes, unless --no-fold-matmul-rows.

    ```mlir
    // before: 37 GEMMs of 8 rows
    %y = plait.matmul %x, %w, %b {lhs_perm = array<i64: 1, 0, 2>, transpose_rhs = true}
        : (tensor<8x37x768xf32>, tensor<2304x768xf32>, tensor<2304xf32>) -> tensor<37x8x2304xf32>
    // after: one GEMM of 296 rows, gathered
    %y = plait.matmul %x, %w, %b {fold_rows = true, lhs_perm = array<i64: 1, 0, 2>,
        transpose_rhs = true} : ...
    ```
  }];
}

def ConvWinogradPass : Pass<"plait-conv-winograd", "mlir::ModuleOp"> {
  let summary = "CPU 3x3 convolutions and their gradients by Winograd F(2x2, 3x3)";
  let description = [{
    Sets `winograd = true` on each plait.conv2d, conv2d_grad_input and conv2d_grad_weight of
    a 3x3 window with stride 1 and dilation 1 in one group whose shapes make it pay
    (runtime/cpu/Workspace.h winogradPays: in x out channels at least 16 x (in + out), as 32
    and 32 give, and output planes of at least 6 pixels a side). The CPU kernels then
    compute each 2x2 block of outputs from its 4x4 input patch with 16 multiply-adds per
    input channel instead of 36 (Lavin and Gray's minimal filtering; runtime/cpu/Winograd.h):
    16 GEMMs over the tiles between transforms of the input tiles, the weights and the
    products. The input gradient is the same correlation of dy with the weights turned 180
    degrees; the weight gradient is the algorithm's transpose, each tile's transformed 2x2 of
    dy times its transformed 4x4 of x, summed over the tiles by 16 GEMMs and transformed
    back once. The results differ from im2col's by rounding (the transforms add and subtract
    inputs before the products). The plan's workspace holds the transformed weights and a
    transformed chunk of tiles and its products per thread's slot (the weight gradient: the
    summed products and one chunk's transformed x and dy). The module records
    `plait.conv_winograd` {convolutions, winograd} for the report. plait-compile runs it on
    CPU plans, before plait-conv-image-blocks (which leaves such convolutions alone), unless
    --no-winograd.

    ```mlir
    // before
    %y = plait.conv2d %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
        strides = array<i64: 1, 1>} : (tensor<8x64x24x24xf32>, tensor<64x64x3x3xf32>)
        -> tensor<8x64x24x24xf32>
    // after
    %y = plait.conv2d %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
        strides = array<i64: 1, 1>, winograd = true} : ...
    ```
  }];
}

#endif // PLAIT_PASSES_TD
