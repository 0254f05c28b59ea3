// plait-calibrate's measurements. Every rank measures at once (as in a data-parallel step),
// each repetition's time is the slowest rank's, and each measurement keeps the median of its
// repetitions.
#include "runtime/cluster/Calibrate.h"
#include "runtime/cluster/KernelSamples.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include <cblas.h>
#include <fmt/format.h>

#include "codegen/schema/FusedElementwise.h"
#include "runtime/Kernel.h"
#include "runtime/comm/MpiStatus.h"
#include "runtime/cpu/BlasCore.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Workspace.h"

namespace plait::cluster {

using rt::Status;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}


// The median over `reps` repetitions (after `warmup` untimed ones) of the slowest rank's
// time for `work`, all ranks of `comm` starting together.
Status timeOnAllRanks(MPI_Comm comm, int warmup, int reps, const std::function<Status()> &work,
                      double &seconds) {
  std::vector<double> times;
  for (int r = 0; r < warmup + reps; ++r) {
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Barrier(comm));
    double start = now();
    PLAIT_RETURN_IF_ERROR(work());
    double local = now() - start, slowest = 0;
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    if (r >= warmup)
      times.push_back(slowest);
  }
  seconds = median(times);
  return {};
}

// How many calls of something taking `once` seconds make a repetition of about `target`.
int callsFor(double once, double target) {
  return int(std::clamp(target / std::max(once, 1e-9), 1.0, 100000.0));
}

// One GEMM shape's rate; small shapes repeat the call within a repetition so that the timer
// sees at least a few milliseconds. The call count is agreed on by all ranks.
Status measureGemm(int m, int n, int k, int reps, double target, GemmRate &out) {
  std::vector<float> a(size_t(m) * k, 0.5f), b(size_t(k) * n, 0.25f), c(size_t(m) * n, 0.f);
  auto call = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                0.0f, c.data(), n);
  };
  call();
  double start = now();
  call();
  double once = now() - start;
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Allreduce(MPI_IN_PLACE, &once, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  int calls = callsFor(once, target);
  double seconds = 0;
  PLAIT_RETURN_IF_ERROR(timeOnAllRanks(
      MPI_COMM_WORLD, 1, reps,
      [&]() -> Status {
        for (int i = 0; i < calls; ++i)
          call();
        return {};
      },
      seconds));
  out = GemmRate{m, n, k, 2.0 * m * n * k * calls / seconds, seconds / calls};
  return {};
}

// STREAM copy (c = a) and triad (a = b + s·c) on `bytes`-sized double arrays.
Status measureStream(uint64_t bytes, int reps, double &copy, double &triad) {
  size_t n = bytes / sizeof(double);
  std::vector<double> a(n, 1.0), b(n, 2.0), c(n, 0.0); // touched: pages are mapped
  double seconds = 0;
  PLAIT_RETURN_IF_ERROR(timeOnAllRanks(
      MPI_COMM_WORLD, 1, reps,
      [&]() -> Status {
        double *__restrict pa = a.data();
        double *__restrict pc = c.data();
        for (size_t i = 0; i < n; ++i)
          pc[i] = pa[i];
        return {};
      },
      seconds));
  copy = 2.0 * double(n) * sizeof(double) / seconds;
  PLAIT_RETURN_IF_ERROR(timeOnAllRanks(
      MPI_COMM_WORLD, 1, reps,
      [&]() -> Status {
        double *__restrict pa = a.data();
        const double *__restrict pb = b.data();
        const double *__restrict pc = c.data();
        for (size_t i = 0; i < n; ++i)
          pa[i] = pb[i] + 3.0 * pc[i];
        return {};
      },
      seconds));
  triad = 3.0 * double(n) * sizeof(double) / seconds;
  // Keep the loops from being optimised away.
  volatile double sink = a[n / 2] + c[n / 3];
  (void)sink;
  return {};
}

// --- The runtime's element kernels, per class (operands: KernelSamples.h) ---------------

// One call's time of `kernel` on `elements` elements, every rank at once. Calls rotate over
// copies of the operands that together fill kKernelWorkingSet, so that each call finds its
// operands in L2, as a step of many kernels leaves them, not in L1 where the previous call of
// a tight loop on one set of operands would leave them.
constexpr uint64_t kKernelWorkingSet = 1u << 20;

// Full calibrations measure the GEMMs and the kernels in this many rounds spread over the
// run, and keep the median of each one's rounds.
constexpr int kRounds = 4;

