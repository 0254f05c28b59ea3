// The kernels' thread pool (Parallel.h). Workers wait for a region by spinning briefly on an
// epoch counter (a step's kernels come microseconds apart), then sleep on a condition
// variable; the caller wakes sleepers only when there are any. A region's chunks are fixed
// by the caller: worker w runs chunk w + 1, so the split depends only on the thread count.
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>
#include <fmt/format.h>
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PLAIT_PAUSE() _mm_pause()
#else
#define PLAIT_PAUSE() std::this_thread::yield()
#endif

namespace plait::rt::cpu {
namespace {

/// How long an idle worker spins before it sleeps, and how long a caller spins on its
/// workers before it yields between checks.
constexpr auto kSpin = std::chrono::microseconds(50);

thread_local bool tInRegion = false;

class Pool {
public:
  int threads() const { return threads_; }

  void resize(int threads) {
    stop();
    threads_ = threads;
    stopping_ = false;
    // The epoch the workers start from is read here, not by them: a region may begin before
    // a new thread first runs.
    const uint64_t start = epoch_.load(std::memory_order_acquire);
    for (int w = 0; w + 1 < threads; ++w)
      workers_.emplace_back([this, w, start] { work(w, start); });
  }

  /// False when another thread's region holds the pool: the caller then runs inline.
  bool tryRun(int64_t n, int64_t chunks, int64_t unit, const detail::ChunkFn &fn) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock())
      return false;
    n_ = n;
    chunks_ = chunks;
    unit_ = unit;
    fn_ = &fn;
    pending_.store(int(workers_.size()), std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_);
      wake_.notify_all();
    }
    runChunk(0);
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
      PLAIT_PAUSE();
      if ((spins & 255) == 255 && std::chrono::steady_clock::now() - start > kSpin)
        std::this_thread::yield();
    }
    return true;
  }

private:
  void runChunk(int64_t c) {
    if (c >= chunks_)
      return;
    const int64_t units = (n_ + unit_ - 1) / unit_;
    const int64_t begin = std::min(n_, c * units / chunks_ * unit_);
    const int64_t end = std::min(n_, (c + 1) * units / chunks_ * unit_);
    if (begin >= end)
      return;
    tInRegion = true;
    fn_->call(fn_->object, c, begin, end);
    tInRegion = false;
  }

  void work(int w, uint64_t seen) {
    for (;;) {
      if (!waitForEpoch(seen))
        return;
      seen = epoch_.load(std::memory_order_acquire);
      runChunk(w + 1);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  /// Spins, then sleeps, until the epoch moves past `seen`; false when stopping.
  bool waitForEpoch(uint64_t seen) {
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      if (stopping_.load(std::memory_order_acquire))
        return false;
      if (epoch_.load(std::memory_order_acquire) != seen)
        return true;
      PLAIT_PAUSE();
      if ((spins & 255) == 255 && std::chrono::steady_clock::now() - start > kSpin)
        break;
    }
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    std::unique_lock<std::mutex> lock(sleep_);
    wake_.wait(lock, [&] {
      return stopping_.load(std::memory_order_seq_cst) ||
             epoch_.load(std::memory_order_seq_cst) != seen;
    });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    return !stopping_.load(std::memory_order_acquire);
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(sleep_);
      stopping_ = true;
      wake_.notify_all();
    }
    for (std::thread &t : workers_)
      t.join();
    workers_.clear();
  }

  int threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the region running on the pool
  std::mutex sleep_; // with wake_: sleeping workers
  std::condition_variable wake_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  // The region, published by epoch_'s increment.
  int64_t n_ = 0, chunks_ = 0, unit_ = 1;
  const detail::ChunkFn *fn_ = nullptr;
};

/// Never destroyed: workers may still be asleep in it while the process exits.
Pool &pool() {
  static Pool *p = new Pool();
  return *p;
}

std::atomic<int> gThreads{1};
std::atomic<bool> gBlasSingle{false};

} // namespace

int kernelThreads() { return gThreads.load(std::memory_order_relaxed); }

void setKernelThreads(int threads) {
  threads = std::clamp(threads, 1, kMaxKernelThreads);
  openblas_set_num_threads(1);
  gBlasSingle = true;
  if (threads != pool().threads())
    pool().resize(threads);
  gThreads = threads;
}

int defaultKernelThreads() {
  int cpus = int(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  int allowed = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : cpus;
  if (cpus <= 0)
    cpus = std::max(allowed, 1);
  if (allowed < cpus) // bound by the launcher: this process's own CPUs
    return std::max(allowed, 1);
  int local = 1;
  if (const char *s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = std::max(std::atoi(s), 1);
  return std::max(allowed / local, 1);
}

int64_t parallelChunks(int64_t n, int64_t grain) {
  const int threads = kernelThreads();
  if (threads <= 1 || tInRegion || n < 2 * std::max<int64_t>(grain, 1))
    return 1;
  return std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
}

namespace detail {
void runChunks(int64_t n, int64_t chunks, int64_t unit, const ChunkFn &fn) {
  unit = std::max<int64_t>(unit, 1);
  chunks = std::min(chunks, (n + unit - 1) / unit);
  if (chunks <= 1 || !pool().tryRun(n, chunks, unit, fn))
    fn.call(fn.object, 0, 0, n);
}
} // namespace detail

std::string kernelThreadsNote() {
  const int threads = kernelThreads();
  const char *blas = gBlasSingle ? ", OpenBLAS on one thread" : "";
  if (threads == 1)
    return fmt::format("threads: 1 per rank for the CPU kernels (none split{}; --threads)", blas);
  return fmt::format("threads: {} per rank for the CPU kernels (GEMMs and the larger kernels "
                     "split across them{}; --threads)",
                     threads, blas);
}

} // namespace plait::rt::cpu
