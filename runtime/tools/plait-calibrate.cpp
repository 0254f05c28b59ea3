// plait-calibrate: measures the machine it runs on (GEMM rate, memory bandwidth, kernel call
// overhead, MPI collective latency and bandwidth) and writes a cluster spec, so that the
// planner's predictions can be checked against real runs. A thin main over Calibrate.h.
// Multi-rank: `mpirun -np N plait-calibrate ...`, or `plait-calibrate --nproc N ...`.
// `--device cuda [--gpu N]`: one CUDA device through plait's CUDA kernels (CalibrateCuda.h).
// Exit codes: 0 ok, 1 user error, 2 internal error.
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "runtime/cluster/Calibrate.h"
#include "runtime/cluster/CalibrateCuda.h"
#include "runtime/cluster/ClusterSpec.h"
#include "runtime/comm/Mpi.h"
#include "runtime/comm/Mpirun.h"
#include "runtime/cpu/BlasCore.h"
#include "runtime/tools/ToolExit.h"

namespace {

using plait::tools::addReduceAlgorithmOption;
using plait::tools::exitCode;
using plait::tools::kExitUserError;

constexpr const char *kTool = "plait-calibrate";
using plait::tools::parseArgs;

int fail(int code, const std::string &message) {
  return plait::tools::fail(kTool, code, message);
}

int failRank(const plait::rt::Status &status) {
  return plait::tools::failRank(kTool, exitCode(status), status.message());
}

// The spec file: the measurement table as comments, then the spec; checked by parsing it
// back before it is written.
plait::rt::Status writeSpec(const std::string &path, const std::string &table,
                            const plait::cluster::ClusterSpec &spec) {
  std::string text = "# Written by plait-calibrate. What it measured:\n";
  size_t start = 0;
  while (start < table.size()) {
    size_t end = table.find('\n', start);
    if (end == std::string::npos)
      end = table.size();
    std::string line = table.substr(start, end - start);
    text += line.empty() ? "#\n" : "#   " + line + "\n";
    start = end + 1;
  }
  text += plait::cluster::writeClusterSpec(spec);
  plait::cluster::ClusterSpec check;
  plait::rt::Status parsed = plait::cluster::parseClusterSpecText(text, path, check);
  if (!parsed.ok())
    return plait::rt::Status::internal("the spec written does not parse back: " + parsed.message());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    return plait::rt::Status::errorf("-o {}: cannot write the spec", path);
  return {};
}

} // namespace

int main(int argc, char **argv) {
  plait::rt::selectBlasCore(argv); // measure the kernels plait-run will use (BlasCore.h)
  CLI::App app{"plait-calibrate: measure this machine and write a cluster spec (YAML)"};
  std::string output, name = "this-machine-cpu";
  uint32_t nproc = 0;
  uint64_t streamMiB = 0;
  plait::cluster::CalibrateOptions options;
  app.add_option("-o,--output", output, "write the cluster spec here (FILE.yaml)");
  app.add_option("--name", name, "the spec's name")->capture_default_str();
  app.add_flag("--quick", options.quick,
               "small sizes and few repetitions (for tests; the numbers are rough)");
  app.add_option("--nproc", nproc, "start N local ranks under mpirun (one device per rank)");
  app.add_option("--stream-mib", streamMiB,
                 "MiB per memory-bandwidth array (default: together 4x the last-level cache)");
  addReduceAlgorithmOption(
      app, options.reduce,
      "how the timed all-reduces and reduce-scatters are summed, as plait-run's "
      "option of that name: auto, pairwise or mpi");
  std::string device = "cpu";
  int gpu = 0;
  app.add_option("--device", device,
                 "cpu (this machine's ranks over MPI) or cuda (one GPU through plait's CUDA "
                 "kernels)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--gpu", gpu, "--device cuda: the CUDA device to measure")->check(CLI::NonNegativeNumber);
  if (auto rc = parseArgs(kTool, app, argc, argv))
    return *rc;
  options.streamBytes = streamMiB << 20;

  if (device == "cuda") {
    if (nproc > 1)
      return fail(kExitUserError, "--device cuda measures one GPU: --nproc does not apply");
    if (name == "this-machine-cpu")
      name = "this-machine-gpu";
    plait::cluster::CudaCalibration calibration;
    plait::cluster::CudaCalibrateOptions cudaOptions;
    cudaOptions.device = gpu;
    cudaOptions.quick = options.quick;
    plait::rt::Status status = plait::cluster::calibrateCuda(cudaOptions, calibration);
    if (!status.ok())
      return fail(exitCode(status), status.message());
    std::string table = plait::cluster::cudaCalibrationTable(calibration);
    fmt::print("{}", table);
    plait::cluster::ClusterSpec spec = plait::cluster::specFromCudaCalibration(calibration, name);
    if (!output.empty()) {
      status = writeSpec(output, table, spec);
      if (!status.ok())
        return fail(exitCode(status), status.message());
      fmt::print("\nwrote {}\n", output);
    } else {
      fmt::print("\n{}", plait::cluster::writeClusterSpec(spec));
    }
    return 0;
  }

  if (nproc > 1 && plait::rt::mpi::launchedWorldSize() == 0) { // returns only on error
    std::vector<std::string> args(argv + 1, argv + argc);
    plait::rt::Status status =
        plait::rt::execUnderMpirun(nproc, plait::rt::withoutOption(args, "--nproc"));
    return fail(exitCode(status), status.message());
  }

  plait::rt::Status status = plait::rt::mpi::initialize();
  if (!status.ok())
    return failRank(status);
  plait::cluster::Calibration calibration;
  status = plait::cluster::calibrate(options, calibration);
  if (!status.ok())
    return failRank(status);
  if (nproc > 1 && calibration.worldSize != nproc)
    return failRank(plait::rt::Status::errorf("--nproc {}: started among {} ranks", nproc,
                                              calibration.worldSize));

  if (calibration.rank == 0) { // rank 0 speaks for the job
    fmt::print("{}", plait::cluster::calibrationTable(calibration));
    plait::cluster::ClusterSpec spec = plait::cluster::specFromCalibration(calibration, name);
    if (!output.empty()) {
      status = writeSpec(output, plait::cluster::calibrationTable(calibration), spec);
      if (!status.ok())
        return failRank(status);
      fmt::print("\nwrote {}\n", output);
    } else {
      fmt::print("\n{}", plait::cluster::writeClusterSpec(spec));
    }
    std::fflush(stdout);
  }
  plait::rt::mpi::finalize();
  return 0;
}