Status measureKernel(const std::string &kernel, int64_t elements, int reps, double target,
                     KernelClassRates::Sample &out) {
  double seconds = 0;
  rt::KernelFn fn = rt::findKernel(registered(kernel));
  if (!fn)
    return Status::errorf("plait-calibrate: no kernel named '{}' in the runtime", kernel);
  std::vector<KernelOperands> copies(1);
  kernelOperands(kernel, elements, copies[0]);
  uint64_t bytes = 0;
  for (const std::vector<uint8_t> &b : copies[0].storage)
    bytes += b.size();
  size_t count = size_t(std::clamp<uint64_t>(kKernelWorkingSet / std::max<uint64_t>(bytes, 1),
                                             1, 256));
  copies.resize(count);
  for (size_t c = 1; c < count; ++c)
    kernelOperands(kernel, elements, copies[c]);
  size_t next = 0;
  auto once = [&]() -> Status {
    KernelOperands &k = copies[next];
    next = (next + 1) % copies.size();
    rt::KernelCall call{k.inputs, k.outputs, k.attrs, 0, 1,
                        k.workspaceBytes ? k.aligned : nullptr, k.workspaceBytes, nullptr};
    if (Status s = fn(call); !s.ok())
      return Status::errorf("plait-calibrate: kernel '{}' on {} elements: {}", kernel, elements,
                            s.message());
    return {};
  };
  for (size_t c = 0; c < count; ++c) // every copy once, untimed
    PLAIT_RETURN_IF_ERROR(once());
  double start = now();
  PLAIT_RETURN_IF_ERROR(once());
  double first = now() - start;
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  int calls = callsFor(first, target);
  PLAIT_RETURN_IF_ERROR(timeOnAllRanks(
      MPI_COMM_WORLD, 1, reps,
      [&]() -> Status {
        for (int i = 0; i < calls; ++i)
          PLAIT_RETURN_IF_ERROR(once());
        return {};
      },
      seconds));
  out = {kernel, copies[0].elements, copies[0].rows, seconds / calls};
  return {};
}

// Every class on tensors that fit in a core's cache with their operands (at most 64K f32
// elements, under 1 MiB for a binary op), as the plans' element kernels mostly do: the cost
// model charges DRAM bandwidth separately for larger ones.
Status measureKernelClasses(bool quick, std::vector<KernelClassRates> &out) {
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{256, 4096, 65536}
            : std::vector<int64_t>{256, 1024, 4096, 16384, 65536};
  const int reps = 3;
  const double target = quick ? 0.001 : 0.006;
  // Rounds over every kernel and size, each sample keeping the median of its rounds: on a
  // machine whose speed changes for seconds at a time (a VM's neighbours, a shared core),
  // a sample then stands for the machine's usual speed rather than for one spell, and no
  // class is measured in a slower spell than another.
  const int rounds = quick ? 1 : kRounds;
  for (const KernelClass &c : kernelClasses()) {
    KernelClassRates rates;
    rates.name = c.name;
    rates.kernels = c.kernels;
    out.push_back(std::move(rates));
  }
  std::vector<std::vector<std::vector<double>>> allRounds(out.size()); // class, sample, round
  for (int round = 0; round < rounds; ++round)
    for (size_t k = 0; k < kernelClasses().size(); ++k) {
      size_t at = 0;
      for (const std::string &kernel : kernelClasses()[k].kernels)
        for (int64_t n : sizes) {
          KernelClassRates::Sample sample;
          PLAIT_RETURN_IF_ERROR(measureKernel(kernel, n, reps, target, sample));
          if (round == 0) {
            out[k].samples.push_back(sample);
            allRounds[k].emplace_back();
          }
          allRounds[k][at++].push_back(sample.seconds);
        }
    }
  for (size_t k = 0; k < out.size(); ++k)
    for (size_t i = 0; i < out[k].samples.size(); ++i)
      out[k].samples[i].seconds = median(allRounds[k][i]);
  for (KernelClassRates &rates : out) {
    std::vector<RateSample> points;
    for (const KernelClassRates::Sample &sample : rates.samples)
      points.push_back({double(sample.elements), double(sample.rows), sample.seconds});
    rates.fit = fitKernelRate(points);
  }
  return {};
}

// --- The kernels on several threads (ThreadRates) ----------------------------------------

// The median over `reps` repetitions of one call's time, each repetition `calls` calls, on
// this rank alone.
double localSeconds(int reps, double target, const std::function<void()> &call) {
  call();
  double start = now();
  call();
  int calls = callsFor(now() - start, target);
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    start = now();
    for (int i = 0; i < calls; ++i)
      call();
    times.push_back((now() - start) / calls);
  }
  return median(times);
}

