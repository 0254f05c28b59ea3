// Reduction kernels: reduce_{sum,mean,max,min,prod} over a set of axes, argmax and argmin,
// top_k.
// bf16/f16 inputs are read element by element widened to f32 (no f32 copy), and give the
// bits the f32 kernel gives on their widened copy.
// Float compares in branch-free selects (clamps, NaN-propagating max) only vectorise when
// the compiler may assume FP operations do not trap; plait never unmasks FP exceptions, so
// this changes no result (it is clang's default).
#pragma GCC optimize("no-trapping-math")
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/cpu/Broadcast.h"
#include "runtime/cpu/KernelFamilies.h"
#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/ReductionSplit.h"
#include "runtime/cpu/VectorMath.h"

namespace plait::rt::cpu {
namespace {

/// Accumulator of sums and products: double for floats (f32 sums over long axes keep their
/// precision), and uint64 for integers so that overflow wraps instead of being undefined.
template <typename T> using SumAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

struct Sum {
  static constexpr const char *kName = "reduce_sum";
  template <typename T> using Acc = SumAcc<T>;
  template <typename T> static Acc<T> identity() { return 0; }
  template <typename T> static Acc<T> combine(Acc<T> acc, T x) { return acc + Acc<T>(x); }
  /// Two partial results (of blocks of rows: ReductionSplit.h reductionSlots) as one.
  template <typename A> static A merge(A a, A b) { return a + b; }
};
struct Mean : Sum {
  static constexpr const char *kName = "reduce_mean";
};
struct Prod {
  static constexpr const char *kName = "reduce_prod";
  template <typename T> using Acc = SumAcc<T>;
  template <typename T> static Acc<T> identity() { return 1; }
  template <typename T> static Acc<T> combine(Acc<T> acc, T x) { return acc * Acc<T>(x); }
  template <typename A> static A merge(A a, A b) { return a * b; }
};
/// Max and min propagate NaN (once the accumulator is NaN it stays NaN), as PyTorch does.
struct Max {
  static constexpr const char *kName = "reduce_max";
  template <typename T> using Acc = T;
  template <typename T> static T identity() {
    if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  template <typename T> static T combine(T acc, T x) { return (x > acc || x != x) ? x : acc; }
  template <typename T> static T merge(T a, T b) { return combine(a, b); }
};
struct Min {
  static constexpr const char *kName = "reduce_min";
  template <typename T> using Acc = T;
  template <typename T> static T identity() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
  template <typename T> static T combine(T acc, T x) { return (x < acc || x != x) ? x : acc; }
  template <typename T> static T merge(T a, T b) { return combine(a, b); }
};

/// target[i] += row[i] over a row of inputs that each add to their own sum (a reduction over
/// an outer axis, such as a bias gradient's sum over the batch); E reads the elements
/// (KernelSupport.h: bf16/f16 widen to f32).
template <typename E, typename Acc>
PLAIT_SIMD_CLONES void addRowInto(Acc *target, const typename E::Stored *row, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    target[i] += Acc(E::load(row[i]));
}

/// The sum of a contiguous row of f32 values (or of bf16/f16 ones widened: the same bits as
/// sumFloats on their widened copy).
template <typename E> PLAIT_SIMD_CLONES double sumRow(const typename E::Stored *row, int64_t n) {
  return blockedIndexSum<float>(n, [&](int64_t i) { return E::load(row[i]); });
}

/// The split of a reduction's row plan (operand 0 its accumulators, 0-strided along the
/// reduced dimensions): its dimensions are the merged runs ReductionSplit.h takes.
ReductionSplit planReductionSplit(const BroadcastPlan<2> &plan) {
  return reductionSplit(plan.shape.data(), plan.shape.size(),
                        [&](size_t d) { return plan.strides[0][d] != 0; }, plan.numel);
}
int64_t planReductionSlots(const BroadcastPlan<2> &plan, int64_t results) {
  return reductionSlots(plan.shape.data(), plan.shape.size(),
                        [&](size_t d) { return plan.strides[0][d] != 0; }, plan.numel, results);
}

/// Normalises `axes` (empty: every axis) into a per-dimension mask and computes the shape
/// the output must have and the input's shape with the reduced dimensions set to 1.
Status reducedShape(std::string_view kernel, ShapeRef shape, ShapeRef axes, bool keepdims,
                    Dims &outShape, Dims &keptShape) {
  int64_t rank = (int64_t)shape.size();
  std::array<bool, kMaxRank> reduced;
  reduced.fill(axes.empty());
  for (int64_t axis : axes) {
    int64_t d;
    PLAIT_RETURN_IF_ERROR(normalizeAxis(kernel, axis, rank, d));
    if (reduced[d])
      return Status::errorf("{}: axis {} is repeated", kernel, axis);
    reduced[d] = true;
  }
  outShape.clear();
  keptShape.clear();
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : shape[d]);
    if (!reduced[d])
      outShape.push_back(shape[d]);
    else if (keepdims)
      outShape.push_back(1);
  }
  return Status();
}

/// Converts an accumulator to the element type, dividing by `count` for means.
template <typename T, typename Acc> T finish(Acc acc, bool mean, int64_t count) {
  if constexpr (std::is_integral_v<T>) {
    if (!mean)
      return T(acc);
    // Integer means truncate toward zero; an empty reduction has mean 0 rather than trapping.
    if (count == 0)
      return T(0);
    if constexpr (std::is_unsigned_v<T>)
      return T(uint64_t(acc) / uint64_t(count));
    else
      return T(int64_t(acc) / count);
  } else {
    return mean ? T(acc / Acc(count)) : T(acc);
  }
}

template <typename Op> Status reduceKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, Op::kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  TensorView &out = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkSameDtype(Op::kName, x, out));
  Dims outShape, keptShape;
  PLAIT_RETURN_IF_ERROR(reducedShape(Op::kName, x.shape, call.attrs.getInts("axes"),
                                     call.attrs.getBool("keepdims", true), outShape,
                                     keptShape));
  PLAIT_RETURN_IF_ERROR(checkShape(Op::kName, "output", out.shape, outShape));
  constexpr bool kMean = std::is_same_v<Op, Mean>;
  // bf16/f16 are read widened and accumulate as f32 does: no f32 copy of the input.
  return dispatchElements<true>(Op::kName, x.dtype, [&](auto elements) -> Status {
    using E = decltype(elements);
    using S = typename E::Stored;
    using T = typename E::Value;
    using Acc = typename Op::template Acc<T>;
    int64_t outCount = out.numel();
    // Walk the input in memory order; the output is the input "broadcast" along the reduced
    // axes, so the same row plan yields each input row's accumulator offset (operand 0; the
    // input itself is operand 1, so that a chunk can walk a slice of the plan).
    BroadcastPlan<2> plan = planBroadcast<2>(x.shape, {keptShape, x.shape});
    const int64_t slots = planReductionSlots(plan, outCount);
    Scratch scratch(call, Op::kName);
    Acc *acc; // workspace: one accumulator per output element, per block of rows
    PLAIT_RETURN_IF_ERROR(scratch.take(outCount * slots, acc));
    std::fill(acc, acc + outCount * slots, Op::template identity<T>());
    const S *in = x.as<S>();
    auto walk = [&](const BroadcastPlan<2> &part, const std::array<int64_t, 2> &base) {
      forEachRow(part, [&](int64_t, const std::array<int64_t, 2> &off, int64_t n,
                           const std::array<int64_t, 2> &stride) {
        const S *row = in + base[1] + off[1];
        Acc *target = acc + base[0] + off[0];
        if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Mean>) {
          if (std::is_same_v<T, float> && stride[0] == 0) { // a contiguous row into one sum
            *target += sumRow<E>(row, n);
            return;
          }
        }
        if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Mean>) {
          if (stride[0] != 0 && !std::is_integral_v<T>) {
            addRowInto<E>(target, row, n);
            return;
          }
        }
        if (stride[0] == 0) {
          Acc a = *target;
          for (int64_t i = 0; i < n; ++i)
            a = Op::combine(a, E::load(row[i]));
          *target = a;
        } else {
          for (int64_t i = 0; i < n; ++i)
            target[i] = Op::combine(target[i], E::load(row[i]));
        }
      });
    };
    // Rows [begin, end) of the plan's outermost dimension into the accumulators at `into`.
    // When that dimension is kept (ReductionSplit.h), chunks of its rows split across the
    // threads: each owns whole accumulators, so every output has the same bits on any number
    // of threads, and reads one contiguous block of the input.
    auto walkRows = [&](int64_t begin, int64_t end, Acc *into) {
      if (begin == 0 && end == plan.shape[0])
        return walk(plan, {into - acc, 0});
      BroadcastPlan<2> part = plan;
      part.shape[0] = end - begin;
      part.numel = plan.numel / plan.shape[0] * (end - begin);
      walk(part, {into - acc + begin * plan.strides[0][0], begin * plan.strides[1][0]});
    };
    if (slots > 1) {
      // The outermost dimension is reduced: fixed blocks of its rows, a copy of the
      // accumulators each, combined in block order (the same bits on any thread count).
      parallelFor(slots, 1, [&](int64_t, int64_t first, int64_t last) {
        for (int64_t b = first; b < last; ++b) {
          int64_t begin, end;
          reductionBlock(plan.shape[0], slots, b, begin, end);
          walkRows(begin, end, acc + b * outCount);
        }
      });
      for (int64_t b = 1; b < slots; ++b)
        for (int64_t i = 0; i < outCount; ++i)
          acc[i] = Op::merge(acc[i], acc[b * outCount + i]);
    } else if (const ReductionSplit split = planReductionSplit(plan); split.items > 1) {
      parallelFor(
          split.items, split.grain,
          [&](int64_t, int64_t begin, int64_t end) { walkRows(begin, end, acc); }, split.unit);
    } else {
      walk(plan, {0, 0});
    }
    int64_t count = outCount == 0 ? 0 : x.numel() / outCount;
    S *result = out.as<S>();
    parallelFor(outCount, kElementGrain, [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        result[i] = E::store(finish<T>(acc[i], kMean, count));
    });
    return Status();
  });
}

