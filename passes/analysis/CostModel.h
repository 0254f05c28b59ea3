// Cost model: the predicted time of one training step of a lowered plan on a cluster spec.
// An analysis over the plan's instruction stream (the exact kernels, shapes, collectives and
// waits the runtime executes), so it is MLIR-free; plait-compile runs it after lowering.
//
//   compute op:  t = max(F / R, B / W) + launch_overhead
//     F  the op's FLOPs: exact for contractions (2·M·N·K for matmul/gemm, 2·|y|·Cin/g·kh·kw
//        for conv2d and both its gradients); |out| (or |in| for reductions) times a per-element
//        count for the rest, a transcendental function (exp, erf, sqrt, pow's exp·log) counted
//        as kTranscendentalFlops
//     R  peak[dtype] × efficiency.gemm × s (a contraction: the efficiency of its GEMM calls'
//        size, when the spec has gemm_efficiency_by_size), B the bytes the op reads and
//        writes, W the memory bandwidth × efficiency.memory × s; s = the share of a core a
//        rank gets (CPU specs: min(1, devices_per_node / ranks per node); 1 for GPUs)
//     on CPU devices an op whose bytes fit in kCpuCacheBytes runs from cache: no B/W term
//   measured element kernel: when the spec's device.kernels has the op's class (binary,
//     transcendental, movement, pool, ...: plait-calibrate's timings of the runtime's own
//     kernels, timed in cache), t = max((overhead + n · ns_per_element + r · ns_per_row) / s,
//     B / W) instead, n the op's elements, r its rows (a softmax's or norm's rows, a loss's
//     targets, a reduction's results; OpCost::rows), the B/W term as above (0 in cache)
//   fused kernel: the sum of its ops' n · ns_per_element by their classes, plus the "fused"
//     class's overhead and ns_per_row per row its reduced results sum (without that class:
//     the largest overhead of its ops' classes)
//   contraction with a measured "matmul" class: t = max(F / R, B / W) + (overhead +
//     g · ns_per_row) / s instead of the launch overhead, g the GEMM calls plait's matmul
//     kernel makes (one per batch entry unless the batch folds into M); gemm's broadcast of
//     its bias c costs the "movement" class's ns_per_element per result element
//   convolution with a measured "conv" class: likewise t = max(F / R, B / W) + (overhead +
//     g · ns_per_row + c · ns_per_element) / s, g = images × groups (a GEMM call each), c the
//     im2col / col2im columns (images × groups × patch × output plane)
//   collective:  the faster of the ring form (RingModel: 2(p-1)α + 2(p-1)/p·S/β for
//     all-reduce, (p-1)α + (p-1)/p·S/β for all-gather and reduce-scatter) and, for all-reduce,
//     the tree form 2⌈log2 p⌉α + 2S/β, on the intra-node link when every rank of the group is
//     on one node (rank r is on node r / devices_per_node), the inter-node link otherwise
//   threads: on a CPU spec with device.threads, a rank gets k = max(1, count / ranks per
//     node) threads, as plait-run's default gives it. An op the runtime splits (OpCost's
//     split fields: GEMMs, attention heads, the elementwise, row-wise and optimizer loops
//     above their grains, Parallel.h) into c = min(k, grains) chunks has its work terms (the
//     F/R, B/W and per-element terms, not the fixed ones) divided by the speedup
//     1 + (S - 1)(c - 1)/(count - 1), S the spec's gemm_speedup or element_speedup, and pays
//     region_overhead per split call
//   step: a two-stream simulation in program order (simulateStep).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/PlanBuilder.h"
#include "runtime/Status.h"
#include "runtime/cluster/ClusterSpec.h"