// Rank 0 times a GEMM, two element kernels and an empty region on one thread and on all the
// CPUs its node's ranks may use (the union of their affinity masks), the others
// sleeping meanwhile (not spinning in MPI) so that their cores are free; rank 0's times go
// to every rank.
Status measureThreadScaling(MPI_Comm local, bool quick, ThreadRates &out) {
  int worldRank = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank));
  cpu_set_t own, node;
  CPU_ZERO(&own);
  if (sched_getaffinity(0, sizeof own, &own) != 0)
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c)
      CPU_SET(c, &own);
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Allreduce(&own, &node, int(sizeof node), MPI_BYTE, MPI_BOR, local));
  const int cpus = std::min(CPU_COUNT(&node), rt::cpu::kMaxKernelThreads);
  // The CPUs, the GEMM size, the elements, then the seven times.
  std::array<double, 10> result{};
  // The pool's threads inherit rank 0's affinity: where it cannot take the node's CPUs (a
  // cpuset narrower than the ranks' masks), the scaling is not measured.
  if (worldRank == 0 && cpus >= 2 && sched_setaffinity(0, sizeof node, &node) == 0) {
    const int reps = quick ? 3 : 5;
    const double target = quick ? 0.005 : 0.01;
    const int n = quick ? 256 : 512;
    const int64_t elements = quick ? 262144 : 524288;
    std::vector<float> a(size_t(n) * n, 0.5f), b(size_t(n) * n, 0.25f), c(size_t(n) * n);
    auto gemm = [&] {
      (void)rt::cpu::gemmRowMajor<float>(false, false, n, n, n, 1.0, a.data(), n, b.data(), n,
                                         0.0, c.data(), n);
    };
    KernelOperands add, gelu;
    kernelOperands("add", elements, add);
    kernelOperands("gelu", elements, gelu);
    rt::KernelFn addFn = rt::findKernel("add"), geluFn = rt::findKernel("gelu");
    auto kernel = [](rt::KernelFn fn, KernelOperands &k) {
      rt::KernelCall call{k.inputs, k.outputs, k.attrs, 0, 1,
                          k.workspaceBytes ? k.aligned : nullptr, k.workspaceBytes, nullptr};
      (void)fn(call);
    };
    auto region = [] {
      rt::cpu::parallelFor(rt::cpu::kernelThreads(), 1, [](int64_t, int64_t, int64_t) {});
    };
    // In rounds, one thread and all of them alternating, each time the median of its rounds:
    // a ratio of two times measured seconds apart on a machine whose speed drifts would
    // measure the drift.
    std::array<std::vector<double>, 8> rounds;
    for (int round = 0; round < (quick ? 1 : kRounds); ++round)
      for (int threads : {1, cpus}) {
        rt::cpu::setKernelThreads(threads);
        const size_t at = threads == 1 ? 0 : 1;
        rounds[0 + at].push_back(localSeconds(reps, target, gemm));
        rounds[2 + at].push_back(localSeconds(reps, target, [&] { kernel(addFn, add); }));
        rounds[4 + at].push_back(localSeconds(reps, target, [&] { kernel(geluFn, gelu); }));
        rounds[6 + at].push_back(localSeconds(reps, target, region));
      }
    rt::cpu::setKernelThreads(1);
    std::array<double, 8> times{};
    for (size_t i = 0; i < times.size(); ++i)
      times[i] = median(rounds[i]);
    sched_setaffinity(0, sizeof own, &own);
    result = {double(cpus), double(n), double(elements), times[0], times[1], times[2],
              times[3], times[4], times[5], times[7]};
  }
  // The others wait without spinning: their cores are rank 0's threads' meanwhile.
  MPI_Request request;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  for (int done = 0; !done;) {
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (!done)
      ::usleep(1000);
  }
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Bcast(result.data(), int(result.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  out = ThreadRates{};
  if (result[0] < 2)
    return {};
  out.threads = uint32_t(result[0]);
  out.gemmSize = int(result[1]);
  out.elements = int64_t(result[2]);
  out.gemmOne = result[3], out.gemmAll = result[4];
  out.addOne = result[5], out.addAll = result[6];
  out.geluOne = result[7], out.geluAll = result[8];
  out.region = result[9];
  return {};
}

// One collective at each buffer size from 8 bytes to `maxBytes` (x4), started and waited for
// through plait's communicator `plait` on its group `group` (the ranks of `comm`), as
// plait-run's executor does: the algorithm the runs will use is the one measured.
Status measureCollective(rt::Communicator &plait, rt::CommGroup group, MPI_Comm comm,
                         Collective collective, uint64_t maxBytes, bool quick,
                         CollectiveRates &out) {
  int size = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &size));
  const uint32_t ranks = uint32_t(size);
  out = CollectiveRates{collective, ranks, {}, {}};
  const uint64_t grain = uint64_t(ranks) * sizeof(float); // every rank gets whole floats
  std::vector<float> send, recv;
  for (uint64_t want = 8; want <= maxBytes; want *= 4) {
    uint64_t bytes = (want + grain - 1) / grain * grain;
    size_t count = bytes / sizeof(float), shard = count / ranks;
    send.assign(collective == Collective::AllGather ? shard : count, 1.0f);
    recv.assign(collective == Collective::ReduceScatter ? shard : count, 0.0f);
    int reps = quick ? 5 : bytes <= (1u << 20) ? 30 : 8;
    double seconds = 0;
    rt::CollectiveArgs args;
    args.kind = collective == Collective::AllReduce   ? rt::CollectiveKind::AllReduce
                : collective == Collective::AllGather ? rt::CollectiveKind::AllGather
                                                      : rt::CollectiveKind::ReduceScatter;
    args.count = collective == Collective::AllReduce ? count : shard;
    args.send = send.data();
    args.recv = recv.data();
    auto run = [&]() -> Status {
      rt::CommRequest request = 0;
      PLAIT_RETURN_IF_ERROR(plait.start(group, args, request));
      return plait.wait(request);
    };
    PLAIT_RETURN_IF_ERROR(timeOnAllRanks(comm, quick ? 2 : 5, reps, run, seconds));
    out.samples.push_back({collective, ranks, bytes, seconds});
  }
  out.fit = fitRing(out.samples);
  return {};
}

