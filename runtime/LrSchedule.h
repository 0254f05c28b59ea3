// The learning rate of each step (plan.fbs LrSchedule): header-only, so that plait-compile
// checks a schedule with the same rules the plan loader applies, and --explain describes it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/OptimizerSchedule.h"

namespace plait::rt {

struct LrSchedule {
  // constant | linear-warmup | cosine | cosine-restarts | linear | polynomial | step |
  // multistep | exponential | inverse-sqrt | wsd | onecycle | cyclic | plateau
  std::string kind = "constant";
  double lr = 0;
  int64_t warmupSteps = 0, totalSteps = 0;
  double minLr = 0;
  double gamma = 0;       // step, multistep, exponential: the factor
  int64_t stepSize = 0;   // step: steps between two factors
  double power = 1;       // polynomial: the exponent (linear: 1)
  int64_t decaySteps = 0; // wsd: the final steps that decay
  std::vector<int64_t> milestones; // multistep: steps after the warm-up, increasing
  int64_t cycleSteps = 0; // cosine-restarts: the first cycle's steps (torch's T_0)
  int64_t cycleMult = 1;  // cosine-restarts: each cycle this many times the one before
  // onecycle (OneCycleLR, lr its max_lr): pct_start, anneal_strategy linear (else cos),
  // three_phase, div_factor (the first lr is lr / divFactor) and final_div_factor (the last
  // lr / divFactor / finalDivFactor).
  double pctStart = 0.3;
  bool annealLinear = false, threePhase = false;
  double divFactor = 25, finalDivFactor = 1e4;
  // cyclic (CyclicLR, lr its max_lr, minLr its base_lr): stepSize its step_size_up,
  // stepSizeDown its step_size_down (0: stepSize), the mode and exp_range's gamma.
  int64_t stepSizeDown = 0;
  std::string cyclicMode = "triangular"; // triangular | triangular2 | exp_range
  // plateau (ReduceLROnPlateau, mode min, on the training loss; LrController holds its
  // state): lr times gamma (its factor), not below minLr, once the mean loss of a window of
  // plateauSteps steps has not improved on the best by threshold (relative, or thresholdAbs
  // absolute) for more than patience windows; then cooldown windows ignored; changes of eps
  // or less skipped.
  int64_t patience = 10, cooldown = 0, plateauSteps = 1;
  double threshold = 1e-4, eps = 1e-8;
  bool thresholdAbs = false;

  /// Whether `kind` is one of the kinds above.
  static bool known(const std::string &kind) {
    for (const char *k :
         {"constant", "linear-warmup", "cosine", "cosine-restarts", "linear", "polynomial", "step",
          "multistep", "exponential", "inverse-sqrt", "wsd", "onecycle", "cyclic", "plateau"})
      if (kind == k)
        return true;
    return false;
  }

