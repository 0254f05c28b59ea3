// Adafactor on a flat shard (ir/PlaitTrainOps.td: adafactor_stats, adafactor_norms and
// adafactor_update with `segments`; the layout in codegen/schema/AdafactorShard.h). A unit's
// params lie end to end in its flat buffer and each rank holds an equal shard of it, which cuts
// rows and params anywhere; each param's second moment (a row and a column of sums per matrix,
// or an element-wise average below rank 2) is whole on every rank. One step is three kernels
// and two all-reduces:
//   1. adafactor_stats: this rank's part of each param's sum of param^2 and of its rows' and
//      columns' sums of g^2 + eps1 (or of its elements' g^2 + eps1), summed over the group;
//   2. adafactor_norms: from them every rank computes the new second moments as the whole
//      kernel does, and sums u^2 over its elements (rms(u), the clipping), summed over the
//      group;
//   3. adafactor_update: each segment's step size and divisor from the summed sums, then its
//      elements moved as runtime/cpu/AdafactorKernels.cpp moves them; the new second moments
//      written last (the update reads the old ones, which its results may overwrite).
// The new second moments are computed where they are read, from the old states and the stats,
// in the order of operations of the whole kernel, so that a sharded step gives its results
// to within the order of the sums (in double) of the whole one. Sums are taken in fixed
// slots added in order: the same bits on any number of threads.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/AdafactorSupport.h"
#include "runtime/cpu/OptimizerSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

constexpr std::string_view kStats = "adafactor_stats", kNorms = "adafactor_norms",
                           kUpdate = "adafactor_update";

/// Elements of u computed at a time (and, factored, columns whose rsqrt(col) is taken once
/// for the rows of a batch), as the whole kernel's pieces.
constexpr int64_t kPiece = 512;

/// One segment's second moment as a sharded step reads it: the old states (rows and columns,
/// or v) and the stats summed over the group, each new value computed where it is read.
template <typename T> struct Moment {
  adafactor::Segment s;
  const T *row = nullptr, *col = nullptr, *v = nullptr;
  const double *stats = nullptr; // the segment's own entries
  T b2 = 0, ob2 = 0;

  T newRow(int64_t r) const { return row[r] * b2 + T(stats[r] / double(s.cols)) * ob2; }
  T newCol(int64_t j) const {
    return col[j] * b2 + T(stats[s.rowCount() + j] / double(s.rows)) * ob2;
  }
  T newV(int64_t e) const { return v[e] * b2 + T(stats[e]) * ob2; }
  /// The mean of a batch's new rows, as the whole kernel rounds it.
  T rowMean(int64_t batch) const {
    double sum = 0;
    for (int64_t k = 0; k < s.rows; ++k)
      sum += double(newRow(batch * s.rows + k));
    return T(sum / double(s.rows));
  }
};

/// Calls fn(e, n, u) over the segment's elements [e0, e1) in pieces of at most kPiece, u[0, n)
/// their direction before it is clipped and scaled: rsqrt(exp_avg_sq) * g, or factored
/// rsqrt(row / mean(the batch's rows)) * rsqrt(col) * g, the factors' product first (the whole
/// kernel's forUpdatePieces on a range that may start and end inside rows). `g` is indexed by
/// the segment's element number.
template <typename T, typename Fn>
void forDirections(const Moment<T> &m, const T *g, int64_t e0, int64_t e1, Fn &&fn) {
  T u[kPiece];
  if (!m.s.factored()) {
    for (int64_t b = e0; b < e1; b += kPiece) {
      const int64_t n = std::min(kPiece, e1 - b);
      for (int64_t i = 0; i < n; ++i)
        u[i] = T(1) / std::sqrt(m.newV(b + i)) * g[b + i];
      fn(b, n, static_cast<const T *>(u));
    }
    return;
  }
  const int64_t R = m.s.rows, C = m.s.cols, rowLo = e0 / C, rowHi = (e1 - 1) / C + 1;
  T colFactors[kPiece];
  for (int64_t batch = rowLo / R; batch * R < rowHi; ++batch) {
    const int64_t first = std::max(rowLo, batch * R), last = std::min(rowHi, (batch + 1) * R);
    const T mean = m.rowMean(batch);
    for (int64_t c0 = 0; c0 < C; c0 += kPiece) {
      const int64_t width = std::min(kPiece, C - c0);
      for (int64_t j = 0; j < width; ++j)
        colFactors[j] = T(1) / std::sqrt(m.newCol(batch * C + c0 + j));
      for (int64_t r = first; r < last; ++r) {
        const int64_t a = std::max(e0, r * C + c0), b = std::min(e1, r * C + c0 + width);
        if (a >= b)
          continue;
        const T rowFactor = T(1) / std::sqrt(m.newRow(r) / mean);
        for (int64_t e = a; e < b; ++e)
          u[e - a] = rowFactor * colFactors[e - r * C - c0] * g[e];
        fn(a, b - a, static_cast<const T *>(u));
      }
    }
  }
}

