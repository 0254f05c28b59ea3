// RunMonitor: progress, trace and the end-of-run comparison around plait-run's step loop.
#include "runtime/RunMonitor.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/Executor.h"
#include "runtime/Trace.h"
#include "runtime/comm/Comm.h"
#include "runtime/cpu/Parallel.h"

namespace plait::rt {

namespace {

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + long(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2)
    return upper;
  return (*std::max_element(values.begin(), values.begin() + long(mid)) + upper) / 2;
}

// "as planned", "3.1% below the plan", "12.0% above the plan".
std::string againstPlan(double measured, double planned) {
  if (measured == planned)
    return "as planned";
  double percent = planned > 0 ? (measured - planned) * 100.0 / planned : 100.0;
  return fmt::format("{:.1f}% {} the plan", std::abs(percent),
                     measured < planned ? "below" : "above");
}

} // namespace

RunMonitor::RunMonitor() = default;
RunMonitor::~RunMonitor() = default;

Status RunMonitor::start(const MonitorOptions &options, const Plan &plan, Communicator &comm,
                         int64_t steps) {
  options_ = options;
  plan_ = &plan;
  rank_ = comm.rank();
  steps_ = steps;
  if (options.traceSteps < 1)
    return Status::errorf("--trace-steps must be at least 1, got {}", options.traceSteps);
  stepMs_.reserve(size_t(std::min<int64_t>(steps, int64_t(1) << 24)));

  bool lead = rank_ == 0;
  ProgressMode mode = resolveProgressMode(options.progress, ::isatty(STDERR_FILENO) == 1);
  if (lead && plan.training && mode != ProgressMode::None)
    progress_ = std::make_unique<ProgressReporter>(mode, stderr, steps);

  if (options.tracePath.empty())
    return {};
  if (lead) { // fail now rather than after the run
    std::ofstream file(options.tracePath, std::ios::trunc);
    if (!file)
      return Status::errorf("--trace {}: cannot open for writing", options.tracePath);
  }
  trace_ = std::make_unique<StepTrace>(plan, rank_, std::min(steps, options.traceSteps));
  PLAIT_RETURN_IF_ERROR(comm.barrier());
  trace_->setOrigin();
  // Ranks on one host read one monotonic clock: then every rank takes the earliest barrier
  // exit as its origin and the timelines line up exactly, however late a descheduled rank
  // read its clock. Clocks more than a second apart are other hosts' (other epochs): each
  // rank keeps its own barrier exit.
  std::vector<int64_t> exits(comm.size(), 0), all(comm.size(), 0);
  exits[comm.rank()] = trace_->origin().time_since_epoch().count();
  PLAIT_RETURN_IF_ERROR(sumOverWorld(comm, exits.data(), all.data(), all.size()));
  auto [first, last] = std::minmax_element(all.begin(), all.end());
  using Ticks = std::chrono::steady_clock::duration;
  if (Ticks(*last - *first) < std::chrono::seconds(1))
    trace_->setOrigin(std::chrono::steady_clock::time_point(Ticks(*first)));
  return {};
}

bool RunMonitor::traced(int64_t step) const {
  return trace_ && step < firstStep_ + options_.traceSteps;
}

void RunMonitor::beginStep(int64_t step, Executor *exec) {
  if (firstStep_ < 0)
    firstStep_ = step;
  if (!trace_ || !exec)
    return;
  bool traced = this->traced(step);
  exec->setTrace(traced ? trace_.get() : nullptr);
  tracedExec_ = traced ? exec : nullptr;
  if (traced) {
    trace_->beginStep(step);
    batchBegin_ = trace_->now();
  }
}

void RunMonitor::batchLoaded() {
  if (trace_ && batchBegin_ >= 0) {
    trace_->record(TraceKind::LoadBatch, -1, batchBegin_, trace_->now());
    batchBegin_ = -1;
  }
}

void RunMonitor::endStep(int64_t step, double stepMs, const StepOutcome &outcome) {
  stepMs_.push_back(stepMs);
  memoryMeasured_ = memoryMeasured_ && outcome.memoryMeasured;
  arenaHighWater_ = std::max(arenaHighWater_, outcome.arenaHighWater);
  workspaceHighWater_ = std::max(workspaceHighWater_, outcome.workspaceHighWater);
  if (tracedExec_ && traced(step)) {
    trace_->endStep();
    tracedExec_->setTrace(nullptr);
    tracedExec_ = nullptr;
  }
  if (!progress_)
    return;
  StepProgress p;
  p.step = step;
  p.hasLoss = outcome.hasLoss;
  p.loss = outcome.loss;
  p.stepMs = stepMs;
  p.samples = plan_->globalBatch();
  p.arenaHighWater = outcome.arenaHighWater;
  progress_->step(p);
}