/// argmax/argmin along one axis; NaN counts as the extreme (first NaN wins), as in numpy.
template <bool kMax> Status argKernel(const KernelCall &call) {
  constexpr const char *kName = kMax ? "argmax" : "argmin";
  PLAIT_RETURN_IF_ERROR(checkArity(call, kName, 1, 1, 1));
  const TensorView &x = call.inputs[0];
  TensorView &out = call.outputs[0];
  if (out.dtype != DType::I64)
    return Status::errorf("{}: output dtype {} should be i64", kName, dtypeName(out.dtype));
  int64_t axis;
  PLAIT_RETURN_IF_ERROR(normalizeAxis(kName, call.attrs.getInt("axis", 0), x.rank(), axis));
  Dims outShape, keptShape;
  PLAIT_RETURN_IF_ERROR(reducedShape(kName, x.shape, {axis}, call.attrs.getBool("keepdims", true),
                                     outShape, keptShape));
  PLAIT_RETURN_IF_ERROR(checkShape(kName, "output", out.shape, outShape));
  int64_t n = x.shape[axis];
  int64_t outer = product(x.shape, 0, axis), inner = product(x.shape, axis + 1, x.rank());
  if (n == 0 && outer * inner > 0)
    return Status::errorf("{}: axis {} has size 0", kName, axis);
  bool selectLast = call.attrs.getBool("select_last_index", false);
  return dispatchElements<true>(kName, x.dtype, [&](auto elements) -> Status {
    using E = decltype(elements);
    using S = typename E::Stored;
    using T = typename E::Value; // bf16/f16 compare widened to f32
    const S *in = x.as<S>();
    int64_t *index = out.as<int64_t>();
    Scratch scratch(call, kName);
    T *best; // workspace: the best value so far of each column of a block
    PLAIT_RETURN_IF_ERROR(scratch.take(inner, best));
    for (int64_t o = 0; o < outer; ++o) {
      const S *block = in + o * n * inner;
      int64_t *blockIndex = index + o * inner;
      for (int64_t j = 0; j < inner; ++j) {
        best[j] = E::load(block[j]);
        blockIndex[j] = 0;
      }
      for (int64_t k = 1; k < n; ++k) {
        const S *row = block + k * inner;
        for (int64_t j = 0; j < inner; ++j) {
          T v = E::load(row[j]), b = best[j];
          bool vNan = v != v, bNan = b != b;
          bool wins = kMax ? (selectLast ? v >= b : v > b) : (selectLast ? v <= b : v < b);
          bool take = bNan ? (selectLast && vNan) : (vNan || wins);
          if (take) {
            best[j] = v;
            blockIndex[j] = k;
          }
        }
      }
    }
    return Status();
  });
}

