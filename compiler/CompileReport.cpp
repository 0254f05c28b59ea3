// plait-compile's report and --explain summary (CompileReport.h).
#include "compiler/CompileReport.h"

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/schema/CommModel.h"
#include "codegen/schema/FusedElementwise.h"
#include "compiler/Diagnostics.h"
#include "ir/PlaitDialect.h"
#include "ir/RankGroups.h"
#include "passes/PassUtils.h"
#include "passes/analysis/CostModel.h"
#include "passes/sharding/Placement.h"

using namespace mlir;

namespace plait {
namespace {

/// A pass's record (a dictionary of bool, integer, float and string attributes) as a JSON
/// object with the same keys; other attribute kinds are left out.
nlohmann::json scalarsToJson(DictionaryAttr dict) {
  nlohmann::json out = nlohmann::json::object();
  for (NamedAttribute field : dict) {
    std::string key = field.getName().str();
    if (auto v = dyn_cast<BoolAttr>(field.getValue()))
      out[key] = v.getValue();
    else if (auto v = dyn_cast<IntegerAttr>(field.getValue()))
      out[key] = v.getInt();
    else if (auto v = dyn_cast<FloatAttr>(field.getValue()))
      out[key] = v.getValueAsDouble();
    else if (auto v = dyn_cast<StringAttr>(field.getValue()))
      out[key] = v.str();
  }
  return out;
}

/// What sets a strategy-search row apart beyond its columns, for --explain: gradients summed
/// whole, deeper overlap.
std::string rowNotes(const nlohmann::json &row) {
  std::vector<std::string> notes;
  if (!row.value("sharded_accumulation", true))
    notes.push_back("whole gradients summed over the micro-batches, reduced once");
  if (row.contains("prefetch"))
    notes.push_back(fmt::format("all-gathers prefetched {} units ahead",
                                row["prefetch"].get<int64_t>()));
  if (row.contains("reduce_scatters_in_flight"))
    notes.push_back(fmt::format("{} reduce-scatters in flight",
                                row["reduce_scatters_in_flight"].get<int64_t>()));
  std::string out;
  for (const std::string &note : notes)
    out += (out.empty() ? " (" : "; ") + note;
  return out.empty() ? out : out + ")";
}

/// The report's lr_schedule for --explain: the first three kinds by name, the later ones with
/// their shape (runtime/LrSchedule.h).
std::string scheduleText(const nlohmann::json &s) {
  std::string kind = s.value("kind", "");
  int64_t warmup = s.value("warmup_steps", int64_t(0)), total = s.value("total_steps", int64_t(0));
  double minLr = s.value("min_lr", 0.0);
  std::string warm = warmup > 0 ? fmt::format("{} warm-up steps, then ", warmup) : "";
  if (kind == "linear" || kind == "polynomial")
    return fmt::format("{}: {}down to {:g} at step {}{}", kind, warm, minLr, total,
                       kind == "polynomial" ? fmt::format(" along (1 - t)^{:g}",
                                                          s.value("power", 1.0))
                                            : "");
  if (kind == "step")
    return fmt::format("step: {}x{:g} every {} steps", warm, s.value("gamma", 0.0),
                       s.value("step_size", int64_t(0)));
  if (kind == "cosine-restarts") {
    int64_t mult = s.value("cycle_mult", int64_t(1));
    return fmt::format("cosine-restarts: {}cycles of {} steps{} down to {:g}", warm,
                       s.value("cycle_steps", int64_t(0)),
                       mult > 1 ? fmt::format(", each x{} the one before,", mult) : "", minLr);
  }
  if (kind == "multistep") {
    std::string at;
    for (int64_t m : s.value("milestones", std::vector<int64_t>()))
      at += fmt::format("{}{}", at.empty() ? "" : ", ", m);
    return fmt::format("multistep: {}x{:g} after {} steps", warm, s.value("gamma", 0.0), at);
  }
  if (kind == "exponential")
    return fmt::format("exponential: {}x{:g} a step", warm, s.value("gamma", 0.0));
  if (kind == "inverse-sqrt")
    return fmt::format("inverse-sqrt: {}lr * sqrt({} / step)", warm, warmup);
  if (kind == "wsd")
    return fmt::format("wsd: {}stable to step {}, down to {:g} at step {}", warm,
                       total - s.value("decay_steps", int64_t(0)), minLr, total);
  if (kind == "plateau") { // ReduceLROnPlateau on the training loss (LrController)
    const int64_t window = s.value("plateau_steps", int64_t(1)),
                  cooldown = s.value("cooldown", int64_t(0)),
                  patience = s.value("patience", int64_t(10));
    const double threshold = s.value("threshold", 1e-4);
    auto unit = [&](int64_t n) {
      return window == 1 ? fmt::format("step{}", n == 1 ? "" : "s")
                         : fmt::format("window{}", n == 1 ? "" : "s");
    };
    const std::string what =
        window == 1 ? unit(patience) + " whose loss"
                    : fmt::format("{} of {} steps whose mean loss", unit(patience), window);
    return fmt::format(
        "plateau: {:g}, x{:g} (floor {:g}) after more than {} {} is not below "
        "the best {}{}",
        s.value("lr", 0.0), s.value("gamma", 0.1), minLr, patience, what,
        s.value("threshold_abs", false) ? fmt::format("- {:g}", threshold)
                                        : fmt::format("x (1 - {:g})", threshold),
        cooldown > 0 ? fmt::format("; then {} {} of cooldown", cooldown, unit(cooldown)) : "");
  }
  // The cyclical kinds, with the momentum they cycle (each update's momentum_cycle).
  std::string momentum =
      s.contains("max_momentum")
          ? fmt::format("; {} {:g} down to {:g} and back, against the lr",
                        s.value("cycled", std::string("momentum")), s.value("max_momentum", 0.0),
                        s.value("base_momentum", 0.0))
          : "";
  if (kind == "onecycle") {
    const double lr = s.value("lr", 0.0), first = lr / s.value("div_factor", 25.0);
    const bool three = s.value("three_phase", false);
    return fmt::format("onecycle: {:g} up to {:g} over {:g} of {} steps, {}down to {:g} "
                       "at step {}{}{}",
                       first, lr, s.value("pct_start", 0.3), total,
                       three ? fmt::format("back to {:g}, then ", first) : "",
                       first / s.value("final_div_factor", 1e4), total,
                       s.value("anneal_linear", false) ? " (linear)" : " (cosine)", momentum);
  }
  if (kind == "cyclic") {
    const int64_t up = s.value("step_size", int64_t(0)),
                  down = s.value("step_size_down", int64_t(0));
    const std::string mode = s.value("cyclic_mode", std::string("triangular"));
    return fmt::format("cyclic: {:g} up to {:g} in {} steps and back in {}, {}{}", minLr,
                       s.value("lr", 0.0), up, down > 0 ? down : up,
                       mode == "triangular2" ? "each cycle's height halved"
                       : mode == "exp_range"
                           ? fmt::format("the height x{:g} a step", s.value("gamma", 0.0))
                           : "triangular",
                       momentum);
  }
  return kind;
}

} // namespace

nlohmann::json buildReport(ModuleOp module, const MemoryPlan &memory,
                           const plan::PlanDesc &plan, const CompileOptions &options) {
  nlohmann::json report;
  report["model"] = options.modelPath;
  report["world_size"] = plan.worldSize;
  report["device"] = options.device;
  int64_t workspace = plan.workspaceBytes.empty() ? 0 : (int64_t)plan.workspaceBytes.front();
  int64_t params = memory.bytesOf(BufferKind::Param);
  // Gradient bytes kept for the optimizer step, per the placement of each unit (the ZeRO
  // paper's accounting; plait-shard records the units): a whole gradient per updated param
  // where nothing is sharded, this rank's shard of the unit where gradients are.
  int64_t grads = 0;
  for (auto [source, target] : plan.updates)
    if (plan.tensors[target].kind == fb::TensorKind::Param)
      grads += memory.buffers[target].bytes;
  nlohmann::json units = nlohmann::json::array();
  bool mixed = false;
  int64_t mixedParams = 0, mixedOptimizer = 0;
  if (auto list = module->getAttrOfType<ArrayAttr>("plait.units")) {
    grads = 0;
    for (Attribute attr : list) {
      auto unit = cast<DictionaryAttr>(attr);
      auto get = [&](const char *key) { return unit.getAs<IntegerAttr>(key).getInt(); };
      std::string placementName = unit.getAs<StringAttr>("placement").str();
      std::string error;
      auto placement = parsePlacement(placementName, plan.worldSize, error);
      auto precisionAttr = unit.getAs<StringAttr>("precision");
      Precision precision = precisionAttr && precisionAttr.getValue() == "bf16-mixed"
                                ? Precision::Bf16Mixed
                                : Precision::Fp32;
      int64_t gradBytes =
          unit.get("grad_element_bytes") ? get("grad_element_bytes") : kHalfBytes;
      ModelStateBytes state = modelStateBytes(*placement, get("numel"), get("element_bytes"),
                                              get("states_per_param"), plan.worldSize,
                                              precision, gradBytes);
      // States not of their params' shapes (Adafactor's rows and columns; placed ddp, or on
      // one rank, so whole on every rank): their own elements, and the f32 masters under
      // bf16-mixed. Sharded, only exp_avg is (states_per_param); the rows and columns are
      // whole on every rank.
      if (unit.get("state_elements") && (!placement->shardsOptimizer() || plan.worldSize == 1))
        state.optimizer =
            (get("state_elements") + (precision == Precision::Bf16Mixed ? get("numel") : 0)) *
            get("element_bytes");
      if (unit.get("replicated_state_elements"))
        state.optimizer += get("replicated_state_elements") * get("element_bytes");
      grads += state.grads;
      if (precision == Precision::Bf16Mixed) {
        mixed = true;
        mixedParams += state.params;
        mixedOptimizer += state.optimizer;
      }
      nlohmann::json names = nlohmann::json::array();
      for (Attribute name : unit.getAs<ArrayAttr>("params"))
        names.push_back(cast<StringAttr>(name).str());
      units.push_back({{"name", unit.getAs<StringAttr>("name").str()},
                       {"placement", placementName},
                       {"bytes", get("numel") * get("element_bytes")},
                       {"numel", get("numel")},
                       {"padded_numel", get("padded_numel")},
                       {"params_bytes", state.params},
                       {"grads_bytes", state.grads},
                       {"optimizer_bytes", state.optimizer},
                       {"grad_element_bytes",
                        unit.get("grad_element_bytes") ? get("grad_element_bytes")
                                                       : get("element_bytes")},
                       {"params", names}});
      if (auto shard = unit.getAs<BoolAttr>("accumulate_in_shard"); shard && shard.getValue())
        units.back()["accumulate_in_shard"] = true;
      if (auto defer = unit.getAs<BoolAttr>("defer_replica_reduce"); defer && defer.getValue())
        units.back()["defer_replica_reduce"] = true;
    }
  }
  int64_t constants = memory.bytesOf(BufferKind::Constant);
  int64_t inputs = memory.bytesOf(BufferKind::Input);
  int64_t activations = memory.arenaBytes; // upper bound on what is not model state
  for (const PlannedBuffer &b : memory.buffers)
    if (b.kind == BufferKind::Param || b.kind == BufferKind::Constant ||
        b.kind == BufferKind::State)
      activations -= b.size;
  // bf16-mixed: the model state as ZeRO counts it (bf16 params and gradients; f32 masters
  // with the optimizer state), from the units; the arena holds the f32 masters as params.
  int64_t optimizer = memory.bytesOf(BufferKind::State);
  if (mixed) {
    params = mixedParams;
    optimizer = mixedOptimizer;
  }
  report["precision"] = mixed ? "bf16-mixed" : "fp32";
  report["memory"] = {{"params", params},
                      {"grads", grads},
                      {"optimizer", optimizer},
                      {"constants", constants},
                      {"inputs", inputs},
                      {"activations", activations},
                      {"workspace", workspace},
                      {"peak", memory.arenaBytes},
                      {"total", memory.arenaBytes + workspace},
                      {"high_water", plan.peakBytes.empty() ? 0 : plan.peakBytes.front()},
                      {"lower_bound", memory.lowerBound},
                      {"heuristic", memory.heuristic}};
  // Bytes rank 0 sends per step (every rank sends the same in these SPMD plans), under the
  // ring model the runtime's counters use.
  plan::CommVolume comm = plan::commVolume(plan);
  report["comm"] = comm.bytes;
  report["comm"]["total"] = comm.total;
  report["collectives_per_step"] = comm.count;
  report["kernels_per_step"] = plan.instrs.size();
  nlohmann::json kernels = nlohmann::json::object();
  for (const plan::InstrDesc &instr : plan.instrs)
    kernels[instr.kernel] = kernels.value(instr.kernel, 0) + 1;
  report["kernels"] = kernels;
  report["units"] = units;
  if (!plan.inputs.empty() && !plan.tensors[plan.inputs.front()].shape.empty()) {
    int64_t batch = plan.tensors[plan.inputs.front()].shape.front();
    report["batch_per_rank"] = batch;
    report["global_batch"] = batch * plan.worldSize;
  }
  report["training"] = plan.training;
  if (plan.training) {
    // Tensors the step stores (plait.assign): copied after the step, or written in place.
    int64_t stored = 0;
    module.walk([&](AssignOp) { ++stored; });
    report["optimizer_updates"] = stored;
    report["micro_batches"] = options.train.microBatches;
    // The optimizer and its schedule as plait-build-train-step recorded them.
    if (auto train = module->getAttrOfType<DictionaryAttr>("plait.train"))
      report["train"] = scalarsToJson(train);
    // The weight EMA's averages (states "<param>.ema", or "<unit>.ema" shards): this rank's.
    int64_t emaStates = 0, emaBytes = 0;
    module.walk([&](StateOp state) {
      if (!state.getName().ends_with(".ema"))
        return;
      auto type = cast<RankedTensorType>(state.getType());
      ++emaStates;
      emaBytes += type.getNumElements() * int64_t(type.getElementTypeBitWidth() / 8);
    });
    if (emaStates > 0)
      report["ema"] = {{"states", emaStates}, {"bytes", emaBytes}};
    if (auto schedule = module->getAttrOfType<DictionaryAttr>("plait.lr_schedule")) {
      report["lr_schedule"] = scalarsToJson(schedule);
      if (auto milestones = schedule.getAs<DenseI64ArrayAttr>("milestones"))
        report["lr_schedule"]["milestones"] = std::vector<int64_t>(
            milestones.asArrayRef().begin(), milestones.asArrayRef().end());
    }
  }
  report["optimizations"] = {
      {"memory_planning", fmt::format("{} buffers in a {}-byte arena ({}), lower bound {} bytes",
                                      memory.buffers.size(), memory.arenaBytes,
                                      memory.heuristic, memory.lowerBound)}};
  if (plan.training && options.train.microBatches > 1) {
    int64_t k = options.train.microBatches;
    int64_t micro = report.value("batch_per_rank", int64_t(0)) / k;
    int64_t inShard = 0, deferred = 0;
    for (const auto &u : units) {
      inShard += u.value("accumulate_in_shard", false);
      deferred += u.value("defer_replica_reduce", false);
    }
    std::string reduced;
    if (plan.worldSize > 1 && inShard == 0)
      reduced = "reduced across ranks once per step ";
    else if (plan.worldSize > 1)
      reduced = fmt::format(
          "reduced across ranks ({} of {} units' per micro-batch, reduce-scattered as they "
          "are produced and summed in their shards: no whole gradient outlives its "
          "micro-batch; off: --no-sharded-accumulation{}{}) ",
          inShard, units.size(),
          inShard < int64_t(units.size()) ? "; the others' once per step" : "",
          deferred == 0
              ? std::string()
              : fmt::format("; {} hsdp units' shards all-reduced across their replicas twice "
                            "per step, the first {} micro-batches' sum and then the last's, "
                            "not once per micro-batch; off: --replica-reduce-per-micro-batch",
                            deferred, k - 1));
    report["optimizations"]["micro_batches"] = fmt::format(
        "{} micro-batches of {} sample{}: forward and backward per micro-batch, gradients "
        "summed as they are produced, then averaged, {}and applied by one optimizer update",
        k, micro, micro == 1 ? "" : "s", reduced);
  }
  if (memory.inPlaceBuffers > 0)
    report["optimizations"]["in_place_updates"] = fmt::format(
        "{} optimizer results written straight into their param or state ({} bytes that need "
        "no buffer and no copy after the step; off: --no-inplace-updates)",
        memory.inPlaceBuffers, memory.inPlaceBytes);
  if (memory.elementwiseAliases > 0)
    report["optimizations"]["elementwise_alias"] = fmt::format(
        "{} fused kernel results written over an operand that dies at the kernel ({} bytes "
        "that need no buffer; off: --no-inplace-elementwise)",
        memory.elementwiseAliases, memory.elementwiseAliasBytes);
  if (memory.mapAliases > 0)
    report["optimizations"]["map_alias"] = fmt::format(
        "{} result{} of unfused elementwise ops written over an operand that dies at the op "
        "({} bytes that need no buffer; off: --no-inplace-elementwise)",
        memory.mapAliases, memory.mapAliases == 1 ? "" : "s", memory.mapAliasBytes);
  if (memory.collectiveAliases > 0)
    report["optimizations"]["collective_alias"] = fmt::format(
        "{} all-reduces done in place, their result in their operand's bytes (MPI_IN_PLACE; "
        "{} bytes that need no buffer; off: --no-inplace-collectives)",
        memory.collectiveAliases, memory.collectiveAliasBytes);
  if (memory.reshapeAliases > 0)
    report["optimizations"]["reshape_alias"] = fmt::format(
        "{} reshape results planned in their operand's bytes ({} bytes that need no buffer, "
        "and no instruction; off: --no-reshape-alias)",
        memory.reshapeAliases, memory.reshapeAliasBytes);
  if (auto attention = module->getAttrOfType<DictionaryAttr>("plait.fuse_attention")) {
    int64_t fused = attention.getAs<IntegerAttr>("fused").getInt();
    int64_t left = attention.getAs<IntegerAttr>("left").getInt();
    auto count = [&](const char *key) {
      auto value = attention.getAs<IntegerAttr>(key);
      return value ? value.getInt() : int64_t(0);
    };
    const int64_t causal = count("causal"), dropped = count("dropout");
    report["fusion"]["attention"] = {{"fused", fused},
                                     {"causal", causal},
                                     {"dropout", dropped},
                                     {"left", left},
                                     {"reasons", nlohmann::json::object()}};
    std::string reasons;
    if (auto dict = attention.getAs<DictionaryAttr>("reasons"))
      for (NamedAttribute named : dict) {
        int64_t count = cast<IntegerAttr>(named.getValue()).getInt();
        report["fusion"]["attention"]["reasons"][named.getName().str()] = count;
        reasons += fmt::format("{}{} left: {}", reasons.empty() ? "" : "; ", count,
                               named.getName().str());
      }
    if (fused > 0 || left > 0)
      report["optimizations"]["fuse_attention"] = fmt::format(
          "{} attention{} ({} causal, {} drawing their probabilities' dropout) computed by one "
          "fused kernel each, keeping a log-sum-exp per query row instead of the [S, T] scores "
          "and probabilities{}{} (off: --no-fused-attention)",
          fused, fused == 1 ? "" : "s", causal, dropped, reasons.empty() ? "" : "; softmaxes ",
          reasons);
  }
  if (auto norm = module->getAttrOfType<DictionaryAttr>("plait.fuse_norm")) {
    auto get = [&](const char *key) { return norm.getAs<IntegerAttr>(key).getInt(); };
    report["fusion"]["norm"] = scalarsToJson(norm);
    int64_t layerNorms = get("layer_norm"), rmsNorms = get("rms_norm");
    // The training step's norm gradients, each one kernel (expanded under --no-fused-norm).
    int64_t grads = 0;
    module->walk([&](Operation *op) { grads += isa<LayerNormGradOp, RmsNormGradOp>(op); });
    report["fusion"]["norm"]["backward"] = grads;
    int64_t batchNorms = get("batch_norm"), batchNormGrads = 0;
    const int64_t syncBatchNorms = get("sync_batch_norm");
    module->walk([&](BatchNormGradOp) { ++batchNormGrads; });
    report["fusion"]["norm"]["batch_norm_backward"] = batchNormGrads;
    int64_t adds = get("residual_adds");
    std::vector<std::string> clauses;
    if (layerNorms + rmsNorms > 0)
      clauses.push_back(fmt::format(
          "{} layer norm{} and {} RMS norm{} computed by one kernel each instead of {} ops, "
          "keeping only their input for the backward",
          layerNorms, layerNorms == 1 ? "" : "s", rmsNorms, rmsNorms == 1 ? "" : "s",
          get("ops")));
    if (grads > 0)
      clauses.push_back(fmt::format("{} norm gradient{} computed by one kernel each "
                                    "(layer_norm_grad / rms_norm_grad, recomputing the row "
                                    "statistics from the input)",
                                    grads, grads == 1 ? "" : "s"));
    if (batchNorms > 0)
      clauses.push_back(fmt::format(
          "{} training-mode BatchNorm{} computed by one kernel each instead of {} ops, keeping "
          "only the input and the per-channel statistics for the backward{} (batch_norm / "
          "batch_norm_grad; off: --no-fused-batch-norm){}",
          batchNorms, batchNorms == 1 ? "" : "s", get("batch_norm_ops"),
          batchNormGrads > 0 ? fmt::format(", and their {} gradient{} by one kernel each",
                                           batchNormGrads, batchNormGrads == 1 ? "" : "s")
                             : std::string(),
          syncBatchNorms > 0
              ? fmt::format(", {} of them SyncBatchNorm{}, whose statistics and gradient sums "
                            "each rank computes in a kernel of their own and all ranks "
                            "exchange in one collective each way (off: "
                            "--no-fused-sync-batch-norm)",
                            syncBatchNorms, syncBatchNorms == 1 ? "" : "s")
              : std::string()));
    if (adds > 0)
      clauses.push_back(fmt::format("{} residual add{} computed in the kernel of the norm that "
                                    "reads {} sum (add_layer_norm / add_rms_norm; off: "
                                    "--no-fused-add-norm)",
                                    adds, adds == 1 ? "" : "s", adds == 1 ? "its" : "their"));
    if (!clauses.empty())
      report["optimizations"]["fuse_norm"] =
          fmt::format("{} (off: --no-fused-norm)", fmt::join(clauses, "; "));
  }
  // --sync-batch-norm: the statistics averaged over the ranks (forward and backward, per
  // micro-batch, replays included).
  if (auto sync = module->getAttrOfType<DictionaryAttr>("plait.sync_means"))
    report["sync_batch_norm"] = scalarsToJson(sync);
  // ONNX models of an opset below 13: the nodes plait's importer rewrote into opset 13's forms.
  if (auto lift = module->getAttrOfType<DictionaryAttr>("plait.onnx_opset_lift"))
    report["onnx_opset_lift"] = scalarsToJson(lift);
  // ONNX Loop and Scan nodes, unrolled at import.
  if (auto unrolled = module->getAttrOfType<DictionaryAttr>("plait.onnx_unrolled"))
    report["onnx_unrolled"] = scalarsToJson(unrolled);
  // Quantized ONNX models: what the importer did with their QuantizeLinear/DequantizeLinear.
  if (auto quantization = module->getAttrOfType<DictionaryAttr>("plait.quantization"))
    report["quantization"] = scalarsToJson(quantization);
  if (auto folded = module->getAttrOfType<DictionaryAttr>("plait.fold_transposes")) {
    auto get = [&](const char *key) { return folded.getAs<IntegerAttr>(key).getInt(); };
    report["fusion"]["fold_transposes"] = scalarsToJson(folded);
    report["optimizations"]["fold_transposes"] = fmt::format(
        "{} transposes removed: {} matrix-product operands read transposed by BLAS, {} "
        "products computed transposed, {} transpose pairs merged (off: --no-fusion)",
        get("removed"), get("operands"), get("results"), get("composed"));
  }
  if (auto epilogue = module->getAttrOfType<DictionaryAttr>("plait.fuse_gemm_epilogue")) {
    int64_t biases = epilogue.getAs<IntegerAttr>("biases").getInt();
    int64_t castsLeft = epilogue.getAs<IntegerAttr>("left_cast").getInt();
    report["fusion"]["gemm_epilogue"] = scalarsToJson(epilogue);
    if (biases > 0 || castsLeft > 0)
      report["optimizations"]["gemm_epilogue"] = fmt::format(
          "{} bias add{} computed by {} GEMM{} as {}{} (off: --no-gemm-epilogue)", biases,
          biases == 1 ? "" : "s", biases == 1 ? "its" : "their", biases == 1 ? "" : "s",
          options.device == "cuda" ? "cuBLASLt's bias epilogue"
                                   : "the result the GEMM accumulates onto",
          castsLeft > 0 ? fmt::format("; {} left to the elementwise fusion, their bias a cast "
                                      "it computes in the add's kernel",
                                      castsLeft)
                        : "");
  }
  // A pass that records its counts on the module: them in the report under `key`, and, when
  // it changed `done` of `of` ops, its line: `text` with those two counts (and `extra`'s).
  auto countedPass = [&](const char *attr, const char *key, const char *done, const char *of,
                         const char *extra, const char *text) {
    auto counts = module->getAttrOfType<DictionaryAttr>(attr);
    if (!counts)
      return;
    auto get = [&](const char *name) { return counts.getAs<IntegerAttr>(name).getInt(); };
    report[key] = scalarsToJson(counts);
    if (get(done) > 0)
      report["optimizations"][key] =
          fmt::format(fmt::runtime(text), get(done), get(of), extra ? get(extra) : 0);
  };
  countedPass("plait.conv_winograd", "conv_winograd", "winograd", "convolutions", nullptr,
              "{} of {} conv2d, conv2d_grad_input and conv2d_grad_weight kernels by Winograd "
              "F(2x2, 3x3): 16 multiply-adds per input channel for each 2x2 block of outputs "
              "instead of 36, as 16 GEMMs between transforms (workspace: the transformed weights, "
              "and a chunk of transformed tiles and its products per thread; off: --no-winograd)");
  countedPass("plait.fold_matmul_rows", "fold_matmul_rows", "folded", "permuted", nullptr,
              "{} of {} permuted matmuls of one shared matrix folded into GEMMs over chunks of "
              "their rows, instead of a GEMM per batch entry of fewer than 256 rows (workspace: "
              "a chunk of gathered lhs rows; off: --no-fold-matmul-rows)");
  countedPass("plait.conv_grouped_direct", "conv_grouped_direct", "direct", "grouped", nullptr,
              "{} of {} grouped convolution kernels (conv2d and its gradients, not depthwise) "
              "computed directly a group at a time, their groups of at most 16 channels and "
              "filters, instead of im2col and a GEMM per image and group (workspace: a group's "
              "planes and taps; off: --no-direct-grouped-conv)");
  countedPass("plait.conv_image_blocks", "conv_image_blocks", "blocked", "convolutions", "most",
              "{} of {} convolution kernels (conv2d and its gradients) multiply the im2col "
              "columns of up to {} images in one GEMM, their output planes being small "
              "(workspace: the blocks' columns; off: --no-conv-image-blocks)");
  if (auto fusedCounts = module->getAttrOfType<DictionaryAttr>("plait.fuse_elementwise")) {
    // Each fused kernel by its plan name, with its program's instructions in order: the ops
    // it absorbed (a cast to bf16 as round_bf16; a cast to f32 is no instruction), the
    // copies a register written twice needs (broadcast_to) and the bf16 roundings.
    nlohmann::json kernels = nlohmann::json::array();
    for (const plan::InstrDesc &instr : plan.instrs) {
      if (instr.kernel != "fused_elementwise")
        continue;
      std::string ops;
      if (const std::vector<int64_t> *program = plan::intsAttr(instr, "program"))
        for (size_t i = 0; i + fused::kInstructionWidth <= program->size();
             i += fused::kInstructionWidth)
          ops += (ops.empty() ? "" : " ") + std::string(fused::opcodeInfo((*program)[i]).name);
      kernels.push_back({{"name", instr.name}, {"ops", ops},
                         {"inputs", instr.inputs.size()}, {"outputs", instr.outputs.size()}});
    }
    auto get = [&](const char *key) { return fusedCounts.getAs<IntegerAttr>(key).getInt(); };
    report["fusion"]["elementwise"] = scalarsToJson(fusedCounts);
    report["fusion"]["elementwise"]["fused_kernels"] = kernels;
    if (get("kernels") > 0) {
      auto roundings = fusedCounts.getAs<IntegerAttr>("roundings");
      report["optimizations"]["fuse_elementwise"] = fmt::format(
          "{} elementwise ops computed by {} fused kernels, intermediates kept in cache{} "
          "(off: --no-fusion)",
          get("ops"), get("kernels"),
          roundings ? fmt::format(", in f32 rounded to bf16 at {} places, as the unfused "
                                  "bf16 ops round",
                                  roundings.getInt())
                    : "");
    }
  }
  if (auto grouped = module->getAttrOfType<DictionaryAttr>("plait.group_updates")) {
    auto get = [&](const char *key) { return grouped.getAs<IntegerAttr>(key).getInt(); };
    report["fusion"]["group_updates"] = scalarsToJson(grouped);
    if (get("kernels") > 0)
      report["optimizations"]["group_updates"] = fmt::format(
          "{} optimizer updates computed by {} grouped kernel{}, each walking its tensors "
          "(off: --no-fusion)",
          get("updates"), get("kernels"), get("kernels") == 1 ? "" : "s");
    auto emaKernels = grouped.getAs<IntegerAttr>("ema_kernels");
    if (emaKernels && emaKernels.getInt() > 0)
      report["optimizations"]["group_emas"] =
          fmt::format("{} weight EMA averages computed by {} kernel{}, each walking its tensors "
                      "(off: --no-fusion)",
                      get("emas"), emaKernels.getInt(), emaKernels.getInt() == 1 ? "" : "s");
    auto casts = grouped.getAs<IntegerAttr>("grad_casts");
    if (casts && casts.getInt() > 0)
      report["optimizations"]["fused_grad_cast"] = fmt::format(
          "{} gradient casts to f32 computed by the grouped updates, which read the bf16 "
          "gradients ({} bytes of f32 gradients that need no buffer; off: "
          "--no-fused-grad-cast)",
          casts.getInt(), get("grad_cast_bytes"));
  }
  if (auto grouped = module->getAttrOfType<DictionaryAttr>("plait.group_casts")) {
    auto get = [&](const char *key) { return grouped.getAs<IntegerAttr>(key).getInt(); };
    report["fusion"]["group_casts"] = scalarsToJson(grouped);
    if (get("kernels") > 0)
      report["optimizations"]["group_casts"] = fmt::format(
          "{} casts of parameters computed by {} grouped kernel{}, each walking its tensors "
          "(off: --no-grouped-casts)",
          get("casts"), get("kernels"), get("kernels") == 1 ? "" : "s");
  }
  if (auto fused = module->getAttrOfType<DictionaryAttr>("plait.fuse_loss_cast")) {
    auto get = [&](const char *key) { return fused.getAs<IntegerAttr>(key).getInt(); };
    report["fusion"]["fuse_loss_cast"] = scalarsToJson(fused);
    if (get("gradients") + get("losses") > 0)
      report["optimizations"]["fuse_loss_cast"] = fmt::format(
          "{} loss{} and {} loss gradient{} computed from the bf16 logits, in f32 a row at a "
          "time, the gradients written in bf16 ({} casts removed; {} bytes of f32 gradient "
          "that need no buffer; off: --no-fused-loss-cast)",
          get("losses"), get("losses") == 1 ? "" : "es", get("gradients"),
          get("gradients") == 1 ? "" : "s", get("casts"), get("bytes"));
  }
  if (auto moved = module->getAttrOfType<IntegerAttr>("plait.schedule"))
    report["optimizations"]["schedule"] = fmt::format(
        "{} optimizer updates moved next to their last input, freeing their gradients early "
        "(off: --no-schedule)",
        moved.getInt());
  if (auto recompute = module->getAttrOfType<DictionaryAttr>("plait.recompute")) {
    auto get = [&](const char *key) { return recompute.getAs<IntegerAttr>(key).getInt(); };
    report["recompute"] = scalarsToJson(recompute);
    report["optimizations"]["recompute"] = fmt::format(
        "{} of {} forward segments ({}s) recomputed in the backward (+{} ops); {} activation "
        "bytes no longer kept from forward to backward (off: --recompute none)",
        get("recomputed"), get("segments"),
        recompute.getAs<StringAttr>("granularity").str() == "unit" ? "unit" : "layer",
        get("ops_added"), get("saved_bytes"));
  }
  // The --mem-limit search and --strategy auto (compiler/PlanSearch.cpp): each candidate,
  // in the order compiled (--mem-limit: the last one kept) or ranked (auto: `chosen` marks
  // the one kept); with --cluster each has the cost model's step time.
  if (auto tried = module->getAttrOfType<ArrayAttr>("plait.candidates")) {
    auto search = module->getAttrOfType<DictionaryAttr>("plait.auto");
    report["mem_limit"] =
        search ? search.getAs<IntegerAttr>("mem_limit").getInt() : options.memLimit;
    nlohmann::json candidates = nlohmann::json::array();
    for (auto [i, attr] : llvm::enumerate(tried)) {
      nlohmann::json entry = scalarsToJson(cast<DictionaryAttr>(attr));
      if (!entry.contains("predicted_step_ms"))
        entry["predicted_step_ms"] = nullptr;
      if (!search)
        entry["chosen"] = i + 1 == tried.size();
      candidates.push_back(entry);
    }
    report["candidates"] = candidates;
    if (search) {
      report["auto"] = {{"cluster", search.getAs<StringAttr>("cluster").str()},
                        {"mem_limit", search.getAs<IntegerAttr>("mem_limit").getInt()},
                        {"candidates", search.getAs<IntegerAttr>("candidates").getInt()},
                        {"exact_compiles", search.getAs<IntegerAttr>("exact_compiles").getInt()},
                        {"reason", search.getAs<StringAttr>("reason").str()}};
      report["optimizations"]["strategy_search"] = fmt::format(
          "--strategy auto chose {} (off: name a strategy)",
          search.getAs<StringAttr>("reason").str());
    }
  }
  // Where every byte lives when: one entry per planned buffer (tensor i of the plan).
  nlohmann::json timeline = nlohmann::json::array();
  for (auto [i, b] : llvm::enumerate(memory.buffers)) {
    nlohmann::json entry = {{"name", plan.tensors[i].name},
                            {"kind", bufferKindName(b.kind)},
                            {"offset", b.offset},
                            {"size", b.size},
                            {"bytes", b.bytes},
                            {"live", {b.start, b.end}}};
    if (b.aliasOf >= 0)
      entry["in_place_of"] = b.aliasOf; // shares that buffer's bytes
    timeline.push_back(entry);
  }
  report["memory_timeline"] = timeline;
  if (plan.worldSize > 1) {
    std::map<std::string, int> byPlacement;
    for (const auto &u : units)
      ++byPlacement[u["placement"].get<std::string>()];
    std::string mix;
    for (auto &[name, n] : byPlacement)
      mix += fmt::format("{}{} {}", mix.empty() ? "" : ", ", n, name);
    const DistOptions &d = options.dist;
    report["optimizations"]["sharding"] =
        fmt::format("{} units over {} ranks: {}", units.size(), plan.worldSize, mix);
    std::string inFlight =
        d.reduceScattersInFlight > 0
            ? fmt::format("at most {0} gradient reduce-scatters in flight (each completes "
                          "before the one {0} places after it starts: whole gradients freed "
                          "during the backward; --reduce-scatters-in-flight 0: unbounded)",
                          d.reduceScattersInFlight)
            : "gradient reduce-scatters done only before their shards are read "
              "(--reduce-scatters-in-flight 0)";
    report["optimizations"]["overlap"] = fmt::format(
        "gradient collectives start as soon as their bucket/unit is complete (ddp buckets "
        "<= {} bytes); {}; all-gathers prefetch {} unit(s) ahead; {}",
        d.bucketBytes, inFlight, d.prefetch,
        d.noReshardAfterForward ? "gathered params kept from forward to backward "
                                  "(--no-reshard-after-forward)"
                                : "params resharded after forward");
  }
  return report;
}

void printExplain(const nlohmann::json &report, llvm::raw_ostream &os) {
  const auto &m = report["memory"];
  std::string device = report.value("device", "cpu");
  os << fmt::format("plan for {} (world size {}{})\n", report["model"].get<std::string>(),
                    report["world_size"].get<int>(),
                    device == "cpu" ? "" : ", --device " + device);
  os << fmt::format("  kernels per step : {}\n", report["kernels_per_step"].get<int64_t>());
  os << fmt::format("  params           : {} bytes{}\n", m["params"].get<int64_t>(),
                    report["world_size"].get<int>() > 1 ? " per rank" : "");
  if (report.value("training", false)) {
    os << fmt::format("  training step    : {} tensors updated per step\n",
                      report["optimizer_updates"].get<int64_t>());
    if (report.contains("train") && report.contains("lr_schedule")) {
      const auto &t = report["train"], &lr = report["lr_schedule"];
      std::string optimizer = t.value("optimizer", "");
      double decay = t.value("weight_decay", 0.0), clip = t.value("clip_grad_norm", 0.0);
      std::string detail;
      if (optimizer == "lamb")
        detail = decay != 0 || t.value("always_adapt", false)
                     ? fmt::format(" (added to the update; each param's step scaled by its "
                                   "trust ratio ||w|| / ||update||{}{})",
                                   t.value("trust_clip", false) ? ", at most 1" : "",
                                   t.value("always_adapt", false) ? ", every param" : "")
                     : " (no trust ratio without weight decay; --always-adapt)";
      else if (decay != 0)
        detail = optimizer == "adamw" || optimizer == "lion" || optimizer == "adafactor" ||
                         t.value("decoupled_weight_decay", false)
                     ? " (decoupled: params decayed)"
                     : " (L2: added to the gradient)";
      if (decay != 0 && t.contains("no_weight_decay"))
        detail += fmt::format(", none on params matching '{}'",
                              t["no_weight_decay"].get<std::string>());
      if (t.contains("param_groups"))
        detail += fmt::format(", per param group '{}'", t["param_groups"].get<std::string>());
      if (t.contains("lr_scale"))
        detail += fmt::format(", lr scaled per param by '{}'", t["lr_scale"].get<std::string>());
      if (double e = t.value("label_smoothing", 0.0); e > 0)
        detail += fmt::format(", cross-entropy targets smoothed by {:g}", e);
      const double clampTo = t.value("clip_grad_value", 0.0);
      if (clampTo > 0)
        detail += fmt::format(", gradients clamped to [-{:g}, {:g}]", clampTo, clampTo);
      // clip_grad_norm_'s norm_type, where not 2: "inf" or p
      std::string type = t.value("clip_grad_norm_type", std::string());
      type = type.empty() ? "" : type + "-";
      if (clip > 0)
        detail += fmt::format("{} clipped to {}norm {:g}", clampTo > 0 ? ", then" : ", gradients",
                              type, clip);
      if (t.value("log_grad_norm", false))
        detail += clip > 0 ? " (the norm logged as grad_norm)"
                           : fmt::format(", gradients' {}norm logged as grad_norm", type);
      // A param group's maximize (its regexes, ';'-separated as --param-group's groups).
      auto groupList = [&](const char *key) {
        std::string list, regexes = t.value(key, std::string());
        for (llvm::StringRef rest = regexes; !rest.empty();) {
          auto [regex, tail] = rest.split(';');
          list += fmt::format("{}'{}'", list.empty() ? "" : ", ", regex.str());
          rest = tail;
        }
        return list;
      };
      if (t.value("maximize", false))
        detail += ", maximizing the loss (gradients negated)";
      if (std::string groups = groupList("minimize_groups"); !groups.empty())
        detail += fmt::format(" except on param group(s) {} (maximize=false: descending)",
                              groups);
      if (std::string groups = groupList("maximize_groups"); !groups.empty())
        detail += fmt::format(", maximizing the loss on param group(s) {} (their gradients "
                              "negated)",
                              groups);
      std::string kind = scheduleText(lr);
      if (optimizer == "adafactor") { // its step size and moments, as Hugging Face's
        const bool relative = t.value("relative_step", false);
        std::string step =
            relative ? fmt::format("relative step min({}, 1/sqrt(step)) (the lr not read)",
                                   t.value("warmup_init", false) ? "1e-6 * step" : "1e-2")
                     : fmt::format("lr {:g} ({})", lr.value("lr", 0.0), kind);
        if (t.value("scale_parameter", true))
          step += " times each param's RMS (at least eps2)";
        std::string moments = "second moment factored into rows and columns for params of "
                              "rank >= 2";
        if (t.contains("adafactor_beta1"))
          moments += fmt::format(", first moment beta1 {:g}", t["adafactor_beta1"].get<double>());
        if (report["world_size"].get<int>() > 1 && report.contains("units") &&
            llvm::any_of(report["units"], [](const nlohmann::json &u) {
              return u.value("placement", "ddp") != "ddp";
            }))
          moments += " (on a sharded unit: the rows, columns and vectors' second moments whole "
                     "on every rank, from sums over its shards all-reduced twice a step, "
                     "adafactor_stats and adafactor_norms; the first moment sharded)";
        os << fmt::format("  optimizer        : adafactor, {}, {}, weight decay {:g}{}\n", step,
                          moments, decay, detail);
      } else if (optimizer == "rprop") // its lr is only where each element's step size starts
        os << fmt::format("  optimizer        : rprop, initial step size {:g} (step 1's lr, {}: "
                          "each element's step size adapts from there){}\n",
                          lr.value("lr", 0.0), kind, detail);
      else
        os << fmt::format("  optimizer        : {}, lr {:g} ({}), weight decay {:g}{}\n",
                          optimizer, lr.value("lr", 0.0), kind, decay, detail);
      if (double ema = t.value("ema_decay", 0.0); ema > 0 && report.contains("ema")) {
        // Its schedule (plait.weight_ema's): n = t - 1 - start averaging steps at step t.
        const int64_t start = t.value("ema_start", int64_t(0)),
                      every = t.value("ema_every", int64_t(1));
        const double power = t.value("ema_power", 0.0), minDecay = t.value("ema_min_decay", 0.0);
        std::string warm;
        if (power > 0)
          warm = fmt::format(" warmed up as min({:g}, 1 - (1 + n / {:g})^-{:g})", ema,
                             t.value("ema_inv_gamma", 1.0), power);
        else if (t.value("ema_warmup", false))
          warm = start == 0 ? fmt::format(" warmed up as min({:g}, t / (t + 9))", ema)
                            : fmt::format(" warmed up as min({:g}, (1 + n) / (10 + n))", ema);
        if (!warm.empty() && (power > 0 || start > 0))
          warm += fmt::format(", n = t - {}", start + 1);
        if (minDecay > 0)
          warm += fmt::format(", at least {:g}", minDecay);
        std::string copied = start == 0 ? "on step 1" : fmt::format("on steps 1 to {}", start + 1);
        if (every > 1)
          copied += fmt::format(", updated on steps 1, {}, {}, ... only", 1 + every, 1 + 2 * every);
        os << fmt::format("  weight EMA       : decay {:g}{}, a copy of the params{} {}; {} "
                          "averages, {} bytes{} (in the optimizer state, saved in "
                          "checkpoints; plait-run --save-ema-weights)\n",
                          ema, warm, t.value("ema_buffers", false) ? " and float buffers" : "",
                          copied, report["ema"]["states"].get<int64_t>(),
                          report["ema"]["bytes"].get<int64_t>(),
                          report["world_size"].get<int>() > 1 ? " per rank" : "");
      }
      if (int64_t buffers = t.value("buffers", int64_t(0)); buffers > 0)
        os << fmt::format("  buffers          : {} (never trained: running statistics and forward counts, "
                          "updated by each forward, saved with the params, whole on "
                          "every rank)\n",
                          buffers);
      if (report.contains("sync_batch_norm")) {
        const auto &sync = report["sync_batch_norm"];
        int64_t world = sync["world_size"].get<int64_t>();
        const int64_t statistics = sync.value("statistics", int64_t(0)),
                      fused = sync.value("batch_norms", int64_t(0)),
                      fusedGrads = sync.value("batch_norm_grads", int64_t(0)),
                      gathers = sync.value("all_gathers", int64_t(0));
        std::vector<std::string> what;
        if (statistics > 0)
          what.push_back(fmt::format("{} statistics", statistics));
        if (fused + fusedGrads > 0)
          what.push_back(fmt::format("{} fused BatchNorm{} and {} gradient{}", fused,
                                     fused == 1 ? "" : "s", fusedGrads,
                                     fusedGrads == 1 ? "" : "s"));
        const int64_t reduces = sync["all_reduces"].get<int64_t>();
        std::string collectives =
            fmt::format("{} all-reduce{} (mean)", reduces, reduces == 1 ? "" : "s");
        if (gathers > 0)
          collectives =
              fmt::format("{} all-gather{} and {}", gathers, gathers == 1 ? "" : "s", collectives);
        os << fmt::format("  sync batch norm  : {} a step ({} elements), the global batch's: {}\n",
                          fmt::join(what, " and "), sync["elements"].get<int64_t>(),
                          world > 1 ? fmt::format("{} over {} ranks", collectives, world)
                                    : std::string("one rank holds all of it"));
      }
    }
    os << fmt::format("  gradients        : {} bytes (kept for the optimizer step)\n",
                      m["grads"].get<int64_t>());
    os << fmt::format("  optimizer state  : {} bytes\n", m["optimizer"].get<int64_t>());
  }
  os << fmt::format("  constants        : {} bytes\n", m["constants"].get<int64_t>());
  if (report.contains("onnx_opset_lift")) {
    const auto &l = report["onnx_opset_lift"];
    int64_t nodes = l.value("nodes", int64_t(0)), kept = l.value("kept_nodes", int64_t(0));
    std::vector<std::string> clauses;
    if (nodes > 0)
      clauses.push_back(fmt::format("{} node{} rewritten ({})", nodes, nodes == 1 ? "" : "s",
                                    l.value("rewritten", std::string())));
    if (kept > 0)
      clauses.push_back(fmt::format("{} node{} of older versions that mean what opset 13's do "
                                    "({})",
                                    kept, kept == 1 ? "" : "s", l.value("kept", std::string())));
    os << fmt::format("  onnx opset       : {}, lifted to {} by plait's importer: {}\n",
                      l.value("from", int64_t(0)), l.value("to", int64_t(0)),
                      fmt::join(clauses, "; "));
  }
  if (report.contains("onnx_unrolled")) {
    const auto &u = report["onnx_unrolled"];
    int64_t loops = u.value("loops", int64_t(0)), scans = u.value("scans", int64_t(0));
    std::vector<std::string> nodes;
    if (loops > 0)
      nodes.push_back(fmt::format("{} Loop{}", loops, loops == 1 ? "" : "s"));
    if (scans > 0)
      nodes.push_back(fmt::format("{} Scan{}", scans, scans == 1 ? "" : "s"));
    os << fmt::format("  onnx loops       : {} unrolled at import into {} iterations ({} body "
                      "nodes imported; plait plans one static program)\n",
                      fmt::join(nodes, " and "), u.value("iterations", int64_t(0)),
                      u.value("nodes", int64_t(0)));
  }
  if (report.contains("quantization")) {
    const auto &q = report["quantization"];
    int64_t pairs = q.value("straight_through", int64_t(0));
    int64_t folded = q.value("dequantized_constants", int64_t(0));
    std::vector<std::string> clauses;
    if (pairs > 0)
      clauses.push_back(fmt::format("{} QuantizeLinear/DequantizeLinear pair{} pass{} the "
                                    "gradient straight through where in range (as PyTorch's "
                                    "FakeQuantize)",
                                    pairs, pairs == 1 ? "" : "s", pairs == 1 ? "es" : ""));
    if (folded > 0)
      clauses.push_back(fmt::format(
          "{} quantized constant{} dequantized at import into float constants{}", folded,
          folded == 1 ? "" : "s",
          report.value("training", false)
              ? " (not trained: torch.onnx.export with do_constant_folding=False keeps "
                "fake-quantized weights as params)"
              : ""));
    os << fmt::format("  quantization     : {}\n", fmt::join(clauses, "; "));
  }
  if (report["world_size"].get<int>() > 1) {
    const auto &c = report["comm"];
    os << fmt::format("  global batch     : {} ({} per rank)\n",
                      report.value("global_batch", 0), report.value("batch_per_rank", 0));
    os << fmt::format("  comm per step    : {} bytes sent per rank (all_reduce {}, "
                      "reduce_scatter {}, all_gather {})\n",
                      c["total"].get<uint64_t>(), c["all_reduce"].get<uint64_t>(),
                      c["reduce_scatter"].get<uint64_t>(), c["all_gather"].get<uint64_t>());
    for (const auto &u : report["units"])
      os << fmt::format("  unit {:<12}: {:<7} {} bytes -> params {}, grads {}, optimizer {} "
                        "bytes per rank\n",
                        u["name"].get<std::string>(), u["placement"].get<std::string>(),
                        u["bytes"].get<int64_t>(), u["params_bytes"].get<int64_t>(),
                        u["grads_bytes"].get<int64_t>(), u["optimizer_bytes"].get<int64_t>());
  }
  os << fmt::format("  arena (peak)     : {} bytes, liveness lower bound {} bytes\n",
                    m["peak"].get<int64_t>(), m["lower_bound"].get<int64_t>());
  os << fmt::format("  per rank         : {} bytes = arena {} (params {}, optimizer state {}, "
                    "constants {}, activations and gradients {}) + kernel workspace {}\n",
                    m["total"].get<int64_t>(), m["peak"].get<int64_t>(),
                    m["params"].get<int64_t>(), m["optimizer"].get<int64_t>(),
                    m["constants"].get<int64_t>(), m["activations"].get<int64_t>(),
                    m["workspace"].get<int64_t>());
  for (auto &[name, line] : report["optimizations"].items())
    os << fmt::format("  {:<17}: {}\n", name, line.get<std::string>());
  if (report.contains("auto")) {
    const auto &a = report["auto"];
    os << fmt::format("  strategy search  : {} candidates on {}, limit {} bytes per rank; {} "
                      "compiled exactly (the rest screened: peak = liveness lower bound)\n",
                      a["candidates"].get<int64_t>(), a["cluster"].get<std::string>(),
                      a["mem_limit"].get<int64_t>(), a["exact_compiles"].get<int64_t>());
    os << fmt::format("    {:>4}  {:<10} {:<11} {:>9} {:>16} {:>14} {:>12} {:>7}  {}\n", "rank",
                      "placement", "recompute", "buckets", "peak/rank B", "comm/rank B",
                      "step ms", "MFU", "");
    int rank = 0;
    for (const auto &c : report["candidates"]) {
      ++rank;
      std::string recompute = c["recompute"].get<std::string>();
      if (recompute == "auto")
        recompute += fmt::format("({})", c["recomputed_segments"].get<int64_t>());
      int64_t bucket = c.value("bucket_bytes", int64_t(0));
      bool timed = !c["predicted_step_ms"].is_null();
      os << fmt::format(
          "    {:>4}  {:<10} {:<11} {:>9} {:>16} {:>14} {:>12} {:>7}  {}\n", rank,
          c["strategy"].get<std::string>(), recompute,
          bucket > 0 ? fmt::format("{}MiB", bucket >> 20) : "-",
          fmt::format("{}{}", c.value("peak_exact", false) ? "" : ">=", c["peak"].get<int64_t>()),
          timed ? std::to_string(c.value("comm_bytes", int64_t(0))) : "-",
          timed ? fmt::format("{:.3f}", c["predicted_step_ms"].get<double>()) : "-",
          timed ? fmt::format("{:.1f}%", 100 * c.value("mfu", 0.0)) : "-",
          c.value("status", std::string()) + rowNotes(c));
    }
    os << fmt::format("  why              : {}\n", a["reason"].get<std::string>());
  }
  if (report.contains("predicted")) {
    const auto &p = report["predicted"];
    // A CPU rank on several threads (the spec's device.threads; CostModel.h).
    int64_t threads = p.value("threads_per_rank", int64_t(1));
    os << fmt::format("  predicted step   : {:.3f} ms on {}{} (compute {:.3f}, comm {:.3f}, "
                      "exposed {:.3f}; MFU {:.3g}%)\n",
                      report["predicted_step_ms"].get<double>(),
                      report["cluster"]["name"].get<std::string>(),
                      threads > 1 ? fmt::format(", {} threads per rank", threads) : "",
                      p["compute_ms"].get<double>(),
                      p["comm_ms"].get<double>(), p["exposed_comm_ms"].get<double>(),
                      100 * p["mfu"].get<double>());
    // Classes the spec's calibration predates: those instructions are on the roofline.
    if (p.contains("unmeasured_classes") && !p["unmeasured_classes"].empty()) {
      std::string classes;
      int64_t count = 0;
      for (const auto &[name, n] : p["unmeasured_classes"].items()) {
        classes += fmt::format("{}{} ({})", classes.empty() ? "" : ", ", name, n.get<int64_t>());
        count += n.get<int64_t>();
      }
      os << fmt::format(
          "  unmeasured       : {} instruction{} of kernel classes the spec has no "
          "rate for, timed on the roofline: {} (plait-calibrate writes every class)\n",
          count, count == 1 ? "" : "s", classes);
    }
  }
}

int addPrediction(const plan::PlanDesc &plan, const CompileOptions &options,
                  nlohmann::json &report) {
  if (!options.cluster)
    return 0;
  const cluster::ClusterSpec &spec = *options.cluster;
  cost::Prediction prediction;
  if (rt::Status s = cost::predictStep(plan, spec, prediction); !s.ok()) {
    return reportError(fmt::format("{}: --cluster {}: {}", options.modelPath,
                                   options.clusterPath, s.message()));
  }
  const cost::StepTime &step = prediction.step;
  report["predicted_step_ms"] = step.seconds * 1e3;
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto &[name, entry] : prediction.byKernel)
    kernels[name] = {{"count", entry.first}, {"ms", entry.second * 1e3}};
  // Every instruction's prediction, to the nanosecond: plait-run --trace shows each kernel's
  // next to its measured time.
  nlohmann::json instructions = nlohmann::json::array();
  for (double seconds : prediction.instrSeconds)
    instructions.push_back(std::round(seconds * 1e9) / 1e3);
  report["predicted"] = {{"compute_ms", step.computeSeconds * 1e3},
                         {"comm_ms", step.commSeconds * 1e3},
                         {"exposed_comm_ms", step.exposedCommSeconds * 1e3},
                         {"flops", prediction.flops},
                         {"mfu", prediction.mfu},
                         {"compute_share", prediction.placement.computeShare},
                         {"threads_per_rank", prediction.placement.threads},
                         {"kernels", kernels},
                         {"instructions_us", std::move(instructions)},
                         {"unmeasured_classes", prediction.unmeasured}};
  report["cluster"] = {{"name", spec.name},
                       {"file", options.clusterPath},
                       {"source", spec.source},
                       {"nodes", spec.nodes},
                       {"devices_per_node", spec.devicesPerNode},
                       {"device", spec.device.model},
                       {"ranks_per_node", prediction.placement.ranksPerNode}};
  return 0;
}

} // namespace plait