  /// What is wrong with the schedule for its kind, or "": lr > 0, non-negative step counts,
  /// and each kind's own (plait-compile's check and the plan loader's).
  std::string invalid() const {
    std::ostringstream why;
    if (!known(kind)) {
      why << "unknown learning-rate schedule '" << kind << "'";
    } else if (!(lr > 0) || warmupSteps < 0 || totalSteps < 0 || decaySteps < 0 ||
               stepSize < 0) {
      why << "a learning-rate schedule needs lr > 0 and non-negative step counts";
    } else if (!std::isfinite(minLr) || minLr < 0 || !std::isfinite(gamma) ||
               !std::isfinite(power)) {
      why << "a learning-rate schedule needs a finite min_lr >= 0, gamma and power";
    } else if ((kind == "onecycle" || kind == "cyclic") && warmupSteps != 0) {
      why << "the " << kind << " schedule warms up as it cycles: it takes no warm-up steps";
    } else if (kind == "plateau" && warmupSteps != 0) {
      why << "the plateau schedule takes no warm-up steps (torch's ReduceLROnPlateau chains "
             "with no other scheduler)";
    } else if (kind == "plateau" && !(gamma > 0 && gamma < 1)) {
      why << "the plateau schedule needs a factor (gamma) in (0, 1), got " << gamma;
    } else if (kind == "plateau" && (patience < 0 || cooldown < 0 || plateauSteps < 1)) {
      why << "the plateau schedule needs patience >= 0, cooldown >= 0 and window steps >= 1, "
             "got "
          << patience << ", " << cooldown << " and " << plateauSteps;
    } else if (kind == "plateau" &&
               !(threshold >= 0 && std::isfinite(threshold) && eps >= 0 && std::isfinite(eps))) {
      why << "the plateau schedule needs a finite threshold >= 0 and eps >= 0, got " << threshold
          << " and " << eps;
    } else if (kind == "onecycle" && totalSteps <= 0) {
      why << "the onecycle schedule needs total steps > 0";
    } else if (kind == "onecycle" && !(pctStart >= 0 && pctStart <= 1)) {
      why << "the onecycle schedule needs a pct_start in [0, 1], got " << pctStart;
    } else if (kind == "onecycle" && !(divFactor > 0 && std::isfinite(divFactor) &&
                                       finalDivFactor > 0 && std::isfinite(finalDivFactor))) {
      why << "the onecycle schedule needs finite div and final div factors > 0, got " << divFactor
          << " and " << finalDivFactor;
    } else if (kind == "onecycle" && emptyPhase() > 0) {
      why << "the onecycle schedule's phase " << emptyPhase() << " has no steps (pct_start "
          << pctStart << " of " << totalSteps << " total steps)";
    } else if (kind == "cyclic" && (stepSize < 1 || stepSizeDown < 0)) {
      why << "the cyclic schedule needs a step size >= 1 (and a step size down >= 1 where "
             "given), got "
          << stepSize << " and " << stepSizeDown;
    } else if (kind == "cyclic" && cyclicMode != "triangular" && cyclicMode != "triangular2" &&
               cyclicMode != "exp_range") {
      why << "unknown cyclic mode '" << cyclicMode
          << "' (expected triangular, triangular2 or exp_range)";
    } else if (kind == "cyclic" && cyclicMode == "exp_range" && !(gamma > 0)) {
      why << "the cyclic schedule's exp_range mode needs a gamma > 0, got " << gamma;
    } else if (kind == "cosine" && totalSteps <= 0) {
      why << "the cosine schedule needs total steps > 0";
    } else if ((kind == "linear" || kind == "polynomial") && totalSteps <= warmupSteps) {
      why << "the " << kind << " schedule needs total steps (" << totalSteps
          << ") above the warm-up steps (" << warmupSteps << ")";
    } else if (kind == "polynomial" && !(power > 0)) {
      why << "the polynomial schedule needs a power > 0, got " << power;
    } else if ((kind == "step" || kind == "multistep" || kind == "exponential") && !(gamma > 0)) {
      why << "the " << kind << " schedule needs a gamma > 0, got " << gamma;
    } else if (kind == "step" && stepSize < 1) {
      why << "the step schedule needs a step size >= 1, got " << stepSize;
    } else if (kind == "cosine-restarts" && (cycleSteps < 1 || cycleMult < 1)) {
      why << "the cosine-restarts schedule needs cycle steps >= 1 and a cycle multiplier >= 1, "
             "got "
          << cycleSteps << " and " << cycleMult;
    } else if (kind == "multistep" && !increasingMilestones()) {
      why << "the multistep schedule needs milestones >= 1 in increasing order";
    } else if (kind == "inverse-sqrt" && warmupSteps < 1) {
      why << "the inverse-sqrt schedule needs warm-up steps >= 1 (after them the rate is "
             "lr * sqrt(warmup / step))";
    } else if (kind == "wsd" && (decaySteps < 1 || decaySteps > totalSteps - warmupSteps)) {
      why << "the wsd schedule needs decay steps in [1, " << totalSteps - warmupSteps
          << "] (total " << totalSteps << " - warm-up " << warmupSteps << "), got "
          << decaySteps;
    }
    return why.str();
  }