/// The sum of slot(lo, hi) over [0, n) cut into fixed slots (at most 64 of at least 4096
/// elements), added in slot order: the same bits on any number of threads.
template <typename Fn> double slotSum(int64_t n, Fn &&slot) {
  constexpr int64_t kSlots = 64, kMinBlock = 4096;
  const int64_t slots = std::clamp<int64_t>(n / kMinBlock, 1, kSlots);
  double partial[kSlots];
  parallelFor(slots, 1, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k)
      partial[k] = slot(n * k / slots, n * (k + 1) / slots);
  });
  double sum = 0;
  for (int64_t k = 0; k < slots; ++k)
    sum += partial[k];
  return sum;
}

inline double lanesTotal(const double lanes[8]) {
  double sum = 0;
  for (int64_t j = 0; j < 8; ++j)
    sum += lanes[j];
  return sum;
}

/// adafactor_stats on one piece: segment s's elements [e0, e0 + n), `param` and `grad`
/// indexed by them; `out` the segment's own stats entries, `paramSum` its param^2 slot.
template <typename T>
void statsPiece(const adafactor::Segment &s, const T *param, const T *grad, int64_t e0, int64_t n,
                T eps1, double *out, double &paramSum) {
  const int64_t e1 = e0 + n;
  paramSum = slotSum(n, [&](int64_t lo, int64_t hi) {
    double lanes[8] = {};
    addSquares(param + e0 + lo, hi - lo, lanes);
    return lanesTotal(lanes);
  });
  if (!s.factored()) {
    parallelFor(n, kElementGrain, [&](int64_t, int64_t lo, int64_t hi) {
      for (int64_t e = e0 + lo; e < e0 + hi; ++e)
        out[e] = double(grad[e] * grad[e] + eps1);
    });
    return;
  }
  const int64_t R = s.rows, C = s.cols, rowLo = e0 / C, rowHi = (e1 - 1) / C + 1;
  // Each row's sum over its columns in the piece (a row per task).
  parallelFor(rowHi - rowLo, std::max<int64_t>(1, kElementGrain / C),
              [&](int64_t, int64_t lo, int64_t hi) {
                for (int64_t r = rowLo + lo; r < rowLo + hi; ++r) {
                  const int64_t a = std::max(e0, r * C), b = std::min(e1, (r + 1) * C);
                  double lanes[8] = {};
                  int64_t e = a;
                  for (; e + 8 <= b; e += 8)
                    for (int64_t j = 0; j < 8; ++j)
                      lanes[j] += double(grad[e + j] * grad[e + j] + eps1);
                  for (; e < b; ++e)
                    lanes[0] += double(grad[e] * grad[e] + eps1);
                  out[r] = lanesTotal(lanes);
                }
              });
  // Each column's sum down its rows in the piece (64 columns of a batch per task).
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (C + kBlock - 1) / kBlock, batchLo = rowLo / R;
  const int64_t batches = (rowHi - 1) / R + 1 - batchLo;
  double *cols = out + s.rowCount();
  parallelFor(batches * blocks, std::max<int64_t>(1, kElementGrain / (R * kBlock)),
              [&](int64_t, int64_t lo, int64_t hi) {
                for (int64_t t = lo; t < hi; ++t) {
                  const int64_t batch = batchLo + t / blocks, c0 = (t % blocks) * kBlock;
                  const int64_t width = std::min(kBlock, C - c0);
                  const int64_t first = std::max(rowLo, batch * R);
                  const int64_t last = std::min(rowHi, (batch + 1) * R);
                  double acc[kBlock] = {};
                  for (int64_t r = first; r < last; ++r) {
                    const int64_t a = std::max(e0, r * C + c0) - (r * C + c0);
                    const int64_t b = std::min(e1, r * C + c0 + width) - (r * C + c0);
                    const T *g = grad + r * C + c0;
                    for (int64_t j = a; j < b; ++j)
                      acc[j] += double(g[j] * g[j] + eps1);
                  }
                  for (int64_t j = 0; j < width; ++j)
                    cols[batch * C + c0 + j] = acc[j];
                }
              });
}

