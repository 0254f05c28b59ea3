// Adafactor (ir/PlaitTrainOps.td adafactor_update), as Hugging Face's Adafactor computes a
// step, in passes over the param such that every result may be written over the operand it
// replaces:
//   1. the second moment of g^2 + eps1: factored, each row's and each column's mean folded
//      into exp_avg_sq_row / exp_avg_sq_col (a pass for the rows, one for the columns); else
//      elementwise into exp_avg_sq;
//   2. the sums of param^2 (scale_parameter: the step size rho is max(eps2, rms(param)) times
//      the lr) and of u^2, u = rsqrt(row / mean(row)) * rsqrt(col) * g (or
//      rsqrt(exp_avg_sq) * g), the column factors taken once per block of columns;
//   3. u / max(1, rms(u) / clip_threshold) * rho, through exp_avg with beta1, decays and
//      moves the param.
// The sums are taken in double over fixed blocks (a row, 64 columns, a slot of rows),
// combined in block order: the same bits on any number of threads.
#include "runtime/cpu/AdafactorSupport.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/OptimizerSupport.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt::cpu {
namespace {

constexpr std::string_view kUpdate = "adafactor_update";

/// The operands (old values; m, row, col, v null where absent) and results of one update.
template <typename T> struct Arrays {
  const T *param, *grad, *m, *row, *col, *v;
  T *newParam, *newM, *newRow, *newCol, *newV;
};

template <typename T> Arrays<T> arraysOf(const KernelCall &call, const AdafactorStep &s) {
  const auto &in = call.inputs;
  auto &out = call.outputs;
  auto input = [&](int k) { return k < 0 ? nullptr : in[size_t(k)].as<T>(); };
  auto output = [&](int k) { return k < 0 ? nullptr : out[size_t(k - 3)].as<T>(); };
  return {in[0].as<T>(),      in[1].as<T>(),      input(s.mState), input(s.rowState),
          input(s.colState),  input(s.vState),    out[0].as<T>(),  output(s.mState),
          output(s.rowState), output(s.colState), output(s.vState)};
}

/// Pass 1: the new second moment. Factored: each row's mean of g^2 + eps1 (one row per
/// task) and each column's (64 columns of one batch per task, down the rows in order).
template <typename T> void secondMoment(const Arrays<T> &a, const AdafactorStep &s) {
  const T b2(s.beta2t), ob2(1 - s.beta2t), eps1(s.eps1);
  if (!s.factored) {
    parallelFor(s.numel, kElementGrain, [&](int64_t, int64_t lo, int64_t hi) {
#pragma GCC ivdep
      for (int64_t i = lo; i < hi; ++i) {
        const T g = a.grad[i];
        a.newV[i] = a.v[i] * b2 + (g * g + eps1) * ob2;
      }
    });
    return;
  }
  const int64_t R = s.rows, C = s.cols;
  parallelFor(s.batches * R, std::max<int64_t>(1, kElementGrain / C),
              [&](int64_t, int64_t lo, int64_t hi) {
                for (int64_t r = lo; r < hi; ++r) {
                  const T *g = a.grad + r * C;
                  constexpr int64_t kLanes = 8;
                  double lanes[kLanes] = {};
                  int64_t c = 0;
                  for (; c + kLanes <= C; c += kLanes)
                    for (int64_t j = 0; j < kLanes; ++j)
                      lanes[j] += double(g[c + j] * g[c + j] + eps1);
                  for (; c < C; ++c)
                    lanes[0] += double(g[c] * g[c] + eps1);
                  double sum = 0;
                  for (double l : lanes)
                    sum += l;
                  a.newRow[r] = a.row[r] * b2 + T(sum / double(C)) * ob2;
                }
              });
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (C + kBlock - 1) / kBlock;
  parallelFor(s.batches * blocks, std::max<int64_t>(1, kElementGrain / (R * kBlock)),
              [&](int64_t, int64_t lo, int64_t hi) {
                for (int64_t t = lo; t < hi; ++t) {
                  const int64_t batch = t / blocks, c0 = (t % blocks) * kBlock;
                  const int64_t width = std::min(kBlock, C - c0);
                  double acc[kBlock] = {};
                  for (int64_t r = 0; r < R; ++r) {
                    const T *g = a.grad + (batch * R + r) * C + c0;
                    for (int64_t j = 0; j < width; ++j)
                      acc[j] += double(g[j] * g[j] + eps1);
                  }
                  const int64_t at = batch * C + c0;
                  for (int64_t j = 0; j < width; ++j)
                    a.newCol[at + j] = a.col[at + j] * b2 + T(acc[j] / double(R)) * ob2;
                }
              });
}

/// The elements a piece of the update holds (and, factored, the columns whose factors
/// rsqrt(col) are computed once for every row of a batch, instead of once per element).
constexpr int64_t kPiece = 512;

/// Calls fn(at, n, u) over elements [lo, hi) in pieces of at most kPiece, u[0, n) their
/// update before it is clipped and scaled, as the CPU's f32 (or f64) operations give it:
/// rsqrt(exp_avg_sq) * g, or factored (lo and hi whole rows) rsqrt(row / mean(the batch's
/// new rows)) * rsqrt(col) * g, the factors' product first.
template <typename T, typename Fn>
void forUpdatePieces(const Arrays<T> &a, const AdafactorStep &s, int64_t lo, int64_t hi, Fn &&fn) {
  T u[kPiece];
  if (!s.factored) {
    for (int64_t b = lo; b < hi; b += kPiece) {
      const int64_t n = std::min(kPiece, hi - b);
      for (int64_t i = 0; i < n; ++i)
        u[i] = T(1) / std::sqrt(a.newV[b + i]) * a.grad[b + i];
      fn(b, n, static_cast<const T *>(u));
    }
    return;
  }
  const int64_t R = s.rows, C = s.cols, rowLo = lo / C, rowHi = hi / C;
  T colFactors[kPiece];
  for (int64_t batch = rowLo / R; batch * R < rowHi; ++batch) {
    const int64_t first = std::max(rowLo, batch * R), last = std::min(rowHi, (batch + 1) * R);
    double sum = 0;
    for (int64_t k = 0; k < R; ++k)
      sum += double(a.newRow[batch * R + k]);
    const T mean = T(sum / double(R));
    const T *col = a.newCol + batch * C;
    for (int64_t c0 = 0; c0 < C; c0 += kPiece) {
      const int64_t width = std::min(kPiece, C - c0);
      for (int64_t j = 0; j < width; ++j)
        colFactors[j] = T(1) / std::sqrt(col[c0 + j]);
      for (int64_t r = first; r < last; ++r) {
        const T rowFactor = T(1) / std::sqrt(a.newRow[r] / mean);
        const T *g = a.grad + r * C + c0;
        for (int64_t j = 0; j < width; ++j)
          u[j] = rowFactor * colFactors[j] * g[j];
        fn(r * C + c0, width, static_cast<const T *>(u));
      }
    }
  }
}

/// Pass 2: the sums of param^2 (with scale_parameter) and of u^2 over the param, u =
/// rsqrt(row / mean) * rsqrt(col) * g (factored; the CPU's order: the factors' product,
/// then g) or rsqrt(exp_avg_sq) * g, each slot's in 8 double lanes.
template <typename T>
void updateSquares(const Arrays<T> &a, const AdafactorStep &s, double &sumParam,
                   double &sumUpdate) {
  auto slot = [&](int64_t lo, int64_t hi, double out[2]) {
    double lanesP[8] = {}, lanesU[8] = {};
    forUpdatePieces<T>(a, s, lo, hi, [&](int64_t at, int64_t n, const T *u) {
      if (s.scaleParameter)
        addSquares(a.param + at, n, lanesP);
      addSquares(u, n, lanesU);
    });
    out[0] = out[1] = 0;
    for (int64_t j = 0; j < 8; ++j) {
      out[0] += lanesP[j];
      out[1] += lanesU[j];
    }
  };
  // Fixed slots (of whole rows when factored), added in order: the same bits on any number
  // of threads.
  constexpr int64_t kSlots = 64, kMinBlock = 4096;
  const int64_t unit = s.factored ? s.cols : 1, units = s.numel / unit;
  const int64_t slots = std::clamp<int64_t>(s.numel / kMinBlock, 1, std::min(kSlots, units));
  double partial[kSlots][2];
  parallelFor(slots, 1, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k)
      slot(units * k / slots * unit, units * (k + 1) / slots * unit, partial[k]);
  });
  sumParam = sumUpdate = 0;
  for (int64_t k = 0; k < slots; ++k) {
    sumParam += partial[k][0];
    sumUpdate += partial[k][1];
  }
}