  /// The learning rate of 1-based `step`. Every kind but constant first warms up linearly
  /// (lr * step / warmup); plan.fbs gives each kind's formula after that. plateau: its first
  /// lr (LrController follows the loss from there).
  double at(int64_t step) const {
    if (kind == "constant" || kind == "plateau") // plateau: lr until the loss stalls
      return lr;
    if (kind == "onecycle") { // OneCycleLR: initial, max, (initial,) min
      const double initial = lr / divFactor, last = initial / finalDivFactor;
      const double points[4] = {initial, lr, threePhase ? initial : last, last};
      return oneCycleValue(cycle(), double(step - 1), points);
    }
    if (kind == "cyclic") { // CyclicLR: from base_lr (min_lr) to max_lr (lr) and back
      const CyclicPosition p = cyclicPosition(cycle(), double(step - 1));
      return minLr + (lr - minLr) * p.factor * p.scale;
    }
    const double s = double(step), warmup = double(warmupSteps);
    if (warmupSteps > 0 && step <= warmupSteps)
      return lr * s / warmup;
    if (kind == "cosine") {
      double span = double(totalSteps - warmupSteps);
      double p = span > 0 ? std::clamp((s - warmup) / span, 0.0, 1.0) : 1.0;
      return minLr + (lr - minLr) * (1 + std::cos(M_PI * p)) / 2;
    }
    // The steps since the warm-up before this one, as torch's schedulers count their epochs
    // (the first step after the warm-up runs at lr).
    const double e = s - 1 - warmup;
    if (kind == "linear" || kind == "polynomial") {
      double span = double(totalSteps - warmupSteps);
      double left = span > 0 ? 1 - std::min(e, span) / span : 0.0;
      return minLr + (lr - minLr) * std::pow(left, kind == "linear" ? 1.0 : power);
    }
    if (kind == "step")
      return lr * std::pow(gamma, std::floor(e / double(std::max<int64_t>(stepSize, 1))));
    if (kind == "cosine-restarts") { // CosineAnnealingWarmRestarts: e in its current cycle
      int64_t at = int64_t(e), cycle = std::max<int64_t>(cycleSteps, 1);
      if (cycleMult <= 1) {
        at %= cycle;
      } else {
        while (at >= cycle) {
          at -= cycle;
          if (cycle > std::numeric_limits<int64_t>::max() / cycleMult) {
            cycle = std::numeric_limits<int64_t>::max(); // longer than any run
            break;
          }
          cycle *= cycleMult;
        }
      }
      return minLr + (lr - minLr) * (1 + std::cos(M_PI * double(at) / double(cycle))) / 2;
    }
    if (kind == "multistep") { // MultiStepLR: a factor at each milestone passed
      int64_t passed = std::upper_bound(milestones.begin(), milestones.end(), int64_t(e)) -
                       milestones.begin();
      return lr * std::pow(gamma, double(passed));
    }
    if (kind == "exponential")
      return lr * std::pow(gamma, e);
    if (kind == "inverse-sqrt")
      return lr * std::sqrt(warmup / s);
    if (kind == "wsd") {
      const int64_t stable = totalSteps - decaySteps; // the last step at lr
      if (step <= stable || decaySteps < 1)
        return lr;
      double p = std::min(1.0, double(step - stable) / double(decaySteps));
      return minLr + (lr - minLr) * (1 - p);
    }
    return lr; // linear-warmup after its warm-up
  }

  /// The cycle of a onecycle or cyclic schedule (kind None for the others), as the kernels
  /// cycle the momentum against it.
  LrCycle cycle() const {
    LrCycle c;
    if (kind == "onecycle") {
      c.kind = LrCycle::OneCycle;
      c.totalSteps = double(totalSteps);
      c.pctStart = pctStart;
      c.linear = annealLinear;
      c.threePhase = threePhase;
    } else if (kind == "cyclic") {
      c.kind = LrCycle::Cyclic;
      c.stepSizeUp = double(stepSize);
      c.stepSizeDown = double(stepSizeDown > 0 ? stepSizeDown : stepSize);
      c.mode = cyclicMode == "triangular2" ? 1 : cyclicMode == "exp_range" ? 2 : 0;
      c.gamma = c.mode == 2 ? gamma : 1.0; // exp_range's (checked > 0 there), else unused
    }
    return c;
  }

  /// The onecycle schedule's first phase (1-based) with no steps, where OneCycleLR divides
  /// by zero; 0 when each has some.
  int emptyPhase() const {
    double ends[3];
    const int phases = oneCyclePhaseEnds(cycle(), ends);
    double start = 0;
    for (int i = 0; i < phases; start = ends[i++])
      if (ends[i] == start)
        return i + 1;
    return 0;
  }

  /// Whether a cyclical kind cycles `optimizer`'s momentum (SGD's, RMSprop's) or first beta
  /// (the optimizers with betas): as torch's schedulers, which refuse the others.
  static bool cyclesMomentumOf(const std::string &optimizer) {
    for (const char *o :
         {"sgd", "rmsprop", "adam", "adamw", "adamax", "nadam", "radam", "lion", "lamb"})
      if (optimizer == o)
        return true;
    return false;
  }

  /// The last step the schedule defines: onecycle's total steps (OneCycleLR refuses to step
  /// past them), or the largest step.
  int64_t lastStep() const {
    return kind == "onecycle" ? totalSteps : std::numeric_limits<int64_t>::max();
  }

  /// Whether the milestones are >= 1 and strictly increasing (and there is one at least).
  bool increasingMilestones() const {
    if (milestones.empty() || milestones[0] < 1)
      return false;
    for (size_t i = 1; i < milestones.size(); ++i)
      if (milestones[i] <= milestones[i - 1])
        return false;
    return true;
  }

  /// The learning rate of the step before `step`, step 1's on step 1 (the "prev_lr"
  /// hyper-parameter: ASGD's eta follows the lr torch had at the end of the step before).
  double before(int64_t step) const { return at(step > 1 ? step - 1 : 1); }
};

} // namespace plait::rt
