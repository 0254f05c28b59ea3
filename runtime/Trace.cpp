// StepTrace: recording a rank's events and writing them in the Chrome trace event format
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
#include "runtime/Trace.h"

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

namespace plait::rt {

namespace {

using nlohmann::json;

constexpr int kComputeThread = 0;
constexpr int kFirstCommThread = 1;

double micros(int64_t ns) { return double(ns) / 1000.0; }

json completeEvent(const std::string &name, const char *category, uint32_t rank, int tid,
                   int64_t begin, int64_t end, json args) {
  return {{"name", name},          {"cat", category},          {"ph", "X"},
          {"pid", rank},           {"tid", tid},               {"ts", micros(begin)},
          {"dur", micros(std::max<int64_t>(0, end - begin))}, {"args", std::move(args)}};
}

json metadataEvent(const char *what, uint32_t rank, int tid, json args) {
  return {{"name", what}, {"ph", "M"}, {"pid", rank}, {"tid", tid}, {"args", std::move(args)}};
}

} // namespace

StepTrace::StepTrace(const Plan &plan, uint32_t rank, int64_t steps) : plan_(plan), rank_(rank) {
  // Per step at most: one event per instruction, one wait per instruction that waits, one
  // per collective, and the step's own four (step, batch, end-of-step wait, updates).
  size_t perStep = 4;
  for (const PlanInstr &in : plan.instrs)
    perStep += 1 + !in.waits.empty() + in.isCollective;
  events_.reserve(perStep * size_t(std::max<int64_t>(steps, 0)));
  started_.assign(plan.instrs.size(), 0);
  startedBytes_.assign(plan.instrs.size(), 0);
  json report = json::parse(plan.report, nullptr, /*allow_exceptions=*/false);
  const json *predicted = report.is_object() && report.contains("predicted")
                              ? &report["predicted"] : nullptr;
  if (predicted && predicted->is_object() && predicted->contains("instructions_us")) {
    const json &us = (*predicted)["instructions_us"];
    if (us.is_array() && us.size() == plan.instrs.size() &&
        std::all_of(us.begin(), us.end(), [](const json &v) { return v.is_number(); }))
      for (const json &v : us)
        predictedUs_.push_back(v.get<double>());
  }
}

void StepTrace::beginStep(int64_t step) {
  step_ = step;
  stepBegin_ = now();
}

void StepTrace::endStep() { record(TraceKind::Step, -1, stepBegin_, now()); }

std::string StepTrace::eventsJson() const {
  std::vector<json> out;
  out.reserve(events_.size() + 8);
  out.push_back(metadataEvent("process_name", rank_, 0, {{"name", fmt::format("rank {}", rank_)}}));
  out.push_back(metadataEvent("process_sort_index", rank_, 0, {{"sort_index", rank_}}));
  out.push_back(metadataEvent("thread_name", rank_, kComputeThread, {{"name", "compute"}}));
  out.push_back(metadataEvent("thread_sort_index", rank_, kComputeThread, {{"sort_index", 0}}));

  // Collectives may overlap without nesting (several in flight): each takes the first comm
  // thread that is free at its start, in order of start.
  std::vector<size_t> collectives;
  for (size_t e = 0; e < events_.size(); ++e)
    if (events_[e].kind == TraceKind::Collective)
      collectives.push_back(e);
  std::stable_sort(collectives.begin(), collectives.end(), [&](size_t a, size_t b) {
    return events_[a].begin < events_[b].begin;
  });
  std::vector<int> thread(events_.size(), kComputeThread);
  std::vector<int64_t> threadFreeAt; // by comm thread: the end of its last event
  for (size_t e : collectives) {
    size_t lane = 0;
    while (lane < threadFreeAt.size() && threadFreeAt[lane] > events_[e].begin)
      ++lane;
    if (lane == threadFreeAt.size())
      threadFreeAt.push_back(0);
    threadFreeAt[lane] = events_[e].end;
    thread[e] = kFirstCommThread + int(lane);
  }
  // At least one comm thread is named, so that every rank shows the same two rows.
  for (size_t lane = 0; lane < std::max<size_t>(1, threadFreeAt.size()); ++lane) {
    int tid = kFirstCommThread + int(lane);
    out.push_back(metadataEvent("thread_name", rank_, tid,
                                {{"name", lane ? fmt::format("comm {}", lane + 1) : "comm"}}));
    out.push_back(metadataEvent("thread_sort_index", rank_, tid, {{"sort_index", tid}}));
  }

  for (size_t e = 0; e < events_.size(); ++e) {
    const Event &ev = events_[e];
    const PlanInstr *in = ev.instr >= 0 ? &plan_.instrs[size_t(ev.instr)] : nullptr;
    switch (ev.kind) {
    case TraceKind::Instruction: {
      json args = {{"instr", ev.instr}, {"source", in->name}, {"step", ev.step}};
      if (!predictedUs_.empty() && !in->isCollective) // a collective's is on its comm event
        args["predicted_us"] = predictedUs_[size_t(ev.instr)];
      out.push_back(completeEvent(plan_.kernels[in->kernel], "compute", rank_, kComputeThread,
                                  ev.begin, ev.end, std::move(args)));
      break;
    }
    case TraceKind::Wait:
      out.push_back(completeEvent("wait", "wait", rank_, kComputeThread, ev.begin, ev.end,
                                  {{"instr", ev.instr}, {"for", in->waits}, {"step", ev.step}}));
      break;
    case TraceKind::StepEndWait:
      out.push_back(completeEvent("wait (step end)", "wait", rank_, kComputeThread, ev.begin,
                                  ev.end, {{"step", ev.step}}));
      break;
    case TraceKind::Updates:
      out.push_back(completeEvent("updates", "compute", rank_, kComputeThread, ev.begin, ev.end,
                                  {{"count", plan_.updates.size()}, {"step", ev.step}}));
      break;
    case TraceKind::LoadBatch:
      out.push_back(completeEvent("load batch", "data", rank_, kComputeThread, ev.begin, ev.end,
                                  {{"step", ev.step}}));
      break;
    case TraceKind::Step:
      out.push_back(completeEvent(fmt::format("step {}", ev.step), "step", rank_,
                                  kComputeThread, ev.begin, ev.end, {{"step", ev.step}}));
      break;
    case TraceKind::Collective: {
      const CollectiveSpec &c = in->collective;
      json args = {{"instr", ev.instr},
                   {"source", in->name},
                   {"bytes", ev.bytes},
                   {"group_size", c.groups.groupSize},
                   {"step", ev.step}};
      if (!predictedUs_.empty())
        args["predicted_us"] = predictedUs_[size_t(ev.instr)];
      out.push_back(completeEvent(collectiveKindName(c.kind), "comm", rank_, thread[e],
                                  ev.begin, ev.end, std::move(args)));
      break;
    }
    }
  }
  std::string text;
  for (const json &event : out) {
    if (!text.empty())
      text += ",\n";
    // Names come from the plan file: replace invalid UTF-8 rather than throw.
    text += event.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return text;
}

std::string chromeTraceJson(const std::vector<std::string> &rankEvents,
                            const std::string &otherDataJson) {
  std::string text = "{\"displayTimeUnit\":\"ms\",\"otherData\":" + otherDataJson +
                     ",\n\"traceEvents\":[\n";
  bool first = true;
  for (const std::string &events : rankEvents) {
    if (events.empty())
      continue;
    text += first ? "" : ",\n";
    text += events;
    first = false;
  }
  text += "\n]}\n";
  return text;
}

} // namespace plait::rt