/// Pass 3 over elements [0, n) at `at`, u[i] their u before scaling: x = u / divisor * rho;
/// with beta1 exp_avg = m * b1 + x * (1 - b1) and x = it; param + param * decay - x.
template <bool kFirstMoment, bool kDecays, typename T>
void applyPiece(const Arrays<T> &a, const AdafactorStep &s, T denom, T rho, T decay, int64_t at,
                int64_t n, const T *u) {
  const T b1(s.beta1), ob1(1 - s.beta1);
  const T *param = a.param + at, *m = kFirstMoment ? a.m + at : nullptr;
  T *newParam = a.newParam + at, *newM = kFirstMoment ? a.newM + at : nullptr;
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    T x = u[i] / denom * rho;
    if constexpr (kFirstMoment) {
      x = m[i] * b1 + x * ob1;
      newM[i] = x;
    }
    T p = param[i];
    if constexpr (kDecays)
      p = p + p * decay;
    newParam[i] = p - x;
  }
}

template <typename T> void applyUpdate(const Arrays<T> &a, const AdafactorStep &s, T denom, T rho) {
  const T decay = T(-s.weightDecay * double(rho));
  auto apply = [&](int64_t at, int64_t n, const T *u) {
    if (s.firstMoment)
      s.weightDecay != 0 ? applyPiece<true, true>(a, s, denom, rho, decay, at, n, u)
                         : applyPiece<true, false>(a, s, denom, rho, decay, at, n, u);
    else
      s.weightDecay != 0 ? applyPiece<false, true>(a, s, denom, rho, decay, at, n, u)
                         : applyPiece<false, false>(a, s, denom, rho, decay, at, n, u);
  };
  // Whole rows per task when factored (each row's factor needs its batch's mean).
  const int64_t unit = s.factored ? s.cols : 1;
  parallelFor(s.numel / unit, std::max<int64_t>(1, kElementGrain / unit),
              [&](int64_t, int64_t lo, int64_t hi) {
                forUpdatePieces<T>(a, s, lo * unit, hi * unit, apply);
              });
}