/// top_k's order (TopKOp): `a` at index `ia` comes before `b` at `ib`. NaN is larger than
/// every number; equal values (and two NaNs) in index order.
template <typename T> bool topKBefore(T a, int64_t ia, T b, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    bool aNan = a != a, bNan = b != b;
    if (aNan != bNan)
      return largest ? aNan : bNan;
    if (aNan)
      return ia < ib;
  }
  if (a != b)
    return largest ? a > b : a < b;
  return ia < ib;
}

/// top_k along the last axis: each row's k first indices in topKBefore's order. The output
/// row holds a heap of k indices whose root is the last of them: an element that comes before
/// the root replaces it, so a row costs O(n log k) and no workspace; the heap is sorted last.
/// Rows are split across the threads.
Status topKKernel(const KernelCall &call) {
  constexpr const char *kName = "top_k";
  int64_t rows, n, k;
  PLAIT_RETURN_IF_ERROR(planTopK(call, rows, n, k));
  const TensorView &x = call.inputs[0];
  TensorView &out = call.outputs[0];
  const bool largest = call.attrs.getBool("largest", true);
  return dispatchElements<true>(kName, x.dtype, [&](auto elements) -> Status {
    using E = decltype(elements);
    using S = typename E::Stored;
    const S *in = x.as<S>();
    int64_t *index = out.as<int64_t>();
    if (k == 0)
      return Status();
    parallelFor(rows, grainFor(kElementGrain, n), [&](int64_t, int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const S *row = in + r * n;
        int64_t *heap = index + r * k;
        // The heap's "less" is topKBefore: its root is the index that comes last.
        auto before = [&](int64_t a, int64_t b) {
          return topKBefore(E::load(row[a]), a, E::load(row[b]), b, largest);
        };
        for (int64_t i = 0; i < k; ++i) {
          heap[i] = i;
          std::push_heap(heap, heap + i + 1, before);
        }
        for (int64_t i = k; i < n; ++i)
          if (before(i, heap[0])) {
            std::pop_heap(heap, heap + k, before);
            heap[k - 1] = i;
            std::push_heap(heap, heap + k, before);
          }
        std::sort_heap(heap, heap + k, before);
      }
    });
    return Status();
  });
}

} // namespace

void registerReductionKernels() {
  registerKernel(Sum::kName, &reduceKernel<Sum>);
  registerKernel(Mean::kName, &reduceKernel<Mean>);
  registerKernel(Max::kName, &reduceKernel<Max>);
  registerKernel(Min::kName, &reduceKernel<Min>);
  registerKernel(Prod::kName, &reduceKernel<Prod>);
  registerKernel("argmax", &argKernel<true>);
  registerKernel("argmin", &argKernel<false>);
  registerKernel("top_k", &topKKernel);
}

} // namespace plait::rt::cpu
