// The plait-compile pipeline: load a model, verify, plan memory, write the plan and report.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "passes/analysis/MemoryPlan.h"
#include "runtime/cluster/ClusterSpec.h"

namespace plait {

/// --train and its optimizer settings (defaults as PyTorch's optimizers).
struct TrainOptions {
  bool enabled = false;
  std::string optimizer = "adamw";
  double lr = -1;          // negative: the optimizer's default (adagrad 1e-2, ...)
  double beta1 = 0.9;
  double beta2 = -1;       // negative: the optimizer's default (lion 0.99, else 0.999)
  double eps = -1;         // negative: the optimizer's default (adagrad 1e-10, ...)
  double weightDecay = -1; // negative: the optimizer's default (adamw, lamb 0.01, else 0)
  double momentum = 0, dampening = 0; // momentum: SGD and RMSprop
  bool nesterov = false;
  double alpha = 0.99;  // RMSprop's smoothing constant
  bool centered = false; // RMSprop
  double lrDecay = 0;   // Adagrad
  double initialAccumulatorValue = 0; // Adagrad
  double rho = 0.9;            // Adadelta
  double momentumDecay = 4e-3; // NAdam
  double etaminus = 0.5, etaplus = 1.2;      // Rprop's step-size factors
  double stepSizeMin = 1e-6, stepSizeMax = 50; // Rprop's step-size bounds
  double lambd = 1e-4, asgdAlpha = 0.75, t0 = 1e6; // ASGD
  bool amsgrad = false; // Adam and AdamW
  bool maximize = false; // every optimizer: step along the negated gradients
  bool decoupledWeightDecay = false; // NAdam and RAdam: NAdamW / RAdamW
  bool alwaysAdapt = false, trustClip = false; // LAMB: timm's always_adapt and trust_clip
  // Adafactor (Hugging Face's): beta1 (negative: no first moment), eps[1], the update's RMS
  // bound, beta2's power of the step, relative_step, warmup_init, not scale_parameter.
  double adafactorBeta1 = -1, eps2 = 1e-3, clipThreshold = 1, decayRate = -0.8;
  bool relativeStep = false, warmupInit = false, noScaleParameter = false;
  std::string freeze;      // regex of param names kept frozen
  std::string noWeightDecay; // regex of param names trained without weight decay
  std::string lrScale;       // --lr-scale 'REGEX=F,...': per-param learning-rate factors
  std::vector<std::string> paramGroups; // --param-group 'REGEX:KEY=V,...', in order
  double clipGradNorm = 0;
  double clipGradNormType = 2; // --clip-grad-norm-type: p of the p-norm (inf: the largest |g|)
  bool logGradNorm = false;    // --log-grad-norm: the step outputs grad_norm without clipping
  double clipGradValue = 0; // --clip-grad-value: each gradient element clamped to [-V, V]
  double labelSmoothing = 0; // --label-smoothing: the cross-entropy losses' target smoothing
  double emaDecay = 0;     // --ema-decay: the weight EMA's decay (0: none)
  bool emaWarmup = false;  // --ema-warmup: its decay min(D, t / (t + 9))
  double emaPower = 0;     // --ema-power: its decay min(D, 1 - (1 + n / G)^-P)
  double emaInvGamma = 1;  // --ema-inv-gamma: G
  double emaMinDecay = 0;  // --ema-min-decay: its least decay once averaging
  int64_t emaStart = 0;    // --ema-start: steps after the first it stays a copy
  int64_t emaEvery = 1;    // --ema-every: steps between its updates
  bool emaBuffers = false; // --ema-buffers: the float buffers averaged too
  std::string schedule = "constant"; // --lr-schedule (runtime/LrSchedule.h)
  int64_t warmupSteps = 0, totalSteps = 0;
  double minLr = 0;
  double lrGamma = 0;      // --lr-gamma: step, exponential
  int64_t lrStepSize = 0;  // --lr-step-size: step
  double lrPower = 1;      // --lr-power: polynomial
  int64_t decaySteps = 0;  // --decay-steps: wsd
  std::vector<int64_t> lrMilestones; // --lr-milestones: multistep
  int64_t lrCycleSteps = 0, lrCycleMult = 1; // --lr-cycle-steps, --lr-cycle-mult
  // onecycle: --lr-pct-start, --lr-anneal, --lr-three-phase, --lr-div-factor,
  // --lr-final-div-factor
  double lrPctStart = 0.3;
  std::string lrAnneal = "cos";
  bool lrThreePhase = false;
  double lrDivFactor = 25, lrFinalDivFactor = 1e4;
  int64_t lrStepSizeDown = 0;                 // --lr-step-size-down: cyclic
  std::string lrCyclicMode = "triangular";    // --lr-cyclic-mode: cyclic
  // plateau: --lr-patience, --lr-threshold, --lr-threshold-mode, --lr-cooldown, --lr-eps,
  // --lr-plateau-steps (its factor is --lr-gamma, 0: 0.1)
  int64_t lrPatience = 10, lrCooldown = 0, lrPlateauSteps = 1;
  double lrThreshold = 1e-4, lrEps = 1e-8;
  std::string lrThresholdMode = "rel";
  bool noCycleMomentum = false;               // --no-cycle-momentum: onecycle, cyclic
  double baseMomentum = -1, maxMomentum = -1; // --base-momentum, --max-momentum (< 0: default)
  int64_t microBatches = 1; // --micro-batches: the model's batch split into this many
  std::string precision = "fp32"; // --precision fp32 | bf16-mixed
  bool syncBatchNorm = false;     // --sync-batch-norm: BatchNorm statistics over every rank
  std::map<std::string, int64_t> paddingIdx; // --padding-idx NAME=ROW: embedding padding rows
};

/// Data-parallel placement (--world-size, --strategy, ...): the plait-shard and
/// plait-insert-collectives options.
struct DistOptions {
  int64_t worldSize = 1;
  std::string strategy = "ddp";
  std::string placement;             // REGEX=STRATEGY,...
  int64_t unitSize = 0;              // bytes; 0: one unit per block
  int64_t bucketBytes = 25 << 20;    // PyTorch DDP's default bucket
  int64_t prefetch = 1;
  bool noReshardAfterForward = false;
  bool noShardedAccumulation = false; // --no-sharded-accumulation
  bool replicaReducePerMicroBatch = false; // --replica-reduce-per-micro-batch (hsdp)
  int64_t reduceScattersInFlight = 2;  // gradient reduce-scatters in flight (0: unbounded)
};

struct CompileOptions {
  std::string modelPath;
  std::string outputPath;                     // "-" for stdout (only with emit = "mlir")
  std::string emit = "plan";                  // "plan" | "mlir"
  std::map<std::string, std::string> constInputs; // graph input name -> .pb/.npy file
  bool upgradeOpset = false; // --upgrade-opset: lift ONNX opsets below 13 with ONNX's converter
  std::string reportPath;                     // --report
  bool explain = false;                       // --explain: human summary on stdout
  std::string dumpDir;                        // --dump-dir: every stage as text
  int64_t alignment = 64;
  TrainOptions train;
  DistOptions dist;
  std::string recompute = "none";             // --recompute none|all|auto
  bool recomputeFixed = false;                // --recompute given: --strategy auto keeps it
  bool bucketsFixed = false;                  // --bucket-bytes given: auto does not search it
  bool prefetchFixed = false;                 // --prefetch given: auto does not search it
  bool inFlightFixed = false;                 // --reduce-scatters-in-flight given: the same
  bool microBatchesFixed = false;             // --micro-batches given: auto does not search it
  int64_t memLimit = 0;                       // --mem-limit in bytes per rank; 0: none
  bool inPlaceUpdates = true;                 // off: --no-inplace-updates
  bool reshapeAlias = true;                   // reshapes copy nothing; off: --no-reshape-alias
  bool inPlaceElementwise = true;             // elementwise results over dying operands (CPU);
                                              // off: --no-inplace-elementwise
  bool inPlaceCollectives = true;             // all-reduces in their operand's bytes;
                                              // off: --no-inplace-collectives
  bool schedule = true;                       // plait-schedule; off: --no-schedule
  bool fusion = true;                         // plait-fold-transposes, plait-fuse-elementwise;
                                              // off: --no-fusion
  bool fusedAttention = true;                 // plait-fuse-attention (with `fusion`);
                                              // off: --no-fused-attention
  bool fusedNorm = true;                      // plait-fuse-norm (with `fusion`);
                                              // off: --no-fused-norm
  bool fusedAddNorm = true;                   // residual add + norm in one op (with
                                              // fusedNorm); off: --no-fused-add-norm
  bool fusedBatchNorm = true;                 // training-mode BatchNorm as one op (with
                                              // fusedNorm); off: --no-fused-batch-norm
  bool fusedSyncBatchNorm = true;             // a SyncBatchNorm so too (with fusedBatchNorm);
                                              // off: --no-fused-sync-batch-norm
  bool gemmEpilogue = true;                   // plait-fuse-gemm-epilogue (with `fusion`);
                                              // off: --no-gemm-epilogue
  bool fusedGradCast = true;                  // grouped updates read bf16 gradients (with
                                              // `fusion`); off: --no-fused-grad-cast
  bool groupedCasts = true;                   // plait-group-casts (with `fusion`);
                                              // off: --no-grouped-casts
  bool fusedLossCast = true;                  // plait-fuse-loss-cast (with `fusion`);
                                              // off: --no-fused-loss-cast
  bool convImageBlocks = true;                // plait-conv-image-blocks (CPU plans);
                                              // off: --no-conv-image-blocks
  bool convGroupedDirect = true;              // plait-conv-grouped-direct (CPU plans);
                                              // off: --no-direct-grouped-conv
  bool convWinograd = true;                   // plait-conv-winograd (CPU plans);
                                              // off: --no-winograd
  bool foldMatmulRows = true;                 // plait-fold-matmul-rows (CPU plans);
                                              // off: --no-fold-matmul-rows
  bool codegen = true;                        // C++ (or CUDA) for fused kernels;
                                              // off: --no-codegen
  std::string device = "cpu";                 // --device cpu|cuda
  std::string clusterPath;                    // --cluster (the one compiled for)
  std::optional<cluster::ClusterSpec> cluster; // parsed --cluster: the cost model's target
  /// Every --cluster, parsed; with more than one, plait-compile compares them (compileModel).
  std::vector<std::pair<std::string, cluster::ClusterSpec>> clusters;
  bool worldSizeGiven = false;                // --world-size given (else: the cluster's)
  double trainTokens = 0;                     // --train-tokens: time and cost of the run
  int64_t trainSteps = 0;                     // --steps: the same, in steps
};

/// Whether the memory plan may put fused kernels' results in their dying operands' bytes: on
/// by default for CPU plans; CUDA's generated kernels read through __restrict__ pointers.
inline bool inPlaceElementwise(const CompileOptions &options) {
  return options.inPlaceElementwise && options.device != "cuda";
}

/// What the memory plan may do, from plait-compile's switches (`place`: offsets computed).
inline MemoryPlanOptions memoryPlanOptions(const CompileOptions &options, bool place) {
  MemoryPlanOptions m;
  m.alignment = options.alignment;
  m.inPlace = options.inPlaceUpdates;
  m.place = place;
  m.aliasReshapeResults = options.reshapeAlias;
  m.aliasElementwiseResults = inPlaceElementwise(options);
  m.inPlaceCollectives = options.inPlaceCollectives;
  return m;
}

/// Runs the whole pipeline. Returns 0 on success, 1 on a user error (after printing one
/// line on stderr), 2 on an internal error.
int compileModel(const CompileOptions &options);

} // namespace plait