Status RunMonitor::finish(Communicator &comm) {
  if (progress_)
    progress_->finish();
  if (!trace_)
    return {};
  std::vector<std::string> ranks;
  PLAIT_RETURN_IF_ERROR(comm.gatherToRoot(trace_->eventsJson(), ranks));
  if (rank_ != 0)
    return {};
  nlohmann::json other = {
      {"plan", plan_->path},
      {"world_size", plan_->worldSize},
      {"first_step", firstStep_},
      {"steps_traced", std::min(int64_t(stepMs_.size()), options_.traceSteps)},
      {"steps", steps_},
      {"clock", "steady_clock, zero when the first rank left a barrier before step 1 (ranks "
                "on one host share the clock; on several hosts each rank's own exit)"},
  };
  std::ofstream file(options_.tracePath, std::ios::trunc);
  file << chromeTraceJson(ranks, other.dump(-1, ' ', false,
                                            nlohmann::json::error_handler_t::replace));
  file.close();
  if (!file)
    return Status::errorf("--trace {}: write error", options_.tracePath);
  return {};
}

std::string RunMonitor::comparison(uint64_t workspaceBytes) const {
  const Plan &plan = *plan_;
  std::string text;
  if (!memoryMeasured_) {
    text = fmt::format("\nmemory (rank {}): the plan's arena, {} bytes, and a workspace of {} "
                       "bytes on the device (no high water measured)",
                       rank_,
                       formatThousands(rank_ < plan.arenaBytes.size() ? plan.arenaBytes[rank_] : 0),
                       formatThousands(workspaceBytes));
  } else {
    text = fmt::format("\nmemory (rank {}): arena high water {} bytes", rank_,
                       formatThousands(arenaHighWater_));
    if (rank_ < plan.peakBytes.size())
      text += fmt::format(", plan peak {} bytes ({})", formatThousands(plan.peakBytes[rank_]),
                          againstPlan(double(arenaHighWater_), double(plan.peakBytes[rank_])));
    else
      text += ", the plan records no peak";
    text += fmt::format("; workspace high water {} of {} bytes",
                        formatThousands(workspaceHighWater_), formatThousands(workspaceBytes));
  }

  if (stepMs_.empty())
    return text + "\nstep time: no step ran";
  // The first step warms caches and MPI up: the prediction is for a warm step.
  double all = median(stepMs_);
  double warm = stepMs_.size() > 1
                    ? median(std::vector<double>(stepMs_.begin() + 1, stepMs_.end()))
                    : all;
  text += fmt::format("\nstep time: median {:.3f} ms over {} step{}", all, stepMs_.size(),
                      stepMs_.size() == 1 ? "" : "s");
  if (stepMs_.size() > 1)
    text += fmt::format(", {:.3f} ms without the first", warm);
  nlohmann::json report = nlohmann::json::parse(plan.report, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json *predicted = nullptr;
  if (report.is_object() && report.contains("predicted_step_ms") &&
      report["predicted_step_ms"].is_number())
    predicted = &report["predicted_step_ms"];
  if (predicted) {
    text += fmt::format("; predicted {:.3f} ms ({})", predicted->get<double>(),
                        againstPlan(warm, predicted->get<double>()));
    // A CPU plan's prediction is for the threads per rank its cluster spec gives a rank
    // (its device.threads; one without them), which need not be this run's.
    int64_t forThreads = 1;
    if (auto p = report.find("predicted"); p != report.end() && p->is_object())
      if (auto t = p->find("threads_per_rank"); t != p->end() && t->is_number_integer())
        forThreads = t->get<int64_t>();
    if (plan.device != "cuda" && cpu::kernelThreads() != forThreads)
      text += fmt::format(", a prediction for {} thread{} per rank; this run used {} "
                          "(--threads {} to compare)",
                          forThreads, forThreads == 1 ? "" : "s", cpu::kernelThreads(),
                          forThreads);
  } else
    text += "; no prediction (the plan's report has no predicted_step_ms)";
  return text;
}

} // namespace plait::rt