/// The Moment of segment `seg`: its states among the call's inputs from `first` on, the
/// first at `moment` after it.
template <typename T>
Moment<T> momentOf(const KernelCall &call, const adafactor::Segment &seg, int moment, size_t first,
                   const double *stats, double beta2t) {
  Moment<T> m;
  m.s = seg;
  const TensorView *state = &call.inputs[first + size_t(moment)];
  if (seg.factored()) {
    m.row = state[0].as<T>();
    m.col = state[1].as<T>();
  } else {
    m.v = state[0].as<T>();
  }
  m.stats = stats + seg.stats;
  m.b2 = T(beta2t);
  m.ob2 = T(1 - beta2t);
  return m;
}

/// The segment's sum of u^2 over its elements [e0, e0 + n), `grad` indexed by them.
template <typename T>
double directionSquares(const Moment<T> &m, const T *grad, int64_t e0, int64_t n) {
  return slotSum(n, [&](int64_t lo, int64_t hi) {
    double lanes[8] = {};
    forDirections<T>(m, grad, e0 + lo, e0 + hi,
                     [&](int64_t, int64_t count, const T *u) { addSquares(u, count, lanes); });
    return lanesTotal(lanes);
  });
}

/// The beta2t of the step in input `stepAt` (1 - t^decay_rate).
Status readBeta2t(std::string_view kernel, const KernelCall &call, size_t stepAt, double decayRate,
                  double &beta2t) {
  double step = 0;
  PLAIT_RETURN_IF_ERROR(readStep(kernel, call.inputs[stepAt], step));
  beta2t = 1.0 - std::pow(step, decayRate);
  return Status();
}

} // namespace

Status readAdafactorShard(std::string_view kernel, const KernelCall &call,
                          AdafactorShardLayout &out) {
  const auto &in = call.inputs;
  if (in.size() < 2 || call.outputs.empty())
    return Status::errorf("{}: takes the param and grad shards first", kernel);
  const TensorView &param = in[0];
  if (param.shape.size() != 1)
    return Status::errorf("{}: works on a flat (1-D) shard, got {}", kernel,
                          shapeString(param.shape));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kernel, "grad", param, in[1]));
  const Attrs &attrs = call.attrs;
  out.lengths = &attrs.getInts("segments");
  out.factors = &attrs.getInts("factors");
  std::string error =
      adafactor::checkSegments(*out.lengths, *out.factors, out.statsLength, out.total);
  if (!error.empty())
    return Status::errorf("{}: {}", kernel, error);
  out.numel = param.numel();
  out.segments = out.lengths->size();
  int64_t groupSize = 1;
  static const std::vector<int64_t> kNone;
  const std::vector<int64_t> &groups = attrs.has("groups") ? attrs.getInts("groups") : kNone;
  if (!groups.empty())
    groupSize = attrs.getInt("group_size", 0);
  out.offset = adafactor::shardOffset(groups, groupSize, int64_t(call.rank), out.numel);
  if (out.offset < 0)
    return Status::errorf("{}: rank {} is in none of the groups (group size {})", kernel, call.rank,
                          groupSize);
  if (out.total > out.numel * groupSize)
    return Status::errorf("{}: segments ({} elements) do not fit {} x {} ranks", kernel, out.total,
                          out.numel, groupSize);
  out.moments = 0;
  for (size_t k = 0; k < out.segments; ++k)
    out.moments += (*out.factors)[2 * k] > 0 ? 2 : 1;
  return Status();
}