// The three collectives on `comm` (plait's group `group`) and one link fitted over all of
// them; nothing when `comm` has one rank.
Status measureLink(rt::Communicator &plait, rt::CommGroup group, MPI_Comm comm, bool quick,
                   std::vector<CollectiveRates> &rates, std::optional<Link> &link) {
  int size = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &size));
  if (size < 2)
    return {};
  const uint64_t maxBytes = quick ? (1u << 20) : (64u << 20);
  std::vector<CollectiveSample> all;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    CollectiveRates r;
    PLAIT_RETURN_IF_ERROR(measureCollective(plait, group, comm, c, maxBytes, quick, r));
    all.insert(all.end(), r.samples.begin(), r.samples.end());
    rates.push_back(std::move(r));
  }
  link = fitRing(all);
  return {};
}

// The world's ranks as partitions of plait's communicator, as the MPI_Comm_splits of
// calibrate() made them: one group per node (`byNode`, member i its local rank i) and one per
// local rank (`byLocalRank`, member n on node n).
Status nodeGroups(int node, int localRank, int nodes, int localSize, rt::RankGroups &byNode,
                  rt::RankGroups &byLocalRank) {
  const int worldSize = nodes * localSize;
  int mine[2] = {node, localRank};
  std::vector<int> all(2 * size_t(worldSize));
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD));
  byNode.groupSize = uint32_t(localSize);
  byLocalRank.groupSize = uint32_t(nodes);
  byNode.ranks.assign(size_t(worldSize), 0);
  byLocalRank.ranks.assign(size_t(worldSize), 0);
  for (int r = 0; r < worldSize; ++r) {
    size_t n = size_t(all[2 * size_t(r)]), l = size_t(all[2 * size_t(r) + 1]);
    byNode.ranks[n * size_t(localSize) + l] = uint32_t(r);
    byLocalRank.ranks[l * size_t(nodes) + n] = uint32_t(r);
  }
  return {};
}

// The same value on every rank: rank 0's. Measurements with a fit are taken from rank 0,
// which is in node 0's intra-node group and in the inter-node group of local rank 0.
Status broadcastLinks(Calibration &c) {
  auto bcastLink = [](std::optional<Link> &link) -> Status {
    double v[3] = {link ? 1.0 : 0.0, link ? link->bandwidth : 0, link ? link->latency : 0};
    PLAIT_MPI_RETURN_IF_ERROR(MPI_Bcast(v, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (v[0] != 0)
      link = Link{v[1], v[2]};
    else
      link.reset();
    return {};
  };
  PLAIT_RETURN_IF_ERROR(bcastLink(c.intraLink));
  return bcastLink(c.interLink);
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size())
        return line.substr(colon + 2);
    }
  return "CPU";
}

// A warning when OpenBLAS runs kernels below what this CPU supports: generic ones (only when
// BlasCore.h's re-exec was turned off or could not happen), or older ones an OPENBLAS_CORETYPE
// in the environment asked for.
std::string blasCoreWarning(const std::string &core) {
  std::string cpu = plait::rt::cpuBlasCore();
  std::string stronger = plait::rt::strongerBlasCore(core, cpu);
  if (stronger.empty())
    return "";
  bool generic = !plait::rt::betterBlasCore(core, cpu).empty();
  return fmt::format("OpenBLAS runs its {} kernels on a CPU that supports {}: {} may make GEMMs {}",
                     core, stronger,
                     std::getenv("OPENBLAS_CORETYPE") && !generic
                         ? "unsetting OPENBLAS_CORETYPE"
                         : "setting OPENBLAS_CORETYPE=" + stronger,
                     generic ? "several times faster" : "faster");
}

// The GEMMs of samples/gpt (batch 4 × seq 16 = 64 tokens, d_model 32, vocab 64): the
// forward projections and the two backward GEMMs of the largest (fc).
constexpr int kGptShapes[][3] = {
    {64, 96, 32},  // qkv
    {64, 32, 32},  // attention output projection
    {64, 128, 32}, // fc
    {64, 32, 128}, // fc_out
    {64, 64, 32},  // lm_head
    {32, 128, 64}, // fc weight gradient: xᵀ·dy
    {64, 32, 128}, // fc input gradient: dy·Wᵀ
};

} // namespace

