// The scalar factors of the optimizer updates that follow from the step number alone, shared
// by the CPU kernels (runtime/cpu/OptimizerKernels.cpp, on the host) and the CUDA kernels
// (runtime/cuda/kernels/Optimizer.cu, on the device, so that a step replayed as a CUDA graph
// computes each step's values). Each is computed as PyTorch 1.13 computes it: in double, as
// Python floats, except where torch keeps an f32 tensor.
#pragma once

#include <math.h>

#ifdef __CUDACC__
#define PLAIT_SCHEDULE_HD __host__ __device__ __forceinline__
#else
#define PLAIT_SCHEDULE_HD inline
#endif

namespace plait::rt {

/// RAdam's rectification at step `step`: whether it applies (rho_t > 5) and its factor
/// sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)).
struct RAdamRectification {
  bool rectified;
  double rect;
};
PLAIT_SCHEDULE_HD RAdamRectification radamRectification(double beta2, double step) {
  const double bc2 = 1 - pow(beta2, step);
  const double rhoInf = 2 / (1 - beta2) - 1;
  const double rhoT = rhoInf - 2 * step * pow(beta2, step) / bc2;
  RAdamRectification r{rhoT > 5., 0.0};
  if (r.rectified)
    r.rect = sqrt((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT));
  return r;
}

/// ASGD's eta and mu at step `step` (>= 1), `lr` the previous step's learning rate (step 1's
/// on step 1). torch keeps both as f32 0-d tensors that start at lr and 1 and are set at the
/// end of each step t from that step's lr: eta = lr / (1 + lambd * lr * t)^alpha and
/// mu = 1 / max(1, t - t0), computed in double and rounded to f32; the next step reads them
/// back with .item(). So step s's are step s - 1's formulas, rounded the same way.
struct AsgdCoefficients {
  double eta, mu;
};
PLAIT_SCHEDULE_HD AsgdCoefficients asgdCoefficients(double lr, double lambd, double alpha,
                                                    double t0, double step) {
  if (step <= 1)
    return {double(float(lr)), 1.0};
  const double t = step - 1;
  return {double(float(lr / pow(1 + lambd * lr * t, alpha))),
          double(float(1 / fmax(1.0, t - t0)))};
}

/// A cyclical learning-rate schedule, as PyTorch 1.13's OneCycleLR and CyclicLR compute it
/// (in double, as Python floats): the learning rate of plait's --lr-schedule onecycle and
/// cyclic (runtime/LrSchedule.h, on the host) and the momentum they cycle against it (an
/// update's momentum_cycle attribute: the CPU kernels on the host, the CUDA kernels on the
/// device from the step number, so that a replayed CUDA graph follows it). torch's scheduler
/// counts n = step - 1 steps before the one it sets.
struct LrCycle {
  enum Kind { None = 0, OneCycle = 1, Cyclic = 2 };
  int kind = None;
  // OneCycleLR: its total steps, the fraction of them that rises, its anneal_strategy
  // (linear, else cos) and three_phase.
  double totalSteps = 0, pctStart = 0.3;
  bool linear = false, threePhase = false;
  // CyclicLR: step_size_up, step_size_down, its mode (0 triangular, 1 triangular2, 2
  // exp_range) and exp_range's gamma.
  double stepSizeUp = 0, stepSizeDown = 0;
  int mode = 0;
  double gamma = 1;
};

/// OneCycleLR's phases (2, or 3 with three_phase) and the step index each ends at: the first
/// at pct_start * total - 1, the last at total - 1, with three_phase a middle one at
/// 2 * pct_start * total - 2.
PLAIT_SCHEDULE_HD int oneCyclePhaseEnds(const LrCycle &c, double ends[3]) {
  const double total = c.totalSteps;
  ends[0] = c.pctStart * total - 1;
  ends[1] = c.threePhase ? 2 * c.pctStart * total - 2 : total - 1;
  ends[2] = total - 1;
  return c.threePhase ? 3 : 2;
}

/// OneCycleLR's value at n = step - 1 steps: its phases (oneCyclePhaseEnds) anneal points[i]
/// to points[i + 1] (cosine: end + (start - end) / 2 * (cos(pi * pct) + 1); or linearly). The
/// learning rate's points are initial, max and min (initial, max, initial and min with three
/// phases); the momentum's max, base and max (max, base, max and max).
PLAIT_SCHEDULE_HD double oneCycleValue(const LrCycle &c, double n, const double *points) {
  double ends[3];
  const int phases = oneCyclePhaseEnds(c, ends);
  double start = 0;
  for (int i = 0; i < phases; ++i) {
    if (n <= ends[i] || i == phases - 1) {
      const double pct = (n - start) / (ends[i] - start);
      if (c.linear)
        return (points[i + 1] - points[i]) * pct + points[i];
      const double cosOut = cos(3.14159265358979323846 * pct) + 1;
      return points[i + 1] + (points[i] - points[i + 1]) / 2.0 * cosOut;
    }
    start = ends[i];
  }
  return points[phases];
}

/// CyclicLR's position at n = step - 1 steps: the scale factor (0 to 1 over step_size_up
/// steps, back to 0 over step_size_down) and its mode's scale (1; 1 / 2^(cycle - 1); or
/// gamma^n). The learning rate is base + (max - base) * factor * scale, the momentum
/// max - (max - base) * factor * scale, each product taken in that order as torch takes it.
struct CyclicPosition {
  double factor, scale;
};
PLAIT_SCHEDULE_HD CyclicPosition cyclicPosition(const LrCycle &c, double n) {
  const double total = c.stepSizeUp + c.stepSizeDown, ratio = c.stepSizeUp / total;
  const double cycle = floor(1 + n / total), x = 1. + n / total - cycle;
  CyclicPosition p;
  p.factor = x <= ratio ? x / ratio : (x - 1) / (ratio - 1);
  p.scale = c.mode == 0 ? 1. : c.mode == 1 ? 1 / pow(2., cycle - 1) : pow(c.gamma, n);
  return p;
}

/// The momentum (SGD's and RMSprop's momentum, or the first beta of Adam and its kin) that
/// OneCycleLR or CyclicLR cycles against the learning rate with cycle_momentum, between
/// `base` and `max`: an update's momentum_cycle attribute, [kind, base, max, then
/// totalSteps, pctStart, linear, threePhase (one cycle) or stepSizeUp, stepSizeDown, mode,
/// gamma (cyclic)].
struct MomentumCycle {
  LrCycle cycle;
  double base = 0, max = 0;
  static constexpr int kValues = 7;
};

/// The momentum cycle in `values` (an update's momentum_cycle, kValues numbers; kind None
/// for none). A kind or mode other than those listed reads as -1 (no number is cast that
/// an int cannot hold: a plan read from disk may carry anything).
PLAIT_SCHEDULE_HD MomentumCycle momentumCycle(const double *values, int count) {
  MomentumCycle m;
  if (count != MomentumCycle::kValues)
    return m;
  m.cycle.kind = values[0] == 1 ? LrCycle::OneCycle : values[0] == 2 ? LrCycle::Cyclic : -1;
  m.base = values[1];
  m.max = values[2];
  if (m.cycle.kind == LrCycle::OneCycle) {
    m.cycle.totalSteps = values[3];
    m.cycle.pctStart = values[4];
    m.cycle.linear = values[5] != 0;
    m.cycle.threePhase = values[6] != 0;
  } else {
    m.cycle.stepSizeUp = values[3];
    m.cycle.stepSizeDown = values[4];
    m.cycle.mode = values[5] == 0 ? 0 : values[5] == 1 ? 1 : values[5] == 2 ? 2 : -1;
    m.cycle.gamma = values[6];
  }
  return m;
}

/// The momentum at step `step` (>= 1): `fixed` without a cycle.
PLAIT_SCHEDULE_HD double cycledMomentum(const MomentumCycle &m, double step, double fixed) {
  const double n = step - 1;
  if (m.cycle.kind == LrCycle::OneCycle) {
    const double points[4] = {m.max, m.base, m.max, m.max};
    return oneCycleValue(m.cycle, n, points);
  }
  if (m.cycle.kind == LrCycle::Cyclic) {
    const CyclicPosition p = cyclicPosition(m.cycle, n);
    return m.max - (m.max - m.base) * p.factor * p.scale;
  }
  return fixed;
}

/// NAdam's momentum coefficient of step t: beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)).
PLAIT_SCHEDULE_HD double nadamMu(double beta1, double momentumDecay, double t) {
  return beta1 * (1. - 0.5 * pow(0.96, t * momentumDecay));
}

/// NAdam's coefficients at step `step` (>= 1): mu_t, mu_{t+1}, torch's mu_product and
/// mu_product_next = mu_product * mu_{t+1} (PyTorch 2's single-tensor NAdam and the paper's
/// rule; 1.13 multiplied by mu_t once more, a bug fixed in pytorch/pytorch#92699). torch keeps
/// mu_product as an f32 0-d tensor that each step multiplies by that step's mu (rounded to
/// f32, as ATen converts the Python scalar) and reads back with .item(), so the product is
/// rebuilt here the same way. It only shrinks (every mu < 1) and stays 0 once it underflows,
/// which ends the walk: with the defaults (beta1 0.9, decay 0.004) after about 110 steps,
/// however long the run. With a momentum `cycle` (OneCycleLR / CyclicLR cycling beta1) each
/// step's mu takes that step's beta1, and mu_{t+1} this step's, as torch reads the group's
/// betas at each step.
struct NAdamCoefficients {
  double mu, muNext, product, productNext;
};
PLAIT_SCHEDULE_HD NAdamCoefficients nadamCoefficients(double beta1, double momentumDecay,
                                                      double step,
                                                      const MomentumCycle *cycle = nullptr) {
  float product = 1.0f;
  for (double t = 1; t <= step && product != 0.0f; t += 1)
    product = product *
              float(nadamMu(cycle ? cycledMomentum(*cycle, t, beta1) : beta1, momentumDecay, t));
  NAdamCoefficients c;
  c.mu = nadamMu(beta1, momentumDecay, step);
  c.muNext = nadamMu(beta1, momentumDecay, step + 1);
  c.product = double(product);
  c.productNext = double(product) * c.muNext;
  return c;
}

/// The weight EMA's schedule (plait.weight_ema's attributes, plait-compile's --ema-*).
struct EmaSchedule {
  double decay = 0;    // the decay, and the most a warm-up reaches
  bool warmup = false; // the decay warms up as (1 + n) / (10 + n)
  double power = 0;    // > 0: the decay warms up as 1 - (1 + n / invGamma)^-power
  double invGamma = 1; // (power's)
  double minDecay = 0; // the least decay once the average has started
  double start = 0;    // steps after the first whose average is still a copy
  double every = 1;    // the average changes on steps t with (t - 1) % every == 0
};

/// Whether the weight EMA changes at step `step` (>= 1): every `every` steps from step 1 (as
/// ema_pytorch's update_every); on the others it keeps its value.
PLAIT_SCHEDULE_HD bool weightEmaUpdates(const EmaSchedule &s, double step) {
  return fmod(step - 1, s.every) == 0;
}

/// The weight EMA's decay at step `step` (>= 1), n = step - 1 - start the averaging steps
/// before: 0 while n <= 0, where the average is a copy of the params (step 1, as torch's
/// AveragedModel copies on its first update_parameters; the first start + 1 steps as
/// diffusers' EMAModel with update_after_step = start), then `decay` (AveragedModel), or
/// warmed up, min(decay, (1 + n) / (10 + n)) with `warmup` (diffusers' EMAModel,
/// TensorFlow's num_updates) or min(decay, 1 - (1 + n / invGamma)^-power) with `power`
/// (EMAModel's use_ema_warmup, ema_pytorch); never below minDecay. As diffusers computes it,
/// in double.
PLAIT_SCHEDULE_HD double weightEmaDecay(const EmaSchedule &s, double step) {
  const double n = step - 1 - s.start;
  if (n <= 0)
    return 0.0;
  const double warm = s.power > 0 ? 1 - pow(1 + n / s.invGamma, -s.power)
                      : s.warmup  ? (1 + n) / (10 + n)
                                  : s.decay;
  return fmax(fmin(warm, s.decay), s.minDecay);
}

} // namespace plait::rt