Status checkAdafactorShardOperands(std::string_view kernel, const KernelCall &call,
                                   const AdafactorShardLayout &l, size_t first, size_t statsAt,
                                   bool results, size_t resultFirst) {
  const TensorView &param = call.inputs[0];
  Status status;
  adafactor::forEachSegment(
      *l.lengths, *l.factors, [&](size_t k, const adafactor::Segment &s, int moment) {
        const int64_t counts[2] = {s.factored() ? s.rowCount() : s.length,
                                   s.factored() ? s.colCount() : 0};
        for (int j = 0; j < (s.factored() ? 2 : 1) && status.ok(); ++j) {
          const size_t at = size_t(moment + j);
          const TensorView &state = call.inputs[first + at];
          bool ok = state.dtype == param.dtype && state.numel() == counts[j];
          if (results) {
            const TensorView &out = call.outputs[resultFirst + at];
            ok = ok && out.dtype == param.dtype && out.numel() == counts[j];
          }
          if (!ok)
            status = Status::errorf(
                "{}: segment {}'s {} must hold {} {} elements, got {} {}", kernel, k,
                !s.factored() ? "exp_avg_sq" : (j == 0 ? "exp_avg_sq_row" : "exp_avg_sq_col"),
                counts[j], dtypeName(param.dtype), dtypeName(state.dtype),
                shapeString(state.shape));
        }
      });
  PLAIT_RETURN_IF_ERROR(status);
  return checkAdafactorSums(kernel, "stats", call.inputs[statsAt], l.statsLength);
}

Status checkAdafactorSums(std::string_view kernel, std::string_view what, const TensorView &t,
                          int64_t length) {
  if (t.dtype != DType::F64 || t.shape != std::vector<int64_t>{length})
    return Status::errorf("{}: {} must be f64 [{}], got {} {}", kernel, what, length,
                          dtypeName(t.dtype), shapeString(t.shape));
  return Status();
}

/// adafactor_stats(param, grad) -> stats: this rank's part of the sums (the layout's).
Status adafactorStatsKernel(const KernelCall &call) {
  PLAIT_RETURN_IF_ERROR(checkArity(call, kStats, 2, 2, 1));
  AdafactorShardLayout l;
  PLAIT_RETURN_IF_ERROR(readAdafactorShard(kStats, call, l));
  const TensorView &stats = call.outputs[0];
  PLAIT_RETURN_IF_ERROR(checkAdafactorSums(kStats, "stats", stats, l.statsLength));
  const double eps1 = call.attrs.getFloat("eps1", 1e-30);
  if (!(eps1 >= 0))
    return Status::errorf("{}: needs eps1 >= 0, got {}", kStats, eps1);
  if (hasHalfTensor(call))
    return runStagedInF32(call, &adafactorStatsKernel);
  double *out = stats.as<double>();
  std::fill(out, out + l.statsLength, 0.0);
  return dispatchF32F64(kStats, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *param = call.inputs[0].as<T>(), *grad = call.inputs[1].as<T>();
    adafactor::forShardPieces(
        *l.lengths, *l.factors, l.offset, l.numel,
        [&](size_t k, const adafactor::Segment &s, int, int64_t lo, int64_t hi) {
          const int64_t e0 = l.offset + lo - s.start; // the piece's first element in the segment
          statsPiece<T>(s, param + lo - e0, grad + lo - e0, e0, hi - lo, T(eps1), out + s.stats,
                        out[k]);
        });
    return Status();
  });
}

