// Adafactor (ir/PlaitTrainOps.td adafactor_update), as Hugging Face's Adafactor computes a
// step, in four passes over the param so that every result may be written over the operand
// it replaces:
//   1. (scale_parameter) the param's RMS, which scales the step size rho;
//   2. the second moment of g^2 + eps1: factored, each row's and each column's mean folded
//      into exp_avg_sq_row / exp_avg_sq_col; else elementwise into exp_avg_sq;
//   3. the RMS of u = rsqrt(row / mean(row)) * rsqrt(col) * g (or rsqrt(exp_avg_sq) * g);
//   4. u / max(1, rms(u) / clip_threshold) * rho, through exp_avg with beta1, decays and
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

/// The sum of f(i)^2 over [0, n) in double: `kSlots` blocks at most, each summed by one
/// thread in 8 lanes, added in block order.
template <typename F> double blockSumOfSquares(int64_t n, int64_t unit, F &&f) {
  constexpr int64_t kSlots = 64, kMinBlock = 4096;
  if (n <= 0)
    return 0;
  const int64_t units = n / unit;
  const int64_t slots = std::clamp<int64_t>(n / kMinBlock, 1, std::min(kSlots, units));
  double partial[kSlots];
  parallelFor(slots, 1, [&](int64_t, int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s)
      partial[s] = f(units * s / slots * unit, units * (s + 1) / slots * unit);
  });
  double total = 0;
  for (int64_t s = 0; s < slots; ++s)
    total += partial[s];
  return total;
}

/// Sum of x[i]^2 over [begin, end) in 8 double lanes.
template <typename T> double sumSquares(const T *x, int64_t begin, int64_t end) {
  constexpr int64_t kLanes = 8;
  double lanes[kLanes] = {};
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j)
      lanes[j] += double(x[i + j]) * double(x[i + j]);
  for (; i < end; ++i)
    lanes[0] += double(x[i]) * double(x[i]);
  double s = 0;
  for (double l : lanes)
    s += l;
  return s;
}

