// The plait-compile pipeline: load, verify, plan memory, lower to a plan, write report.
#include "compiler/Pipeline.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/PlanBuilder.h"
#include "codegen/mlir/PlanWriter.h"
#include "compiler/CompileReport.h"
#include "compiler/CpuCodegen.h"
#include "compiler/CudaCodegen.h"
#include "compiler/Diagnostics.h"
#include "compiler/PlanSearch.h"
#include "compiler/import/onnx/OnnxImporter.h"
#include "ir/PlaitDialect.h"
#include "passes/PassUtils.h"
#include "passes/Passes.h"
#include "passes/analysis/MemoryPlan.h"
#include "passes/autodiff/DivideBatch.h"
#include "passes/sharding/SyncMeans.h"
#include "passes/sharding/VerifyCollectives.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace plait {
namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The function that forms the step: @main, or the only function in the module.
FailureOr<func::FuncOp> entryFunction(ModuleOp module, const std::string &path) {
  if (auto func = findEntryFunction(module))
    return func;
  return emitError(module.getLoc()) << path << ": expected a function @main (found "
                                    << llvm::range_size(module.getOps<func::FuncOp>())
                                    << " functions)";
}

/// Every string the model carries (param and input names, init specs, any attribute) goes into
/// the plan, the report's JSON, checkpoints and safetensors headers: each must be UTF-8. One
/// error at the first op that carries one that is not.
LogicalResult verifyUtf8Strings(ModuleOp module) {
  WalkResult result = module.walk([](Operation *op) {
    StringAttr bad;
    op->getAttrDictionary().walk([&](StringAttr s) {
      if (!bad && !llvm::json::isUTF8(s.getValue()))
        bad = s;
    });
    // Names in locations too: the report's layer groups are named after them.
    const char *where = "string";
    if (!bad)
      (void)op->getLoc()->walk([&](Location loc) {
        auto name = dyn_cast<NameLoc>(loc);
        if (!name || llvm::json::isUTF8(name.getName().getValue()))
          return WalkResult::advance();
        bad = name.getName();
        where = "location name";
        return WalkResult::interrupt();
      });
    if (!bad)
      return WalkResult::advance();
    op->emitError() << "the " << where << " " << bad << " is not UTF-8";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

FailureOr<OwningOpRef<ModuleOp>> loadModel(MLIRContext &ctx, const CompileOptions &options) {
  const std::string &path = options.modelPath;
  if (!std::filesystem::exists(path))
    return emitError(UnknownLoc::get(&ctx)) << path << ": no such file";
  if (endsWith(path, ".onnx")) {
    OnnxImportOptions importOptions;
    importOptions.constInputs = options.constInputs;
    importOptions.upgradeOpset = options.upgradeOpset;
    // --micro-batches: the forward is built at the micro-batch; the train step restores B.
    importOptions.microBatches = options.train.enabled ? options.train.microBatches : 1;
    // A training step carries BatchNorm's running statistics from step to step.
    importOptions.buffers = options.train.enabled;
    importOptions.training = options.train.enabled;
    importOptions.syncBatchNorm = options.train.syncBatchNorm;
    importOptions.paddingIdx = options.train.paddingIdx;
    return importOnnxFile(ctx, path, importOptions);
  }
  if (!options.constInputs.empty())
    return emitError(UnknownLoc::get(&ctx)) << path << ": --const-input applies to ONNX models only";
  if (!options.train.paddingIdx.empty())
    return emitError(UnknownLoc::get(&ctx))
           << path << ": --padding-idx applies to ONNX models only (a .mlir model sets "
           << "padding_idx on its plait.gather)";
  if (options.train.syncBatchNorm)
    return emitError(UnknownLoc::get(&ctx))
           << path << ": --sync-batch-norm applies to ONNX models only (a .mlir model writes "
           << "plait.sync_mean for each statistic to synchronise)";
  if (options.upgradeOpset)
    return emitError(UnknownLoc::get(&ctx))
           << path << ": --upgrade-opset applies to ONNX models only";
  if (endsWith(path, ".mlir")) {
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(path, &ctx);
    if (!module)
      return failure();
    // --micro-batches: the model is rewritten to one micro-batch, as the importer does.
    int64_t microBatches = options.train.enabled ? options.train.microBatches : 1;
    if (microBatches > 1) {
      FailureOr<func::FuncOp> func = entryFunction(*module, path);
      if (failed(func) || failed(divideBatch(*func, microBatches)))
        return failure();
    }
    return module;
  }
  return emitError(UnknownLoc::get(&ctx))
         << path << ": unknown model format (expected .onnx or .mlir)";
}

/// Writes through a temporary file and a rename, so a crash never leaves half a plan.
/// Returns an error message, or "" on success.
std::string writeFileAtomically(const std::string &path, const void *data, size_t size) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return fmt::format("{}: cannot open for writing", path);
    out.write(static_cast<const char *>(data), (std::streamsize)size);
    if (!out)
      return fmt::format("{}: write failed", path);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return ec ? fmt::format("{}: {}", path, ec.message()) : "";
}

/// Writes one stage of the IR under --dump-dir; returns an error message or "".
std::string dumpStage(const CompileOptions &options, const std::string &name, ModuleOp module) {
  if (options.dumpDir.empty())
    return "";
  std::error_code ec;
  std::filesystem::create_directories(options.dumpDir, ec);
  llvm::raw_fd_ostream os(options.dumpDir + "/" + name, ec);
  if (ec)
    return fmt::format("{}/{}: {}", options.dumpDir, name, ec.message());
  module.print(os);
  return "";
}

LogicalResult buildTrainStep(ModuleOp module, const TrainOptions &train, int64_t worldSize) {
  BuildTrainStepPassOptions o;
  o.optimizer = train.optimizer;
  o.lr = train.lr;
  o.beta1 = train.beta1;
  o.beta2 = train.beta2;
  o.eps = train.eps;
  o.weightDecay = train.weightDecay;
  o.momentum = train.momentum;
  o.dampening = train.dampening;
  o.nesterov = train.nesterov;
  o.alpha = train.alpha;
  o.centered = train.centered;
  o.lrDecay = train.lrDecay;
  o.initialAccumulatorValue = train.initialAccumulatorValue;
  o.rho = train.rho;
  o.momentumDecay = train.momentumDecay;
  o.etaminus = train.etaminus;
  o.etaplus = train.etaplus;
  o.stepSizeMin = train.stepSizeMin;
  o.stepSizeMax = train.stepSizeMax;
  o.lambd = train.lambd;
  o.asgdAlpha = train.asgdAlpha;
  o.t0 = train.t0;
  o.amsgrad = train.amsgrad;
  o.maximize = train.maximize;
  o.decoupledWeightDecay = train.decoupledWeightDecay;
  o.alwaysAdapt = train.alwaysAdapt;
  o.trustClip = train.trustClip;
  o.adafactorBeta1 = train.adafactorBeta1;
  o.eps2 = train.eps2;
  o.clipThreshold = train.clipThreshold;
  o.decayRate = train.decayRate;
  o.relativeStep = train.relativeStep;
  o.warmupInit = train.warmupInit;
  o.noScaleParameter = train.noScaleParameter;
  o.freeze = train.freeze;
  o.noWeightDecay = train.noWeightDecay;
  o.lrScale = train.lrScale;
  for (const std::string &group : train.paramGroups)
    o.paramGroups += (o.paramGroups.empty() ? "" : ";") + group;
  // With several ranks the norm is of the averaged gradients: plait-shard clips them.
  o.clipGradNorm = worldSize > 1 ? 0.0 : train.clipGradNorm;
  o.clipGradNormType = train.clipGradNormType; // validated there on any world size
  o.logGradNorm = worldSize > 1 ? false : train.logGradNorm;
  o.clipGradValue = worldSize > 1 ? 0.0 : train.clipGradValue;
  o.labelSmoothing = train.labelSmoothing;
  o.emaDecay = train.emaDecay;
  o.emaWarmup = train.emaWarmup;
  o.emaPower = train.emaPower;
  o.emaInvGamma = train.emaInvGamma;
  o.emaMinDecay = train.emaMinDecay;
  o.emaStart = train.emaStart;
  o.emaEvery = train.emaEvery;
  o.emaBuffers = train.emaBuffers;
  o.schedule = train.schedule;
  o.warmupSteps = train.warmupSteps;
  o.totalSteps = train.totalSteps;
  o.minLr = train.minLr;
  o.lrGamma = train.lrGamma;
  o.lrStepSize = train.lrStepSize;
  o.lrPower = train.lrPower;
  o.decaySteps = train.decaySteps;
  o.lrMilestones = train.lrMilestones;
  o.lrCycleSteps = train.lrCycleSteps;
  o.lrCycleMult = train.lrCycleMult;
  o.lrPctStart = train.lrPctStart;
  o.lrAnneal = train.lrAnneal;
  o.lrThreePhase = train.lrThreePhase;
  o.lrDivFactor = train.lrDivFactor;
  o.lrFinalDivFactor = train.lrFinalDivFactor;
  o.lrStepSizeDown = train.lrStepSizeDown;
  o.lrCyclicMode = train.lrCyclicMode;
  o.lrPatience = train.lrPatience;
  o.lrThreshold = train.lrThreshold;
  o.lrThresholdMode = train.lrThresholdMode;
  o.lrCooldown = train.lrCooldown;
  o.lrEps = train.lrEps;
  o.lrPlateauSteps = train.lrPlateauSteps;
  o.cycleMomentum = !train.noCycleMomentum;
  o.baseMomentum = train.baseMomentum;
  o.maxMomentum = train.maxMomentum;
  o.microBatches = train.microBatches;
  o.precision = train.precision;
  PassManager pm(module.getContext());
  pm.addPass(createBuildTrainStepPass(o));
  return pm.run(module);
}

/// A compiled plan and its report, not yet written.
struct Compiled {
  plan::PlanDesc plan;
  nlohmann::json report;
};

/// Tokens one sample holds: the elements per sample of the first integer graph input with a
/// sequence axis (token ids, [batch, seq, ...]; class labels, [batch], are not tokens), or
/// nullopt when the model takes none.
std::optional<int64_t> tokensPerSample(const plan::PlanDesc &plan) {
  for (uint32_t input : plan.inputs) {
    const plan::TensorDesc &t = plan.tensors[input];
    if ((t.dtype != fb::DType::I64 && t.dtype != fb::DType::I32) || t.shape.size() < 2)
      continue;
    int64_t n = 1;
    for (size_t d = 1; d < t.shape.size(); ++d)
      n *= t.shape[d];
    return n;
  }
  return std::nullopt;
}

/// With --cluster and --train-tokens or --steps: the run's steps, hours and (with a price)
/// cost, as report["run"]. An exit code: 1 when --train-tokens meets a model without tokens.
int addRunEstimate(const plan::PlanDesc &plan, const CompileOptions &options,
                   nlohmann::json &report) {
  if (!options.cluster || !report.contains("predicted_step_ms") ||
      (options.trainTokens <= 0 && options.trainSteps <= 0))
    return 0;
  const cluster::ClusterSpec &spec = *options.cluster;
  int64_t globalBatch = report.value("global_batch", int64_t(0));
  nlohmann::json run;
  double steps = (double)options.trainSteps;
  if (auto tokens = tokensPerSample(plan)) {
    double perStep = double(globalBatch) * double(*tokens);
    run["tokens_per_step"] = perStep;
    if (options.trainTokens > 0)
      steps = std::ceil(options.trainTokens / perStep);
  } else if (options.trainTokens > 0) {
    return reportError(fmt::format("{}: --train-tokens needs a model that takes token ids (an "
                                   "integer input of shape [batch, seq]), and this one takes "
                                   "none; give --steps N",
                                   options.modelPath));
  }
  double stepMs = report["predicted_step_ms"].get<double>();
  double hours = steps * stepMs / 3.6e6;
  uint32_t devices = std::max<uint32_t>(plan.worldSize, 1);
  run["steps"] = steps;
  run["samples_per_step"] = globalBatch;
  run["hours"] = hours;
  run["devices"] = devices;
  run["device_hours"] = hours * devices;
  if (spec.pricePerDeviceHour)
    run["cost_usd"] = hours * devices * *spec.pricePerDeviceHour;
  else
    run["cost_usd"] = nullptr;
  report["run"] = run;
  return 0;
}

/// Loads, builds the training step, places it and lowers it: the plan and report of
/// `options` (a copy: --strategy auto records its choice in it, for the report). With
/// --emit mlir the IR is written here and `out` stays empty.
int buildPlan(MLIRContext &ctx, CompileOptions options, Compiled &out) {
  auto module = loadModel(ctx, options);
  if (failed(module) || failed(verify(**module)) || failed(verifyTensorSizes(**module)) ||
      failed(verifyUtf8Strings(**module)))
    return 1;
  auto func = entryFunction(**module, options.modelPath);
  if (failed(func))
    return 1;
  if (std::string error = dumpStage(options, "00-imported.mlir", **module); !error.empty())
    return reportError(error);
  if (options.train.syncBatchNorm && (**module).walk([](SyncMeanOp) {
        return WalkResult::interrupt();
      }).wasInterrupted() == false)
    return reportError(fmt::format("{}: --sync-batch-norm: the model has no training-mode "
                                   "BatchNormalization whose statistics to synchronise",
                                   options.modelPath));
  // --padding-idx: each initializer named must be an embedding table some Gather reads.
  if (!options.train.paddingIdx.empty()) {
    std::set<std::string> padded;
    (**module).walk([&](GatherOp gather) {
      if (auto param = gather.getData().getDefiningOp<ParamOp>(); param && gather.getPaddingIdx())
        padded.insert(param.getName().str());
    });
    for (const auto &[name, row] : options.train.paddingIdx)
      if (!padded.count(name))
        return reportError(fmt::format("{}: --padding-idx {}={}: no Gather reads an initializer "
                                       "named '{}' (an embedding table's, as it is named in the "
                                       "ONNX file)",
                                       options.modelPath, name, row, name));
  }
  // What the passes that depend on the target read (plait-fuse-elementwise: no bf16 fused
  // sums on CUDA).
  if (options.device == "cuda")
    (**module)->setAttr("plait.device", StringAttr::get(&ctx, options.device));
  if (options.fusion && (options.fusedAttention || options.fusedNorm)) {
    PassManager pm(&ctx);
    if (options.fusedAttention)
      pm.addPass(createFuseAttentionPass());
    if (options.fusedNorm)
      pm.addPass(createFuseNormPass(FuseNormPassOptions{
          options.fusedAddNorm, options.fusedBatchNorm, options.fusedSyncBatchNorm}));
    if (failed(pm.run(**module)))
      return 1;
  }
  std::optional<PlacedStep> placed; // the search's memory plan and plan of the step it kept
  if (options.train.enabled) {
    if (failed(buildTrainStep(**module, options.train, options.dist.worldSize)))
      return 1;
    // A norm's gradient is one op; without the norm fusion, the ops it stands for.
    if (!(options.fusion && options.fusedNorm))
      expandNormGrads(**module);
    if (std::string error = dumpStage(options, "01-train-step.mlir", **module); !error.empty())
      return reportError(error);
    if (failed(placeTrainStep(**module, options, &placed)))
      return 1;
    if (std::string error = dumpStage(options, "02-sharded.mlir", **module); !error.empty())
      return reportError(error);
    func = entryFunction(**module, options.modelPath);
  } else {
    // Without a training step nothing persists: results that carry a buffer's value after the
    // step (plait.buffer, e.g. a plait-zoo ResNet's running statistics) are not outputs.
    llvm::BitVector bufferResults(func->getNumResults());
    for (unsigned i = 0; i < func->getNumResults(); ++i)
      bufferResults[i] = bool(func->getResultAttr(i, "plait.buffer"));
    if (bufferResults.any()) {
      Operation *ret = func->getBody().front().getTerminator();
      ret->eraseOperands(bufferResults);
      (void)func->eraseResults(bufferResults);
    }
    // Without a training step a rank's statistics are its own (plait.sync_mean: its operand),
    // and plait.stop_gradient is its operand.
    if (failed(lowerSyncMeans(**module, *func, 1)))
      return 1;
    eraseStopGradients(*func);
    // Nodes that no output reads (the training step drops its own) never run.
    eraseDeadOps(*func);
  }
  if (!options.train.enabled && options.fusion) {
    PassManager pm(&ctx);
    pm.addPass(createFoldTransposesPass());
    if (options.gemmEpilogue)
      pm.addPass(createFuseGemmEpiloguePass());
    pm.addPass(createFuseElementwisePass());
    if (failed(pm.run(**module)))
      return 1;
  }
  if (!options.train.enabled &&
      (options.convImageBlocks || options.convWinograd || options.foldMatmulRows ||
       options.convGroupedDirect) &&
      options.device != "cuda") {
    PassManager pm(&ctx);
    if (options.foldMatmulRows)
      pm.addPass(createFoldMatmulRowsPass());
    if (options.convWinograd)
      pm.addPass(createConvWinogradPass());
    if (options.convGroupedDirect)
      pm.addPass(createConvGroupedDirectPass());
    if (options.convImageBlocks)
      pm.addPass(createConvImageBlocksPass());
    if (failed(pm.run(**module)))
      return 1;
  }

  if (options.emit == "mlir") {
    std::error_code ec;
    llvm::raw_fd_ostream os(options.outputPath, ec);
    if (ec)
      return reportError(fmt::format("{}: {}", options.outputPath, ec.message()));
    (*module)->print(os);
    return 0;
  }

  FailureOr<MemoryPlan> memory = failure();
  plan::PlanDesc &plan = out.plan;
  if (placed) {
    memory = std::move(placed->memory);
    plan = std::move(placed->plan);
  } else {
    memory = planMemory(*func, memoryPlanOptions(options, /*place=*/true));
    if (failed(memory))
      return 1;
    if (failed(lowerToPlan(*func, *memory, plan)))
      return 1;
  }
  plan.source = options.modelPath;
  int64_t workspace = plan.workspaceBytes.empty() ? 0 : (int64_t)plan.workspaceBytes.front();
  if (options.memLimit > 0 && memory->arenaBytes + workspace > options.memLimit)
    return reportError(fmt::format("{}: the plan needs {} bytes per rank, over --mem-limit {}",
                                   options.modelPath, memory->arenaBytes + workspace,
                                   options.memLimit));
  if (options.memLimit <= 0 && options.cluster && options.cluster->device.memoryBytes > 0 &&
      memory->arenaBytes + workspace > (int64_t)options.cluster->device.memoryBytes)
    return reportError(fmt::format(
        "{}: the plan needs {} bytes per rank, more than a device of {} has ({}); try "
        "--strategy auto",
        options.modelPath, memory->arenaBytes + workspace, options.cluster->name,
        options.cluster->device.memoryBytes));
  out.report = buildReport(**module, *memory, plan, options);
  if (int rc = addPrediction(plan, options, out.report))
    return rc;
  return addRunEstimate(plan, options, out.report);
}

/// --dump-dir: the generated kernel source `name`, when there is one.
std::string dumpSource(const CompileOptions &options, const std::string &name,
                       const std::string &source) {
  if (options.dumpDir.empty() || source.empty())
    return "";
  std::error_code ec;
  std::filesystem::create_directories(options.dumpDir, ec);
  return writeFileAtomically(options.dumpDir + "/" + name, source.data(), source.size());
}

/// The fused kernels as C++ compiled into the plan (the CPU's; a compiler that fails leaves
/// them to the interpreter, with the reason in the report).
int generateCpuCode(const CompileOptions &options, Compiled &compiled) {
  CpuCodegenResult generated = generateCpuKernels(compiled.plan);
  nlohmann::json &entry = compiled.report["codegen"]["cpu"];
  // Nothing about the cache: a plan compiled twice must be the same bytes.
  entry = {{"kernels", generated.kernels},
           {"instructions", generated.instructions},
           {"library_bytes", generated.libraryBytes},
           {"compiler", generated.compiler}};
  if (!generated.skipped.empty())
    entry["skipped"] = generated.skipped;
  if (generated.kernels > 0)
    compiled.report["optimizations"]["codegen"] = fmt::format(
        "{} fused kernels generated as C++ for {} fused instructions (identical kernels "
        "shared) and compiled into the plan ({} bytes; off: --no-codegen)",
        generated.kernels, generated.instructions, generated.libraryBytes);
  else if (generated.skipped != "no fused kernels")
    compiled.report["optimizations"]["codegen"] = fmt::format(
        "no kernels generated ({}); plait-run interprets the fused kernels", generated.skipped);
  if (std::string error = dumpSource(options, "kernels.cpp", generated.source); !error.empty())
    return reportError(error);
  return 0;
}

/// --device cuda: the fused kernels as CUDA C++ compiled by nvcc into the plan's fatbin. A
/// plan for CUDA has no interpreter to fall back on, so any failure is an error.
int generateCudaCode(const CompileOptions &options, Compiled &compiled) {
  CudaCodegenResult generated = generateCudaKernels(compiled.plan);
  if (std::string error = dumpSource(options, "kernels.cu", generated.source); !error.empty())
    return reportError(error);
  if (!generated.error.empty()) {
    std::string message = fmt::format("{}: {}", options.modelPath, generated.error);
    return generated.userError ? reportError(message) : reportInternalError(message);
  }
  nlohmann::json &entry = compiled.report["codegen"]["cuda"];
  entry = {{"kernels", generated.kernels},
           {"instructions", generated.instructions},
           {"fatbin_bytes", generated.fatbinBytes},
           {"archs", kCudaArchs},
           {"compiler", generated.compiler}};
  if (generated.kernels == 0) { // nothing fused: nothing to compile, nvcc or not
    entry["skipped"] = "no fused kernels";
    return 0;
  }
  std::string archs;
  for (const std::string &arch : kCudaArchs)
    archs += (archs.empty() ? "" : ", ") + arch;
  compiled.report["optimizations"]["codegen"] = fmt::format(
      "{} fused kernels generated as CUDA C++ for {} fused instructions (identical kernels "
      "shared) and compiled by nvcc for {} into the plan ({} bytes of fatbin; off: "
      "--no-codegen)",
      generated.kernels, generated.instructions, archs, generated.fatbinBytes);
  return 0;
}

/// Writes the plan (with its report inside), --report and --explain.
int writeOutputs(const CompileOptions &options, Compiled &compiled) {
  compiled.plan.device = options.device;
  if (options.codegen) {
    // A plan for CUDA carries no CPU code: plait-run runs it on a CUDA device or not at all.
    if (int rc = options.device == "cuda" ? generateCudaCode(options, compiled)
                                          : generateCpuCode(options, compiled))
      return rc;
  }
  compiled.plan.report = compiled.report.dump();
  std::vector<uint8_t> bytes = plan::serializePlan(compiled.plan);
  if (std::string error = writeFileAtomically(options.outputPath, bytes.data(), bytes.size());
      !error.empty())
    return reportError(error);
  if (!options.reportPath.empty()) {
    std::string text = compiled.report.dump(2) + "\n";
    if (std::string error = writeFileAtomically(options.reportPath, text.data(), text.size());
        !error.empty())
      return reportError(error);
  }
  if (options.explain)
    printExplain(compiled.report, llvm::outs());
  return 0;
}

/// buildPlan, and with --strategy auto without --micro-batches, the micro-batch count searched
/// too (ONNX and .mlir models alike): when one micro-batch needs recompute
/// or does not fit, 2, 4 and 8 micro-batches (those that divide the batch) are planned as
/// well, and the fastest predicted step kept (ties: fewer micro-batches). More micro-batches
/// never make a step that fits without recompute faster (the same work in smaller kernels,
/// as much or more communication: sharded placements reduce-scatter per micro-batch), so the
/// search stops at the first count that fits without recompute. The counts tried and their outcome go
/// into the report (`auto.micro_batches`) and --explain.
int buildPlanSearchingMicroBatches(MLIRContext &ctx, const CompileOptions &options,
                                   Compiled &out) {
  bool search = options.train.enabled && options.dist.strategy == "auto" &&
                !options.microBatchesFixed;
  if (!search)
    return buildPlan(ctx, options, out);
  struct Tried {
    int64_t k;
    std::string error;
    std::optional<double> ms;
    bool recompute = false;
  };
  std::vector<Tried> tried;
  std::optional<Compiled> best;
  int64_t bestK = 1;
  for (int64_t k : {1, 2, 4, 8}) {
    CompileOptions o = options;
    o.train.microBatches = k;
    Compiled compiled;
    Tried t{k, "", std::nullopt, false};
    int rc = 0;
    {
      ErrorCapture capture;
      rc = buildPlan(ctx, o, compiled);
      t.error = capture.first;
    }
    if (rc == 0) {
      t.ms = compiled.report.value("predicted_step_ms", 0.0);
      t.recompute = compiled.report.contains("recompute");
      if (!best || *t.ms < best->report.value("predicted_step_ms", 0.0)) {
        best = std::move(compiled);
        bestK = k;
      }
    } else if (k == 1 && t.error.find("nothing fits") == std::string::npos) {
      return reportError(t.error); // not a memory problem: more micro-batches will not help
    }
    tried.push_back(t);
    // A count that fits without recompute: more micro-batches cannot be faster (the same
    // work in smaller kernels, as much or more communication).
    if (rc == 0 && !t.recompute)
      break;
  }
  if (!best) {
    // Every count failed: the one-micro-batch error says by how much.
    return reportError(tried.front().error);
  }
  out = std::move(*best);
  nlohmann::json list = nlohmann::json::array();
  std::string line;
  for (const Tried &t : tried) {
    nlohmann::json entry = {{"micro_batches", t.k}};
    if (t.ms) {
      entry["predicted_step_ms"] = *t.ms;
      entry["recompute"] = t.recompute;
      line += fmt::format("{}{} -> {:.3f} ms{}", line.empty() ? "" : ", ", t.k, *t.ms,
                          t.recompute ? " (with recompute)" : "");
    } else {
      entry["error"] = t.error;
      bool memory = t.error.find("nothing fits") != std::string::npos;
      line += fmt::format("{}{} -> {}", line.empty() ? "" : ", ", t.k,
                          memory ? "nothing fits" : "cannot split the batch");
    }
    list.push_back(entry);
  }
  if (out.report.contains("auto")) {
    out.report["auto"]["micro_batches"] = list;
    if (tried.size() > 1)
      out.report["optimizations"]["micro_batch_search"] =
          fmt::format("micro-batches searched: {}; kept {} (off: give --micro-batches)", line,
                      bestK);
  }
  return 0;
}

int runPipeline(MLIRContext &ctx, const CompileOptions &options) {
  Compiled compiled;
  if (int rc = buildPlanSearchingMicroBatches(ctx, options, compiled))
    return rc;
  if (options.emit == "mlir")
    return 0;
  return writeOutputs(options, compiled);
}

/// Several --cluster flags: the model planned for each cluster (all its devices, unless
/// --world-size), a table ranking them by predicted time (and, with --train-tokens or
/// --steps and prices, by the run's time and cost), and the plan written for the cheapest
/// run where every cluster has a price and a run length is given, else for the fastest.
/// A cluster the model does not fit on is a row saying why.
int compareClusters(MLIRContext &ctx, const CompileOptions &options) {
  struct Row {
    std::string path;
    const cluster::ClusterSpec *spec;
    std::string error;
    Compiled compiled;
    double hours = 0;          // the run, or one step
    std::optional<double> cost;
  };
  std::vector<Row> rows;
  bool runGiven = options.trainTokens > 0 || options.trainSteps > 0;
  for (const auto &[path, spec] : options.clusters) {
    CompileOptions o = options;
    o.clusterPath = path;
    o.cluster = spec;
    if (!options.worldSizeGiven)
      o.dist.worldSize = spec.worldSize();
    Row row{path, &spec, "", {}, 0, std::nullopt};
    int rc = 0;
    {
      ErrorCapture capture;
      rc = buildPlanSearchingMicroBatches(ctx, o, row.compiled);
      row.error = capture.first;
    }
    if (rc != 0 && row.error.empty())
      return reportInternalError(fmt::format("planning for {} failed without a message", path));
    if (rc == 0) {
      const nlohmann::json &report = row.compiled.report;
      row.hours = runGiven ? report["run"]["hours"].get<double>()
                           : report["predicted_step_ms"].get<double>() / 3.6e6;
      if (runGiven && !report["run"]["cost_usd"].is_null())
        row.cost = report["run"]["cost_usd"].get<double>();
    }
    rows.push_back(std::move(row));
  }
  std::vector<size_t> byTime, byCost;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].error.empty())
      byTime.push_back(i);
  if (byTime.empty()) {
    std::string why;
    for (const Row &r : rows)
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", r.spec->name, r.error);
    return reportError(fmt::format("{}: no cluster can run the plan: {}", options.modelPath, why));
  }
  // Throughput, not step time: clusters of different sizes take different global batches.
  auto perSample = [&](size_t i) {
    const nlohmann::json &r = rows[i].compiled.report;
    return r["predicted_step_ms"].get<double>() /
           double(std::max<int64_t>(r.value("global_batch", int64_t(1)), 1));
  };
  std::stable_sort(byTime.begin(), byTime.end(), [&](size_t a, size_t b) {
    return runGiven ? rows[a].hours < rows[b].hours : perSample(a) < perSample(b);
  });
  bool allPriced = runGiven;
  for (size_t i : byTime)
    allPriced = allPriced && rows[i].cost.has_value();
  if (allPriced) {
    byCost = byTime;
    std::stable_sort(byCost.begin(), byCost.end(),
                     [&](size_t a, size_t b) { return *rows[a].cost < *rows[b].cost; });
  }
  size_t pick = allPriced ? byCost.front() : byTime.front();

  nlohmann::json table = nlohmann::json::array();
  std::string text = fmt::format(
      "clusters for {}{}:\n  {:>4}  {:<18} {:>7}  {:<22} {:>12} {:>8} {:>10} {:>10} {:>12}\n",
      options.modelPath,
      options.trainTokens > 0 ? fmt::format(" (--train-tokens {:.4g})", options.trainTokens)
      : options.trainSteps > 0 ? fmt::format(" (--steps {})", options.trainSteps)
                               : std::string(),
      "rank", "cluster", "devices", "strategy", "step ms", "batch", "peak/rank", "time h",
      "cost USD");
  int rank = 0;
  for (size_t i : byTime) {
    const Row &r = rows[i];
    const nlohmann::json &rep = r.compiled.report;
    std::string strategy = rep.contains("units") && !rep["units"].empty()
                               ? rep["units"][0]["placement"].get<std::string>()
                               : std::string("ddp");
    if (rep.contains("recompute"))
      strategy += rep["recompute"]["mode"] == "all"
                      ? std::string(" + recompute all")
                      : fmt::format(" + recompute {}", rep["recompute"]["recomputed"].get<int64_t>());
    int64_t peak = rep["memory"]["total"].get<int64_t>();
    text += fmt::format("  {:>4}  {:<18} {:>7}  {:<22} {:>12.3f} {:>8} {:>10} {:>10} {:>12}{}\n",
                        ++rank, r.spec->name, r.spec->worldSize(), strategy,
                        rep["predicted_step_ms"].get<double>(), rep.value("global_batch", 0),
                        humanBytes(peak),
                        runGiven ? fmt::format("{:.4g}", r.hours) : std::string("-"),
                        r.cost ? fmt::format("{:.4g}", *r.cost) : std::string("-"),
                        i == pick ? "  <- plan written" : "");
    table.push_back({{"cluster", r.spec->name},
                     {"file", r.path},
                     {"devices", r.spec->worldSize()},
                     {"strategy", strategy},
                     {"predicted_step_ms", rep["predicted_step_ms"]},
                     {"global_batch", rep.value("global_batch", 0)},
                     {"peak", peak},
                     {"run", rep.contains("run") ? rep["run"] : nlohmann::json(nullptr)}});
  }
  for (const Row &r : rows)
    if (!r.error.empty()) {
      text += fmt::format("     -  {:<18} {:>7}  does not fit: {}\n", r.spec->name,
                          r.spec->worldSize(), r.error);
      table.push_back({{"cluster", r.spec->name},
                       {"file", r.path},
                       {"devices", r.spec->worldSize()},
                       {"error", r.error}});
    }
  std::string fastest = rows[byTime.front()].spec->name;
  text += fmt::format("  fastest: {}", fastest);
  if (allPriced)
    text += fmt::format("; cheapest: {} (${:.4g})", rows[byCost.front()].spec->name,
                        *rows[byCost.front()].cost);
  text += fmt::format("; the plan written is for {} ({})\n", rows[pick].spec->name,
                      allPriced ? "the cheapest run"
                                : runGiven ? "the fastest run; not every cluster has a price"
                                           : "the highest throughput; give --train-tokens or "
                                             "--steps to compare the cost of a run");
  Row &chosen = rows[pick];
  chosen.compiled.report["clusters"] = table;
  llvm::outs() << text;
  return writeOutputs(options, chosen.compiled);
}

} // namespace

int compileModel(const CompileOptions &options) {
  DialectRegistry registry;
  registry.insert<PlaitDialect, func::FuncDialect>();
  registerVJPInterfaces(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false); // errors are one line; the IR is what --dump-dir is for
  OneLineDiagnostics diagnostics(ctx, options.modelPath);
  // --device cuda cannot write a useful plan without nvcc: say so before planning.
  if (options.device == "cuda" && options.codegen && options.emit == "plan") {
    std::string error;
    if (findNvcc(error).empty())
      return reportError(fmt::format("{}: --device cuda: {}", options.modelPath, error));
  }
  try {
    int rc = options.clusters.size() > 1 ? compareClusters(ctx, options) : runPipeline(ctx, options);
    if (rc != 0 && !diagnostics.reported() && !anyErrorReported())
      return reportInternalError("the pipeline failed without a diagnostic");
    return rc;
  } catch (const std::exception &e) {
    return reportInternalError(e.what());
  }
}

} // namespace plait
