// The learning rate a run steps with: LrSchedule::at for the kinds that follow from the step
// number, and for --lr-schedule plateau the state of torch's ReduceLROnPlateau, which reads
// the training loss. plait-run (both backends) asks it for each step's lr and tells it each
// step's loss; a checkpoint records its state (PlateauState) so a resumed run continues it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "runtime/LrSchedule.h"

namespace plait::rt {

/// ReduceLROnPlateau's state between two steps, as torch 1.13's scheduler holds it (its
/// best, num_bad_epochs, cooldown_counter and last_epoch, the group's lr), with the loss
/// window plait averages into the scheduler's metric.
struct PlateauState {
  double lr = 0;     // the lr the next step runs at (the group's)
  double lastLr = 0; // the lr the last step ran at (ASGD's prev_lr); lr before step 1
  double best = std::numeric_limits<double>::infinity(); // mode min: mode_worse at first
  int64_t badWindows = 0;                                // num_bad_epochs
  int64_t cooldownLeft = 0;                              // cooldown_counter
  int64_t windows = 0;     // last_epoch: the windows the scheduler has read
  int64_t reductions = 0;  // how often it reduced the lr (for the summary)
  double windowSum = 0;    // the losses of the open window, summed in step order
  int64_t windowSteps = 0; // and how many
};

class LrController {
public:
  explicit LrController(const LrSchedule &schedule) : schedule_(schedule) {
    plateau_.lr = plateau_.lastLr = schedule.lr;
  }

  bool readsLoss() const { return schedule_.kind == "plateau"; }

  /// The learning rate of 1-based `step`.
  double lr(int64_t step) const { return readsLoss() ? plateau_.lr : schedule_.at(step); }

  /// The learning rate the step before `step` ran at (step 1's on step 1): ASGD's eta follows
  /// the lr torch had at the end of the step before.
  double prevLr(int64_t step) const {
    return readsLoss() ? plateau_.lastLr : schedule_.before(step);
  }

  /// After each step, its loss (the plan's, averaged over the ranks, so every rank decides
  /// alike): the plateau schedule adds it to the window, and once the window holds
  /// plateauSteps losses steps the scheduler with their mean, as ReduceLROnPlateau.step(metric)
  /// does. Returns whether it reduced the lr.
  bool observe(double loss) {
    if (!readsLoss())
      return false;
    PlateauState &p = plateau_;
    p.lastLr = p.lr;
    p.windowSum += loss;
    if (++p.windowSteps < schedule_.plateauSteps)
      return false;
    const double metric = p.windowSum / double(p.windowSteps);
    p.windowSum = 0;
    p.windowSteps = 0;
    ++p.windows;
    // is_better, mode min: below best * (1 - threshold), or best - threshold (a NaN is not).
    const double bar =
        schedule_.thresholdAbs ? p.best - schedule_.threshold : p.best * (1. - schedule_.threshold);
    if (metric < bar) {
      p.best = metric;
      p.badWindows = 0;
    } else {
      ++p.badWindows;
    }
    if (p.cooldownLeft > 0) { // in cooldown: its bad windows do not count
      --p.cooldownLeft;
      p.badWindows = 0;
    }
    if (p.badWindows <= schedule_.patience)
      return false;
    p.cooldownLeft = schedule_.cooldown;
    p.badWindows = 0;
    // _reduce_lr: new = max(old * factor, min_lr), applied where it moves by more than eps.
    const double reduced = std::max(p.lr * schedule_.gamma, schedule_.minLr);
    if (!(p.lr - reduced > schedule_.eps))
      return false;
    p.lr = reduced;
    ++p.reductions;
    return true;
  }

  const PlateauState &plateau() const { return plateau_; }
  void restore(const PlateauState &state) { plateau_ = state; }

  /// What is wrong with a checkpoint's plateau state, or "" (the checkpoint reader's check).
  static std::string invalid(const PlateauState &s) {
    if (!(s.lr > 0) || !std::isfinite(s.lr) || !(s.lastLr > 0) || !std::isfinite(s.lastLr))
      return "its lr and last lr must be finite and > 0";
    if (s.badWindows < 0 || s.cooldownLeft < 0 || s.windows < 0 || s.reductions < 0 ||
        s.windowSteps < 0)
      return "its counts must be >= 0";
    return "";
  }

private:
  const LrSchedule &schedule_;
  PlateauState plateau_;
};

} // namespace plait::rt