/// adafactor_norms(param, grad, step, stats, second-moment states...) -> norms: this rank's
/// sum of u^2 per segment.
Status adafactorNormsKernel(const KernelCall &call) {
  AdafactorShardLayout l;
  PLAIT_RETURN_IF_ERROR(readAdafactorShard(kNorms, call, l));
  PLAIT_RETURN_IF_ERROR(checkArity(call, kNorms, 4 + size_t(l.moments), 4 + size_t(l.moments), 1));
  PLAIT_RETURN_IF_ERROR(checkAdafactorShardOperands(kNorms, call, l, 4, 3, false, 0));
  const TensorView &norms = call.outputs[0];
  const int64_t segments = int64_t(l.segments);
  PLAIT_RETURN_IF_ERROR(checkAdafactorSums(kNorms, "norms", norms, segments));
  const double decayRate = call.attrs.getFloat("decay_rate", -0.8);
  if (!(decayRate <= 0))
    return Status::errorf("{}: needs decay_rate <= 0, got {}", kNorms, decayRate);
  double beta2t = 0;
  PLAIT_RETURN_IF_ERROR(readBeta2t(kNorms, call, 2, decayRate, beta2t));
  if (hasHalfTensor(call))
    return runStagedInF32(call, &adafactorNormsKernel);
  double *out = norms.as<double>();
  std::fill(out, out + segments, 0.0);
  const double *stats = call.inputs[3].as<double>();
  return dispatchF32F64(kNorms, call.inputs[0].dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *grad = call.inputs[1].as<T>();
    adafactor::forShardPieces(
        *l.lengths, *l.factors, l.offset, l.numel,
        [&](size_t k, const adafactor::Segment &seg, int moment, int64_t lo, int64_t hi) {
          const int64_t e0 = l.offset + lo - seg.start;
          const Moment<T> m = momentOf<T>(call, seg, moment, 4, stats, beta2t);
          out[k] = directionSquares<T>(m, grad + lo - e0, e0, hi - lo);
        });
    return Status();
  });
}

