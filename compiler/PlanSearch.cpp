// Placement, recomputation and the --mem-limit search over them.
#include "compiler/PlanSearch.h"

#include <algorithm>
#include <future>
#include <thread>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "codegen/PlanBuilder.h"
#include "codegen/mlir/PlanWriter.h"
#include "ir/PlaitDialect.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/analysis/CostModel.h"
#include "passes/analysis/MemoryPlan.h"
#include "passes/memory/Recompute.h"
#include "passes/sharding/Placement.h"
#include "passes/sharding/VerifyCollectives.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace plait {

std::optional<int64_t> parseByteSize(const std::string &text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception &) {
    return std::nullopt;
  }
  std::string unit = text.substr(end);
  static const std::pair<const char *, double> units[] = {
      {"", 1},          {"B", 1},          {"KB", 1e3},          {"MB", 1e6},
      {"GB", 1e9},      {"TB", 1e12},      {"KiB", 1024.0},      {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (auto [name, scale] : units)
    if (unit == name) {
      double bytes = value * scale;
      if (!std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18)
        return std::nullopt;
      return (int64_t)bytes;
    }
  return std::nullopt;
}

std::string humanBytes(int64_t bytes) {
  if (bytes >= (1LL << 30))
    return fmt::format("{:.2f} GiB", bytes / 1073741824.0);
  if (bytes >= (1LL << 20))
    return fmt::format("{:.2f} MiB", bytes / 1048576.0);
  if (bytes >= 1024)
    return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

FailureOr<int64_t> perRankPeak(func::FuncOp step, const MemoryPlan &memory) {
  plan::PlanDesc plan;
  if (failed(lowerToPlan(step, memory, plan)))
    return failure();
  uint64_t workspace = plan.workspaceBytes.empty() ? 0 : plan.workspaceBytes.front();
  return memory.arenaBytes + (int64_t)workspace;
}

namespace {

/// One way to place and recompute the step.
struct Choice {
  std::string strategy;
  std::string recompute;          // none | all | segments
  std::vector<int64_t> segments;  // for "segments"
  int64_t bucketBytes = 0;        // ddp gradient buckets; 0: --bucket-bytes
  // With micro-batches, placements that shard gradients (zero2, zero3, hsdp): reduce each
  // micro-batch's gradients and sum them in the shards (true), or sum whole gradients over the
  // micro-batches and reduce once (false: k times fewer collectives, whole gradients held).
  bool shardedAccumulation = true;
  // How far collectives run ahead (--strategy auto tries deeper overlap where communication
  // is exposed): all-gathers prefetched, gradient reduce-scatters in flight; -1: the command
  // line's (--prefetch, --reduce-scatters-in-flight).
  int64_t prefetch = -1;
  int64_t inFlight = -1;
};

/// The IR verified, and the check that no rank can hang.
LogicalResult verifyPlaced(ModuleOp module) {
  if (failed(mlir::verify(module)))
    return failure();
  return verifyCollectiveOrder(module);
}

/// plait-recompute, plait-shard, plait-insert-collectives, plait-schedule, then the check that
/// no rank can hang: `choice` applied to `module` in place.
///
/// With `verify` the IR is verified after the last pass and the collective order checked.
/// Without (the strategy search screening candidates it may never keep) both are skipped:
/// the kept candidate is compiled again with them.
LogicalResult applyChoice(ModuleOp module, const CompileOptions &options, const Choice &choice,
                          bool verify = true) {
  const DistOptions &dist = options.dist;
  PassManager pm(module.getContext());
  pm.enableVerifier(false); // verified once, after the last pass (plait-opt verifies each)
  if (choice.recompute != "none") {
    RecomputePassOptions recompute;
    recompute.mode = choice.recompute;
    recompute.segments = choice.segments;
    // all: the least memory (only unit inputs kept, each layer replayed from them); auto
    // picks whole units, cheapest per byte first.
    recompute.granularity = choice.recompute == "all" ? "nested" : "unit";
    pm.addPass(createRecomputePass(recompute));
  }
  ShardPassOptions shard;
  shard.worldSize = dist.worldSize;
  shard.strategy = choice.strategy;
  shard.placement = dist.placement;
  shard.unitSize = dist.unitSize;
  shard.reshardAfterForward = !dist.noReshardAfterForward;
  shard.shardedAccumulation = !dist.noShardedAccumulation && choice.shardedAccumulation;
  shard.deferReplicaReduce = !dist.replicaReducePerMicroBatch;
  if (dist.worldSize > 1) {
    shard.clipGradNorm = options.train.clipGradNorm;
    shard.clipGradNormType = options.train.clipGradNormType;
    shard.logGradNorm = options.train.logGradNorm;
    shard.clipGradValue = options.train.clipGradValue;
  }
  pm.addPass(createShardPass(shard));
  InsertCollectivesPassOptions collectives;
  collectives.bucketBytes = choice.bucketBytes > 0 ? choice.bucketBytes : dist.bucketBytes;
  collectives.prefetch = choice.prefetch >= 0 ? choice.prefetch : dist.prefetch;
  collectives.reduceScattersInFlight =
      choice.inFlight >= 0 ? choice.inFlight : dist.reduceScattersInFlight;
  pm.addPass(createInsertCollectivesPass(collectives));
  if (options.fusion)
    pm.addPass(createFoldTransposesPass());
  if (options.fusion && options.gemmEpilogue)
    pm.addPass(createFuseGemmEpiloguePass());
  if (options.schedule)
    pm.addPass(createSchedulePass());
  if (options.fusion) {
    // Before the elementwise fusion: a gradient's cast back to bf16 that a fused kernel took
    // in (with a bias gradient's sum) would no longer be a cast the loss fold can remove.
    if (options.fusedLossCast)
      pm.addPass(createFuseLossCastPass());
    pm.addPass(createFuseElementwisePass());
    GroupUpdatesPassOptions group;
    group.foldGradCasts = options.fusedGradCast;
    pm.addPass(createGroupUpdatesPass(group));
    if (options.groupedCasts)
      pm.addPass(createGroupCastsPass());
  }
  if (options.foldMatmulRows && options.device != "cuda")
    pm.addPass(createFoldMatmulRowsPass());
  if (options.convWinograd && options.device != "cuda")
    pm.addPass(createConvWinogradPass());
  if (options.convGroupedDirect && options.device != "cuda")
    pm.addPass(createConvGroupedDirectPass());
  if (options.convImageBlocks && options.device != "cuda")
    pm.addPass(createConvImageBlocksPass());
  if (failed(pm.run(module)))
    return failure();
  if (!verify)
    return success();
  return verifyPlaced(module);
}

/// `choice` applied to a copy of the step, and that copy's per-rank peak; not `ok` when it
/// does not compile (its error has been reported through the context).
struct Candidate {
  bool ok = false;
  OwningOpRef<ModuleOp> module; // exact candidates, and screened ones kept (finishChoice)
  int64_t peak = 0;             // exact: arena + workspace; screened: lower bound + workspace
  bool exact = false;
  std::optional<double> predictedMs; // with --cluster: the cost model's step time
  double computeMs = 0, commMs = 0, exposedCommMs = 0, mfu = 0;
  uint64_t commBytes = 0;
  std::optional<PlacedStep> placed; // exact candidates: the memory plan and lowered plan
};

/// `copy`, a choice applied to the step, screened or placed. With `exact` the copy is
/// verified and its buffers placed: `peak` is what the plan will need. Without, the copy is
/// screened: `peak` is the liveness lower bound (no placement of buffers can use less), and
/// the copy is dropped unless that bound is at most `keepUnder`: a candidate that may be
/// kept then needs no second application of its choice for its exact compile.
Candidate finishChoice(OwningOpRef<ModuleOp> copy, const CompileOptions &options, bool exact,
                       int64_t keepUnder = -1) {
  // Exact: the IR is verified on a second thread while its buffers are placed (both only
  // read it); the candidate is kept only when both succeed. The future joins on every return.
  std::future<LogicalResult> verified;
  if (exact)
    verified = std::async(std::launch::async, [&] { return verifyPlaced(*copy); });
  auto unverified = [&] { return verified.valid() && failed(verified.get()); };
  func::FuncOp func = findEntryFunction(*copy);
  auto memory = planMemory(func, memoryPlanOptions(options, /*place=*/exact));
  if (failed(memory))
    return {};
  plan::PlanDesc plan;
  if (failed(lowerToPlan(func, *memory, plan, /*names=*/exact)))
    return {};
  if (unverified())
    return {};
  uint64_t workspace = plan.workspaceBytes.empty() ? 0 : plan.workspaceBytes.front();
  Candidate out;
  out.ok = true;
  out.exact = exact;
  out.peak = memory->arenaBytes + (int64_t)workspace;
  out.commBytes = plan::commVolume(plan).total;
  cost::Prediction prediction;
  if (options.cluster && cost::predictStep(plan, *options.cluster, prediction).ok()) {
    out.predictedMs = prediction.step.seconds * 1e3;
    out.computeMs = prediction.step.computeSeconds * 1e3;
    out.commMs = prediction.step.commSeconds * 1e3;
    out.exposedCommMs = prediction.step.exposedCommSeconds * 1e3;
    out.mfu = prediction.mfu;
  }
  if (exact) {
    out.module = std::move(copy);
    out.placed = PlacedStep{std::move(*memory), std::move(plan)};
  } else if (keepUnder >= 0 && out.peak <= keepUnder) {
    out.module = std::move(copy);
  }
  return out;
}

/// `choice` applied to a copy of `step`, then finishChoice.
Candidate tryChoice(ModuleOp step, const CompileOptions &options, const Choice &choice,
                    bool exact = true, int64_t keepUnder = -1) {
  OwningOpRef<ModuleOp> copy(step.clone());
  if (failed(applyChoice(*copy, options, choice, /*verify=*/false)))
    return {};
  return finishChoice(std::move(copy), options, exact, keepUnder);
}

std::optional<int64_t> peakOf(ModuleOp step, const CompileOptions &options,
                              const Choice &choice) {
  Candidate c = tryChoice(step, options, choice);
  return c.ok ? std::optional<int64_t>(c.peak) : std::nullopt;
}

/// Makes `module` the candidate that fits (its ops and attributes), instead of compiling the
/// same choice a second time.
/// Its memory plan and lowered plan go to `placed` (they refer to the same ops, which move).
void adopt(ModuleOp module, Candidate &fitting, std::optional<PlacedStep> *placed) {
  module.getBodyRegion().takeBody(fitting.module->getBodyRegion());
  module->setAttrs(fitting.module.get()->getAttrDictionary());
  if (placed)
    *placed = std::move(fitting.placed);
}

/// Every placement worth comparing on `world` ranks: ddp, zero1-3 and hsdp:G for each G
/// dividing the world size strictly between 1 and it (fsdp is zero3); one rank: ddp alone.
std::vector<std::string> placementsFor(int64_t world) {
  if (world == 1)
    return {"ddp"};
  std::vector<std::string> out{"ddp", "zero1", "zero2", "zero3"};
  for (int64_t g = 2; g < world; ++g)
    if (world % g == 0)
      out.push_back("hsdp:" + std::to_string(g));
  return out;
}

/// Strategies worth showing when the limit is missed: the one asked for, then every plain
/// strategy and each hsdp group size that divides the world size.
std::vector<std::string> candidateStrategies(const CompileOptions &options) {
  std::vector<std::string> out{options.dist.strategy};
  int64_t world = options.dist.worldSize;
  for (const std::string &s : placementsFor(world))
    if (std::find(out.begin(), out.end(), s) == out.end() &&
        !(s == "zero3" && out.front() == "fsdp"))
      out.push_back(s);
  if (world == 1)
    out.resize(1); // one rank: placements change nothing
  return out;
}


/// One error line, then the per-rank peak of each strategy and recompute choice.
LogicalResult reportMissedLimit(ModuleOp module, const CompileOptions &options) {
  int64_t limit = options.memLimit;
  std::vector<std::string> rows;
  bool anyFits = false;
  for (const std::string &strategy : candidateStrategies(options))
    for (const char *recompute : {"none", "all"}) {
      auto peak = peakOf(module, options, Choice{strategy, recompute, {}});
      if (!peak)
        return failure();
      bool fits = *peak <= limit;
      anyFits |= fits;
      rows.push_back(fmt::format("  {:<10} {:<9} {:>14} {:>12}  {}", strategy, recompute, *peak,
                                 humanBytes(*peak), fits ? "fits" : "over"));
    }
  std::string table =
      fmt::format("  {:<10} {:<9} {:>14} {:>12}\n", "strategy", "recompute", "peak bytes", "");
  for (const std::string &row : rows)
    table += row + "\n";
  module.emitError() << "the plan needs more than --mem-limit " << limit << " bytes ("
                     << humanBytes(limit) << ") per rank with --strategy "
                     << options.dist.strategy << " --recompute " << options.recompute << "; "
                     << (anyFits ? "per-rank peaks, marking what fits:"
                                 : "nothing below fits (per-rank peaks):");
  std::fputs(table.c_str(), stderr);
  return failure();
}

/// The candidates a --mem-limit search compiled, in order, for the report's `candidates`:
/// recorded on the module as `plait.candidates` once the kept one has been adopted.
class CandidateLog {
public:
  CandidateLog(MLIRContext *ctx, int64_t limit) : builder_(ctx), limit_(limit) {}
  void add(const Choice &choice, const Candidate &candidate) {
    std::string recompute = choice.recompute == "segments" ? "auto" : choice.recompute;
    int64_t peak = candidate.peak;
    SmallVector<NamedAttribute> predicted;
    if (candidate.predictedMs)
      predicted.push_back(builder_.getNamedAttr("predicted_step_ms",
                                                builder_.getF64FloatAttr(*candidate.predictedMs)));
    rows_.push_back(builder_.getDictionaryAttr(
        {builder_.getNamedAttr("strategy", builder_.getStringAttr(choice.strategy)),
         builder_.getNamedAttr("recompute", builder_.getStringAttr(recompute)),
         builder_.getNamedAttr("recomputed_segments",
                               builder_.getI64IntegerAttr((int64_t)choice.segments.size())),
         builder_.getNamedAttr("peak", builder_.getI64IntegerAttr(peak)),
         builder_.getNamedAttr("fits", builder_.getBoolAttr(peak <= limit_))}));
    if (!predicted.empty()) {
      NamedAttrList row(cast<DictionaryAttr>(rows_.back()));
      row.append(predicted.front());
      rows_.back() = row.getDictionary(builder_.getContext());
    }
  }
  /// Adopts `fitting` into `module` (the last candidate added) and records the log.
  LogicalResult keep(ModuleOp module, Candidate &fitting, std::optional<PlacedStep> *placed) {
    adopt(module, fitting, placed);
    module->setAttr("plait.candidates", builder_.getArrayAttr(rows_));
    return success();
  }

private:
  Builder builder_;
  int64_t limit_;
  SmallVector<Attribute> rows_;
};

/// The recompute segments worth replaying, cheapest replay per freed byte first (the order
/// --recompute auto adds them in), and the activation bytes each frees.
struct RecomputeOrder {
  std::vector<int64_t> segments;
  std::vector<int64_t> savedBytes;
};

FailureOr<RecomputeOrder> recomputeOrder(ModuleOp module) {
  auto analysis = analyzeRecompute(findEntryFunction(module));
  if (failed(analysis))
    return failure();
  RecomputeOrder out;
  for (size_t s = 0; s < analysis->segmentOps.size(); ++s)
    if (!analysis->lastOfPhase.count(s) && analysis->savedBytes[s] > 0)
      out.segments.push_back(s);
  std::stable_sort(out.segments.begin(), out.segments.end(), [&](int64_t a, int64_t b) {
    return analysis->flops[a] / analysis->savedBytes[a] <
           analysis->flops[b] / analysis->savedBytes[b];
  });
  for (int64_t s : out.segments)
    out.savedBytes.push_back(analysis->savedBytes[s]);
  return out;
}

// ---------------------------------------------------------------------------------------
// --strategy auto
// ---------------------------------------------------------------------------------------

/// One row of the search: a choice and what screening (and maybe exact compilation) found.
struct AutoRow {
  Choice choice;
  Candidate result;        // screened, or exact once compiled exactly
  int64_t statesFloor = 0; // params + optimizer state per rank: no plan of this choice is smaller
  bool pruned = false;     // not compiled: statesFloor alone is over the limit
  std::string status;      // chosen | fits | over | over (exact) | -
  std::string recomputeName() const {
    if (choice.recompute == "segments")
      return fmt::format("auto({})", choice.segments.size());
    return choice.recompute;
  }
};

/// The step's param and optimizer-state bytes (unpadded), and whether the params are the f32
/// masters of bf16-mixed (sharded with the optimizer state under zero1 and zero2 too).
struct ModelStateTotals {
  int64_t params = 0, states = 0;
  bool mixed = false;

  explicit ModelStateTotals(ModuleOp module) {
    module.walk([&](Operation *op) {
      if (isa<ParamOp, StateOp>(op))
        (isa<ParamOp>(op) ? params : states) +=
            tensorBytes(cast<RankedTensorType>(op->getResult(0).getType()));
    });
    auto precision = module->getAttrOfType<StringAttr>("plait.precision");
    mixed = precision && precision.getValue() == "bf16-mixed";
  }

  /// What summing whole gradients over micro-batches adds to that: between two micro-batches
  /// every param's running sum is live, at least 2 bytes per element under bf16-mixed (a
  /// bf16 gradient), else the param's own bytes.
  int64_t wholeGradients() const { return mixed ? params / 2 : params; }

  /// What one rank holds of them under `placement`: resident for the whole step, so a lower
  /// bound on any plan's peak with that placement.
  int64_t perRank(const Placement &placement, int64_t world) const {
    int64_t g = placement.shardGroupSize(world);
    bool shardParams = placement.shardsParams() || (mixed && placement.shardsOptimizer());
    return (shardParams ? params / g : params) +
           (placement.shardsOptimizer() ? states / g : states);
  }
};

std::string rowLabel(const AutoRow &row) {
  std::string label = row.choice.strategy;
  if (row.choice.recompute != "none")
    label += " + recompute " + row.recomputeName();
  if (row.choice.bucketBytes > 0 && row.choice.strategy == "ddp")
    label += ", buckets " + humanBytes(row.choice.bucketBytes);
  if (!row.choice.shardedAccumulation)
    label += ", whole gradients accumulated";
  if (row.choice.prefetch >= 0)
    label += fmt::format(", prefetch {}", row.choice.prefetch);
  if (row.choice.inFlight >= 0)
    label += fmt::format(", {} reduce-scatters in flight", row.choice.inFlight);
  return label;
}

/// Records the rows on the module (`plait.candidates`, in rank order) and the search's
/// summary (`plait.auto`), for --report and --explain.
/// `accumulation`: with micro-batches on several ranks, whether a row's placement shards
/// gradients, which is when its `sharded_accumulation` is recorded.
void recordSearch(ModuleOp module, const std::vector<AutoRow> &rows,
                  const std::vector<size_t> &rank, int64_t limit, const std::string &reason,
                  int64_t exactCompiles, const std::string &clusterName,
                  const CompileOptions &options) {
  Builder b(module.getContext());
  SmallVector<Attribute> list;
  for (size_t i : rank) {
    const AutoRow &row = rows[i];
    SmallVector<NamedAttribute> fields{
        b.getNamedAttr("strategy", b.getStringAttr(row.choice.strategy)),
        b.getNamedAttr("recompute", b.getStringAttr(row.choice.recompute == "segments"
                                                        ? "auto"
                                                        : row.choice.recompute)),
        b.getNamedAttr("recomputed_segments",
                       b.getI64IntegerAttr((int64_t)row.choice.segments.size())),
        b.getNamedAttr("bucket_bytes", b.getI64IntegerAttr(row.choice.bucketBytes)),
        b.getNamedAttr("peak", b.getI64IntegerAttr(row.result.peak)),
        b.getNamedAttr("peak_exact", b.getBoolAttr(row.result.exact)),
        b.getNamedAttr("fits", b.getBoolAttr(row.status == "chosen" || row.status == "fits")),
        b.getNamedAttr("status", b.getStringAttr(row.status)),
        b.getNamedAttr("chosen", b.getBoolAttr(row.status == "chosen"))};
    // With micro-batches, how a gradient-sharding placement accumulated them.
    std::string error;
    int64_t world = options.dist.worldSize;
    auto placement = parsePlacement(row.choice.strategy, world, error);
    if (world > 1 && options.train.microBatches > 1 && placement && placement->shardsGrads())
      fields.push_back(b.getNamedAttr(
          "sharded_accumulation",
          b.getBoolAttr(row.choice.shardedAccumulation && !options.dist.noShardedAccumulation)));
    // The deeper-overlap rows: what they changed from the command line's.
    if (row.choice.prefetch >= 0)
      fields.push_back(b.getNamedAttr("prefetch", b.getI64IntegerAttr(row.choice.prefetch)));
    if (row.choice.inFlight >= 0)
      fields.push_back(b.getNamedAttr("reduce_scatters_in_flight",
                                      b.getI64IntegerAttr(row.choice.inFlight)));
    if (!row.pruned && row.result.predictedMs) {
      fields.push_back(
          b.getNamedAttr("predicted_step_ms", b.getF64FloatAttr(*row.result.predictedMs)));
      fields.push_back(b.getNamedAttr("compute_ms", b.getF64FloatAttr(row.result.computeMs)));
      fields.push_back(
          b.getNamedAttr("exposed_comm_ms", b.getF64FloatAttr(row.result.exposedCommMs)));
      fields.push_back(b.getNamedAttr("mfu", b.getF64FloatAttr(row.result.mfu)));
      fields.push_back(
          b.getNamedAttr("comm_bytes", b.getI64IntegerAttr((int64_t)row.result.commBytes)));
    }
    list.push_back(b.getDictionaryAttr(fields));
  }
  module->setAttr("plait.candidates", b.getArrayAttr(list));
  module->setAttr("plait.auto",
                  b.getDictionaryAttr(
                      {b.getNamedAttr("mem_limit", b.getI64IntegerAttr(limit)),
                       b.getNamedAttr("reason", b.getStringAttr(reason)),
                       b.getNamedAttr("candidates", b.getI64IntegerAttr((int64_t)rows.size())),
                       b.getNamedAttr("exact_compiles", b.getI64IntegerAttr(exactCompiles)),
                       b.getNamedAttr("cluster", b.getStringAttr(clusterName))}));
}

/// How many candidates are screened at once: the cores, at most 8.
unsigned screenThreads() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

/// Screens `choices` (tryChoice without `exact`) on as many threads as there are cores,
/// each on its own copy of the step; the results in the order of `choices`, each keeping its
/// copy when its lower bound is at most `keepUnder`.

std::vector<Candidate> screenAll(ModuleOp module, const CompileOptions &options,
                                 const std::vector<Choice> &choices, int64_t keepUnder) {
  std::vector<Candidate> screened(choices.size());
  parallelFor(choices.size(), screenThreads(), [&](size_t i) {
    screened[i] = tryChoice(module, options, choices[i], /*exact=*/false, keepUnder);
  });
  return screened;
}

/// --strategy auto: every placement (ddp, zero1-3, hsdp:G for each G dividing the world
/// size), for ddp three bucket sizes, with micro-batches for the placements that shard
/// gradients both ways of accumulating them (in the shards, or whole and reduced once; not
/// searched under --no-sharded-accumulation), and where a placement does not fit, the fewest
/// recomputed units that make it fit, else recompute all; where a placement fits but its
/// step waits on the network, all-gathers prefetched 2 units ahead and 4 gradient
/// reduce-scatters in flight (alone and together). Each choice is screened (the real
/// passes and the cost model, memory from the liveness lower bound, no buffer placement);
/// the rows are ranked by predicted step time (ties: the smaller peak, then the order
/// above); the first whose lower bound fits is compiled exactly, and kept when its exact
/// peak fits (else the next). Choices whose params and optimizer state alone exceed the
/// limit are not compiled at all. (Micro-batches are searched around this, in Pipeline.cpp.)
LogicalResult searchStrategy(ModuleOp module, CompileOptions &options,
                             std::optional<PlacedStep> *placed) {
  const cluster::ClusterSpec &spec = *options.cluster;
  int64_t world = options.dist.worldSize;
  int64_t limit = options.memLimit > 0 ? options.memLimit : (int64_t)spec.device.memoryBytes;
  std::vector<std::string> strategies = placementsFor(world);
  std::vector<std::string> recomputes{"none", "all"};
  if (options.recomputeFixed)
    recomputes = {options.recompute == "all" ? "all" : "none"};
  bool searchRecomputeAuto = !options.recomputeFixed || options.recompute == "auto";
  if (options.recomputeFixed && options.recompute == "auto")
    recomputes = {"none", "all"};
  ModelStateTotals totals(module);
  std::vector<int64_t> buckets{0}; // 0: --bucket-bytes
  if (!options.bucketsFixed && world > 1 && totals.params > (4 << 20))
    buckets = {4 << 20, 25 << 20, 100 << 20};

  // Micro-batches on several ranks: gradient-sharding placements try both accumulations.
  const bool searchAccumulation = world > 1 && options.train.microBatches > 1 &&
                                  !options.dist.noShardedAccumulation;
  auto accumulationsFor = [&](const Placement &placement) {
    return searchAccumulation && placement.shardsGrads() ? std::vector<bool>{true, false}
                                                         : std::vector<bool>{true};
  };

  std::vector<AutoRow> rows;
  auto fits = [&](size_t row) { return rows[row].result.peak <= limit; };
  // A row's predicted step time (none: a pruned row, never compiled).
  auto timeOf = [](const AutoRow &r) { return r.result.predictedMs.value_or(INFINITY); };

  // 1. Each placement as it is (or with the recompute asked for), unless its params and
  //    optimizer state alone are over the limit. The screens are independent: they run on
  //    as many threads as there are cores (each on its own copy of the step), their rows
  //    kept in this order whatever finishes first.
  std::map<std::string, int64_t> floors;
  // (strategy, sharded accumulation) -> its fastest plain row (over ddp's bucket sizes).
  using PlainKey = std::pair<std::string, bool>;
  std::map<PlainKey, size_t> plainRow;
  std::string plainRecompute = recomputes.size() == 1 ? recomputes.front() : "none";
  std::vector<Choice> plainChoices;
  for (const std::string &strategy : strategies) {
    std::string error;
    auto placement = parsePlacement(strategy, world, error);
    int64_t floor = floors[strategy] = totals.perRank(*placement, world);
    if (floor > limit) {
      AutoRow row{Choice{strategy, plainRecompute, {}, 0}, {}, floor, true, "over"};
      row.result.peak = floor;
      rows.push_back(std::move(row));
      continue;
    }
    for (int64_t bucket : strategy == "ddp" ? buckets : std::vector<int64_t>{0})
      for (bool sharded : accumulationsFor(*placement)) {
        Choice choice{strategy, plainRecompute, {}, bucket, sharded};
        // Whole gradients that cannot fit beside the model states: not compiled.
        if (!sharded && floor + totals.wholeGradients() > limit) {
          AutoRow row{choice, {}, floor + totals.wholeGradients(), true, "over"};
          row.result.peak = row.statesFloor;
          rows.push_back(std::move(row));
          continue;
        }
        plainChoices.push_back(choice);
      }
  }
  std::vector<Candidate> screened = screenAll(module, options, plainChoices, limit);
  for (auto [choice, result] : llvm::zip(plainChoices, screened)) {
    if (!result.ok)
      return failure();
    rows.push_back(AutoRow{choice, std::move(result), floors[choice.strategy], false, ""});
    size_t row = rows.size() - 1;
    PlainKey key{choice.strategy, choice.shardedAccumulation};
    auto known = plainRow.find(key);
    if (known == plainRow.end() || timeOf(rows[row]) < timeOf(rows[known->second]))
      plainRow[key] = row;
  }
  // 1b. Deeper overlap, where communication is exposed: for each placement's fastest plain
  //     row that fits and waits on the network, all-gathers prefetched 2 units ahead
  //     (placements that gather params: zero3, fsdp, hsdp) and 4 gradient reduce-scatters in
  //     flight (placements that shard gradients): more of the network's time hidden behind
  //     compute, for more gathered params and whole gradients held. Each alone first, both
  //     where each alone was faster; a row is kept only when it is faster than the row it
  //     deepens. Not searched where --prefetch or --reduce-scatters-in-flight is given.
  {
    const bool tryPrefetch = !options.prefetchFixed && options.dist.prefetch < 2;
    const bool tryInFlight = !options.inFlightFixed && options.dist.reduceScattersInFlight > 0 &&
                             options.dist.reduceScattersInFlight < 4;
    struct Deeper {
      Choice choice;
      double baseMs; // the row it deepens
      PlainKey key;
    };
    auto screenDeeper = [&](const std::vector<Deeper> &tries) -> FailureOr<std::vector<bool>> {
      std::vector<Choice> choices;
      for (const Deeper &d : tries)
        choices.push_back(d.choice);
      std::vector<Candidate> results = screenAll(module, options, choices, limit);
      std::vector<bool> faster;
      for (auto [d, result] : llvm::zip(tries, results)) {
        if (!result.ok)
          return failure();
        bool keep = result.predictedMs && *result.predictedMs < d.baseMs;
        faster.push_back(keep);
        if (keep)
          rows.push_back(
              AutoRow{d.choice, std::move(result), floors[d.choice.strategy], false, ""});
      }
      return faster;
    };
    std::vector<Deeper> singles;
    for (auto &[key, row] : plainRow) {
      const AutoRow &plain = rows[row];
      if (!fits(row) || plain.result.exposedCommMs <= 0)
        continue;
      std::string error;
      auto placement = parsePlacement(key.first, world, error);
      if (tryPrefetch && placement->shardsParams()) {
        Choice c = plain.choice;
        c.prefetch = 2;
        singles.push_back({c, timeOf(plain), key});
      }
      if (tryInFlight && placement->shardsGrads()) {
        Choice c = plain.choice;
        c.inFlight = 4;
        singles.push_back({c, timeOf(plain), key});
      }
    }
    auto fasterSingles = screenDeeper(singles);
    if (failed(fasterSingles))
      return failure();
    // Both, where each alone was faster than the plain row.
    std::map<PlainKey, std::vector<const Deeper *>> helped;
    for (auto [d, faster] : llvm::zip(singles, *fasterSingles))
      if (faster)
        helped[d.key].push_back(&d);
    std::vector<Deeper> pairs;
    for (auto &[key, list] : helped) {
      if (list.size() != 2)
        continue;
      Choice c = list[0]->choice;
      c.prefetch = 2;
      c.inFlight = 4;
      double best = INFINITY;
      for (const AutoRow &r : rows)
        if (r.choice.strategy == key.first && r.choice.shardedAccumulation == key.second &&
            (r.choice.prefetch >= 0 || r.choice.inFlight >= 0))
          best = std::min(best, timeOf(r));
      pairs.push_back({c, best, key});
    }
    if (failed(screenDeeper(pairs)))
      return failure();
  }

  // 2. Recomputation, only where the plain placement does not fit (recomputing adds work and
  //    no communication, so it never makes a step faster) and only where the plain step is
  //    faster than the fastest that fits so far (else nothing recomputed can win).
  if (recomputes.size() > 1) {
    double fastestFitting = INFINITY;
    for (auto &[key, row] : plainRow)
      if (fits(row))
        fastestFitting = std::min(fastestFitting, timeOf(rows[row]));
    std::optional<RecomputeOrder> order; // computed on first need
    // Fastest plain step first, so that the bound prunes the most.
    std::vector<PlainKey> byTime;
    for (const std::string &strategy : strategies)
      for (bool sharded : {true, false})
        if (plainRow.count({strategy, sharded}))
          byTime.push_back({strategy, sharded});
    std::stable_sort(byTime.begin(), byTime.end(), [&](const PlainKey &a, const PlainKey &b) {
      return timeOf(rows[plainRow[a]]) < timeOf(rows[plainRow[b]]);
    });
    for (const PlainKey &key : byTime) {
      const std::string &strategy = key.first;
      const bool sharded = key.second;
      auto plain = plainRow.find(key);
      if (fits(plain->second) || timeOf(rows[plain->second]) >= fastestFitting)
        continue;
      int64_t bucket = rows[plain->second].choice.bucketBytes;
      auto keep = [&](Choice choice, Candidate result) {
        fastestFitting = std::min(fastestFitting, result.predictedMs.value_or(INFINITY));
        rows.push_back(AutoRow{std::move(choice), std::move(result), floors[strategy], false, ""});
      };
      // The fewest whole-unit segments that fit: estimated from the bytes each one frees (in
      // --recompute auto's order, cheapest replay per byte first) and checked. When the
      // estimate is over, every segment is tried, then the middle of the two. When none of
      // that fits, `all` (which replays layer by layer and keeps only unit inputs) is tried.
      // A fitting auto(k) makes `all` of the same placement pointless: it replays more for
      // the same communication. At most four screens per placement, usually one.
      std::optional<AutoRow> best; // the fitting probe with the fewest segments
      std::optional<Candidate> screenedAll; // `all`, screened with the probes on a spare core
      if (searchRecomputeAuto) {
        if (!order) {
          auto computed = recomputeOrder(module);
          if (failed(computed))
            return failure();
          order = std::move(*computed);
        }
        size_t n = order->segments.size();
        int64_t need = rows[plain->second].result.peak - limit, freed = 0;
        size_t estimate = 0;
        while (estimate < n && freed < need)
          freed += order->savedBytes[estimate++];
        std::map<size_t, int64_t> peakAt; // probed k -> its peak
        auto choiceOf = [&](size_t k) {
          return Choice{strategy, "segments",
                        std::vector<int64_t>(order->segments.begin(),
                                             order->segments.begin() + k),
                        bucket, sharded};
        };
        auto record = [&](size_t k, Candidate result) -> FailureOr<bool> {
          if (!result.ok)
            return failure();
          peakAt[k] = result.peak;
          bool fit = result.peak <= limit;
          if (fit && (!best || k < best->choice.segments.size()))
            best = AutoRow{choiceOf(k), std::move(result), floors[strategy], false, ""};
          return fit;
        };
        auto probe = [&](size_t k) {
          return record(k, tryChoice(module, options, choiceOf(k), /*exact=*/false, limit));
        };
        if (n > 0) {
          // The estimate and every unit are screened together (on two cores the second
          // is free), since the estimate falling short needs the second.
          size_t first = std::max<size_t>(estimate, 1);
          std::vector<size_t> ks{first};
          if (first < n)
            ks.push_back(n);
          std::vector<Choice> choices;
          for (size_t k : ks)
            choices.push_back(choiceOf(k));
          // A core left over screens `all` too, needed when no probe fits.
          bool withAll = choices.size() < screenThreads();
          if (withAll)
            choices.push_back(Choice{strategy, "all", {}, bucket, sharded});
          std::vector<Candidate> results = screenAll(module, options, choices, limit);
          if (withAll)
            screenedAll = std::move(results.back());
          auto fitsAtEstimate = record(first, std::move(results[0]));
          if (failed(fitsAtEstimate))
            return failure();
          if (!*fitsAtEstimate && first < n) {
            auto fitsAtAll = record(n, std::move(results[1]));
            if (failed(fitsAtAll))
              return failure();
            // Between the two: where the peak, taken as linear in k, meets the limit.
            if (*fitsAtAll && n - first > 1) {
              double over = double(peakAt[first] - limit);
              double drop = double(peakAt[first] - peakAt[n]);
              size_t k = first + size_t(std::ceil(double(n - first) * over / drop));
              k = std::clamp<size_t>(k, first + 1, n - 1);
              if (failed(probe(k)))
                return failure();
            }
          }
        }
      }
      if (best) {
        keep(best->choice, std::move(best->result));
        continue;
      }
      Choice all{strategy, "all", {}, bucket, sharded};
      Candidate result = screenedAll
                             ? std::move(*screenedAll)
                             : tryChoice(module, options, all, /*exact=*/false, limit);
      if (!result.ok)
        return failure();
      if (result.peak <= limit)
        keep(all, std::move(result));
      else
        rows.push_back(AutoRow{all, std::move(result), floors[strategy], false, ""});
    }
  }

  // Rank: predicted step time, then peak, then the order tried.
  std::vector<size_t> rank(rows.size());
  std::iota(rank.begin(), rank.end(), 0);
  std::stable_sort(rank.begin(), rank.end(), [&](size_t a, size_t b) {
    double ta = timeOf(rows[a]), tb = timeOf(rows[b]);
    if (ta != tb)
      return ta < tb;
    return rows[a].result.peak < rows[b].result.peak;
  });

  std::optional<size_t> chosen;
  int64_t exactCompiles = 0;
  for (size_t i : rank) {
    AutoRow &row = rows[i];
    if (row.pruned || row.result.peak > limit) {
      row.status = "over";
      continue;
    }
    if (chosen) {
      row.status = "fits"; // by its lower bound; not compiled exactly
      continue;
    }
    // A screened copy kept for this: placed without applying its choice again.
    Candidate exact = row.result.module
                          ? finishChoice(std::move(row.result.module), options, /*exact=*/true)
                          : tryChoice(module, options, row.choice, /*exact=*/true);
    ++exactCompiles;
    if (!exact.ok)
      return failure();
    row.result = std::move(exact);
    if (row.result.peak > limit) {
      row.status = "over (exact)";
      continue;
    }
    row.status = "chosen";
    chosen = i;
  }

  if (!chosen) {
    // The smallest candidate, and by how much it misses: among those screened (a pruned
    // row's peak is only its model states), else the smallest model states.
    size_t best = rank.front();
    auto smaller = [&](size_t a, size_t b) {
      if (rows[a].pruned != rows[b].pruned)
        return !rows[a].pruned;
      return rows[a].result.peak < rows[b].result.peak;
    };
    for (size_t i : rank)
      if (smaller(i, best))
        best = i;
    AutoRow &row = rows[best];
    if (!row.pruned && !row.result.exact) {
      Candidate exact = tryChoice(module, options, row.choice, /*exact=*/true);
      if (!exact.ok)
        return failure();
      row.result = std::move(exact);
    }
    int64_t need = row.result.peak;
    module.emitError() << fmt::format(
        "nothing fits in --mem-limit {} ({}) per rank on {}: the smallest of {} candidates, "
        "{}, needs {}{} ({}) per rank, {} ({:.1f}%) over",
        limit, humanBytes(limit), spec.name, rows.size(), rowLabel(row),
        row.pruned ? "at least " : "", need, humanBytes(need), humanBytes(need - limit),
        100.0 * double(need - limit) / double(limit));
    return failure();
  }

  AutoRow &win = rows[*chosen];
  // Why: the fastest that fits; what was faster and why it lost; the runner-up.
  double winMs = *win.result.predictedMs;
  int64_t fitting = 0;
  std::optional<size_t> fasterOver, runnerUp;
  for (size_t i : rank) {
    const AutoRow &r = rows[i];
    if (r.status == "fits") {
      ++fitting;
      if (!runnerUp)
        runnerUp = i;
    }
    if (i != *chosen && !fasterOver && r.status != "fits" && r.status != "chosen" &&
        timeOf(r) < winMs)
      fasterOver = i;
  }
  ++fitting; // the winner
  std::string reason = fmt::format(
      "{}: the fastest predicted step ({:.3f} ms, MFU {:.1f}%) of the {} candidate{} that fit "
      "in {} per rank (peak {})",
      rowLabel(win), winMs, 100 * win.result.mfu, fitting, fitting == 1 ? "" : "s",
      humanBytes(limit), humanBytes(win.result.peak));
  if (fasterOver) {
    const AutoRow &r = rows[*fasterOver];
    reason += fmt::format("; {} would take {:.3f} ms but needs {}{}", rowLabel(r),
                          timeOf(r), r.result.exact ? "" : "at least ",
                          humanBytes(r.result.peak));
  }
  if (runnerUp) {
    const AutoRow &r = rows[*runnerUp];
    reason += fmt::format("; next: {} at {:.3f} ms (+{:.1f}%)", rowLabel(r), timeOf(r),
                          100 * (timeOf(r) / winMs - 1));
  }
  adopt(module, win.result, placed);
  recordSearch(module, rows, rank, limit, reason, exactCompiles, spec.name, options);
  // The report describes the plan kept.
  options.dist.strategy = win.choice.strategy;
  if (win.choice.bucketBytes > 0)
    options.dist.bucketBytes = win.choice.bucketBytes;
  if (!win.choice.shardedAccumulation)
    options.dist.noShardedAccumulation = true;
  if (win.choice.prefetch >= 0)
    options.dist.prefetch = win.choice.prefetch;
  if (win.choice.inFlight >= 0)
    options.dist.reduceScattersInFlight = win.choice.inFlight;
  options.recompute = win.choice.recompute == "segments" ? "auto" : win.choice.recompute;
  return success();
}

} // namespace

LogicalResult placeTrainStep(ModuleOp module, CompileOptions &options,
                             std::optional<PlacedStep> *placed) {
  if (options.dist.strategy == "auto")
    return searchStrategy(module, options, placed);
  int64_t limit = options.memLimit;
  Choice choice{options.dist.strategy, options.recompute == "all" ? "all" : "none", {}};
  if (limit <= 0)
    return applyChoice(module, options, choice);
  CandidateLog log(module.getContext(), limit);
  Candidate candidate = tryChoice(module, options, choice);
  if (!candidate.ok)
    return failure();
  log.add(choice, candidate);
  if (candidate.peak <= limit)
    return log.keep(module, candidate, placed);
  if (options.recompute != "auto")
    return reportMissedLimit(module, options);
  // auto: recompute the segments that free the most bytes per FLOP first, until it fits.
  auto computed = recomputeOrder(module);
  if (failed(computed))
    return failure();
  std::vector<int64_t> *order = &computed->segments;
  choice.recompute = "segments";
  for (int64_t s : *order) {
    choice.segments.push_back(s);
    candidate = tryChoice(module, options, choice);
    if (!candidate.ok)
      return failure();
    log.add(choice, candidate);
    if (candidate.peak <= limit)
      return log.keep(module, candidate, placed);
  }
  return reportMissedLimit(module, options);
}

} // namespace plait
