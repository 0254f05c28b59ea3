// The step loop of a CUDA plan (CudaRun.h), with --kernel-times: every instruction timed by
// CUDA events, its bytes read + written over its time against a device-to-device copy.
// Run on an H200 by tests/gpu/run.sh (every sample's CUDA plan against the CPU backend).
#include "runtime/cuda/CudaBackend.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/DataLoader.h"
#include "runtime/HostTensors.h"
#include "runtime/LrController.h"
#include "runtime/RunCheckpoints.h"
#include "runtime/RunMonitor.h"
#include "runtime/cuda/CudaExecutor.h"
#include "runtime/cuda/CudaStatus.h"
#include "runtime/io/Npy.h"

namespace plait::rt {
namespace {

/// Options whose machinery is the CPU executor's alone so far.
Status refuseUnsupported(const RunOptions &options, const Plan &plan) {
  if (!options.monitor.tracePath.empty())
    return Status::errorf("{}: --trace is not supported by the CUDA backend yet (the CPU "
                          "backend has it: compile with --device cpu)",
                          plan.path);
  return {};
}

/// `host` filled with this rank's params and states, read from the device now.
Status pullPersistent(const CudaExecutor &exec, HostTensors &host) {
  return host.pull(
      [&](uint32_t t, std::vector<uint8_t> &bytes) { return exec.readTensor(t, bytes); });
}

/// A scalar output's value as a double (f32, f64, bf16, f16), or null JSON.
nlohmann::json scalarOf(DType dtype, const std::vector<uint8_t> &bytes) {
  if (bytes.empty())
    return nullptr;
  switch (dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
  }
  case DType::BF16:
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, bytes.data(), sizeof v);
    return dtype == DType::BF16 ? bf16ToFloat(v) : f16ToFloat(v);
  }
  default:
    return nullptr;
  }
}

/// Output `index` when it is a scalar (copied from the device), else null.
Status scalarOutput(const CudaExecutor &exec, size_t index, nlohmann::json &value) {
  const Plan &plan = exec.plan();
  value = nullptr;
  if (plan.outputs.size() <= index || plan.tensors[plan.outputs[index]].numel() != 1)
    return {};
  std::vector<uint8_t> bytes;
  PLAIT_RETURN_IF_ERROR(exec.readOutput(index, bytes));
  value = scalarOf(plan.tensors[plan.outputs[index]].dtype, bytes);
  return {};
}

/// The loss, by the training convention the first output.
Status lossOf(const CudaExecutor &exec, nlohmann::json &loss) {
  return scalarOutput(exec, 0, loss);
}

nlohmann::json commBytesJson(const CommBytes &bytes) {
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k < kNumCollectiveKinds; ++k)
    out[collectiveKindName(CollectiveKind(k))] = bytes.byKind[k];
  out["total"] = bytes.total();
  return out;
}

Status writeOutputs(const RunOptions &options, const CudaExecutor &exec,
                    std::vector<std::string> &written) {
  std::error_code ec;
  std::filesystem::create_directories(options.outputDir, ec);
  if (ec || !std::filesystem::is_directory(options.outputDir))
    return Status::errorf("--output-dir {}: cannot create the directory", options.outputDir);
  const Plan &plan = exec.plan();
  std::set<std::string> used;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    std::string file = outputFileName(plan.outputNames[i], i);
    if (!used.insert(file).second)
      file = outputFileName(fmt::format("{}_{}", plan.outputNames[i], i), i);
    used.insert(file);
    std::string path = (std::filesystem::path(options.outputDir) / file).string();
    const PlanTensor &t = plan.tensors[plan.outputs[i]];
    std::vector<uint8_t> bytes;
    PLAIT_RETURN_IF_ERROR(exec.readOutput(i, bytes));
    TensorView view{bytes.data(), t.dtype, t.shape};
    std::vector<float> widened; // numpy has no bfloat16
    if (t.dtype == DType::BF16) {
      widened.resize(size_t(t.numel()));
      for (size_t e = 0; e < widened.size(); ++e) {
        uint16_t v;
        std::memcpy(&v, bytes.data() + 2 * e, 2);
        widened[e] = bf16ToFloat(v);
      }
      view = TensorView{widened.data(), DType::F32, t.shape};
    }
    PLAIT_RETURN_IF_ERROR(writeNpy(path, view));
    written.push_back(path);
  }
  return {};
}

