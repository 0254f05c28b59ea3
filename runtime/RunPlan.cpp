// The run driver behind plait-run: binds inputs or training batches, runs steps, writes outputs.
#include "runtime/RunPlan.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/Checkpoint.h"
#include "runtime/DataLoader.h"
#include "runtime/Executor.h"
#include "runtime/LrController.h"
#include "runtime/PlanLoader.h"
#include "runtime/RunActivity.h"
#include "runtime/RunCheckpoints.h"
#include "runtime/RunMonitor.h"
#include "runtime/comm/Mpi.h"
#include "runtime/comm/Mpirun.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaRun.h"
#include "runtime/io/Npy.h"
#include "runtime/io/TensorFile.h"

namespace plait::rt {

namespace {

Status checkOptions(const RunOptions &options) {
  if (options.nproc < 1)
    return Status::errorf("--nproc must be at least 1, got {}", options.nproc);
  if (options.steps < 1)
    return Status::errorf("--steps must be at least 1, got {}", options.steps);
  if (options.threads < 0 || options.threads > cpu::kMaxKernelThreads)
    return Status::errorf("--threads must be between 1 and {} (0: the default), got {}",
                          cpu::kMaxKernelThreads, options.threads);
  if (!options.dataDir.empty() && !options.inputs.empty())
    return Status::error("give the batch either with --data DIR or with --input, not both");
  if (options.shuffle && options.dataDir.empty())
    return Status::error("--shuffle needs --data DIR (it orders the data's samples)");
  if (options.checkpointEvery < 0)
    return Status::errorf("--checkpoint-every must be at least 0, got {}",
                          options.checkpointEvery);
  if (options.keepCheckpoints < 1)
    return Status::errorf("--keep-checkpoints must be at least 1, got {}",
                          options.keepCheckpoints);
  if (options.checkpointDir.empty() && (options.checkpointEvery > 0 || options.resume))
    return Status::errorf("{} needs --checkpoint-dir DIR",
                          options.resume ? "--resume" : "--checkpoint-every");
  if (!(options.timeoutSeconds > 0))
    return Status::errorf("--timeout must be positive, got {}", options.timeoutSeconds);
  if (options.maxRestarts < 0)
    return Status::errorf("--max-restarts must be at least 0, got {}", options.maxRestarts);
  if (options.maxRestarts > 0 && options.checkpointDir.empty())
    return Status::error("--max-restarts needs --checkpoint-dir DIR to restart from");
  return {};
}

std::string inputList(const Plan &plan) {
  std::string names;
  for (uint32_t t : plan.inputs)
    names += (names.empty() ? "" : ", ") + printable(plan.tensors[t].name);
  return names.empty() ? "none" : names;
}

// Reads every --input file, checking names, shapes and coverage; `values` is by input index.
Status readInputs(const RunOptions &options, const Plan &plan, std::vector<HostTensor> &values) {
  values.assign(plan.inputs.size(), HostTensor{});
  std::map<std::string, size_t> inputIndex;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    inputIndex.emplace(plan.tensors[plan.inputs[i]].name, i);
  std::set<std::string> given;
  for (const auto &[name, file] : options.inputs) {
    auto it = inputIndex.find(name);
    if (it == inputIndex.end())
      return Status::errorf("--input {}: '{}' is not an input of {} (inputs: {})",
                            printable(name), printable(name), plan.path, inputList(plan));
    if (!given.insert(name).second)
      return Status::errorf("--input {}: given more than once", printable(name));
    HostTensor value;
    PLAIT_RETURN_IF_ERROR(readTensorFile(file, value));
    const PlanTensor &t = plan.tensors[plan.inputs[it->second]];
    if (value.dtype != t.dtype || value.shape != t.shape)
      return Status::errorf("--input {}: expected {} {}, got {} {} from {}", printable(name),
                            dtypeName(t.dtype), shapeString(t.shape), dtypeName(value.dtype),
                            shapeString(value.shape), file);
    values[it->second] = std::move(value);
  }
  for (uint32_t t : plan.inputs) {
    const PlanTensor &tensor = plan.tensors[t];
    if (!given.count(tensor.name))
      return Status::errorf("input '{}' ({} {}) not given; pass --input {}=FILE.npy",
                            printable(tensor.name), dtypeName(tensor.dtype),
                            shapeString(tensor.shape), printable(tensor.name));
  }
  return {};
}

// A scalar's value for the summary line, or "" for anything bigger.
std::string scalarText(const TensorView &v) {
  if (v.numel() != 1)
    return "";
  switch (v.dtype) {
  case DType::BF16:
    return fmt::format("{:g}", bf16ToFloat(*v.as<uint16_t>()));
  case DType::F16:
    return fmt::format("{:g}", f16ToFloat(*v.as<uint16_t>()));
  case DType::I1:
    return *v.as<uint8_t>() ? "true" : "false";
  default: {
    std::string text;
    (void)cpu::dispatchNumeric("", v.dtype, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T>)
        text = fmt::format("{:g}", *v.as<T>());
      else
        text = fmt::format("{}", *v.as<T>());
      return Status();
    });
    return text;
  }
  }
}

