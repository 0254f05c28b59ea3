// Placement, recomputation and the --mem-limit search over them.
#include "compiler/PlanSearch.h"

#include <algorithm>
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
};

/// plait-recompute, plait-shard, plait-insert-collectives, plait-schedule, then the check that
/// no rank can hang: `choice` applied to `module` in place.
LogicalResult applyChoice(ModuleOp module, const CompileOptions &options, const Choice &choice) {
  const DistOptions &dist = options.dist;
  PassManager pm(module.getContext());
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
  if (dist.worldSize > 1)
    shard.clipGradNorm = options.train.clipGradNorm;
  pm.addPass(createShardPass(shard));
  InsertCollectivesPassOptions collectives;
  collectives.bucketBytes = dist.bucketBytes;
  collectives.prefetch = dist.prefetch;
  pm.addPass(createInsertCollectivesPass(collectives));
  if (options.schedule)
    pm.addPass(createSchedulePass());
  if (failed(pm.run(module)))
    return failure();
  return verifyCollectiveOrder(module);
}

/// `choice` applied to a copy of the step, and that copy's per-rank peak; a null copy when it
/// does not compile (its error has been reported through the context).
struct Candidate {
  OwningOpRef<ModuleOp> module;
  int64_t peak = 0;
  std::optional<double> predictedMs; // with --cluster: the cost model's step time
};

Candidate tryChoice(ModuleOp step, const CompileOptions &options, const Choice &choice) {
  OwningOpRef<ModuleOp> copy(step.clone());
  if (failed(applyChoice(*copy, options, choice)))
    return {};
  func::FuncOp func = findEntryFunction(*copy);
  auto memory = planMemory(func, options.alignment, options.inPlaceUpdates);
  if (failed(memory))
    return {};
  plan::PlanDesc plan;
  if (failed(lowerToPlan(func, *memory, plan)))
    return {};
  uint64_t workspace = plan.workspaceBytes.empty() ? 0 : plan.workspaceBytes.front();
  Candidate out{std::move(copy), memory->arenaBytes + (int64_t)workspace, std::nullopt};
  cost::Prediction prediction;
  if (options.cluster && cost::predictStep(plan, *options.cluster, prediction).ok())
    out.predictedMs = prediction.step.seconds * 1e3;
  return out;
}

std::optional<int64_t> peakOf(ModuleOp step, const CompileOptions &options,
                              const Choice &choice) {
  Candidate c = tryChoice(step, options, choice);
  return c.module ? std::optional<int64_t>(c.peak) : std::nullopt;
}

/// Makes `module` the candidate that fits (its ops and attributes), instead of compiling the
/// same choice a second time.
void adopt(ModuleOp module, Candidate &fitting) {
  module.getBodyRegion().takeBody(fitting.module->getBodyRegion());
  module->setAttrs(fitting.module.get()->getAttrDictionary());
}

/// Strategies worth showing when the limit is missed: the one asked for, then every plain
/// strategy and each hsdp group size that divides the world size.
std::vector<std::string> candidateStrategies(const CompileOptions &options) {
  std::vector<std::string> out{options.dist.strategy};
  int64_t world = options.dist.worldSize;
  std::vector<std::string> all{"ddp", "zero1", "zero2", "zero3"};
  for (int64_t g = 2; g < world; ++g)
    if (world % g == 0)
      all.push_back("hsdp:" + std::to_string(g));
  for (const std::string &s : all)
    if (std::find(out.begin(), out.end(), s) == out.end() &&
        !(s == "zero3" && out.front() == "fsdp"))
      out.push_back(s);
  if (world == 1)
    out.resize(1); // one rank: placements change nothing
  return out;
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
  LogicalResult keep(ModuleOp module, Candidate &fitting) {
    adopt(module, fitting);
    module->setAttr("plait.candidates", builder_.getArrayAttr(rows_));
    return success();
  }

private:
  Builder builder_;
  int64_t limit_;
  SmallVector<Attribute> rows_;
};

} // namespace

LogicalResult placeTrainStep(ModuleOp module, const CompileOptions &options) {
  int64_t limit = options.memLimit;
  Choice choice{options.dist.strategy, options.recompute == "all" ? "all" : "none", {}};
  if (limit <= 0)
    return applyChoice(module, options, choice);
  CandidateLog log(module.getContext(), limit);
  Candidate candidate = tryChoice(module, options, choice);
  if (!candidate.module)
    return failure();
  log.add(choice, candidate);
  if (candidate.peak <= limit)
    return log.keep(module, candidate);
  if (options.recompute != "auto")
    return reportMissedLimit(module, options);
  // auto: recompute the segments that free the most bytes per FLOP first, until it fits.
  auto analysis = analyzeRecompute(findEntryFunction(module));
  if (failed(analysis))
    return failure();
  std::vector<int64_t> order;
  for (size_t s = 0; s < analysis->segmentOps.size(); ++s)
    if (!analysis->lastOfPhase.count(s) && analysis->savedBytes[s] > 0)
      order.push_back(s);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return analysis->flops[a] / analysis->savedBytes[a] <
           analysis->flops[b] / analysis->savedBytes[b];
  });
  choice.recompute = "segments";
  for (int64_t s : order) {
    choice.segments.push_back(s);
    candidate = tryChoice(module, options, choice);
    if (!candidate.module)
      return failure();
    log.add(choice, candidate);
    if (candidate.peak <= limit)
      return log.keep(module, candidate);
  }
  return reportMissedLimit(module, options);
}

} // namespace plait
