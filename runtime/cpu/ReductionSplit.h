// How a reduction (reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod) splits its
// walk across threads: a pure function of its input's shape and reduced axes, shared by the
// kernels (ReductionKernels.cpp) and the cost model (passes/analysis/OpCost.cpp), so the
// model splits exactly what the runtime splits.
//
// The walk runs over the input's dimensions merged as its row plan merges them (Broadcast.h):
// size-1 dimensions dropped, neighbours that are both reduced or both kept joined, so the
// merged shape alternates runs of kept and reduced dimensions. When the outermost run is
// kept (row sums, a [K, R, ...] input), each chunk takes a contiguous range of its indices:
// it owns whole accumulators, adds into each in the order one thread would (the same bits on
// any number of threads), and reads one contiguous block of the input.
//
// When the outermost run is reduced instead (a bias gradient's column sums over a [R, K]
// input, batch-norm statistics over [N, C, HW], a whole-tensor sum) and the input is large
// against its results (reductionSlots), the outer run is cut into kReductionSlots fixed
// blocks of rows, each summed into its own copy of the accumulators, and the copies are
// combined in block order after: the blocks follow the shapes alone, not the thread count,
// so the result has the same bits on any number of threads (max and min exactly those of one
// walk; sums and products within rounding of it). A chunk of blocks reads one contiguous part
// of the input, mostly what the same thread's chunk of the kernel before wrote. Splitting a
// kept run further in would not: measured on the 2-core VM, such a chunk, reading a strided
// slice through all of the input, ran 1.2-5x slower than one thread (bench/README.md,
// "`where` and reductions split").
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {

/// Chunk boundaries of a split of a reduction that reduces nothing (every run kept, merged
/// into one) fall on multiples of this many accumulators (128 bytes of doubles), so that two
/// threads never write one cache line.
inline constexpr int64_t kReductionColumnUnit = 16;

struct ReductionSplit {
  int64_t items = 1; // the outermost run's extent: what the chunks share out
  int64_t grain = 1; // items per chunk at least: kElementGrain elements of input
  int64_t unit = 1;  // chunk boundaries' multiple
  /// The chunks the split can make before the threads bound them (1: no split).
  int64_t maxChunks() const { return items / grain < 2 ? 1 : items / grain; }
};

/// The split of a walk over `rank` merged dimensions `runs` (kept(i): run i is kept) of
/// `numel` input elements: the outermost run when it is kept, in chunks of at least a grain
/// (kElementGrain input elements); none (items 1) otherwise. Allocates nothing: the kernels
/// call it on every call.
template <typename Kept>
ReductionSplit reductionSplit(const int64_t *runs, size_t rank, Kept &&kept, int64_t numel) {
  ReductionSplit split;
  if (rank == 0 || !kept(size_t(0)) || runs[0] < 2)
    return split;
  split.items = runs[0];
  split.grain = grainFor(kElementGrain, numel / runs[0]);
  // A run that is the whole walk (nothing reduced) keeps its chunks' accumulators apart.
  if (rank == 1) {
    split.unit = kReductionColumnUnit;
    split.grain = (split.grain + split.unit - 1) / split.unit * split.unit;
  }
  return split;
}

/// Accumulator copies a reduction whose outermost run is reduced keeps (one per block of its
/// rows; 1: one walk, no copies). Only for at least kReductionSlotsMinElements of input and
/// when the copies are at most 1/kReductionSlotsInputPerCopy of it. Measured on the 2-core
/// VM against one walk on 2 threads: a GPT's layer-norm gradients, 1024 x 256 -> 256, took
/// 55 us a kernel in blocks against 39 us (waking the other thread and reading what it had
/// just written cost more than half the walk saved); 8192 x 1024 -> 1024 took 450 us
/// against 1,100. [8, 32768] -> [32768] (a position embedding's gradient) would spend
/// longer filling and adding 4 copies of 32,768 than walking its 8 rows.
inline constexpr int64_t kReductionSlots = 4;
inline constexpr int64_t kReductionSlotsMinElements = int64_t(1) << 20;
inline constexpr int64_t kReductionSlotsInputPerCopy = 8;

template <typename Kept>
int64_t reductionSlots(const int64_t *runs, size_t rank, Kept &&kept, int64_t numel,
                       int64_t results) {
  if (rank == 0 || kept(size_t(0)) || runs[0] < 2 || numel < kReductionSlotsMinElements ||
      results > numel / (kReductionSlots * kReductionSlotsInputPerCopy))
    return 1;
  return runs[0] < kReductionSlots ? runs[0] : kReductionSlots;
}

/// The rows [begin, end) of block `b` of `slots` over `rows` rows: as even as can be.
inline void reductionBlock(int64_t rows, int64_t slots, int64_t b, int64_t &begin,
                           int64_t &end) {
  const int64_t base = rows / slots, extra = rows % slots;
  begin = b * base + (b < extra ? b : extra);
  end = begin + base + (b < extra ? 1 : 0);
}

/// The merged runs of an input of `shape` reduced over `axes` (empty: every axis), as the
/// kernel's row plan merges them: size-1 dimensions dropped, equal neighbours joined. False
/// for an axis out of range (the kernel rejects it).
inline bool reductionRuns(const std::vector<int64_t> &shape, const std::vector<int64_t> &axes,
                          std::vector<int64_t> &runs, std::vector<bool> &kept) {
  const int64_t rank = int64_t(shape.size());
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return false;
    reduced[size_t(axis < 0 ? axis + rank : axis)] = true;
  }
  runs.clear();
  kept.clear();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!runs.empty() && kept.back() == !reduced[d]) {
      runs.back() *= shape[d];
    } else {
      runs.push_back(shape[d]);
      kept.push_back(!reduced[d]);
    }
  }
  return true;
}

} // namespace plait::rt::cpu
