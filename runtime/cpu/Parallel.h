// The CPU kernels' threads: one process-wide pool that splits a kernel's independent work
// (GEMM rows or columns, attention heads, optimizer elements, fused tiles) into contiguous
// chunks, one per thread, the calling thread taking the first. Until setKernelThreads() is
// called the pool has one thread and every kernel runs as it always did; plait-run sets it
// (--threads, default: this rank's share of the CPUs it may run on).
//
// Each output element is computed by one thread, in the same order as on one thread (a sum
// over a split axis stays on one thread), so most kernels give the same bits on any number
// of threads. Two do not, and say so where they split: a GEMM's rows are separate OpenBLAS
// calls, which OpenBLAS may block and round differently (Gemm.cpp), and attention_grad's
// row blocks shrink when its heads are split (AttentionKernels.cpp). A work size below which
// a kernel is not split (its grain) keeps small steps, where waking a thread costs more than
// it saves, as they were.
//
// A region inside a region (a GEMM called from an attention head's chunk) runs inline on the
// thread that reached it. No allocation happens in a region: the work is passed by reference.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace plait::rt::cpu {

/// The most threads setKernelThreads takes.
inline constexpr int kMaxKernelThreads = 256;

/// Grains: the work below which a chunk is not worth a thread. Elements of a memory-bound loop
/// (elementwise, row-wise kernels): about 5-20 us. 65536 (about 40 us, the time it can take to
/// wake a sleeping worker here) left a 12-layer GPT's 65K-element kernels on one thread, and
/// each of them, reading what both threads' halves of the kernel before had written, ran up
/// to 5x slower than on one thread alone (bench/README.md): 16384 made that step 6% faster.
inline constexpr int64_t kElementGrain = 16384;
/// Multiply-adds (GEMMs, attention heads):
inline constexpr int64_t kMultiplyAddGrain = int64_t(1) << 21;

/// Items per chunk when a chunk should do `chunkWork` and one item does `itemWork` (rows of
/// `itemWork` elements, say): chunkWork / itemWork, at least 1.
inline int64_t grainFor(int64_t chunkWork, int64_t itemWork) {
  return std::max<int64_t>(1, chunkWork / std::max<int64_t>(itemWork, 1));
}

/// The threads the kernels split their work over (1 until setKernelThreads).
int kernelThreads();

/// Sets the kernels' threads (clamped to [1, kMaxKernelThreads]) and makes OpenBLAS
/// single-threaded: its GEMMs are split here, across the same threads, instead of by
/// OpenBLAS's own pool (which would spin beside this one on the same cores). Not to be called
/// inside a region.
void setKernelThreads(int threads);

/// The default for plait-run: the CPUs this process may run on, divided among the ranks that
/// share this node (OMPI_COMM_WORLD_LOCAL_SIZE) unless the launcher already bound the process
/// to fewer CPUs than the node has. At least 1.
int defaultKernelThreads();

/// How many chunks parallelFor(n, grain, ...) splits into here: 1 on one thread, inside a
/// region, or for less than two grains of work; else min(threads, n / grain).
int64_t parallelChunks(int64_t n, int64_t grain);

namespace detail {
/// A type-erased reference to a callable (no allocation): fn(chunk, begin, end).
struct ChunkFn {
  void *object;
  void (*call)(void *object, int64_t chunk, int64_t begin, int64_t end);
};
/// Runs `fn` over `chunks` contiguous chunks of [0, n) whose boundaries are multiples of
/// `unit` (except n), on the pool; chunk 0 on the calling thread.
void runChunks(int64_t n, int64_t chunks, int64_t unit, const ChunkFn &fn);
} // namespace detail

/// Calls fn(chunk, begin, end) for parallelChunks(n, grain) contiguous chunks covering
/// [0, n) exactly once, concurrently, and returns when all are done. Chunk boundaries fall on
/// multiples of `unit` (a tile, a row). With one chunk: fn(0, 0, n) on this thread.
template <typename Fn>
void parallelFor(int64_t n, int64_t grain, Fn &&fn, int64_t unit = 1) {
  if (n <= 0)
    return;
  const int64_t chunks = parallelChunks(n, grain);
  if (chunks <= 1) {
    fn(int64_t(0), int64_t(0), n);
    return;
  }
  using F = std::remove_reference_t<Fn>;
  detail::ChunkFn erased{const_cast<void *>(static_cast<const void *>(&fn)),
                         [](void *object, int64_t chunk, int64_t begin, int64_t end) {
                           (*static_cast<F *>(object))(chunk, begin, end);
                         }};
  detail::runChunks(n, chunks, unit, erased);
}

/// One line for the run summary: the kernels' threads and how OpenBLAS runs.
std::string kernelThreadsNote();

} // namespace plait::rt::cpu