namespace plait::cost {

/// FLOPs one transcendental function is counted as (a polynomial plus range reduction).
inline constexpr double kTranscendentalFlops = 20;
/// A CPU op whose operands and results total at most this many bytes is served by the core's
/// caches, not DRAM (a typical per-core L2; cluster specs carry no cache size yet).
inline constexpr double kCpuCacheBytes = 1 << 20;

/// What one instruction costs on its own.
struct OpCost {
  double flops = 0;
  double bytes = 0;      ///< operands read + results written
  double elements = 0;   ///< elements the per-element count applies to (0: contractions)
  /// Rows of a row-wise kernel (KernelRate::nsPerRow): softmax / norm rows, loss targets,
  /// reduced result elements (of a fused kernel too); a matmul's GEMM calls.
  double rows = 0;
  /// Elements gemm moves besides its GEMM (c broadcast into the result), at the movement
  /// class's rate.
  double columns = 0;
  /// The class of measured kernel rates (ClusterSpec's device.kernels) that times this op,
  /// or null: contractions, collectives, views.
  const char *rateClass = nullptr;
  /// A fused kernel's ops: each one's rate class and elements. Timed as the sum of the
  /// classes' per-element costs plus one call's overhead (when the spec measures them all).
  std::vector<std::pair<const char *, double>> parts;
  /// A contraction's row-wise work beside its GEMMs (attention's softmax over its scores):
  /// its rate class, elements and rows, added to the GEMM time when the spec measures it.
  struct SideWork {
    const char *rateClass;
    double elements, rows;
  };
  std::vector<SideWork> side;
  /// How the runtime splits this op across a rank's threads (runtime/cpu/Parallel.h), as its
  /// kernels call parallelFor: the work of one of its split calls in grains (a call of 2
  /// grains or more runs as min(threads, grains) chunks), how many such calls it makes, the
  /// fraction of its work in them (0: none), and whether that work is GEMM-like
  /// (device.threads.gemm_speedup) or a memory-bound loop (element_speedup).
  double splitGrains = 0;
  double splitCalls = 0;
  double splitShare = 0;
  bool splitGemm = false;
  bool contraction = false;
  bool collective = false;
  double seconds = 0;    ///< predicted time (a collective's: its transfer on its link)
};

/// FLOPs and bytes of `instr` of `plan` (seconds left 0): the per-op cost table.
OpCost opCost(const plan::PlanDesc &plan, const plan::InstrDesc &instr);

/// How a plan's ranks map onto the cluster.
struct Placement {
  uint32_t ranks = 1;
  uint32_t ranksPerNode = 1;
  double computeShare = 1; ///< s above
  /// The threads each rank's CPU kernels split over (k above): 1 unless the spec measured
  /// device.threads.
  uint32_t threads = 1;
};

/// Where `worldSize` ranks go on `spec`: filling nodes of devices_per_node first. A GPU
/// cluster with fewer devices than ranks is an error; a CPU one runs the extra ranks
/// oversubscribed on the same cores, and with device.threads gives each rank the threads
/// plait-run gives it by default: the node's CPUs (threads.count) over its ranks, at least 1.
rt::Status placeRanks(const cluster::ClusterSpec &spec, uint32_t worldSize, Placement &out);

/// The predicted time (seconds) of a collective of `kind` ("all_reduce", "all_gather",
/// "reduce_scatter", "broadcast") over `members` (global ranks), whose full buffer is
/// `bytes`. Broadcast takes the all-gather form.
double collectiveSeconds(const cluster::ClusterSpec &spec, const Placement &placement,
                         const std::string &kind, const std::vector<int64_t> &members,
                         double bytes);

/// One instruction of the simulated stream: its time, whether it is a collective, and the
/// collectives (instruction indices) it waits for.
struct SimOp {
  double seconds = 0;
  bool collective = false;
  std::vector<uint32_t> waits;
};

struct StepTime {
  double seconds = 0;        ///< the whole step
  double computeSeconds = 0; ///< sum of compute ops
  double commSeconds = 0;    ///< sum of collectives
  double exposedCommSeconds = 0; ///< step time not spent computing
};

/// The step under two streams: compute runs the non-collective ops in order; a collective
/// posted at time t starts on the comm stream at max(t, end of the previous collective);
/// an op that waits for collectives starts no earlier than their ends; the step ends when
/// both streams are done, plus `tailSeconds` (the update copies). When !overlap (the CPU
/// backend: MPI moves the bytes with the same cores, only inside MPI calls) a collective
/// occupies the compute stream too, so communication and computation add up.
StepTime simulateStep(const std::vector<SimOp> &ops, bool overlap, double tailSeconds = 0);

/// The cost of one plan on one cluster.
struct Prediction {
  StepTime step;
  double flops = 0; ///< this rank's FLOPs per step
  double mfu = 0;   ///< flops / (step seconds × peak of one device × threads per rank)
  Placement placement;
  /// Per kernel name: count and predicted seconds (collectives by their kind).
  std::map<std::string, std::pair<int64_t, double>> byKernel;
  /// Per instruction of the plan, in order: its predicted seconds (a collective's: its
  /// transfer; views and copies the runtime elides: 0).
  std::vector<double> instrSeconds;
  /// A spec that measured kernel classes (device.kernels, plait-calibrate's) but not one
  /// this plan's instructions use: per such class, how many instructions fell back to the
  /// roofline (a spec calibrated before the class existed). Empty for datasheet specs.
  std::map<std::string, int64_t> unmeasured;
};

/// Predicts the step of `plan` (rank 0's instruction stream) on `spec`.
rt::Status predictStep(const plan::PlanDesc &plan, const cluster::ClusterSpec &spec,
                       Prediction &out);

} // namespace plait::cost
