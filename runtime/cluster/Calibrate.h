// plait-calibrate's measurements: GEMM rate (OpenBLAS), memory bandwidth (STREAM copy and
// triad), per-kernel overhead, the runtime's own element kernels per class, and the latency
// and bandwidth of MPI collectives within and across nodes; and the cluster spec they make.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/Status.h"
#include "runtime/cluster/ClusterSpec.h"
#include "runtime/cluster/RingModel.h"
#include "runtime/comm/Mpi.h"

namespace plait::cluster {

struct CalibrateOptions {
  bool quick = false;       ///< small sizes and few repetitions (tests)
  uint64_t streamBytes = 0; ///< bytes per STREAM array; 0: from the last-level cache size
  /// How plait's communicator sums the all-reduces and reduce-scatters it times.
  rt::mpi::ReduceAlgorithm reduce = rt::mpi::ReduceAlgorithm::Auto;
};

/// One GEMM shape and its rate: the median over repetitions of the slowest rank's time.
struct GemmRate {
  int m = 0, n = 0, k = 0;
  double flopsPerSecond = 0;
  double seconds = 0; ///< one call
};

/// The median time of one collective at each size, and the ring fit over them.
struct CollectiveRates {
  Collective collective = Collective::AllReduce;
  uint32_t ranks = 0;
  std::vector<CollectiveSample> samples;
  Link fit;
};

/// One class of element kernels (ClusterSpec's kKernelClassNames): the runtime's own CPU
/// kernels of that class timed on synthetic f32 tensors of a few sizes, and the fit
/// time = overhead + elements × ns_per_element over all of them.
struct KernelClassRates {
  std::string name;                 ///< the class
  std::vector<std::string> kernels; ///< the kernels timed for it
  struct Sample {
    std::string kernel;
    int64_t elements = 0; ///< what the cost model counts as the call's elements
    int64_t rows = 0;     ///< and as its rows (KernelRate::nsPerRow)
    double seconds = 0;   ///< one call
  };
  std::vector<Sample> samples;
  KernelRate fit;
};

/// The kernels' speedup on several threads (ClusterSpec's ThreadScaling), measured by rank 0
/// alone on its node while the other ranks sleep: each time is one call's, the median over
/// repetitions, on 1 thread and on `threads`.
struct ThreadRates {
  uint32_t threads = 1;                   ///< the node's CPUs one rank may use; 1: not measured
  int gemmSize = 0;                       ///< the square GEMM timed (plait's gemmRowMajor)
  double gemmOne = 0, gemmAll = 0;        ///< seconds
  int64_t elements = 0;                   ///< the element kernels' size
  double addOne = 0, addAll = 0;          ///< binary add
  double geluOne = 0, geluAll = 0;        ///< gelu (a transcendental map)
  double region = 0;                      ///< seconds: a parallelFor of empty chunks
};

struct Calibration {
  std::string host, date, cpuModel;
  uint32_t rank = 0; ///< this process's rank in MPI_COMM_WORLD
  uint32_t worldSize = 1, nodes = 1, ranksPerNode = 1;
  std::string reduceAlgorithm = "auto"; ///< CalibrateOptions::reduce, by name
  int blasThreads = 1;
  std::string blasCore;    ///< the kernels OpenBLAS chose ("SkylakeX", "Haswell", "Prescott")
  std::string blasWarning; ///< why blasCore is slower than this CPU allows, or ""
  uint64_t memoryBytesPerRank = 0;   ///< physical memory / ranks per node
  std::vector<GemmRate> squareGemms; ///< fp32, n×n×n
  std::vector<GemmRate> gptGemms;    ///< fp32, the shapes of samples/gpt (batch 4, seq 16, d 32)
  double bestGemm = 0;               ///< FLOP/s, the best of squareGemms
  double gptGemm = 0;                ///< FLOP/s, all gptGemms together (flops / time)
  double gptGemmNet = 0;             ///< the same with launchOverhead per call taken out
  uint64_t streamBytes = 0;          ///< per array
  double copyBandwidth = 0, triadBandwidth = 0;      ///< bytes/s per rank, all ranks at once
  double launchOverhead = 0;                         ///< seconds: one 4×4×4 GEMM call
  std::vector<KernelClassRates> kernels;             ///< one per kernel class
  ThreadRates threads;                               ///< the kernels on several threads
  std::vector<CollectiveRates> intraNode, interNode; ///< empty when only one rank crosses
  std::optional<Link> intraLink, interLink;          ///< fitted over all three collectives
};

/// Runs every measurement; every rank of MPI_COMM_WORLD must call it (MPI initialised).
/// Everything but the per-collective rates is the same on every rank; those are of the
/// rank's own groups (rank 0's are node 0's and local rank 0's across nodes).
rt::Status calibrate(const CalibrateOptions &options, Calibration &out);

/// The cluster spec of the measured machine: one device per rank, the best GEMM rate as the
/// fp32 peak, the GPT-sample GEMMs' fraction of it (net of launch overhead) as the GEMM
/// efficiency, the triad bandwidth with memory efficiency 1, the measured kernel classes, the
/// fitted links with a fit per collective kind, and the thread scaling where one rank may use
/// more than one CPU.
ClusterSpec specFromCalibration(const Calibration &calibration, const std::string &name);

/// One timed call for fitKernelRate: its elements, its rows, its seconds.
struct RateSample {
  double elements = 0, rows = 0, seconds = 0;
};
/// The KernelRate fitting `samples` best in relative error (weighted least squares: small
/// calls decide the overhead, large ones the per-element and per-row times), with every
/// coefficient constrained to be non-negative (then the overhead floored at 1 ns and the
/// per-element time at 1e-6 ns, since the spec's fields are positive). The per-row time is 0
/// where the samples cannot determine it: no rows, or every sample's rows a fixed fraction
/// of its elements.
KernelRate fitKernelRate(const std::vector<RateSample> &samples);

/// What was measured, as a table for people (also written as comments above the spec).
std::string calibrationTable(const Calibration &calibration);

/// The kernel classes' rows of such a table: each sample's time, then each class's fit
/// (shared by the CPU and the CUDA calibration's tables).
std::string kernelClassTable(const std::vector<KernelClassRates> &kernels);

} // namespace plait::cluster
