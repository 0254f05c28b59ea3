// plait-compile: compiles a model file (.onnx or .mlir) into a plan. A thin main over Pipeline.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "compiler/Diagnostics.h"
#include "compiler/Pipeline.h"
#include "compiler/PlanSearch.h"
#include "passes/GradientClipping.h"
#include "runtime/LrSchedule.h"

/// Reads "A,B" (two numbers, as --betas takes them) into a and b; false when it is not that.
static bool parseNumberPair(const std::string &text, double &a, double &b) {
  char *end = nullptr;
  a = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != ',')
    return false;
  const char *second = end + 1;
  b = std::strtod(second, &end);
  return end != second && *end == '\0';
}

int main(int argc, char **argv) {
  CLI::App app{"plait-compile: compile a model into an ahead-of-time plan"};
  plait::CompileOptions options;
  std::vector<std::string> constInputs;
  app.add_option("model", options.modelPath, "model file (.onnx or .mlir)")->required();
  app.add_option("-o,--output", options.outputPath, "output plan file (or .mlir with --emit mlir)")
      ->required();
  app.add_option("--emit", options.emit, "what to write: plan or mlir")
      ->check(CLI::IsMember({"plan", "mlir"}));
  app.add_option("--const-input", constInputs,
                 "NAME=FILE(.pb|.npy): bind a graph input to a compile-time constant");
  app.add_flag("--upgrade-opset", options.upgradeOpset,
               "lift an ONNX model of an opset below 13 to opset 13 with ONNX's version "
               "converter before importing it (without it, plait lifts such models with its "
               "own rules, op by op)");
  app.add_option("--report", options.reportPath, "write the compiler's decisions as JSON");
  app.add_flag("--explain", options.explain, "print a readable summary of the plan");
  app.add_option("--dump-dir", options.dumpDir, "write every IR stage into DIR");
  plait::TrainOptions &train = options.train;
  std::string betas, etas, stepSizes;
  app.add_flag("--train", train.enabled, "build the training step (loss, backward, optimizer)");
  app.add_option("--optimizer", train.optimizer,
                 "sgd, adam, adamw, adagrad, rmsprop, lion, adamax, nadam, radam, adadelta, "
                 "rprop, asgd, lamb or adafactor")
      ->check(CLI::IsMember({"sgd", "adam", "adamw", "adagrad", "rmsprop", "lion", "adamax",
                             "nadam", "radam", "adadelta", "rprop", "asgd", "lamb", "adafactor"}));
  app.add_option("--lr", train.lr,
                 "base learning rate (default as PyTorch: adagrad, rmsprop, rprop, asgd 1e-2; "
                 "adamax, nadam 2e-3; adadelta 1; lion 1e-4; else 1e-3; rprop's initial step "
                 "size)");
  app.add_option("--weight-decay", train.weightDecay,
                 "weight decay (default: adamw and lamb 0.01, the others 0, as PyTorch and timm; "
                 "adamw and lion decay the params, lamb adds it to the update, the others to "
                 "the gradient)");
  app.add_option("--momentum", train.momentum, "SGD and RMSprop momentum");
  app.add_option("--dampening", train.dampening, "SGD dampening");
  app.add_flag("--nesterov", train.nesterov, "SGD Nesterov momentum");
  app.add_option("--betas", betas,
                 "Adam/AdamW/Lion/Adamax/NAdam/RAdam/LAMB betas B1,B2 (default 0.9,0.999; "
                 "lion 0.9,0.99)");
  app.add_option("--eps", train.eps,
                 "epsilon (default: adagrad 1e-10, adadelta and lamb 1e-6, else 1e-8)");
  app.add_option("--alpha", train.alpha, "RMSprop smoothing constant (default 0.99)");
  app.add_flag("--centered", train.centered,
               "RMSprop: normalise by the gradient's estimated variance");
  app.add_option("--lr-decay", train.lrDecay, "Adagrad learning-rate decay (default 0)");
  app.add_option("--initial-accumulator-value", train.initialAccumulatorValue,
                 "Adagrad: the value its sum starts from (default 0)");
  app.add_option("--rho", train.rho, "Adadelta: the decay of its two averages (default 0.9)");
  app.add_option("--etas", etas,
                 "Rprop: the step-size factors MINUS,PLUS where the gradient's sign flips and "
                 "where it holds (default 0.5,1.2)");
  app.add_option("--step-sizes", stepSizes,
                 "Rprop: the step-size bounds MIN,MAX (default 1e-6,50)");
  app.add_option("--lambd", train.lambd, "ASGD: the decay term of its eta (default 1e-4)");
  app.add_option("--asgd-alpha", train.asgdAlpha,
                 "ASGD: the power of its eta's decay, torch's alpha (default 0.75)");
  app.add_option("--t0", train.t0,
                 "ASGD: the step after which it averages the params (default 1e6)");
  app.add_option("--momentum-decay", train.momentumDecay,
                 "NAdam: the momentum schedule's decay (default 0.004)");
  app.add_flag("--amsgrad", train.amsgrad,
               "Adam/AdamW: the AMSGrad variant (the largest second moment seen)");
  app.add_flag("--decoupled-weight-decay", train.decoupledWeightDecay,
               "NAdam/RAdam: decay the params, as PyTorch 2's decoupled_weight_decay (NAdamW, "
               "RAdamW), instead of adding the decay to the gradient");
  app.add_flag("--always-adapt", train.alwaysAdapt,
               "LAMB: scale every param's update by its trust ratio, also where its weight "
               "decay is 0 (timm's always_adapt)");
  app.add_flag("--trust-clip", train.trustClip,
               "LAMB: the trust ratio at most 1 (timm's trust_clip, LAMBC)");
  app.add_option("--beta1", train.adafactorBeta1,
                 "Adafactor: keep a first moment with this beta1 (Hugging Face's beta1; "
                 "default none; the other optimizers take --betas)");
  app.add_option("--eps2", train.eps2,
                 "Adafactor: the least param RMS that scales its step (Hugging Face's eps[1], "
                 "default 1e-3; --eps is eps[0], default 1e-30)");
  app.add_option("--clip-threshold", train.clipThreshold,
                 "Adafactor: an update whose RMS is above this is scaled down to it (default 1)");
  app.add_option("--decay-rate", train.decayRate,
                 "Adafactor: the second moment's beta2 is 1 - step^R (default -0.8)");
  app.add_flag("--relative-step", train.relativeStep,
               "Adafactor: the lr is min(1e-2, 1/sqrt(step)), not --lr (Hugging Face's "
               "relative_step)");
  app.add_flag("--warmup-init", train.warmupInit,
               "Adafactor with --relative-step: min(1e-6 * step, 1/sqrt(step))");
  app.add_flag("--no-scale-parameter", train.noScaleParameter,
               "Adafactor: the step not scaled by the param's RMS (Hugging Face's "
               "scale_parameter=False)");
  app.add_flag("--maximize", train.maximize,
               "maximize the loss, as torch's maximize=True (any optimizer; a "
               "--param-group with maximize=false descends)");
  app.add_option("--freeze", train.freeze, "regex of param names not to train");
  app.add_option("--lr-scale", train.lrScale,
                 "per-param learning-rate factors 'REGEX=F,...' (first match wins, the others "
                 "1), as torch param groups with lr = F * --lr");
  std::vector<std::string> paddingIdx;
  app.add_option("--padding-idx", paddingIdx,
                 "an embedding's padding row 'INITIALIZER=ROW' (repeatable), as nn.Embedding's "
                 "padding_idx, which the ONNX export drops: its row gets no gradient");
  app.add_option("--param-group", train.paramGroups,
                 "per-param optimizer settings 'REGEX:KEY=V,...' (repeatable; the first "
                 "matching group wins; keys betas=B1/B2, etas=MINUS/PLUS, "
                 "step_sizes=MIN/MAX, eps, momentum, weight_decay, "
                 "dampening, alpha, lr_decay, lambd, t0, initial_accumulator_value, rho, "
                 "momentum_decay; "
                 "true/false: nesterov, amsgrad, centered, decoupled_weight_decay, "
                 "always_adapt, trust_clip: those the optimizer has; maximize: any), as "
                 "torch param groups");
  app.add_option("--no-weight-decay", train.noWeightDecay,
                 "regex of param names trained without weight decay (e.g. 'bias|norm', as a "
                 "torch param group with weight_decay 0)");
  app.add_option("--clip-grad-norm", train.clipGradNorm, "clip gradients to this global norm");
  app.add_option("--clip-grad-norm-type", train.clipGradNormType,
                 "the p of --clip-grad-norm's p-norm: any p > 0 (default 2), or inf (the "
                 "largest |g|), as torch's clip_grad_norm_ norm_type");
  app.add_flag("--log-grad-norm", train.logGradNorm,
               "output the gradients' global norm each step (grad_norm in plait-run's log) "
               "without clipping; with --clip-grad-norm it is always output");
  app.add_option("--label-smoothing", train.labelSmoothing,
                 "smooth the targets of the model's cross-entropy loss by E in [0, 1] (torch's "
                 "CrossEntropyLoss(label_smoothing), which ONNX export cannot carry)");
  app.add_option("--clip-grad-value", train.clipGradValue,
                 "clamp every gradient element to [-V, V] (torch's clip_grad_value_; before "
                 "--clip-grad-norm where both are given)");
  app.add_option("--ema-decay", train.emaDecay,
                 "keep an exponential moving average of the trained params, d * ema + (1 - d) "
                 "* param after each step (torch's AveragedModel: a copy on step 1), in the "
                 "checkpoints and written by plait-run --save-ema-weights");
  app.add_flag("--ema-warmup", train.emaWarmup,
               "the EMA's decay at step t is min(--ema-decay, t / (t + 9)) (diffusers' EMAModel)");
  app.add_option("--ema-power", train.emaPower,
                 "warm the EMA's decay up as min(--ema-decay, 1 - (1 + n / G)^-P), n the "
                 "averaging steps so far (diffusers' EMAModel(use_ema_warmup=True, power=P), "
                 "ema_pytorch); G: --ema-inv-gamma, 1 by default");
  app.add_option("--ema-inv-gamma", train.emaInvGamma, "the power warm-up's inv_gamma (> 0)");
  app.add_option("--ema-min-decay", train.emaMinDecay,
                 "the least decay once the EMA averages (EMAModel's min_decay)");
  app.add_option("--ema-start", train.emaStart,
                 "keep the EMA a copy of the params for N more steps after the first "
                 "(EMAModel's update_after_step)");
  app.add_option("--ema-every", train.emaEvery,
                 "update the EMA on steps 1, 1 + N, 1 + 2N, ... only, keeping it between "
                 "(ema_pytorch's update_every)");
  app.add_flag("--ema-buffers", train.emaBuffers,
               "average the float buffers (BatchNorm's running statistics) too, as "
               "AveragedModel(use_buffers=True) and timm's ModelEma do (integer ones are "
               "written as they are)");
  app.add_option("--lr-schedule", train.schedule,
                 "constant, linear-warmup, cosine, cosine-restarts, linear, polynomial, step, "
                 "multistep, exponential, inverse-sqrt or wsd (each warms up over "
                 "--warmup-steps first), or onecycle or cyclic (torch's OneCycleLR and "
                 "CyclicLR, which cycle the momentum too), or plateau (torch's "
                 "ReduceLROnPlateau on the training loss)")
      ->check(CLI::IsMember({"constant", "linear-warmup", "cosine", "cosine-restarts", "linear",
                             "polynomial", "step", "multistep", "exponential", "inverse-sqrt",
                             "wsd", "onecycle", "cyclic", "plateau"}));
  app.add_option("--warmup-steps", train.warmupSteps, "warm-up steps of the schedule");
  app.add_option("--total-steps", train.totalSteps,
                 "the step at which cosine, linear, polynomial and wsd reach --min-lr");
  app.add_option("--min-lr", train.minLr,
                 "final learning rate of cosine, linear, polynomial and wsd; cyclic's base; "
                 "plateau's floor");
  app.add_option("--lr-gamma", train.lrGamma,
                 "step: the factor every --lr-step-size steps; multistep: at each milestone; "
                 "exponential: every step; plateau: each reduction's (default 0.1)");
  app.add_option("--lr-milestones", train.lrMilestones,
                 "multistep schedule: steps after the warm-up at which lr is multiplied by "
                 "--lr-gamma (increasing, e.g. 30,60,90)")
      ->delimiter(',');
  app.add_option("--lr-cycle-steps", train.lrCycleSteps,
                 "cosine-restarts schedule: the first cycle's steps (torch's T_0)");
  app.add_option("--lr-cycle-mult", train.lrCycleMult,
                 "cosine-restarts schedule: each cycle this many times the one before "
                 "(T_mult, default 1)");
  app.add_option("--lr-step-size", train.lrStepSize,
                 "step schedule: steps between two factors; cyclic: steps up from --min-lr to "
                 "--lr (step_size_up)");
  app.add_option("--lr-step-size-down", train.lrStepSizeDown,
                 "cyclic schedule: steps back down (step_size_down, default --lr-step-size)");
  app.add_option("--lr-cyclic-mode", train.lrCyclicMode,
                 "cyclic schedule: triangular (default), triangular2 (each cycle's height "
                 "halved) or exp_range (scaled by --lr-gamma^step)")
      ->check(CLI::IsMember({"triangular", "triangular2", "exp_range"}));
  app.add_option("--lr-pct-start", train.lrPctStart,
                 "onecycle schedule: the fraction of --total-steps over which the lr rises to "
                 "--lr (default 0.3)");
  app.add_option("--lr-anneal", train.lrAnneal, "onecycle schedule: cos (default) or linear")
      ->check(CLI::IsMember({"cos", "linear"}));
  app.add_flag("--lr-three-phase", train.lrThreePhase,
               "onecycle schedule: back down to the first lr before the final decay");
  app.add_option("--lr-div-factor", train.lrDivFactor,
                 "onecycle schedule: the first lr is --lr / F (default 25)");
  app.add_option("--lr-final-div-factor", train.lrFinalDivFactor,
                 "onecycle schedule: the last lr is the first / F (default 1e4)");
  app.add_option("--base-momentum", train.baseMomentum,
                 "onecycle, cyclic: the cycled momentum (SGD's, RMSprop's, or the first beta) "
                 "at the lr's peak (default 0.85 onecycle, 0.8 cyclic)");
  app.add_option("--max-momentum", train.maxMomentum,
                 "onecycle, cyclic: the cycled momentum at the lr's low (default 0.95 "
                 "onecycle, 0.9 cyclic)");
  app.add_flag("--no-cycle-momentum", train.noCycleMomentum,
               "onecycle, cyclic: leave the momentum alone (torch's cycle_momentum=False)");
  app.add_option("--lr-patience", train.lrPatience,
                 "plateau schedule: windows without improvement tolerated before the lr is "
                 "reduced (default 10)");
  app.add_option("--lr-threshold", train.lrThreshold,
                 "plateau schedule: how much a window's mean loss must improve on the best to "
                 "count (default 1e-4)");
  app.add_option("--lr-threshold-mode", train.lrThresholdMode,
                 "plateau schedule: rel (below best * (1 - threshold), the default) or abs "
                 "(below best - threshold)")
      ->check(CLI::IsMember({"rel", "abs"}));
  app.add_option("--lr-cooldown", train.lrCooldown,
                 "plateau schedule: windows ignored after a reduction (default 0)");
  app.add_option("--lr-eps", train.lrEps,
                 "plateau schedule: a reduction of this much or less is skipped (default 1e-8)");
  app.add_option("--lr-plateau-steps", train.lrPlateauSteps,
                 "plateau schedule: the steps whose mean training loss is one reading of the "
                 "metric, as an epoch's (default 1)");
  app.add_option("--lr-power", train.lrPower, "polynomial schedule: the exponent (default 1)");
  app.add_option("--decay-steps", train.decaySteps,
                 "wsd schedule: the final steps, which decay linearly to --min-lr");
  plait::DistOptions &dist = options.dist;
  app.add_option("--world-size", dist.worldSize, "data-parallel ranks the plan is for");
  app.add_option("--strategy", dist.strategy,
                 "placement of every unit: ddp, zero1, zero2, zero3, fsdp, hsdp:G, or auto "
                 "(searched with --cluster's cost model)");
  app.add_option("--placement", dist.placement,
                 "per-unit placements 'REGEX=STRATEGY,...' (first match wins)");
  app.add_option("--unit-size", dist.unitSize,
                 "group params into units of at least BYTES (default: one unit per block)");
  app.add_option("--bucket-bytes", dist.bucketBytes, "largest ddp gradient bucket");
  app.add_option("--prefetch", dist.prefetch, "all-gathers started this many units ahead");
  app.add_option("--reduce-scatters-in-flight", dist.reduceScattersInFlight,
                 "gradient reduce-scatters in flight at once (default 2): each completes before "
                 "the one N after it starts, freeing whole gradients during the backward; 0: "
                 "each completes only before its shard is read");
  app.add_flag("--no-reshard-after-forward", dist.noReshardAfterForward,
               "zero3/fsdp/hsdp: keep gathered params from forward to backward");
  app.add_flag("--no-sharded-accumulation", dist.noShardedAccumulation,
               "with --micro-batches, zero2/zero3/fsdp/hsdp: sum whole gradients over the "
               "micro-batches and reduce them once (default: reduce-scatter each micro-batch's "
               "and sum the shards)");
  app.add_flag("--replica-reduce-per-micro-batch", dist.replicaReducePerMicroBatch,
               "with --micro-batches >= 3 and sharded accumulation, hsdp: all-reduce every "
               "micro-batch's shard across the replicas (default: the first K-1 shards' sum "
               "once, then the last's)");
  app.add_option("--device", options.device,
                 "cpu, or cuda: the fused kernels generated as CUDA C++ and compiled by nvcc "
                 "for sm_80 and sm_90 (plait-run runs it on its CUDA backend where there is a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  std::vector<std::string> clusterPaths;
  app.add_option("--cluster", clusterPaths,
                 "cluster spec (samples/clusters/*.yaml, plait-calibrate): the report predicts "
                 "the step time on it; several: compared, the plan written for the best");
  app.add_option("--train-tokens", options.trainTokens,
                 "with --cluster: the run's length in tokens, for its predicted time and cost");
  app.add_option("--steps", options.trainSteps,
                 "with --cluster: the run's length in steps, for its predicted time and cost");
  std::string memLimit;
  app.add_option("--mem-limit", memLimit,
                 "refuse plans whose per-rank peak exceeds BYTES (e.g. 24GiB, 512MB)");
  app.add_option("--micro-batches", train.microBatches,
                 "split the batch into K micro-batches: one forward and backward each, "
                 "gradients accumulated, one optimizer update");
  app.add_flag("--sync-batch-norm", train.syncBatchNorm,
               "training-mode BatchNorm normalises with the global batch's statistics, "
               "averaged over the data-parallel ranks (PyTorch's SyncBatchNorm): two all-reduces "
               "in each BatchNorm's forward and two in its backward (ONNX models)");
  app.add_option("--precision", train.precision,
                 "fp32, or bf16-mixed: bf16 forward and backward, f32 master weights and "
                 "optimizer state, gradients reduced in bf16")
      ->check(CLI::IsMember({"fp32", "bf16-mixed"}));
  app.add_flag("--no-schedule", [&](int64_t) { options.schedule = false; },
               "keep the program order of the training step (no plait-schedule)");
  app.add_flag("--no-inplace-updates", [&](int64_t) { options.inPlaceUpdates = false; },
               "keep optimizer results in buffers of their own, copied after the step");
  app.add_flag("--no-codegen", [&](int64_t) { options.codegen = false; },
               "carry no generated code for the fused kernels: no C++ (plait-run interprets "
               "them), no CUDA with --device cuda");
  app.add_flag("--no-reshape-alias", [&](int64_t) { options.reshapeAlias = false; },
               "give each reshape's result a buffer of its own (the reshape copies)");
  app.add_flag("--no-inplace-elementwise", [&](int64_t) { options.inPlaceElementwise = false; },
               "give each elementwise result (fused kernels' and single ops') a buffer of its "
               "own instead of the bytes of an operand that dies at the kernel");
  app.add_flag("--no-inplace-collectives", [&](int64_t) { options.inPlaceCollectives = false; },
               "give each all-reduce's result a buffer of its own instead of reducing its "
               "operand in place");
  app.add_option("--recompute", options.recompute,
                 "activation recomputation: none, all, or auto (as much as --mem-limit needs)")
      ->check(CLI::IsMember({"none", "all", "auto"}));
  app.add_flag(
      "--no-fusion", [&](int64_t) { options.fusion = false; },
      "no kernel fusion: keep every transpose that feeds a matrix product "
      "(plait-fold-transposes), every elementwise op and reduction a kernel of its "
      "own (plait-fuse-elementwise), attention decomposed (plait-fuse-attention), layer "
      "and RMS norms and BatchNorms decomposed (plait-fuse-norm), bias adds apart from their "
      "GEMMs (plait-fuse-gemm-epilogue)");
  app.add_flag("--no-fused-attention", [&](int64_t) { options.fusedAttention = false; },
               "keep attention decomposed (matmul, scale, mask, softmax, matmul) instead of "
               "one plait.attention kernel (plait-fuse-attention)");
  app.add_flag(
      "--no-fused-norm", [&](int64_t) { options.fusedNorm = false; },
      "keep a decomposed layer norm, RMS norm or BatchNorm (mean, subtract, square, "
      "mean, add, sqrt, divide, scale, shift) as it is instead of one plait.layer_norm, "
      "plait.rms_norm or plait.batch_norm kernel (plait-fuse-norm), and a norm's gradient as "
      "reductions and elementwise ops instead of one layer_norm_grad / rms_norm_grad / "
      "batch_norm_grad kernel");
  app.add_flag("--no-fused-add-norm", [&](int64_t) { options.fusedAddNorm = false; },
               "keep a residual add an op of its own instead of computing it in the kernel of "
               "the norm that reads its sum (add_layer_norm / add_rms_norm)");
  app.add_flag(
      "--no-fused-batch-norm", [&](int64_t) { options.fusedBatchNorm = false; },
      "keep a training-mode BatchNorm decomposed (mean, centred values, their "
      "squares' mean, normalisation, scale, shift, and the backward's reductions) "
      "instead of one plait.batch_norm kernel and one batch_norm_grad kernel");
  app.add_flag(
      "--no-fused-sync-batch-norm", [&](int64_t) { options.fusedSyncBatchNorm = false; },
      "with --sync-batch-norm, keep each BatchNorm decomposed, its mean and variance each "
      "all-reduced, and each one's gradient, instead of a statistics kernel, one all-gather "
      "and the batch_norm kernel forward and a sums kernel, one all-reduce and the "
      "batch_norm_grad kernel backward");
  app.add_flag("--no-gemm-epilogue", [&](int64_t) { options.gemmEpilogue = false; },
               "keep a linear layer's bias add an op of its own instead of the GEMM's bias "
               "epilogue (plait-fuse-gemm-epilogue)");
  app.add_flag(
      "--no-winograd", [&](int64_t) { options.convWinograd = false; },
      "compute CPU 3x3 stride-1 convolutions and their gradients by im2col and GEMMs "
      "instead of Winograd F(2x2, 3x3) (plait-conv-winograd)");
  app.add_flag(
      "--no-fold-matmul-rows", [&](int64_t) { options.foldMatmulRows = false; },
      "run a CPU permuted matmul of one shared matrix as one GEMM per batch entry, also "
      "where its entries have few rows, instead of gathering its rows into GEMMs of at "
      "least 256 (plait-fold-matmul-rows)");
  app.add_flag(
      "--no-direct-grouped-conv", [&](int64_t) { options.convGroupedDirect = false; },
      "compute a CPU grouped convolution of at most 16 channels and filters a group by "
      "im2col and a GEMM per image and group instead of directly, a group at a time "
      "(plait-conv-grouped-direct)");
  app.add_flag(
      "--no-conv-image-blocks", [&](int64_t) { options.convImageBlocks = false; },
      "run a CPU convolution's GEMMs one image at a time, also where its output planes "
      "are small (plait-conv-image-blocks)");
  app.add_flag("--no-fused-grad-cast", [&](int64_t) { options.fusedGradCast = false; },
               "keep each bf16-mixed gradient's cast to f32 a kernel of its own, its f32 copy "
               "stored for the optimizer, instead of the grouped update reading the bf16 "
               "gradient (plait-group-updates)");
  app.add_flag("--no-grouped-casts", [&](int64_t) { options.groupedCasts = false; },
               "keep each bf16-mixed parameter's cast to bf16 a kernel of its own instead of "
               "one plait.grouped_cast for the casts a few ops apart (plait-group-casts)");
  app.add_flag("--no-fused-loss-cast", [&](int64_t) { options.fusedLossCast = false; },
               "keep a bf16-mixed loss gradient in f32 between casts (an f32 copy of the "
               "logits and an f32 gradient) instead of computing it from the bf16 logits "
               "into bf16 (plait-fuse-loss-cast)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return plait::reportError(e.what()); // quotes the value given: made printable
  }
  for (const char *flag : {"--optimizer",
                           "--lr",
                           "--weight-decay",
                           "--momentum",
                           "--dampening",
                           "--nesterov",
                           "--betas",
                           "--eps",
                           "--alpha",
                           "--centered",
                           "--lr-decay",
                           "--amsgrad",
                           "--maximize",
                           "--decoupled-weight-decay",
                           "--initial-accumulator-value",
                           "--rho",
                           "--no-weight-decay",
                           "--etas",
                           "--step-sizes",
                           "--lambd",
                           "--asgd-alpha",
                           "--t0",
                           "--lr-scale",
                           "--param-group",
                           "--always-adapt",
                           "--trust-clip",
                           "--beta1",
                           "--eps2",
                           "--clip-threshold",
                           "--decay-rate",
                           "--relative-step",
                           "--warmup-init",
                           "--no-scale-parameter",
                           "--momentum-decay",
                           "--freeze",
                           "--clip-grad-norm",
                           "--clip-grad-norm-type",
                           "--log-grad-norm",
                           "--clip-grad-value",
                           "--label-smoothing",
                           "--ema-decay",
                           "--ema-warmup",
                           "--ema-buffers",
                           "--ema-power",
                           "--ema-inv-gamma",
                           "--ema-min-decay",
                           "--ema-start",
                           "--ema-every",
                           "--lr-schedule",
                           "--warmup-steps",
                           "--total-steps",
                           "--min-lr",
                           "--lr-gamma",
                           "--lr-step-size",
                           "--lr-power",
                           "--decay-steps",
                           "--lr-milestones",
                           "--lr-cycle-steps",
                           "--lr-cycle-mult",
                           "--lr-step-size-down",
                           "--lr-cyclic-mode",
                           "--lr-pct-start",
                           "--lr-anneal",
                           "--lr-three-phase",
                           "--lr-div-factor",
                           "--lr-final-div-factor",
                           "--base-momentum",
                           "--max-momentum",
                           "--no-cycle-momentum",
                           "--lr-patience",
                           "--lr-threshold",
                           "--lr-threshold-mode",
                           "--lr-cooldown",
                           "--lr-eps",
                           "--lr-plateau-steps",
                           "--micro-batches",
                           "--precision",
                           "--sync-batch-norm",
                           "--padding-idx"})
    if (app.count(flag) && !train.enabled) {
      std::cerr << "plait-compile: " << flag << " needs --train\n";
      return 1;
    }
  // Every number must be finite (a NaN passes the range checks below, and in training turns
  // every weight into NaN); the options whose negative value means "the default" must not be
  // given negative.
  const std::pair<const char *, double> numbers[] = {
      {"--lr", train.lr},
      {"--weight-decay", train.weightDecay},
      {"--momentum", train.momentum},
      {"--dampening", train.dampening},
      {"--eps", train.eps},
      {"--alpha", train.alpha},
      {"--lr-decay", train.lrDecay},
      {"--initial-accumulator-value", train.initialAccumulatorValue},
      {"--rho", train.rho},
      {"--momentum-decay", train.momentumDecay},
      {"--lambd", train.lambd},
      {"--asgd-alpha", train.asgdAlpha},
      {"--t0", train.t0},
      {"--clip-grad-norm", train.clipGradNorm},
      {"--clip-grad-value", train.clipGradValue},
      {"--label-smoothing", train.labelSmoothing},
      {"--ema-decay", train.emaDecay},
      {"--ema-power", train.emaPower},
      {"--ema-inv-gamma", train.emaInvGamma},
      {"--ema-min-decay", train.emaMinDecay},
      {"--min-lr", train.minLr},
      {"--lr-gamma", train.lrGamma},
      {"--lr-power", train.lrPower},
      {"--lr-pct-start", train.lrPctStart},
      {"--lr-div-factor", train.lrDivFactor},
      {"--lr-final-div-factor", train.lrFinalDivFactor},
      {"--base-momentum", train.baseMomentum},
      {"--max-momentum", train.maxMomentum},
      {"--lr-threshold", train.lrThreshold},
      {"--lr-eps", train.lrEps}};
  for (const auto &[flag, value] : numbers)
    if (app.count(flag) && !std::isfinite(value)) {
      std::cerr << "plait-compile: " << flag << " must be a finite number, got " << value << "\n";
      return 1;
    }
  if (app.count("--clip-grad-norm-type")) {
    if (std::string why = plait::invalidNormType(train.clipGradNormType); !why.empty()) {
      return plait::reportError("--" + why);
    }
    if (!(train.clipGradNorm > 0) && !train.logGradNorm) {
      std::cerr << "plait-compile: --clip-grad-norm-type needs --clip-grad-norm or "
                   "--log-grad-norm\n";
      return 1;
    }
  }
  for (const auto &[flag, value] : {std::pair<const char *, double>{"--weight-decay",
                                                                     train.weightDecay},
                                    {"--clip-grad-norm", train.clipGradNorm},
                                    {"--clip-grad-value", train.clipGradValue},
                                    {"--min-lr", train.minLr},
                                    {"--lambd", train.lambd},
                                    {"--asgd-alpha", train.asgdAlpha},
                                    {"--t0", train.t0}})
    if (app.count(flag) && value < 0) {
      std::cerr << "plait-compile: " << flag << " must be >= 0, got " << value << "\n";
      return 1;
    }
  for (const std::string &entry : paddingIdx) {
    size_t eq = entry.rfind('=');
    int64_t row = 0;
    std::string rowText = eq == std::string::npos ? "" : entry.substr(eq + 1);
    auto [end, ec] = std::from_chars(rowText.data(), rowText.data() + rowText.size(), row);
    if (eq == std::string::npos || eq == 0 || rowText.empty() || ec != std::errc() ||
        end != rowText.data() + rowText.size()) {
      return plait::reportError("--padding-idx expects INITIALIZER=ROW (an integer row), got '" +
                                entry + "'");
    }
    if (!train.paddingIdx.emplace(entry.substr(0, eq), row).second) {
      return plait::reportError("--padding-idx names '" + entry.substr(0, eq) + "' twice");
    }
  }
  if (app.count("--label-smoothing") &&
      !(train.labelSmoothing >= 0 && train.labelSmoothing <= 1)) {
    std::cerr << "plait-compile: --label-smoothing must be in [0, 1], got "
              << train.labelSmoothing << "\n";
    return 1;
  }
  if (app.count("--ema-decay") && !(train.emaDecay > 0 && train.emaDecay < 1)) {
    std::cerr << "plait-compile: --ema-decay must be in (0, 1), got " << train.emaDecay << "\n";
    return 1;
  }
  for (const char *flag : {"--ema-warmup", "--ema-buffers", "--ema-power", "--ema-inv-gamma",
                           "--ema-min-decay", "--ema-start", "--ema-every"})
    if (app.count(flag) && !app.count("--ema-decay")) {
      std::cerr << "plait-compile: " << flag << " needs --ema-decay\n";
      return 1;
    }
  if (app.count("--ema-power") && !(train.emaPower > 0)) {
    std::cerr << "plait-compile: --ema-power must be > 0, got " << train.emaPower << "\n";
    return 1;
  }
  if (app.count("--ema-power") && train.emaWarmup) {
    std::cerr << "plait-compile: --ema-power and --ema-warmup are two warm-ups of the EMA's "
                 "decay; give one\n";
    return 1;
  }
  if (app.count("--ema-inv-gamma") && !(train.emaInvGamma > 0)) {
    std::cerr << "plait-compile: --ema-inv-gamma must be > 0\n";
    return 1;
  }
  if (app.count("--ema-inv-gamma") && !app.count("--ema-power")) {
    std::cerr << "plait-compile: --ema-inv-gamma needs --ema-power (it is the power warm-up's)\n";
    return 1;
  }
  if (app.count("--ema-min-decay") &&
      !(train.emaMinDecay >= 0 && train.emaMinDecay <= train.emaDecay)) {
    std::cerr << "plait-compile: --ema-min-decay must be in [0, --ema-decay " << train.emaDecay
              << "], got " << train.emaMinDecay << "\n";
    return 1;
  }
  if (app.count("--ema-start") && train.emaStart < 0) {
    std::cerr << "plait-compile: --ema-start must be >= 0, got " << train.emaStart << "\n";
    return 1;
  }
  if (app.count("--ema-every") && train.emaEvery < 1) {
    std::cerr << "plait-compile: --ema-every must be >= 1, got " << train.emaEvery << "\n";
    return 1;
  }
  // The cycled momentum's ends (their negative default means each schedule's own).
  for (const auto &[flag, value] : {std::pair<const char *, double>{"--base-momentum",
                                                                     train.baseMomentum},
                                    {"--max-momentum", train.maxMomentum}})
    if (app.count(flag) && !(value > 0 && value < 1)) {
      std::cerr << "plait-compile: " << flag << " must be in (0, 1), got " << value << "\n";
      return 1;
    }
  const bool cyclical = train.schedule == "onecycle" || train.schedule == "cyclic";
  if (train.enabled && cyclical && !train.noCycleMomentum &&
      !plait::rt::LrSchedule::cyclesMomentumOf(train.optimizer)) {
    std::cerr << "plait-compile: --lr-schedule " << train.schedule
              << " cycles the momentum (torch's cycle_momentum), and the " << train.optimizer
              << " optimizer has none: give --no-cycle-momentum\n";
    return 1;
  }
  if (train.noCycleMomentum && (app.count("--base-momentum") || app.count("--max-momentum"))) {
    std::cerr << "plait-compile: --base-momentum and --max-momentum are the cycled momentum's; "
                 "--no-cycle-momentum leaves it alone\n";
    return 1;
  }
  if (app.count("--eps") && !(train.eps > 0)) { // negative would mean the default
    std::cerr << "plait-compile: --eps must be > 0, got " << train.eps << "\n";
    return 1;
  }
  if (app.count("--lr") && !(train.lr > 0)) { // negative would mean the default
    std::cerr << "plait-compile: --lr must be > 0, got " << train.lr << "\n";
    return 1;
  }
  // A hyper-parameter of another optimizer than the one chosen would be silently ignored.
  const std::vector<std::pair<const char *, std::vector<std::string>>> optimizerFlags = {
      {"--betas", {"adam", "adamw", "lion", "adamax", "nadam", "radam", "lamb"}},
      {"--eps",
       {"adam", "adamw", "adagrad", "rmsprop", "adamax", "nadam", "radam", "adadelta", "lamb",
        "adafactor"}},
      {"--always-adapt", {"lamb"}},
      {"--beta1", {"adafactor"}},
      {"--eps2", {"adafactor"}},
      {"--clip-threshold", {"adafactor"}},
      {"--decay-rate", {"adafactor"}},
      {"--relative-step", {"adafactor"}},
      {"--warmup-init", {"adafactor"}},
      {"--no-scale-parameter", {"adafactor"}},
      {"--trust-clip", {"lamb"}},
      {"--momentum", {"sgd", "rmsprop"}},
      {"--dampening", {"sgd"}},
      {"--nesterov", {"sgd"}},
      {"--alpha", {"rmsprop"}},
      {"--centered", {"rmsprop"}},
      {"--lr-decay", {"adagrad"}},
      {"--initial-accumulator-value", {"adagrad"}},
      {"--rho", {"adadelta"}},
      {"--weight-decay",
       {"sgd", "adam", "adamw", "adagrad", "rmsprop", "lion", "adamax", "nadam", "radam",
        "adadelta", "asgd", "lamb", "adafactor"}},
      {"--etas", {"rprop"}},
      {"--step-sizes", {"rprop"}},
      {"--lambd", {"asgd"}},
      {"--asgd-alpha", {"asgd"}},
      {"--t0", {"asgd"}},
      {"--momentum-decay", {"nadam"}},
      {"--decoupled-weight-decay", {"nadam", "radam"}},
      {"--amsgrad", {"adam", "adamw"}}};
  // The first flag of `flags` given whose list lacks `chosen`: "FLAG is a WHAT of A, B, not
  // of OPTION chosen" on stderr (true), else false.
  using FlagLists = std::vector<std::pair<const char *, std::vector<std::string>>>;
  auto foreignFlag = [&](const FlagLists &flags, const std::string &chosen, const char *what,
                         const char *suffix, const char *option) {
    for (const auto &[flag, owners] : flags)
      if (app.count(flag) && train.enabled &&
          std::find(owners.begin(), owners.end(), chosen) == owners.end()) {
        std::string names;
        for (const std::string &o : owners)
          names += (names.empty() ? "" : ", ") + o;
        std::cerr << "plait-compile: " << flag << " is a " << what << names << suffix
                  << ", not of " << option << " " << chosen << "\n";
        return true;
      }
    return false;
  };
  if (foreignFlag(optimizerFlags, train.optimizer, "hyper-parameter of ", "", "--optimizer"))
    return 1;
  // Likewise a schedule's parameter given with another schedule.
  const FlagLists scheduleFlags = {
      {"--warmup-steps",
       {"linear-warmup", "cosine", "cosine-restarts", "linear", "polynomial", "step",
        "multistep", "exponential", "inverse-sqrt", "wsd"}},
      {"--total-steps", {"cosine", "linear", "polynomial", "wsd", "onecycle"}},
      {"--min-lr",
       {"cosine", "cosine-restarts", "linear", "polynomial", "wsd", "cyclic", "plateau"}},
      {"--lr-cycle-steps", {"cosine-restarts"}},
      {"--lr-cycle-mult", {"cosine-restarts"}},
      {"--lr-gamma", {"step", "multistep", "exponential", "cyclic", "plateau"}},
      {"--lr-patience", {"plateau"}},
      {"--lr-threshold", {"plateau"}},
      {"--lr-threshold-mode", {"plateau"}},
      {"--lr-cooldown", {"plateau"}},
      {"--lr-eps", {"plateau"}},
      {"--lr-plateau-steps", {"plateau"}},
      {"--lr-milestones", {"multistep"}},
      {"--lr-step-size", {"step", "cyclic"}},
      {"--lr-step-size-down", {"cyclic"}},
      {"--lr-cyclic-mode", {"cyclic"}},
      {"--lr-pct-start", {"onecycle"}},
      {"--lr-anneal", {"onecycle"}},
      {"--lr-three-phase", {"onecycle"}},
      {"--lr-div-factor", {"onecycle"}},
      {"--lr-final-div-factor", {"onecycle"}},
      {"--base-momentum", {"onecycle", "cyclic"}},
      {"--max-momentum", {"onecycle", "cyclic"}},
      {"--no-cycle-momentum", {"onecycle", "cyclic"}},
      {"--lr-power", {"polynomial"}},
      {"--decay-steps", {"wsd"}}};
  if (foreignFlag(scheduleFlags, train.schedule, "parameter of the ", " schedules",
                  "--lr-schedule"))
    return 1;
  for (const char *flag : {"--world-size", "--strategy", "--placement", "--unit-size",
                           "--bucket-bytes", "--prefetch", "--no-reshard-after-forward",
                           "--no-sharded-accumulation", "--reduce-scatters-in-flight",
                           "--replica-reduce-per-micro-batch"})
    if (app.count(flag) && !train.enabled) {
      std::cerr << "plait-compile: " << flag << " needs --train (data-parallel training)\n";
      return 1;
    }
  if (app.count("--recompute") && !train.enabled) {
    std::cerr << "plait-compile: --recompute needs --train\n";
    return 1;
  }
  if (!memLimit.empty()) {
    auto bytes = plait::parseByteSize(memLimit);
    if (!bytes) {
      return plait::reportError(
          "--mem-limit expects a byte count such as 24GiB, 512MB or 1000000, got '" + memLimit +
          "'");
    }
    options.memLimit = *bytes;
  }
  for (const std::string &path : clusterPaths) {
    plait::cluster::ClusterSpec spec;
    if (auto status = plait::cluster::parseClusterSpec(path, spec); !status.ok()) {
      return plait::reportError("--cluster " + status.message());
    }
    options.clusters.emplace_back(path, std::move(spec));
  }
  if (!options.clusters.empty()) {
    options.clusterPath = options.clusters.front().first;
    options.cluster = options.clusters.front().second;
  }
  // A GPU cluster with the default --device cpu: the plan's kernels are the CPU's (Winograd
  // convolutions with 2.25x fewer FLOPs, image blocks), and so are the predicted steps.
  if (app.count("--device") == 0)
    for (const auto &[path, spec] : options.clusters)
      if (spec.device.kind == plait::cluster::DeviceKind::Gpu) {
        std::cerr << "plait-compile: note: --cluster " << path << " is a GPU cluster, but the "
                  << "plan is for the CPU (no --device): its predicted step is of the CPU's "
                     "kernels; give --device cuda to plan and predict the GPU's\n";
        break;
      }
  options.worldSizeGiven = app.count("--world-size") > 0;
  if ((app.count("--train-tokens") || app.count("--steps")) && options.clusters.empty()) {
    std::cerr << "plait-compile: --train-tokens and --steps need --cluster (the run's time "
                 "and cost are predicted on it)\n";
    return 1;
  }
  if (app.count("--train-tokens") && app.count("--steps")) {
    std::cerr << "plait-compile: give --train-tokens or --steps, not both\n";
    return 1;
  }
  if ((app.count("--train-tokens") && !(options.trainTokens >= 1)) ||
      (app.count("--steps") && options.trainSteps < 1)) {
    std::cerr << "plait-compile: --train-tokens and --steps must be >= 1\n";
    return 1;
  }
  if (options.clusters.size() > 1 && (!train.enabled || options.emit != "plan")) {
    std::cerr << "plait-compile: several --cluster flags compare training plans: they need "
                 "--train and write a plan (not --emit mlir)\n";
    return 1;
  }
  options.recomputeFixed = app.count("--recompute") > 0;
  options.bucketsFixed = app.count("--bucket-bytes") > 0;
  options.prefetchFixed = app.count("--prefetch") > 0;
  options.inFlightFixed = app.count("--reduce-scatters-in-flight") > 0;
  options.microBatchesFixed = app.count("--micro-batches") > 0;
  if (dist.strategy == "auto") {
    if (!options.cluster) {
      std::cerr << "plait-compile: --strategy auto needs --cluster SPEC.yaml (the cost model "
                   "ranks the candidates on it): one of samples/clusters/*.yaml, or one "
                   "written by plait-calibrate\n";
      return 1;
    }
    if (app.count("--placement")) {
      std::cerr << "plait-compile: --strategy auto chooses every unit's placement; drop "
                   "--placement or name a strategy\n";
      return 1;
    }
    // The cluster's devices, unless told otherwise.
    if (!app.count("--world-size"))
      dist.worldSize = options.cluster->worldSize();
  }
  for (const auto &[path, spec] : options.clusters) {
    // Compared clusters each get all their devices unless --world-size says otherwise.
    int64_t world = options.clusters.size() > 1 && !options.worldSizeGiven
                        ? (int64_t)spec.worldSize()
                        : dist.worldSize;
    if (spec.device.kind == plait::cluster::DeviceKind::Gpu && world > (int64_t)spec.worldSize()) {
      std::cerr << "plait-compile: --world-size " << world << " needs more devices than " << path
                << " has (" << spec.worldSize() << ": " << spec.nodes << " node(s) x "
                << spec.devicesPerNode << ")\n";
      return 1;
    }
  }
  if (train.microBatches < 1) {
    std::cerr << "plait-compile: --micro-batches must be >= 1, got " << train.microBatches
              << "\n";
    return 1;
  }
  if (dist.worldSize < 1 || dist.unitSize < 0 || dist.bucketBytes < 1 || dist.prefetch < 0 ||
      dist.reduceScattersInFlight < 0) {
    std::cerr << "plait-compile: --world-size and --bucket-bytes must be >= 1, --unit-size, "
                 "--prefetch and --reduce-scatters-in-flight >= 0\n";
    return 1;
  }
  if (!betas.empty()) {
    if (!parseNumberPair(betas, train.beta1, train.beta2)) {
      std::cerr << "plait-compile: --betas expects B1,B2, got '" << betas << "'\n";
      return 1;
    }
    // (A negative beta2 would mean the optimizer's default.)
    if (!(train.beta1 >= 0 && train.beta1 < 1 && train.beta2 >= 0 && train.beta2 < 1)) {
      std::cerr << "plait-compile: --betas must each be in [0, 1), got '" << betas << "'\n";
      return 1;
    }
  }
  if (!etas.empty()) {
    if (!parseNumberPair(etas, train.etaminus, train.etaplus)) {
      std::cerr << "plait-compile: --etas expects MINUS,PLUS, got '" << etas << "'\n";
      return 1;
    }
    if (!(0 < train.etaminus && train.etaminus < 1 && 1 < train.etaplus &&
          std::isfinite(train.etaplus))) {
      std::cerr << "plait-compile: --etas needs 0 < MINUS < 1 < PLUS, got '" << etas << "'\n";
      return 1;
    }
  }
  if (!stepSizes.empty()) {
    if (!parseNumberPair(stepSizes, train.stepSizeMin, train.stepSizeMax)) {
      std::cerr << "plait-compile: --step-sizes expects MIN,MAX, got '" << stepSizes << "'\n";
      return 1;
    }
    if (!(0 <= train.stepSizeMin && train.stepSizeMin <= train.stepSizeMax &&
          std::isfinite(train.stepSizeMax))) {
      std::cerr << "plait-compile: --step-sizes needs 0 <= MIN <= MAX, got '" << stepSizes
                << "'\n";
      return 1;
    }
  }
  for (const std::string &binding : constInputs) {
    size_t eq = binding.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == binding.size()) {
      std::cerr << "plait-compile: --const-input expects NAME=FILE, got '" << binding << "'\n";
      return 1;
    }
    options.constInputs[binding.substr(0, eq)] = binding.substr(eq + 1);
  }
  if (options.outputPath == "-" && options.emit != "mlir") {
    std::cerr << "plait-compile: a plan cannot be written to stdout; give -o FILE\n";
    return 1;
  }
  return plait::compileModel(options);
}