KernelRate fitKernelRate(const std::vector<RateSample> &samples) {
  // Minimise Σ ((a + b·n + c·r − t)/t)² over a, b, c ≥ 0: for each subset of the three terms,
  // the weighted normal equations of that subset; the best subset whose solution is positive
  // (terms a subset leaves out are 0). A term the samples cannot tell apart from the others
  // (no rows, or rows proportional to elements) makes its subsets singular: they are skipped.
  auto column = [](const RateSample &s, int j) {
    return j == 0 ? 1.0 : j == 1 ? s.elements : s.rows;
  };
  auto residual = [&](const double coef[3]) {
    double r = 0;
    for (const RateSample &s : samples)
      if (s.seconds > 0) {
        double e = (coef[0] + coef[1] * s.elements + coef[2] * s.rows - s.seconds) / s.seconds;
        r += e * e;
      }
    return r;
  };
  double best[3] = {0, 0, 0};
  double bestResidual = std::numeric_limits<double>::infinity();
  for (int mask = 1; mask < 8; ++mask) {
    int terms[3], k = 0;
    for (int j = 0; j < 3; ++j)
      if (mask & (1 << j))
        terms[k++] = j;
    double m[3][4] = {};
    for (const RateSample &s : samples) {
      if (!(s.seconds > 0))
        continue;
      double w = 1 / (s.seconds * s.seconds);
      for (int i = 0; i < k; ++i) {
        for (int j = 0; j < k; ++j)
          m[i][j] += w * column(s, terms[i]) * column(s, terms[j]);
        m[i][k] += w * column(s, terms[i]) * s.seconds;
      }
    }
    // Gaussian elimination with partial pivoting; a pivot tiny against its column's scale
    // is a term the samples do not determine.
    double scale[3];
    for (int i = 0; i < k; ++i)
      scale[i] = m[i][i];
    bool singular = false;
    for (int i = 0; i < k && !singular; ++i) {
      int pivot = i;
      for (int r = i + 1; r < k; ++r)
        if (std::abs(m[r][i]) > std::abs(m[pivot][i]))
          pivot = r;
      std::swap(m[i], m[pivot]);
      if (!(std::abs(m[i][i]) > 1e-9 * scale[i]))
        singular = true;
      for (int r = i + 1; r < k && !singular; ++r) {
        double f = m[r][i] / m[i][i];
        for (int c = i; c <= k; ++c)
          m[r][c] -= f * m[i][c];
      }
    }
    if (singular)
      continue;
    double x[3] = {0, 0, 0};
    for (int i = k - 1; i >= 0; --i) {
      double v = m[i][k];
      for (int j = i + 1; j < k; ++j)
        v -= m[i][j] * x[j];
      x[i] = v / m[i][i];
    }
    double coef[3] = {0, 0, 0};
    bool positive = true;
    for (int i = 0; i < k; ++i) {
      positive &= x[i] > 0;
      coef[terms[i]] = x[i];
    }
    if (!positive)
      continue;
    if (double r = residual(coef); r < bestResidual) {
      bestResidual = r;
      std::copy(coef, coef + 3, best);
    }
  }
  // The spec's fields must be positive: floors far below anything measurable (ns_per_row
  // is optional: 0 leaves it out).
  return KernelRate{significant(std::max(best[1] * 1e9, 1e-6)),
                    significant(std::max(best[0], 1e-9)),
                    best[2] > 0 ? significant(best[2] * 1e9) : 0.0};
}

