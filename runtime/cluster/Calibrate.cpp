// plait-calibrate's measurements. Every rank measures at once (as in a data-parallel step),
// each repetition's time is the slowest rank's, and each measurement keeps the median of its
// repetitions.
#include "runtime/cluster/Calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <vector>

#include <cblas.h>
#include <fmt/format.h>

#include "runtime/comm/MpiStatus.h"

namespace plait::cluster {

using rt::Status;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
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

// One collective at each buffer size from `minBytes` to `maxBytes` (×4), on `comm`.
Status measureCollective(MPI_Comm comm, Collective collective, uint64_t maxBytes, bool quick,
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
    auto run = [&]() -> Status {
      switch (collective) {
      case Collective::AllReduce:
        PLAIT_MPI_RETURN_IF_ERROR(
            MPI_Allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, comm));
        break;
      case Collective::AllGather:
        PLAIT_MPI_RETURN_IF_ERROR(MPI_Allgather(send.data(), int(shard), MPI_FLOAT, recv.data(),
                                                int(shard), MPI_FLOAT, comm));
        break;
      case Collective::ReduceScatter:
        PLAIT_MPI_RETURN_IF_ERROR(MPI_Reduce_scatter_block(send.data(), recv.data(), int(shard),
                                                           MPI_FLOAT, MPI_SUM, comm));
        break;
      }
      return {};
    };
    PLAIT_RETURN_IF_ERROR(timeOnAllRanks(comm, quick ? 2 : 5, reps, run, seconds));
    out.samples.push_back({collective, ranks, bytes, seconds});
  }
  out.fit = fitRing(out.samples);
  return {};
}

// The three collectives on `comm` and one link fitted over all of them; nothing when `comm`
// has one rank.
Status measureLink(MPI_Comm comm, bool quick, std::vector<CollectiveRates> &rates,
                   std::optional<Link> &link) {
  int size = 0;
  PLAIT_MPI_RETURN_IF_ERROR(MPI_Comm_size(comm, &size));
  if (size < 2)
    return {};
  const uint64_t maxBytes = quick ? (1u << 20) : (64u << 20);
  std::vector<CollectiveSample> all;
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter}) {
    CollectiveRates r;
    PLAIT_RETURN_IF_ERROR(measureCollective(comm, c, maxBytes, quick, r));
    all.insert(all.end(), r.samples.begin(), r.samples.end());
    rates.push_back(std::move(r));
  }
  link = fitRing(all);
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

// A warning when OpenBLAS runs generic kernels on a CPU with AVX2 or AVX-512: its CPU
// detection does not know every (virtualised) model, and GEMMs are then several times slower.
std::string blasCoreWarning(const std::string &core) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  bool avx512 = false, avx2 = false;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      avx512 = line.find(" avx512f") != std::string::npos;
      avx2 = line.find(" avx2") != std::string::npos;
      break;
    }
  const bool generic = core == "Prescott" || core == "Core2" || core == "Nehalem" ||
                       core == "Sandybridge" || core == "Katmai" || core == "Penryn";
  if (!generic || !(avx512 || avx2))
    return "";
  std::string suggested = avx512 ? "SkylakeX" : "Haswell";
  return fmt::format("OpenBLAS chose its {} kernels on a CPU with {}: setting "
                     "OPENBLAS_CORETYPE={} may make GEMMs several times faster",
                     core, avx512 ? "AVX-512" : "AVX2", suggested);
}

std::string hostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0)
    return "unknown-host";
  return name;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d", &utc);
  return text;
}

// Rounds `x` to 4 significant digits, what a measurement can claim: the double nearest that
// decimal, which the spec then prints as written.
double significant(double x) { return std::strtod(fmt::format("{:.4g}", x).c_str(), nullptr); }

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
  const int reps = quick ? 3 : 7;

  // Per-kernel overhead: a GEMM too small to cost anything but its call.
  GemmRate tiny;
  PLAIT_RETURN_IF_ERROR(measureGemm(4, 4, 4, reps, 0.005, tiny));
  c.launchOverhead = tiny.seconds;

  const double target = quick ? 0.005 : 0.05; // seconds per repetition
  for (int n :
       quick ? std::vector<int>{128, 256, 512} : std::vector<int>{256, 512, 1024, 1536, 2048}) {
    GemmRate rate;
    PLAIT_RETURN_IF_ERROR(measureGemm(n, n, n, reps, target, rate));
    c.bestGemm = std::max(c.bestGemm, rate.flopsPerSecond);
    c.squareGemms.push_back(rate);
  }
  double gptFlops = 0, gptSeconds = 0;
  for (const auto &shape : kGptShapes) {
    GemmRate rate;
    PLAIT_RETURN_IF_ERROR(measureGemm(shape[0], shape[1], shape[2], reps, target, rate));
    gptFlops += 2.0 * shape[0] * shape[1] * shape[2];
    gptSeconds += rate.seconds;
    c.gptGemms.push_back(rate);
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

  PLAIT_RETURN_IF_ERROR(measureLink(local, quick, c.intraNode, c.intraLink));
  PLAIT_RETURN_IF_ERROR(measureLink(cross, quick, c.interNode, c.interLink));
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
  d.gemmEfficiency = std::clamp(std::round(c.gptGemmNet / c.bestGemm * 1000) / 1000, 0.001, 1.0);
  d.memoryEfficiency = 1.0; // memory_bandwidth is already the sustained triad rate
  d.launchOverhead = significant(c.launchOverhead);
  auto rounded = [](const Link &link) {
    return Link{significant(link.bandwidth), significant(link.latency)};
  };
  if (c.intraLink)
    spec.intraNode = rounded(*c.intraLink);
  if (c.interLink)
    spec.interNode = rounded(*c.interLink);
  return spec;
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
         "rank)\n\n";
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
    out += fmt::format("\nMPI collectives {} ({} ranks): median time per buffer size\n", what,
                       rates.front().ranks);
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
  links("within a node", c.intraNode, c.intraLink);
  links("across nodes", c.interNode, c.interLink);
  return out;
}

} // namespace plait::cluster
