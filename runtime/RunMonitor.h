// What plait-run shows about a run while and after it runs: progress on stderr, a Chrome trace
// (--trace), and the measured memory and step time next to the plan's. The step loop
// (RunPlan.cpp) calls it at a few points; everything else about it lives here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/Progress.h"
#include "runtime/Status.h"

namespace plait::rt {

class Communicator;
class Executor;
struct Plan;
class StepTrace;

/// What the step loop tells the monitor after a step: its loss (a scalar first output), and
/// the memory it touched where the backend measures it (the CPU executor; the CUDA backend
/// allocates the plan's arena and measures no high water).
struct StepOutcome {
  bool hasLoss = false;
  double loss = 0;
  bool memoryMeasured = false;
  uint64_t arenaHighWater = 0, workspaceHighWater = 0;
};

struct MonitorOptions {
  ProgressMode progress = ProgressMode::Auto; // --progress
  std::string tracePath;                      // --trace FILE.json; empty: no trace
  int64_t traceSteps = 3;                     // --trace-steps: the first N steps are traced
};

class RunMonitor {
public:
  RunMonitor();
  ~RunMonitor();

  /// Before the first step, on every rank. Rank 0 shows progress (training plans) and, with a
  /// trace, checks that the file can be written; with a trace every rank then waits at a
  /// barrier and takes its time origin there.
  Status start(const MonitorOptions &options, const Plan &plan, Communicator &comm,
               int64_t steps);
  /// At the start of step `step` (before its batch is loaded). Steps come in order; the first
  /// is 1, or the step after the checkpoint a resumed run starts from. The trace records the
  /// first --trace-steps steps of this run, of `exec` (null: a backend without traces).
  void beginStep(int64_t step, Executor *exec);
  /// After the step's batch is in the arena.
  void batchLoaded();
  /// After the step ran `stepMs` milliseconds (the executor's run() alone).
  void endStep(int64_t step, double stepMs, const StepOutcome &outcome);
  /// After the last step, on every rank: ends the progress display and, with a trace,
  /// gathers every rank's events to rank 0, which writes the file.
  Status finish(Communicator &comm);

  /// Rank 0, after finish(): lines that follow plait-run's summary line (each starting with a
  /// newline), comparing the measured memory and step time with the plan's; `workspaceBytes`
  /// is the kernel workspace the executor allocated.
  std::string comparison(uint64_t workspaceBytes) const;

private:
  bool traced(int64_t step) const;

  MonitorOptions options_;
  const Plan *plan_ = nullptr;
  uint32_t rank_ = 0;
  int64_t steps_ = 0;
  int64_t firstStep_ = -1;      // the first step of this run
  std::unique_ptr<ProgressReporter> progress_;
  std::unique_ptr<StepTrace> trace_;
  int64_t batchBegin_ = -1; // the traced step's batch started here; -1: none pending
  std::vector<double> stepMs_; // every step's Executor::run time
  uint64_t arenaHighWater_ = 0, workspaceHighWater_ = 0;
  bool memoryMeasured_ = true; // every step's memory was measured
  Executor *tracedExec_ = nullptr; // the executor recording the traced step, if one is open
};

} // namespace plait::rt