/// The device's copy bandwidth: a cudaMemcpy device-to-device of 256 MiB, best of 10, counted
/// as bytes read + written per second (the kernels' bandwidth is counted the same way).
Status copyBandwidth(double &gbps) {
  constexpr size_t kBytes = 256ull << 20;
  void *src = nullptr, *dst = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  auto release = [&] {
    if (src)
      (void)cudaFree(src);
    if (dst)
      (void)cudaFree(dst);
    if (start)
      (void)cudaEventDestroy(start);
    if (stop)
      (void)cudaEventDestroy(stop);
  };
  Status s = [&]() -> Status {
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&src, kBytes));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMalloc(&dst, kBytes));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaMemset(src, 1, kBytes));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
    PLAIT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
    float best = 0;
    for (int i = 0; i < 10; ++i) {
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(start));
      PLAIT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice));
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop));
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
      float ms = 0;
      PLAIT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start, stop));
      if (i == 0 || ms < best)
        best = ms;
    }
    gbps = best > 0 ? 2.0 * double(kBytes) / (double(best) * 1e6) : 0.0;
    return {};
  }();
  release();
  return s;
}

/// --kernel-times: per non-collective instruction, its mean time over the timed steps and
/// its bytes (operands read + results written) per second.
Status writeKernelTimes(const std::string &path, const CudaExecutor &exec, int64_t stepsTimed) {
  double copyGbps = 0;
  PLAIT_RETURN_IF_ERROR(copyBandwidth(copyGbps).withPrefix("--kernel-times: copy bandwidth: "));
  const Plan &plan = exec.plan();
  nlohmann::json kernels = nlohmann::json::array();
  for (size_t i = 0; i < plan.instrs.size(); ++i) {
    const PlanInstr &in = plan.instrs[i];
    const CudaKernelTime &t = exec.kernelTimes()[i];
    if (in.isCollective || t.runs == 0)
      continue;
    uint64_t bytes = 0;
    for (const auto *list : {&in.inputs, &in.outputs})
      for (uint32_t tensor : *list)
        bytes += plan.tensors[tensor].bytes;
    double ms = t.totalMs / double(t.runs);
    double gbps = ms > 0 ? double(bytes) / (ms * 1e6) : 0.0;
    kernels.push_back({{"index", i},
                       {"name", in.name},
                       {"kernel", plan.kernels[in.kernel]},
                       {"symbol", in.attrs.getStr("cuda_symbol", "")},
                       {"ms", ms},
                       {"bytes", bytes},
                       {"gbps", gbps},
                       {"fraction_of_copy", copyGbps > 0 ? gbps / copyGbps : 0.0}});
  }
  nlohmann::json report = {{"plan", plan.path},
                           {"device", exec.note()},
                           {"copy_gbps", copyGbps},
                           {"steps_timed", stepsTimed},
                           {"kernels", kernels}};
  std::ofstream out(path, std::ios::trunc);
  out << report.dump(1) << "\n";
  if (!out)
    return Status::errorf("--kernel-times {}: write error", path);
  return {};
}

} // namespace

