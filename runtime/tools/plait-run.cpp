// plait-run: executes a plait plan on the CPU. A thin main over runPlan() (runtime/RunPlan.h).
// Exit codes: 0 ok, 1 user error ("plait-run: ..." on stderr, one line), 2 internal error.
// Multi-rank: `mpirun -np N plait-run PLAN ...`, or `plait-run --nproc N PLAN ...`.
#include <cstdio>
#include <exception>
#include <new>

#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "runtime/RunPlan.h"
#include "runtime/comm/Mpi.h"
#include "runtime/comm/Mpirun.h"
#include "runtime/cpu/BlasCore.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/tools/ToolExit.h"

namespace {

using plait::tools::addReduceAlgorithmOption;
using plait::tools::exitCode;
using plait::tools::kExitInternalError;
using plait::tools::kExitUserError;

constexpr const char *kTool = "plait-run";
using plait::tools::parseArgs;

int fail(int code, const std::string &message) {
  return plait::tools::fail(kTool, code, message);
}

int failRank(int code, const std::string &message) {
  return plait::tools::failRank(kTool, code, message);
}

// NAME=FILE, split at the first '=' (file paths may contain '=', input names do not).
bool splitInputBinding(const std::string &arg, std::pair<std::string, std::string> &out) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    return false;
  out = {arg.substr(0, eq), arg.substr(eq + 1)};
  return true;
}

/// --list-devices: the CPU, then each CUDA device or the reason there is none.
void printDevices() {
  fmt::print("cpu: {} hardware threads\n", std::thread::hardware_concurrency());
  std::string blas = plait::rt::blasCoreNote();
  fmt::print("{}\n", blas.empty() ? "blas: OpenBLAS " + plait::rt::blasCoreName() + " kernels" : blas);
  std::vector<plait::rt::CudaDeviceInfo> gpus;
  plait::rt::Status s = plait::rt::listCudaDevices(gpus);
  if (!s.ok()) {
    fmt::print("cuda: {}\n", s.message());
    return;
  }
  for (const auto &d : gpus)
    fmt::print("cuda:{}: {} (sm_{}{}, {} SMs, {:.1f} GiB)\n", d.index, d.name, d.major, d.minor,
               d.multiprocessors, double(d.memoryBytes) / (1ull << 30));
}

} // namespace