template <typename T> void adafactorStep(const KernelCall &call, const AdafactorStep &s) {
  const Arrays<T> a = arraysOf<T>(call, s);
  secondMoment<T>(a, s);
  double sumParam, sumUpdate;
  updateSquares<T>(a, s, sumParam, sumUpdate);
  // torch's norm / sqrt(numel) in the param's type, as Hugging Face's _rms; the param's read
  // before any result is written, so it is the old param's.
  const T count = T(std::sqrt(double(s.numel)));
  const double rmsParam = s.scaleParameter ? double(T(std::sqrt(sumParam)) / count) : 0.0;
  const T rho = T(s.stepSize(rmsParam));
  const T rmsU = T(std::sqrt(sumUpdate)) / count;
  const T denom = std::max(rmsU / T(s.clipThreshold), T(1));
  applyUpdate<T>(a, s, denom, rho);
}

Status adafactorUpdateKernel(const KernelCall &call) {
  if (call.attrs.has("segments"))
    return adafactorShardUpdateKernel(call);
  AdafactorStep s;
  PLAIT_RETURN_IF_ERROR(readAdafactorLayout(kUpdate, call, s));
  double step, lr = 0;
  PLAIT_RETURN_IF_ERROR(readStep(kUpdate, call.inputs[3], step));
  if (!s.relativeStep)
    PLAIT_RETURN_IF_ERROR(readLr(kUpdate, call.attrs, call.inputs[2], lr));
  s.setStep(lr, step);
  if (hasHalfTensor(call))
    return runStagedInF32(call, &adafactorUpdateKernel);
  if (s.numel == 0)
    return Status();
  return dispatchF32F64(kUpdate, call.inputs[0].dtype, [&](auto tag) -> Status {
    adafactorStep<decltype(tag)>(call, s);
    return Status();
  });
}

} // namespace