// numpy has no bfloat16: such outputs are widened to f32 for the .npy file.
Status writeOutput(const std::string &path, const TensorView &v) {
  if (v.dtype != DType::BF16)
    return writeNpy(path, v);
  std::vector<float> widened(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < widened.size(); ++i)
    widened[i] = bf16ToFloat(v.as<uint16_t>()[i]);
  return writeNpy(path, TensorView{widened.data(), DType::F32, v.shape});
}

Status writeOutputs(const RunOptions &options, const Executor &exec,
                    std::vector<std::string> &written) {
  std::error_code ec;
  std::filesystem::create_directories(options.outputDir, ec);
  if (ec || !std::filesystem::is_directory(options.outputDir))
    return Status::errorf("--output-dir {}: cannot create the directory{}", options.outputDir,
                          ec ? ": " + ec.message() : "");
  const Plan &plan = exec.plan();
  std::set<std::string> used;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    std::string file = outputFileName(plan.outputNames[i], i);
    if (!used.insert(file).second) // two names that sanitise alike: keep both, by index
      file = outputFileName(fmt::format("{}_{}", plan.outputNames[i], i), i);
    used.insert(file);
    std::string path = (std::filesystem::path(options.outputDir) / file).string();
    PLAIT_RETURN_IF_ERROR(writeOutput(path, exec.output(i)));
    written.push_back(path);
  }
  return {};
}

// Output `index` when it is a float scalar, else null.
nlohmann::json scalarOutput(const Executor &exec, size_t index) {
  if (exec.plan().outputs.size() <= index)
    return nullptr;
  TensorView v = exec.output(index);
  if (v.numel() != 1)
    return nullptr;
  switch (v.dtype) {
  case DType::F32:
    return *v.as<float>();
  case DType::F64:
    return *v.as<double>();
  case DType::BF16:
    return bf16ToFloat(*v.as<uint16_t>());
  case DType::F16:
    return f16ToFloat(*v.as<uint16_t>());
  default:
    return nullptr;
  }
}

// The loss, by the training convention, is the first output when it is a float scalar.
nlohmann::json lossOf(const Executor &exec) { return scalarOutput(exec, 0); }

// Bytes sent per kind, under the names of the compiler report's `comm` (CommModel.h).
nlohmann::json commBytesJson(const CommBytes &bytes) {
  nlohmann::json out = nlohmann::json::object();
  for (int k = 0; k < kNumCollectiveKinds; ++k)
    out[collectiveKindName(CollectiveKind(k))] = bytes.byKind[k];
  out["total"] = bytes.total();
  return out;
}