Status calibrate(const CalibrateOptions &options, Calibration &out) {
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int worldSize = 0, worldRank = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(MPI_COMM_WORLD, &worldSize));
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank));

  // Nodes: the ranks that share memory. Every node must hold the same number of ranks.
  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, worldRank, MPI_INFO_NULL, &local));
  int localSize = 0, localRank = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(local, &localSize));
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_rank(local, &localRank));
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_split(MPI_COMM_WORLD, localRank, worldRank, &cross));
  int sizes[2] = {localSize, -localSize};
  PLAIT_MPI_RETURN_IF_ERROR(
      MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (sizes[0] != -sizes[1])
    return Status::errorf("the nodes hold different numbers of ranks ({} to {}): start the "
                          "same number of ranks on every node",
                          -sizes[1], sizes[0]);

  Calibration c;
  c.host = hostName();
  c.date = today();
  c.cpuModel = cpuModel();
  c.rank = uint32_t(worldRank);
  c.worldSize = uint32_t(worldSize);
  c.ranksPerNode = uint32_t(localSize);
  c.nodes = c.worldSize / c.ranksPerNode;
  c.blasThreads = openblas_get_num_threads();
  c.blasCore = openblas_get_corename();
  c.blasWarning = blasCoreWarning(c.blasCore);
  c.memoryBytesPerRank = uint64_t(::sysconf(_SC_PHYS_PAGES)) * uint64_t(::sysconf(_SC_PAGESIZE)) /
                         c.ranksPerNode / (64u << 20) * (64u << 20); // whole 64 MiB

  const bool quick = options.quick;
  const int reps = quick ? 3 : 5;

  // In rounds (as the kernel classes below), each GEMM keeping the median of its rounds.
  const int rounds = quick ? 1 : kRounds;
  const double target = quick ? 0.005 : 0.015; // seconds per repetition
  const std::vector<int> squares =
      quick ? std::vector<int>{64, 128, 256, 512}
            : std::vector<int>{64, 128, 256, 512, 1024, 1536, 2048};
  std::vector<std::array<int, 3>> shapes{{4, 4, 4}}; // the per-call overhead: a tiny GEMM
  for (int n : squares)
    shapes.push_back({n, n, n});
  for (const int *shape : kGptShapes)
    shapes.push_back({shape[0], shape[1], shape[2]});
  std::vector<std::vector<double>> seconds(shapes.size());
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < shapes.size(); ++i) {
      GemmRate rate;
      PLAIT_RETURN_IF_ERROR(measureGemm(shapes[i][0], shapes[i][1], shapes[i][2], reps,
                                        i == 0 ? 0.005 : target, rate));
      seconds[i].push_back(rate.seconds);
    }
  auto medianRate = [&](size_t i) {
    const auto &[m, n, k] = shapes[i];
    double t = median(seconds[i]);
    return GemmRate{m, n, k, 2.0 * m * n * k / t, t};
  };
  GemmRate tiny = medianRate(0);
  for (size_t i = 0; i < squares.size(); ++i)
    c.squareGemms.push_back(medianRate(1 + i));
  for (size_t i = 0; i < std::size(kGptShapes); ++i)
    c.gptGemms.push_back(medianRate(1 + squares.size() + i));
  c.launchOverhead = tiny.seconds;
  for (const GemmRate &rate : c.squareGemms)
    c.bestGemm = std::max(c.bestGemm, rate.flopsPerSecond);
  double gptFlops = 0, gptSeconds = 0;
  for (const GemmRate &rate : c.gptGemms) {
    gptFlops += 2.0 * rate.m * rate.n * rate.k;
    gptSeconds += rate.seconds;
  }
  c.gptGemm = gptFlops / gptSeconds;
  double netSeconds = gptSeconds - double(std::size(kGptShapes)) * c.launchOverhead;
  c.gptGemmNet = netSeconds > 0 ? gptFlops / netSeconds : c.gptGemm;

  // STREAM arrays: together (over the node's ranks) 4× the last-level cache, so that no
  // repetition finds its data in cache; at least 64 MiB each.
  c.streamBytes = options.streamBytes;
  if (c.streamBytes == 0 && quick)
    c.streamBytes = 16u << 20; // may fit in cache: quick is for tests, not for numbers
  if (c.streamBytes == 0) {
    long cache = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (cache <= 0)
      cache = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    uint64_t perArray = cache > 0 ? 4 * uint64_t(cache) / 3 / c.ranksPerNode : 0;
    c.streamBytes = std::max<uint64_t>(perArray, 64u << 20);
  }
  PLAIT_RETURN_IF_ERROR(
      measureStream(c.streamBytes, quick ? 3 : 5, c.copyBandwidth, c.triadBandwidth));

  PLAIT_RETURN_IF_ERROR(measureKernelClasses(quick, c.kernels));
  PLAIT_RETURN_IF_ERROR(measureThreadScaling(local, quick, c.threads));

  // The collectives go through plait's own communicator, with the algorithm plait-run
  // will use (--reduce-algorithm).
  std::unique_ptr<rt::Communicator> plait;
  PLAIT_RETURN_IF_ERROR(rt::mpi::makeWorldComm(plait, {options.reduce}));
  c.reduceAlgorithm = rt::mpi::reduceAlgorithmName(options.reduce);
  int node = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_rank(cross, &node));
  rt::RankGroups byNode, byLocalRank;
  PLAIT_RETURN_IF_ERROR(nodeGroups(node, localRank, int(c.nodes), localSize, byNode, byLocalRank));
  rt::CommGroup localGroup = 0, crossGroup = 0;
  PLAIT_RETURN_IF_ERROR(plait->group(byNode, localGroup));
  PLAIT_RETURN_IF_ERROR(plait->group(byLocalRank, crossGroup));
  PLAIT_RETURN_IF_ERROR(measureLink(*plait, localGroup, local, quick, c.intraNode, c.intraLink));
  PLAIT_RETURN_IF_ERROR(measureLink(*plait, crossGroup, cross, quick, c.interNode, c.interLink));
  PLAIT_RETURN_IF_ERROR(broadcastLinks(c));
  MPI_Comm_free(&local);
  MPI_Comm_free(&cross);
  out = std::move(c);
  return {};
}