/// The T constants of a step and the operand arrays.
template <typename T> struct Arrays {
  const T *param, *grad, *m, *row, *col, *v; // the old values (m, row, col, v may be null)
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

/// Pass 2: the new second moment. Factored: each row's mean of g^2 + eps1 (one row per
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

/// Calls body(r, rowFactor, colFactors) for rows [lo, hi) of a factored param: rowFactor =
/// rsqrt(row / mean(row of its batch)), colFactors the batch's new columns (to be rsqrt-ed).
template <typename T, typename Body>
void forFactoredRows(const Arrays<T> &a, const AdafactorStep &s, int64_t lo, int64_t hi,
                     Body &&body) {
  const int64_t R = s.rows, C = s.cols;
  int64_t batch = -1;
  T mean(0);
  for (int64_t r = lo; r < hi; ++r) {
    if (r / R != batch) {
      batch = r / R;
      double sum = 0;
      for (int64_t k = 0; k < R; ++k)
        sum += double(a.newRow[batch * R + k]);
      mean = T(sum / double(R));
    }
    const T rowFactor = T(1) / std::sqrt(a.newRow[r] / mean);
    body(r, rowFactor, a.newCol + batch * C);
  }
}

/// Pass 3: sum of u^2 over the param.
template <typename T> double updateSquares(const Arrays<T> &a, const AdafactorStep &s) {
  if (!s.factored)
    return blockSumOfSquares(s.numel, 1, [&](int64_t lo, int64_t hi) {
      constexpr int64_t kLanes = 8;
      double lanes[kLanes] = {};
      int64_t i = lo;
      auto u = [&](int64_t k) { return T(1) / std::sqrt(a.newV[k]) * a.grad[k]; };
      for (; i + kLanes <= hi; i += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) {
          const T x = u(i + j);
          lanes[j] += double(x) * double(x);
        }
      for (; i < hi; ++i) {
        const T x = u(i);
        lanes[0] += double(x) * double(x);
      }
      double sum = 0;
      for (double l : lanes)
        sum += l;
      return sum;
    });
  const int64_t C = s.cols;
  return blockSumOfSquares(s.numel, C, [&](int64_t lo, int64_t hi) {
    double total = 0;
    forFactoredRows<T>(a, s, lo / C, hi / C, [&](int64_t r, T rowFactor, const T *col) {
      const T *g = a.grad + r * C;
      constexpr int64_t kLanes = 8;
      double lanes[kLanes] = {};
      int64_t c = 0;
      for (; c + kLanes <= C; c += kLanes)
        for (int64_t j = 0; j < kLanes; ++j) {
          const T x = rowFactor * (T(1) / std::sqrt(col[c + j])) * g[c + j];
          lanes[j] += double(x) * double(x);
        }
      for (; c < C; ++c) {
        const T x = rowFactor * (T(1) / std::sqrt(col[c])) * g[c];
        lanes[0] += double(x) * double(x);
      }
      for (double l : lanes)
        total += l;
    });
    return total;
  });
}

/// Pass 4: the update of elements [lo, hi) whose u before scaling is `u(i)`.
template <typename T, typename U>
void applyUpdate(const Arrays<T> &a, const AdafactorStep &s, T denom, T rho, int64_t lo, int64_t hi,
                 U &&u) {
  const T b1(s.beta1), ob1(1 - s.beta1), decay(-s.weightDecay * double(rho));
  const bool decays = s.weightDecay != 0;
  for (int64_t i = lo; i < hi; ++i) {
    T x = u(i) / denom * rho;
    if (s.firstMoment) {
      x = a.m[i] * b1 + x * ob1;
      a.newM[i] = x;
    }
    T p = a.param[i];
    if (decays)
      p = p + p * decay;
    a.newParam[i] = p - x;
  }
}

template <typename T> void adafactorStep(const KernelCall &call, const AdafactorStep &s) {
  const Arrays<T> a = arraysOf<T>(call, s);
  double rmsParam = 0;
  if (s.scaleParameter) {
    const double sum = blockSumOfSquares(
        s.numel, 1, [&](int64_t lo, int64_t hi) { return sumSquares(a.param, lo, hi); });
    // torch's norm / sqrt(numel) in the param's type, as Hugging Face's _rms.
    rmsParam = double(T(std::sqrt(sum)) / T(std::sqrt(double(s.numel))));
  }
  const T rho = T(s.stepSize(rmsParam));
  secondMoment<T>(a, s);
  const double sumU = updateSquares<T>(a, s);
  const T rmsU = T(std::sqrt(sumU)) / T(std::sqrt(double(s.numel)));
  const T denom = std::max(rmsU / T(s.clipThreshold), T(1));
  if (!s.factored) {
    parallelFor(s.numel, kElementGrain, [&](int64_t, int64_t lo, int64_t hi) {
      applyUpdate<T>(a, s, denom, rho, lo, hi,
                     [&](int64_t i) { return T(1) / std::sqrt(a.newV[i]) * a.grad[i]; });
    });
    return;
  }
  const int64_t C = s.cols;
  parallelFor(s.batches * s.rows, std::max<int64_t>(1, kElementGrain / C),
              [&](int64_t, int64_t lo, int64_t hi) {
                forFactoredRows<T>(a, s, lo, hi, [&](int64_t r, T rowFactor, const T *col) {
                  applyUpdate<T>(a, s, denom, rho, r * C, (r + 1) * C, [&](int64_t i) {
                    return rowFactor * (T(1) / std::sqrt(col[i - r * C])) * a.grad[i];
                  });
                });
              });
}

Status adafactorUpdateKernel(const KernelCall &call) {
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

Status readAdafactorLayout(std::string_view kernel, const KernelCall &call, AdafactorStep &s) {
  const Attrs &attrs = call.attrs;
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

void registerAdafactorKernels() { registerKernel(kUpdate, &adafactorUpdateKernel); }

} // namespace plait::rt::cpu