// One line per step, from rank 0: the loss (the plan already averaged it over the ranks), the
// step's learning rate `lr` (training plans), the gradients' global norm `gradNorm` (null
// unless the plan outputs it: --clip-grad-norm, --log-grad-norm), the global throughput, the
// bytes rank 0 sent (every rank of an SPMD plan sends as much), and the memory the step
// touched: its arena and workspace high water (Executor).
Status writeStepLog(const RunOptions &options, const Executor &exec, int64_t step, double stepMs,
                    double lr, const nlohmann::json &loss, const nlohmann::json &gradNorm,
                    std::ofstream &log) {
  const Plan &plan = exec.plan();
  int64_t samples = plan.globalBatch();
  nlohmann::json record = {
      {"step", step},
      {"loss", loss},
      {"step_ms", stepMs},
      {"samples_per_s", stepMs > 0 ? samples * 1000.0 / stepMs : 0.0},
      {"arena_bytes", exec.arenaBytes()},
      {"arena_high_water", exec.stepArenaHighWater()},
      {"workspace_bytes", exec.workspaceBytes()},
      {"workspace_high_water", exec.stepWorkspaceHighWater()},
      {"comm_bytes", commBytesJson(exec.stepCommBytes())},
      {"world_size", plan.worldSize},
  };
  if (plan.training)
    record["lr"] = lr;
  if (!gradNorm.is_null())
    record["grad_norm"] = gradNorm;
  log << record.dump() << std::endl; // flushed per step: a crashed run keeps its log
  if (!log)
    return Status::errorf("--log-jsonl {}: write error", options.logJsonl);
  return {};
}

std::string outputsSummary(const Executor &exec, const std::vector<std::string> &written) {
  const Plan &plan = exec.plan();
  std::string text;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const PlanTensor &t = plan.tensors[plan.outputs[i]];
    text += fmt::format("{}{} {} {}", i ? ", " : "", printable(plan.outputNames[i]), dtypeName(t.dtype),
                        shapeString(t.shape));
    std::string value = scalarText(exec.output(i));
    if (!value.empty())
      text += " = " + value;
    if (i < written.size())
      text += " -> " + written[i];
  }
  return text.empty() ? "none" : text;
}

} // namespace