ClusterSpec specFromCalibration(const Calibration &c, const std::string &name) {
  ClusterSpec spec;
  spec.name = name;
  spec.source = fmt::format("plait-calibrate on {}, {} ({} rank{}{})", c.host, c.date, c.worldSize,
                            c.worldSize == 1 ? "" : "s",
                            c.nodes > 1 ? fmt::format(" on {} nodes", c.nodes) : "");
  spec.nodes = c.nodes;
  spec.devicesPerNode = c.ranksPerNode;
  DeviceSpec &d = spec.device;
  d.kind = DeviceKind::Cpu;
  d.model = fmt::format("{}: one MPI rank, {} OpenBLAS thread{} ({} kernels)", c.cpuModel,
                        c.blasThreads, c.blasThreads == 1 ? "" : "s", c.blasCore);
  d.memoryBytes = c.memoryBytesPerRank;
  d.memoryBandwidth = significant(c.triadBandwidth);
  d.peakFlops[size_t(Dtype::Fp32)] = significant(c.bestGemm);
  auto efficiency = [&](double flopsPerSecond) {
    return std::clamp(std::round(flopsPerSecond / c.bestGemm * 1000) / 1000, 0.001, 1.0);
  };
  d.gemmEfficiency = efficiency(c.gptGemmNet);
  // By size: each square GEMM's rate net of the per-call overhead (which the matmul class
  // charges), and the GPT sample's GEMMs together at their mean multiply-adds.
  for (const GemmRate &g : c.squareGemms) {
    double net = g.seconds - c.launchOverhead;
    double macs = double(g.m) * g.n * g.k;
    d.gemmEfficiencyBySize[macs] = efficiency(net > 0 ? 2 * macs / net : g.flopsPerSecond);
  }
  if (!c.gptGemms.empty()) {
    double macs = 0;
    for (const GemmRate &g : c.gptGemms)
      macs += double(g.m) * g.n * g.k;
    d.gemmEfficiencyBySize.emplace(std::round(macs / double(c.gptGemms.size())),
                                   d.gemmEfficiency);
  }
  d.memoryEfficiency = 1.0; // memory_bandwidth is already the sustained triad rate
  d.launchOverhead = significant(c.launchOverhead);
  auto rounded = [](const Link &link) {
    return Link{significant(link.bandwidth), significant(link.latency)};
  };
  for (const KernelClassRates &k : c.kernels)
    d.kernels[k.name] = k.fit;
  if (const ThreadRates &t = c.threads; t.threads >= 2 && t.gemmAll > 0 && t.addAll > 0 &&
                                         t.geluAll > 0) {
    auto speedup = [&](double ratio) {
      return std::clamp(significant(ratio), 0.001, double(t.threads));
    };
    ThreadScaling &s = d.threads.emplace();
    s.count = t.threads;
    s.gemmSpeedup = speedup(t.gemmOne / t.gemmAll);
    // A memory-bound loop and a transcendental one: the mean of their speedups.
    s.elementSpeedup = speedup(0.5 * (t.addOne / t.addAll + t.geluOne / t.geluAll));
    s.regionOverhead = significant(std::max(t.region, 1e-9));
  }
  // Per kind: rank 0's own groups' fits (rank 0 writes the spec).
  auto withKinds = [&](Link link, const std::vector<CollectiveRates> &rates) {
    for (const CollectiveRates &r : rates)
      if (r.fit.bandwidth > 0 && r.fit.latency > 0)
        link.byKind[size_t(r.collective)] =
            LinkFit{significant(r.fit.bandwidth), significant(r.fit.latency)};
    return link;
  };
  if (c.intraLink)
    spec.intraNode = withKinds(rounded(*c.intraLink), c.intraNode);
  if (c.interLink)
    spec.interNode = withKinds(rounded(*c.interLink), c.interNode);
  return spec;
}

std::string kernelClassTable(const std::vector<KernelClassRates> &kernels) {
  std::string out =
      "  class           kernel                        elements    rows       us a call\n";
  for (const KernelClassRates &k : kernels) {
    for (const KernelClassRates::Sample &s : k.samples)
      out += fmt::format("  {:<15} {:<26} {:>9} {:>7} {:>14.3f}\n", k.name, s.kernel, s.elements,
                         s.rows ? std::to_string(s.rows) : "", s.seconds * 1e6);
    out += fmt::format("  {:<15} fit: {:.4g} ns/element + {:.3f} us{}\n", k.name,
                       k.fit.nsPerElement, k.fit.overhead * 1e6,
                       k.fit.nsPerRow > 0 ? fmt::format(" + {:.4g} ns/row", k.fit.nsPerRow) : "");
  }
  return out;
}

