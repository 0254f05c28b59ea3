// plait-bench-reduce [MAX_MIB] [REPS] [f32|bf16|f16]: times float all-reduces (in place, as
// plans run them) and reduce-scatters through plait's MPI communicator, summed by the pairwise
// exchange and by Open MPI's own non-blocking collectives, alternating, at buffer sizes from
// 1 KiB to MAX_MIB (default 64). Each time is the median over REPS (default 7) of the slowest
// rank's start-to-wait; rank 0 prints a Markdown table. Run under mpirun
// (bench/mpi_reductions.py does).
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/cluster/KernelSamples.h"
#include "runtime/comm/Mpi.h"

using namespace plait::rt;

namespace {

double seconds(Communicator &comm, CommGroup group, const CollectiveArgs &args) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto start = std::chrono::steady_clock::now();
  CommRequest request = 0;
  Status s = comm.start(group, args, request);
  if (s.ok())
    s = comm.wait(request);
  if (!s.ok()) {
    std::fprintf(stderr, "plait-bench-reduce: %s\n", s.message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double local = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

} // namespace

int main(int argc, char **argv) {
  uint64_t maxMiB = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  DType dtype = DType::F32; // f32, bf16 (bf16-mixed gradients), f16
  if (argc > 3 && !parseDTypeName(argv[3], dtype)) {
    std::fprintf(stderr, "plait-bench-reduce: unknown dtype '%s'\n", argv[3]);
    return 1;
  }
  const size_t element = dtypeSize(dtype);
  if (!mpi::initialize().ok())
    return 2;
  std::unique_ptr<Communicator> pairwise, library;
  if (!mpi::makeWorldComm(pairwise, {mpi::ReduceAlgorithm::Pairwise}).ok() ||
      !mpi::makeWorldComm(library, {mpi::ReduceAlgorithm::Mpi}).ok())
    return 2;
  const uint32_t p = pairwise->size();
  RankGroups world;
  world.groupSize = p;
  for (uint32_t r = 0; r < p; ++r)
    world.ranks.push_back(r);
  CommGroup gp = 0, gl = 0;
  if (!pairwise->group(world, gp).ok() || !library->group(world, gl).ok())
    return 2;
  if (pairwise->rank() == 0) {
    std::printf("%u ranks, %s; median of %d of the slowest rank's start-to-wait, the two "
                "algorithms alternating\n\n",
                p, dtypeName(dtype), reps);
    std::printf("| collective | buffer | Open MPI | pairwise | Open MPI / pairwise | pairwise "
                "bus GB/s |\n|---|---:|---:|---:|---:|---:|\n");
  }
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::ReduceScatter})
    for (uint64_t bytes = 1024; bytes <= (maxMiB << 20); bytes *= 4) {
      uint64_t n = bytes / element / p * p;
      std::vector<float> values(n);
      for (uint64_t i = 0; i < n; ++i)
        values[i] = float(i % 97) * 0.25f;
      std::vector<uint8_t> send(n * element),
          recv((kind == CollectiveKind::AllReduce ? n : n / p) * element);
      for (uint64_t i = 0; i < n; ++i) {
        if (dtype == DType::F32)
          std::memcpy(send.data() + 4 * i, &values[i], 4);
        else {
          uint16_t h = dtype == DType::BF16 ? floatToBf16(values[i]) : floatToF16(values[i]);
          std::memcpy(send.data() + 2 * i, &h, 2);
        }
      }
      CollectiveArgs args;
      args.kind = kind;
      args.dtype = dtype;
      args.count = kind == CollectiveKind::AllReduce ? n : n / p;
      // Plans reduce their gradient buckets in place (MemoryPlan's collective aliases).
      args.send = kind == CollectiveKind::AllReduce ? recv.data() : send.data();
      args.recv = recv.data();
      std::vector<double> tp, tl;
      for (int r = 0; r < reps + 1; ++r) { // the first of each: warm-up
        double a = seconds(*pairwise, gp, args), b = seconds(*library, gl, args);
        if (r > 0) {
          tp.push_back(a);
          tl.push_back(b);
        }
      }
      double mp = plait::cluster::median(tp), ml = plait::cluster::median(tl);
      // The ring model's bus bandwidth (CommModel.h): bytes each rank sends over the time.
      double factor = kind == CollectiveKind::AllReduce ? 2.0 * (p - 1) / p : double(p - 1) / p;
      if (pairwise->rank() == 0)
        std::printf("| %s | %s | %.3f ms | %.3f ms | %.2f | %.2f |\n", collectiveKindName(kind),
                    n * element >= (1u << 20)
                        ? (std::to_string(n * element >> 20) + " MiB").c_str()
                        : (std::to_string(n * element >> 10) + " KiB").c_str(),
                    ml * 1e3, mp * 1e3, ml / mp, factor * double(n * element) / mp / 1e9);
    }
  pairwise.reset();
  library.reset();
  mpi::finalize();
  return 0;
}