std::string outputFileName(const std::string &tensorName, size_t index) {
  std::string name = tensorName;
  for (char &c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      c = '_';
  if (name.empty() || name == "." || name == "..")
    name = fmt::format("output_{}", index);
  return name + ".npy";
}

namespace {

/// Whether the plan keeps a weight EMA (compiled with --ema-decay).
bool hasWeightEma(const Plan &plan) {
  return std::any_of(plan.instrs.begin(), plan.instrs.end(), [&](const PlanInstr &in) {
    return plan.kernels[in.kernel] == "weight_ema";
  });
}

/// The options that need something of the plan, checked once it is loaded (for both backends).
Status checkPlanOptions(const Plan &plan, const RunOptions &options) {
  if (!options.checkpointDir.empty() && !plan.training)
    return Status::errorf("{}: checkpoints hold a training run's params and optimizer state; "
                          "this plan does not train",
                          plan.path);
  if (!options.saveEmaWeights.empty() && !hasWeightEma(plan))
    return Status::errorf("{}: --save-ema-weights: the plan keeps no weight EMA (compile it "
                          "with --train --ema-decay D)",
                          plan.path);
  // OneCycleLR refuses to step past its total steps; so does the plan, before the launch.
  if (plan.training && options.steps > plan.schedule.lastStep())
    return Status::errorf("{}: --steps {} runs past the {} schedule's {} total steps (compile "
                          "it with a larger --total-steps)",
                          plan.path, options.steps, plan.schedule.kind, plan.schedule.lastStep());
  return {};
}

std::string rankCount(uint32_t n) { return fmt::format("{} rank{}", n, n == 1 ? "" : "s"); }

Status worldSizeMismatch(const std::string &planPath, uint32_t planWorld, uint32_t ranks) {
  return Status::errorf("{}: compiled for world size {}, launched with {} (use mpirun -np {} "
                        "or --nproc {})",
                        planPath, planWorld, rankCount(ranks), planWorld, planWorld);
}

/// A plan runs on the device it was compiled for. A plan for --device cuda needs a CUDA
/// device (and a runtime built with the CUDA toolkit): where there is none it is refused with
/// CUDA's reason, in one line.
Status checkPlanDevice(const Plan &plan) {
  if (plan.device == "cpu")
    return {};
  if (plan.device != "cuda")
    return Status::errorf("{}: compiled for --device {}, a device this plait-run does not know",
                          plan.path, plan.device);
  std::vector<CudaDeviceInfo> devices;
  Status found = listCudaDevices(devices);
  if (!found.ok()) {
    std::string reason = found.message();
    const std::string prefix = "no CUDA device: ";
    if (reason.rfind(prefix, 0) == 0)
      reason.erase(0, prefix.size());
    return Status::errorf("{}: compiled for --device cuda: no CUDA device ({})", plan.path,
                          reason);
  }
  return {};
}

/// The test hook PLAIT_TEST_EXIT_RANK=R with PLAIT_TEST_EXIT_STEP=S: rank R dies (_exit(3),
/// no MPI_Finalize, no MPI_Abort) just before step S, as a crashed rank would; tests check
/// that the job then fails instead of hanging.
struct ExitHook {
  int64_t rank = -1, step = -1;
  static ExitHook fromEnvironment() {
    ExitHook hook;
    const char *rank = std::getenv("PLAIT_TEST_EXIT_RANK");
    const char *step = std::getenv("PLAIT_TEST_EXIT_STEP");
    if (rank && step) {
      hook.rank = std::strtoll(rank, nullptr, 10);
      hook.step = std::strtoll(step, nullptr, 10);
    }
    return hook;
  }
  void before(uint32_t rank, int64_t step) const {
    if (int64_t(rank) == this->rank && step == this->step)
      ::_exit(3);
  }
};

// "PLAN: CONTEXT: message", whatever the message started with (the plan's path is not
// repeated), keeping the error's kind.
Status inContext(const Status &s, const std::string &planPath, const std::string &context) {
  std::string message = s.message();
  if (message.rfind(planPath + ": ", 0) == 0)
    message.erase(0, planPath.size() + 2);
  std::string text = fmt::format("{}: {}: {}", planPath, context, message);
  return s.isInternal()   ? Status::internal(text)
         : s.isDiverged() ? Status::diverged(text)
                          : Status::error(text);
}

} // namespace

Status checkFinite(const Plan &plan, int64_t step, const nlohmann::json &loss,
                   const nlohmann::json &gradNorm, const std::string &checkpointDir,
                   int64_t lastCheckpoint) {
  auto bad = [](const nlohmann::json &v) {
    return v.is_number() && !std::isfinite(v.get<double>());
  };
  const char *what = bad(loss) ? "loss" : bad(gradNorm) ? "gradients' global norm" : nullptr;
  if (!what)
    return {};
  double value = (bad(loss) ? loss : gradNorm).get<double>();
  std::string text = std::isnan(value) ? "nan" : fmt::format("{}", value); // not "-nan"
  // The step's checkpoint is not written: the newest one holds finite params.
  std::string resume = checkpointDir.empty() ? std::string()
                       : lastCheckpoint > 0
                           ? fmt::format("; its checkpoint not written, --resume continues from "
                                         "step {} in {}",
                                         lastCheckpoint, checkpointDir)
                           : fmt::format("; no checkpoint in {} yet", checkpointDir);
  return Status::diverged(fmt::format("{}: step {}: the {} is {}: training diverged{} (a lower "
                                      "--lr or --clip-grad-norm may help; --allow-nonfinite "
                                      "runs on)",
                                      plan.path, step, what, text, resume));
}

namespace {

// The body of runPlan for one rank of `comm`'s world.
Status runOnRank(const RunOptions &options, Communicator &comm, std::string &summary) {
  Plan plan;
  PLAIT_RETURN_IF_ERROR(loadPlan(options.planPath, plan));
  PLAIT_RETURN_IF_ERROR(checkPlanDevice(plan));
  PLAIT_RETURN_IF_ERROR(checkPlanOptions(plan, options));
  if (plan.worldSize != comm.size())
    return worldSizeMismatch(plan.path, plan.worldSize, comm.size());
  if (plan.training && options.dataDir.empty() && options.inputs.empty())
    return Status::errorf("{}: a training plan needs its batches: --data DIR (one NAME.npy "
                          "per graph input) or --input NAME=FILE for one fixed batch",
                          plan.path);
  if (plan.device == "cuda") { // the CUDA backend's own step loop (runtime/cuda/CudaRun.h)
    std::vector<HostTensor> fixedInputs;
    if (options.dataDir.empty())
      PLAIT_RETURN_IF_ERROR(readInputs(options, plan, fixedInputs));
    return runCudaPlanOnRank(options, plan, comm, fixedInputs, summary);
  }
  if (!options.kernelTimes.empty())
    return Status::errorf("{}: --kernel-times times CUDA kernels; this plan was compiled for "
                          "--device cpu", plan.path);
  // The termination message reads the plan, which ends with this function; a rank that
  // returns an error has reported it and then ends quietly.
  activity::setRun(&plan, comm.rank());
  struct ClearActivity {
    ~ClearActivity() { activity::setRun(nullptr, 0); }
  } clearActivity;
  ExecutorOptions execOptions;
  execOptions.rank = comm.rank();
  execOptions.seed = options.seed;
  execOptions.comm = &comm;
  std::unique_ptr<Executor> exec;
  PLAIT_RETURN_IF_ERROR(Executor::create(plan, execOptions, exec));
  // The arena holds the weights and constants now: the file's copy would only add to the
  // peak RSS (39 MB of a 10M-parameter GPT's plan).
  plan.releaseFileBytes();

  DataLoader data;
  std::vector<HostTensor> fixedInputs; // --input: every rank reads the same files
  if (!options.dataDir.empty())
    PLAIT_RETURN_IF_ERROR(DataLoader::open(options.dataDir, plan, data, comm.size(), comm.rank()));
  else
    PLAIT_RETURN_IF_ERROR(readInputs(options, plan, fixedInputs));
  if (options.shuffle && !options.dataDir.empty())
    data.setShuffle(options.seed);

  CheckpointInfo resumedFrom; // what the checkpoint resumed from records
  if (options.resume)
    PLAIT_RETURN_IF_ERROR(resumeFromCheckpoint(
        options, plan, *exec, comm, options.dataDir.empty() ? nullptr : &data, resumedFrom));
  const int64_t resumedStep = resumedFrom.step;

  bool lead = comm.rank() == 0; // logs, writes files and summarises for the job
  LrController lrs(plan.schedule); // each step's lr; the plateau schedule reads the loss
  if (plan.training)
    resumeSchedule(plan, options, resumedFrom, lead, lrs);
  std::ofstream log; // the log describes this run, continuing a resumed one's
  if (lead && !options.logJsonl.empty())
    PLAIT_RETURN_IF_ERROR(openStepLog(options.logJsonl, resumedStep, log));

  RunMonitor monitor; // progress, --trace, the end-of-run comparison
  PLAIT_RETURN_IF_ERROR(monitor.start(options.monitor, plan, comm, options.steps));

  ExitHook exitHook = ExitHook::fromEnvironment();
  double totalMs = 0, lastMs = 0;
  uint64_t arenaHighWater = 0, workspaceHighWater = 0; // over every step
  nlohmann::json firstLoss, firstGradNorm;
  const int gradNorm = plan.gradNormOutput();
  int64_t lastCheckpoint = resumedStep; // the newest checkpoint's step (0: none)
  const int64_t firstStep = resumedStep + 1, stepsRun = options.steps - resumedStep;
  for (int64_t step = firstStep; step <= options.steps; ++step) {
    exitHook.before(comm.rank(), step);
    activity::setStep(step);
    monitor.beginStep(step, exec.get());
    if (!options.dataDir.empty())
      PLAIT_RETURN_IF_ERROR(data.loadBatch(step - 1, *exec));
    else
      for (size_t i = 0; i < fixedInputs.size(); ++i) {
        const HostTensor &t = fixedInputs[i];
        PLAIT_RETURN_IF_ERROR(exec->setInput(i, t.dtype, t.shape, t.bytes.data()));
      }
    monitor.batchLoaded();
    // A forward plan has no schedule, but a training-mode dropout's mask reads the step.
    const double lr = plan.training ? lrs.lr(step) : 0.0;
    exec->setHyperParameters(step, lr, plan.training ? lrs.prevLr(step) : 0.0);
    auto start = std::chrono::steady_clock::now();
    if (Status ran = exec->run(); !ran.ok())
      return inContext(ran, plan.path, fmt::format("step {}", step));
    lastMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                 .count();
    totalMs += lastMs;
    arenaHighWater = std::max(arenaHighWater, exec->stepArenaHighWater());
    workspaceHighWater = std::max(workspaceHighWater, exec->stepWorkspaceHighWater());
    // The step's loss and gradients' norm (null where the plan has none), read once.
    const nlohmann::json loss = lossOf(*exec);
    const nlohmann::json norm =
        gradNorm >= 0 ? scalarOutput(*exec, size_t(gradNorm)) : nlohmann::json();
    monitor.endStep(step, lastMs,
                    StepOutcome{loss.is_number(), loss.is_number() ? loss.get<double>() : 0.0, true,
                                exec->stepArenaHighWater(), exec->stepWorkspaceHighWater()});
    if (step == firstStep) {
      firstLoss = loss;
      firstGradNorm = norm;
    }
    if (log.is_open())
      PLAIT_RETURN_IF_ERROR(writeStepLog(options, *exec, step, lastMs, lr, loss, norm, log));
    if (plan.training && !options.allowNonfinite) // before this step's checkpoint
      PLAIT_RETURN_IF_ERROR(
          checkFinite(plan, step, loss, norm, options.checkpointDir, lastCheckpoint));
    if (plan.training && lrs.readsLoss())
      lrs.observe(loss.get<double>()); // a training plan's loss is a float scalar
    if (checkpointDue(options, step)) {
      CheckpointInfo info = checkpointAfter(options, plan, step, resumedFrom,
                                            options.dataDir.empty() ? nullptr : &data, lrs);
      PLAIT_RETURN_IF_ERROR(
          saveCheckpoint(options.checkpointDir, info, *exec, comm, options.keepCheckpoints)
              .withPrefix(fmt::format("step {}: writing the checkpoint: ", step)));
      lastCheckpoint = step;
    }
  }
  PLAIT_RETURN_IF_ERROR(monitor.finish(comm)); // every rank: the trace is gathered

  std::vector<std::string> written;
  if (lead && !options.outputDir.empty())
    PLAIT_RETURN_IF_ERROR(writeOutputs(options, *exec, written));
  if (!options.saveWeights.empty())
    PLAIT_RETURN_IF_ERROR(saveWeights(options.saveWeights, *exec, comm, lead, false));
  if (!options.saveEmaWeights.empty())
    PLAIT_RETURN_IF_ERROR(saveWeights(options.saveEmaWeights, *exec, comm, lead, true));
  if (!lead)
    return {};
  std::string onRanks = plan.worldSize > 1 ? " on " + rankCount(plan.worldSize) : "";
  std::string memory = fmt::format("arena {} bytes, high water {}; workspace {} bytes, high "
                                   "water {}",
                                   exec->arenaBytes(), arenaHighWater, exec->workspaceBytes(),
                                   workspaceHighWater);
  std::string resumed =
      resumedStep > 0 ? fmt::format(" (steps {}-{}, resumed)", firstStep, options.steps) : "";
  std::string saved = options.checkpointDir.empty()
                          ? ""
                          : fmt::format("; checkpoint -> {}", options.checkpointDir);
  if (plan.training && stepsRun <= 0)
    summary = fmt::format("{}: the checkpoint in {} is at step {}, nothing left to run for "
                          "--steps {}", plan.path, options.checkpointDir, resumedStep,
                          options.steps);
  else if (plan.training)
    summary = fmt::format(
        "{}: trained {} steps{}{}, loss {} -> {}{}{}, {:.3f} ms/step ({}){}{}{}", plan.path,
        stepsRun, resumed, onRanks, firstLoss.dump(), lossOf(*exec).dump(),
        gradNorm < 0 ? std::string()
                     : fmt::format(", grad_norm {} -> {}", firstGradNorm.dump(),
                                   scalarOutput(*exec, size_t(gradNorm)).dump()),
        plateauSummary(lrs), totalMs / double(stepsRun), memory,
        options.saveWeights.empty() ? "" : "; weights -> " + options.saveWeights,
        options.saveEmaWeights.empty() ? "" : "; EMA weights -> " + options.saveEmaWeights, saved);
  else
    summary = fmt::format("{}: ran {} instructions {}{} in {:.3f} ms ({}); outputs: {}",
                          plan.path, plan.instrs.size(),
                          options.steps == 1 ? std::string("once")
                                             : fmt::format("x {} steps", options.steps),
                          onRanks, totalMs, memory, outputsSummary(*exec, written));
  summary += monitor.comparison(exec->workspaceBytes()); // further lines: measured against the plan
  if (!exec->generatedNote().empty())
    summary += "\n" + exec->generatedNote();
  if (plan.device != "cuda")
    summary += "\n" + cpu::kernelThreadsNote();
  if (std::string note = comm.note(); plan.device != "cuda" && !note.empty())
    summary += "\n" + note;
  return {};
}

// The launch deadline: every rank has started and reached MPI (a non-blocking all-reduce,
// so the --timeout applies).
Status joinRanks(Communicator &comm) {
  int64_t one = 1, count = 0;
  Status s = sumOverWorld(comm, &one, &count, 1);
  if (!s.ok())
    return Status::errorf("not every rank joined the job: {}", s.message());
  return {};
}

} // namespace

Status runPlan(const RunOptions &options, std::string &summary) {
  summary.clear();
  PLAIT_RETURN_IF_ERROR(checkOptions(options));
  if (options.nproc > 1) // the ranks it asks for are started by relaunchUnderMpirun
    return Status::internal(fmt::format("runPlan runs one rank, not --nproc {}", options.nproc));
  // mpirun's ranks join the job; a single process never touches MPI. A plan for more ranks
  // than were launched fails on the world-size check, without waiting for missing peers.
  if (mpi::launchedWorldSize() > 0)
    PLAIT_RETURN_IF_ERROR(mpi::initialize());
  cpu::setKernelThreads(options.threads > 0 ? options.threads : cpu::defaultKernelThreads());
  std::unique_ptr<Communicator> comm;
  if (mpi::active())
    PLAIT_RETURN_IF_ERROR(mpi::makeWorldComm(comm, {options.reduceAlgorithm}));
  else
    comm = makeLocalComm();
  comm->setTimeout(options.timeoutSeconds);
  if (comm->size() > 1) {
    activity::installTerminationMessage();
    Status joined = joinRanks(*comm);
    if (!joined.ok())
      return inContext(joined, options.planPath, fmt::format("rank {}: launch", comm->rank()));
  }
  Status s = runOnRank(options, *comm, summary);
  if (!s.ok() && comm->size() > 1)
    return inContext(s, options.planPath, fmt::format("rank {}", comm->rank()));
  return s;
}

Status relaunchUnderMpirun(const RunOptions &options, const std::vector<std::string> &args) {
  if (mpi::launchedWorldSize() > 0)
    return Status::errorf("--nproc {}: this process already is a rank started by mpirun; "
                          "give the rank count to mpirun alone",
                          options.nproc);
  // Checked once here rather than as one error per rank after the launch.
  Plan plan;
  PLAIT_RETURN_IF_ERROR(loadPlan(options.planPath, plan));
  PLAIT_RETURN_IF_ERROR(checkPlanDevice(plan));
  PLAIT_RETURN_IF_ERROR(checkPlanOptions(plan, options));
  if (int64_t(plan.worldSize) != options.nproc)
    return worldSizeMismatch(plan.path, plan.worldSize, uint32_t(options.nproc));
  if (options.maxRestarts == 0)
    return execUnderMpirun(uint32_t(options.nproc), args);
  // Supervised: a failed job starts again from the newest checkpoint (from scratch when
  // it failed before writing one).
  std::vector<std::string> resumed = withoutOption(args, "--max-restarts");
  bool hasResume = std::find(resumed.begin(), resumed.end(), "--resume") != resumed.end();
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> attemptArgs = resumed;
    if (attempt > 0 && !hasResume && hasCheckpoint(options.checkpointDir))
      attemptArgs.push_back("--resume");
    int code = 0;
    PLAIT_RETURN_IF_ERROR(runUnderMpirun(uint32_t(options.nproc), attemptArgs, code));
    if (code == 0)
      return {};
    if (code == 3) // deterministic: a restart from the checkpoint would diverge again
      return Status::diverged(fmt::format("the job stopped: training diverged (exit 3; not "
                                          "restarted, it would diverge again the same way)"));
    if (attempt == options.maxRestarts)
      return Status::errorf("the job failed (exit {}) and --max-restarts {} are used up",
                            code, options.maxRestarts);
    fmt::print(stderr, "plait-run: the job failed (exit {}); restart {} of {} from {}\n", code,
               attempt + 1, options.maxRestarts,
               hasCheckpoint(options.checkpointDir)
                   ? "the newest checkpoint in " + options.checkpointDir
                   : std::string("scratch (no checkpoint yet)"));
  }
}

} // namespace plait::rt