std::string calibrationTable(const Calibration &c) {
  std::string out;
  out += fmt::format("plait-calibrate on {} ({}), {}: {} rank{} = {} node{} x {}, {} OpenBLAS "
                     "thread{} per rank, OpenBLAS {} kernels\n",
                     c.host, c.cpuModel, c.date, c.worldSize, c.worldSize == 1 ? "" : "s", c.nodes,
                     c.nodes == 1 ? "" : "s", c.ranksPerNode, c.blasThreads,
                     c.blasThreads == 1 ? "" : "s", c.blasCore);
  if (!c.blasWarning.empty())
    out += "warning: " + c.blasWarning + "\n";
  out += "(every rank at once; each number is the median over repetitions of the slowest "
         "rank, and in a full run the median of 4 rounds)\n\n";
  out += "fp32 GEMM (cblas_sgemm)        GFLOP/s per rank\n";
  for (const GemmRate &g : c.squareGemms)
    out += fmt::format("  {:>5} x {:>5} x {:>5}        {:10.2f}\n", g.m, g.n, g.k,
                       g.flopsPerSecond / 1e9);
  out += fmt::format("  best                         {:10.2f}\n", c.bestGemm / 1e9);
  for (const GemmRate &g : c.gptGemms)
    out += fmt::format("  gpt {:>3} x {:>3} x {:>3}          {:10.2f}  ({:.2f} us a call)\n", g.m,
                       g.n, g.k, g.flopsPerSecond / 1e9, g.seconds * 1e6);
  out +=
      fmt::format("  gpt sample GEMMs together      {:10.2f}  = {:.1f}% of best ({:.1f}% "
                  "without the per-call overhead)\n",
                  c.gptGemm / 1e9, 100 * c.gptGemm / c.bestGemm, 100 * c.gptGemmNet / c.bestGemm);
  out += fmt::format("kernel call overhead (4x4x4 GEMM) {:8.3f} us\n", c.launchOverhead * 1e6);
  out += fmt::format("memory bandwidth ({} MiB arrays)   copy {:.2f} GB/s, triad {:.2f} GB/s "
                     "per rank\n",
                     c.streamBytes >> 20, c.copyBandwidth / 1e9, c.triadBandwidth / 1e9);
  auto links = [&](const char *what, const std::vector<CollectiveRates> &rates,
                   const std::optional<Link> &link) {
    if (rates.empty())
      return;
    out += fmt::format("\nMPI collectives {} ({} ranks, through plait's communicator, "
                       "--reduce-algorithm {}): median time per buffer size\n",
                       what, rates.front().ranks, c.reduceAlgorithm);
    out += "  bytes        ";
    for (const CollectiveRates &r : rates)
      out += fmt::format("{:>16}", collectiveName(r.collective));
    out += "\n";
    for (size_t i = 0; i < rates.front().samples.size(); ++i) {
      out += fmt::format("  {:<12} ", rates.front().samples[i].bytes);
      for (const CollectiveRates &r : rates)
        out += fmt::format("{:>13.2f} us", r.samples[i].seconds * 1e6);
      out += "\n";
    }
    for (const CollectiveRates &r : rates)
      out += fmt::format("  fit {:<15} latency {:8.3f} us per step, bus bandwidth {:8.3f} GB/s\n",
                         collectiveName(r.collective), r.fit.latency * 1e6, r.fit.bandwidth / 1e9);
    if (link)
      out += fmt::format("  fit all three       latency {:8.3f} us per step, bus bandwidth "
                         "{:8.3f} GB/s\n",
                         link->latency * 1e6, link->bandwidth / 1e9);
  };
  if (!c.kernels.empty()) {
    out += "\nplait's CPU kernels (f32), per class: time of one call = overhead + elements x "
           "ns/element + rows x ns/row\n(matmul: rows are 4x4x4 GEMMs of a batch; fused: the "
           "fused kernel interpreted, rows are reduced rows)\n";
    out += kernelClassTable(c.kernels);
  }
  if (const ThreadRates &t = c.threads; t.threads >= 2) {
    out += fmt::format("\nplait's CPU kernels on 1 thread and on {} (plait-run --threads; rank 0 "
                       "alone on its node), one call:\n",
                       t.threads);
    auto row = [&](const std::string &what, double one, double all) {
      out += fmt::format("  {:<36} {:10.3f} us -> {:10.3f} us   speedup {:.2f}\n", what,
                         one * 1e6, all * 1e6, one / all);
    };
    row(fmt::format("GEMM {0} x {0} x {0} (gemmRowMajor)", t.gemmSize), t.gemmOne, t.gemmAll);
    row(fmt::format("add, {} elements", t.elements), t.addOne, t.addAll);
    row(fmt::format("gelu, {} elements", t.elements), t.geluOne, t.geluAll);
    out += fmt::format("  a split call's hand-out (empty chunks) {:10.3f} us\n", t.region * 1e6);
  }
  links("within a node", c.intraNode, c.intraLink);
  links("across nodes", c.interNode, c.interLink);
  return out;
}

} // namespace plait::cluster
