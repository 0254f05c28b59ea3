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

namespace plait::rt {

struct LrSchedule {
  // constant | linear-warmup | cosine | cosine-restarts | linear | polynomial | step |
  // multistep | exponential | inverse-sqrt | wsd
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

  /// Whether `kind` is one of the kinds above.
  static bool known(const std::string &kind) {
    for (const char *k : {"constant", "linear-warmup", "cosine", "cosine-restarts", "linear",
                          "polynomial", "step", "multistep", "exponential", "inverse-sqrt",
                          "wsd"})
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
    } else if (kind == "cosine" && totalSteps <= 0) {
      why << "the cosine schedule needs total steps > 0";
    } else if ((kind == "linear" || kind == "polynomial") && totalSteps <= warmupSteps) {
      why << "the " << kind << " schedule needs total steps (" << totalSteps
          << ") above the warm-up steps (" << warmupSteps << ")";
    } else if (kind == "polynomial" && !(power > 0)) {
      why << "the polynomial schedule needs a power > 0, got " << power;
    } else if ((kind == "step" || kind == "multistep" || kind == "exponential") &&
               !(gamma > 0)) {
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
  /// (lr * step / warmup); plan.fbs gives each kind's formula after that.
  double at(int64_t step) const {
    if (kind == "constant")
      return lr;
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