Status cuda_backend::runPlanOnRank(const RunOptions &options, Plan &plan, Communicator &comm,
                                   const std::vector<HostTensor> &inputs, std::string &summary) {
  PLAIT_RETURN_IF_ERROR(refuseUnsupported(options, plan));
  CudaExecutorOptions execOptions;
  execOptions.rank = comm.rank();
  execOptions.seed = options.seed;
  execOptions.comm = &comm;
  execOptions.timeKernels = !options.kernelTimes.empty();
  execOptions.cudaGraphs = !options.noCudaGraphs;
  execOptions.timeoutSeconds = options.timeoutSeconds;
  std::unique_ptr<CudaExecutor> exec;
  PLAIT_RETURN_IF_ERROR(CudaExecutor::create(plan, execOptions, exec));
  plan.releaseFileBytes(); // the device holds the weights now

  DataLoader data;
  if (!options.dataDir.empty())
    PLAIT_RETURN_IF_ERROR(DataLoader::open(options.dataDir, plan, data, comm.size(), comm.rank()));
  if (options.shuffle && !options.dataDir.empty())
    data.setShuffle(options.seed);
  DataLoader *loader = options.dataDir.empty() ? nullptr : &data;
  // --resume: the checkpoint restored into host copies of the params and states (their
  // padding as the device holds it), then copied onto the device.
  CheckpointInfo resumedFrom;
  if (options.resume) {
    HostTensors host(plan, exec->rank());
    PLAIT_RETURN_IF_ERROR(pullPersistent(*exec, host));
    PLAIT_RETURN_IF_ERROR(resumeFromCheckpoint(options, plan, host, comm, loader, resumedFrom));
    PLAIT_RETURN_IF_ERROR(host.push([&](uint32_t t, const std::vector<uint8_t> &bytes) {
      return exec->writeTensor(t, bytes);
    }));
  }
  const int64_t resumedStep = resumedFrom.step;
  bool lead = comm.rank() == 0;
  LrController lrs(plan.schedule); // each step's lr; the plateau schedule reads the loss
  if (plan.training)
    resumeSchedule(plan, options, resumedFrom, lead, lrs);
  std::ofstream log;
  if (lead && !options.logJsonl.empty())
    PLAIT_RETURN_IF_ERROR(openStepLog(options.logJsonl, resumedStep, log));
  RunMonitor monitor; // progress and the end-of-run comparison (--trace is refused above)
  PLAIT_RETURN_IF_ERROR(monitor.start(options.monitor, plan, comm, options.steps));
  double totalMs = 0;
  nlohmann::json firstLoss, loss, firstGradNorm, gradNorm;
  const int gradNormIndex = plan.gradNormOutput();
  int64_t lastCheckpoint = resumedStep; // the newest checkpoint's step (0: none)
  const int64_t firstStep = resumedStep + 1, stepsRun = options.steps - resumedStep;
  for (int64_t step = firstStep; step <= options.steps; ++step) {
    monitor.beginStep(step, nullptr);
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      const PlanTensor &t = plan.tensors[plan.inputs[i]];
      const void *bytes = options.dataDir.empty() ? inputs[i].bytes.data()
                                                  : data.batchData(step - 1, i);
      PLAIT_RETURN_IF_ERROR(exec->setInput(i, t.dtype, t.shape, bytes));
    }
    // A forward plan has no schedule, but a training-mode dropout's mask reads the step.
    const double lr = plan.training ? lrs.lr(step) : 0.0;
    exec->setHyperParameters(step, lr, plan.training ? lrs.prevLr(step) : 0.0);
    auto start = std::chrono::steady_clock::now();
    Status ran = exec->run();
    if (!ran.ok())
      return ran.withPrefix(fmt::format("step {}: ", step));
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    totalMs += ms;
    PLAIT_RETURN_IF_ERROR(lossOf(*exec, loss));
    if (gradNormIndex >= 0)
      PLAIT_RETURN_IF_ERROR(scalarOutput(*exec, size_t(gradNormIndex), gradNorm));
    StepOutcome outcome; // the device's memory is the plan's arena, not measured per step
    outcome.hasLoss = loss.is_number();
    outcome.loss = outcome.hasLoss ? loss.get<double>() : 0.0;
    monitor.endStep(step, ms, outcome);
    if (step == firstStep) {
      firstLoss = loss;
      firstGradNorm = gradNorm;
    }
    if (step == firstStep && stepsRun > 1)
      exec->resetKernelTimes(); // the first step carries the one-time setup

    if (log.is_open()) {
      int64_t samples = plan.globalBatch();
      nlohmann::json record = {{"step", step},
                               {"loss", loss},
                               {"step_ms", ms},
                               {"samples_per_s", ms > 0 ? double(samples) * 1000.0 / ms : 0.0},
                               {"arena_bytes", exec->arenaBytes()},
                               {"workspace_bytes", exec->workspaceBytes()},
                               {"comm_bytes", commBytesJson(exec->stepCommBytes())},
                               {"world_size", plan.worldSize},
                               {"device", "cuda"}};
      if (plan.training)
        record["lr"] = lr;
      if (gradNormIndex >= 0)
        record["grad_norm"] = gradNorm;
      log << record.dump() << std::endl;
      if (!log)
        return Status::errorf("--log-jsonl {}: write error", options.logJsonl);
    }
    if (plan.training && !options.allowNonfinite) // before this step's checkpoint
      PLAIT_RETURN_IF_ERROR(
          checkFinite(plan, step, loss, gradNorm, options.checkpointDir, lastCheckpoint));
    if (plan.training && lrs.readsLoss() && loss.is_number())
      lrs.observe(loss.get<double>());
    if (checkpointDue(options, step)) {
      HostTensors host(plan, exec->rank());
      PLAIT_RETURN_IF_ERROR(pullPersistent(*exec, host));
      PLAIT_RETURN_IF_ERROR(
          saveCheckpoint(options.checkpointDir,
                         checkpointAfter(options, plan, step, resumedFrom, loader, lrs), host, comm,
                         options.keepCheckpoints)
              .withPrefix(fmt::format("step {}: writing the checkpoint: ", step)));
      lastCheckpoint = step;
    }
  }
  PLAIT_RETURN_IF_ERROR(monitor.finish(comm));
  std::vector<std::string> written;
  if (!options.saveWeights.empty() || !options.saveEmaWeights.empty()) {
    HostTensors host(plan, exec->rank()); // every rank: sharded params are gathered
    PLAIT_RETURN_IF_ERROR(pullPersistent(*exec, host));
    if (!options.saveWeights.empty())
      PLAIT_RETURN_IF_ERROR(saveWeights(options.saveWeights, host, comm, lead, false));
    if (!options.saveEmaWeights.empty())
      PLAIT_RETURN_IF_ERROR(saveWeights(options.saveEmaWeights, host, comm, lead, true));
  }
  if (lead && !options.outputDir.empty())
    PLAIT_RETURN_IF_ERROR(writeOutputs(options, *exec, written));
  if (lead && !options.kernelTimes.empty())
    PLAIT_RETURN_IF_ERROR(
        writeKernelTimes(options.kernelTimes, *exec, stepsRun > 1 ? stepsRun - 1 : 1));
  if (!lead)
    return {};
  std::string onRanks = plan.worldSize > 1 ? fmt::format(" on {} ranks", plan.worldSize) : "";
  std::string resumed =
      resumedStep > 0 ? fmt::format(" (steps {}-{}, resumed)", firstStep, options.steps) : "";
  std::string saved =
      options.checkpointDir.empty() ? "" : fmt::format("; checkpoint -> {}", options.checkpointDir);
  if (plan.training && stepsRun <= 0)
    summary = fmt::format("{}: the checkpoint in {} is at step {}, nothing left to run for "
                          "--steps {}",
                          plan.path, options.checkpointDir, resumedStep, options.steps);
  else if (plan.training)
    summary = fmt::format(
        "{}: trained {} steps{}{} on CUDA, loss {} -> {}{}{}, {:.3f} ms/step "
        "(arena {} bytes, workspace {} bytes){}{}{}",
        plan.path, stepsRun, resumed, onRanks, firstLoss.dump(), loss.dump(),
        gradNormIndex < 0
            ? std::string()
            : fmt::format(", grad_norm {} -> {}", firstGradNorm.dump(), gradNorm.dump()),
        plateauSummary(lrs), totalMs / double(stepsRun), exec->arenaBytes(), exec->workspaceBytes(),
        options.saveWeights.empty() ? "" : "; weights -> " + options.saveWeights,
        options.saveEmaWeights.empty() ? "" : "; EMA weights -> " + options.saveEmaWeights, saved);
  else
    summary = fmt::format("{}: ran {} instructions x {} steps{} on CUDA in {:.3f} ms; {} "
                          "outputs{}",
                          plan.path, plan.instrs.size(), options.steps, onRanks, totalMs,
                          plan.outputs.size(),
                          written.empty() ? "" : " written to " + options.outputDir);
  summary += monitor.comparison(exec->workspaceBytes()); // measured against the plan
  summary += "\n" + exec->note();
  if (!exec->graphNote().empty())
    summary += "\n" + exec->graphNote();
  return {};
}

} // namespace plait::rt