/// adafactor_update with segments (param, grad, lr, step, [exp_avg,] second-moment states...,
/// stats, norms -> new param, [new exp_avg,] new second-moment states...).
Status adafactorShardUpdateKernel(const KernelCall &call) {
  AdafactorStep s;
  PLAIT_RETURN_IF_ERROR(readAdafactorSettings(kUpdate, call.attrs, s));
  AdafactorShardLayout l;
  PLAIT_RETURN_IF_ERROR(readAdafactorShard(kUpdate, call, l));
  const size_t first = 4 + (s.firstMoment ? 1 : 0), statsAt = first + size_t(l.moments);
  const size_t states = statsAt - 4;
  PLAIT_RETURN_IF_ERROR(checkArity(call, kUpdate, states + 6, states + 6, states + 1));
  const auto &in = call.inputs;
  const TensorView &param = in[0];
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kUpdate, "new_param", param, call.outputs[0]));
  if (s.firstMoment) {
    PLAIT_RETURN_IF_ERROR(checkLikeParam(kUpdate, "exp_avg", param, in[4]));
    PLAIT_RETURN_IF_ERROR(checkLikeParam(kUpdate, "new_exp_avg", param, call.outputs[1]));
  }
  PLAIT_RETURN_IF_ERROR(
      checkAdafactorShardOperands(kUpdate, call, l, first, statsAt, true, first - 3));
  const TensorView &norms = in[statsAt + 1];
  PLAIT_RETURN_IF_ERROR(checkAdafactorSums(kUpdate, "norms", norms, int64_t(l.segments)));
  double step, lr = 0;
  PLAIT_RETURN_IF_ERROR(readStep(kUpdate, in[3], step));
  if (!s.relativeStep)
    PLAIT_RETURN_IF_ERROR(readLr(kUpdate, call.attrs, in[2], lr));
  s.setStep(lr, step);
  if (hasHalfTensor(call))
    return runStagedInF32(call, &adafactorShardUpdateKernel);
  const double *stats = in[statsAt].as<double>(), *sums = norms.as<double>();
  return dispatchF32F64(kUpdate, param.dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T *p = param.as<T>(), *g = in[1].as<T>();
    const T *m = s.firstMoment ? in[4].as<T>() : nullptr;
    T *newP = call.outputs[0].as<T>(), *newM = s.firstMoment ? call.outputs[1].as<T>() : nullptr;
    const T b1(s.beta1), ob1(1 - s.beta1);
    // The padding past the segments keeps its values.
    for (int64_t i = l.covered(); i < l.numel; ++i) {
      newP[i] = p[i];
      if (newM)
        newM[i] = m[i];
    }
    adafactor::forShardPieces(
        *l.lengths, *l.factors, l.offset, l.numel,
        [&](size_t k, const adafactor::Segment &seg, int moment, int64_t lo, int64_t hi) {
          const int64_t e0 = l.offset + lo - seg.start, shift = lo - e0;
          const Moment<T> mo = momentOf<T>(call, seg, moment, first, stats, s.beta2t);
          // The whole kernel's scalars, from the sums over every rank's elements.
          const T count = T(std::sqrt(double(seg.length)));
          const double rmsParam = s.scaleParameter ? double(T(std::sqrt(stats[k])) / count) : 0.0;
          const T rho = T(s.stepSize(rmsParam));
          const T rmsU = T(std::sqrt(sums[k])) / count;
          const T denom = std::max(rmsU / T(s.clipThreshold), T(1));
          const T decay = T(-s.weightDecay * double(rho));
          const int64_t unit = seg.factored() ? seg.cols : 1, n = hi - lo;
          parallelFor((n + unit - 1) / unit, std::max<int64_t>(1, kElementGrain / unit),
                      [&](int64_t, int64_t a, int64_t b) {
                        forDirections<T>(mo, g + shift, e0 + a * unit,
                                         std::min(e0 + b * unit, e0 + n),
                                         [&](int64_t e, int64_t count, const T *u) {
                                           for (int64_t i = 0; i < count; ++i) {
                                             const int64_t at = e + i + shift;
                                             T x = u[i] / denom * rho;
                                             if (newM) {
                                               x = m[at] * b1 + x * ob1;
                                               newM[at] = x;
                                             }
                                             T pv = p[at];
                                             if (s.weightDecay != 0)
                                               pv = pv + pv * decay;
                                             newP[at] = pv - x;
                                           }
                                         });
                      });
        });
    // The new second moments, whole, the same on every rank: written last, over the old
    // ones they may alias, which the passes above read.
    adafactor::forEachSegment(
        *l.lengths, *l.factors, [&](size_t, const adafactor::Segment &seg, int moment) {
          const Moment<T> mo = momentOf<T>(call, seg, moment, first, stats, s.beta2t);
          T *out = call.outputs[first - 3 + size_t(moment)].as<T>();
          if (!seg.factored()) {
            parallelFor(seg.length, kElementGrain, [&](int64_t, int64_t a, int64_t b) {
              for (int64_t e = a; e < b; ++e)
                out[e] = mo.newV(e);
            });
            return;
          }
          T *cols = call.outputs[first - 2 + size_t(moment)].as<T>();
          for (int64_t r = 0; r < seg.rowCount(); ++r)
            out[r] = mo.newRow(r);
          for (int64_t j = 0; j < seg.colCount(); ++j)
            cols[j] = mo.newCol(j);
        });
    return Status();
  });
}

} // namespace plait::rt::cpu