Status readAdafactorSettings(std::string_view kernel, const Attrs &attrs, AdafactorSettings &s) {
  s.firstMoment = attrs.has("beta1");
  s.beta1 = attrs.getFloat("beta1", 0.0);
  s.eps1 = attrs.getFloat("eps1", 1e-30);
  s.eps2 = attrs.getFloat("eps2", 1e-3);
  s.clipThreshold = attrs.getFloat("clip_threshold", 1.0);
  s.decayRate = attrs.getFloat("decay_rate", -0.8);
  s.weightDecay = attrs.getFloat("weight_decay", 0.0);
  s.scaleParameter = attrs.getBool("scale_parameter", true);
  s.relativeStep = attrs.getBool("relative_step", false);
  s.warmupInit = attrs.getBool("warmup_init", false);
  if (!(s.eps1 >= 0 && s.eps2 >= 0 && s.clipThreshold > 0 && s.decayRate <= 0 &&
        s.weightDecay >= 0 && s.beta1 >= 0 && s.beta1 < 1) ||
      (s.warmupInit && !s.relativeStep))
    return Status::errorf("{}: needs eps1, eps2, weight_decay >= 0, clip_threshold > 0, "
                          "decay_rate <= 0, 0 <= beta1 < 1 and warmup_init only with "
                          "relative_step",
                          kernel);
  return Status();
}

Status readAdafactorLayout(std::string_view kernel, const KernelCall &call, AdafactorStep &s) {
  PLAIT_RETURN_IF_ERROR(readAdafactorSettings(kernel, call.attrs, s));
  const auto &in = call.inputs;
  if (in.empty())
    return Status::errorf("{}: takes param, grad, lr, step and its states", kernel);
  const TensorView &param = in[0];
  const size_t rank = param.shape.size();
  s.factored = rank >= 2;
  const size_t states = (s.firstMoment ? 1 : 0) + (s.factored ? 2 : 1);
  PLAIT_RETURN_IF_ERROR(checkArity(call, kernel, 4 + states, 4 + states, 1 + states));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kernel, "grad", param, in[1]));
  PLAIT_RETURN_IF_ERROR(checkLikeParam(kernel, "new_param", param, call.outputs[0]));
  s.numel = param.numel();
  s.cols = rank >= 1 ? param.shape[rank - 1] : 1;
  s.rows = s.factored ? param.shape[rank - 2] : 1;
  s.batches = s.factored && s.rows * s.cols > 0 ? s.numel / (s.rows * s.cols) : 1;
  int next = 4;
  s.mState = s.rowState = s.colState = s.vState = -1;
  if (s.firstMoment)
    s.mState = next++;
  if (s.factored) {
    s.rowState = next++;
    s.colState = next++;
  } else {
    s.vState = next++;
  }
  // Each state and its result: the param's dtype, and its shape without dimension `skip`
  // (the row: the last; the column: the one before it; -1: none), compared in place (a
  // kernel call allocates nothing).
  auto check = [&](int k, std::string_view what, int64_t skip) -> Status {
    if (k < 0)
      return Status();
    const std::vector<int64_t> &p = param.shape;
    for (const TensorView *t :
         {&in[size_t(k)], static_cast<const TensorView *>(&call.outputs[size_t(k - 3)])}) {
      bool same = t->dtype == param.dtype && t->shape.size() == p.size() - (skip >= 0 ? 1 : 0);
      for (size_t i = 0, j = 0; same && i < p.size(); ++i)
        if (int64_t(i) != skip)
          same = t->shape[j++] == p[i];
      if (!same) {
        std::vector<int64_t> want;
        for (size_t i = 0; i < p.size(); ++i)
          if (int64_t(i) != skip)
            want.push_back(p[i]);
        return Status::errorf("{}: {} must be {} {}, got {} {}", kernel, what,
                              dtypeName(param.dtype), shapeString(want), dtypeName(t->dtype),
                              shapeString(t->shape));
      }
    }
    return Status();
  };
  PLAIT_RETURN_IF_ERROR(check(s.mState, "exp_avg", -1));
  PLAIT_RETURN_IF_ERROR(check(s.vState, "exp_avg_sq", -1));
  PLAIT_RETURN_IF_ERROR(check(s.rowState, "exp_avg_sq_row", int64_t(rank) - 1));
  PLAIT_RETURN_IF_ERROR(check(s.colState, "exp_avg_sq_col", int64_t(rank) - 2));
  return Status();
}

void registerAdafactorKernels() {
  registerKernel(kUpdate, &adafactorUpdateKernel);
  registerKernel("adafactor_stats", &adafactorStatsKernel);
  registerKernel("adafactor_norms", &adafactorNormsKernel);
}

} // namespace plait::rt::cpu
