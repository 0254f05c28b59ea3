// Chrome / Perfetto trace of plait-run's steps: what each rank computed and communicated, when.
// The executor reports into a StepTrace only while one is set (a null pointer otherwise), and
// a StepTrace holds the events of a bounded number of steps in a buffer sized up front.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Plan.h"
#include "runtime/Status.h"

namespace plait::rt {

/// What a recorded event stands for.
enum class TraceKind : uint8_t {
  Instruction, // a kernel, or the posting of a collective (compute thread)
  Wait,        // blocked before an instruction on the collectives it waits for
  StepEndWait, // blocked at the end of the step on collectives nobody waited for
  Updates,     // the step's param and optimizer-state updates
  LoadBatch,   // copying the step's batch into the arena
  Step,        // the whole step: batch, hyper-parameters, instructions, updates
  Collective,  // a collective from its start to its completion (comm thread)
};

/// One rank's trace: events of the steps between beginStep and endStep, timestamps in
/// nanoseconds of std::chrono::steady_clock since setOrigin().
class StepTrace {
public:
  /// Sizes the event buffer for `steps` steps of `plan` on `rank`.
  StepTrace(const Plan &plan, uint32_t rank, int64_t steps);

  /// Time zero: every rank calls it right after a barrier, so that the ranks' timelines line
  /// up to within the barrier's exit skew (microseconds on one host).
  void setOrigin() { origin_ = std::chrono::steady_clock::now(); }
  void setOrigin(std::chrono::steady_clock::time_point origin) { origin_ = origin; }
  std::chrono::steady_clock::time_point origin() const { return origin_; }
  /// Nanoseconds since the origin.
  int64_t now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now() - origin_)
        .count();
  }

  void beginStep(int64_t step);
  void endStep();
  /// A compute-thread event of `kind` over [begin, end); `instr` is the instruction (Wait:
  /// the waiting one) or -1.
  void record(TraceKind kind, int64_t instr, int64_t begin, int64_t end) {
    events_.push_back({begin, end, instr, step_, 0, kind});
  }
  /// Collective instruction `instr` started now; `bytes` is the buffer it moves.
  void collectiveStarted(uint32_t instr, uint64_t bytes) {
    started_[instr] = now();
    startedBytes_[instr] = bytes;
  }
  /// Collective instruction `instr` completed now.
  void collectiveCompleted(uint32_t instr) {
    events_.push_back({started_[instr], now(), int64_t(instr), step_, startedBytes_[instr],
                       TraceKind::Collective});
  }

  /// This rank's events and its process and thread names as Chrome trace event objects,
  /// joined by commas (no brackets): pid = rank, tid 0 "compute", tid 1.. "comm" (overlapping
  /// collectives take further comm threads, so that events on one thread nest). Kernels and
  /// collectives carry "predicted_us" when the plan was compiled with a --cluster.
  std::string eventsJson() const;

  size_t eventCount() const { return events_.size(); }
  size_t eventCapacity() const { return events_.capacity(); }

private:
  struct Event {
    int64_t begin, end; // ns since origin
    int64_t instr;      // -1: none
    int64_t step;
    uint64_t bytes;     // Collective: the buffer it moves
    TraceKind kind;
  };

  const Plan &plan_;
  uint32_t rank_;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::vector<Event> events_;
  std::vector<int64_t> started_;       // by instruction: when its collective started
  std::vector<uint64_t> startedBytes_; // by instruction
  /// By instruction: the cost model's prediction in µs (the plan report's
  /// predicted.instructions_us), or empty when the plan has none.
  std::vector<double> predictedUs_;
  int64_t step_ = 0, stepBegin_ = 0;
};

/// Records one compute-thread event over its own lifetime when `trace` is not null (and
/// costs one pointer test when it is).
class ScopedTraceEvent {
public:
  ScopedTraceEvent(StepTrace *trace, TraceKind kind, int64_t instr = -1)
      : trace_(trace), kind_(kind), instr_(instr), begin_(trace ? trace->now() : 0) {}
  ~ScopedTraceEvent() {
    if (trace_)
      trace_->record(kind_, instr_, begin_, trace_->now());
  }
  ScopedTraceEvent(const ScopedTraceEvent &) = delete;
  ScopedTraceEvent &operator=(const ScopedTraceEvent &) = delete;

private:
  StepTrace *trace_;
  TraceKind kind_;
  int64_t instr_;
  int64_t begin_;
};

/// The Chrome trace document: {"traceEvents": [every rank's eventsJson()], "displayTimeUnit":
/// "ms", "otherData": {...}}. `otherDataJson` is a JSON object's text.
std::string chromeTraceJson(const std::vector<std::string> &rankEvents,
                            const std::string &otherDataJson);

} // namespace plait::rt