int main(int argc, char **argv) {
  plait::rt::selectBlasCore(argv); // may re-execute this program once (BlasCore.h)
  plait::rt::RunOptions options;
  std::vector<std::string> inputArgs;

  CLI::App app{"plait-run: execute a plait plan"};
  bool listDevices = false;
  app.add_option("plan", options.planPath, "plan file written by plait-compile");
  app.add_flag("--list-devices", listDevices, "print the CPU and CUDA devices this runtime sees");
  app.add_option("--input", inputArgs, "graph input NAME=FILE (.npy or ONNX TensorProto .pb)");
  app.add_option("--output-dir", options.outputDir, "write one NAME.npy per graph output here");
  app.add_option("--seed", options.seed, "seed for parameters initialised from a spec")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--steps", options.steps, "steps to run");
  app.add_option("--nproc", options.nproc,
                 "start N local ranks under mpirun (the plan's world size)");
  app.add_option("--data", options.dataDir, "training data: one NAME.npy per graph input");
  app.add_flag("--shuffle", options.shuffle,
               "with --data: take each epoch's samples in an order of its own (from --seed; "
               "the same on every rank, continued by --resume)");
  app.add_option("--save-weights", options.saveWeights,
                 "write the params (after the last step) as FILE.safetensors");
  app.add_option("--save-ema-weights", options.saveEmaWeights,
                 "write the params' weight EMA (a plan compiled with --ema-decay) after the "
                 "last step as FILE.safetensors, under the params' names");
  app.add_option("--log-jsonl", options.logJsonl, "append one JSON object per step");
  // Progress, trace: RunMonitor.h.
  std::string progress = "auto";
  app.add_option("--progress", progress,
                 "progress on stderr (rank 0, training plans): auto (a bar on a terminal, else "
                 "lines), bar, lines (at most one a second, with the first and last step), none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->capture_default_str();
  app.add_option("--trace", options.monitor.tracePath,
                 "write a Chrome/Perfetto trace (JSON) of the first --trace-steps steps: per "
                 "rank, one event per instruction and per collective");
  app.add_option("--trace-steps", options.monitor.traceSteps,
                 "steps the trace records (the first N; bounds its memory)")
      ->capture_default_str();
  // Checkpoints and failures: Checkpoint.h, Mpirun.h.
  app.add_option("--checkpoint-dir", options.checkpointDir,
                 "write sharded checkpoints here (after the last step, and every "
                 "--checkpoint-every steps)");
  app.add_option("--checkpoint-every", options.checkpointEvery, "checkpoint every N steps");
  app.add_option("--keep-checkpoints", options.keepCheckpoints,
                 "newest checkpoints kept in --checkpoint-dir")
      ->capture_default_str();
  app.add_flag("--resume", options.resume,
               "continue from the newest usable checkpoint in --checkpoint-dir (any world "
               "size, placement or global batch of the same model)");
  app.add_option("--timeout", options.timeoutSeconds,
                 "seconds a collective (or the launch) may take before the run fails")
      ->capture_default_str();
  app.add_option("--max-restarts", options.maxRestarts,
                 "--nproc: when a rank fails, restart the job from the last checkpoint up to "
                 "this many times")
      ->capture_default_str();

  addReduceAlgorithmOption(
      app, options.reduceAlgorithm,
      "CPU plans on several ranks: how float all-reduces and reduce-scatters are summed: "
      "auto (plait's pairwise exchange over MPI point-to-point within one node for "
      "reduce-scatters, and for all-reduces on 2 ranks or from 256 KiB a rank's chunk on "
      "more; Open MPI's own collectives for the rest), pairwise (the exchange always) or "
      "mpi (Open MPI's own always)");

  app.add_option("--threads", options.threads,
                 "threads per rank for the CPU kernels (GEMMs, attention, fused kernels, "
                 "optimizer updates); 0: the CPUs this rank may use, divided among the ranks "
                 "on its node")
      ->capture_default_str();
  app.add_option("--kernel-times", options.kernelTimes,
                 "CUDA plans: time every instruction with CUDA events and write FILE.json: "
                 "each kernel's time and bandwidth against the device's copy bandwidth");
  app.add_flag("--allow-nonfinite", options.allowNonfinite,
               "training plans: run on after a step whose loss or gradients' global norm is "
               "NaN or infinite (by default the run stops there, before that step's "
               "checkpoint, exit 3)");
  app.add_flag("--no-cuda-graphs", options.noCudaGraphs,
               "CUDA plans: launch every kernel every step instead of replaying steps 2.. as "
               "one captured CUDA graph");

  if (auto rc = parseArgs(kTool, app, argc, argv))
    return *rc;

  if (listDevices) {
    printDevices();
    return 0;
  }
  if (options.planPath.empty())
    return fail(kExitUserError, "a plan file is required (see --help)");
  plait::rt::parseProgressMode(progress, options.monitor.progress); // checked by CLI11
  for (const std::string &arg : inputArgs) {
    std::pair<std::string, std::string> binding;
    if (!splitInputBinding(arg, binding))
      return fail(kExitUserError, fmt::format("--input '{}': expected NAME=FILE", arg));
    options.inputs.push_back(std::move(binding));
  }

  if (options.nproc > 1) { // returns only on error; otherwise mpirun takes over
    std::vector<std::string> args(argv + 1, argv + argc);
    plait::rt::Status status =
        plait::rt::relaunchUnderMpirun(options, plait::rt::withoutOption(args, "--nproc"));
    if (status.ok()) // --max-restarts: the supervised job succeeded
      return 0;
    return fail(exitCode(status), status.message());
  }

  try {
    std::string summary;
    plait::rt::Status status = plait::rt::runPlan(options, summary);
    if (!status.ok())
      return failRank(exitCode(status),
                      status.message());
    if (!summary.empty()) { // rank 0 speaks for the job
      fmt::print("{}\n", summary);
      if (std::string blas = plait::rt::blasCoreNote(); !blas.empty())
        fmt::print("{}\n", blas);
    }
    std::fflush(stdout);
    plait::rt::mpi::finalize();
    return 0;
  } catch (const std::bad_alloc &) {
    return failRank(kExitInternalError, "out of memory");
  } catch (const std::exception &e) {
    return failRank(kExitInternalError, fmt::format("internal error: {}", e.what()));
  }
}
